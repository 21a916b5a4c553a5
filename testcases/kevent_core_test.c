// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_core_test: the queue and kevent_ctl() seen from user space.
 *
 * Every documented error of docs/abi.md that does not need an event source
 * other than timers, the ADD/REMOVE/MODIFY write-back, WAIT's timeout and
 * signal semantics, poll() on the queue and its release on the last close.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

FIXTURE(queue) {
	int fd;
};

FIXTURE_SETUP(queue)
{
	self->fd = kevent_init();
	ASSERT_GE(self->fd, 0) TH_LOG("KEVENT_CTL_INIT: %s", strerror(errno));
}

FIXTURE_TEARDOWN(queue)
{
	close(self->fd);
}

TEST(ukevent_layout)
{
	/* Fixed by the ABI: see docs/abi.md. */
	EXPECT_EQ(40, sizeof(struct ukevent));
	EXPECT_EQ(12, sizeof(struct kevent_user_control));
	EXPECT_EQ(0, KEVENT_SOCKET);
	EXPECT_EQ(4, KEVENT_NAIO);
	EXPECT_EQ(3, KEVENT_CTL_WAIT);
	EXPECT_EQ(4, KEVENT_CTL_INIT);
}

TEST(init_gives_pollable_fd)
{
	struct pollfd pfd;
	int fd = kevent_init();

	ASSERT_GE(fd, 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, kevent_queued(fd));
	EXPECT_EQ(0, close(fd));
}

TEST_F(queue, unknown_cmd_is_einval)
{
	struct ukevent uk = kevent_timer(10, 0, 0);

	EXPECT_EQ(-1, kevent_cmd(self->fd, 5, &uk, 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, kevent_cmd(self->fd, 0x80000000u, &uk, 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, kevent_queued(self->fd));
}

TEST_F(queue, bad_control_pointer_is_efault)
{
	void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, page);
	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, page));
	EXPECT_EQ(EFAULT, errno);
	munmap(page, 4096);
}

TEST_F(queue, array_past_end_of_mapping_is_efault)
{
	struct kevent_user_control ctl = { KEVENT_CTL_ADD, 1, 0 };
	char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *end;

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + 4096, 4096));
	/* The control block fits; the ukevent behind it does not. */
	end = map + 4096 - sizeof(ctl);
	memcpy(end, &ctl, sizeof(ctl));
	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, end));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, kevent_queued(self->fd));
	munmap(map, 4096);
}

TEST_F(queue, read_only_array_is_efault_and_adds_nothing)
{
	struct kevent_user_control ctl = { KEVENT_CTL_ADD, 1, 0 };
	struct ukevent uk = kevent_timer(10, 0, 0);
	char *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, map);
	memcpy(map, &ctl, sizeof(ctl));
	memcpy(map + KEVENT_CTL_SIZE, &uk, sizeof(uk));
	ASSERT_EQ(0, mprotect(map, 4096, PROT_READ));
	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, map));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, kevent_queued(self->fd));
	munmap(map, 4096);
}

TEST_F(queue, num_above_limit_is_e2big)
{
	struct kevent_user_control ctl = { KEVENT_CTL_ADD, KEVENT_CTL_MAX_NUM + 1, 0 };

	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, &ctl));
	EXPECT_EQ(E2BIG, errno);
	ctl.cmd = KEVENT_CTL_WAIT;
	ctl.num = 0xffffffffu;
	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, &ctl));
	EXPECT_EQ(E2BIG, errno);
}

TEST_F(queue, num_at_limit_is_accepted)
{
	struct ukevent *uk = calloc(KEVENT_CTL_MAX_NUM, sizeof(*uk));
	unsigned int i;

	ASSERT_NE(NULL, uk);
	for (i = 0; i < KEVENT_CTL_MAX_NUM; i++)
		uk[i] = kevent_timer(100000, i, 0);
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_add(self->fd, uk, KEVENT_CTL_MAX_NUM));
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_queued(self->fd));
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_remove(self->fd, uk, KEVENT_CTL_MAX_NUM));
	EXPECT_EQ(0, kevent_queued(self->fd));
	free(uk);
}

