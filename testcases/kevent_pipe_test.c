// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_pipe_test: KEVENT_PIPE (docs/abi.md), the later takes' pipe type:
 * data to read and room to write in a pipe or a FIFO, the bytes in the
 * pipe in ret_data[1], the other end's close always reported, level or
 * edge triggered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON	2000	/* ms: long enough for anything that should come */
#define NEVER	50	/* ms: a look for something that must not come */

static struct ukevent kpipe(int fd, unsigned int event, unsigned int flags)
{
	return kevent_fd(fd, KEVENT_PIPE, event, flags);
}

FIXTURE(pipe) {
	int kq;
	int p[2];
};

FIXTURE_SETUP(pipe)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, pipe2(self->p, O_NONBLOCK));
}

FIXTURE_TEARDOWN(pipe)
{
	close(self->p[0]);
	close(self->p[1]);
	close(self->kq);
}

TEST_F(pipe, data_makes_the_read_end_ready_with_its_byte_count)
{
	struct ukevent uk = kpipe(self->p[0], KEVENT_PIPE_READ, 0), out;
	char buf[100] = { 0 };

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	ASSERT_EQ(100, write(self->p[1], buf, 100));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE, out.type);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(KEVENT_PIPE_READ, out.ret_data[0]);
	EXPECT_EQ(100, out.ret_data[1]);
	/* Level triggered: ready while data is left, with what is left. */
	ASSERT_EQ(40, read(self->p[0], buf, 40));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(60, out.ret_data[1]);
	ASSERT_EQ(60, read(self->p[0], buf, 100));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_F(pipe, room_makes_the_write_end_ready)
{
	struct ukevent uk = kpipe(self->p[1], KEVENT_PIPE_WRITE, 0), out;
	static char buf[65536];
	long total = 0, n;

	/* Empty: room at once. */
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_WRITE, out.ret_data[0]);
	EXPECT_EQ(0, out.ret_data[1]);
	while ((n = write(self->p[1], buf, sizeof(buf))) > 0)
		total += n;
	ASSERT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	/* A reader takes a page: room again; the pipe holds what is left. */
	ASSERT_EQ(4096, read(self->p[0], buf, 4096));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_WRITE, out.ret_data[0]);
	EXPECT_EQ(total - 4096, out.ret_data[1]);
}

TEST_F(pipe, the_writers_close_is_reported_to_the_reader)
{
	struct ukevent uk = kpipe(self->p[0], KEVENT_PIPE_READ, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(3, write(self->p[1], "abc", 3));
	close(self->p[1]);
	self->p[1] = -1;
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_READ | KEVENT_PIPE_CLOSED, out.ret_data[0]);
	EXPECT_EQ(3, out.ret_data[1]);
	EXPECT_EQ(0, out.ret_flags & KEVENT_RET_BROKEN);
}

TEST_F(pipe, the_readers_close_is_reported_to_the_writer)
{
	struct ukevent uk = kpipe(self->p[1], KEVENT_PIPE_WRITE, KEVENT_REQ_ONESHOT), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));	/* room: oneshot, gone */
	uk.req_flags = 0;
	uk.event = KEVENT_PIPE_READ;			/* a write end never has data */
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	close(self->p[0]);
	self->p[0] = -1;
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_CLOSED, out.ret_data[0]);
}

