// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_echo: a TCP echo server driven by KEVENT_SOCKET alone, and its
 * clients, for runs across lab hosts.
 *
 *   kevent_echo server PORT CLIENTS          serve CLIENTS connections
 *   kevent_echo client ADDR PORT CLIENTS BYTES
 *                                            CLIENTS concurrent connections,
 *                                            each sends BYTES and checks the
 *                                            echo byte by byte
 *
 * The server never blocks: ACCEPT on the listening socket, RECV on each
 * connection, and SEND (added with MODIFY) while it has echo data the
 * socket did not take. A oneshot KEVENT_TIMER is its deadline.
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

#define ksock(fd, event) kevent_fd(fd, KEVENT_SOCKET, event, 0)

static unsigned char pattern(unsigned int client, uint64_t i)
{
	return (unsigned char)(i * 31 + (i >> 11) + client * 97 + 5);
}

struct conn {
	int open;
	int eof;
	unsigned char *buf;	/* echo data the socket did not take yet */
	size_t len;
	uint64_t bytes;
	unsigned int mask;	/* the kevent's current event mask */
};

static struct conn conns[MAX_FD];
static unsigned long n_accept, n_recv, n_send;

static void set_mask(int kq, int fd, unsigned int mask)
{
	struct ukevent uk = ksock(fd, mask);

	if (conns[fd].mask == mask)
		return;
	if (kevent_modify(kq, &uk, 1) != 1)
		ksft_exit_fail_msg("MODIFY fd %d: %s\n", fd, strerror(uk.ret_data[0]));
	conns[fd].mask = mask;
}

/* Write what is pending; returns -1 on a socket error. */
static int flush(int fd)
{
	struct conn *c = &conns[fd];

	while (c->len) {
		ssize_t w = write(fd, c->buf, c->len);

		if (w < 0)
			return errno == EAGAIN ? 0 : -1;
		memmove(c->buf, c->buf + w, c->len - w);
		c->len -= w;
	}
	return 0;
}

static void finish(int kq, int fd, int *served, int ok)
{
	struct ukevent uk = ksock(fd, 0);

	kevent_remove(kq, &uk, 1);
	ksft_print_msg("connection %d (fd %d): %llu bytes echoed\n", *served + 1, fd,
		       (unsigned long long)conns[fd].bytes);
	ksft_test_result(ok, "connection_%d\n", *served + 1);
	free(conns[fd].buf);
	memset(&conns[fd], 0, sizeof(conns[fd]));
	close(fd);
	(*served)++;
}

static void server(int port, int clients)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ukevent deadline = kevent_timer(DEADLINE_MS, 0, KEVENT_REQ_ONESHOT);
	struct ukevent uk, ev[64];
	int one = 1, served = 0, kq, ls, late = 0;

	ksft_print_header();
	ksft_set_plan(clients + 2);
	kq = kevent_init();
	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (kq < 0 || ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 64))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	uk = ksock(ls, KEVENT_SOCKET_ACCEPT);
	if (kevent_add(kq, &uk, 1) != 1 || kevent_add(kq, &deadline, 1) != 1)
		ksft_exit_fail_msg("ADD: %s\n", strerror(uk.ret_data[0]));

	while (served < clients && !late) {
		long n, i;

		/*
		 * WAIT blocks until @num events are ready: block for one, then
		 * collect whatever else is ready without blocking.
		 */
		n = kevent_wait(kq, ev, 1, KEVENT_WAIT_FOREVER);
		if (n == 1)
			n += kevent_wait(kq, ev + 1, 63, 0);
		if (n < 1)
			ksft_exit_fail_msg("WAIT: %s\n", strerror(errno));
		for (i = 0; i < n; i++) {
			int fd = ev[i].id.raw[0];

			if (ev[i].type == KEVENT_TIMER) {
				late = 1;
			} else if (fd == ls) {
				int c;

				n_accept++;
				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					struct ukevent cu = ksock(c, KEVENT_SOCKET_RECV);

					if (c >= MAX_FD || kevent_add(kq, &cu, 1) != 1)
						ksft_exit_fail_msg("connection fd %d\n", c);
					conns[c].open = 1;
					conns[c].mask = KEVENT_SOCKET_RECV;
				}
			} else if (fd >= MAX_FD || !conns[fd].open) {
				/* Closed earlier in this batch: its event is stale. */
				continue;
			} else if (ev[i].ret_flags & KEVENT_RET_BROKEN) {
				ksft_exit_fail_msg("fd %d broken: %s\n", fd, strerror(ev[i].ret_data[0]));
			} else {
				struct conn *c = &conns[fd];

				if (ev[i].ret_data[0] & KEVENT_SOCKET_SEND)
					n_send++;
				if (ev[i].ret_data[0] & KEVENT_SOCKET_RECV) {
					n_recv++;
					while (c->len < HIGH_WATER) {
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
					}
				}
				if (flush(fd)) {
					finish(kq, fd, &served, 0);
					continue;
				}
				if (c->eof && !c->len) {
					finish(kq, fd, &served, 1);
					continue;
				}
				/* Stop reading while the peer does not read. */
				set_mask(kq, fd, (c->len ? KEVENT_SOCKET_SEND : 0) |
					 (c->len < HIGH_WATER && !c->eof ? KEVENT_SOCKET_RECV : 0));
			}
		}
	}
	ksft_test_result(!late, "no_deadline_passed\n");
	ksft_print_msg("events: %lu accept, %lu recv, %lu send\n", n_accept, n_recv, n_send);
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
	if (argc == 4 && !strcmp(argv[1], "server"))
		server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "client"))
		clients_run(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 0));
	fprintf(stderr, "usage: %s server PORT CLIENTS | client ADDR PORT CLIENTS BYTES\n",
		argv[0]);
	return 2;
}
