// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_stress_test: load and faults mid-flight within one host. A queue
 * of 10 000 kevents (timers, and eventfds watched with KEVENT_POLL) where
 * every event is delivered exactly once; several threads waiting on one
 * queue; a watched descriptor closed while another thread waits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000
#define NEVER 100
#define MANY 10000

/* Collect @want events from @kq, counting each id.raw[1] (or fd) in @seen. */
static long collect(int kq, unsigned int want, unsigned char *seen, int by_fd)
{
	static struct ukevent ev[KEVENT_CTL_MAX_NUM];
	unsigned int got = 0, dup = 0;
	long n, i;

	while (got < want) {
		n = kevent_wait(kq, ev, 1, SOON);
		if (n <= 0)
			break;
		n += kevent_wait(kq, ev + 1, KEVENT_CTL_MAX_NUM - 1, 0);
		for (i = 0; i < n; i++) {
			unsigned int key = by_fd ? ev[i].id.raw[0] : ev[i].id.raw[1];

			if (key >= 2 * MANY + 64 || seen[key]++)
				dup++;
		}
		got += n;
	}
	return dup ? -(long)dup : got;
}

FIXTURE(load) {
	int kq;
};

FIXTURE_SETUP(load)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
}

FIXTURE_TEARDOWN(load)
{
	close(self->kq);
}

/* 10 000 oneshot timers on one queue: each fires once, none is lost. */
TEST_F(load, ten_thousand_timers)
{
	static struct ukevent uk[KEVENT_CTL_MAX_NUM];
	static unsigned char seen[2 * MANY + 64];
	unsigned int i, j;

	for (i = 0; i < MANY; i += KEVENT_CTL_MAX_NUM) {
		unsigned int n = MANY - i < KEVENT_CTL_MAX_NUM ? MANY - i : KEVENT_CTL_MAX_NUM;

		for (j = 0; j < n; j++)
			uk[j] = kevent_timer(50 + (i + j) % 200, i + j, KEVENT_REQ_ONESHOT);
		ASSERT_EQ(n, kevent_add(self->kq, uk, n));
	}
	EXPECT_EQ(MANY, kevent_queued(self->kq));
	EXPECT_EQ(MANY, collect(self->kq, MANY, seen, 0));
	EXPECT_EQ(0, kevent_queued(self->kq));
	for (i = 0; i < MANY; i++)
		ASSERT_EQ(1, seen[i]);
	EXPECT_EQ(0, kevent_wait(self->kq, uk, 1, NEVER));
}

/* 10 000 eventfds watched by KEVENT_POLL: each written once, each read once. */
TEST_F(load, ten_thousand_eventfds)
{
	static struct ukevent uk[KEVENT_CTL_MAX_NUM];
	static unsigned char seen[2 * MANY + 64];
	struct rlimit rl = { MANY + 64, MANY + 64 };
	static int fds[MANY];
	unsigned int i, j, n;

	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	for (i = 0; i < MANY; i++) {
		fds[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_GE(fds[i], 0);
		ASSERT_LT(fds[i], 2 * MANY + 64);
	}
	for (i = 0; i < MANY; i += n) {
		n = MANY - i < KEVENT_CTL_MAX_NUM ? MANY - i : KEVENT_CTL_MAX_NUM;
		for (j = 0; j < n; j++)
			uk[j] = kevent_fd(fds[i + j], KEVENT_POLL, KEVENT_POLL_POLLIN,
					  KEVENT_REQ_ONESHOT);
		ASSERT_EQ(n, kevent_add(self->kq, uk, n));
	}
	EXPECT_EQ(MANY, kevent_queued(self->kq));
	EXPECT_EQ(0, kevent_wait(self->kq, uk, 1, NEVER));	/* all idle */
	for (i = 0; i < MANY; i++) {
		uint64_t one = 1;

		ASSERT_EQ(8, write(fds[i], &one, 8));
	}
	EXPECT_EQ(MANY, collect(self->kq, MANY, seen, 1));
	for (i = 0; i < MANY; i++) {
		ASSERT_EQ(1, seen[fds[i]]);
		close(fds[i]);
	}
	EXPECT_EQ(0, kevent_queued(self->kq));
}

struct waiter {
	int kq;
	atomic_int *got;
	unsigned char *seen;
	atomic_int *dup;
};

static void *wait_loop(void *arg)
{
	struct waiter *w = arg;
	struct ukevent ev;

	for (;;) {
		long n = kevent_wait(w->kq, &ev, 1, 2000);

		if (n <= 0)
			return NULL;
		if (ev.id.raw[1] == 0xdead)
			return NULL;	/* the end marker, one per thread */
		if (ev.id.raw[1] >= 1000 || w->seen[ev.id.raw[1]]++)
			atomic_fetch_add(w->dup, 1);
		atomic_fetch_add(w->got, 1);
	}
}

/* Four threads in WAIT on one queue: each event goes to exactly one. */
TEST_F(load, several_threads_wait_on_one_queue)
{
	static unsigned char seen[1000];
	atomic_int got = 0, dup = 0;
	struct waiter w = { self->kq, &got, seen, &dup };
	struct ukevent uk[100];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, wait_loop, &w);
	for (i = 0; i < 100; i++)
		uk[i] = kevent_timer(1 + i % 20, i, KEVENT_REQ_ONESHOT);
	ASSERT_EQ(100, kevent_add(self->kq, uk, 100));
	for (i = 0; i < 100 && atomic_load(&got) < 100; i++)
		usleep(20 * 1000);
	/* One end marker per thread; distinct periods keep their ids apart. */
	for (i = 0; i < 4; i++)
		uk[i] = kevent_timer(1 + i, 0xdead, KEVENT_REQ_ONESHOT);
	ASSERT_EQ(4, kevent_add(self->kq, uk, 4));
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ(100, atomic_load(&got));
	EXPECT_EQ(0, atomic_load(&dup));
}

struct closer_arg {
	int kq;
	struct ukevent ev;
	long n;
};

static void *wait_one(void *arg)
{
	struct closer_arg *a = arg;

	a->n = kevent_wait(a->kq, &a->ev, 1, SOON);
	return NULL;
}

/* The watched descriptor is closed while another thread waits on it. */
TEST_F(load, close_while_another_thread_waits)
{
	struct closer_arg a = { .kq = self->kq };
	struct ukevent uk;
	pthread_t t;
	int p[2];

	ASSERT_EQ(0, pipe(p));
	uk = kevent_fd(p[0], KEVENT_POLL, KEVENT_POLL_POLLIN, 0);
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	pthread_create(&t, NULL, wait_one, &a);
	usleep(50 * 1000);	/* let it sleep in WAIT */
	close(p[0]);
	pthread_join(t, NULL);
	ASSERT_EQ(1, a.n);
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, a.ev.ret_flags);
	EXPECT_EQ(EBADF, a.ev.ret_data[0]);
	EXPECT_EQ(0, kevent_queued(self->kq));
	close(p[1]);
}

TEST_HARNESS_MAIN
