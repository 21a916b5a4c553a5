// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_wait_test: kevent_get_events(), the wait of kevent's later takes
 * beside the seed's WAIT: between min_nr and max_nr events, a nanosecond
 * timeout that may be an absolute CLOCK_MONOTONIC time, a signal mask in
 * force while it sleeps and nowhere else, and its errors (docs/abi.md).
 *
 * The events are pipes with data watched by KEVENT_POLL: level triggered,
 * ready as soon as they are added, so a test controls how many are ready.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define NPIPES	6
#define MS	1000000LL	/* ns */
/* The kernel's sigset_t, which sigsetsize means (glibc's is 128 bytes). */
#define KSIGSET	(_NSIG / 8)

FIXTURE(get_events) {
	int kq;
	int p[NPIPES][2];
};

FIXTURE_SETUP(get_events)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	for (int i = 0; i < NPIPES; i++) {
		struct ukevent uk;

		ASSERT_EQ(0, pipe2(self->p[i], O_NONBLOCK));
		uk = kevent_fd(self->p[i][0], KEVENT_POLL, KEVENT_POLL_POLLIN, 0);
		uk.user[0] = i;
		ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	}
}

FIXTURE_TEARDOWN(get_events)
{
	close(self->kq);
	for (int i = 0; i < NPIPES; i++) {
		close(self->p[i][0]);
		close(self->p[i][1]);
	}
}

/* Makes the first @n pipes readable. */
static void fill(int p[][2], int n)
{
	for (int i = 0; i < n; i++)
		if (write(p[i][1], "x", 1) != 1)
			abort();
}

TEST_F(get_events, returns_up_to_max_nr_once_min_nr_are_ready)
{
	struct kevent_get_args args = { .timeout_ns = 5000 * MS };
	struct ukevent out[NPIPES];

	fill(self->p, 5);
	EXPECT_EQ(3, kevent_get_events(self->kq, 2, 3, out, &args));
	EXPECT_EQ(KEVENT_POLL, out[0].type);
	/* Three kevents, each once. */
	EXPECT_NE(out[0].user[0], out[1].user[0]);
	EXPECT_NE(out[1].user[0], out[2].user[0]);
	EXPECT_NE(out[0].user[0], out[2].user[0]);
	/* The seed's WAIT keeps its rule: @num, or the timeout. */
	EXPECT_EQ(5, kevent_wait(self->kq, out, 5, 1000));
}

TEST_F(get_events, min_nr_zero_does_not_sleep)
{
	struct ukevent out[NPIPES];
	long long t0 = kevent_now_ns();

	EXPECT_EQ(0, kevent_get_events(self->kq, 0, NPIPES, out, NULL));
	EXPECT_LT(kevent_now_ns() - t0, 1000 * MS);
	fill(self->p, 2);
	EXPECT_EQ(2, kevent_get_events(self->kq, 0, NPIPES, out, NULL));
}

TEST_F(get_events, fewer_than_min_nr_at_a_relative_timeout)
{
	struct kevent_get_args args = { .timeout_ns = 150 * MS };
	struct ukevent out[NPIPES];
	long long t0;

	fill(self->p, 1);
	t0 = kevent_now_ns();
	EXPECT_EQ(1, kevent_get_events(self->kq, 2, 4, out, &args));
	EXPECT_GE(kevent_now_ns() - t0, 140 * MS);
	EXPECT_LT(kevent_now_ns() - t0, 5000 * MS);
}

TEST_F(get_events, a_timeout_of_zero_returns_what_is_ready)
{
	struct kevent_get_args args = { .timeout_ns = 0 };
	struct ukevent out[NPIPES];

	EXPECT_EQ(0, kevent_get_events(self->kq, 1, NPIPES, out, &args));
	fill(self->p, 3);
	EXPECT_EQ(3, kevent_get_events(self->kq, 4, NPIPES, out, &args));
}