TEST(non_kevent_fd_is_rejected)
{
	struct ukevent uk = kevent_timer(10, 0, 0);
	int p[2];

	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-1, kevent_add(p[0], &uk, 1));
	EXPECT_EQ(EINVAL, errno);
	close(p[1]);
	EXPECT_EQ(-1, kevent_add(p[1], &uk, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, kevent_add(-1, &uk, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, kevent_wait(p[0], &uk, 1, 0));
	EXPECT_EQ(EINVAL, errno);
	close(p[0]);
}

TEST_F(queue, unknown_type_comes_back_broken)
{
	struct ukevent uk[3] = {
		kevent_timer(1000, 1, 0),
		kevent_timer(1000, 2, 0),
		kevent_timer(1000, 3, 0),
	};

	uk[1].type = KEVENT_MAX;
	uk[2].type = 0xffffffffu;
	/* One of three is added; the others say why not. */
	EXPECT_EQ(1, kevent_add(self->fd, uk, 3));
	EXPECT_EQ(0, uk[0].ret_flags);
	EXPECT_EQ(KEVENT_RET_BROKEN, uk[1].ret_flags);
	EXPECT_EQ(EINVAL, uk[1].ret_data[0]);
	EXPECT_EQ(KEVENT_RET_BROKEN, uk[2].ret_flags);
	EXPECT_EQ(EINVAL, uk[2].ret_data[0]);
	EXPECT_EQ(1, kevent_queued(self->fd));
}

TEST_F(queue, naio_add_is_einval)
{
	struct ukevent uk = kevent_timer(10, 0, 0);

	/* Network AIO requests come from aio_send() and friends, not ADD. */
	uk.type = KEVENT_NAIO;
	uk.event = KEVENT_SOCKET_RECV;
	EXPECT_EQ(0, kevent_add(self->fd, &uk, 1));
	EXPECT_EQ(KEVENT_RET_BROKEN, uk.ret_flags);
	EXPECT_EQ(EINVAL, uk.ret_data[0]);
	EXPECT_EQ(0, kevent_queued(self->fd));
}

TEST_F(queue, bad_requests_come_back_broken)
{
	struct ukevent uk[4] = {
		kevent_timer(0, 0, 0),			/* no period */
		kevent_timer(10, 1, 0x100),		/* unknown req_flags */
		kevent_timer(10, 2, 0),
		kevent_timer(10, 2, 0),			/* the same again */
	};

	uk[2].event = 0x8;				/* no timer event */
	EXPECT_EQ(0, kevent_add(self->fd, uk, 3));
	EXPECT_EQ(EINVAL, uk[0].ret_data[0]);
	EXPECT_EQ(EINVAL, uk[1].ret_data[0]);
	EXPECT_EQ(EINVAL, uk[2].ret_data[0]);
	uk[2].event = KEVENT_TIMER_FIRED;
	EXPECT_EQ(1, kevent_add(self->fd, &uk[2], 2));
	EXPECT_EQ(0, uk[2].ret_flags);
	EXPECT_EQ(KEVENT_RET_BROKEN, uk[3].ret_flags);
	EXPECT_EQ(EEXIST, uk[3].ret_data[0]);
	EXPECT_EQ(1, kevent_queued(self->fd));
}

TEST_F(queue, remove_unknown_is_enoent)
{
	struct ukevent uk[2] = { kevent_timer(50, 1, 0), kevent_timer(50, 2, 0) };

	ASSERT_EQ(1, kevent_add(self->fd, uk, 1));
	EXPECT_EQ(1, kevent_remove(self->fd, uk, 2));
	EXPECT_EQ(0, uk[0].ret_flags);
	EXPECT_EQ(KEVENT_RET_BROKEN, uk[1].ret_flags);
	EXPECT_EQ(ENOENT, uk[1].ret_data[0]);
	EXPECT_EQ(0, kevent_queued(self->fd));
	EXPECT_EQ(0, kevent_modify(self->fd, uk, 1));
	EXPECT_EQ(ENOENT, uk[0].ret_data[0]);
}

TEST_F(queue, modify_changes_user_data_and_flags)
{
	struct ukevent uk = kevent_timer(20, 0, 0), out[2];

	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	uk.user[0] = 0x1234;
	uk.user[1] = 0x5678;
	uk.req_flags = KEVENT_REQ_ONESHOT;
	ASSERT_EQ(1, kevent_modify(self->fd, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->fd, out, 1, 2000));
	EXPECT_EQ(0x1234, out[0].user[0]);
	EXPECT_EQ(0x5678, out[0].user[1]);
	/* Now oneshot: removed after this delivery. */
	EXPECT_EQ(0, kevent_queued(self->fd));
	uk.event = 0;
	EXPECT_EQ(0, kevent_modify(self->fd, &uk, 1));
}

TEST_F(queue, wait_num_zero_is_einval)
{
	struct ukevent out;

	EXPECT_EQ(-1, kevent_wait(self->fd, &out, 0, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(queue, wait_timeout_zero_returns_at_once)
{
	struct ukevent out[4];
	double t0 = now_ms();

	EXPECT_EQ(0, kevent_wait(self->fd, out, 4, 0));
	EXPECT_LT(now_ms() - t0, 500);
}

TEST_F(queue, wait_returns_fewer_than_num_at_timeout)
{
	struct ukevent uk = kevent_timer(10, 0, KEVENT_REQ_ONESHOT), out[4];
	double t0;

	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	t0 = now_ms();
	EXPECT_EQ(1, kevent_wait(self->fd, out, 4, 200));
	/* It waited for the 4 that never came. */
	EXPECT_GE(now_ms() - t0, 195);
	EXPECT_EQ(KEVENT_TIMER, out[0].type);
	EXPECT_EQ(KEVENT_RET_DONE, out[0].ret_flags);
}

TEST_F(queue, wait_bad_output_pointer_keeps_the_event)
{
	struct ukevent uk = kevent_timer(5, 0, KEVENT_REQ_ONESHOT), out;
	struct kevent_user_control ctl = { KEVENT_CTL_WAIT, 1, 1000 };
	char *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_EQ(1, poll(&pfd, 1, 5000));	/* the event is ready */
	memcpy(map, &ctl, sizeof(ctl));
	ASSERT_EQ(0, mprotect(map, 4096, PROT_READ));
	EXPECT_EQ(-1, sys_kevent_ctl(self->fd, map));
	EXPECT_EQ(EFAULT, errno);
	/* The event was not lost. */
	EXPECT_EQ(1, kevent_wait(self->fd, &out, 1, 0));
	EXPECT_EQ(0, kevent_queued(self->fd));
	munmap(map, 4096);
}

static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(queue, wait_forever_is_interrupted_by_a_signal)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct ukevent out;

	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART */
	alarm(1);
	EXPECT_EQ(-1, kevent_wait(self->fd, &out, 1, KEVENT_WAIT_FOREVER));
	EXPECT_EQ(EINTR, errno);
}

TEST_F(queue, poll_reports_ready_events)
{
	struct ukevent uk = kevent_timer(20, 0, KEVENT_REQ_ONESHOT), out;
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_EQ(POLLIN, pfd.revents & POLLIN);
	EXPECT_EQ(1, kevent_wait(self->fd, &out, 1, 0));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

TEST(queue_lives_until_last_close)
{
	struct ukevent uk = kevent_timer(10, 0, 0), out;
	int fd = kevent_init(), fd2;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, kevent_add(fd, &uk, 1));
	fd2 = dup(fd);
	ASSERT_GE(fd2, 0);
	close(fd);
	EXPECT_EQ(1, kevent_wait(fd2, &out, 1, 2000));
	EXPECT_EQ(1, kevent_queued(fd2));
	close(fd2);
}

TEST(close_with_pending_events)
{
	struct ukevent uk[64], out;
	int i, round;

	/* Queues closed with timers running and events ready: nothing stays. */
	for (round = 0; round < 20; round++) {
		int fd = kevent_init();

		ASSERT_GE(fd, 0);
		for (i = 0; i < 64; i++)
			uk[i] = kevent_timer(1 + i % 3, i, i % 2 ? KEVENT_REQ_ONESHOT : 0);
		ASSERT_EQ(64, kevent_add(fd, uk, 64));
		ASSERT_EQ(1, kevent_wait(fd, &out, 1, 2000));
		close(fd);
	}
}

TEST(child_exit_frees_queue)
{
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct ukevent uk = kevent_timer(1, 0, 0);
		int fd = kevent_init();

		_exit(fd < 0 || kevent_add(fd, &uk, 1) != 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
