// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_smp_race_test: races between CPUs, run on purpose (issue 33).
 *
 * Every race the series fixed was found by reading the code, and forced
 * one interleaving at a time in KUnit, because a UML guest has one CPU.
 * Here threads and processes do the racing things at once, over and over:
 * on several CPUs (make smp-check: x86_64 with CONFIG_PREEMPT on four QEMU
 * CPUs, under lockdep and KASAN, then under KCSAN) the kernel's checkers
 * see the real interleavings; on one CPU the same tests pass, interleaved
 * only where a thread sleeps. Each test names, above it and in its log,
 * the fix it guards: the patch of kernel-patches/ and what it fixed.
 *
 * The invariants, whatever the interleaving:
 * - a call fails only with an errno docs/abi.md allows in that state:
 *   EBADF once another thread closed the descriptor, EEXIST or ENOENT for
 *   a name another thread added or removed, ENOTCONN for a socket another
 *   thread shut down;
 * - every event is one the test could have caused: its type, id, flags,
 *   user data and ret_data; a broken one carries the documented errno;
 * - nothing is delivered twice or lost: each oneshot event of the ring is
 *   taken once, posts are counted, a posted receive's bytes all arrive in
 *   order, and every watch of a released file is either removed, delivered
 *   once as broken, or delivered once as oneshot;
 * - when the racing stops: each queue holds what the accounting says,
 *   no page stays pinned, no descriptor leaked, no child is left, and a
 *   new queue (a new transfer) works.
 *
 * Time: each test races for KEVENT_RACE_SECONDS seconds (default 2, from
 * 0.05 to 60) or a number of rounds, whichever comes first; 30 s without
 * progress is a stall and fails the test. Nothing else is timed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal	424
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open		434
#endif

#define SOON		5000	/* ms: "it arrives" */
#define STALL_S		30	/* s without progress: a stall, not a slow machine */
#define TEST_LIMIT	240	/* s: the harness's limit for one test */
#define POLL_OK		(KEVENT_POLL_POLLIN | KEVENT_POLL_POLLERR | KEVENT_POLL_POLLHUP)

/* argv[1] of this program re-executed by a child of the signal test. */
#define RACE_EXEC_ARG	"--kevent-race-exec-child"

/* ------------------------------------------------------------------ */
/* What every race shares: its time, its seed, its first failure.      */

struct race {
	const char *fix;		/* the fix it guards, for every message */
	long long end_ns;		/* the racing stops here */
	unsigned long long seed;
	int stop;			/* time is up, or something failed */
	pthread_mutex_t lock;
	unsigned int failures;
	char first[512];
};

static double race_seconds(void)
{
	const char *s = getenv("KEVENT_RACE_SECONDS");
	double v = 2.0;

	if (s && *s)
		v = strtod(s, NULL);
	if (!(v >= 0.05))		/* NaN too */
		v = 0.05;
	return v > 60 ? 60 : v;
}

static void race_go(struct __test_metadata *_metadata, struct race *r, const char *fix)
{
	r->fix = fix;
	r->seed = ((unsigned long long)kevent_now_ns() * 0x9e3779b97f4a7c15ULL) ^ getpid();
	r->seed |= 1;
	r->end_ns = kevent_now_ns() + (long long)(race_seconds() * 1e9);
	TH_LOG("guards %s", fix);
	TH_LOG("racing %.2f s (KEVENT_RACE_SECONDS), seed %#llx", race_seconds(), r->seed);
}

static int race_stopped(struct race *r)
{
	return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
}

/* Time is up (or a failure stopped the race). */
static int race_over(struct race *r)
{
	return race_stopped(r) || kevent_now_ns() >= r->end_ns;
}

/* Records a failure (the first one is the test's message) and stops the race. */
static void __attribute__((format(printf, 2, 3))) race_fail(struct race *r, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&r->lock);
	if (!r->failures++)
		snprintf(r->first, sizeof(r->first), "%s", msg);
	if (r->failures <= 5)
		fprintf(stderr, "#   [%s] %s\n", r->fix, msg);
	pthread_mutex_unlock(&r->lock);
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
}

/* xorshift64*: each thread has its own seed, derived from the test's. */
static unsigned int rnd(unsigned long long *s)
{
	unsigned long long x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (unsigned int)((x * 0x2545f4914f6cdd1dULL) >> 32);
}

static unsigned long long seed_for(struct race *r, unsigned long long k)
{
	unsigned long long s = r->seed ^ ((k + 1) * 0xd1b54a32d192ed03ULL);

	rnd(&s);
	return s | 1;
}

static void add_ul(unsigned long *p, unsigned long v)
{
	__atomic_add_fetch(p, v, __ATOMIC_RELAXED);
}

static void add_int(int *p, int v)
{
	__atomic_add_fetch(p, v, __ATOMIC_RELAXED);
}

/* Open descriptors of this process, from /proc/self/fd. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the directory's own */
}

/*
 * One entry's ADD, REMOVE, MODIFY or READY returned @ret (errno @err):
 * 1 if it was done, 0 if refused with @ok1 or @ok2, -1 if the descriptor
 * is closed (EBADF); anything else fails the race (-2).
 */
static int entry_result(struct race *r, const char *what, long ret, int err,
			const struct ukevent *uk, unsigned int ok1, unsigned int ok2)
{
	if (ret == 1 && !(uk->ret_flags & KEVENT_RET_BROKEN))
		return 1;
	if (ret == 0 && uk->ret_flags == KEVENT_RET_BROKEN &&
	    (uk->ret_data[0] == ok1 || uk->ret_data[0] == ok2))
		return 0;
	if (ret < 0 && err == EBADF)
		return -1;
	race_fail(r, "%s: returned %ld (errno %d), the entry: ret_flags %#x ret_data[0] %u",
		  what, ret, ret < 0 ? err : 0, uk->ret_flags, uk->ret_data[0]);
	return -2;
}

/* Closes a TCP socket with a reset (SO_LINGER 0). */
static void close_abort(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static int start_threads(pthread_t *t, unsigned int n, void *(*fn)(void *), void *arg,
			 size_t size)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, (char *)arg + i * size))
			return -1;
	return 0;
}

static void join_threads(pthread_t *t, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/*
 * Spins until *@flag is set or @done says stop: a thread that must start
 * the moment another one acts. It yields now and then, so that on one CPU
 * the other thread gets to act at all. Returns whether the flag is set.
 */
static int spin_until(int *flag, int (*done)(void *), void *arg)
{
	unsigned int i;

	for (i = 1; !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++) {
		if (done(arg))
			return 0;
		if (!(i % 64))
			sched_yield();
	}
	return 1;
}

/* A short busy wait of @n steps: how late one thread acts after another. */
static void spin_for(unsigned int n)
{
	while (n--)
		__asm__ __volatile__("" ::: "memory");
}

/*
 * The exec'd image of the signal test: it starts with the old program's
 * signal mask (the signals the test sends are blocked, and stay pending)
 * and ends at once, whatever comes. glibc hands argc and argv to ELF
 * constructors, static programs included.
 */
static void __attribute__((constructor)) race_exec_child(int argc, char **argv)
{
	if (argc == 2 && argv && argv[1] && !strcmp(argv[1], RACE_EXEC_ARG)) {
		usleep((getpid() * 7919u) % 2000);
		_exit(0);
	}
}

FIXTURE(race) {
	struct race r;
	int fds;
};

FIXTURE_SETUP(race)
{
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&self->r.lock, NULL);
	self->fds = open_fds();
	ASSERT_LT(0, self->fds);
}

FIXTURE_TEARDOWN(race)
{
	int status;

	EXPECT_EQ(0, self->r.failures)
		TH_LOG("[%s] %u failures; the first: %s", self->r.fix, self->r.failures,
		       self->r.first);
	EXPECT_EQ(-1, waitpid(-1, &status, WNOHANG)) TH_LOG("a child was left behind");
	EXPECT_EQ(self->fds, open_fds()) TH_LOG("descriptors leaked");
}

/* ------------------------------------------------------------------ */
/* 1. WAIT against REMOVE, READY and the close of the queue.           */

#define Q_NAMES		16		/* KEVENT_USER names on A */
#define Q_MASK		0xffu
#define Q_TAGS		32		/* B watches A through each number, each tag */
#define Q_WATCHES	(2 * Q_TAGS)
#define Q_ROUNDS	5000

enum { Q_CLOSE_A2, Q_CLOSE_A, Q_CLOSE_BOTH, Q_CLOSE_B, Q_CLOSE_ALL, Q_MODES };
#define CLOSED_A	0x1
#define CLOSED_A2	0x2
#define CLOSED_B	0x4

struct qround {
	struct race *r;
	int a, a2, b;		/* queue A, a dup of it, queue B watching A */
	int mode;
	int over;		/* the round's time is up */
	int armed;		/* the closer is about to close A's numbers */
	int burst;		/* and releases A now */
	unsigned int closed;	/* CLOSED_*: what the closer closed */
	unsigned int close_us;
	unsigned long long closer_seed;
	unsigned long ops, events;
};

struct qthread {
	struct qround *q;
	unsigned long long seed;
};

static int q_done(struct qround *q)
{
	return __atomic_load_n(&q->over, __ATOMIC_ACQUIRE) || race_stopped(q->r);
}

static int q_done_arg(void *q)
{
	return q_done(q);
}

static unsigned int user_tag(unsigned int name)
{
	return name * 2654435761u ^ 0x6b657674u;
}

/* One of A's two numbers this thread has not seen closed; -1 if both are. */
static int q_pick_a(struct qthread *t, unsigned int dead, int *which)
{
	int w = rnd(&t->seed) & 1;

	if (dead & (1u << w))
		w ^= 1;
	if (dead & (1u << w))
		return -1;
	*which = w;
	return w ? t->q->a2 : t->q->a;
}

static void q_check_posted(struct race *r, const struct ukevent *ev)
{
	unsigned int name = ev->id.raw[0];

	if (ev->type == KEVENT_USER && name < Q_NAMES && !ev->id.raw[1] &&
	    ev->event == Q_MASK && ev->ret_flags == KEVENT_RET_DONE &&
	    ev->ret_data[0] && !(ev->ret_data[0] & ~Q_MASK) && ev->ret_data[1] &&
	    ev->user[0] == user_tag(name))
		return;
	race_fail(r, "a wrong posted event: type %u id %u,%u event %#x ret_flags %#x "
		  "ret_data %#x,%u user %#x", ev->type, ev->id.raw[0], ev->id.raw[1],
		  ev->event, ev->ret_flags, ev->ret_data[0], ev->ret_data[1], ev->user[0]);
}

static void q_check_watch(struct qround *q, const struct ukevent *ev)
{
	if (ev->type == KEVENT_POLL && ev->id.raw[1] < Q_TAGS &&
	    (ev->id.raw[0] == (unsigned int)q->a || ev->id.raw[0] == (unsigned int)q->a2)) {
		if (ev->ret_flags == (KEVENT_RET_DONE | KEVENT_RET_BROKEN) &&
		    ev->ret_data[0] == EBADF)
			return;
		if (ev->ret_flags == KEVENT_RET_DONE && ev->ret_data[0] &&
		    !(ev->ret_data[0] & ~POLL_OK))
			return;
	}
	race_fail(q->r, "a wrong event of B's watch of queue A: type %u id %u,%u "
		  "ret_flags %#x ret_data %#x,%u", ev->type, ev->id.raw[0], ev->id.raw[1],
		  ev->ret_flags, ev->ret_data[0], ev->ret_data[1]);
}

/* WAIT or kevent_get_events() on @fd, 1 ms at most: events, or -1 and errno. */
static long wait_some(int fd, struct ukevent *out, unsigned int n, unsigned long long *seed)
{
	struct kevent_get_args args = { .timeout_ns = 1000000 };

	if (rnd(seed) & 1)
		return kevent_wait(fd, out, n, 1);
	return kevent_get_events(fd, 1, n, out, &args);
}

/* Sleeps in WAIT on A, through either number, until the round ends or both are closed. */
static void *q_waiter_a(void *arg)
{
	struct qthread *t = arg;
	struct qround *q = t->q;
	struct ukevent out[8];
	unsigned int dead = 0;
	int which, fd;

	while (!q_done(q) && (fd = q_pick_a(t, dead, &which)) >= 0) {
		unsigned int n = 1 + rnd(&t->seed) % 8;
		long got = wait_some(fd, out, n, &t->seed), i;
		int err = errno;

		if (got < 0 && err == EBADF) {
			dead |= 1u << which;
			continue;
		}
		if (got < 0 || got > n) {
			race_fail(q->r, "a wait on A returned %ld (errno %d) for %u events", got,
				  got < 0 ? err : 0, n);
			break;
		}
		for (i = 0; i < got; i++)
			q_check_posted(q->r, &out[i]);
		add_ul(&q->events, got);
	}
	return NULL;
}

/* Sleeps in WAIT on B, whose watches of A break when A is released. */
static void *q_waiter_b(void *arg)
{
	struct qthread *t = arg;
	struct qround *q = t->q;
	struct ukevent out[16];

	while (!q_done(q)) {
		unsigned int n = 1 + rnd(&t->seed) % 16;
		long got = wait_some(q->b, out, n, &t->seed), i;
		int err = errno;

		if (got < 0 && err == EBADF)
			break;
		if (got < 0 || got > n) {
			race_fail(q->r, "a wait on B returned %ld (errno %d)", got,
				  got < 0 ? err : 0);
			break;
		}
		for (i = 0; i < got; i++)
			q_check_watch(q, &out[i]);
		add_ul(&q->events, got);
	}
	return NULL;
}