TEST_F(pipe, edge_triggered_once_per_write)
{
	struct ukevent uk = kpipe(self->p[0], KEVENT_PIPE_READ, KEVENT_REQ_ET), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, write(self->p[1], "a", 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_READ, out.ret_data[0]);
	/* The data is still there, but nothing new happened. */
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	ASSERT_EQ(1, write(self->p[1], "b", 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_READ, out.ret_data[0]);
}

TEST_F(pipe, last_check_drops_an_edge_whose_data_was_read)
{
	struct ukevent uk = kpipe(self->p[0], KEVENT_PIPE_READ,
				  KEVENT_REQ_ET | KEVENT_REQ_LAST_CHECK), out;
	char c;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, write(self->p[1], "a", 1));
	ASSERT_EQ(1, read(self->p[0], &c, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_F(pipe, closing_the_watched_fd_breaks_the_kevent)
{
	struct ukevent uk = kpipe(self->p[0], KEVENT_PIPE_READ, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	close(self->p[0]);
	self->p[0] = -1;
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(EBADF, out.ret_data[0]);
	EXPECT_EQ(0, kevent_queued(self->kq));
}

TEST_F(pipe, a_write_wakes_a_thread_asleep_in_wait)
{
	struct ukevent uk = kpipe(self->p[0], KEVENT_PIPE_READ, 0);
	struct kevent_waiter w;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, kevent_waiter_start(&w, self->kq));
	EXPECT_EQ(-2, w.got);
	ASSERT_EQ(5, write(self->p[1], "hello", 5));
	ASSERT_EQ(0, kevent_waiter_join(&w));
	EXPECT_EQ(1, w.got);
	EXPECT_EQ(5, w.out.ret_data[1]);
}

TEST(a_fifo_is_a_pipe_too)
{
	char dir[] = "/tmp/kevent-fifo-XXXXXX", fifo[64];
	struct ukevent uk, out;
	int kq = kevent_init(), fd;

	ASSERT_GE(kq, 0);
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	fd = open(fifo, O_RDWR | O_NONBLOCK);
	ASSERT_GE(fd, 0);
	unlink(fifo);
	rmdir(dir);
	uk = kpipe(fd, KEVENT_PIPE_READ | KEVENT_PIPE_WRITE, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_WRITE, out.ret_data[0]);
	ASSERT_EQ(2, write(fd, "hi", 2));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_PIPE_READ | KEVENT_PIPE_WRITE, out.ret_data[0]);
	EXPECT_EQ(2, out.ret_data[1]);
	close(fd);
	close(kq);
}

TEST(not_a_pipe_is_einval)
{
	static const char *const what[] = { "socket", "eventfd", "kevent queue" };
	int kq = kevent_init(), other = kevent_init(), sv[2], efd = eventfd(0, 0), i;
	struct ukevent uk[3];

	ASSERT_GE(kq, 0);
	ASSERT_GE(other, 0);
	ASSERT_GE(efd, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	uk[0] = kpipe(sv[0], KEVENT_PIPE_READ, 0);
	uk[1] = kpipe(efd, KEVENT_PIPE_READ, 0);
	uk[2] = kpipe(other, KEVENT_PIPE_READ, 0);
	EXPECT_EQ(0, kevent_add(kq, uk, 3));
	for (i = 0; i < 3; i++)
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk[i], what[i]);
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(sv[0]);
	close(sv[1]);
	close(efd);
	close(other);
	close(kq);
}

TEST(closed_fd_is_ebadf)
{
	int closed = open("/", O_RDONLY);

	ASSERT_GE(closed, 0);
	expect_unopened_fds_fail(_metadata, KEVENT_PIPE, KEVENT_PIPE_READ, closed, 1, EBADF);
}

TEST(file_without_poll_is_eperm)
{
	expect_unpollable_files_fail(_metadata, KEVENT_PIPE, KEVENT_PIPE_READ, EPERM);
}

TEST(event_without_a_pipe_bit_is_einval)
{
	/* Nothing, CLOSED alone (reported, never asked for), unknown bits. */
	static const unsigned int bad[] = { 0, KEVENT_PIPE_CLOSED, 0x8, 0x80000000u };
	int kq = kevent_init(), p[2];
	struct ukevent held, other;

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pipe(p));
	held = kpipe(p[0], KEVENT_PIPE_READ, 0);
	ASSERT_EQ(1, kevent_add(kq, &held, 1));
	other = kpipe(p[1], KEVENT_PIPE_WRITE, 0);
	expect_masks_fail(_metadata, kq, &held, other, bad, sizeof(bad) / sizeof(bad[0]), EINVAL);
	close(p[0]);
	close(p[1]);
	close(kq);
}

TEST_HARNESS_MAIN