TEST_F(get_events, the_timeout_is_in_nanoseconds)
{
	/* 30 ms: the seed's millisecond field could say that, 30.5 ms not. */
	struct kevent_get_args args = { .timeout_ns = 30 * MS + 500000 };
	struct ukevent out[NPIPES];
	long long t0 = kevent_now_ns();

	EXPECT_EQ(0, kevent_get_events(self->kq, 1, 1, out, &args));
	EXPECT_GE(kevent_now_ns() - t0, 30 * MS + 500000);
	EXPECT_LT(kevent_now_ns() - t0, 3000 * MS);
}

TEST_F(get_events, an_absolute_timeout_is_a_monotonic_time)
{
	struct kevent_get_args args = { .flags = KEVENT_GET_ABSTIME };
	struct ukevent out[NPIPES];
	long long t0 = kevent_now_ns();

	args.timeout_ns = t0 + 120 * MS;
	EXPECT_EQ(0, kevent_get_events(self->kq, 1, 1, out, &args));
	EXPECT_GE(kevent_now_ns(), t0 + 120 * MS);
	/* Read as a span it would have waited about 55 years. */
	EXPECT_LT(kevent_now_ns(), t0 + 5000 * MS);
	/* A time already past: what is ready, at once. */
	fill(self->p, 1);
	args.timeout_ns = t0;
	t0 = kevent_now_ns();
	EXPECT_EQ(1, kevent_get_events(self->kq, 2, 2, out, &args));
	EXPECT_LT(kevent_now_ns() - t0, 1000 * MS);
}

static void *write_later(void *arg)
{
	int fd = *(int *)arg;

	usleep(100 * 1000);
	if (write(fd, "x", 1) != 1)
		abort();
	return NULL;
}

TEST_F(get_events, without_args_it_waits_for_min_nr_with_no_time_limit)
{
	struct ukevent out[NPIPES];
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, write_later, &self->p[4][1]));
	EXPECT_EQ(1, kevent_get_events(self->kq, 1, NPIPES, out, NULL));
	EXPECT_EQ(4, out[0].user[0]);
	pthread_join(t, NULL);
}

/* A ready event as one call of each kind sees it: once, however long it waits. */
TEST_F(get_events, a_level_kevent_is_delivered_once_per_call)
{
	struct kevent_get_args args = { .timeout_ns = 100 * MS };
	struct ukevent out[NPIPES];

	fill(self->p, 1);
	EXPECT_EQ(1, kevent_get_events(self->kq, 2, 4, out, &args));
	EXPECT_EQ(1, kevent_wait(self->kq, out, 2, 100));
}

TEST_F(get_events, a_timeout_past_any_end_or_negative_waits_for_the_event)
{
	struct kevent_get_args args = { .timeout_ns = 0x7fffffffffffffffLL };
	struct ukevent out[NPIPES];
	pthread_t t;

	/* Relative: the deadline saturates instead of wrapping into the past. */
	ASSERT_EQ(0, pthread_create(&t, NULL, write_later, &self->p[1][1]));
	EXPECT_EQ(1, kevent_get_events(self->kq, 1, 1, out, &args));
	pthread_join(t, NULL);
	ASSERT_EQ(1, read(self->p[1][0], out, 1));
	/* Negative means no limit, with KEVENT_GET_ABSTIME too. */
	args = (struct kevent_get_args){ .timeout_ns = -1, .flags = KEVENT_GET_ABSTIME };
	ASSERT_EQ(0, pthread_create(&t, NULL, write_later, &self->p[2][1]));
	EXPECT_EQ(1, kevent_get_events(self->kq, 1, 1, out, &args));
	EXPECT_EQ(2, out[0].user[0]);
	pthread_join(t, NULL);
}

TEST_F(get_events, sigsetsize_without_a_sigmask_is_not_looked_at)
{
	struct kevent_get_args args = { .timeout_ns = 0, .sigsetsize = 4 };
	struct ukevent out[NPIPES];

	fill(self->p, 1);
	EXPECT_EQ(1, kevent_get_events(self->kq, 1, 1, out, &args));
}

