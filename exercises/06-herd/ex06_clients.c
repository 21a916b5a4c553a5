// SPDX-License-Identifier: GPL-2.0+
/*
 * ex06_clients: the clients of exercise 06 (docs/exercises/06-herd.md).
 *
 *   ex06_clients ADDR PORT CLIENTS MESSAGES
 *
 * CLIENTS connections, all open at once, each sending MESSAGES messages.
 * One message is in flight at a time, round the connections in turn: each
 * is sent when the echo of the one before came back (5 s at most), so the
 * server's threads are all asleep when a message arrives, and the wake-ups
 * a message causes can be counted. Most messages are 64 bytes; every
 * BIG_EVERY-th is BIG bytes, more than one read() of the answer's 4 KiB
 * buffer takes: an edge-triggered server that does not read until EAGAIN
 * leaves the rest unread, and no new event comes for it. Every byte is
 * checked.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kselftest.h"

#define SMALL		64
#define BIG		5096
#define BIG_EVERY	20

struct client {
	int sock, id, echoed;
	char err[128];
};

static unsigned char pattern(int id, int msg, int i)
{
	return (unsigned char)(id * 131 + msg * 7 + i);
}

static int connect_retry(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, addr, &sa.sin_addr);
	for (int tries = 0; tries < 200; tries++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (!connect(s, (void *)&sa, sizeof(sa)))
			return s;
		close(s);
		usleep(50000);
	}
	return -1;
}

/* Message @m of client @c, and its echo; 0 when it came back whole. */
static int exchange(struct client *c, int m)
{
	static unsigned char out[BIG], in[BIG];
	int size = m % BIG_EVERY == BIG_EVERY - 1 ? BIG : SMALL, got = 0;

	for (int i = 0; i < size; i++)
		out[i] = pattern(c->id, m, i);
	if (write(c->sock, out, size) != size) {
		snprintf(c->err, sizeof(c->err), "message %d: write: %s", m, strerror(errno));
		return -1;
	}
	while (got < size) {
		struct pollfd p = { .fd = c->sock, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 5000) != 1) {
			snprintf(c->err, sizeof(c->err),
				 "message %d (%d bytes): %d came back, then nothing for 5 s",
				 m, size, got);
			return -1;
		}
		r = read(c->sock, in + got, size - got);
		if (r <= 0) {
			snprintf(c->err, sizeof(c->err), "message %d: the server closed", m);
			return -1;
		}
		got += r;
	}
	if (memcmp(in, out, size)) {
		snprintf(c->err, sizeof(c->err), "message %d: the echo differs", m);
		return -1;
	}
	c->echoed++;
	return 0;
}

int main(int argc, char **argv)
{
	struct client *c;
	int n, messages, total = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s ADDR PORT CLIENTS MESSAGES\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	n = atoi(argv[3]);
	messages = atoi(argv[4]);
	c = calloc(n, sizeof(*c));
	ksft_print_header();
	ksft_set_plan(n + 1);
	for (int i = 0; i < n; i++) {
		c[i].id = i;
		c[i].sock = connect_retry(argv[1], atoi(argv[2]));
		if (c[i].sock < 0)
			snprintf(c[i].err, sizeof(c[i].err), "connect: %s", strerror(errno));
	}
	for (int m = 0; m < messages; m++)
		for (int i = 0; i < n; i++)
			if (!c[i].err[0])
				exchange(&c[i], m);
	for (int i = 0; i < n; i++) {
		if (c[i].sock >= 0)
			close(c[i].sock);
		if (c[i].err[0])
			ksft_print_msg("client %d: %s\n", i, c[i].err);
		ksft_test_result(!c[i].err[0] && c[i].echoed == messages, "client_%d\n", i);
		total += c[i].echoed;
	}
	ksft_print_msg("%d messages echoed\n", total);
	ksft_test_result(total == n * messages, "all_messages_echoed\n");
	ksft_finished();
}
