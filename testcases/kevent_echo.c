// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_echo: a TCP echo server driven by KEVENT_SOCKET alone, and its
 * clients, for runs across lab hosts.
 *
 *   kevent_echo server PORT CLIENTS [et] [ring] [threads=N]
 *                                            serve CLIENTS connections
 *   kevent_echo client ADDR PORT CLIENTS BYTES
 *                                            CLIENTS concurrent connections,
 *                                            each sends BYTES and checks the
 *                                            echo byte by byte
 *
 * The server never blocks. By default its kevents are level triggered:
 * ACCEPT on the listening socket, RECV on each connection, and SEND (added
 * with MODIFY) while it has echo data the socket did not take. With `et`
 * they are edge triggered (KEVENT_REQ_ET, kevent's later takes): RECV and
 * SEND from the start, never modified, and each event makes the server
 * write and read until the socket says EAGAIN, as epoll's EPOLLET asks.
 * With threads=N, N threads wait on the one queue (each event wakes one of
 * them) and a connection's lock keeps two of them off one connection. With
 * `ring` the queue has a ready ring (kevent's take25): the kernel puts the
 * events into memory the server maps, the threads take them from there
 * without a system call, and only a thread that finds the ring empty calls
 * the kernel, to sleep; the server reports how many such calls it made. A
 * oneshot KEVENT_TIMER is its deadline.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "kselftest.h"
#include "kevent_user.h"

#define DEADLINE_MS	60000
#define MAX_FD		1024
#define HIGH_WATER	(256 * 1024)

#define MAX_THREADS	16

static int opt_et, opt_ring, opt_threads = 1;

#define RING_ENTRIES	256
static struct kevent_ring *ring;
static unsigned long n_ring_waits;

static struct ukevent ksock(int fd, unsigned int event)
{
	return kevent_fd(fd, KEVENT_SOCKET, event, opt_et ? KEVENT_REQ_ET : 0);
}

static unsigned char pattern(unsigned int client, uint64_t i)
{
	return (unsigned char)(i * 31 + (i >> 11) + client * 97 + 5);
}

struct conn {
	pthread_mutex_t lock;	/* one thread at a time on a connection */
	int open;
	int eof;
	unsigned char *buf;	/* echo data the socket did not take yet */
	size_t len;
	uint64_t bytes;
	unsigned int mask;	/* the kevent's current event mask */
};

static struct conn conns[MAX_FD];

/* The server's shared state, under state_lock. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t accept_lock = PTHREAD_MUTEX_INITIALIZER;
static int kq, ls, clients, served, late;
static unsigned long n_accept, n_recv, n_send;

static void count(unsigned long *n)
{
	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

static int server_done(void)
{
	int done;

	pthread_mutex_lock(&state_lock);
	done = served >= clients || late;
	pthread_mutex_unlock(&state_lock);
	return done;
}

static void set_mask(int fd, unsigned int mask)
{
	struct ukevent uk = ksock(fd, mask);

	if (conns[fd].mask == mask)
		return;
	if (kevent_modify(kq, &uk, 1) != 1)
		ksft_exit_fail_msg("MODIFY fd %d: %s\n", fd, strerror(uk.ret_data[0]));
	conns[fd].mask = mask;
}

/* Write what is pending; returns -1 on a socket error, else bytes written. */
static ssize_t flush(int fd)
{
	struct conn *c = &conns[fd];
	ssize_t total = 0;

	while (c->len) {
		ssize_t w = write(fd, c->buf, c->len);

		if (w < 0)
			return errno == EAGAIN ? total : -1;
		memmove(c->buf, c->buf + w, c->len - w);
		c->len -= w;
		total += w;
	}
	return total;
}

/* Read until EAGAIN, end of file or HIGH_WATER; returns bytes read. */
static ssize_t fill(int fd)
{
	struct conn *c = &conns[fd];
	ssize_t total = 0;

	while (c->len < HIGH_WATER && !c->eof) {
		unsigned char tmp[65536];
		ssize_t r = read(fd, tmp, sizeof(tmp));

		if (r == 0)
			c->eof = 1;
		if (r <= 0)
			break;
		c->buf = realloc(c->buf, c->len + r);
		memcpy(c->buf + c->len, tmp, r);
		c->len += r;
		c->bytes += r;
		total += r;
	}
	return total;
}

/* With the connection's lock held; it stays held, the fd is closed. */
static void finish(int fd, int ok)
{
	struct ukevent uk = ksock(fd, 0);
	struct conn *c = &conns[fd];
	int n;

	kevent_remove(kq, &uk, 1);
	pthread_mutex_lock(&state_lock);
	n = ++served;
	pthread_mutex_unlock(&state_lock);
	ksft_print_msg("connection %d (fd %d): %llu bytes echoed\n", n, fd,
		       (unsigned long long)c->bytes);
	ksft_test_result(ok, "connection_%d\n", n);
	free(c->buf);
	c->buf = NULL;
	c->open = c->eof = 0;
	c->len = c->bytes = 0;
	c->mask = 0;
	close(fd);
}

static void accept_all(void)
{
	int fd;

	count(&n_accept);
	pthread_mutex_lock(&accept_lock);
	while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
		unsigned int mask = KEVENT_SOCKET_RECV | (opt_et ? KEVENT_SOCKET_SEND : 0);
		struct ukevent cu = ksock(fd, mask);

		if (fd >= MAX_FD)
			ksft_exit_fail_msg("connection fd %d\n", fd);
		/*
		 * Set up and added under the connection's lock: an event of the
		 * new kevent waits for the lock and finds it set up, and an
		 * event of the connection that had this fd before, still in
		 * another thread's hands, cannot see the connection open
		 * before its kevent exists (a MODIFY would find none).
		 */
		pthread_mutex_lock(&conns[fd].lock);
		conns[fd].open = 1;
		conns[fd].mask = mask;
		if (kevent_add(kq, &cu, 1) != 1)
			ksft_exit_fail_msg("ADD fd %d: %s\n", fd, strerror(cu.ret_data[0]));
		pthread_mutex_unlock(&conns[fd].lock);
	}
	pthread_mutex_unlock(&accept_lock);
}

/* One event of connection @fd, with its lock held. */
static void serve(int fd, const struct ukevent *ev)
{
	struct conn *c = &conns[fd];

	if (ev->ret_flags & KEVENT_RET_BROKEN)
		ksft_exit_fail_msg("fd %d broken: %s\n", fd, strerror(ev->ret_data[0]));
	if (ev->ret_data[0] & KEVENT_SOCKET_SEND)
		count(&n_send);
	if (ev->ret_data[0] & KEVENT_SOCKET_RECV)
		count(&n_recv);
	if (opt_et) {
		/*
		 * Edge triggered: no new event comes until the socket said
		 * EAGAIN, so go on until neither way makes progress.
		 */
		for (;;) {
			ssize_t out = flush(fd), in;

			if (out < 0)
				return finish(fd, 0);
			in = fill(fd);
			if (!out && !in)
				break;
		}
	} else {
		if (ev->ret_data[0] & KEVENT_SOCKET_RECV)
			fill(fd);
		if (flush(fd) < 0)
			return finish(fd, 0);
	}
	if (c->eof && !c->len)
		return finish(fd, 1);
	/* Level triggered: stop reading while the peer does not read. */
	if (!opt_et)
		set_mask(fd, (c->len ? KEVENT_SOCKET_SEND : 0) |
			 (c->len < HIGH_WATER && !c->eof ? KEVENT_SOCKET_RECV : 0));
}

/*
 * Up to @max events from the ring, without a system call while it holds
 * any; when it is empty, one call sleeps until it does not (with a limit,
 * so that a thread sees the others have finished).
 */
static long ring_take(struct ukevent *ev, long max)
{
	long n = 0;

	while (n < max && kevent_ring_take(ring, &ev[n]))
		n++;
	if (n)
		return n;
	count(&n_ring_waits);
	return kevent_ring_wait(kq, 1, opt_threads > 1 ? 200 : -1) < 0 ? -1 : 0;
}

static void *server_thread(void *arg)
{
	unsigned long *handled = arg;
	struct ukevent ev[16];

	while (!server_done()) {
		long n, i;

		/*
		 * WAIT blocks until @num events are ready: block for one, then
		 * collect whatever else is ready without blocking. A limit, so
		 * that a thread sees the others have finished.
		 */
		if (opt_ring)
			n = ring_take(ev, 16);
		else
			n = kevent_wait(kq, ev, 1, opt_threads > 1 ? 200 : KEVENT_WAIT_FOREVER);
		if (!opt_ring && n == 1)
			n += kevent_wait(kq, ev + 1, 15, 0);
		if (n < 0)
			ksft_exit_fail_msg("WAIT: %s\n", strerror(errno));
		for (i = 0; i < n; i++) {
			int fd = ev[i].id.raw[0];

			(*handled)++;
			if (ev[i].type == KEVENT_TIMER) {
				pthread_mutex_lock(&state_lock);
				late = 1;
				pthread_mutex_unlock(&state_lock);
			} else if (fd == ls) {
				accept_all();
			} else if (fd < MAX_FD) {
				pthread_mutex_lock(&conns[fd].lock);
				/* Closed earlier: its event is stale. */
				if (conns[fd].open)
					serve(fd, &ev[i]);
				pthread_mutex_unlock(&conns[fd].lock);
			}
		}
	}
	return NULL;
}

static void server(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ukevent deadline = kevent_timer(DEADLINE_MS, 0, KEVENT_REQ_ONESHOT);
	unsigned long handled[MAX_THREADS] = { 0 };
	pthread_t t[MAX_THREADS];
	struct ukevent uk;
	int one = 1, i;

	ksft_print_header();
	ksft_set_plan(clients + 2 + opt_ring);
	for (i = 0; i < MAX_FD; i++)
		pthread_mutex_init(&conns[i].lock, NULL);
	kq = opt_ring ? kevent_ring_open(RING_ENTRIES, &ring) : kevent_init();
	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (kq < 0 || ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 64))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	ksft_print_msg("%s triggered, %d thread(s) on one queue%s\n",
		       opt_et ? "edge" : "level", opt_threads,
		       opt_ring ? ", events from its ready ring" : "");
	uk = ksock(ls, KEVENT_SOCKET_ACCEPT);
	if (kevent_add(kq, &uk, 1) != 1 || kevent_add(kq, &deadline, 1) != 1)
		ksft_exit_fail_msg("ADD: %s\n", strerror(uk.ret_data[0]));

	for (i = 1; i < opt_threads; i++)
		if (pthread_create(&t[i], NULL, server_thread, &handled[i]))
			ksft_exit_fail_msg("pthread_create\n");
	server_thread(&handled[0]);
	for (i = 1; i < opt_threads; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < opt_threads; i++)
		ksft_print_msg("thread %d handled %lu events\n", i, handled[i]);
	ksft_test_result(!late, "no_deadline_passed\n");
	ksft_print_msg("events: %lu accept, %lu recv, %lu send\n", n_accept, n_recv, n_send);
	if (opt_ring) {
		unsigned long events = 0;

		for (i = 0; i < opt_threads; i++)
			events += handled[i];
		ksft_print_msg("ring: %lu events taken, %lu calls to wait for more, %u overflows\n",
			       events, n_ring_waits, ring->overflow);
		/* Every event the threads handled came through the ring. */
		ksft_test_result(events > 0 && events == ring->uidx,
				 "events_taken_from_the_ring\n");
	}
	ksft_test_result(served == clients && n_accept > 0 && n_recv > 0,
			 "all_clients_served\n");
	ksft_finished();
}