/*
 * A kevent that is no longer ready when the call looks at it is no event:
 * its place in the output reads as zeros, as every place past the events
 * returned does (a copy of it was left there).
 */
TEST_F(get_events, nothing_but_zeros_past_the_events_returned)
{
	struct kevent_get_args args = { .timeout_ns = 0 };
	struct ukevent out[4], zero;
	char c;

	memset(&zero, 0, sizeof(zero));
	fill(self->p, 1);
	ASSERT_EQ(1, read(self->p[0][0], &c, 1));	/* ready, then not */
	memset(out, 0xa5, sizeof(out));
	EXPECT_EQ(0, kevent_get_events(self->kq, 0, 4, out, &args));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, memcmp(&out[i], &zero, sizeof(zero)));
	fill(self->p, 1);
	ASSERT_EQ(1, read(self->p[0][0], &c, 1));
	memset(out, 0xa5, sizeof(out));
	EXPECT_EQ(0, kevent_wait(self->kq, out, 4, 0));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, memcmp(&out[i], &zero, sizeof(zero)));
}

static volatile sig_atomic_t got_usr1;
static long long usr1_at;

static void on_usr1(int sig)
{
	got_usr1 = 1;
	usr1_at = kevent_now_ns();
}

/*
 * The reason for the mask: a signal that came while it was blocked, before
 * the call, must end the wait at once when the call's mask lets it in.
 * Unblocking it first and then calling would lose it in between.
 */
TEST_F(get_events, its_signal_mask_lets_a_pending_signal_end_the_wait)
{
	struct kevent_get_args args = { .timeout_ns = 3000 * MS, .sigsetsize = KSIGSET };
	sigset_t usr1, none, now;
	struct ukevent out[NPIPES];
	long long t0;

	signal(SIGUSR1, on_usr1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigemptyset(&none);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &usr1, NULL));
	raise(SIGUSR1);
	EXPECT_EQ(0, got_usr1);
	args.sigmask = (unsigned long)&none;
	t0 = kevent_now_ns();
	EXPECT_EQ(-1, kevent_get_events(self->kq, 1, 1, out, &args));
	EXPECT_EQ(EINTR, errno);
	EXPECT_LT(kevent_now_ns() - t0, 1000 * MS);
	EXPECT_EQ(1, got_usr1);
	/* Back to the caller's own mask after the handler ran. */
	sigprocmask(SIG_SETMASK, NULL, &now);
	EXPECT_TRUE(sigismember(&now, SIGUSR1));
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
	signal(SIGUSR1, SIG_DFL);
}

TEST_F(get_events, its_signal_mask_holds_a_signal_off_while_it_sleeps)
{
	struct kevent_get_args args = { .timeout_ns = 300 * MS, .sigsetsize = KSIGSET };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	struct itimerspec in100 = { .it_value = { .tv_nsec = 100 * MS } };
	long long start = 0, end = 0;
	struct ukevent out[NPIPES];
	sigset_t usr1, pending;
	timer_t tm;
	int tries;

	signal(SIGUSR1, on_usr1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	args.sigmask = (unsigned long)&usr1;
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &tm));
	/*
	 * Unblocked for the process, blocked for the wait: the timer's signal
	 * stays pending until the call returns. A guest so slow that the
	 * signal came before the call started tests nothing: try again.
	 */
	for (tries = 0; tries < 5; tries++) {
		got_usr1 = 0;
		ASSERT_EQ(0, timer_settime(tm, 0, &in100, NULL));
		start = kevent_now_ns();
		EXPECT_EQ(0, kevent_get_events(self->kq, 1, 1, out, &args));
		end = kevent_now_ns();
		if (!got_usr1 || usr1_at >= start)
			break;
	}
	timer_delete(tm);
	ASSERT_LT(tries, 5);
	sigpending(&pending);
	EXPECT_EQ(1, got_usr1);
	/* Delivered as the call returned, after the whole wait, not during it. */
	EXPECT_GE(usr1_at - start, 290 * MS);
	EXPECT_GE(end - start, 290 * MS);
	EXPECT_FALSE(sigismember(&pending, SIGUSR1));
	signal(SIGUSR1, SIG_DFL);
}

