// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_wake_test: whom an event wakes when several threads wait on one
 * queue (kevent's later takes, docs/abi.md). By default one of them: the
 * first asleep that has enough events. With KEVENT_REQ_WAKEUP_ALL, all.
 *
 * A thread woken for nothing finds no event, goes back to sleep inside the
 * kernel, and returns only at its timeout like the others: user space
 * cannot see the herd in what the calls return. It sees it in each thread's
 * voluntary context switches (getrusage(RUSAGE_THREAD)): a thread that sleeps
 * once and wakes once switches once; one woken for nothing, twice.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define THREADS		8
#define MS		1000000LL	/* ns */
#define SLEEP_MS	1500		/* each thread's timeout */

struct sleeper {
	int		kq;
	pthread_barrier_t *start;	/* all made before any is measured */
	pid_t		tid;
	long		got;		/* what kevent_get_events() returned */
	long		switches;	/* voluntary context switches in the call */
	struct ukevent	out;
};

static void *sleeper_fn(void *arg)
{
	struct kevent_get_args args = { .timeout_ns = SLEEP_MS * MS };
	struct sleeper *s = arg;
	struct rusage before, after;

	/*
	 * The main thread's pthread_create() of the next sleepers holds the
	 * mmap lock for writing (their stacks), and a sleeper's call takes it
	 * for reading (its output is pinned): a sleeper that met it slept once
	 * more, an extra switch that is no wake-up of the queue (lab later,
	 * debug kernel, 9 for 8 once). So the calls start when all exist.
	 */
	pthread_barrier_wait(s->start);
	__atomic_store_n(&s->tid, gettid(), __ATOMIC_RELEASE);
	getrusage(RUSAGE_THREAD, &before);
	s->got = kevent_get_events(s->kq, 1, 1, &s->out, &args);
	getrusage(RUSAGE_THREAD, &after);
	s->switches = after.ru_nvcsw - before.ru_nvcsw;
	return NULL;
}

/* The scheduler state of thread @tid of this process ('S': asleep). */
static char thread_state(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Until every sleeper is asleep in the kernel (at most 2 s). */
static int all_asleep(struct sleeper *s, int n)
{
	for (int tries = 0; tries < 200; tries++) {
		int asleep = 0;

		for (int i = 0; i < n; i++)
			asleep += __atomic_load_n(&s[i].tid, __ATOMIC_ACQUIRE) && thread_state(s[i].tid) == 'S';
		if (asleep == n)
			return 1;
		usleep(10000);
	}
	return 0;
}

/*
 * The voluntary context switches of the sleepers: @exact, the sleeps and
 * wake-ups of the queue, on one CPU. On several CPUs the @woken threads
 * that a wake-up sets running at once also take the queue's mutex at once
 * to harvest, and one may sleep on it while another holds it: up to
 * @woken - 1 more switches, none of them a wake-up by the queue (lab smp
 * of make smp-check saw 9 for 8 here).
 */
static void expect_switches(struct __test_metadata *_metadata, long exact, int woken,
			    long switches)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) == 1) {
		EXPECT_EQ(exact, switches);
		return;
	}
	EXPECT_LE(exact, switches);
	EXPECT_GE(exact + (woken > 1 ? woken - 1 : 0), switches);
}

/*
 * THREADS threads wait on one queue; one oneshot timer with @req_flags
 * fires once. Returns how many threads got it and, in @switches, the
 * voluntary context switches of all of them.
 */
static int one_event(struct __test_metadata *_metadata, unsigned int req_flags,
		     long *switches)
{
	struct sleeper s[THREADS] = { 0 };
	pthread_barrier_t start;
	pthread_t t[THREADS];
	struct ukevent uk;
	int kq, got = 0;

	kq = kevent_init();
	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, THREADS + 1));
	for (int i = 0; i < THREADS; i++) {
		s[i].kq = kq;
		s[i].start = &start;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, sleeper_fn, &s[i]));
	}
	pthread_barrier_wait(&start);
	ASSERT_TRUE(all_asleep(s, THREADS)) TH_LOG("the threads never all slept");
	uk = kevent_timer(1, 1, KEVENT_REQ_ONESHOT | req_flags);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	*switches = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_TRUE(s[i].got == 0 || s[i].got == 1) TH_LOG("thread %d: %ld", i, s[i].got);
		if (s[i].got == 1) {
			got++;
			EXPECT_EQ(KEVENT_TIMER, s[i].out.type);
		}
		*switches += s[i].switches;
	}
	pthread_barrier_destroy(&start);
	close(kq);
	return got;
}

TEST(one_event_wakes_one_of_eight)
{
	long switches;

	EXPECT_EQ(1, one_event(_metadata, 0, &switches));
	/* One woken by the event, seven by their timeouts: once each. */
	EXPECT_EQ(THREADS, switches);
}

