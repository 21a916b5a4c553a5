// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_core_test: the queue and kevent_ctl() seen from user space.
 *
 * The ADD/REMOVE/MODIFY write-back, WAIT's timeout and signal semantics,
 * poll() on the queue and its release on the last close; then every bad
 * input of kevent_ctl() that docs/abi.md documents and that needs no event
 * source other than timers (KEVENT_POLL, _SOCKET, _INODE and network AIO
 * test theirs).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
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

static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(queue, wait_forever_is_interrupted_by_a_signal)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	/* 200 ms: long enough that the wait has gone to sleep first. */
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	struct ukevent out;

	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART */
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_FAILS_WITH(EINTR, kevent_wait(self->fd, &out, 1, KEVENT_WAIT_FOREVER),
			  "SIGALRM");
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, poll_reports_ready_events)
{
	/*
	 * 500 ms: the first poll() must come before it, also in a guest under
	 * an emulated CPU (make cpu-check), where 20 ms once passed between
	 * the ADD and the poll().
	 */
	struct ukevent uk = kevent_timer(500, 0, KEVENT_REQ_ONESHOT), out;
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

/*
 * Bad input, in the order of the tables of docs/abi.md ("Errors"). Each
 * test makes the call fail as documented, for every kind of bad value the
 * row names, checks that nothing was done, and then that the queue still
 * works. A test named *_is_e<errno> checks a row of those tables, and
 * lab/tests/test_abi_table.py checks that the row names it.
 */

#define SOON 5000	/* ms: "it arrives" */

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/*
 * A writable page whose next page is unmapped, so that whatever runs off
 * its end faults. Returns the end of the page; unmap_edge() frees it.
 */
static char *map_edge(void)
{
	long page = page_size();
	char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (map == MAP_FAILED)
		return NULL;
	if (munmap(map + page, page)) {
		munmap(map, 2 * page);
		return NULL;
	}
	return map + page;
}

static void unmap_edge(char *end)
{
	munmap(end - page_size(), page_size());
}

/* Writes the control block {@cmd, @num, @timeout} at @at; returns @at. */
static char *put_ctl(char *at, unsigned int cmd, unsigned int num,
		     unsigned int timeout)
{
	struct kevent_user_control ctl = { cmd, num, timeout };

	memcpy(at, &ctl, sizeof(ctl));
	return at;
}

/* Waits until @n events of queue @kq are ready; false if they never are. */
static bool ready_soon(int kq, int n)
{
	int ms;

	for (ms = 0; ms < SOON; ms += 5) {
		if (kevent_ready(kq) >= n)
			return true;
		usleep(5000);
	}
	return false;
}

static const char *const cmd_names[] = { "ADD", "REMOVE", "MODIFY", "WAIT" };

/* Whole-call errors: kevent_ctl() returns -1. */

TEST_F(queue, null_control_is_efault)
{
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, NULL), "ctl NULL");
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(-1, NULL), "ctl NULL, INIT's fd");
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, unmapped_control_is_efault)
{
	long page = page_size();
	char *gone = mmap(NULL, page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, gone);
	/* A valid INIT, had the kernel been able to read it. */
	put_ctl(gone, KEVENT_CTL_INIT, 0, 0);
	ASSERT_EQ(0, munmap(gone, page));
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, gone), "unmapped");
	EXPECT_QUEUE_WORKS(self->fd);
}

/*
 * A mapping without any access. The page written before mprotect() is the
 * case UML got wrong until patch 0015 (its uaccess took a PROT_NONE pte for
 * a present one and read it: write(2) from such a page succeeded too); the
 * other page, never touched, has no pte yet.
 */
