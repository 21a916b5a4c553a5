// SPDX-License-Identifier: GPL-2.0+
/*
 * bench_ready: readiness throughput, after Eric Dumazet's epoll_bench.
 *
 *   bench_ready PAIRS EVENTS [METHOD...]
 *
 * PAIRS connected AF_UNIX stream socket pairs; one end of each is watched
 * by the method. Activity is random: each round writes one byte to 1..64
 * randomly chosen pairs (a pair may be picked twice), then the method waits
 * until every pair that got data has been reported and read. The rounds
 * come from one seed, so every method does exactly the same work, and the
 * number of events it must report is known: one per distinct pair of a
 * round. A method passes only if it reported exactly those events, none
 * twice and none without data, and every byte written was read.
 *
 * The methods take turns, BENCH_REPEATS times (forwards, then backwards:
 * see bench.h), each turn at least EVENTS / BENCH_REPEATS events. Each
 * method's figure is the median events per second of its turns and their
 * spread, with the system calls per event (the writes that make the
 * activity and the reads that consume it included: the same for every
 * method) and the CPU time per event. Methods: see bench_waiters.h.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_waiters.h"

#define MAX_BURST	64
#define SEED		0x6b6576656e74ULL	/* "kevent" */

struct pairs {
	unsigned int n;
	int *rd;		/* the watched ends */
	int *wr;
	unsigned int *pending;	/* bytes written and not yet read, per pair */
};

static int make_pairs(struct pairs *p, unsigned int n)
{
	unsigned int i;

	p->n = n;
	p->rd = calloc(n, sizeof(int));
	p->wr = calloc(n, sizeof(int));
	p->pending = calloc(n, sizeof(unsigned int));
	if (!p->rd || !p->wr || !p->pending)
		return -1;
	for (i = 0; i < n; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
			return -1;
		p->rd[i] = sv[0];
		p->wr[i] = sv[1];
	}
	return 0;
}

/* After a method that failed half-way: empty every pair for the next one. */
static void drain_pairs(struct pairs *p)
{
	char buf[256];
	unsigned int i;

	for (i = 0; i < p->n; i++) {
		while (p->pending[i] && read(p->rd[i], buf, sizeof(buf)) > 0)
			;
		p->pending[i] = 0;
	}
}

struct tally {
	unsigned long long events, expected, bytes_written, bytes_read;
	unsigned long long twice, empty, rounds;
	char err[128];
};

/* One method over the same rounds as every other. */
static void run_method(const struct waiter_ops *ops, struct waiter *w, struct pairs *p,
		       unsigned long long want_events, struct tally *t,
		       struct bench_span *span)
{
	unsigned int *ready = calloc(p->n, sizeof(unsigned int));
	uint64_t rng = SEED;
	char buf[256];

	memset(t, 0, sizeof(*t));
	bench_start(span);
	while (t->events < want_events && !t->err[0]) {
		unsigned int burst = 1 + bench_rand(&rng) % MAX_BURST, outstanding = 0, k;

		for (k = 0; k < burst; k++) {
			unsigned int i = bench_rand(&rng) % p->n;

			if (COUNTED(write(p->wr[i], "x", 1)) != 1) {
				snprintf(t->err, sizeof(t->err), "write: %s", strerror(errno));
				break;
			}
			outstanding += !p->pending[i]++;
			t->bytes_written++;
		}
		t->expected += outstanding;
		t->rounds++;
		while (outstanding && !t->err[0]) {
			long n = ops->wait(w, ready, p->n), j;

			if (n < 0) {
				snprintf(t->err, sizeof(t->err), "wait: %s", strerror(errno));
				break;
			}
			for (j = 0; j < n; j++) {
				unsigned int i = ready[j];
				ssize_t r;

				if (!p->pending[i]) {
					/* Reported without data: a wrong (or stale) event. */
					t->twice++;
					continue;
				}
				r = COUNTED(read(p->rd[i], buf, sizeof(buf)));
				if (r <= 0) {
					t->empty++;
					continue;
				}
				if ((unsigned int)r != p->pending[i])
					snprintf(t->err, sizeof(t->err),
						 "pair %u: read %zd of %u bytes", i, r, p->pending[i]);
				p->pending[i] = 0;
				t->bytes_read += r;
				t->events++;
				outstanding--;
				if (ops->consumed)
					ops->consumed(w, i);
			}
		}
	}
	bench_stop(span);
	free(ready);
}

