// SPDX-License-Identifier: GPL-2.0
/*
 * web_cpu: tells another host how much CPU this guest has used, so that the
 * web benchmark can charge a server's work per request, whoever wrote the
 * server (nginx cannot count for us).
 *
 *   web_cpu PORT
 *
 * A connection that sends "busy" gets one line, the guest's busy time so far
 * in seconds (/proc/stat, all but idle and iowait: the server's process,
 * its kernel work, softirqs and NAIO's worker alike; see
 * include/bench_net.h), and is closed. One that sends "quit", or asks for
 * WEB_QUIT as the web servers understand it (web_check quit), ends the
 * program. Results are KTAP.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_net.h"
#include "web.h"

int main(int argc, char **argv)
{
	unsigned long asked = 0;
	int ls;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PORT\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..1\n");
	ls = bench_listen(atoi(argv[1]));
	if (ls < 0) {
		printf("not ok 1 listening_on_%s\n", argv[1]);
		return 1;
	}
	for (;;) {
		int s = accept(ls, NULL, NULL);
		struct timeval tv = { .tv_sec = 1 };	/* a silent client is dropped */
		char in[64] = "", line[64];
		ssize_t n;

		if (s < 0)
			continue;
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recv(s, in, sizeof(in) - 1, 0);
		if (n >= 4 && (!strncmp(in, "quit", 4) || strstr(in, "GET " WEB_QUIT " "))) {
			close(s);
			break;
		}
		if (n < 4 || strncmp(in, "busy", 4)) {
			close(s);
			continue;
		}
		snprintf(line, sizeof(line), "%.6f\n", bench_guest_busy());
		send(s, line, strlen(line), MSG_NOSIGNAL);
		close(s);
		asked++;
	}
	printf("# web_cpu: answered %lu times\n", asked);
	printf("ok 1 served_until_asked_to_stop\n");
	return 0;
}
