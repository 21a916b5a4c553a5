// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_poll_test: KEVENT_POLL on pipes, eventfd, timerfd and kevent
 * queues; level and oneshot delivery; MODIFY; a closed watched fd; no lost
 * wake-ups; and the errors of KEVENT_POLL requests.
 *
 * An event must arrive (WAIT returns it within a generous timeout), must
 * not arrive early (WAIT with timeout 0 before the cause returns nothing),
 * and must not arrive twice (after the condition is gone, WAIT returns
 * nothing).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000	/* ms: "it arrives" */
#define NEVER 100	/* ms: "it does not arrive" */

#define kpoll(fd, event, flags) kevent_fd(fd, KEVENT_POLL, event, flags)

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
	close(self->kq);
	close(self->p[0]);
	close(self->p[1]);
}

TEST_F(pipe, pollin_after_write_not_before)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;

	uk.user[0] = 77;
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, 0));
	ASSERT_EQ(1, write(self->p[1], "x", 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_POLL, out.type);
	EXPECT_EQ(self->p[0], out.id.raw[0]);
	EXPECT_EQ(KEVENT_POLL_POLLIN, out.ret_data[0] & KEVENT_POLL_POLLIN);
	EXPECT_EQ(77, out.user[0]);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
}

TEST_F(pipe, level_triggered_until_drained)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;
	char buf[16];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(3, write(self->p[1], "abc", 3));
	/* Still readable: delivered again by the next WAIT. */
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	ASSERT_EQ(3, read(self->p[0], buf, sizeof(buf)));
	/* Drained: never again, however long we wait. */
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(1, kevent_queued(self->kq));
}

TEST_F(pipe, one_event_per_wait_for_one_kevent)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out[4];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, write(self->p[1], "x", 1));
	/* Level triggered, but one WAIT never returns one kevent twice. */
	EXPECT_EQ(1, kevent_wait(self->kq, out, 4, 200));
}

TEST_F(pipe, oneshot_is_delivered_once_and_removed)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, KEVENT_REQ_ONESHOT), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, write(self->p[1], "x", 1));
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(0, kevent_queued(self->kq));
}

TEST_F(pipe, pollout_is_ready_at_add)
{
	struct ukevent uk = kpoll(self->p[1], KEVENT_POLL_POLLOUT, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, 0));
	EXPECT_EQ(KEVENT_POLL_POLLOUT, out.ret_data[0] & KEVENT_POLL_POLLOUT);
}

TEST_F(pipe, pollout_waits_for_room)
{
	struct ukevent uk = kpoll(self->p[1], KEVENT_POLL_POLLOUT, 0), out;
	char buf[4096] = { 0 };

	while (write(self->p[1], buf, sizeof(buf)) > 0)
		;
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	while (read(self->p[0], buf, sizeof(buf)) > 0)
		;
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
}

TEST_F(pipe, hangup_is_always_reported)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	close(self->p[1]);
	self->p[1] = open("/dev/null", O_WRONLY);
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_POLL_POLLHUP, out.ret_data[0] & KEVENT_POLL_POLLHUP);
}

TEST_F(pipe, modify_changes_the_mask)
{
	struct ukevent uk = kpoll(self->p[1], KEVENT_POLL_POLLIN, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	uk.event = KEVENT_POLL_POLLOUT;
	ASSERT_EQ(1, kevent_modify(self->kq, &uk, 1));
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_POLL_POLLOUT, out.event);
}

TEST_F(pipe, closing_the_watched_fd_breaks_the_kevent)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	close(self->p[0]);
	self->p[0] = open("/dev/null", O_RDONLY);
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(EBADF, out.ret_data[0]);
	/* Broken kevents are removed after delivery. */
	EXPECT_EQ(0, kevent_queued(self->kq));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	/* A write to the pipe now reaches nothing (the writer gets EPIPE). */
}

TEST_F(pipe, closing_one_of_two_fds_keeps_the_kevent)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;
	int dup_fd = dup(self->p[0]);

	ASSERT_GE(dup_fd, 0);
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	close(dup_fd);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	ASSERT_EQ(1, write(self->p[1], "x", 1));
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(0, out.ret_flags & KEVENT_RET_BROKEN);
}

