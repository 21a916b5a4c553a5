// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_init_test: kevent_init(), the queue of kevent's later takes
 * (docs/abi.md): made close-on-exec atomically if asked, and a kevent ready
 * when added is delivered at once in the ADD entry, unless
 * KEVENT_REQ_ALWAYS_QUEUE asks for it to be queued as KEVENT_CTL_INIT's
 * queues always do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

TEST(null_args_make_a_queue)
{
	int kq = sys_kevent_init(NULL, 0);

	ASSERT_GE(kq, 0);
	EXPECT_EQ(0, fcntl(kq, F_GETFD) & FD_CLOEXEC);
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(cloexec_is_set_at_once)
{
	int kq = kevent_init_flags(KEVENT_INIT_CLOEXEC), plain = kevent_init_flags(0);
	char cmd[128];
	pid_t pid;
	int status;

	ASSERT_GE(kq, 0);
	ASSERT_GE(plain, 0);
	EXPECT_EQ(FD_CLOEXEC, fcntl(kq, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, fcntl(plain, F_GETFD) & FD_CLOEXEC);
	/* Across an exec: gone in the new program, the plain one kept. */
	snprintf(cmd, sizeof(cmd), "test ! -e /proc/self/fd/%d && test -e /proc/self/fd/%d",
		 kq, plain);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("%s: %#x", cmd, status);
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
	close(plain);
}

TEST(bad_size_or_flags_is_einval)
{
	struct kevent_init_args args = { .flags = 0 };

	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(NULL, sizeof(args)), "NULL with a size");
	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(&args, 0), "size 0");
	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(&args, 4), "size below the first version");
	EXPECT_FAILS_WITH(EINVAL, kevent_init_flags(0x2), "flag 0x2");
	EXPECT_FAILS_WITH(EINVAL, kevent_init_flags(1ULL << 63), "flag 1 << 63");
}

TEST(unreadable_args_is_efault)
{
	void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, none);
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_init(none, sizeof(struct kevent_init_args)),
			  "PROT_NONE args");
	munmap(none, 4096);
}

/* A longer structure, from a program built against a newer kernel. */
struct longer_args {
	struct kevent_init_args a;
	unsigned long long more;
};

TEST(longer_args_with_zero_tail_are_accepted)
{
	struct longer_args big = { .a.flags = KEVENT_INIT_CLOEXEC };
	int kq = sys_kevent_init(&big.a, sizeof(big));

	ASSERT_GE(kq, 0);
	EXPECT_EQ(FD_CLOEXEC, fcntl(kq, F_GETFD) & FD_CLOEXEC);
	close(kq);
}

TEST(unknown_field_set_is_e2big)
{
	struct longer_args big = { .more = 1 };

	EXPECT_FAILS_WITH(E2BIG, sys_kevent_init(&big.a, sizeof(big)), "unknown field set");
	/* Above a page: refused before it is read, as clone3() does. */
	char *page = calloc(1, 8192);

	ASSERT_NE(NULL, page);
	EXPECT_FAILS_WITH(E2BIG, sys_kevent_init((void *)page, 4097), "a size above a page");
	free(page);
}

FIXTURE(at_add) {
	int kq;
	int p[2];
};

FIXTURE_SETUP(at_add)
{
	self->kq = kevent_init_flags(0);
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, pipe2(self->p, O_NONBLOCK));
	ASSERT_EQ(1, write(self->p[1], "x", 1));
}

FIXTURE_TEARDOWN(at_add)
{
	close(self->kq);
	close(self->p[0]);
	close(self->p[1]);
}

static struct ukevent readable(int fd, unsigned int flags)
{
	return kevent_fd(fd, KEVENT_POLL, KEVENT_POLL_POLLIN, flags);
}

/* Level triggered: delivered in the ADD entry, and by WAIT while ready. */
TEST_F(at_add, level_is_delivered_by_add_and_stays_queued)
{
	struct ukevent uk = readable(self->p[0], 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(KEVENT_RET_DONE, uk.ret_flags);
	EXPECT_EQ(KEVENT_POLL_POLLIN, uk.ret_data[0]);
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, 0));
	EXPECT_EQ(1, kevent_queued(self->kq));
}

TEST_F(at_add, edge_is_delivered_by_add_only)
{
	struct ukevent uk = readable(self->p[0], KEVENT_REQ_ET), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(KEVENT_RET_DONE, uk.ret_flags);
	EXPECT_EQ(KEVENT_POLL_POLLIN, uk.ret_data[0]);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, 0));
	/* New data: a new edge, for WAIT. */
	ASSERT_EQ(1, write(self->p[1], "y", 1));
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, 1000));
}

TEST_F(at_add, oneshot_is_delivered_and_removed)
{
	struct ukevent uk = readable(self->p[0], KEVENT_REQ_ONESHOT);

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(KEVENT_RET_DONE, uk.ret_flags);
	EXPECT_EQ(0, kevent_queued(self->kq));
}

TEST_F(at_add, always_queue_leaves_it_to_wait)
{
	struct ukevent uk = readable(self->p[0], KEVENT_REQ_ALWAYS_QUEUE | KEVENT_REQ_ONESHOT);
	struct ukevent out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, uk.ret_flags);
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, 0));
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(0, kevent_queued(self->kq));
}

TEST_F(at_add, not_ready_is_not_delivered)
{
	struct ukevent uk = kevent_fd(self->p[1], KEVENT_POLL, KEVENT_POLL_POLLHUP, 0);

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, uk.ret_flags);
	EXPECT_EQ(0, uk.ret_data[0]);
}

/* A batch: each entry says what happened to it. */
TEST_F(at_add, a_batch_mixes_delivered_queued_and_failed)
{
	struct ukevent uk[3] = {
		readable(self->p[0], 0),
		kevent_timer(100000, 1, 0),
		kevent_timer(0, 2, 0),		/* period 0: EINVAL */
	};

	ASSERT_EQ(2, kevent_add(self->kq, uk, 3));
	EXPECT_EQ(KEVENT_RET_DONE, uk[0].ret_flags);
	EXPECT_EQ(0, uk[1].ret_flags);
	EXPECT_EQ(KEVENT_RET_BROKEN, uk[2].ret_flags);
	EXPECT_EQ(EINVAL, uk[2].ret_data[0]);
}

/* KEVENT_CTL_INIT's queue: the 2006 rule, the flag changes nothing. */
TEST(ctl_init_queues_always)
{
	struct ukevent uk, out;
	int kq = kevent_init(), p[2];

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pipe2(p, O_NONBLOCK));
	ASSERT_EQ(1, write(p[1], "x", 1));
	for (unsigned int flags = 0; flags <= KEVENT_REQ_ALWAYS_QUEUE; flags += KEVENT_REQ_ALWAYS_QUEUE) {
		uk = readable(p[0], flags | KEVENT_REQ_ONESHOT);
		ASSERT_EQ(1, kevent_add(kq, &uk, 1));
		EXPECT_EQ(0, uk.ret_flags);
		EXPECT_EQ(1, kevent_wait(kq, &out, 1, 0));
	}
	close(kq);
	close(p[0]);
	close(p[1]);
}

TEST_HARNESS_MAIN