TEST_F(queue, prot_none_control_is_efault)
{
	long page = page_size();
	char *touched = mmap(NULL, page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *untouched = mmap(NULL, page, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, touched);
	ASSERT_NE(MAP_FAILED, untouched);
	put_ctl(touched, KEVENT_CTL_INIT, 0, 0);
	ASSERT_EQ(0, mprotect(touched, page, PROT_NONE));
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, untouched), "never touched");
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, touched), "written before");
	munmap(touched, page);
	munmap(untouched, page);
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, control_past_end_of_mapping_is_efault)
{
	char *end = map_edge();
	unsigned int head[2] = { KEVENT_CTL_INIT, 0 };

	ASSERT_NE(NULL, end);
	/* cmd and num are there, timeout is not. */
	memcpy(end - sizeof(head), head, sizeof(head));
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, end - sizeof(head)),
			  "INIT, 8 of 12 bytes");
	head[0] = KEVENT_CTL_WAIT;
	head[1] = 1;
	memcpy(end - sizeof(head), head, sizeof(head));
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, end - sizeof(head)),
			  "WAIT, 8 of 12 bytes");
	unmap_edge(end);
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, kernel_control_pointer_is_efault)
{
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, (void *)(1UL << 47)),
			  "just above user space");
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, (void *)-4096L),
			  "the last page");
	/* The array at ctl + 12 would wrap around to NULL. */
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, (void *)-12L),
			  "-12, array at NULL");
	EXPECT_QUEUE_WORKS(self->fd);
}

/* Not an error: the control block is only read; the array behind it is written. */
TEST_F(queue, read_only_control_is_accepted)
{
	long page = page_size();
	char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ukevent uk = kevent_timer(1, 0, KEVENT_REQ_ONESHOT), out;
	char *ctl = map + page - KEVENT_CTL_SIZE;
	long fd;

	ASSERT_NE(MAP_FAILED, map);
	/* The control block ends its read-only page; the array starts the next. */
	put_ctl(ctl, KEVENT_CTL_ADD, 1, 0);
	memcpy(map + page, &uk, sizeof(uk));
	ASSERT_EQ(0, mprotect(map, page, PROT_READ));
	EXPECT_EQ(1, sys_kevent_ctl(self->fd, ctl)) TH_LOG("ADD: %s", strerror(errno));
	memcpy(&out, map + page, sizeof(out));
	EXPECT_EQ(0, out.ret_flags);

	ASSERT_EQ(0, mprotect(map, page, PROT_READ | PROT_WRITE));
	put_ctl(ctl, KEVENT_CTL_WAIT, 1, SOON);
	ASSERT_EQ(0, mprotect(map, page, PROT_READ));
	EXPECT_EQ(1, sys_kevent_ctl(self->fd, ctl)) TH_LOG("WAIT: %s", strerror(errno));
	memcpy(&out, map + page, sizeof(out));
	EXPECT_EQ(KEVENT_TIMER, out.type);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);

	ASSERT_EQ(0, mprotect(map, page, PROT_READ | PROT_WRITE));
	put_ctl(ctl, KEVENT_CTL_INIT, 0, 0);
	ASSERT_EQ(0, mprotect(map, page, PROT_READ));
	fd = sys_kevent_ctl(-1, ctl);
	EXPECT_LE(0, fd) TH_LOG("INIT: %s", strerror(errno));
	close(fd);
	munmap(map, 2 * page);
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, unknown_cmd_is_einval)
{
	static const unsigned int bad[] = { KEVENT_CTL_READY + 1, 0x80000000u, 0xffffffffu };
	struct ukevent uk = kevent_timer(10, 0, 0);
	char what[64];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "cmd %#x", bad[i]);
		EXPECT_FAILS_WITH(EINVAL, kevent_cmd(self->fd, bad[i], &uk, 1, 0), what);
		snprintf(what, sizeof(what), "cmd %#x, num 0", bad[i]);
		EXPECT_FAILS_WITH(EINVAL, kevent_cmd(self->fd, bad[i], &uk, 0, 0), what);
	}
	EXPECT_EQ(0, kevent_queued(self->fd));
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, num_above_limit_is_e2big)
{
	static const unsigned int bad[] = { KEVENT_CTL_MAX_NUM + 1, 0x80000000u, 0xffffffffu };
	struct kevent_user_control ctl;
	unsigned int cmd, i;
	char what[64];

	/* Nothing follows @ctl: the array must not be read at all. */
	for (cmd = KEVENT_CTL_ADD; cmd <= KEVENT_CTL_WAIT; cmd++)
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			ctl = (struct kevent_user_control){ cmd, bad[i], 0 };
			snprintf(what, sizeof(what), "%s, num %#x", cmd_names[cmd], bad[i]);
			EXPECT_FAILS_WITH(E2BIG, sys_kevent_ctl(self->fd, &ctl), what);
		}
	EXPECT_EQ(0, kevent_queued(self->fd));
	EXPECT_QUEUE_WORKS(self->fd);
}

