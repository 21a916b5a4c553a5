// SPDX-License-Identifier: GPL-2.0+
/*
 * bench_accept: connections accepted per second between two lab hosts.
 *
 *   bench_accept serve PORT CONNS [METHOD...]
 *   bench_accept connect ADDR PORT CONNS [METHOD...]
 *
 * The connecting side opens CONNS connections, WINDOW at a time (each one
 * blocking: connect, read the server's 4-byte answer, close, in a thread
 * of its own). The server watches its non-blocking listening socket with
 *
 *   kevent_accept  KEVENT_SOCKET / KEVENT_SOCKET_ACCEPT
 *   epoll          epoll, level-triggered EPOLLIN
 *   kevent_accept4 4 threads waiting on one kevent queue, whose ACCEPT
 *                  kevent is edge-triggered (KEVENT_REQ_ET): each new
 *                  connection wakes one thread (wake-one, the default)
 *   epoll_excl4    4 threads with an epoll instance each, all watching the
 *                  socket with EPOLLEXCLUSIVE: a connection wakes one or more
 *
 * and on each event accepts until EAGAIN, writes each connection its
 * sequence number and closes it. The connecting side prints connections
 * per second and checks every answer came; the server its system calls
 * and the guest's CPU time per connection, and that it accepted CONNS.
 * The threaded servers also count their wake-ups per connection and the
 * empty ones, where the first accept found nothing (another thread had
 * taken the connection): the thundering herd that wake-one and
 * EPOLLEXCLUSIVE are there to prevent.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>

#include "bench_net.h"
#include "bench_kevent.h"

#define WINDOW		8
#define THREADS		4

enum method { KEVENT_ACCEPT, EPOLL, KEVENT_ACCEPT4, EPOLL_EXCL4, N_METHODS };
static const char *const names[N_METHODS] = {
	"kevent_accept", "epoll", "kevent_accept4", "epoll_excl4"
};

/* ---- the server ------------------------------------------------------------- */

/*
 * Accepts taken or under way, reset for each method: threads together
 * accept no more than CONNS, so that none takes a connection the client
 * already opened for the next method (that one would then wait for ever).
 */
static unsigned long long reserved;

/* Accept what is pending on @ls, up to @conns in all; returns how many, or -1. */
static long accept_all(int ls, unsigned long long *accepted, unsigned int conns)
{
	long n = 0;

	for (;;) {
		uint32_t seq;
		int s;

		if (__atomic_fetch_add(&reserved, 1, __ATOMIC_RELAXED) >= conns) {
			__atomic_fetch_sub(&reserved, 1, __ATOMIC_RELAXED);
			return n;
		}
		s = COUNTED(accept4(ls, NULL, NULL, 0));
		if (s < 0) {
			__atomic_fetch_sub(&reserved, 1, __ATOMIC_RELAXED);
			return errno == EAGAIN ? n : -1;
		}
		seq = __atomic_fetch_add(accepted, 1, __ATOMIC_RELAXED);
		bench_write_all(s, &seq, sizeof(seq));
		COUNTED(close(s));
		n++;
	}
}

static int serve(int ls, enum method m, unsigned int conns, unsigned long long *accepted)
{
	struct epoll_event ev;
	struct kq_buf kb;
	int q;

	if (m == KEVENT_ACCEPT) {
		struct ukevent uk = kevent_fd(ls, KEVENT_SOCKET, KEVENT_SOCKET_ACCEPT, 0);

		q = kevent_init();
		if (q < 0 || kq_buf_init(&kb) || kevent_add(q, &uk, 1) != 1)
			return -1;
	} else {
		q = epoll_create1(0);
		ev.events = EPOLLIN;
		if (q < 0 || epoll_ctl(q, EPOLL_CTL_ADD, ls, &ev))
			return -1;
	}
	while (*accepted < conns) {
		long n = m == KEVENT_ACCEPT ? kq_wait_some(q, &kb, 1, 60000) :
			 COUNTED(epoll_wait(q, &ev, 1, 60000));

		if (n <= 0 || accept_all(ls, accepted, conns) < 0)
			return -1;
	}
	close(q);
	if (m == KEVENT_ACCEPT)
		kq_buf_free(&kb);
	return 0;
}

/* ---- the threaded servers ----------------------------------------------------- */

struct acceptor {
	pthread_t t;
	enum method m;
	int ls, q;			/* q: the shared queue, or this thread's epoll */
	unsigned int conns;
	unsigned long long *accepted;
	unsigned long long wakeups, empty;
	int failed;
};

static void *acceptor_run(void *arg)
{
	struct acceptor *a = arg;

	while (__atomic_load_n(a->accepted, __ATOMIC_RELAXED) < a->conns) {
		struct kevent_get_args args = { .timeout_ns = 200 * 1000000LL };
		struct epoll_event ev;
		struct ukevent uk;
		long n, got;

		/* A limit, so that a thread sees the others have finished. */
		n = a->m == KEVENT_ACCEPT4 ? COUNTED(kevent_get_events(a->q, 1, 1, &uk, &args)) :
		    COUNTED(epoll_wait(a->q, &ev, 1, 200));
		if (n < 0) {
			a->failed = 1;
			break;
		}
		if (!n)
			continue;
		a->wakeups++;
		got = accept_all(a->ls, a->accepted, a->conns);
		if (got < 0) {
			a->failed = 1;
			break;
		}
		a->empty += !got;
	}
	return NULL;
}