struct client {
	const char *addr;
	int port;
	unsigned int id;
	uint64_t bytes;
	int sock;
	uint64_t bad;
	uint64_t got;
	char err[128];
};

static void *client_writer(void *arg)
{
	struct client *c = arg;
	unsigned char buf[32768];
	uint64_t sent = 0;

	while (sent < c->bytes) {
		size_t n = c->bytes - sent < sizeof(buf) ? c->bytes - sent : sizeof(buf), i;
		ssize_t w;

		for (i = 0; i < n; i++)
			buf[i] = pattern(c->id, sent + i);
		w = write(c->sock, buf, n);
		if (w <= 0)
			break;
		sent += w;
	}
	shutdown(c->sock, SHUT_WR);
	return NULL;
}

static void *client_run(void *arg)
{
	struct client *c = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->port) };
	struct timespec until;
	unsigned char buf[32768];
	pthread_t w;

	inet_pton(AF_INET, c->addr, &sa.sin_addr);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += DEADLINE_MS / 1000;
	for (;;) {
		struct timespec now;

		c->sock = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(c->sock, (void *)&sa, sizeof(sa)))
			break;
		close(c->sock);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > until.tv_sec) {
			snprintf(c->err, sizeof(c->err), "connect: %s", strerror(errno));
			return NULL;
		}
		usleep(50 * 1000);
	}
	pthread_create(&w, NULL, client_writer, c);
	for (;;) {
		ssize_t r = read(c->sock, buf, sizeof(buf)), i;

		if (r <= 0)
			break;
		for (i = 0; i < r; i++)
			if (buf[i] != pattern(c->id, c->got + i))
				c->bad++;
		c->got += r;
	}
	pthread_join(w, NULL);
	close(c->sock);
	return NULL;
}

