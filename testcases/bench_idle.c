// SPDX-License-Identifier: GPL-2.0+
/*
 * bench_idle: what one wait costs while many descriptors are watched and
 * idle.
 *
 *   bench_idle MAX_ITERS COUNT[,COUNT...] [METHOD...]
 *
 * For each COUNT, COUNT idle UDP sockets (never readable) and one end of a
 * socket pair are watched. Each iteration writes a byte into the pair, waits
 * (the wait must return exactly that one event) and reads the byte. The same
 * loop without the wait, run just before with as many iterations, is the
 * baseline; the difference per iteration is the cost of the wait:
 *
 *   wait_us = (loop - baseline) / iterations
 *
 * epoll and kevent keep a ready list and should stay flat; poll() and
 * select() look at every descriptor on every call. The number of iterations
 * is fitted to about 0.15 s per method (at least 16, at most MAX_ITERS),
 * loop and baseline run in alternating blocks of 32, and the methods take
 * BENCH_REPEATS turns (see bench.h): the median and spread are reported.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_waiters.h"

#define MAX_COUNTS	8
#define BUDGET_S	0.15	/* per method and turn */
#define BLOCK		32

struct loop_result {
	unsigned long iters, wrong;
	char err[128];
};

/* @iters rounds of write, wait (if @ops), read on the pair. */
static void loop(const struct waiter_ops *ops, struct waiter *w, int rd, int wr,
		 unsigned int active, unsigned long iters, struct loop_result *r)
{
	unsigned int ready[4];
	unsigned long i;
	char c;

	for (i = 0; i < iters && !r->err[0]; i++) {
		if (COUNTED(write(wr, "x", 1)) != 1) {
			snprintf(r->err, sizeof(r->err), "write: %s", strerror(errno));
			break;
		}
		if (ops) {
			long n = ops->wait(w, ready, 4);

			if (n < 0) {
				snprintf(r->err, sizeof(r->err), "wait: %s", strerror(errno));
				break;
			}
			/* Exactly the active pair, once: anything else is wrong. */
			if (n != 1 || ready[0] != active)
				r->wrong++;
		}
		if (COUNTED(read(rd, &c, 1)) != 1) {
			snprintf(r->err, sizeof(r->err), "read: %s", strerror(errno));
			break;
		}
		if (ops && ops->consumed)
			ops->consumed(w, active);
		r->iters++;
	}
}

/* Adds the time, CPU and calls of @iters rounds to @acc. */
static void timed(const struct waiter_ops *ops, struct waiter *w, int rd, int wr,
		  unsigned int active, unsigned long iters, struct loop_result *r,
		  struct bench_span *acc)
{
	struct bench_span s;

	bench_start(&s);
	loop(ops, w, rd, wr, active, iters, r);
	bench_stop(&s);
	acc->seconds += s.seconds;
	acc->cpu += s.cpu;
	acc->calls += s.calls;
}

/* One method at one count, over every turn. */
struct result {
	struct bench_reps wait_us, iter_us, base_us, calls;
	unsigned long iters, wrong, done;
	int state;		/* 0 ran, or WAITER_UNSUPPORTED / -1 when it could not */
	char why[400];
};

static void measure(const struct waiter_ops *ops, int *fds, unsigned int count, int wr,
		    unsigned long max_iters, struct result *res)
{
	struct waiter w = { .name = ops->name, .fds = fds, .n = count + 1 };
	struct loop_result cal = { 0 }, base = { 0 }, r = { 0 };
	struct bench_span s_cal = { 0 }, s_base = { 0 }, s = { 0 };
	unsigned long iters, done;
	double per;

	res->state = ops->open(&w);
	if (res->state) {
		snprintf(res->why, sizeof(res->why), "%s%s%s", res->state == WAITER_UNSUPPORTED ?
			 "" : strerror(errno), res->state == WAITER_UNSUPPORTED ? "" : " ", w.why);
		ops->close(&w);
		return;
	}
	/* A few rounds tell how many fit in the budget. */
	timed(ops, &w, fds[count], wr, count, 4, &cal, &s_cal);
	per = s_cal.seconds / 4;
	iters = per > 0 ? BUDGET_S / per : max_iters;
	iters = iters < 16 ? 16 : iters > max_iters ? max_iters : iters;
	/*
	 * Baseline and method in alternating blocks, so that a machine that
	 * gets slower or faster meanwhile moves both alike.
	 */
	for (done = 0; done < iters; done += BLOCK) {
		unsigned long k = iters - done < BLOCK ? iters - done : BLOCK;

		timed(NULL, NULL, fds[count], wr, count, k, &base, &s_base);
		timed(ops, &w, fds[count], wr, count, k, &r, &s);
	}
	ops->close(&w);

	res->iters += iters;
	res->done += r.iters;
	res->wrong += r.wrong + cal.wrong;
	if ((cal.err[0] || base.err[0] || r.err[0]) && !res->why[0])
		snprintf(res->why, sizeof(res->why), "%s%s%s", cal.err, base.err, r.err);
	if (base.iters != iters && !res->why[0])
		snprintf(res->why, sizeof(res->why), "baseline: %lu of %lu iterations",
			 base.iters, iters);
	bench_rep_add(&res->wait_us, (s.seconds - s_base.seconds) * 1e6 / iters);
	bench_rep_add(&res->iter_us, s.seconds * 1e6 / iters);
	bench_rep_add(&res->base_us, s_base.seconds * 1e6 / iters);
	bench_rep_add(&res->calls, (double)(s.calls - s_base.calls) / iters);
}

