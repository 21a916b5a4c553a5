// SPDX-License-Identifier: GPL-2.0+
/*
 * ex04_epoll_echo: the echo server of kevent_echo, written with epoll, for
 * exercise 04: traced side by side, the two show how each wakes its task.
 *
 *   ex04_epoll_echo PORT CLIENTS
 *
 * Level triggered (no EPOLLET), as KEVENT_SOCKET is: the listening socket
 * for EPOLLIN, each connection for EPOLLIN; one epoll_wait() for one event
 * first, then the others that are ready, as kevent_echo waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "kselftest.h"

static void add(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		ksft_exit_fail_msg("EPOLL_CTL_ADD %d: %s\n", fd, strerror(errno));
}

/* Echo what @fd has; 1 when the connection is over. */
static int echo(int fd)
{
	char buf[16384];

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r <= 0)
			return r == 0 || errno != EAGAIN;
		if (write(fd, buf, r) != r)
			return 1;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event ev[64];
	int one = 1, served = 0, clients, ep, ls;
	unsigned long waits = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PORT CLIENTS\n", argv[0]);
		return 2;
	}
	sa.sin_port = htons(atoi(argv[1]));
	clients = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(1);
	ep = epoll_create1(0);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ep < 0 || ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 64))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	add(ep, ls);

	while (served < clients) {
		int n = epoll_wait(ep, ev, 1, 60000), i, c;

		if (n == 1)
			n += epoll_wait(ep, ev + 1, 63, 0);
		if (n < 1)
			ksft_exit_fail_msg("epoll_wait: %s\n", n ? strerror(errno) : "timed out");
		waits++;
		for (i = 0; i < n; i++) {
			int fd = ev[i].data.fd;

			if (fd == ls) {
				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0)
					add(ep, c);
			} else if (echo(fd)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
				served++;
			}
		}
	}
	ksft_print_msg("%lu rounds of epoll_wait\n", waits);
	ksft_test_result_pass("all_clients_served\n");
	ksft_finished();
}