TEST_F(pipe, remove_then_write_delivers_nothing)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_remove(self->kq, &uk, 1));
	ASSERT_EQ(1, write(self->p[1], "x", 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

/* Bad input (docs/abi.md, "Errors"): the entry fails, the queue works on. */

TEST_F(pipe, event_without_a_poll_bit_is_einval)
{
	/* 0x800 is the one hole among the KEVENT_POLL_* bits. */
	static const unsigned int bad[] = { 0, 0x800, 0x2000, 0xffffe800u };
	struct ukevent held = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0);

	ASSERT_EQ(1, kevent_add(self->kq, &held, 1));
	expect_masks_fail(_metadata, self->kq, &held, kpoll(self->p[1], 0, 0), bad,
			  sizeof(bad) / sizeof(bad[0]), EINVAL);
}

TEST(closed_fd_is_ebadf)
{
	int closed = open("/", O_RDONLY);

	ASSERT_GE(closed, 0);
	expect_unopened_fds_fail(_metadata, KEVENT_POLL, KEVENT_POLL_POLLIN, closed, 1, EBADF);
}

TEST(file_without_poll_is_eperm)
{
	expect_unpollable_files_fail(_metadata, KEVENT_POLL, KEVENT_POLL_POLLIN, EPERM);
}

TEST(watching_itself_is_eloop)
{
	int kq = kevent_init(), again = dup(kq);
	struct ukevent uk[2] = { kpoll(kq, KEVENT_POLL_POLLIN, 0),
				 kpoll(again, KEVENT_POLL_POLLIN, 0) };

	ASSERT_GE(kq, 0);
	ASSERT_GE(again, 0);
	EXPECT_EQ(0, kevent_add(kq, uk, 2));
	EXPECT_ENTRY_FAILS_WITH(ELOOP, uk[0], "its own fd");
	EXPECT_ENTRY_FAILS_WITH(ELOOP, uk[1], "a dup() of it");
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(again);
	close(kq);
}

TEST(eventfd_and_timerfd)
{
	struct itimerspec its = { .it_value = { 0, 20 * 1000 * 1000 } };
	int kq = kevent_init(), efd = eventfd(0, EFD_NONBLOCK);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	struct ukevent uk[2] = {
		kpoll(efd, KEVENT_POLL_POLLIN, KEVENT_REQ_ONESHOT),
		kpoll(tfd, KEVENT_POLL_POLLIN, KEVENT_REQ_ONESHOT),
	}, out[2];
	uint64_t one = 1;
	int seen = 0, i;

	ASSERT_GE(kq, 0);
	ASSERT_GE(efd, 0);
	ASSERT_GE(tfd, 0);
	ASSERT_EQ(2, kevent_add(kq, uk, 2));
	EXPECT_EQ(0, kevent_wait(kq, out, 2, 0));
	ASSERT_EQ(8, write(efd, &one, 8));
	ASSERT_EQ(0, timerfd_settime(tfd, 0, &its, NULL));
	ASSERT_EQ(2, kevent_wait(kq, out, 2, SOON));
	for (i = 0; i < 2; i++)
		seen |= out[i].id.raw[0] == efd ? 1 : out[i].id.raw[0] == tfd ? 2 : 4;
	EXPECT_EQ(3, seen);
	close(efd);
	close(tfd);
	close(kq);
}

TEST(a_queue_watches_a_queue)
{
	int a = kevent_init(), b = kevent_init(), c = kevent_init();
	struct ukevent watch_b = kpoll(b, KEVENT_POLL_POLLIN, 0), out;
	struct ukevent timer = kevent_timer(20, 0, KEVENT_REQ_ONESHOT);
	struct ukevent loop[2] = { kpoll(a, KEVENT_POLL_POLLIN, 0),
				   kpoll(c, KEVENT_POLL_POLLIN, 0) };

	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	ASSERT_GE(c, 0);
	ASSERT_EQ(1, kevent_add(a, &watch_b, 1));
	ASSERT_EQ(1, kevent_add(b, &timer, 1));
	EXPECT_EQ(0, kevent_wait(a, &out, 1, 0));
	/* b's timer makes b readable, which a sees. */
	ASSERT_EQ(1, kevent_wait(a, &out, 1, SOON));
	EXPECT_EQ(b, out.id.raw[0]);
	EXPECT_EQ(KEVENT_POLL_POLLIN, out.ret_data[0] & KEVENT_POLL_POLLIN);
	ASSERT_EQ(1, kevent_wait(b, &out, 1, 0));
	EXPECT_EQ(0, kevent_wait(a, &out, 1, NEVER));
	/*
	 * One level only: b (watched) may not watch a or c, and a (watching)
	 * may not be watched by c. Each queue still works afterwards.
	 */
	EXPECT_EQ(0, kevent_add(b, &loop[0], 1));
	EXPECT_ENTRY_FAILS_WITH(ELOOP, loop[0], "the watched queue watches its watcher");
	EXPECT_EQ(0, kevent_add(b, &loop[1], 1));
	EXPECT_ENTRY_FAILS_WITH(ELOOP, loop[1], "the watched queue watches another");
	EXPECT_EQ(0, kevent_add(c, &loop[0], 1));
	EXPECT_ENTRY_FAILS_WITH(ELOOP, loop[0], "another queue watches the watcher");
	EXPECT_EQ(0, kevent_queued(b));
	EXPECT_EQ(0, kevent_queued(c));
	EXPECT_QUEUE_WORKS(b);
	EXPECT_QUEUE_WORKS(c);
	/* Closing b breaks a's kevent. */
	close(b);
	ASSERT_EQ(1, kevent_wait(a, &out, 1, SOON));
	EXPECT_EQ(KEVENT_RET_BROKEN, out.ret_flags & KEVENT_RET_BROKEN);
	close(a);
	close(c);
}

TEST(pty)
{
	int kq = kevent_init(), master = posix_openpt(O_RDWR | O_NOCTTY), slave;
	struct ukevent uk, out;
	char buf[64];

	ASSERT_GE(kq, 0);
	ASSERT_GE(master, 0) TH_LOG("posix_openpt: %s (is devpts mounted?)", strerror(errno));
	ASSERT_EQ(0, grantpt(master));
	ASSERT_EQ(0, unlockpt(master));
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	ASSERT_GE(slave, 0);
	uk = kpoll(master, KEVENT_POLL_POLLIN, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(kq, &out, 1, 0));
	ASSERT_EQ(6, write(slave, "hello\n", 6));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_POLL_POLLIN, out.ret_data[0] & KEVENT_POLL_POLLIN);
	EXPECT_LT(0, read(master, buf, sizeof(buf)));
	close(slave);
	close(master);
	close(kq);
}

struct writer {
	int fd;
	int bytes;
};

static void *write_slowly(void *arg)
{
	struct writer *w = arg;
	int i;

	for (i = 0; i < w->bytes; i++) {
		if (write(w->fd, "z", 1) != 1)
			break;
		if (i % 7 == 0)
			usleep(i % 3 * 300);
	}
	return NULL;
}

TEST_F(pipe, no_lost_wakeups)
{
	struct ukevent uk = kpoll(self->p[0], KEVENT_POLL_POLLIN, 0), out;
	struct writer w = { self->p[1], 3000 };
	int got = 0, waits = 0;
	pthread_t t;
	char buf[512];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, write_slowly, &w));
	while (got < w.bytes) {
		ssize_t r;

		/* A lost wake-up shows as a WAIT that times out. */
		ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON))
			TH_LOG("%d of %d bytes read after %d waits", got, w.bytes, waits);
		waits++;
		while ((r = read(self->p[0], buf, sizeof(buf))) > 0)
			got += r;
	}
	pthread_join(t, NULL);
	EXPECT_EQ(w.bytes, got);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_HARNESS_MAIN
