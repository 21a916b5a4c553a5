// SPDX-License-Identifier: GPL-2.0+
/*
 * udp_ping: a UDP exchange across lab hosts, both ends driven by
 * KEVENT_SOCKET_RECV.
 *
 *   udp_ping server PORT [CLIENTS]  echo datagrams until CLIENTS "END" ones
 *   udp_ping client ADDR PORT COUNT send COUNT numbered datagrams of varied
 *                                   sizes, check each reply
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "kselftest.h"
#include "kevent_user.h"

#define DEADLINE_MS	60000

#define krecv(fd) kevent_fd(fd, KEVENT_SOCKET, KEVENT_SOCKET_RECV, 0)

static size_t fill(unsigned char *buf, uint32_t seq)
{
	size_t len = 8 + (seq * 37) % 1400, i;

	memcpy(buf, &seq, 4);
	for (i = 4; i < len; i++)
		buf[i] = (unsigned char)(seq * 7 + i);
	return len;
}

static void server(int port, int clients)
{
	int ends = 0;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ukevent uk[2] = { krecv(0), kevent_timer(DEADLINE_MS, 0, KEVENT_REQ_ONESHOT) };
	unsigned long echoed = 0;
	int s, kq, done = 0, late = 0;

	ksft_print_header();
	ksft_set_plan(1);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	kq = kevent_init();
	if (s < 0 || kq < 0 || bind(s, (void *)&sa, sizeof(sa)))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	uk[0].id.raw[0] = s;
	if (kevent_add(kq, uk, 2) != 2)
		ksft_exit_fail_msg("ADD failed\n");
	while (!done && !late) {
		struct ukevent ev;

		if (kevent_wait(kq, &ev, 1, KEVENT_WAIT_FOREVER) != 1)
			ksft_exit_fail_msg("WAIT: %s\n", strerror(errno));
		if (ev.type == KEVENT_TIMER) {
			late = 1;
			break;
		}
		for (;;) {
			unsigned char buf[2048];
			struct sockaddr_in from;
			socklen_t flen = sizeof(from);
			ssize_t r = recvfrom(s, buf, sizeof(buf), 0, (void *)&from, &flen);

			if (r < 0)
				break;
			sendto(s, buf, r, 0, (void *)&from, flen);
			if (r == 3 && !memcmp(buf, "END", 3))
				done = ++ends >= clients;
			else
				echoed++;
		}
	}
	ksft_print_msg("%lu datagrams echoed\n", echoed);
	ksft_test_result(done && !late, "served_until_end\n");
	ksft_finished();
}

static void client(const char *addr, int port, uint32_t count)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	unsigned char out[2048], in[2048];
	uint32_t seq, good = 0, dup = 0, bad = 0, resent = 0;
	struct ukevent uk, ev;
	int s, kq, i;

	ksft_print_header();
	ksft_set_plan(2);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	kq = kevent_init();
	if (s < 0 || kq < 0 || connect(s, (void *)&sa, sizeof(sa)))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	uk = krecv(s);
	if (kevent_add(kq, &uk, 1) != 1)
		ksft_exit_fail_msg("ADD failed\n");

	for (seq = 0; seq < count; seq++) {
		size_t len = fill(out, seq);
		int tries, answered = 0;

		/* The server may still be booting: resend until it answers. */
		for (tries = 0; tries < (seq ? 20 : 600) && !answered; tries++) {
			if (tries)
				resent++;
			send(s, out, len, 0);
			while (!answered && kevent_wait(kq, &ev, 1, 100) == 1) {
				ssize_t r;

				while ((r = recv(s, in, sizeof(in), 0)) >= 0) {
					uint32_t got;

					memcpy(&got, in, 4);
					if (got < seq)
						dup++;
					else if (got == seq && r == (ssize_t)len && !memcmp(in, out, len))
						answered = 1;
					else
						bad++;
				}
			}
		}
		if (!answered)
			break;
		good++;
	}
	/* END until the server echoes it, so that it counts us once. */
	for (i = 0; i < 50; i++) {
		ssize_t r;

		send(s, "END", 3, 0);
		if (kevent_wait(kq, &ev, 1, 100) == 1 &&
		    (r = recv(s, in, sizeof(in), 0)) == 3 && !memcmp(in, "END", 3))
			break;
	}
	ksft_print_msg("%u of %u answered, %u resent, %u late duplicates, %u wrong\n",
		       good, count, resent, dup, bad);
	ksft_test_result(good == count, "all_replies_verified\n");
	ksft_test_result(!bad, "no_wrong_replies\n");
	ksft_finished();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "server"))
		server(atoi(argv[2]), argc == 4 ? atoi(argv[3]) : 1);
	if (argc == 5 && !strcmp(argv[1], "client"))
		client(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: %s server PORT [CLIENTS] | client ADDR PORT COUNT\n", argv[0]);
	return 2;
}