/* ADD, REMOVE and READY of A's posted kevents, one name at a time. */
static void *q_churn_a(void *arg)
{
	static const unsigned int flags[] = {
		0, KEVENT_REQ_ONESHOT, KEVENT_REQ_WAKEUP_ALL,
		KEVENT_REQ_ONESHOT | KEVENT_REQ_WAKEUP_ALL,
	};
	struct qthread *t = arg;
	struct qround *q = t->q;
	unsigned int dead = 0;
	int which, fd;

	while (!q_done(q) && (fd = q_pick_a(t, dead, &which)) >= 0) {
		unsigned int name = rnd(&t->seed) % Q_NAMES, op = rnd(&t->seed) % 3;
		struct ukevent uk;
		long ret;
		int res, err;

		if (op == 0) {
			uk = kevent_user_event(name, Q_MASK, flags[rnd(&t->seed) % 4]);
			uk.user[0] = user_tag(name);
			ret = kevent_add(fd, &uk, 1);
			err = errno;
			res = entry_result(q->r, "ADD of a posted kevent to A", ret, err, &uk,
					   EEXIST, EEXIST);
		} else if (op == 1) {
			uk = kevent_user_event(name, 0, 0);
			ret = kevent_remove(fd, &uk, 1);
			err = errno;
			res = entry_result(q->r, "REMOVE of a posted kevent from A", ret, err, &uk,
					   ENOENT, ENOENT);
		} else {
			uk = kevent_user_event(name, 1u << (rnd(&t->seed) % 8), 0);
			ret = kevent_post(fd, &uk, 1);
			err = errno;
			res = entry_result(q->r, "READY on A", ret, err, &uk, ENOENT, ENOENT);
		}
		if (res == -1)
			dead |= 1u << which;
		else if (res < -1)
			break;
		add_ul(&q->ops, 1);
	}
	return NULL;
}

/* READY of up to eight entries at once: each is posted, or ENOENT. */
static void *q_poster(void *arg)
{
	struct qthread *t = arg;
	struct qround *q = t->q;
	unsigned int dead = 0;
	int which, fd;

	while (!q_done(q) && (fd = q_pick_a(t, dead, &which)) >= 0) {
		unsigned int n = 1 + rnd(&t->seed) % 8, i, ok = 0;
		struct ukevent uk[8];
		long ret;
		int err;

		for (i = 0; i < n; i++)
			uk[i] = kevent_user_event(rnd(&t->seed) % Q_NAMES,
						  1u << (rnd(&t->seed) % 8), 0);
		ret = kevent_post(fd, uk, n);
		err = errno;
		if (ret < 0 && err == EBADF) {
			dead |= 1u << which;
			continue;
		}
		if (ret < 0) {
			race_fail(q->r, "READY of %u entries on A: errno %d", n, err);
			break;
		}
		for (i = 0; i < n; i++) {
			if (!uk[i].ret_flags)
				ok++;
			else if (uk[i].ret_flags != KEVENT_RET_BROKEN ||
				 uk[i].ret_data[0] != ENOENT)
				race_fail(q->r, "READY: an entry came back with ret_flags %#x "
					  "ret_data[0] %u", uk[i].ret_flags, uk[i].ret_data[0]);
		}
		if (ok != ret)
			race_fail(q->r, "READY returned %ld for %u entries posted", ret, ok);
		add_ul(&q->ops, 1);
	}
	return NULL;
}

/* B's watches of A, by number and tag: each in the order B added them first. */
static struct ukevent q_watch(struct qround *q, unsigned int i, unsigned int flags)
{
	struct ukevent uk = kevent_fd(i < Q_TAGS ? q->a : q->a2, KEVENT_POLL,
				      KEVENT_POLL_POLLIN, flags);

	uk.id.raw[1] = i % Q_TAGS;
	return uk;
}

/*
 * ADD, REMOVE and MODIFY of B's watches of A; while the closer releases A,
 * REMOVE of all of them in one call, in the order the release walks them.
 */
static void *q_churn_b(void *arg)
{
	static const unsigned int flags[] = {
		0, KEVENT_REQ_ONESHOT, KEVENT_REQ_ET, KEVENT_REQ_ET | KEVENT_REQ_LAST_CHECK,
	};
	struct qthread *t = arg;
	struct qround *q = t->q;
	struct ukevent all[Q_WATCHES];
	int burst_done = 0;

	while (!q_done(q)) {
		unsigned int i = rnd(&t->seed) % Q_WATCHES, op = rnd(&t->seed) % 3;
		struct ukevent uk;
		long ret;
		int res, err;

		if (!burst_done && __atomic_load_n(&q->armed, __ATOMIC_ACQUIRE)) {
			unsigned int j, n = 0;

			burst_done = 1;
			for (j = 0; j < Q_WATCHES; j++)
				all[j] = q_watch(q, j, 0);
			/* At once when A's release starts: REMOVE chases it down A's list. */
			if (!spin_until(&q->burst, q_done_arg, q))
				break;
			ret = kevent_remove(q->b, all, Q_WATCHES);
			err = errno;
			if (ret < 0 && err == EBADF)
				break;
			for (j = 0; j < Q_WATCHES; j++)
				if (!all[j].ret_flags)
					n++;
				else if (all[j].ret_flags != KEVENT_RET_BROKEN ||
					 all[j].ret_data[0] != ENOENT)
					race_fail(q->r, "REMOVE of B's watches of A: an entry "
						  "came back with ret_flags %#x ret_data[0] %u",
						  all[j].ret_flags, all[j].ret_data[0]);
			if (ret != n)
				race_fail(q->r, "REMOVE of B's watches of A returned %ld "
					  "(errno %d) for %u removed", ret, ret < 0 ? err : 0, n);
			continue;
		}
		if (op == 0) {
			uk = q_watch(q, i, flags[rnd(&t->seed) % 4]);
			ret = kevent_add(q->b, &uk, 1);
			err = errno;
			res = entry_result(q->r, "ADD of a watch of A to B", ret, err, &uk,
					   EEXIST, EBADF);
		} else if (op == 1) {
			uk = q_watch(q, i, 0);
			ret = kevent_remove(q->b, &uk, 1);
			err = errno;
			res = entry_result(q->r, "REMOVE of a watch of A from B", ret, err, &uk,
					   ENOENT, ENOENT);
		} else {
			uk = q_watch(q, i, flags[rnd(&t->seed) % 4]);
			ret = kevent_modify(q->b, &uk, 1);
			err = errno;
			res = entry_result(q->r, "MODIFY of a watch of A on B", ret, err, &uk,
					   ENOENT, ENOENT);
		}
		if (res < 0)
			break;
		add_ul(&q->ops, 1);
	}
	return NULL;
}

static void q_close(struct qround *q, unsigned int which)
{
	close(which == CLOSED_A ? q->a : which == CLOSED_A2 ? q->a2 : q->b);
	__atomic_or_fetch(&q->closed, which, __ATOMIC_RELEASE);
}

/* Closes what the round's mode says, while the others use it. */
static void *q_closer(void *arg)
{
	struct qround *q = arg;
	unsigned long long *s = &q->closer_seed;
	unsigned int first = rnd(s) & 1 ? CLOSED_A : CLOSED_A2;
	unsigned int second = first == CLOSED_A ? CLOSED_A2 : CLOSED_A;

	usleep(q->close_us);
	switch (q->mode) {
	case Q_CLOSE_A2:
		q_close(q, CLOSED_A2);
		break;
	case Q_CLOSE_A:
		q_close(q, CLOSED_A);
		break;
	case Q_CLOSE_BOTH:
	case Q_CLOSE_ALL:
		if (q->mode == Q_CLOSE_ALL && rnd(s) & 1)
			q_close(q, CLOSED_B);
		__atomic_store_n(&q->armed, 1, __ATOMIC_RELEASE);
		q_close(q, first);
		if (rnd(s) & 1)
			usleep(rnd(s) % 300);
		/* B's churner REMOVEs every watch of A as A goes. */
		__atomic_store_n(&q->burst, 1, __ATOMIC_RELEASE);
		spin_for(rnd(s) % 2000);
		q_close(q, second);
		if (q->mode == Q_CLOSE_ALL && !(q->closed & CLOSED_B))
			q_close(q, CLOSED_B);
		break;
	case Q_CLOSE_B:
		q_close(q, CLOSED_B);
		break;
	}
	return NULL;
}

/* A is released: every watch of it left on B is delivered once, broken, and goes. */
static void q_drain_b(struct qround *q, unsigned long round)
{
	struct ukevent out[64];
	long n, j;
	int i;

	for (i = 0; i < 64 && (n = kevent_wait(q->b, out, 64, 0)) > 0; i++)
		for (j = 0; j < n; j++) {
			q_check_watch(q, &out[j]);
			if (out[j].ret_flags != (KEVENT_RET_DONE | KEVENT_RET_BROKEN))
				race_fail(q->r, "0006: B delivered a watch of A after A's release, "
					  "not broken (ret_flags %#x)", out[j].ret_flags);
		}
	n = kevent_queued(q->b);
	if (n)
		race_fail(q->r, "0006: %ld watches of the released queue A stayed on B, neither "
			  "broken nor removed (round %lu, mode %d)", n, round, q->mode);
}

/*
 * Guards the core (0002: only the holder of the queue's mutex frees a
 * kevent, WAIT's output pinned before it takes events, the queue freed at
 * its last close with every kevent on it), wake-one (0017 and the review
 * fixes of a75a983: a woken sleeper's claim, no event left with nobody
 * awake), posted events (0020) and 0006's release of a watched file, here
 * a queue: queue B watches queue A through two numbers and 32 tags each;
 * threads sleep in WAIT and kevent_get_events() on A and B while others
 * ADD, REMOVE and READY A's posted kevents, ADD, REMOVE and MODIFY B's
 * watches, and a closer closes A's numbers, B, or both, at a random moment
 * of each round; as A goes, B's watches are REMOVEd in the order A's
 * release breaks them (0006's release-versus-REMOVE fix, c6d1223). Once A
 * is released every watch of it on B is broken: B drains to nothing.
 */
TEST_F_TIMEOUT(race, wait_races_remove_ready_and_close_of_the_queue, TEST_LIMIT)
{
	void *(*fn[])(void *) = { q_waiter_a, q_waiter_a, q_waiter_b, q_churn_a,
				  q_churn_a, q_poster, q_churn_b };
	const unsigned int nt = sizeof(fn) / sizeof(fn[0]);
	struct race *r = &self->r;
	unsigned long rounds = 0, ops = 0, events = 0, left = 0;

	race_go(_metadata, r, "0002 (the core: WAIT, REMOVE, the queue's release), 0017 "
		"(wake-one claims), 0020 (posted events), 0006 (a watched queue's release "
		"against REMOVE of its watches)");
	while (!race_over(r) && rounds < Q_ROUNDS) {
		struct qround q = { .r = r };
		struct qthread th[8];
		pthread_t t[8], closer;
		struct ukevent w[Q_WATCHES];
		unsigned long long seed = seed_for(r, rounds);
		unsigned int i, round_us;

		q.a = kevent_init();
		ASSERT_LE(0, q.a);
		q.a2 = dup(q.a);
		ASSERT_LE(0, q.a2);
		q.b = kevent_init();
		ASSERT_LE(0, q.b);
		q.mode = rnd(&seed) % Q_MODES;
		round_us = 500 + rnd(&seed) % 4000;
		q.close_us = rnd(&seed) % round_us;
		q.closer_seed = seed_for(r, rounds * 16 + 15);
		for (i = 0; i < Q_WATCHES; i++)
			w[i] = q_watch(&q, i, i % 3 ? 0 : KEVENT_REQ_ET);
		ASSERT_EQ(Q_WATCHES, kevent_add(q.b, w, Q_WATCHES));
		for (i = 0; i < nt; i++) {
			th[i].q = &q;
			th[i].seed = seed_for(r, rounds * 16 + i);
			ASSERT_EQ(0, pthread_create(&t[i], NULL, fn[i], &th[i]));
		}
		ASSERT_EQ(0, pthread_create(&closer, NULL, q_closer, &q));
		usleep(round_us);
		/* The round ends once the closer is done: it always races the others. */
		pthread_join(closer, NULL);
		__atomic_store_n(&q.over, 1, __ATOMIC_RELEASE);
		join_threads(t, nt);

		/* What the closer left open goes now: A is released by the end of this. */
		if (!(q.closed & CLOSED_A))
			close(q.a);
		if (!(q.closed & CLOSED_A2))
			close(q.a2);
		if (!(q.closed & CLOSED_B)) {
			q_drain_b(&q, rounds);
			close(q.b);
		}
		rounds++;
		ops += q.ops;
		events += q.events;
		left += q.mode == Q_CLOSE_A2 || q.mode == Q_CLOSE_A;
	}
	TH_LOG("%lu rounds (%lu with A left open by the closer), %lu calls, %lu events",
	       rounds, left, ops, events);
	EXPECT_LT(0, rounds);
}

/* ------------------------------------------------------------------ */
/* 1b. A watched file's release against REMOVE of its watches.         */

#define F_NUMS		4		/* the read end of a pipe and three dups */
#define F_NW		40		/* watches per type and number */
#define F_NAMES		(2 * F_NUMS * F_NW)	/* KEVENT_POLL, then KEVENT_PIPE */
#define F_QUEUES	2
#define F_CHUNK		16		/* watches added at once, the queues in turn */
#define F_ROUNDS	5000