static void clients_run(const char *addr, int port, int n, uint64_t bytes)
{
	struct client *c = calloc(n, sizeof(*c));
	pthread_t *t = calloc(n, sizeof(*t));
	int i;

	ksft_print_header();
	ksft_set_plan(n);
	for (i = 0; i < n; i++) {
		c[i] = (struct client){ .addr = addr, .port = port, .id = i, .bytes = bytes };
		pthread_create(&t[i], NULL, client_run, &c[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		if (c[i].err[0])
			ksft_print_msg("client %d: %s\n", i, c[i].err);
		else
			ksft_print_msg("client %d: %llu of %llu bytes back, %llu differ\n", i,
				       (unsigned long long)c[i].got,
				       (unsigned long long)bytes,
				       (unsigned long long)c[i].bad);
		ksft_test_result(!c[i].err[0] && c[i].got == bytes && !c[i].bad,
				 "client_%d\n", i);
	}
	ksft_finished();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && argc <= 7 && !strcmp(argv[1], "server")) {
		clients = atoi(argv[3]);
		for (int i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "et"))
				opt_et = 1;
			else if (!strcmp(argv[i], "ring"))
				opt_ring = 1;
			else if (!strncmp(argv[i], "threads=", 8))
				opt_threads = atoi(argv[i] + 8);
			else
				opt_threads = 0;
		}
		if (clients > 0 && opt_threads >= 1 && opt_threads <= MAX_THREADS)
			server(atoi(argv[2]));
	}
	if (argc == 6 && !strcmp(argv[1], "client"))
		clients_run(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 0));
	fprintf(stderr, "usage: %s server PORT CLIENTS [et] [ring] [threads=1..%d] | "
		"client ADDR PORT CLIENTS BYTES\n", argv[0], MAX_THREADS);
	return 2;
}
