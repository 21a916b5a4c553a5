// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_limits_test: the caps on kevents (docs/abi.md, "Limits").
 *
 * - A queue holds at most 65536 kevents (KEVENT_QUEUE_MAX).
 * - All the queues of one user hold at most /proc/sys/user/max_kevents,
 *   network AIO requests included. Both refuse with ENOSPC, and a removed
 *   kevent or a closed queue gives its places back.
 *
 * Runs as root: it lowers max_kevents, which caps every user of the host,
 * root included, so it must not run beside other programs that use kevent
 * (in the default lab it runs on host b, whose runs follow one another).
 * The old value is put back at the end of each test.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define MAX_KEVENTS	"/proc/sys/user/max_kevents"
#define QUEUE_MAX	65536
#define BATCH		1024	/* KEVENT_CTL_MAX_NUM */
#define NOBODY		65534
#define NOGROUP		65534
#define OTHER_USER	65533
/* A period no test outlives: the timers of these tests never fire. */
#define HOUR_MS		3600000

static long read_max(void)
{
	FILE *f = fopen(MAX_KEVENTS, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_max(long v)
{
	FILE *f = fopen(MAX_KEVENTS, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/*
 * Add @n timers with tags @first.. to @kq, in batches; returns how many
 * were added. @errs counts the entries refused with ENOSPC; any other
 * refusal makes the return value negative.
 */
static long add_timers(int kq, unsigned int first, unsigned int n, long *enospc)
{
	static struct ukevent uk[BATCH];
	long added = 0;

	*enospc = 0;
	while (n) {
		unsigned int i, m = n < BATCH ? n : BATCH;
		long r;

		for (i = 0; i < m; i++)
			uk[i] = kevent_timer(HOUR_MS, first + i, 0);
		r = kevent_add(kq, uk, m);
		if (r < 0)
			return -1;
		for (i = 0; i < m; i++) {
			if (!uk[i].ret_flags)
				continue;
			if (uk[i].ret_flags != KEVENT_RET_BROKEN ||
			    uk[i].ret_data[0] != ENOSPC)
				return -1;
			(*enospc)++;
		}
		added += r;
		first += m;
		n -= m;
	}
	return added;
}

static int remove_timer(int kq, unsigned int tag)
{
	struct ukevent uk = kevent_timer(HOUR_MS, tag, 0);

	return kevent_remove(kq, &uk, 1) == 1 ? 0 : -1;
}

FIXTURE(limits) {
	long saved_max;
};

FIXTURE_SETUP(limits)
{
	self->saved_max = read_max();
	ASSERT_LT(0, self->saved_max) TH_LOG("cannot read %s", MAX_KEVENTS);
}

FIXTURE_TEARDOWN(limits)
{
	EXPECT_EQ(0, write_max(self->saved_max));
}

/* The per-user cap is a sysctl of the user namespace, on by default. */
TEST_F(limits, max_kevents_is_a_sysctl)
{
	/* A twenty-fifth of low memory in kevents: thousands on any host. */
	EXPECT_LE(10000, self->saved_max);
	EXPECT_GE(INT_MAX, self->saved_max);
	ASSERT_EQ(0, write_max(12345));
	EXPECT_EQ(12345, read_max());
	errno = 0;
	EXPECT_EQ(-1, write_max(-1));
	EXPECT_EQ(12345, read_max());
}

/*
 * A queue holds 65536 kevents; one more is ENOSPC; other queues go on.
 * 120 s, not the harness's 30: adding 65536 kevents took about 30 s on the
 * lockdep/KASAN kernel of lab smp, whose CPUs QEMU emulates.
 */
TEST_F_TIMEOUT(limits, queue_cap_is_enospc, 120)
{
	int kq = kevent_init(), other = kevent_init();
	long enospc, added;

	ASSERT_LE(0, kq);
	ASSERT_LE(0, other);
	/* Lift the per-user cap out of the way. */
	ASSERT_EQ(0, write_max(4 * QUEUE_MAX));

	added = add_timers(kq, 0, QUEUE_MAX, &enospc);
	EXPECT_EQ(QUEUE_MAX, added);
	EXPECT_EQ(0, enospc);
	EXPECT_EQ(QUEUE_MAX, kevent_queued(kq));

	added = add_timers(kq, QUEUE_MAX, 3, &enospc);
	EXPECT_EQ(0, added);
	EXPECT_EQ(3, enospc);
	EXPECT_EQ(QUEUE_MAX, kevent_queued(kq));

	/* The cap is per queue: another queue of the same user has room. */
	EXPECT_QUEUE_WORKS(other);

	/* A removed kevent gives its place back. */
	EXPECT_EQ(0, remove_timer(kq, 7));
	EXPECT_QUEUE_WORKS(kq);
	added = add_timers(kq, QUEUE_MAX, 1, &enospc);
	EXPECT_EQ(1, added);
	close(kq);
	close(other);
}

/*
 * Run @fn in a child as user @uid and return its exit status (0: all
 * passed, >0: the step that failed).
 */
static int as_user(uid_t uid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgid(NOGROUP) || setuid(uid))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

struct user_cap {
	int go[2];	/* the parent lets the first user go on */
	int held[2];	/* the first user holds its 100 kevents */
};

/*
 * As nobody, with max_kevents 100: 60 kevents on one queue, 40 of 60 on a
 * second one (the cap spans the user's queues), then wait while another
 * user adds its own 100; then close the first queue, whose 60 places
 * come back.
 */
static int nobody_fills_two_queues(void *arg)
{
	struct user_cap *uc = arg;
	int a = kevent_init(), b = kevent_init();
	long enospc;
	char c;

	if (a < 0 || b < 0)
		return 1;
	if (add_timers(a, 0, 60, &enospc) != 60 || enospc)
		return 2;
	if (add_timers(b, 0, 60, &enospc) != 40 || enospc != 20)
		return 3;
	if (kevent_queue_check(a) == NULL)	/* a full user cannot add */
		return 4;
	if (write(uc->held[1], "y", 1) != 1 || read(uc->go[0], &c, 1) != 1)
		return 5;
	close(a);
	if (add_timers(b, 100, 60, &enospc) != 60 || enospc)
		return 6;
	if (kevent_queue_check(b) != NULL)	/* one more than fits: no */
		return 0;
	return 7;
}

/* Another user has a cap of its own. */
static int other_user_has_its_own_cap(void *arg)
{
	int kq = kevent_init();
	long enospc;

	if (kq < 0)
		return 1;
	if (add_timers(kq, 0, 101, &enospc) != 100 || enospc != 1)
		return 2;
	return 0;
}

TEST_F(limits, user_cap_is_enospc)
{
	struct user_cap uc;
	int status, other;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(uc.go));
	ASSERT_EQ(0, pipe(uc.held));
	ASSERT_EQ(0, write_max(100));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgid(NOGROUP) || setuid(NOBODY))
			_exit(100);
		_exit(nobody_fills_two_queues(&uc));
	}
	EXPECT_EQ(1, read(uc.held[0], &c, 1)) TH_LOG("nobody did not fill its queues");
	other = as_user(OTHER_USER, other_user_has_its_own_cap, NULL);
	EXPECT_EQ(0, other) TH_LOG("user %d: step %d failed", OTHER_USER, other);
	EXPECT_EQ(1, write(uc.go[1], "y", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("nobody: step %d failed (2: first 60, 3: 40 of 60 on the second queue, "
		       "4: a full user could add, 6: closing a queue gave nothing back, "
		       "7: no cap after that)", WEXITSTATUS(status));
	close(uc.go[0]);
	close(uc.go[1]);
	close(uc.held[0]);
	close(uc.held[1]);
}

/*
 * As nobody, with max_kevents 2: a network AIO request is a kevent of the
 * user. Two receives fit, a third is ENOSPC, as is a timer; cancelling one
 * (REMOVE) makes room again.
 */
static int naio_requests_count(void *arg)
{
	/* Anonymous memory: a buffer in a file mapping is refused (.bss too). */
	char (*buf)[4096] = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ukevent uk;
	long id, r;
	int kq = kevent_init(), s[2];

	if (buf == MAP_FAILED || kq < 0 || kevent_tcp_pair(s))
		return 1;
	id = kevent_aio_recv(kq, s[1], buf[0], sizeof(buf[0]), 0);
	r = id < 0 ? id : kevent_aio_recv(kq, s[1], buf[1], sizeof(buf[1]), 0);
	if (r < 0) {
		fprintf(stderr, "# aio_recv: %s\n", strerror(errno));
		return 2;
	}
	errno = 0;
	r = kevent_aio_recv(kq, s[1], buf[2], sizeof(buf[2]), 0);
	if (r != -1 || errno != ENOSPC) {
		fprintf(stderr, "# third aio_recv: %ld, %s\n", r, strerror(errno));
		return 3;
	}
	uk = kevent_timer(HOUR_MS, 1, 0);
	if (kevent_add(kq, &uk, 1) != 0 || uk.ret_data[0] != ENOSPC)
		return 4;
	uk = kevent_fd(s[1], KEVENT_NAIO, 0, 0);
	uk.id.raw[1] = id;
	if (kevent_remove(kq, &uk, 1) != 1)
		return 5;
	if (kevent_aio_recv(kq, s[1], buf[2], sizeof(buf[2]), 0) < 0) {
		fprintf(stderr, "# aio_recv after REMOVE: %s\n", strerror(errno));
		return 6;
	}
	close(kq);
	close(s[0]);
	close(s[1]);
	return 0;
}

TEST_F(limits, user_cap_counts_naio_requests)
{
	int step;

	ASSERT_EQ(0, write_max(2));
	step = as_user(NOBODY, naio_requests_count, NULL);
	EXPECT_EQ(0, step)
		TH_LOG("step %d failed (2: two receives, 3: third not ENOSPC, 4: timer not "
		       "ENOSPC, 5: REMOVE, 6: no room after REMOVE)", step);
	EXPECT_EQ(0, kevent_wait_unpinned(5000));
}

TEST_HARNESS_MAIN