static void report(const char *method, unsigned int count, struct result *res)
{
	int ok = !res->state && !res->why[0] && !res->wrong && res->done == res->iters &&
		 res->wait_us.n == BENCH_REPEATS;

	if (res->state == WAITER_UNSUPPORTED) {
		ksft_test_result_skip("%s.%u (%s)\n", method, count, res->why);
		return;
	}
	if (!ok)
		ksft_print_msg("%s.%u: %lu of %lu iterations, %lu wrong waits %s\n", method, count,
			       res->done, res->iters, res->wrong, res->why);
	if (res->wait_us.n)
		bench_line("idle", method,
			   "fds=%u iters=%lu turns=%d iter_us=%.2f base_us=%.2f wait_us=%.2f spread=%.3f calls_per_wait=%.3f valid=%d",
			   count, res->iters, res->wait_us.n, bench_rep_median(&res->iter_us),
			   bench_rep_median(&res->base_us), bench_rep_median(&res->wait_us),
			   bench_rep_spread(&res->wait_us), bench_rep_median(&res->calls), ok);
	ksft_test_result(ok, "%s.%u\n", method, count);
}

int main(int argc, char **argv)
{
	unsigned int counts[MAX_COUNTS], ncounts = 0, max = 0, i, m;
	unsigned long max_iters;
	char *list, *tok;
	int *fds, sv[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: %s MAX_ITERS COUNT[,COUNT...] [METHOD...]\n", argv[0]);
		return 2;
	}
	max_iters = strtoul(argv[1], NULL, 0);
	list = strdup(argv[2]);
	for (tok = strtok(list, ","); tok && ncounts < MAX_COUNTS; tok = strtok(NULL, ",")) {
		counts[ncounts] = atoi(tok);
		if (counts[ncounts] > max)
			max = counts[ncounts];
		ncounts++;
	}
	ksft_print_header();
	ksft_set_plan(ncounts * N_WAITER_METHODS);
	bench_raise_nofile(max + 64);
	/* The idle ones first, the active one last: poll() walks past them all. */
	fds = calloc(max + 1, sizeof(int));
	if (!fds)
		ksft_exit_fail_msg("no memory\n");
	/* The pair first: with low descriptors select() can watch small counts. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		ksft_exit_fail_msg("socketpair: %s\n", strerror(errno));
	for (i = 0; i < max; i++) {
		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0)
			ksft_exit_fail_msg("idle socket %u: %s\n", i, strerror(errno));
	}

	for (i = 0; i < ncounts; i++) {
		unsigned int count = counts[i];
		/* The first COUNT idle sockets, then the active end. */
		int saved = fds[count];

		struct result res[N_WAITER_METHODS];
		int turn;

		memset(res, 0, sizeof(res));
		fds[count] = sv[0];
		for (turn = 0; turn < BENCH_REPEATS; turn++)
			for (m = 0; m < N_WAITER_METHODS; m++) {
				unsigned int k = bench_turn_order(turn, m, N_WAITER_METHODS);
				const struct waiter_ops *ops = &waiter_methods[k];

				if (bench_wanted(ops->name, argv + 3, argc - 3) && !res[k].state)
					measure(ops, fds, count, sv[1], max_iters, &res[k]);
			}
		for (m = 0; m < N_WAITER_METHODS; m++) {
			if (bench_wanted(waiter_methods[m].name, argv + 3, argc - 3))
				report(waiter_methods[m].name, count, &res[m]);
			else
				ksft_test_result_skip("%s.%u (not asked for)\n",
						      waiter_methods[m].name, count);
		}
		fds[count] = saved;
	}
	ksft_finished();
}