struct fround {
	struct race *r;
	int q[F_QUEUES], num[F_NUMS], wr;
	int over;
	int armed;			/* the closer is about to close the numbers */
	int burst;			/* the last number of the read end goes now */
	unsigned int closed;		/* bit i: num[i]; bit F_NUMS + j: q[j] */
	unsigned int close_us, close_q1;
	unsigned long long closer_seed;
	/* per queue and name: successful ADDs, REMOVEs, broken and oneshot deliveries */
	int added[F_QUEUES][F_NAMES], removed[F_QUEUES][F_NAMES];
	int broken[F_QUEUES][F_NAMES], oneshot[F_QUEUES][F_NAMES];
	unsigned long ops, events, bursts;
};

struct fthread {
	struct fround *f;
	unsigned int qi;
	unsigned long long seed;
};

static int f_done(struct fround *f)
{
	return __atomic_load_n(&f->over, __ATOMIC_ACQUIRE) || race_stopped(f->r);
}

static int f_done_arg(void *f)
{
	return f_done(f);
}

static struct ukevent f_watch(struct fround *f, unsigned int name, unsigned int flags)
{
	unsigned int pipe_type = name >= F_NUMS * F_NW, num = name / F_NW % F_NUMS;
	struct ukevent uk = pipe_type ?
		kevent_fd(f->num[num], KEVENT_PIPE, KEVENT_PIPE_READ, flags) :
		kevent_fd(f->num[num], KEVENT_POLL, KEVENT_POLL_POLLIN, flags);

	uk.id.raw[1] = name % F_NW;
	uk.user[0] = name;
	return uk;
}

/* The name of a delivered watch, from its type and id; -1 if it has none. */
static int f_name_of(struct fround *f, const struct ukevent *ev)
{
	int num;

	if ((ev->type != KEVENT_POLL && ev->type != KEVENT_PIPE) || ev->id.raw[1] >= F_NW)
		return -1;
	for (num = 0; num < F_NUMS; num++)
		if (ev->id.raw[0] == (unsigned int)f->num[num])
			return ((ev->type == KEVENT_PIPE) * F_NUMS + num) * F_NW + ev->id.raw[1];
	return -1;
}

/* Checks a delivered watch and counts it where its name's balance needs it. */
static void f_account(struct fround *f, unsigned int qi, const struct ukevent *ev)
{
	unsigned int ok = ev->type == KEVENT_PIPE ? KEVENT_PIPE_READ | KEVENT_PIPE_CLOSED : POLL_OK;
	int name = f_name_of(f, ev);

	if (name < 0 || ev->user[0] != (unsigned int)name) {
		race_fail(f->r, "a delivered watch that was never added: type %u id %u,%u user %u",
			  ev->type, ev->id.raw[0], ev->id.raw[1], ev->user[0]);
	} else if (ev->ret_flags == (KEVENT_RET_DONE | KEVENT_RET_BROKEN)) {
		if (ev->ret_data[0] != EBADF)
			race_fail(f->r, "a watch broken with %u, not EBADF", ev->ret_data[0]);
		add_int(&f->broken[qi][name], 1);
	} else if (ev->ret_flags == KEVENT_RET_DONE && ev->ret_data[0] &&
		   !(ev->ret_data[0] & ~ok)) {
		if (ev->req_flags & KEVENT_REQ_ONESHOT)
			add_int(&f->oneshot[qi][name], 1);
	} else {
		race_fail(f->r, "a wrong event of a watch of the pipe: type %u ret_flags %#x "
			  "ret_data %#x,%u", ev->type, ev->ret_flags, ev->ret_data[0],
			  ev->ret_data[1]);
	}
}

static void *f_waiter(void *arg)
{
	struct fthread *t = arg;
	struct fround *f = t->f;
	struct ukevent out[32];

	while (!f_done(f)) {
		unsigned int n = 1 + rnd(&t->seed) % 32;
		long got = wait_some(f->q[t->qi], out, n, &t->seed), i;
		int err = errno;

		if (got < 0 && err == EBADF)
			break;	/* the closer closed this queue */
		if (got < 0 || got > n) {
			race_fail(f->r, "a wait returned %ld (errno %d)", got, got < 0 ? err : 0);
			break;
		}
		for (i = 0; i < got; i++)
			f_account(f, t->qi, &out[i]);
		add_ul(&f->events, got);
	}
	return NULL;
}

/*
 * REMOVE of every watch of queue @qi, from @from on, in the order they were
 * added, as soon as the release starts (or a little after: @late steps).
 */
static int f_remove_all(struct fround *f, unsigned int qi, unsigned int from,
			unsigned int late)
{
	static __thread struct ukevent uk[F_NAMES];
	unsigned int i, n = 0;
	long ret;
	int err;

	for (i = 0; i < F_NAMES; i++)
		uk[i] = f_watch(f, (from + i) % F_NAMES, 0);
	/* At once when the release starts: REMOVE chases it down the file's list. */
	if (!spin_until(&f->burst, f_done_arg, f))
		return 0;
	spin_for(late);
	ret = kevent_remove(f->q[qi], uk, F_NAMES);
	err = errno;
	if (ret < 0 && err == EBADF)
		return -1;
	for (i = 0; i < F_NAMES; i++) {
		if (!uk[i].ret_flags) {
			add_int(&f->removed[qi][(from + i) % F_NAMES], 1);
			n++;
		} else if (uk[i].ret_flags != KEVENT_RET_BROKEN || uk[i].ret_data[0] != ENOENT) {
			race_fail(f->r, "REMOVE of a watch: the entry came back with ret_flags %#x "
				  "ret_data[0] %u", uk[i].ret_flags, uk[i].ret_data[0]);
		}
	}
	if (ret != n)
		race_fail(f->r, "REMOVE of %u watches returned %ld (errno %d) for %u removed",
			  F_NAMES, ret, ret < 0 ? err : 0, n);
	add_ul(&f->bursts, 1);
	return 0;
}

/*
 * ADD and REMOVE of single watches on both queues; when the closer is
 * about to release the pipe, REMOVE of all of one queue's watches in one
 * call, in the order the release walks the file's list.
 */
static void *f_churn(void *arg)
{
	static const unsigned int flags[] = {
		0, KEVENT_REQ_ONESHOT, KEVENT_REQ_ET, KEVENT_REQ_ET | KEVENT_REQ_LAST_CHECK,
	};
	struct fthread *t = arg;
	struct fround *f = t->f;
	unsigned int dead = 0;
	int burst_done = 0;

	while (!f_done(f)) {
		unsigned int qi = rnd(&t->seed) % F_QUEUES, name = rnd(&t->seed) % F_NAMES;
		struct ukevent uk;
		long ret;
		int res, err;

		if (dead & (1u << qi))
			qi ^= 1;
		if (dead & (1u << qi))
			break;
		if (!burst_done && __atomic_load_n(&f->armed, __ATOMIC_ACQUIRE)) {
			burst_done = 1;
			/* One churner per queue, from the start or from anywhere. */
			if (f_remove_all(f, t->qi, rnd(&t->seed) & 1 ? 0 : rnd(&t->seed) % F_NAMES,
					 rnd(&t->seed) & 1 ? 0 : rnd(&t->seed) % 4000))
				dead |= 1u << t->qi;
			continue;
		}
		if (rnd(&t->seed) % 3) {
			uk = f_watch(f, name, 0);
			ret = kevent_remove(f->q[qi], &uk, 1);
			err = errno;
			res = entry_result(f->r, "REMOVE of a watch of the pipe", ret, err, &uk,
					   ENOENT, ENOENT);
			if (res == 1)
				add_int(&f->removed[qi][name], 1);
		} else {
			uk = f_watch(f, name, flags[rnd(&t->seed) % 4]);
			ret = kevent_add(f->q[qi], &uk, 1);
			err = errno;
			res = entry_result(f->r, "ADD of a watch of the pipe", ret, err, &uk,
					   EEXIST, EBADF);
			if (res == 1)
				add_int(&f->added[qi][name], 1);
		}
		if (res == -1)
			dead |= 1u << qi;
		else if (res < -1)
			break;
		add_ul(&f->ops, 1);
	}
	return NULL;
}

/* Writes to the pipe and reads from it: wake-ups through every watch. */
static void *f_writer(void *arg)
{
	struct fthread *t = arg;
	struct fround *f = t->f;
	int write_ok = 1;
	char buf[256];

	memset(buf, 'p', sizeof(buf));
	while (!f_done(f)) {
		ssize_t n;

		if (write_ok) {
			n = write(f->wr, buf, 1 + rnd(&t->seed) % sizeof(buf));
			if (n < 0 && errno == EPIPE)
				write_ok = 0;	/* every read end is closed */
			else if (n < 0 && errno != EAGAIN)
				race_fail(f->r, "write to the pipe: errno %d", errno);
		}
		n = read(f->num[rnd(&t->seed) % F_NUMS], buf, 1 + rnd(&t->seed) % sizeof(buf));
		if (n < 0 && errno != EAGAIN && errno != EBADF)
			race_fail(f->r, "read from the pipe: errno %d", errno);
		if (!(rnd(&t->seed) % 4))
			usleep(rnd(&t->seed) % 100);
	}
	return NULL;
}