/* THREADS threads accept @conns connections; wake-ups and empty ones summed. */
static int serve_threads(int ls, enum method m, unsigned int conns, unsigned long long *accepted,
			 unsigned long long *wakeups, unsigned long long *empty)
{
	struct acceptor a[THREADS];
	int shared = -1, i, failed = 0;

	if (m == KEVENT_ACCEPT4) {
		struct ukevent uk = kevent_fd(ls, KEVENT_SOCKET, KEVENT_SOCKET_ACCEPT, KEVENT_REQ_ET);

		shared = kevent_init();
		if (shared < 0 || kevent_add(shared, &uk, 1) != 1)
			return -1;
	}
	for (i = 0; i < THREADS; i++) {
		a[i] = (struct acceptor){ .m = m, .ls = ls, .q = shared, .conns = conns,
					  .accepted = accepted };
		if (m == EPOLL_EXCL4) {
			struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };

			a[i].q = epoll_create1(0);
			if (a[i].q < 0 || epoll_ctl(a[i].q, EPOLL_CTL_ADD, ls, &ev))
				return -1;
		}
	}
	for (i = 0; i < THREADS; i++)
		pthread_create(&a[i].t, NULL, acceptor_run, &a[i]);
	*wakeups = *empty = 0;
	for (i = 0; i < THREADS; i++) {
		pthread_join(a[i].t, NULL);
		*wakeups += a[i].wakeups;
		*empty += a[i].empty;
		failed |= a[i].failed;
		if (m == EPOLL_EXCL4)
			close(a[i].q);
	}
	if (shared >= 0)
		close(shared);
	return failed ? -1 : 0;
}

/* ---- the connecting side ------------------------------------------------------ */

struct worker {
	pthread_t t;
	const char *addr;
	int port;
	unsigned int conns;		/* this thread's share */
	unsigned int answered;
};

static void *connector(void *arg)
{
	struct worker *w = arg;
	unsigned int i;

	for (i = 0; i < w->conns; i++) {
		int s = bench_connect(w->addr, w->port, CONNECT_TRIES);
		uint32_t seq;

		if (s < 0)
			break;
		if (read(s, &seq, sizeof(seq)) == sizeof(seq))
			w->answered++;
		close(s);
	}
	return NULL;
}

static unsigned int connect_all(const char *addr, int port, unsigned int conns)
{
	struct worker w[WINDOW];
	unsigned int i, answered = 0;

	for (i = 0; i < WINDOW; i++) {
		w[i] = (struct worker){ .addr = addr, .port = port,
					.conns = conns / WINDOW + (i < conns % WINDOW) };
		pthread_create(&w[i].t, NULL, connector, &w[i]);
	}
	for (i = 0; i < WINDOW; i++) {
		pthread_join(w[i].t, NULL);
		answered += w[i].answered;
	}
	return answered;
}

int main(int argc, char **argv)
{
	int serving = argc >= 4 && !strcmp(argv[1], "serve");
	int connecting = argc >= 5 && !strcmp(argv[1], "connect");
	int first = serving ? 4 : 5, ls = -1, m;
	unsigned int conns;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!serving && !connecting) {
		fprintf(stderr, "usage: %s serve PORT CONNS [METHOD...] | connect ADDR PORT CONNS [METHOD...]\n",
			argv[0]);
		return 2;
	}
	conns = atoi(argv[first - 1]);
	ksft_print_header();
	ksft_set_plan(N_METHODS);
	if (serving) {
		ls = bench_listen(atoi(argv[2]));
		if (ls < 0 || fcntl(ls, F_SETFL, O_NONBLOCK))
			ksft_exit_fail_msg("listening on %s: %s\n", argv[2], strerror(errno));
	}
	for (m = 0; m < N_METHODS; m++) {
		unsigned long long accepted = 0, wakeups = 0, empty = 0;
		int threaded = m == KEVENT_ACCEPT4 || m == EPOLL_EXCL4;
		struct bench_span span;
		double busy0;
		unsigned int answered = 0;
		int ok;

		if (!bench_wanted(names[m], argv + first, argc - first)) {
			ksft_test_result_skip("%s (not asked for)\n", names[m]);
			continue;
		}
		reserved = 0;
		busy0 = bench_guest_busy();
		bench_start(&span);
		if (serving && threaded)
			ok = !serve_threads(ls, m, conns, &accepted, &wakeups, &empty) &&
			     accepted == conns;
		else if (serving)
			ok = !serve(ls, m, conns, &accepted) && accepted == conns;
		else
			ok = (answered = connect_all(argv[2], atoi(argv[3]), conns)) == conns;
		bench_stop(&span);
		if (!ok)
			ksft_print_msg("%s: %llu accepted, %u answered of %u\n", names[m], accepted,
				       answered, conns);
		if (serving && threaded)
			bench_line("accept", names[m],
				   "side=server conns=%u seconds=%.3f calls_per_conn=%.3f guest_cpu_us_per_conn=%.1f "
				   "threads=%d wakeups_per_conn=%.3f empty_wakeups_per_conn=%.3f valid=%d",
				   conns, span.seconds, (double)span.calls / conns,
				   (bench_guest_busy() - busy0) * 1e6 / conns, THREADS,
				   (double)wakeups / conns, (double)empty / conns, ok);
		else if (serving)
			bench_line("accept", names[m],
				   "side=server conns=%u seconds=%.3f calls_per_conn=%.3f guest_cpu_us_per_conn=%.1f valid=%d",
				   conns, span.seconds, (double)span.calls / conns,
				   (bench_guest_busy() - busy0) * 1e6 / conns, ok);
		else
			bench_line("accept", names[m],
				   "side=client conns=%u seconds=%.3f conns_s=%.1f guest_cpu_us_per_conn=%.1f valid=%d",
				   conns, span.seconds, conns / span.seconds,
				   (bench_guest_busy() - busy0) * 1e6 / conns, ok);
		ksft_test_result(ok, "%s.%s\n", serving ? "server" : "client", names[m]);
	}
	ksft_finished();
}