/* Not an error: num = KEVENT_CTL_MAX_NUM, for every command. */
TEST_F(queue, num_at_limit_is_accepted)
{
	struct ukevent *uk = calloc(KEVENT_CTL_MAX_NUM, sizeof(*uk));
	unsigned int i;

	ASSERT_NE(NULL, uk);
	for (i = 0; i < KEVENT_CTL_MAX_NUM; i++)
		uk[i] = kevent_timer(100000, i, 0);
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_add(self->fd, uk, KEVENT_CTL_MAX_NUM));
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_queued(self->fd));
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_modify(self->fd, uk, KEVENT_CTL_MAX_NUM));
	EXPECT_EQ(0, kevent_wait(self->fd, uk, KEVENT_CTL_MAX_NUM, 0));
	for (i = 0; i < KEVENT_CTL_MAX_NUM; i++)
		uk[i] = kevent_timer(100000, i, 0);
	EXPECT_EQ(KEVENT_CTL_MAX_NUM, kevent_remove(self->fd, uk, KEVENT_CTL_MAX_NUM));
	EXPECT_EQ(0, kevent_queued(self->fd));
	free(uk);
}

/* Not an error: ADD, REMOVE and MODIFY of no entries do nothing. */
TEST_F(queue, num_zero_reads_no_array)
{
	char *end = map_edge();
	unsigned int cmd;

	ASSERT_NE(NULL, end);
	/* The array would start on the unmapped page: it must not be read. */
	for (cmd = KEVENT_CTL_ADD; cmd <= KEVENT_CTL_MODIFY; cmd++) {
		put_ctl(end - KEVENT_CTL_SIZE, cmd, 0, 0);
		EXPECT_EQ(0, sys_kevent_ctl(self->fd, end - KEVENT_CTL_SIZE))
			TH_LOG("%s: %s", cmd_names[cmd], strerror(errno));
	}
	unmap_edge(end);
	EXPECT_EQ(0, kevent_queued(self->fd));
	EXPECT_QUEUE_WORKS(self->fd);
}

/* Runs every command but INIT on @fd, which must fail with @err. */
static void expect_each_cmd_fails(struct __test_metadata *_metadata, int fd,
				  int err, const char *kind)
{
	struct ukevent uk = kevent_timer(10, 0, 0);
	unsigned int cmd;
	char what[96];

	for (cmd = KEVENT_CTL_ADD; cmd <= KEVENT_CTL_WAIT; cmd++) {
		snprintf(what, sizeof(what), "%s: %s", kind, cmd_names[cmd]);
		errno = 0;
		EXPECT_EQ(-1, kevent_cmd(fd, cmd, &uk, 1, 0)) TH_LOG("%s", what);
		EXPECT_EQ(err, errno) TH_LOG("%s: %s", what, strerror(errno));
	}
}

