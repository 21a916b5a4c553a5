// SPDX-License-Identifier: GPL-2.0+
/*
 * Exercise 01: a TCP echo server driven by KEVENT_SOCKET alone.
 * (docs/exercises/01-echo.md)
 *
 *   ex01_answer PORT CLIENTS    serve CLIENTS connections, then exit
 *
 * Every byte a client sends comes back to it; when a client shuts down its
 * side, the server closes the connection. Several clients are connected at
 * once, so the server must never block on one of them: every socket is
 * non-blocking and one kevent queue says which one can go on.
 *
 * REFERENCE SOLUTION, for teachers: students write exercises/01-echo/answer.c.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <sys/socket.h>

#include "kselftest.h"
#include "kevent_user.h"

#define MAX_EVENTS	64

/*
 * Echo what connection @fd has to read. Returns 1 when the connection is
 * over (the client shut down, or an error), 0 when it stays open.
 *
 * TCP may take less than you write: for this exercise, small messages, a
 * loop that writes until everything was taken is enough (see the hints for
 * the better way, a KEVENT_SOCKET_SEND kevent).
 */
static int echo(int fd)
{
	char buf[16384];

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf)), off = 0;

		if (r == 0)
			return 1;
		if (r < 0)
			return errno != EAGAIN;
		while (off < r) {
			ssize_t w = write(fd, buf + off, r - off);

			/* Full: the client reads its echo; try again. */
			if (w < 0 && errno == EAGAIN) {
				usleep(1000);
				continue;
			}
			if (w < 0)
				return 1;
			off += w;
		}
	}
}

/*
 * Serve @clients connections on listening socket @ls with kevent queue
 * @kq. Returns how many were served to their end.
 */
static int serve(int kq, int ls, int clients)
{
	struct ukevent uk = kevent_fd(ls, KEVENT_SOCKET, KEVENT_SOCKET_ACCEPT, 0);
	struct ukevent ev[MAX_EVENTS];
	int served = 0;

	if (kevent_add(kq, &uk, 1) != 1)
		ksft_exit_fail_msg("ADD: %s\n", strerror(uk.ret_data[0]));

	while (served < clients) {
		long n, i;

		/*
		 * WAIT sleeps until @num events are ready: sleep for one, then
		 * take whatever else is ready without sleeping.
		 */
		n = kevent_wait(kq, ev, 1, KEVENT_WAIT_FOREVER);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ksft_exit_fail_msg("WAIT: %s\n", strerror(errno));
		n += kevent_wait(kq, ev + 1, MAX_EVENTS - 1, 0);
		for (i = 0; i < n; i++) {
			int fd = ev[i].id.raw[0], c;

			if (fd == ls) {
				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					uk = kevent_fd(c, KEVENT_SOCKET, KEVENT_SOCKET_RECV, 0);
					if (kevent_add(kq, &uk, 1) != 1)
						ksft_exit_fail_msg("ADD %d: %s\n", c,
								   strerror(uk.ret_data[0]));
				}
				continue;
			}
			/*
			 * Level triggered: one WAIT may deliver an event of a
			 * connection closed a moment ago in this batch, whose
			 * REMOVE then fails: skip it.
			 */
			uk = kevent_fd(fd, KEVENT_SOCKET, 0, 0);
			if (echo(fd) && kevent_remove(kq, &uk, 1) == 1) {
				close(fd);
				served++;
			}
		}
	}
	return served;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1, clients, kq, ls;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PORT CLIENTS\n", argv[0]);
		return 2;
	}
	sa.sin_port = htons(atoi(argv[1]));
	clients = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(1);

	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 16))
		ksft_exit_fail_msg("listening socket: %s\n", strerror(errno));
	kq = kevent_init();
	if (kq < 0)
		ksft_exit_fail_msg("KEVENT_CTL_INIT: %s\n", strerror(errno));

	ksft_test_result(serve(kq, ls, clients) == clients, "served_all_clients\n");
	close(ls);
	close(kq);
	ksft_finished();
}