static void *f_closer(void *arg)
{
	struct fround *f = arg;
	unsigned long long *s = &f->closer_seed;
	unsigned int order[F_NUMS], i, q1_at = rnd(s) % (F_NUMS + 1);

	for (i = 0; i < F_NUMS; i++)
		order[i] = i;
	for (i = F_NUMS - 1; i > 0; i--) {
		unsigned int j = rnd(s) % (i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	usleep(f->close_us);
	__atomic_store_n(&f->armed, 1, __ATOMIC_RELEASE);
	for (i = 0; i <= F_NUMS; i++) {
		if (i == q1_at && f->close_q1) {
			close(f->q[1]);
			__atomic_or_fetch(&f->closed, 1u << (F_NUMS + 1), __ATOMIC_RELEASE);
		}
		if (i == F_NUMS)
			break;
		if (i == F_NUMS - 1) {
			/* The last number: the file is released in this close(). */
			__atomic_store_n(&f->burst, 1, __ATOMIC_RELEASE);
			spin_for(rnd(s) % 2000);
		}
		close(f->num[order[i]]);
		__atomic_or_fetch(&f->closed, 1u << order[i], __ATOMIC_RELEASE);
		if (i < F_NUMS - 1 && rnd(s) & 1)
			usleep(rnd(s) % 200);
	}
	return NULL;
}

/*
 * The pipe is released: what is left of its watches on queue @qi is
 * delivered once, broken, and goes; then each watch balances: every
 * successful ADD was undone by a REMOVE, a broken delivery or a oneshot
 * delivery.
 */
static void f_balance(struct fround *f, unsigned int qi, unsigned long round)
{
	unsigned int reported = 0, i;
	struct ukevent out[64];
	long n, k;

	for (i = 0; i < 64 && (n = kevent_wait(f->q[qi], out, 64, 0)) > 0; i++)
		for (k = 0; k < n; k++) {
			f_account(f, qi, &out[k]);
			if (out[k].ret_flags != (KEVENT_RET_DONE | KEVENT_RET_BROKEN))
				race_fail(f->r, "a watch of the released pipe was delivered "
					  "after the release, not broken (ret_flags %#x)",
					  out[k].ret_flags);
		}
	n = kevent_queued(f->q[qi]);
	if (n)
		race_fail(f->r, "%ld watches of the released pipe stayed on queue %u, neither "
			  "broken nor removed (round %lu)", n, qi, round);
	for (i = 0; i < F_NAMES; i++) {
		int in = f->added[qi][i];
		int gone = f->removed[qi][i] + f->broken[qi][i] + f->oneshot[qi][i];

		if (in != gone && reported++ < 3)
			race_fail(f->r, "watch %u of queue %u (round %lu): added %d times, removed "
				  "%d, delivered broken %d, delivered oneshot %d", i, qi, round, in,
				  f->removed[qi][i], f->broken[qi][i], f->oneshot[qi][i]);
	}
}

/*
 * Guards 0006's release-versus-REMOVE fix (c6d1223, issue 14's finding 2):
 * a released file's watches are broken while still attached, and k->st is
 * cleared last, so a REMOVE on another CPU either waits for the file's
 * lock or finds the watch gone and frees it, never while the release
 * still uses it; the release lets go of the lock every 64 watches and
 * reads the list afresh. Here a pipe's read end, through four numbers,
 * carries 320 KEVENT_POLL and KEVENT_PIPE watches on each of two queues
 * (over the 64 of a batch); threads WAIT on both, ADD and REMOVE single
 * watches and read and write the pipe, while a closer closes the numbers:
 * as the last one goes, the file's release and, per queue, a REMOVE of
 * every watch in the order the release walks them run at once (the two
 * queues' watches alternate on the file's list, so each REMOVE catches up
 * with the release from behind: the moment the fix closed, a watch
 * detached and not yet broken); sometimes the second queue is closed
 * meanwhile too. After each round every watch balances:
 * added = removed + delivered broken + delivered oneshot, and nothing
 * stays on a queue once the file is gone.
 */
TEST_F_TIMEOUT(race, file_release_races_remove_of_its_watches, TEST_LIMIT)
{
	static const unsigned int flags[] = {
		0, KEVENT_REQ_ONESHOT, KEVENT_REQ_ET, KEVENT_REQ_ET | KEVENT_REQ_LAST_CHECK,
	};
	struct race *r = &self->r;
	unsigned long rounds = 0, ops = 0, events = 0, bursts = 0;
	struct fround *f = calloc(1, sizeof(*f));
	static struct ukevent uk[F_NAMES];

	ASSERT_NE(NULL, f);
	race_go(_metadata, r, "0006 (a released file's watches are broken while attached and "
		"detached last, so a REMOVE on another CPU never frees one the release "
		"still uses; the release lets go of its lock every 64 watches)");
	while (!race_over(r) && rounds < F_ROUNDS) {
		struct fthread th[6];
		pthread_t t[6], closer;
		unsigned long long seed = seed_for(r, rounds);
		unsigned int i, qi, round_us;
		int p[2];

		memset(f, 0, sizeof(*f));
		f->r = r;
		ASSERT_EQ(0, pipe2(p, O_NONBLOCK));
		f->num[0] = p[0];
		f->wr = p[1];
		for (i = 1; i < F_NUMS; i++) {
			f->num[i] = dup(p[0]);
			ASSERT_LE(0, f->num[i]);
		}
		for (qi = 0; qi < F_QUEUES; qi++) {
			f->q[qi] = kevent_init();
			ASSERT_LE(0, f->q[qi]);
		}
		/*
		 * The file's list takes the two queues' watches in turns of 16:
		 * each queue's REMOVE passes over the other's half as it
		 * catches up with the release.
		 */
		for (i = 0; i < F_NAMES; i += F_CHUNK)
			for (qi = 0; qi < F_QUEUES; qi++) {
				unsigned int j;

				for (j = 0; j < F_CHUNK; j++) {
					uk[j] = f_watch(f, i + j, flags[rnd(&seed) % 4]);
					f->added[qi][i + j] = 1;
				}
				ASSERT_EQ(F_CHUNK, kevent_add(f->q[qi], uk, F_CHUNK));
			}
		round_us = 500 + rnd(&seed) % 4000;
		f->close_us = rnd(&seed) % round_us;
		f->close_q1 = !(rnd(&seed) % 3);
		f->closer_seed = seed_for(r, rounds * 8 + 7);
		for (i = 0; i < 6; i++) {
			th[i].f = f;
			th[i].qi = i & 1;
			th[i].seed = seed_for(r, rounds * 8 + i);
		}
		ASSERT_EQ(0, start_threads(t, 2, f_waiter, th, sizeof(th[0])));
		ASSERT_EQ(0, start_threads(t + 2, 2, f_churn, th + 2, sizeof(th[0])));
		ASSERT_EQ(0, pthread_create(&t[4], NULL, f_writer, &th[4]));
		ASSERT_EQ(0, pthread_create(&closer, NULL, f_closer, f));
		usleep(round_us);
		/* The round ends once the closer is done: it always races the others. */
		pthread_join(closer, NULL);
		__atomic_store_n(&f->over, 1, __ATOMIC_RELEASE);
		join_threads(t, 5);

		/* The file is released by the end of this, if the closer had not done it. */
		for (i = 0; i < F_NUMS; i++)
			if (!(f->closed & (1u << i)))
				close(f->num[i]);
		close(f->wr);
		for (qi = 0; qi < F_QUEUES; qi++)
			if (!(f->closed & (1u << (F_NUMS + qi)))) {
				f_balance(f, qi, rounds);
				close(f->q[qi]);
			}
		rounds++;
		ops += f->ops;
		events += f->events;
		bursts += f->bursts;
	}
	TH_LOG("%lu rounds (a release of %d watches each), %lu calls, %lu events, "
	       "%lu REMOVEs of a whole queue during a release", rounds, F_QUEUES * F_NAMES,
	       ops, events, bursts);
	EXPECT_LT(0, rounds);
	free(f);
}

/* ------------------------------------------------------------------ */
/* 2. Several consumers of one ready ring.                             */

#define R_ENTRIES	64
#define R_PRODUCERS	2
#define R_CONSUMERS	4
#define R_MERGE		8		/* names posted many times, never oneshot */
#define R_MERGE_BASE	0xf0000000u
#define R_MAXSEQ	(1u << 18)	/* oneshot names per producer */

struct rring {
	struct race *r;
	int kq;
	struct kevent_ring *ring;
	unsigned char *seen[R_PRODUCERS];
	unsigned int produced[R_PRODUCERS];
	unsigned long posts[R_MERGE], merged[R_MERGE];
	unsigned long taken, events, waits;
	int stop_consumers;
};

struct rthread {
	struct rring *rr;
	unsigned int id;
	unsigned long long seed;
};

static unsigned long r_produced(struct rring *rr)
{
	unsigned long n = 0;
	unsigned int p;

	for (p = 0; p < R_PRODUCERS; p++)
		n += __atomic_load_n(&rr->produced[p], __ATOMIC_ACQUIRE);
	return n;
}

/* One event taken from the ring: checked, and counted under its name. */
static void r_event(struct rring *rr, const struct ukevent *ev)
{
	unsigned int name = ev->id.raw[0], p = name >> 24, s = name & 0xffffff;

	if (ev->type != KEVENT_USER || ev->ret_flags != KEVENT_RET_DONE || ev->id.raw[1]) {
		race_fail(rr->r, "a wrong event in the ring: type %u id %u,%u ret_flags %#x",
			  ev->type, name, ev->id.raw[1], ev->ret_flags);
		return;
	}
	if (name >= R_MERGE_BASE && name < R_MERGE_BASE + R_MERGE) {
		if (!ev->ret_data[1] || !ev->ret_data[0] || (ev->ret_data[0] & ~0xffu))
			race_fail(rr->r, "a merged post came with ret_data %#x,%u",
				  ev->ret_data[0], ev->ret_data[1]);
		add_ul(&rr->merged[name - R_MERGE_BASE], ev->ret_data[1]);
		return;
	}
	if (p >= R_PRODUCERS || s >= R_MAXSEQ || !(ev->req_flags & KEVENT_REQ_ONESHOT) ||
	    ev->ret_data[1] != 1 || ev->ret_data[0] != 1u << (s % 8)) {
		race_fail(rr->r, "a wrong event in the ring: name %#x req_flags %#x "
			  "ret_data %#x,%u", name, ev->req_flags, ev->ret_data[0], ev->ret_data[1]);
		return;
	}
	if (__atomic_fetch_add(&rr->seen[p][s], 1, __ATOMIC_RELAXED))
		race_fail(rr->r, "the event of name %#x was taken twice", name);
	add_ul(&rr->taken, 1);
}

static void *r_consumer(void *arg)
{
	struct rthread *t = arg;
	struct rring *rr = t->rr;
	struct ukevent ev, dummy;

	while (!__atomic_load_n(&rr->stop_consumers, __ATOMIC_ACQUIRE)) {
		long n;

		if (kevent_ring_take(rr->ring, &ev)) {
			r_event(rr, &ev);
			add_ul(&rr->events, 1);
			continue;
		}
		/* Empty: sleep with one call, which also moves in what overflowed. */
		if (rnd(&t->seed) & 1)
			n = kevent_ring_wait(rr->kq, 1, 5);
		else
			n = kevent_wait(rr->kq, &dummy, 1, 5);
		if (n < 0) {
			race_fail(rr->r, "a wait on the ring queue failed: errno %d", errno);
			break;
		}
		add_ul(&rr->waits, 1);
	}
	return NULL;
}

/* Oneshot posted kevents with names never used before, in batches; a post now and then. */
static void *r_producer(void *arg)
{
	struct rthread *t = arg;
	struct rring *rr = t->rr;
	struct ukevent uk[16];
	unsigned int seq = 0;
	unsigned long taken;

	while (!race_over(rr->r) && seq < R_MAXSEQ) {
		unsigned int n = 1 + rnd(&t->seed) % 16, i;
		long ret;

		/* The consumers keep up: a few rings' worth at most waits for them. */
		taken = __atomic_load_n(&rr->taken, __ATOMIC_RELAXED);
		if (r_produced(rr) - taken > 4 * R_ENTRIES) {
			usleep(50);
			continue;
		}
		if (n > R_MAXSEQ - seq)
			n = R_MAXSEQ - seq;
		for (i = 0; i < n; i++)
			uk[i] = kevent_user_event(t->id << 24 | (seq + i), 0xff,
						  KEVENT_REQ_ONESHOT);
		ret = kevent_add(rr->kq, uk, n);
		if (ret != n) {
			race_fail(rr->r, "ADD of %u oneshot kevents returned %ld (errno %d)", n,
				  ret, ret < 0 ? errno : 0);
			break;
		}
		for (i = 0; i < n; i++)
			uk[i] = kevent_user_event(t->id << 24 | (seq + i),
						  1u << ((seq + i) % 8), 0);
		ret = kevent_post(rr->kq, uk, n);
		if (ret != n) {
			race_fail(rr->r, "READY of %u fresh kevents returned %ld (errno %d)", n,
				  ret, ret < 0 ? errno : 0);
			break;
		}
		seq += n;
		__atomic_store_n(&rr->produced[t->id], seq, __ATOMIC_RELEASE);
		if (!(rnd(&t->seed) % 4)) {
			i = rnd(&t->seed) % R_MERGE;
			uk[0] = kevent_user_event(R_MERGE_BASE + i, 1u << (rnd(&t->seed) % 8), 0);
			ret = kevent_post(rr->kq, uk, 1);
			if (ret != 1) {
				race_fail(rr->r, "READY of a lasting kevent returned %ld "
					  "(errno %d)", ret, ret < 0 ? errno : 0);
				break;
			}
			add_ul(&rr->posts[i], 1);
		}
	}
	return NULL;
}

/*
 * Guards 0028, the ready ring: several threads take from one ring (copy a
 * slot, then move uidx on with a compare-and-swap), while the ring work
 * fills it from another CPU, overflows, and the wait calls move the
 * overflow in. Two producers add fresh oneshot KEVENT_USER kevents and
 * post each once, and post to eight lasting ones now and then; four
 * consumers take with kevent_ring_take() and sleep in kevent_ring_wait()
 * or WAIT on a ring of 64 slots. Every oneshot event is taken exactly
 * once, with its one post; the lasting ones' post counts add up to the
 * posts; at the end kidx = uidx, nothing waits in the kernel, and the
 * oneshot kevents are gone.
 */
TEST_F_TIMEOUT(race, ring_consumers_take_each_event_once, TEST_LIMIT)
{
	struct race *r = &self->r;
	struct rring *rr = calloc(1, sizeof(*rr));
	struct rthread tc[R_CONSUMERS], tp[R_PRODUCERS];
	pthread_t c[R_CONSUMERS], p[R_PRODUCERS];
	unsigned long total, merge_posts, merged, last = 0, missing = 0, twice = 0;
	long long last_ns;
	unsigned int i, s;

	ASSERT_NE(NULL, rr);
	race_go(_metadata, r, "0028 (the ready ring: several consumers, the ring work filling "
		"from another CPU, overflow moved in by the wait calls)");
	rr->r = r;
	rr->kq = kevent_ring_open(R_ENTRIES, &rr->ring);
	ASSERT_LE(0, rr->kq);
	for (i = 0; i < R_PRODUCERS; i++) {
		rr->seen[i] = calloc(R_MAXSEQ, 1);
		ASSERT_NE(NULL, rr->seen[i]);
	}
	for (i = 0; i < R_MERGE; i++) {
		struct ukevent uk = kevent_user_event(R_MERGE_BASE + i, 0xff, 0);

		ASSERT_EQ(1, kevent_add(rr->kq, &uk, 1));
	}
	for (i = 0; i < R_CONSUMERS; i++)
		tc[i] = (struct rthread){ rr, i, seed_for(r, i) };
	for (i = 0; i < R_PRODUCERS; i++)
		tp[i] = (struct rthread){ rr, i, seed_for(r, 100 + i) };
	ASSERT_EQ(0, start_threads(c, R_CONSUMERS, r_consumer, tc, sizeof(tc[0])));
	ASSERT_EQ(0, start_threads(p, R_PRODUCERS, r_producer, tp, sizeof(tp[0])));
	join_threads(p, R_PRODUCERS);

	/* Every event must reach a consumer: wait for them, 30 s without progress at most. */
	total = r_produced(rr);
	last_ns = kevent_now_ns();
	for (;;) {
		unsigned long taken = __atomic_load_n(&rr->taken, __ATOMIC_ACQUIRE);

		merge_posts = merged = 0;
		for (i = 0; i < R_MERGE; i++) {
			merge_posts += rr->posts[i];
			merged += __atomic_load_n(&rr->merged[i], __ATOMIC_ACQUIRE);
		}
		if ((taken == total && merged >= merge_posts) || race_stopped(r))
			break;
		if (taken + merged != last) {
			last = taken + merged;
			last_ns = kevent_now_ns();
		} else if (kevent_now_ns() - last_ns > STALL_S * 1000000000LL) {
			race_fail(r, "0028: %lu of %lu events and %lu of %lu posts reached the "
				  "consumers, and nothing more came for %d s (kidx %u uidx %u "
				  "flags %#x)", taken, total, merged, merge_posts, STALL_S,
				  rr->ring->kidx, rr->ring->uidx, rr->ring->flags);
			break;
		}
		usleep(1000);
	}
	/* A little longer: an event taken twice would show now. */
	usleep(20 * 1000);
	__atomic_store_n(&rr->stop_consumers, 1, __ATOMIC_RELEASE);
	join_threads(c, R_CONSUMERS);

	for (i = 0; i < R_PRODUCERS; i++)
		for (s = 0; s < rr->produced[i]; s++) {
			missing += !rr->seen[i][s];
			twice += rr->seen[i][s] > 1;
		}
	EXPECT_EQ(0, missing) TH_LOG("0028: %lu oneshot events never taken", missing);
	EXPECT_EQ(0, twice) TH_LOG("0028: %lu oneshot events taken more than once", twice);
	for (i = 0; i < R_MERGE; i++)
		if (rr->posts[i] != rr->merged[i])
			race_fail(r, "0028: lasting kevent %u: %lu posts, %lu counted by its "
				  "events", i, rr->posts[i], rr->merged[i]);
	EXPECT_EQ(__atomic_load_n(&rr->ring->kidx, __ATOMIC_ACQUIRE), rr->ring->uidx);
	/* Nothing waits in the kernel for room, and nothing more comes. */
	EXPECT_EQ(0, kevent_ring_wait(rr->kq, 0, 0));
	EXPECT_EQ(0, kevent_ring_pending(rr->ring));
	EXPECT_EQ(R_MERGE, kevent_queued(rr->kq)) TH_LOG("the oneshot kevents must be gone");
	TH_LOG("%lu oneshot events and %lu posts to %u lasting kevents, %u consumers: "
	       "%lu events taken, %lu wait calls, %u overflows", total, merge_posts, R_MERGE,
	       R_CONSUMERS, rr->events, rr->waits, rr->ring->overflow);
	kevent_ring_close(rr->kq, rr->ring);
	for (i = 0; i < R_PRODUCERS; i++)
		free(rr->seen[i]);
	free(rr);
}

/* ------------------------------------------------------------------ */
/* 3. A posted receive against the wait that resumes it.               */

#define P_STREAMS	3
#define P_HDR		sizeof(struct kevent_naio_posted)
#define P_MAX		(256ULL << 20)

enum { P_WAIT, P_RING, P_WRAP };

struct pstream {
	struct race *r;
	int kind, kq, s[2];
	struct kevent_ring *ring;
	struct kevent_naio_posted *rx;
	size_t len;			/* the ring of bytes, after the header */
	unsigned long long start;	/* the number of the stream's first byte */
	long id;
	unsigned long long sent, got;	/* bytes written, bytes consumed */
	unsigned long long seed_s, seed_c;
	int *aborted;
	int consumer_done, ended;
	unsigned int final_err;
	unsigned long waits, fulls;
};

static unsigned char p_byte(int tag, unsigned long long i)
{
	return (unsigned char)(i * 131 + (i >> 9) + tag * 17);
}

static int p_aborted(struct pstream *ps)
{
	return __atomic_load_n(ps->aborted, __ATOMIC_ACQUIRE);
}

/*
 * Consume what the kernel put in the ring since *@pos (a 64-bit byte
 * number), each byte checked. Returns the bytes, -1 at a wrong one, -2 if
 * head is further ahead than the ring is long (unread bytes overwritten).
 */
static long p_take(struct pstream *ps, unsigned long long *pos, unsigned int *n_out)
{
	const unsigned char *data = (const unsigned char *)(ps->rx + 1);
	unsigned int n = __atomic_load_n(&ps->rx->head, __ATOMIC_ACQUIRE) - (unsigned int)*pos, i;

	*n_out = n;
	if (n > ps->len)
		return -2;
	for (i = 0; i < n; i++)
		if (data[(*pos + i) % ps->len] != p_byte(ps->kind, *pos + i - ps->start))
			return -1;
	*pos += n;
	/* Done with them: the kernel may write over them from here on. */
	__atomic_store_n(&ps->rx->tail, (unsigned int)*pos, __ATOMIC_RELEASE);
	return n;
}

static void p_event(struct pstream *ps, const struct ukevent *ev, unsigned int *final)
{
	unsigned int head = __atomic_load_n(&ps->rx->head, __ATOMIC_ACQUIRE);

	if (ev->type == KEVENT_TIMER && p_aborted(ps))
		return;		/* the watchdog's: the streams are being ended */
	if (ev->type != KEVENT_NAIO || ev->id.raw[0] != (unsigned int)ps->s[1] ||
	    ev->id.raw[1] != (unsigned int)ps->id || ev->event != KEVENT_SOCKET_RECV ||
	    (int)(head - ev->ret_data[0]) < 0) {
		race_fail(ps->r, "stream %d: a wrong event: type %u id %u,%u event %#x "
			  "ret_flags %#x ret_data %u,%u (head %u)", ps->kind, ev->type,
			  ev->id.raw[0], ev->id.raw[1], ev->event, ev->ret_flags,
			  ev->ret_data[0], ev->ret_data[1], head);
		return;
	}
	if (ev->ret_flags == (KEVENT_RET_DONE | KEVENT_RET_BROKEN)) {
		ps->ended = 1;
		*final = ev->ret_data[0];
		ps->final_err = ev->ret_data[1];
	} else if (ev->ret_flags != KEVENT_RET_DONE || ev->ret_data[1]) {
		race_fail(ps->r, "stream %d: an event with ret_flags %#x ret_data %u,%u",
			  ps->kind, ev->ret_flags, ev->ret_data[0], ev->ret_data[1]);
	}
}

/*
 * The wait call that resumes a parked receive, of the stream's kind:
 * WAIT or kevent_get_events() without a time limit; on the ring queue,
 * kevent_get_events() or aio_submit() with KEVENT_NAIO_SUBMIT_WAIT, then
 * the ring's events. A lost wake-up sleeps here until the watchdog ends
 * the streams. Returns -1 when the stream is done with.
 */
static int p_wait(struct pstream *ps, unsigned int *final)
{
	struct ukevent ev;
	long n;

	ps->waits++;
	if (ps->kind == P_RING) {
		int got = 0;

		while (kevent_ring_take(ps->ring, &ev)) {
			p_event(ps, &ev, final);
			got = 1;
		}
		if (got)
			return 0;
		n = rnd(&ps->seed_c) & 1 ? kevent_ring_wait(ps->kq, 1, -1) :
					   kevent_aio_submit_wait(ps->kq, NULL, 0);
		if (n >= 0)
			return 0;
	} else {
		n = rnd(&ps->seed_c) & 1 ? kevent_wait(ps->kq, &ev, 1, KEVENT_WAIT_FOREVER) :
					   kevent_get_events(ps->kq, 1, 1, &ev, NULL);
		if (n == 1) {
			p_event(ps, &ev, final);
			return 0;
		}
	}
	if (!p_aborted(ps))
		race_fail(ps->r, "stream %d: a wait call returned %ld (errno %d)", ps->kind, n,
			  n < 0 ? errno : 0);
	return -1;
}

static void p_stalled(struct pstream *ps)
{
	race_fail(ps->r, "0030: no byte moved for %d s: stream %d sent %llu, consumed %llu, "
		  "head %u tail %u flags %#x, %lu waits; a wait sleeps while the receive is "
		  "parked", STALL_S, ps->kind, ps->sent, ps->got, ps->rx->head, ps->rx->tail,
		  ps->rx->flags, ps->waits);
}

static void *p_consumer(void *arg)
{
	struct pstream *ps = arg;
	unsigned long long pos = ps->start;
	unsigned int final = 0, n;

	for (;;) {
		long got = p_take(ps, &pos, &n);

		if (got < 0) {
			if (!p_aborted(ps))
				race_fail(ps->r, got == -1 ?
					  "stream %d: byte %llu is wrong (%u new)" :
					  "stream %d: at byte %llu head is %u bytes ahead: the "
					  "kernel wrote over bytes not consumed", ps->kind,
					  pos - ps->start, n);
			break;
		}
		__atomic_store_n(&ps->got, pos - ps->start, __ATOMIC_RELEASE);
		if (ps->ended) {
			if ((unsigned int)pos != final && !p_aborted(ps))
				race_fail(ps->r, "stream %d ended at head %u, after %llu bytes "
					  "consumed", ps->kind, final, pos - ps->start);
			break;
		}
		if (__atomic_load_n(&ps->rx->flags, __ATOMIC_RELAXED) & KEVENT_NAIO_POSTED_FULL)
			ps->fulls++;
		if (rnd(&ps->seed_c) % 8 == 0)
			usleep(rnd(&ps->seed_c) % 100);		/* let it fill and park */
		if (p_wait(ps, &final) || p_aborted(ps))
			break;
	}
	__atomic_store_n(&ps->consumer_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *p_sender(void *arg)
{
	struct pstream *ps = arg;
	unsigned long long off = 0;
	unsigned char buf[4096];

	while (!race_over(ps->r) && off < P_MAX && !p_aborted(ps)) {
		size_t n = 1 + rnd(&ps->seed_s) % (3 * ps->len), done = 0, i;

		if (n > sizeof(buf))
			n = sizeof(buf);
		for (i = 0; i < n; i++)
			buf[i] = p_byte(ps->kind, off + i);
		while (done < n) {
			ssize_t w = send(ps->s[0], buf + done, n - done, MSG_NOSIGNAL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				if (!p_aborted(ps))
					race_fail(ps->r, "stream %d: send: errno %d", ps->kind,
						  errno);
				return NULL;
			}
			done += w;
		}
		off += n;
		__atomic_store_n(&ps->sent, off, __ATOMIC_RELEASE);
		if (rnd(&ps->seed_s) % 8 == 0)
			usleep(rnd(&ps->seed_s) % 200);
	}
	if (!p_aborted(ps))
		shutdown(ps->s[0], SHUT_WR);	/* the end of the stream ends the receive */
	return NULL;
}

/*
 * Guards 0030's fix of a posted receive that parks after the wait that
 * would resume it (9c9d384, issue 32: a suspected lost wake-up, confirmed):
 * the worker sets parked under ns->lock and reads the tail again, and the
 * wait call reads parked under the same lock after user space released
 * the tail. Three streams on loopback TCP, each with a posted receive of a
 * small ring of bytes (1000 and 512 bytes: it fills and parks all the
 * time), a sender thread writing 1 to 3 rings' worth at a time, and a
 * consumer thread that consumes and then calls the wait that resumes the
 * receive: WAIT or kevent_get_events() on a plain queue, with no time
 * limit; kevent_get_events() or aio_submit(KEVENT_NAIO_SUBMIT_WAIT) on a
 * ring queue; and on a third stream numbered from 3000 bytes below 2^32
 * (0030's 64-bit byte numbers, across head's wrap). Every byte arrives, in
 * order, never overwritten before it was consumed, and the receive ends
 * with the stream (broken, errno 0, at the last head). A lost wake-up is
 * a wait that sleeps with the rest of the stream in the socket: a
 * watchdog fails the test after 30 s without a byte moving.
 */
TEST_F_TIMEOUT(race, posted_receive_is_resumed_by_the_wait_after_it_parks, TEST_LIMIT)
{
	static const size_t lens[P_STREAMS] = { 1000, 512, 1000 };
	struct race *r = &self->r;
	struct pstream ps[P_STREAMS];
	pthread_t snd[P_STREAMS], con[P_STREAMS];
	unsigned long long progress = 0;
	long long last_ns;
	int aborted = 0, i, done;

	race_go(_metadata, r, "0030 (a posted receive no longer parks after the wait call "
		"that would resume it: the worker reads the tail again once parked, under "
		"ns->lock; 64-bit byte numbers)");
	memset(ps, 0, sizeof(ps));
	for (i = 0; i < P_STREAMS; i++) {
		struct pstream *p = &ps[i];

		p->r = r;
		p->kind = i;
		p->len = lens[i];
		p->aborted = &aborted;
		p->seed_s = seed_for(r, 2 * i);
		p->seed_c = seed_for(r, 2 * i + 1);
		p->start = i == P_WRAP ? (1ULL << 32) - 3000 : 0;
		p->kq = i == P_RING ? kevent_ring_open(16, &p->ring) :
			i == P_WRAP ? kevent_init_flags(0) : kevent_init();
		ASSERT_LE(0, p->kq);
		ASSERT_EQ(0, kevent_tcp_pair(p->s));
		p->rx = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
		ASSERT_NE(MAP_FAILED, p->rx);
		p->rx->head = p->rx->tail = (unsigned int)p->start;
		p->id = kevent_aio_recv(p->kq, p->s[1], p->rx, P_HDR + p->len,
					KEVENT_NAIO_RECV_POSTED);
		ASSERT_LE(0, p->id);
	}
	for (i = 0; i < P_STREAMS; i++) {
		ASSERT_EQ(0, pthread_create(&con[i], NULL, p_consumer, &ps[i]));
		ASSERT_EQ(0, pthread_create(&snd[i], NULL, p_sender, &ps[i]));
	}

	/* The watchdog: a stream that moves no byte for 30 s has lost its wake-up. */
	last_ns = kevent_now_ns();
	do {
		unsigned long long now = 0;

		usleep(10 * 1000);
		for (done = 0, i = 0; i < P_STREAMS; i++) {
			now += __atomic_load_n(&ps[i].sent, __ATOMIC_ACQUIRE) +
			       __atomic_load_n(&ps[i].got, __ATOMIC_ACQUIRE);
			done += __atomic_load_n(&ps[i].consumer_done, __ATOMIC_ACQUIRE);
		}
		if (now != progress) {
			progress = now;
			last_ns = kevent_now_ns();
		} else if (!aborted && kevent_now_ns() - last_ns > STALL_S * 1000000000LL) {
			for (i = 0; i < P_STREAMS; i++)
				p_stalled(&ps[i]);
		}
		if (!aborted && race_stopped(r) && r->failures) {
			/*
			 * Something failed: end every stream, so that every thread
			 * returns. A receive parked on a full ring reports nothing
			 * more: a timer wakes its consumer, which sees the abort.
			 */
			__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
			for (i = 0; i < P_STREAMS; i++) {
				struct ukevent wake = kevent_timer(1, 0x77616b65,
								   KEVENT_REQ_ONESHOT);

				shutdown(ps[i].s[0], SHUT_RDWR);
				shutdown(ps[i].s[1], SHUT_RDWR);
				kevent_add(ps[i].kq, &wake, 1);
			}
		}
	} while (done < P_STREAMS);
	join_threads(con, P_STREAMS);
	join_threads(snd, P_STREAMS);

	for (i = 0; i < P_STREAMS; i++) {
		struct pstream *p = &ps[i];

		if (!aborted) {
			EXPECT_EQ(p->sent, p->got) TH_LOG("stream %d: bytes sent and consumed", i);
			EXPECT_EQ(0, p->final_err) TH_LOG("stream %d ended with errno %u", i,
							   p->final_err);
			EXPECT_EQ((unsigned int)(p->start + p->sent), p->rx->head);
			EXPECT_EQ(0, kevent_queued(p->kq)) TH_LOG("stream %d: the receive must be "
								  "gone with the stream", i);
		}
		TH_LOG("stream %d (%s, ring of %zu bytes from %llu): %llu bytes, %lu waits, "
		       "found full %lu times", i, i == P_RING ? "ring queue" : "queue", p->len,
		       p->start, p->got, p->waits, p->fulls);
		if (p->ring)
			kevent_ring_close(p->kq, p->ring);
		else
			close(p->kq);
		close(p->s[0]);
		close(p->s[1]);
		munmap(p->rx, 4096);
	}
	EXPECT_GE(0, kevent_wait_unpinned(SOON)) TH_LOG("pages stayed pinned");
}

/* ------------------------------------------------------------------ */
/* 4. Signal kevents against exit and exec.                            */

#define S_SLOTS		4
#define S_NSIG		4
#define S_ALL		((1u << S_NSIG) - 1)
#define S_CHILDREN	2000

enum { CH_EXIT, CH_EXIT_FROM_THREAD, CH_ADDER_GONE, CH_EXEC, CH_EXEC_FROM_THREAD, CH_MODES };

static const char *const ch_mode[CH_MODES] = {
	"exits", "exits from a thread", "exits after the thread that added its kevents",
	"execs", "execs from a thread",
};

static int s_sig(unsigned int i)
{
	static const int sig[S_NSIG - 1] = { SIGUSR1, SIGUSR2, SIGTERM };

	return i < S_NSIG - 1 ? sig[i] : SIGRTMIN + 2;
}

static int s_index(unsigned int sig)
{
	unsigned int i;

	for (i = 0; i < S_NSIG; i++)
		if (sig == (unsigned int)s_sig(i))
			return i;
	return -1;
}

static struct ukevent s_kevent(unsigned int i)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = s_sig(i);
	uk.type = KEVENT_SIGNAL;
	uk.event = KEVENT_SIGNAL_RECEIVED;
	return uk;
}

/* The child's side. Its status says what went wrong (s_status()). */
struct child {
	int q, pc, ready, mode, added, bad;
	unsigned long long seed;
};

static int child_add(struct child *c)
{
	struct ukevent uk[S_NSIG];
	unsigned int i;

	for (i = 0; i < S_NSIG; i++)
		uk[i] = s_kevent(i);
	if (kevent_add(c->q, uk, S_NSIG) != S_NSIG)
		return 21;
	for (i = 0; i < S_NSIG; i++)
		uk[i] = s_kevent(i);
	return kevent_add(c->pc, uk, S_NSIG) == S_NSIG ? 0 : 22;
}

static void *child_adder(void *arg)
{
	struct child *c = arg;

	c->added = child_add(c);
	return NULL;
}

/* Takes the child's events, from its own queue and from the test's. */
static void *child_waiter(void *arg)
{
	struct child *c = arg;
	struct kevent_get_args args = { .timeout_ns = 1000000 };
	struct ukevent out[8];

	for (;;) {
		long n = kevent_get_events(rnd(&c->seed) % 4 ? c->pc : c->q, 1, 8, out, &args), i;

		if (n < 0)
			c->bad = 30;
		for (i = 0; i < n; i++)
			if (out[i].type != KEVENT_SIGNAL || s_index(out[i].id.raw[0]) < 0 ||
			    out[i].ret_flags != KEVENT_RET_DONE || !out[i].ret_data[0])
				c->bad = 31;
	}
	return NULL;
}

/* The child signals itself too, as it exits or execs. */
static void *child_signaller(void *arg)
{
	struct child *c = arg;

	for (;;) {
		kill(getpid(), s_sig(rnd(&c->seed) % S_NSIG));
		usleep(100 + rnd(&c->seed) % 500);
	}
	return NULL;
}

static void child_exec(struct child *c)
{
	if (c->bad)
		_exit(c->bad);
	execl("/proc/self/exe", "kevent_smp_race_test", RACE_EXEC_ARG, (char *)NULL);
	_exit(40);
}

static void *child_ender(void *arg)
{
	struct child *c = arg;

	usleep(rnd(&c->seed) % 2000);
	if (c->mode == CH_EXEC_FROM_THREAD)
		child_exec(c);
	_exit(c->bad);
}

static void __attribute__((noreturn)) run_child(int q, int ready, int mode,
						unsigned long long seed)
{
	struct child c = { .q = q, .ready = ready, .mode = mode, .seed = seed };
	pthread_t t;
	sigset_t set;
	int err;

	/* The signals the test sends are blocked (an exec keeps them pending), and
	 * SIGTERM too across an exec; until then a kevent takes each of them. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGRTMIN + 2);
	if (mode >= CH_EXEC)
		sigaddset(&set, SIGTERM);
	sigprocmask(SIG_SETMASK, &set, NULL);
	fcntl(q, F_SETFD, 0);	/* the test's queue stays open across exec */
	c.pc = kevent_init_flags(KEVENT_INIT_CLOEXEC);
	if (c.pc < 0)
		_exit(20);
	if (mode == CH_ADDER_GONE) {
		if (pthread_create(&t, NULL, child_adder, &c) || pthread_join(t, NULL))
			_exit(50);
		err = c.added;
	} else {
		err = child_add(&c);
	}
	if (err)
		_exit(err);
	if (pthread_create(&t, NULL, child_waiter, &c) ||
	    pthread_create(&t, NULL, child_signaller, &c))
		_exit(50);
	if (write(ready, "k", 1) != 1)
		_exit(51);
	close(ready);
	switch (mode) {
	case CH_EXIT:
	case CH_ADDER_GONE:
		usleep(rnd(&c.seed) % 3000);
		_exit(c.bad);
	case CH_EXEC:
		usleep(rnd(&c.seed) % 3000);
		child_exec(&c);
		break;
	default:
		/* Another thread ends the process while this one sleeps in WAIT. */
		if (pthread_create(&t, NULL, child_ender, &c))
			_exit(50);
		for (;;) {
			struct ukevent ev;

			if (kevent_wait(c.pc, &ev, 1, KEVENT_WAIT_FOREVER) == 1 &&
			    (ev.type != KEVENT_SIGNAL || ev.ret_flags != KEVENT_RET_DONE))
				c.bad = 32;
		}
	}
	_exit(52);
}

static const char *s_status(int status)
{
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGTERM ? "killed by a SIGTERM its kevent did not take" :
		       "killed by a signal";
	switch (WEXITSTATUS(status)) {
	case 20: return "kevent_init() failed";
	case 21: case 22: return "ADD of its signal kevents failed";
	case 30: return "a wait on a queue failed";
	case 31: case 32: return "it took a wrong event";
	case 40: return "exec failed";
	}
	return "a setup step failed";
}

/* The test's side: up to S_SLOTS children at once. */
struct sslot {
	pthread_rwlock_t lock;	/* the reaper writes; senders and drainers read */
	int live, pid, pidfd, q, mode;
	int remove_some, close_early;
	long long born_ns;
	unsigned int removed, broken;	/* a bit per signal: REMOVEd, delivered broken */
	unsigned long signals;		/* counted by the events */
};

struct srace {
	struct race *r;
	struct sslot slot[S_SLOTS];
	int done;
	unsigned long sent, esrch, drained, removes, early;
};

struct sthread {
	struct srace *sr;
	unsigned long long seed;
};

static int s_done(struct srace *sr)
{
	return __atomic_load_n(&sr->done, __ATOMIC_ACQUIRE);
}

/* An event of a child's kevents on the test's queue: checked and counted. */
static void s_event(struct srace *sr, struct sslot *s, const struct ukevent *ev)
{
	int i = s_index(ev->id.raw[0]);

	if (ev->type != KEVENT_SIGNAL || i < 0 || ev->id.raw[1] ||
	    ev->event != KEVENT_SIGNAL_RECEIVED) {
		race_fail(sr->r, "a wrong event on a child's queue: type %u id %u,%u event %#x",
			  ev->type, ev->id.raw[0], ev->id.raw[1], ev->event);
	} else if (ev->ret_flags == (KEVENT_RET_DONE | KEVENT_RET_BROKEN)) {
		if (ev->ret_data[0] != ESRCH)
			race_fail(sr->r, "a signal kevent broken with %u, not ESRCH",
				  ev->ret_data[0]);
		else if (s->mode < CH_EXEC)
			race_fail(sr->r, "0022: the signal kevent of a child that %s was broken: "
				  "only exec ends them", ch_mode[s->mode]);
		else if (__atomic_fetch_or(&s->broken, 1u << i, __ATOMIC_RELAXED) & (1u << i))
			race_fail(sr->r, "0022: the signal kevent of %d was broken twice",
				  s_sig(i));
	} else if (ev->ret_flags != KEVENT_RET_DONE || !ev->ret_data[0]) {
		race_fail(sr->r, "a signal event with ret_flags %#x ret_data %u",
			  ev->ret_flags, ev->ret_data[0]);
	} else {
		add_ul(&s->signals, ev->ret_data[0]);
	}
}

/* Takes what every child's queue holds, while the children live, exit and exec. */
static long s_drain(struct srace *sr, struct sslot *s, long long timeout_ns)
{
	struct kevent_get_args args = { .timeout_ns = timeout_ns };
	struct ukevent out[16];
	long n, i, all = 0;

	while ((n = kevent_get_events(s->q, 0, 16, out, &args)) > 0) {
		for (i = 0; i < n; i++)
			s_event(sr, s, &out[i]);
		all += n;
		args.timeout_ns = 0;
	}
	if (n < 0)
		race_fail(sr->r, "kevent_get_events() on a child's queue: errno %d", errno);
	return all;
}

static void *s_drainer(void *arg)
{
	struct sthread *t = arg;
	struct srace *sr = t->sr;

	while (!s_done(sr)) {
		struct sslot *s = &sr->slot[rnd(&t->seed) % S_SLOTS];

		int idle;

		pthread_rwlock_rdlock(&s->lock);
		idle = !s->live || s->q < 0;
		if (!idle)
			add_ul(&sr->drained, s_drain(sr, s, rnd(&t->seed) % 1000000));
		pthread_rwlock_unlock(&s->lock);
		if (idle)
			usleep(100 + rnd(&t->seed) % 400);
	}
	return NULL;
}

/* Bursts of signals at the children, through pidfds: never at a reused pid. */
static void *s_sender(void *arg)
{
	struct sthread *t = arg;
	struct srace *sr = t->sr;

	while (!s_done(sr)) {
		struct sslot *s = &sr->slot[rnd(&t->seed) % S_SLOTS];
		unsigned int burst = 1 + rnd(&t->seed) % 16;

		int idle;

		pthread_rwlock_rdlock(&s->lock);
		idle = !s->live;
		while (s->live && burst--) {
			if (syscall(__NR_pidfd_send_signal, s->pidfd, s_sig(rnd(&t->seed) % S_NSIG),
				    NULL, 0) == 0) {
				add_ul(&sr->sent, 1);
			} else if (errno == ESRCH) {
				add_ul(&sr->esrch, 1);
				break;
			} else {
				race_fail(sr->r, "pidfd_send_signal(): errno %d", errno);
				break;
			}
		}
		pthread_rwlock_unlock(&s->lock);
		usleep(rnd(&t->seed) % 400 + idle * 100);
	}
	return NULL;
}

/* REMOVEs some of a child's kevents from the test's queue, or closes it early. */
static void *s_remover(void *arg)
{
	struct sthread *t = arg;
	struct srace *sr = t->sr;

	while (!s_done(sr)) {
		struct sslot *s = &sr->slot[rnd(&t->seed) % S_SLOTS];
		unsigned int i = rnd(&t->seed) % S_NSIG;

		if (s->close_early && !(rnd(&t->seed) % 4)) {
			pthread_rwlock_wrlock(&s->lock);
			if (s->live && s->q >= 0) {
				close(s->q);
				s->q = -1;
				add_ul(&sr->early, 1);
			}
			pthread_rwlock_unlock(&s->lock);
		} else if (s->remove_some) {
			pthread_rwlock_rdlock(&s->lock);
			if (s->live && s->q >= 0) {
				struct ukevent uk = s_kevent(i);
				long ret = kevent_remove(s->q, &uk, 1);

				if (entry_result(sr->r, "REMOVE of a child's signal kevent", ret,
						 errno, &uk, ENOENT, ENOENT) == 1) {
					__atomic_or_fetch(&s->removed, 1u << i, __ATOMIC_RELAXED);
					add_ul(&sr->removes, 1);
				}
			}
			pthread_rwlock_unlock(&s->lock);
		}
		usleep(200 + rnd(&t->seed) % 1000);
	}
	return NULL;
}

static void s_spawn(struct __test_metadata *_metadata, struct srace *sr, struct sslot *s,
		    unsigned long long *seed, unsigned long nth)
{
	struct pollfd pfd;
	int ready[2], q, pidfd, mode = nth % CH_MODES, status;
	char c = 0;
	pid_t pid;

	q = kevent_init_flags(KEVENT_INIT_CLOEXEC);
	ASSERT_LE(0, q);
	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(ready[0]);
		run_child(q, ready[1], mode, *seed ^ getpid());
	}
	close(ready[1]);
	pidfd = syscall(__NR_pidfd_open, pid, 0);
	if (pidfd < 0) {
		race_fail(sr->r, "pidfd_open(): errno %d", errno);
		kill(pid, SIGKILL);	/* ours and not reaped: the pid is still ours */
	}
	/* Until the child is ready: its signals are blocked or taken from then on. */
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	if (pidfd >= 0 && (poll(&pfd, 1, STALL_S * 1000) != 1 || read(ready[0], &c, 1) != 1)) {
		syscall(__NR_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		waitpid(pid, &status, 0);
		race_fail(sr->r, "0022: a child that %s did not start: %s (status %#x)",
			  ch_mode[mode], s_status(status), status);
		close(pidfd);
		pidfd = -1;
	} else if (pidfd < 0) {
		waitpid(pid, &status, 0);
	}
	close(ready[0]);
	if (pidfd < 0) {
		close(q);
		return;
	}
	pthread_rwlock_wrlock(&s->lock);
	s->pid = pid;
	s->pidfd = pidfd;
	s->q = q;
	s->mode = mode;
	s->remove_some = !(rnd(seed) % 3);
	s->close_early = !(rnd(seed) % 6);
	s->removed = s->broken = 0;
	s->born_ns = kevent_now_ns();
	s->live = 1;
	pthread_rwlock_unlock(&s->lock);
}

/* The child ended (or is killed as hung): its status, and what its kevents left. */
static void s_reap(struct srace *sr, struct sslot *s, int hung)
{
	int status = 0, left;

	if (hung)
		syscall(__NR_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	if (waitpid(s->pid, &status, 0) != s->pid)
		race_fail(sr->r, "waitpid(): errno %d", errno);
	else if (hung)
		race_fail(sr->r, "0022: a child that %s did not end in %d s", ch_mode[s->mode],
			  STALL_S);
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		race_fail(sr->r, "0022: a child that %s ended badly: %s (status %#x)",
			  ch_mode[s->mode], s_status(status), status);
	pthread_rwlock_wrlock(&s->lock);
	if (s->q >= 0 && !hung) {
		s_drain(sr, s, 0);
		left = kevent_queued(s->q);
		if (s->mode >= CH_EXEC) {
			/* exec ended each: broken once, unless REMOVEd first. */
			if ((s->broken | s->removed) != S_ALL || (s->broken & s->removed) || left)
				race_fail(sr->r, "0022: after the exec of a child that %s: signal "
					  "kevents broken %#x, removed %#x, %d left on the queue "
					  "(each must be one or the other, and gone)",
					  ch_mode[s->mode], s->broken, s->removed, left);
		} else if (s->broken || left != S_NSIG - __builtin_popcount(s->removed)) {
			/* exit does not end them: they stay, never ready again. */
			race_fail(sr->r, "0022: after the exit of a child that %s: %d signal "
				  "kevents left, %d REMOVEd, broken %#x", ch_mode[s->mode], left,
				  __builtin_popcount(s->removed), s->broken);
		}
	}
	if (s->q >= 0)
		close(s->q);	/* the kevents of a gone process: their signal_struct goes */
	close(s->pidfd);
	s->q = s->pidfd = -1;
	s->live = 0;
	pthread_rwlock_unlock(&s->lock);
}

/*
 * Guards 0022's KEVENT_SIGNAL lifetime fixes (a723dd5, b7de8e7): a kevent
 * keeps the process's signal_struct, not the thread that added it, and
 * stays after the exit, never ready again; an exec ends the process's
 * kevents (broken once, ESRCH); and at most 1024 per process, walked under
 * the siglock. Children add four signal kevents (SIGUSR1, SIGUSR2, SIGTERM,
 * SIGRTMIN+2) to a queue the test holds and to one of their own, with a
 * thread waiting on both and a thread signalling the process itself, and
 * then exit, exit from another thread, exit after the adding thread ended,
 * exec this program (which exits at once), or exec from another thread;
 * meanwhile the test's threads send them bursts of those signals through
 * pidfds, take their events, REMOVE some of their kevents and close some
 * of the queues early. Up to four children at once, one after another
 * while the race lasts, the five ends in turn. A child must end with
 * status 0 (a SIGTERM not taken kills it); after an exec each kevent was
 * broken once or REMOVEd; after an exit the kevents not REMOVEd are still
 * there, none broken.
 */
TEST_F_TIMEOUT(race, signal_kevents_race_exit_and_exec, TEST_LIMIT)
{
	struct race *r = &self->r;
	struct srace *sr = calloc(1, sizeof(*sr));
	struct sthread th[6];
	void *(*fn[6])(void *) = { s_sender, s_sender, s_sender, s_drainer, s_drainer, s_remover };
	pthread_t t[6];
	pthread_rwlockattr_t ra;
	unsigned long long seed;
	unsigned long children = 0;
	sigset_t set;
	int i, live;

	ASSERT_NE(NULL, sr);
	race_go(_metadata, r, "0022 (KEVENT_SIGNAL: the kevent keeps the process's "
		"signal_struct, not the thread; exec ends the kevents; exit leaves them, "
		"never ready)");
	seed = seed_for(r, 999);
	sr->r = r;
	/* The children start with these blocked; nobody signals the test. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGRTMIN + 2);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &set, NULL));
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (i = 0; i < S_SLOTS; i++) {
		pthread_rwlock_init(&sr->slot[i].lock, &ra);
		sr->slot[i].q = sr->slot[i].pidfd = -1;
	}
	for (i = 0; i < 6; i++) {
		th[i].sr = sr;
		th[i].seed = seed_for(r, i);
		ASSERT_EQ(0, pthread_create(&t[i], NULL, fn[i], &th[i]));
	}
	for (;;) {
		struct pollfd pfd[S_SLOTS];
		int idx[S_SLOTS], n = 0;
		long long now = kevent_now_ns();

		for (live = 0, i = 0; i < S_SLOTS; i++) {
			struct sslot *s = &sr->slot[i];

			if (!s->live && !race_over(r) && children < S_CHILDREN) {
				s_spawn(_metadata, sr, s, &seed, children);
				children += s->live;
			}
			if (!s->live)
				continue;
			live++;
			if (now - s->born_ns > STALL_S * 1000000000LL) {
				s_reap(sr, s, 1);
				continue;
			}
			pfd[n] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
			idx[n++] = i;
		}
		if (!live && (race_over(r) || children >= S_CHILDREN))
			break;
		if (n && poll(pfd, n, 10) > 0)
			for (i = 0; i < n; i++)
				if (pfd[i].revents)
					s_reap(sr, &sr->slot[idx[i]], 0);
	}
	__atomic_store_n(&sr->done, 1, __ATOMIC_RELEASE);
	join_threads(t, 6);
	TH_LOG("%lu children (%lu queues closed early), %lu signals sent (%lu to a process "
	       "gone), %lu events taken, %lu kevents REMOVEd", children, sr->early, sr->sent,
	       sr->esrch, sr->drained, sr->removes);
	EXPECT_LT(0, children);
	for (i = 0; i < S_SLOTS; i++)
		pthread_rwlock_destroy(&sr->slot[i].lock);
	free(sr);
}

/* ------------------------------------------------------------------ */
/* 5. Timers against the queue's release.                              */

#define T_THREADS	4
#define T_QUEUES	20000		/* per thread */
#define T_MAX		48

struct tthread {
	struct race *r;
	int *mail;			/* T_THREADS slots: a queue for that thread to close */
	unsigned int id;
	unsigned long long seed;
	unsigned long queues, events, foreign;
};

static void t_check(struct tthread *t, const struct ukevent *ev)
{
	if (ev->type == KEVENT_TIMER && (ev->id.raw[0] == 1 || ev->id.raw[0] == 2) &&
	    ev->id.raw[1] >> 16 == t->id && (ev->id.raw[1] & 0xffff) < T_MAX &&
	    ev->ret_flags == KEVENT_RET_DONE && ev->ret_data[0] >= 1 && !ev->ret_data[1])
		return;
	race_fail(t->r, "a wrong timer event: id %u,%#x type %u ret_flags %#x ret_data %u,%u",
		  ev->id.raw[0], ev->id.raw[1], ev->type, ev->ret_flags, ev->ret_data[0],
		  ev->ret_data[1]);
}

static void *t_churn(void *arg)
{
	struct tthread *t = arg;
	struct ukevent uk[T_MAX];

	while (!race_over(t->r) && t->queues < T_QUEUES) {
		unsigned int n = 1 + rnd(&t->seed) % T_MAX, i, action = rnd(&t->seed) % 4;
		int kq, d, old = __atomic_exchange_n(&t->mail[t->id], -1, __ATOMIC_ACQ_REL);
		long ret;

		/* A queue another thread handed over, maybe while it sleeps on a dup. */
		if (old >= 0) {
			close(old);
			t->foreign++;
		}
		kq = rnd(&t->seed) & 1 ? kevent_init() : kevent_init_flags(0);
		if (kq < 0) {
			race_fail(t->r, "a new queue: errno %d", errno);
			break;
		}
		for (i = 0; i < n; i++)
			uk[i] = kevent_timer(1 + !(rnd(&t->seed) % 4), t->id << 16 | i,
					     rnd(&t->seed) % 3 ? 0 : KEVENT_REQ_ONESHOT);
		ret = kevent_add(kq, uk, n);
		if (ret != n)
			race_fail(t->r, "ADD of %u timers returned %ld (errno %d)", n, ret,
				  ret < 0 ? errno : 0);
		t->queues++;
		switch (action) {
		case 0:			/* closed at once, its timers armed */
			close(kq);
			break;
		case 1:			/* closed while they fire */
			usleep(rnd(&t->seed) % 2000);
			close(kq);
			break;
		default:
			/* Waited on; case 3: the queue itself goes to the next thread to close. */
			d = kq;
			if (action == 3) {
				d = dup(kq);
				old = __atomic_exchange_n(&t->mail[(t->id + 1) % T_THREADS], kq,
							  __ATOMIC_ACQ_REL);
				if (old >= 0)
					close(old);
			}
			while (d >= 0) {
				long got = wait_some(d, uk, 1 + rnd(&t->seed) % 16, &t->seed), j;

				if (got < 0) {
					race_fail(t->r, "a wait on timers: errno %d", errno);
					break;
				}
				for (j = 0; j < got; j++)
					t_check(t, &uk[j]);
				t->events += got;
				if (rnd(&t->seed) % 3 == 0)
					break;
			}
			close(d);
		}
	}
	return NULL;
}

/*
 * Guards 0003's timer teardown: ->dequeue() cancels the hrtimer and waits
 * out a running kevent_timer_fire() before the kevent is freed, a timer
 * whose event waits stops and the harvest re-arms it under the ready lock
 * (9c3b634), and the queue's release destroys every kevent under its
 * mutex. Four threads make queues of 1 to 48 timers of 1 and 2 ms,
 * periodic and oneshot, and close them at once, after up to 2 ms, after
 * waiting on them, or hand the queue to another thread to close while
 * they wait on a dup: the timers fire on other CPUs while their queue is
 * released. Every event is a timer of the thread's own queues; afterwards
 * no kevent timer is left armed, and a new queue works.
 */
TEST_F_TIMEOUT(race, timers_fire_while_their_queue_is_released, TEST_LIMIT)
{
	struct race *r = &self->r;
	struct tthread th[T_THREADS];
	pthread_t t[T_THREADS];
	int mail[T_THREADS], armed_before = kevent_timers_armed(), armed = -1, kq, i;
	unsigned long queues = 0, events = 0, foreign = 0;

	race_go(_metadata, r, "0003 (KEVENT_TIMER: ->dequeue() cancels the hrtimer and waits "
		"out its callback before the kevent is freed; a stopped timer re-armed by the "
		"harvest under the ready lock)");
	for (i = 0; i < T_THREADS; i++) {
		mail[i] = -1;
		th[i] = (struct tthread){ .r = r, .mail = mail, .id = i, .seed = seed_for(r, i) };
	}
	ASSERT_EQ(0, start_threads(t, T_THREADS, t_churn, th, sizeof(th[0])));
	join_threads(t, T_THREADS);
	for (i = 0; i < T_THREADS; i++) {
		if (mail[i] >= 0)
			close(mail[i]);
		queues += th[i].queues;
		events += th[i].events;
		foreign += th[i].foreign;
	}
	TH_LOG("%lu queues of timers released (%lu closed by another thread), %lu events",
	       queues, foreign, events);
	EXPECT_LT(0, queues);
	/* Every queue is closed: no timer of theirs may stay armed. */
	if (armed_before < 0)
		TH_LOG("no /proc/timer_list (it is root's): armed timers not counted");
	if (armed_before >= 0) {
		for (i = 0; i < 200; i++) {
			armed = kevent_timers_armed();
			if (armed <= armed_before)
				break;
			usleep(10 * 1000);
		}
		EXPECT_GE(armed_before, armed) TH_LOG("0003: kevent timers stayed armed after "
						      "their queues were released");
	}
	kq = kevent_init();
	ASSERT_LE(0, kq);
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

/* ------------------------------------------------------------------ */
/* 6. Network AIO completions against the close of queue and sockets.  */

#define N_SLOTS		8
#define N_SLOT		(16 << 10)
#define N_REGION	(N_SLOTS * N_SLOT)
#define N_ROUNDS	2000

#define N_KQ		0x1
#define N_S0		0x2
#define N_S1		0x4

struct nround {
	struct race *r;
	int kq, s[2];
	int over;
	unsigned int closed;			/* N_*: what the closer closed */
	unsigned char *tx, *rx0, *rx1;		/* s[0] sends tx; rx0: s[0] receives */
	unsigned int size[3][N_SLOTS];		/* tx, rx0, rx1: each request's size */
	unsigned int close_us;
	unsigned long long closer_seed;
	unsigned long started, completed, broken, bytes;
};

struct nthread {
	struct nround *n;
	unsigned long long seed;
};

static int n_done(struct nround *n)
{
	return __atomic_load_n(&n->over, __ATOMIC_ACQUIRE) || race_stopped(n->r);
}

/* Bytes of the streams: each byte one more than the one before, modulo 251. */
static int n_contiguous(const unsigned char *b, unsigned int len)
{
	unsigned int i;

	for (i = 1; i < len; i++)
		if (b[i] != (b[i - 1] + 1) % 251)
			return 0;
	return 1;
}

static int n_conn_errno(unsigned int err)
{
	return err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ECONNABORTED ||
	       err == ESHUTDOWN;
}

/* A completion: its buffer is one the test gave, its count and bytes make sense. */
static void n_event(struct nround *n, const struct ukevent *ev)
{
	unsigned char *regions[3] = { n->tx, n->rx0, n->rx1 };
	const int socks[3] = { n->s[0], n->s[0], n->s[1] };
	unsigned char *p = (unsigned char *)(unsigned long)ev->ptr;
	unsigned int which, slot, size, done = ev->ret_data[0], err = ev->ret_data[1];

	for (which = 0; which < 3; which++)
		if (p >= regions[which] && p < regions[which] + N_REGION &&
		    (p - regions[which]) % N_SLOT == 0)
			break;
	if (which == 3 || ev->type != KEVENT_NAIO || ev->id.raw[0] != (unsigned int)socks[which] ||
	    ev->event != (which ? KEVENT_SOCKET_RECV : KEVENT_SOCKET_SEND)) {
		race_fail(n->r, "a completion the test did not start: type %u id %u,%u event %#x",
			  ev->type, ev->id.raw[0], ev->id.raw[1], ev->event);
		return;
	}
	slot = (p - regions[which]) / N_SLOT;
	size = n->size[which][slot];
	if (ev->ret_flags == KEVENT_RET_DONE && !err) {
		if (which == 0 ? done != size : done > size)
			race_fail(n->r, "0009: a %s of %u bytes completed with %u",
				  which ? "receive" : "send", size, done);
	} else if (ev->ret_flags != (KEVENT_RET_DONE | KEVENT_RET_BROKEN) || !n_conn_errno(err) ||
		   done > size) {
		race_fail(n->r, "0009: a %s of %u bytes ended with ret_flags %#x, %u bytes, "
			  "errno %u", which ? "receive" : "send", size, ev->ret_flags, done, err);
		return;
	} else {
		add_ul(&n->broken, 1);
	}
	if (which && !n_contiguous(p, done))
		race_fail(n->r, "0009: a receive of %u bytes holds bytes out of the stream's "
			  "order", done);
	add_ul(&n->completed, 1);
	add_ul(&n->bytes, done);
}

static void *n_waiter(void *arg)
{
	struct nthread *t = arg;
	struct nround *n = t->n;
	struct ukevent out[8];

	while (!n_done(n)) {
		long got = wait_some(n->kq, out, 1 + rnd(&t->seed) % 8, &t->seed), i;

		if (got < 0) {
			if (errno != EBADF)
				race_fail(n->r, "a wait for completions: errno %d", errno);
			break;
		}
		for (i = 0; i < got; i++)
			n_event(n, &out[i]);
	}
	return NULL;
}

/* aio_send() on s[0]: one stream of bytes, in order, from fresh slots. */
static void *n_sender(void *arg)
{
	struct nthread *t = arg;
	struct nround *n = t->n;
	unsigned long long off = 0;
	unsigned int slot;

	for (slot = 0; slot < N_SLOTS && !n_done(n); slot++) {
		unsigned int size = 1 + rnd(&t->seed) % N_SLOT, i;
		unsigned char *b = n->tx + slot * N_SLOT;

		for (i = 0; i < size; i++)
			b[i] = (off + i) % 251;
		n->size[0][slot] = size;
		if (kevent_aio_send(n->kq, n->s[0], b, size, 0) >= 0) {
			off += size;
			add_ul(&n->started, 1);
		} else if (errno == EBADF || errno == ENOTCONN) {
			break;	/* the closer was here */
		} else {
			race_fail(n->r, "aio_send(): errno %d", errno);
			break;
		}
		if (rnd(&t->seed) & 1)
			usleep(rnd(&t->seed) % 300);
	}
	return NULL;
}

/* aio_recv() on s[@which - 1], into fresh slots. */
static void n_receive(struct nthread *t, int which)
{
	struct nround *n = t->n;
	unsigned char *region = which == 1 ? n->rx0 : n->rx1;
	int sock = which == 1 ? n->s[0] : n->s[1];
	unsigned int slot;

	for (slot = 0; slot < N_SLOTS && !n_done(n); slot++) {
		unsigned int size = 1 + rnd(&t->seed) % N_SLOT;

		n->size[which][slot] = size;
		if (kevent_aio_recv(n->kq, sock, region + slot * N_SLOT, size,
				    rnd(&t->seed) & 1 ? KEVENT_NAIO_RECV_SOME : 0) >= 0) {
			add_ul(&n->started, 1);
		} else if (errno == EBADF || errno == ENOTCONN) {
			break;
		} else {
			race_fail(n->r, "aio_recv(): errno %d", errno);
			break;
		}
		if (rnd(&t->seed) & 1)
			usleep(rnd(&t->seed) % 300);
	}
}

static void *n_receiver0(void *arg)
{
	n_receive(arg, 1);
	return NULL;
}

static void *n_receiver1(void *arg)
{
	n_receive(arg, 2);
	return NULL;
}

/* send() on s[1]: the stream s[0]'s receives take. */
static void *n_writer(void *arg)
{
	struct nthread *t = arg;
	struct nround *n = t->n;
	unsigned long long off = 0;
	unsigned char buf[2048];

	while (!n_done(n) && off < 256 << 10) {
		size_t len = 1 + rnd(&t->seed) % sizeof(buf), i;
		ssize_t w;

		for (i = 0; i < len; i++)
			buf[i] = (off + i) % 251;
		w = send(n->s[1], buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			off += w;
		else if (w < 0 && errno == EAGAIN)
			usleep(100);
		else
			break;	/* closed or shut down by the closer */
	}
	return NULL;
}

static void n_close(struct nround *n, unsigned int what, int abort)
{
	int fd = what == N_KQ ? n->kq : what == N_S0 ? n->s[0] : n->s[1];

	if (n->closed & what)
		return;
	if (abort)
		close_abort(fd);
	else
		close(fd);
	__atomic_or_fetch(&n->closed, what, __ATOMIC_RELEASE);
}

static void *n_closer(void *arg)
{
	struct nround *n = arg;
	unsigned long long *s = &n->closer_seed;
	unsigned int steps = 1 + rnd(s) % 3;

	usleep(n->close_us);
	while (steps--) {
		switch (rnd(s) % 6) {
		case 0:
			n_close(n, N_KQ, 0);		/* cancels every request */
			break;
		case 1:
			if (!(n->closed & N_S0))
				shutdown(n->s[0], SHUT_RDWR);
			break;
		case 2:
			if (!(n->closed & N_S1))
				shutdown(n->s[1], SHUT_WR);
			break;
		case 3:
			n_close(n, N_S1, 1);		/* a reset */
			break;
		case 4:
			n_close(n, N_S0, 0);		/* the requests keep the socket */
			break;
		case 5:
			n_close(n, N_S1, 0);
			break;
		}
		if (rnd(s) & 1)
			usleep(rnd(s) % 500);
	}
	return NULL;
}

/* A new queue and a new connection move 64 KiB each way, byte for byte. */
static void n_transfer_works(struct __test_metadata *_metadata)
{
	const size_t len = 64 << 10;
	unsigned char *tx, *rx;
	struct ukevent ev;
	int kq = kevent_init(), s[2], i, flags = 0;
	size_t j;

	ASSERT_LE(0, kq);
	ASSERT_EQ(0, kevent_tcp_pair(s));
	tx = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, tx);
	rx = tx + len;
	for (j = 0; j < len; j++)
		tx[j] = j * 7 + 3;
	ASSERT_LE(0, kevent_aio_recv(kq, s[1], rx, len, 0));
	ASSERT_LE(0, kevent_aio_send(kq, s[0], tx, len, 0));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, kevent_wait(kq, &ev, 1, SOON));
		EXPECT_EQ(KEVENT_RET_DONE, ev.ret_flags);
		EXPECT_EQ(len, ev.ret_data[0]);
		flags |= ev.event;
	}
	EXPECT_EQ(KEVENT_SOCKET_SEND | KEVENT_SOCKET_RECV, flags);
	EXPECT_EQ(0, memcmp(tx, rx, len));
	close(kq);
	close(s[0]);
	close(s[1]);
	munmap(tx, 2 * len);
}

/*
 * Guards 0009's network AIO lifetimes (8814031, 4678e04): a request holds
 * its socket's file; closing the queue cancels every request without
 * waiting for the worker, which sees `cancelled` when its step returns;
 * a completion's kevent_signal() is ordered against the kevent's removal
 * by req->lock; pages are unpinned once, at completion or cancel. Each
 * round: a queue and a loopback TCP pair with SO_ASYNC_SOCK; aio_send()
 * on one end, aio_recv() on both (RECV_SOME or whole), plain send() on
 * the other end, two threads taking completions; and a closer that, at a
 * random moment, closes the queue, shuts down or closes either socket, or
 * resets one, in a random order. Each completion is one the test started,
 * with a count and an errno that fit, and the bytes of a receive in the
 * stream's order. Afterwards nothing stays pinned, no descriptor leaked,
 * and a new transfer moves its bytes.
 */
TEST_F_TIMEOUT(race, naio_completions_race_the_close_of_queue_and_sockets, TEST_LIMIT)
{
	void *(*fn[])(void *) = { n_waiter, n_waiter, n_sender, n_receiver0, n_receiver1,
				  n_writer };
	const unsigned int nt = sizeof(fn) / sizeof(fn[0]);
	struct race *r = &self->r;
	unsigned long rounds = 0, started = 0, completed = 0, broken = 0, bytes = 0;
	unsigned char *tx;
	long long pinned;

	race_go(_metadata, r, "0009 (network AIO: a request holds its socket; closing the "
		"queue cancels requests without waiting for the worker; completion against "
		"removal under req->lock; pages unpinned once)");
	tx = mmap(NULL, N_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, tx);
	while (!race_over(r) && rounds < N_ROUNDS) {
		struct nround n = { .r = r, .tx = tx };
		struct nthread th[8];
		pthread_t t[8], closer;
		unsigned long long seed = seed_for(r, rounds);
		unsigned int i, round_us;

		n.kq = rounds & 1 ? kevent_init_flags(0) : kevent_init();
		ASSERT_LE(0, n.kq);
		ASSERT_EQ(0, kevent_tcp_pair(n.s));
		/* Fresh pages to receive into: a cancelled step may still be writing the old. */
		n.rx0 = mmap(NULL, 2 * N_REGION, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, n.rx0);
		n.rx1 = n.rx0 + N_REGION;
		round_us = 1000 + rnd(&seed) % 8000;
		n.close_us = rnd(&seed) % round_us;
		n.closer_seed = seed_for(r, rounds * 16 + 15);
		for (i = 0; i < nt; i++) {
			th[i].n = &n;
			th[i].seed = seed_for(r, rounds * 16 + i);
			ASSERT_EQ(0, pthread_create(&t[i], NULL, fn[i], &th[i]));
		}
		ASSERT_EQ(0, pthread_create(&closer, NULL, n_closer, &n));
		usleep(round_us);
		pthread_join(closer, NULL);
		__atomic_store_n(&n.over, 1, __ATOMIC_RELEASE);
		join_threads(t, nt);
		if (!(n.closed & N_KQ))
			close(n.kq);
		if (!(n.closed & N_S0))
			close(n.s[0]);
		if (!(n.closed & N_S1))
			close(n.s[1]);
		munmap(n.rx0, 2 * N_REGION);
		rounds++;
		started += n.started;
		completed += n.completed;
		broken += n.broken;
		bytes += n.bytes;
	}
	munmap(tx, N_REGION);
	TH_LOG("%lu rounds: %lu requests started, %lu completed (%lu ended by an error), "
	       "%lu bytes", rounds, started, completed, broken, bytes);
	EXPECT_LT(0, rounds);
	/* Every request ended or was cancelled: its pages are let go. */
	pinned = kevent_wait_unpinned(2 * SOON);
	EXPECT_GE(0, pinned) TH_LOG("0009: %lld pages stayed pinned", pinned);
	if (pinned < 0)
		TH_LOG("no pin counters in /proc/vmstat: pinned pages not counted");
	n_transfer_works(_metadata);
}

TEST_HARNESS_MAIN