TEST(bad_kevent_fd_is_ebadf)
{
	int kq = kevent_init(), closed = kevent_closed_fd(), path;
	char proc[64];

	ASSERT_GE(kq, 0);
	ASSERT_GE(closed, 0);
	expect_each_cmd_fails(_metadata, closed, EBADF, "closed");
	expect_each_cmd_fails(_metadata, -1, EBADF, "-1");
	expect_each_cmd_fails(_metadata, INT_MAX, EBADF, "INT_MAX");
	/* An O_PATH descriptor of a queue is not the queue. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", kq);
	path = open(proc, O_PATH);
	ASSERT_GE(path, 0) TH_LOG("O_PATH open of %s: %s", proc, strerror(errno));
	expect_each_cmd_fails(_metadata, path, EBADF, "O_PATH of a queue");
	close(path);
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(non_kevent_fd_is_einval)
{
	int kq = kevent_init(), p[2], s[2];
	int file = open("/proc/self/stat", O_RDONLY);
	int dir = open("/", O_RDONLY | O_DIRECTORY);

	ASSERT_GE(kq, 0);
	ASSERT_GE(file, 0);
	ASSERT_GE(dir, 0);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	expect_each_cmd_fails(_metadata, p[0], EINVAL, "pipe");
	expect_each_cmd_fails(_metadata, file, EINVAL, "regular file");
	expect_each_cmd_fails(_metadata, dir, EINVAL, "directory");
	expect_each_cmd_fails(_metadata, s[0], EINVAL, "socket");
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
	close(file);
	close(dir);
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

/* Not an error: INIT ignores its fd, num and timeout. */
TEST(init_ignores_fd_num_and_timeout)
{
	struct kevent_user_control ctl = { KEVENT_CTL_INIT, 0xffffffffu, 7 };
	int closed = kevent_closed_fd(), p[2], fds[4], i, kq;

	ASSERT_GE(closed, 0);
	ASSERT_EQ(0, pipe(p));
	fds[0] = -1;
	fds[1] = closed;
	fds[2] = p[0];
	fds[3] = INT_MAX;
	for (i = 0; i < 4; i++) {
		kq = sys_kevent_ctl(fds[i], &ctl);
		ASSERT_LE(0, kq) TH_LOG("fd %d: %s", fds[i], strerror(errno));
		EXPECT_EQ(0, kevent_queued(kq));
		EXPECT_QUEUE_WORKS(kq);
		close(kq);
	}
	close(p[0]);
	close(p[1]);
}

enum array_place {
	ARRAY_UNMAPPED,		/* the control block ends its mapping */
	ARRAY_PAST_END,		/* entry 0 is there, half of entry 1 is not */
	ARRAY_READ_ONLY,	/* both entries there, but read-only */
};

/* Runs @cmd on the two entries @uk, placed as @place says. */
static long ctl_with_array(int kq, unsigned int cmd, const struct ukevent uk[2],
			   enum array_place place)
{
	long page = page_size(), ret;
	char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *ctl = map;
	int err;

	if (map == MAP_FAILED)
		return -2;
	switch (place) {
	case ARRAY_UNMAPPED:
		ctl = put_ctl(map + page - KEVENT_CTL_SIZE, cmd, 1, 0);
		break;
	case ARRAY_PAST_END:
		ctl = put_ctl(map + page - KEVENT_CTL_SIZE - sizeof(*uk) - 20, cmd, 2, 0);
		memcpy(ctl + KEVENT_CTL_SIZE, uk, sizeof(*uk) + 20);
		break;
	case ARRAY_READ_ONLY:
		put_ctl(ctl, cmd, 2, 0);
		memcpy(ctl + KEVENT_CTL_SIZE, uk, 2 * sizeof(*uk));
		break;
	}
	if (place == ARRAY_READ_ONLY ? mprotect(map, 2 * page, PROT_READ) :
				       munmap(map + page, page))
		return -2;
	errno = 0;
	ret = sys_kevent_ctl(kq, ctl);
	err = errno;
	munmap(map, 2 * page);
	errno = err;
	return ret;
}

/*
 * ADD, REMOVE and MODIFY with their array placed as @place says: each fails
 * with EFAULT and does nothing, not even with entries that could be read.
 */
static void expect_array_fault(struct __test_metadata *_metadata, int kq,
			       enum array_place place)
{
	struct ukevent held = kevent_timer(100000, 1, 0);
	struct ukevent add[2] = { kevent_timer(10, 2, 0), kevent_timer(10, 3, 0) };
	struct ukevent remove[2] = { held, held };
	struct ukevent modify[2] = { held, held };
	unsigned int event, flags;

	ASSERT_EQ(1, kevent_add(kq, &held, 1));
	modify[0].req_flags = modify[1].req_flags = KEVENT_REQ_ONESHOT;

	EXPECT_FAILS_WITH(EFAULT, ctl_with_array(kq, KEVENT_CTL_ADD, add, place), "ADD");
	EXPECT_EQ(1, kevent_queued(kq)) TH_LOG("ADD added");
	EXPECT_FAILS_WITH(EFAULT, ctl_with_array(kq, KEVENT_CTL_REMOVE, remove, place),
			  "REMOVE");
	EXPECT_EQ(1, kevent_queued(kq)) TH_LOG("REMOVE removed");
	EXPECT_FAILS_WITH(EFAULT, ctl_with_array(kq, KEVENT_CTL_MODIFY, modify, place),
			  "MODIFY");
	ASSERT_EQ(0, kevent_fdinfo_kevent(kq, &held, &event, &flags));
	EXPECT_EQ(0, flags) TH_LOG("MODIFY modified");

	ASSERT_EQ(1, kevent_remove(kq, &held, 1));
	EXPECT_QUEUE_WORKS(kq);
}

TEST_F(queue, unmapped_array_is_efault)
{
	expect_array_fault(_metadata, self->fd, ARRAY_UNMAPPED);
}

TEST_F(queue, array_past_end_of_mapping_is_efault)
{
	expect_array_fault(_metadata, self->fd, ARRAY_PAST_END);
}

TEST_F(queue, read_only_array_is_efault)
{
	expect_array_fault(_metadata, self->fd, ARRAY_READ_ONLY);
}

TEST_F(queue, wait_num_zero_is_einval)
{
	struct ukevent uk = kevent_timer(1, 0, KEVENT_REQ_ONESHOT), out;

	EXPECT_FAILS_WITH(EINVAL, kevent_wait(self->fd, &out, 0, 0), "nothing ready");
	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_TRUE(ready_soon(self->fd, 1));
	EXPECT_FAILS_WITH(EINVAL, kevent_wait(self->fd, &out, 0, 0), "an event ready");
	EXPECT_FAILS_WITH(EINVAL, kevent_wait(self->fd, &out, 0, KEVENT_WAIT_FOREVER),
			  "timeout forever");
	/* It took nothing. */
	EXPECT_EQ(1, kevent_ready(self->fd));
	EXPECT_EQ(1, kevent_wait(self->fd, &out, 1, 0));
	EXPECT_QUEUE_WORKS(self->fd);
}

/*
 * WAIT with its output where it cannot write: EFAULT before any event is
 * taken, so @ready events stay ready, and a good WAIT then delivers them.
 */
static void expect_wait_fault(struct __test_metadata *_metadata, int kq,
			      char *ctl, int ready)
{
	struct ukevent out[2];

	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(kq, ctl), "WAIT");
	EXPECT_EQ(ready, kevent_ready(kq)) TH_LOG("events were taken");
	EXPECT_EQ(ready, kevent_wait(kq, out, 2, 0));
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
}

