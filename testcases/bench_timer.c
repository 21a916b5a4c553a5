// SPDX-License-Identifier: GPL-2.0+
/*
 * bench_timer: many periodic timers, as kevent delivers them and as a
 * program gets them from timerfd through epoll.
 *
 *   bench_timer TIMERS PERIOD_MS SECONDS [METHOD...]
 *
 *   kevent_timer   TIMERS periodic KEVENT_TIMERs on one queue; an event
 *                  carries the number of periods that expired (ret_data[0]),
 *                  so nothing is read
 *   timerfd_epoll  TIMERS timerfds in one epoll set; each ready timerfd is
 *                  read() for its expiration count
 *
 * Both sets run on one schedule: the kevent timers are armed by one
 * KEVENT_CTL_ADD, the timerfds on the same absolute base (TFD_TIMER_ABSTIME),
 * so both face bursts of TIMERS simultaneous expirations. For SECONDS the
 * program takes what is ready and notes, for every event, how late it came:
 * the time it was handed over minus the time the oldest expiration it
 * reports was due (base + n * period; for kevent the base is taken just
 * before the ADD, so its lateness is overstated by at most arm_ms). Figures:
 * events delivered per second (the headline: a timer that fires while its
 * last event is still queued is delivered once, with a count; when the
 * host keeps up, that is the nominal TIMERS * 1000 / PERIOD_MS), lateness
 * median and 99th percentile, system calls and CPU time per event.
 * (expirations= counts what the timed part delivered, backlog included.)
 *
 * Check: after every batch, no timer may have reported more expirations
 * than were due by then; after the timed part, each timer is looked at
 * once more and must have reported all that were due by then (one may be
 * in flight). Early, lost or invented expirations fail the method.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "bench_kevent.h"

#define MAX_SAMPLES	(1 << 21)
#define CHECK_S		10.0	/* at most this long for the end check */

struct timers {
	unsigned int n, period_ms;
	double *start;			/* just before each timer was armed */
	double *armed;			/* just after */
	double *seen;			/* the end check: when it was looked at */
	unsigned int *touched;		/* timers reported since the last settle() */
	unsigned int ntouched;
	unsigned long long early;	/* expirations reported before they were due */
	double arm_s;			/* how long arming them all took */
	unsigned long long *count;	/* expirations reported, per timer */
	int *fd;			/* timerfd_epoll: the timerfds */
	double *late;			/* lateness samples, seconds */
	size_t samples;
	unsigned long long events, expirations, unknown;
	/* as they were when the timed part ended */
	unsigned long long timed_events, timed_expirations;
	size_t timed_samples;
	char err[128];
};

/* Expirations of timer @i due by @t, counted from before (or after) it was armed. */
static long long due(const struct timers *T, unsigned int i, double t, int from_armed)
{
	return (long long)((t - (from_armed ? T->armed[i] : T->start[i])) * 1e3 / T->period_ms);
}

/* An event for timer @i, handed over at @t, reporting @k expirations. */
static void account(struct timers *T, unsigned int i, unsigned long long k, double t)
{
	if (i >= T->n || !k) {
		T->unknown++;
		return;
	}
	if (T->samples < MAX_SAMPLES)
		T->late[T->samples++] = t - (T->start[i] + (T->count[i] + 1) * T->period_ms / 1e3);
	T->count[i] += k;
	T->events++;
	T->expirations += k;
	T->touched[T->ntouched++ % T->n] = i;
}

/*
 * At @t, after a batch: no timer reported may have more expirations than
 * were due by now. (The loop reads the clock here anyway, for its deadline.)
 */
static void settle(struct timers *T, double t)
{
	unsigned int j, n = T->ntouched < T->n ? T->ntouched : T->n;

	for (j = 0; j < n; j++) {
		unsigned int i = T->touched[j];

		if ((long long)T->count[i] > due(T, i, t, 0))
			T->early++;
	}
	T->ntouched = 0;
}

static void timed_part_ended(struct timers *T)
{
	T->timed_events = T->events;
	T->timed_expirations = T->expirations;
	T->timed_samples = T->samples;
}

/* ---- kevent ------------------------------------------------------------ */

