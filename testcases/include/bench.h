/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * bench.h: what every benchmark program shares: a clock, a system call
 * counter, CPU time, a seeded random stream, and the result line.
 *
 * Inside UML a system call costs tens of microseconds, so how many calls a
 * method needs per event says as much as its rate. No counter in the
 * kernel tells a process how many calls it made, so each program counts
 * its own: every call in a timed loop goes through COUNTED(), and the
 * clock reads that only measure are left out (the same for every method).
 *
 * Results are KTAP (one test per method: ok only if the method's work was
 * checked, events and bytes counted) plus one diagnostic line per figure:
 *
 *   # bench: scenario=readiness method=epoll_lt fds=2000 events=20000 ...
 *
 * lab/kevent_lab/bench.py reads these lines from the lab's logs.
 */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kselftest.h"

/* System calls made by the program in its timed loops. */
static unsigned long long bench_calls;

/* Evaluates @call once, counting it as one system call. */
/* Atomic: bench_accept's servers count from several threads. */
#define COUNTED(call)	(__atomic_fetch_add(&bench_calls, 1, __ATOMIC_RELAXED), (call))

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* User plus system CPU time of this process so far, in seconds. */
static inline double bench_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* A measurement: clock and counters at its start. */
struct bench_span {
	double t0, cpu0;
	unsigned long long calls0;
	double seconds, cpu;
	unsigned long long calls;
};

static inline void bench_start(struct bench_span *s)
{
	s->calls0 = bench_calls;
	s->cpu0 = bench_cpu();
	s->t0 = bench_now();
}

static inline void bench_stop(struct bench_span *s)
{
	s->seconds = bench_now() - s->t0;
	s->cpu = bench_cpu() - s->cpu0;
	s->calls = bench_calls - s->calls0;
}

/*
 * xorshift64*: every method of a run replays the same activity from the
 * same seed, so they all do the same work.
 */
static inline uint64_t bench_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Room for @n descriptors (we run as root in the guest). */
static inline int bench_raise_nofile(unsigned long n)
{
	struct rlimit rl = { n, n };

	return setrlimit(RLIMIT_NOFILE, &rl);
}

/* One result line: "# bench: scenario=S method=M " and then @fmt. */
static inline void bench_line(const char *scenario, const char *method,
			      const char *fmt, ...)
{
	char rest[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rest, sizeof(rest), fmt, ap);
	va_end(ap);
	ksft_print_msg("bench: scenario=%s method=%s %s\n", scenario, method, rest);
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @q quantile (0..1) of @n samples, which it sorts; 0 without samples. */
static inline double bench_quantile(double *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	i = (size_t)(q * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/*
 * A figure measured several times, the methods taking turns (forwards,
 * then backwards), so that a machine whose speed drifts meanwhile moves
 * all of them alike: the median is reported, and the spread,
 * (max - min) / median, says how far to trust a difference.
 */
#define BENCH_REPEATS	3

struct bench_reps {
	double v[BENCH_REPEATS];
	int n;
};

static inline void bench_rep_add(struct bench_reps *r, double v)
{
	if (r->n < BENCH_REPEATS)
		r->v[r->n++] = v;
}

static inline double bench_rep_median(struct bench_reps *r)
{
	double v[BENCH_REPEATS];

	memcpy(v, r->v, sizeof(v));
	return bench_quantile(v, r->n, 0.5);
}

static inline double bench_rep_spread(struct bench_reps *r)
{
	double lo = r->v[0], hi = r->v[0], med = bench_rep_median(r);
	int i;

	for (i = 1; i < r->n; i++) {
		lo = r->v[i] < lo ? r->v[i] : lo;
		hi = r->v[i] > hi ? r->v[i] : hi;
	}
	return med > 0 ? (hi - lo) / med : 0;
}

/* Method @i of @n in turn @turn: forwards on even turns, backwards on odd. */
static inline int bench_turn_order(int turn, int i, int n)
{
	return turn % 2 ? n - 1 - i : i;
}

/* Does the command line ask for @method (no method named: all of them)? */
static inline int bench_wanted(const char *method, char **names, int n)
{
	int i;

	if (!n)
		return 1;
	for (i = 0; i < n; i++)
		if (!strcmp(names[i], method))
			return 1;
	return 0;
}

#endif /* BENCH_H */