TEST_F(queue, wait_unmapped_output_is_efault)
{
	struct ukevent uk = kevent_timer(1, 0, KEVENT_REQ_ONESHOT);
	char *end = map_edge();
	double t0 = now_ms();

	ASSERT_NE(NULL, end);
	/* Nothing ready, no limit: a bad output fails at once, not after waiting. */
	put_ctl(end - KEVENT_CTL_SIZE, KEVENT_CTL_WAIT, 1, KEVENT_WAIT_FOREVER);
	EXPECT_FAILS_WITH(EFAULT, sys_kevent_ctl(self->fd, end - KEVENT_CTL_SIZE),
			  "nothing ready, timeout forever");
	EXPECT_LT(now_ms() - t0, SOON);
	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_TRUE(ready_soon(self->fd, 1));
	put_ctl(end - KEVENT_CTL_SIZE, KEVENT_CTL_WAIT, 1, 0);
	expect_wait_fault(_metadata, self->fd, end - KEVENT_CTL_SIZE, 1);
	unmap_edge(end);
}

TEST_F(queue, wait_output_past_end_of_mapping_is_efault)
{
	struct ukevent uk[2] = { kevent_timer(1, 1, KEVENT_REQ_ONESHOT),
				 kevent_timer(1, 2, KEVENT_REQ_ONESHOT) };
	char *end = map_edge(), *ctl;

	ASSERT_NE(NULL, end);
	/* Room for one and a half of the two events that are ready. */
	ctl = end - KEVENT_CTL_SIZE - sizeof(struct ukevent) - 20;
	put_ctl(ctl, KEVENT_CTL_WAIT, 2, 0);
	ASSERT_EQ(2, kevent_add(self->fd, uk, 2));
	ASSERT_TRUE(ready_soon(self->fd, 2));
	expect_wait_fault(_metadata, self->fd, ctl, 2);
	unmap_edge(end);
}

