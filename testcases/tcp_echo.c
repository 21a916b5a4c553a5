// SPDX-License-Identifier: GPL-2.0+
/*
 * tcp_echo: a TCP echo server and client for runs across lab hosts.
 *
 *   tcp_echo server PORT CLIENTS     serve CLIENTS connections, then exit
 *   tcp_echo client ADDR PORT BYTES  send BYTES, check the echo byte by byte
 *
 * The server's deadline is a oneshot KEVENT_TIMER, and it waits for a
 * connection or the deadline with poll() on the listening socket and the
 * kevent queue together, so the queue's poll() support is used across the
 * wire. Both sides print KTAP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "kselftest.h"
#include "kevent_user.h"

#define DEADLINE_MS	60000
#define CHUNK		16384

static unsigned char pattern(uint64_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) + 7);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

static int echo_one(int c, uint64_t *bytes)
{
	unsigned char buf[CHUNK];

	*bytes = 0;
	for (;;) {
		ssize_t r = read(c, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		if (write_all(c, buf, r))
			return -1;
		*bytes += r;
	}
}

static void server(int port, int clients)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ukevent deadline = kevent_timer(DEADLINE_MS, 0, KEVENT_REQ_ONESHOT);
	int one = 1, served = 0, kfd, ls, i;

	ksft_print_header();
	ksft_set_plan(clients + 2);

	kfd = kevent_init();
	if (kfd < 0 || kevent_add(kfd, &deadline, 1) != 1)
		ksft_exit_fail_msg("kevent deadline timer: %s\n", strerror(errno));

	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 16))
		ksft_exit_fail_msg("listen on port %d: %s\n", port, strerror(errno));
	ksft_test_result_pass("listen\n");

	for (i = 0; i < clients; i++) {
		struct pollfd pfd[2] = { { ls, POLLIN, 0 }, { kfd, POLLIN, 0 } };
		uint64_t bytes;
		int c;

		if (poll(pfd, 2, -1) < 0 || (pfd[1].revents & POLLIN)) {
			ksft_test_result_fail("client_%d: deadline of %d ms passed\n",
					      i + 1, DEADLINE_MS);
			continue;
		}
		c = accept(ls, NULL, NULL);
		if (c < 0) {
			ksft_test_result_fail("client_%d: accept: %s\n", i + 1,
					      strerror(errno));
			continue;
		}
		if (echo_one(c, &bytes)) {
			ksft_test_result_fail("client_%d: echo: %s\n", i + 1,
					      strerror(errno));
		} else {
			ksft_print_msg("client %d: %llu bytes echoed\n", i + 1,
				       (unsigned long long)bytes);
			ksft_test_result_pass("client_%d\n", i + 1);
			served++;
		}
		close(c);
	}
	ksft_test_result(served == clients, "all_clients_served\n");
	close(ls);
	close(kfd);
	ksft_finished();
}

static int connect_retry(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	double until = now_s() + DEADLINE_MS / 1000.0;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		ksft_exit_fail_msg("bad address %s\n", addr);
	/* The server may still be booting: its readiness is that it accepts. */
	while (now_s() < until) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s >= 0 && !connect(s, (void *)&sa, sizeof(sa)))
			return s;
		if (s >= 0)
			close(s);
		usleep(50 * 1000);
	}
	return -1;
}

static void client(const char *addr, int port, uint64_t total)
{
	unsigned char out[CHUNK], in[CHUNK];
	uint64_t sent = 0, bad = 0, first_bad = 0;
	double t0;
	int s;

	ksft_print_header();
	ksft_set_plan(3);

	s = connect_retry(addr, port);
	if (s < 0)
		ksft_exit_fail_msg("connect to %s:%d: %s\n", addr, port, strerror(errno));
	ksft_test_result_pass("connect\n");

	t0 = now_s();
	while (sent < total) {
		size_t n = total - sent < CHUNK ? total - sent : CHUNK, got = 0, i;

		for (i = 0; i < n; i++)
			out[i] = pattern(sent + i);
		if (write_all(s, out, n))
			break;
		while (got < n) {
			ssize_t r = read(s, in + got, n - got);

			if (r <= 0)
				break;
			got += r;
		}
		if (got < n)
			break;
		for (i = 0; i < n; i++)
			if (in[i] != out[i] && !bad++)
				first_bad = sent + i;
		sent += n;
	}
	if (sent != total || bad)
		ksft_test_result_fail("echo_verified: %llu of %llu bytes back, %llu differ (first at %llu)\n",
				      (unsigned long long)sent, (unsigned long long)total,
				      (unsigned long long)bad, (unsigned long long)first_bad);
	else
		ksft_test_result_pass("echo_verified\n");
	ksft_print_msg("%llu bytes in %.3f s\n", (unsigned long long)sent, now_s() - t0);

	/* The server closes after our EOF: its close is the last thing we read. */
	shutdown(s, SHUT_WR);
	ksft_test_result(read(s, in, 1) == 0, "clean_shutdown\n");
	close(s);
	ksft_finished();
}

int main(int argc, char **argv)
{
	/* One line at a time, so the lab sees when each result happened. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "server"))
		server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		client(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0));
	fprintf(stderr, "usage: %s server PORT CLIENTS | client ADDR PORT BYTES\n", argv[0]);
	return 2;
}