/* What a method did over every turn. */
struct result {
	struct tally sum;
	struct bench_reps rate, calls, cpu;
	int state;		/* 0 ran, or WAITER_UNSUPPORTED / -1 when it could not */
	int bad;		/* a turn that failed its check */
	char why[320];
};

static void add_turn(struct result *r, const struct tally *t, const struct bench_span *s)
{
	int ok = !t->err[0] && t->events == t->expected && !t->twice && !t->empty &&
		 t->bytes_read == t->bytes_written && t->events;

	if (!ok && !r->bad)
		snprintf(r->why, sizeof(r->why),
			 "%llu events of %llu expected, %llu stale, %llu empty reads, %llu of %llu bytes%s%s",
			 t->events, t->expected, t->twice, t->empty, t->bytes_read,
			 t->bytes_written, t->err[0] ? ": " : "", t->err);
	r->bad |= !ok;
	r->sum.events += t->events;
	r->sum.bytes_read += t->bytes_read;
	r->sum.rounds += t->rounds;
	bench_rep_add(&r->rate, t->events / s->seconds);
	bench_rep_add(&r->calls, (double)s->calls / t->events);
	bench_rep_add(&r->cpu, s->cpu * 1e6 / t->events);
}

static void report(const char *method, unsigned int pairs, struct result *r)
{
	int ok = !r->bad && r->rate.n == BENCH_REPEATS;

	if (r->state == WAITER_UNSUPPORTED) {
		ksft_test_result_skip("%s (%s)\n", method, r->why);
		return;
	}
	if (r->bad || r->state)
		ksft_print_msg("%s: %s\n", method, r->why);
	if (r->rate.n)
		bench_line("readiness", method,
			   "fds=%u events=%llu bytes=%llu rounds=%llu turns=%d rate=%.1f spread=%.3f calls_per_event=%.3f cpu_us_per_event=%.2f valid=%d",
			   pairs, r->sum.events, r->sum.bytes_read, r->sum.rounds, r->rate.n,
			   bench_rep_median(&r->rate), bench_rep_spread(&r->rate),
			   bench_rep_median(&r->calls), bench_rep_median(&r->cpu), ok);
	ksft_test_result(ok, "%s\n", method);
}

int main(int argc, char **argv)
{
	struct result res[N_WAITER_METHODS] = { 0 };
	unsigned long long want;
	struct pairs p;
	unsigned int i, n;
	int turn;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || (n = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: %s PAIRS EVENTS [METHOD...]\n", argv[0]);
		return 2;
	}
	/* EVENTS in all, over BENCH_REPEATS turns. */
	want = strtoull(argv[2], NULL, 0) / BENCH_REPEATS;
	ksft_print_header();
	bench_raise_nofile(2 * n + 64);
	if (make_pairs(&p, n))
		ksft_exit_fail_msg("%u socket pairs: %s\n", n, strerror(errno));
	ksft_set_plan(N_WAITER_METHODS);
	for (turn = 0; turn < BENCH_REPEATS; turn++) {
		for (i = 0; i < N_WAITER_METHODS; i++) {
			unsigned int m = bench_turn_order(turn, i, N_WAITER_METHODS);
			const struct waiter_ops *ops = &waiter_methods[m];
			struct waiter w = { .name = ops->name, .fds = p.rd, .n = n };
			struct result *r = &res[m];
			struct bench_span span;
			struct tally t;

			if (!bench_wanted(ops->name, argv + 3, argc - 3) || r->state)
				continue;
			r->state = ops->open(&w);
			if (r->state) {
				snprintf(r->why, sizeof(r->why), "setting up: %s %s",
					 strerror(errno), w.why);
				ops->close(&w);
				continue;
			}
			run_method(ops, &w, &p, want, &t, &span);
			ops->close(&w);
			drain_pairs(&p);
			add_turn(r, &t, &span);
		}
	}
	for (i = 0; i < N_WAITER_METHODS; i++) {
		if (bench_wanted(waiter_methods[i].name, argv + 3, argc - 3))
			report(waiter_methods[i].name, n, &res[i]);
		else
			ksft_test_result_skip("%s (not asked for)\n", waiter_methods[i].name);
	}
	ksft_finished();
}