TEST(wakeup_all_wakes_every_sleeper)
{
	long switches;

	EXPECT_EQ(1, one_event(_metadata, KEVENT_REQ_WAKEUP_ALL, &switches));
	/* Seven of them woken for nothing, asleep again until their timeout. */
	expect_switches(_metadata, 2 * THREADS - 1, THREADS, switches);
}

/* Events ready one after another go to different sleepers, none lost. */
TEST(each_event_wakes_another_sleeper)
{
	struct sleeper s[THREADS] = { 0 };
	pthread_barrier_t start;
	pthread_t t[THREADS];
	int kq, got = 0;
	long switches = 0;

	kq = kevent_init();
	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, THREADS + 1));
	for (int i = 0; i < THREADS; i++) {
		s[i].kq = kq;
		s[i].start = &start;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, sleeper_fn, &s[i]));
	}
	pthread_barrier_wait(&start);
	ASSERT_TRUE(all_asleep(s, THREADS));
	/* Four timers at once: four sleepers, each with one event. */
	for (int i = 0; i < 4; i++) {
		struct ukevent uk = kevent_timer(1, 10 + i, KEVENT_REQ_ONESHOT);

		ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		got += s[i].got == 1;
		switches += s[i].switches;
	}
	EXPECT_EQ(4, got);
	expect_switches(_metadata, THREADS, got, switches);
	EXPECT_EQ(0, kevent_ready(kq));
	pthread_barrier_destroy(&start);
	close(kq);
}

/* KEVENT_REQ_WAKEUP_ALL is a request flag like ONESHOT: MODIFY sets it. */
TEST(modify_sets_wakeup_all)
{
	struct ukevent uk = kevent_timer(100000, 1, 0);
	unsigned int event, flags;
	int kq = kevent_init();

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	uk.req_flags = KEVENT_REQ_WAKEUP_ALL;
	ASSERT_EQ(1, kevent_modify(kq, &uk, 1));
	ASSERT_EQ(0, kevent_fdinfo_kevent(kq, &uk, &event, &flags));
	EXPECT_EQ(KEVENT_REQ_WAKEUP_ALL, flags);
	close(kq);
}

/*
 * A call waits for two events, while another call takes one; each call
 * gets a level-triggered kevent once at most. The first call is woken for
 * two ready kevents, pipe p (which stays readable) and pipe v, whose data
 * is read again before the call harvests: it delivers p only, and waits on
 * for one more. Then a second call delivers p and puts it back, still
 * ready. The first call must not take p a second time, nor be woken for it
 * again and again (which would burn the CPU until its timeout): its
 * harvests after that pass p over. (KUnit forces the same interleaving in
 * the kernel: kevent_test_level_once_per_call_across_calls.)
 */
struct level_waiter {
	int		kq;
	long		got;
	long long	cpu_ns;
	struct ukevent	out[4];
};

static long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *level_waiter_fn(void *arg)
{
	struct kevent_get_args args = { .timeout_ns = 1000 * MS };
	struct level_waiter *w = arg;
	long long before = thread_cpu_ns();

	w->got = kevent_get_events(w->kq, 2, 4, w->out, &args);
	w->cpu_ns = thread_cpu_ns() - before;
	return NULL;
}

TEST(a_level_event_reaches_each_waiting_call_once)
{
	struct level_waiter w = { 0 };
	struct ukevent uk, out;
	int kq, p[2], v[2];
	pthread_t t;
	char c;

	kq = kevent_init();
	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, pipe(v));
	ASSERT_EQ(1, write(p[1], "x", 1));
	uk = kevent_fd(p[0], KEVENT_POLL, KEVENT_POLL_POLLIN, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	uk = kevent_fd(v[0], KEVENT_POLL, KEVENT_POLL_POLLIN, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	w.kq = kq;
	ASSERT_EQ(0, pthread_create(&t, NULL, level_waiter_fn, &w));
	usleep(100 * 1000);	/* asleep: one event ready, two wanted */
	/* Two ready; gone again before the woken call can run. */
	ASSERT_EQ(1, write(v[1], "y", 1));
	ASSERT_EQ(1, read(v[0], &c, 1));
	usleep(100 * 1000);
	/* Another call takes p, and puts it back: still readable. */
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, 1000));
	EXPECT_EQ(p[0], out.id.raw[0]);
	pthread_join(t, NULL);
	EXPECT_GE(w.got, 1);
	for (int i = 1; i < w.got; i++)
		EXPECT_FALSE(w.out[i].id.raw[0] == w.out[0].id.raw[0])
			TH_LOG("fd %u twice in one call", w.out[0].id.raw[0]);
	EXPECT_LT(w.cpu_ns, 300 * MS)
		TH_LOG("the call used %lld ms of CPU in 1 s of waiting",
		       w.cpu_ns / MS);
	close(p[0]);
	close(p[1]);
	close(v[0]);
	close(v[1]);
	close(kq);
}

TEST_HARNESS_MAIN