TEST_F(queue, wait_read_only_output_is_efault)
{
	struct ukevent uk = kevent_timer(1, 0, KEVENT_REQ_ONESHOT);
	long page = page_size();
	char *map = mmap(NULL, page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_TRUE(ready_soon(self->fd, 1));
	put_ctl(map, KEVENT_CTL_WAIT, 1, 1000);
	ASSERT_EQ(0, mprotect(map, page, PROT_READ));
	expect_wait_fault(_metadata, self->fd, map, 1);
	munmap(map, page);
}

/*
 * No byte WAIT writes comes from memory the kernel did not set: the rest of
 * the output area is cleared, and the event is exactly the request with
 * what the kernel fills in (struct ukevent has no padding to leak through).
 */
TEST_F(queue, wait_writes_only_what_it_sets)
{
	struct ukevent uk = kevent_timer(1, 0x5a5a, KEVENT_REQ_ONESHOT), want, out[4];
	unsigned char *rest = (unsigned char *)&out[1];
	size_t i;

	uk.user[0] = 0x11223344;
	uk.user[1] = 0x55667788;
	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_TRUE(ready_soon(self->fd, 1));
	memset(out, 0xa5, sizeof(out));
	ASSERT_EQ(1, kevent_wait(self->fd, out, 4, 0));

	want = uk;
	want.ret_flags = KEVENT_RET_DONE;
	want.ret_data[0] = out[0].ret_data[0];	/* expired periods: 1 or more */
	EXPECT_LE(1, out[0].ret_data[0]);
	EXPECT_EQ(0, memcmp(&want, &out[0], sizeof(want)))
		TH_LOG("the event differs from the request it answers");
	for (i = 0; i < 3 * sizeof(struct ukevent); i++)
		if (rest[i])
			break;
	EXPECT_EQ(3 * sizeof(struct ukevent), i)
		TH_LOG("byte %zu after the event is %#x, not 0", i, rest[i]);
}

/* Per-entry errors: the entry comes back with KEVENT_RET_BROKEN and the errno. */

TEST_F(queue, unknown_type_is_einval)
{
	static const unsigned int bad[] = { KEVENT_MAX, 0x80000000u, 0xffffffffu };
	struct ukevent uk[4] = {
		kevent_timer(1000, 1, 0),
		kevent_timer(1000, 2, 0),
		kevent_timer(1000, 3, 0),
		kevent_timer(1000, 4, 0),
	};
	char what[32];
	unsigned int i;

	for (i = 0; i < 3; i++)
		uk[i + 1].type = bad[i];
	/* One of four is added; the others say why not. */
	EXPECT_EQ(1, kevent_add(self->fd, uk, 4));
	EXPECT_EQ(0, uk[0].ret_flags);
	for (i = 0; i < 3; i++) {
		snprintf(what, sizeof(what), "type %#x", bad[i]);
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk[i + 1], what);
	}
	EXPECT_EQ(1, kevent_queued(self->fd));
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, naio_add_is_einval)
{
	struct ukevent uk = kevent_timer(10, 0, 0);

	/* Network AIO requests come from aio_send() and friends, not ADD. */
	uk.type = KEVENT_NAIO;
	uk.event = KEVENT_SOCKET_RECV;
	EXPECT_EQ(0, kevent_add(self->fd, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "ADD of KEVENT_NAIO");
	EXPECT_EQ(0, kevent_queued(self->fd));
	EXPECT_QUEUE_WORKS(self->fd);
}

/* KEVENT_POLL, _SOCKET and _INODE have theirs in their own tests. */
TEST_F(queue, timer_event_without_a_timer_bit_is_einval)
{
	static const unsigned int bad[] = { 0, 0x2, ~(unsigned int)KEVENT_TIMER_FIRED };
	struct ukevent held = kevent_timer(100000, 1, 0);

	ASSERT_EQ(1, kevent_add(self->fd, &held, 1));
	expect_masks_fail(_metadata, self->fd, &held, kevent_timer(100000, 2, 0), bad,
			  sizeof(bad) / sizeof(bad[0]), EINVAL);
}

TEST_F(queue, unknown_req_flags_is_einval)
{
	static const unsigned int bad[] = { 0x20, 0x100, 0x80000000u,
					    0xffffffffu /* ONESHOT among them */ };
	struct ukevent held = kevent_timer(100000, 1, 0), uk;
	unsigned int i, event, flags;
	char what[64];

	ASSERT_EQ(1, kevent_add(self->fd, &held, 1));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uk = kevent_timer(100000, 2, bad[i]);
		snprintf(what, sizeof(what), "ADD, req_flags %#x", bad[i]);
		EXPECT_EQ(0, kevent_add(self->fd, &uk, 1)) TH_LOG("%s", what);
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, what);
		uk = held;
		uk.req_flags = bad[i];
		snprintf(what, sizeof(what), "MODIFY, req_flags %#x", bad[i]);
		EXPECT_EQ(0, kevent_modify(self->fd, &uk, 1)) TH_LOG("%s", what);
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, what);
	}
	EXPECT_EQ(1, kevent_queued(self->fd));
	ASSERT_EQ(0, kevent_fdinfo_kevent(self->fd, &held, &event, &flags));
	EXPECT_EQ(0, flags);
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, timer_period_zero_is_einval)
{
	struct ukevent uk[2] = { kevent_timer(0, 0, 0),
				 kevent_timer(0, 1, KEVENT_REQ_ONESHOT) };

	EXPECT_EQ(0, kevent_add(self->fd, uk, 2));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk[0], "periodic");
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk[1], "oneshot");
	EXPECT_EQ(0, kevent_queued(self->fd));
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, add_twice_is_eexist)
{
	struct ukevent uk[2] = { kevent_timer(100000, 1, 0),
				 kevent_timer(100000, 1, KEVENT_REQ_ONESHOT) };
	struct ukevent again = uk[1];
	unsigned int event, flags;

	/* In one call, and in the next. */
	EXPECT_EQ(1, kevent_add(self->fd, uk, 2));
	EXPECT_EQ(0, uk[0].ret_flags);
	EXPECT_ENTRY_FAILS_WITH(EEXIST, uk[1], "the same in one call");
	EXPECT_EQ(0, kevent_add(self->fd, &again, 1));
	EXPECT_ENTRY_FAILS_WITH(EEXIST, again, "the same in the next call");
	/* The first one is kept as it was. */
	EXPECT_EQ(1, kevent_queued(self->fd));
	ASSERT_EQ(0, kevent_fdinfo_kevent(self->fd, &uk[0], &event, &flags));
	EXPECT_EQ(0, flags);
	EXPECT_QUEUE_WORKS(self->fd);
}