/* An area no call may read or write. */
static void *no_access(void)
{
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * After each refused call, one event is ready and nothing was taken: the
 * queue still delivers it.
 */
#define EXPECT_REFUSED(call, err) do {						\
		struct kevent_get_args now = { .timeout_ns = 0 };		\
		struct ukevent got;						\
		errno = 0;							\
		EXPECT_EQ(-1, call);						\
		EXPECT_EQ(err, errno);						\
		EXPECT_EQ(1, kevent_get_events(self->kq, 1, 1, &got, &now));	\
	} while (0)

TEST_F(get_events, bad_fd_is_ebadf)
{
	struct ukevent out[1];

	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(-1, 1, 1, out, NULL), EBADF);
	EXPECT_REFUSED(kevent_get_events(0x7fffffff, 1, 1, out, NULL), EBADF);
}

TEST_F(get_events, non_kevent_fd_is_einval)
{
	struct ukevent out[1];

	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->p[0][0], 1, 1, out, NULL), EINVAL);
}

TEST_F(get_events, min_nr_above_max_nr_is_einval)
{
	struct ukevent out[2];

	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->kq, 2, 1, out, NULL), EINVAL);
}

TEST_F(get_events, max_nr_zero_is_einval)
{
	struct ukevent out[1];

	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->kq, 0, 0, out, NULL), EINVAL);
}

TEST_F(get_events, max_nr_above_limit_is_e2big)
{
	struct ukevent out[1];

	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, KEVENT_CTL_MAX_NUM + 1, out, NULL), E2BIG);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 0xffffffffU, out, NULL), E2BIG);
}

TEST_F(get_events, unknown_flag_is_einval)
{
	struct kevent_get_args args = { .timeout_ns = 0, .flags = 0x2 };
	struct ukevent out[1];

	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, &args), EINVAL);
	args.flags = 0x80000000U;
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, &args), EINVAL);
}

TEST_F(get_events, wrong_sigsetsize_is_einval)
{
	struct kevent_get_args args = { .timeout_ns = 0, .sigsetsize = 4 };
	struct ukevent out[1];
	sigset_t mask;

	sigemptyset(&mask);
	args.sigmask = (unsigned long)&mask;
	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, &args), EINVAL);
	args.sigsetsize = 0;
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, &args), EINVAL);
	args.sigsetsize = sizeof(sigset_t);	/* glibc's, not the kernel's */
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, &args), EINVAL);
}

TEST_F(get_events, unreadable_args_or_sigmask_is_efault)
{
	struct kevent_get_args args = { .timeout_ns = 0, .sigsetsize = KSIGSET };
	struct ukevent out[1];
	void *none = no_access();

	ASSERT_NE(NULL, none);
	fill(self->p, 1);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, none), EFAULT);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, (void *)8), EFAULT);
	args.sigmask = (unsigned long)none;
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, out, &args), EFAULT);
	munmap(none, 4096);
}

TEST_F(get_events, unwritable_events_is_efault)
{
	struct kevent_get_args args = { .timeout_ns = 0 };
	void *none = no_access();

	ASSERT_NE(NULL, none);
	fill(self->p, 1);
	/* Nothing is taken off the queue that cannot be written out. */
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, none, &args), EFAULT);
	EXPECT_REFUSED(kevent_get_events(self->kq, 1, 1, NULL, &args), EFAULT);
	munmap(none, 4096);
}

TEST_HARNESS_MAIN