static int kevent_run(struct timers *T, double seconds, struct bench_span *span)
{
	struct kq_buf kb;
	unsigned int i, left;
	double end;
	long n = 0, j;
	int kq = kevent_init();

	if (kq < 0 || kq_buf_init(&kb))
		return -1;
	/*
	 * All of them in one call, as a kevent user would; each timer starts
	 * during the call, so "start" (before it) overstates their lateness by
	 * at most the call's duration, which arm_ms reports.
	 */
	for (i = 0; i < T->n; i++) {
		struct ukevent uk = kevent_timer(T->period_ms, i, 0);

		uk.user[0] = i;
		kq_put(&kb, i, &uk);
	}
	T->start[0] = bench_now();
	if (kq_ctl(kq, &kb, KEVENT_CTL_ADD, T->n, 0) != T->n)
		return -1;
	T->armed[0] = bench_now();
	for (i = 1; i < T->n; i++) {
		T->start[i] = T->start[0];
		T->armed[i] = T->armed[0];
	}
	T->arm_s = T->armed[0] - T->start[0];
	bench_start(span);
	end = span->t0 + seconds;
	for (;;) {
		double t = bench_now();

		settle(T, t);
		if (t >= end)
			break;
		n = kq_wait_some(kq, &kb, kb.max, (unsigned int)((end - t) * 1e3) + 1);
		if (n < 0)
			return -1;
		t = bench_now();
		for (j = 0; j < n; j++) {
			struct ukevent uk;

			kq_get(&kb, j, &uk);
			account(T, uk.user[0], uk.ret_data[0], t);
		}
	}
	bench_stop(span);
	timed_part_ended(T);
	/*
	 * For the check, not the figures: take events until every timer was
	 * delivered once more, and note when (before the call that got it).
	 */
	for (left = T->n; left && bench_now() < end + CHECK_S; ) {
		double t = bench_now();

		n = kq_ctl(kq, &kb, KEVENT_CTL_WAIT, kb.max, 0);
		if (n < 0)
			break;
		for (j = 0; j < n; j++) {
			struct ukevent uk;

			kq_get(&kb, j, &uk);
			account(T, uk.user[0], uk.ret_data[0], t);
			if (uk.user[0] < T->n && !T->seen[uk.user[0]]) {
				T->seen[uk.user[0]] = t;
				left--;
			}
		}
		settle(T, bench_now());
	}
	close(kq);
	kq_buf_free(&kb);
	return n < 0 ? -1 : 0;
}

/* ---- timerfd + epoll ----------------------------------------------------- */

static int timerfd_run(struct timers *T, double seconds, struct bench_span *span)
{
	struct itimerspec its = { 0 };
	struct timespec base;
	struct epoll_event ev[1024];
	int ep = epoll_create1(0);
	unsigned int i;
	uint64_t k;
	double end;
	int n, j;

	if (ep < 0)
		return -1;
	for (i = 0; i < T->n; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };

		T->fd[i] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
		if (T->fd[i] < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, T->fd[i], &e))
			return -1;
	}
	/*
	 * Every timerfd on the same absolute schedule, base + n * period, as
	 * the kevent timers are (armed in one call): both sides face the same
	 * bursts of simultaneous expirations. One armed after its first
	 * expiration passed fires at once and counts from the schedule.
	 */
	clock_gettime(CLOCK_MONOTONIC, &base);
	its.it_interval.tv_sec = T->period_ms / 1000;
	its.it_interval.tv_nsec = (T->period_ms % 1000) * 1000000L;
	its.it_value.tv_sec = base.tv_sec + its.it_interval.tv_sec;
	its.it_value.tv_nsec = base.tv_nsec + its.it_interval.tv_nsec;
	if (its.it_value.tv_nsec >= 1000000000L) {
		its.it_value.tv_sec++;
		its.it_value.tv_nsec -= 1000000000L;
	}
	for (i = 0; i < T->n; i++) {
		T->start[i] = T->armed[i] = base.tv_sec + base.tv_nsec / 1e9;
		if (timerfd_settime(T->fd[i], TFD_TIMER_ABSTIME, &its, NULL))
			return -1;
	}
	T->arm_s = bench_now() - T->start[0];
	bench_start(span);
	end = span->t0 + seconds;
	for (;;) {
		double t = bench_now();

		settle(T, t);
		if (t >= end)
			break;
		n = COUNTED(epoll_wait(ep, ev, 1024, (int)((end - t) * 1e3) + 1));
		if (n < 0 && errno != EINTR)
			return -1;
		t = bench_now();
		for (j = 0; j < n; j++) {
			i = ev[j].data.u32;
			if (COUNTED(read(T->fd[i], &k, sizeof(k))) != sizeof(k))
				continue;	/* nothing after all: counted as no event */
			account(T, i, k, t);
		}
	}
	bench_stop(span);
	timed_part_ended(T);
	/* For the check: what each timerfd counted since its last read. */
	for (i = 0; i < T->n; i++) {
		T->seen[i] = bench_now();
		if (read(T->fd[i], &k, sizeof(k)) == sizeof(k))
			account(T, i, k, T->seen[i]);
		settle(T, bench_now());
		close(T->fd[i]);
	}
	close(ep);
	return 0;
}