/* Kevents that differ from @held in one part of their name only. */
static void near_misses(struct ukevent miss[3], const struct ukevent *held)
{
	miss[0] = miss[1] = miss[2] = *held;
	miss[0].id.raw[0]++;
	miss[1].id.raw[1]++;
	miss[2].type = KEVENT_POLL;
}

static const char *const miss_names[] = { "other id.raw[0]", "other id.raw[1]",
					  "other type" };

TEST_F(queue, remove_unknown_is_enoent)
{
	struct ukevent held = kevent_timer(100000, 1, 0), miss[3];
	int i;

	ASSERT_EQ(1, kevent_add(self->fd, &held, 1));
	near_misses(miss, &held);
	EXPECT_EQ(0, kevent_remove(self->fd, miss, 3));
	for (i = 0; i < 3; i++)
		EXPECT_ENTRY_FAILS_WITH(ENOENT, miss[i], miss_names[i]);
	EXPECT_EQ(1, kevent_queued(self->fd));
	/* Removed once: gone the second time. */
	EXPECT_EQ(1, kevent_remove(self->fd, &held, 1));
	EXPECT_EQ(0, kevent_remove(self->fd, &held, 1));
	EXPECT_ENTRY_FAILS_WITH(ENOENT, held, "removed before");
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_F(queue, modify_unknown_is_enoent)
{
	struct ukevent held = kevent_timer(100000, 1, 0), miss[3];
	unsigned int event, flags;
	int i;

	ASSERT_EQ(1, kevent_add(self->fd, &held, 1));
	near_misses(miss, &held);
	for (i = 0; i < 3; i++)
		miss[i].req_flags = KEVENT_REQ_ONESHOT;
	EXPECT_EQ(0, kevent_modify(self->fd, miss, 3));
	for (i = 0; i < 3; i++)
		EXPECT_ENTRY_FAILS_WITH(ENOENT, miss[i], miss_names[i]);
	ASSERT_EQ(0, kevent_fdinfo_kevent(self->fd, &held, &event, &flags));
	EXPECT_EQ(0, flags);
	EXPECT_EQ(1, kevent_remove(self->fd, &held, 1));
	EXPECT_EQ(0, kevent_modify(self->fd, &held, 1));
	EXPECT_ENTRY_FAILS_WITH(ENOENT, held, "removed before");
	EXPECT_QUEUE_WORKS(self->fd);
}

TEST_HARNESS_MAIN
