// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_timer_test: KEVENT_TIMER from user space.
 *
 * Timing inside a UML guest is noisy, so no test asserts speed. What they
 * assert cannot depend on load: a timer never fires early, a oneshot timer
 * fires exactly once, a removed timer never fires, and the expiry counts
 * delivered in ret_data[0] add up to the periods that really elapsed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

FIXTURE(timer) {
	int fd;
};

FIXTURE_SETUP(timer)
{
	self->fd = kevent_init();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(timer)
{
	close(self->fd);
}

TEST_F(timer, oneshot_fires_once_and_not_early)
{
	struct ukevent uk = kevent_timer(50, 7, KEVENT_REQ_ONESHOT), out[2];
	double t0 = now_ms(), dt;

	uk.user[0] = 0xabcd;
	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->fd, out, 1, 5000));
	dt = now_ms() - t0;
	EXPECT_GE(dt, 49.5) TH_LOG("fired after %.3f ms", dt);
	EXPECT_EQ(KEVENT_TIMER, out[0].type);
	EXPECT_EQ(50, out[0].id.raw[0]);
	EXPECT_EQ(7, out[0].id.raw[1]);
	EXPECT_EQ(KEVENT_TIMER_FIRED, out[0].event);
	EXPECT_EQ(KEVENT_RET_DONE, out[0].ret_flags);
	EXPECT_EQ(1, out[0].ret_data[0]);
	EXPECT_EQ(0xabcd, out[0].user[0]);
	/* Never again: it is gone from the queue. */
	EXPECT_EQ(0, kevent_wait(self->fd, out, 1, 200));
	EXPECT_EQ(0, kevent_remove(self->fd, &uk, 1));
	EXPECT_EQ(ENOENT, uk.ret_data[0]);
}

TEST_F(timer, periodic_counts_every_period)
{
	struct ukevent uk = kevent_timer(20, 0, 0), out;
	unsigned long total = 0;
	double t0 = now_ms(), elapsed, prev = t0;
	int deliveries = 0;

	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	while (now_ms() - t0 < 400) {
		double t;

		ASSERT_EQ(1, kevent_wait(self->fd, &out, 1, 5000));
		t = now_ms();
		ASSERT_GE(out.ret_data[0], 1);
		total += out.ret_data[0];
		deliveries++;
		/* A delivery never comes before its periods have passed. */
		EXPECT_GE(t - t0, total * 20 - 0.5)
			TH_LOG("%lu periods reported after %.3f ms", total, t - t0);
		prev = t;
	}
	ASSERT_EQ(1, kevent_remove(self->fd, &uk, 1));
	elapsed = prev - t0;
	/* Late deliveries are allowed, lost or doubled periods are not. */
	EXPECT_LE(total, (unsigned long)(elapsed / 20) + 1)
		TH_LOG("%lu periods in %.3f ms", total, elapsed);
	EXPECT_GE(total + 5, (unsigned long)(elapsed / 20))
		TH_LOG("%lu periods in %.3f ms", total, elapsed);
	EXPECT_GE(deliveries, 1);
}

TEST_F(timer, slow_reader_gets_missed_periods)
{
	struct ukevent uk = kevent_timer(10, 0, 0), out;
	double t0 = now_ms(), elapsed;

	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	usleep(105 * 1000);
	ASSERT_EQ(1, kevent_wait(self->fd, &out, 1, 0));
	elapsed = now_ms() - t0;
	/* One event for ten or more periods, with the count. */
	EXPECT_GE(out.ret_data[0], 10);
	EXPECT_LE(out.ret_data[0], (unsigned int)(elapsed / 10) + 1)
		TH_LOG("%u periods in %.3f ms", out.ret_data[0], elapsed);
}

TEST_F(timer, removed_timer_never_fires)
{
	struct ukevent uk = kevent_timer(5, 0, 0), out;

	ASSERT_EQ(1, kevent_add(self->fd, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->fd, &out, 1, 5000));
	ASSERT_EQ(1, kevent_remove(self->fd, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->fd, &out, 1, 100));
}

TEST_F(timer, many_timers_each_delivered_once)
{
	enum { N = 200 };
	struct ukevent uk[N], out[N];
	char seen[N] = { 0 };
	int got = 0, i;

	for (i = 0; i < N; i++)
		uk[i] = kevent_timer(5 + i % 20, i, KEVENT_REQ_ONESHOT);
	ASSERT_EQ(N, kevent_add(self->fd, uk, N));
	while (got < N) {
		long n = kevent_wait(self->fd, out, N, 5000);

		ASSERT_GT(n, 0) TH_LOG("%d of %d delivered", got, N);
		for (i = 0; i < n; i++) {
			unsigned int tag = out[i].id.raw[1];

			ASSERT_LT(tag, N);
			EXPECT_EQ(0, seen[tag]) TH_LOG("timer %u delivered twice", tag);
			seen[tag] = 1;
		}
		got += n;
	}
	EXPECT_EQ(0, kevent_wait(self->fd, out, 1, 100));
}

TEST_F(timer, wait_for_num_events)
{
	struct ukevent uk[3] = {
		kevent_timer(10, 1, KEVENT_REQ_ONESHOT),
		kevent_timer(30, 2, KEVENT_REQ_ONESHOT),
		kevent_timer(60, 3, KEVENT_REQ_ONESHOT),
	}, out[3];
	double t0 = now_ms();

	ASSERT_EQ(3, kevent_add(self->fd, uk, 3));
	/* WAIT for three returns when the third is ready, not at the first. */
	ASSERT_EQ(3, kevent_wait(self->fd, out, 3, 5000));
	EXPECT_GE(now_ms() - t0, 59.5);
	EXPECT_EQ(1, out[0].id.raw[1]);
	EXPECT_EQ(2, out[1].id.raw[1]);
	EXPECT_EQ(3, out[2].id.raw[1]);
}

TEST_HARNESS_MAIN