/*
 * Every timer reported, when it was last looked at, all the expirations
 * due by then (one may be in flight) and never one before it was due.
 */
static unsigned int check(struct timers *T)
{
	unsigned int i, bad = 0;

	for (i = 0; i < T->n; i++) {
		long long want = T->seen[i] ? due(T, i, T->seen[i], 1) : -1;

		if (!T->seen[i] || (long long)T->count[i] < want - 1) {
			if (!bad)
				ksft_print_msg("timer %u: %llu expirations reported, %lld due\n",
					       i, T->count[i], want);
			bad++;
		}
	}
	return bad;
}

static void one(const char *method, int (*run)(struct timers *, double, struct bench_span *),
		unsigned int n, unsigned int period_ms, double seconds)
{
	struct timers T = { .n = n, .period_ms = period_ms };
	struct bench_span span;
	unsigned int bad;
	double med, p99, fired;
	int ok;

	T.start = calloc(n, sizeof(double));
	T.armed = calloc(n, sizeof(double));
	T.seen = calloc(n, sizeof(double));
	T.touched = calloc(n, sizeof(unsigned int));
	T.count = calloc(n, sizeof(unsigned long long));
	T.fd = calloc(n, sizeof(int));
	T.late = malloc(MAX_SAMPLES * sizeof(double));
	if (!T.start || !T.armed || !T.seen || !T.touched || !T.count || !T.fd || !T.late)
		ksft_exit_fail_msg("no memory\n");
	if (run(&T, seconds, &span)) {
		ksft_print_msg("%s: %s\n", method, strerror(errno));
		ksft_test_result_fail("%s\n", method);
		return;
	}
	/* The figures cover the timed part; the check also what came after it. */
	fired = T.timed_events;
	bad = check(&T);
	med = bench_quantile(T.late, T.timed_samples, 0.5);
	p99 = bench_quantile(T.late, T.timed_samples, 0.99);
	ok = !bad && !T.unknown && !T.early && T.timed_events;
	if (!ok)
		ksft_print_msg("%s: %u timers short of their count, %llu reports ahead of time, %llu unknown events\n",
			       method, bad, T.early, T.unknown);
	bench_line("timer", method,
		   "timers=%u period_ms=%u seconds=%.3f events=%llu expirations=%llu rate=%.1f nominal_s=%.1f late_median_us=%.1f late_p99_us=%.1f arm_ms=%.2f calls=%llu calls_per_firing=%.3f cpu_us_per_firing=%.2f valid=%d",
		   n, period_ms, span.seconds, T.timed_events, T.timed_expirations, fired / span.seconds,
		   n * 1e3 / period_ms, med * 1e6, p99 * 1e6, T.arm_s * 1e3,
		   span.calls, (double)span.calls / fired, span.cpu * 1e6 / fired, ok);
	ksft_test_result(ok, "%s\n", method);
	free(T.start);
	free(T.armed);
	free(T.seen);
	free(T.touched);
	free(T.count);
	free(T.fd);
	free(T.late);
}

int main(int argc, char **argv)
{
	unsigned int n, period;
	double seconds;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4 || (n = atoi(argv[1])) < 1 || (period = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: %s TIMERS PERIOD_MS SECONDS [METHOD...]\n", argv[0]);
		return 2;
	}
	seconds = atof(argv[3]);
	ksft_print_header();
	ksft_set_plan(2);
	bench_raise_nofile(n + 64);
	if (bench_wanted("kevent_timer", argv + 4, argc - 4))
		one("kevent_timer", kevent_run, n, period, seconds);
	else
		ksft_test_result_skip("kevent_timer (not asked for)\n");
	if (bench_wanted("timerfd_epoll", argv + 4, argc - 4))
		one("timerfd_epoll", timerfd_run, n, period, seconds);
	else
		ksft_test_result_skip("timerfd_epoll (not asked for)\n");
	ksft_finished();
}
