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
 * What is given: the listening socket, the queue, the KTAP lines the lab
 * reads. What you write: the parts marked TODO.
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
	/* TODO: read() until EAGAIN; write back what came; 0 bytes read = over. */
	return 1;
}

/*
 * Serve @clients connections on listening socket @ls with kevent queue
 * @kq. Returns how many were served to their end.
 */
static int serve(int kq, int ls, int clients)
{
	int served = 0;

	/* TODO: ADD a KEVENT_SOCKET kevent for @ls (kevent_fd() builds one). */

	while (served < clients) {
		/*
		 * TODO: WAIT for events (kevent_wait()). For each one:
		 *  - the listening socket: accept4(..., SOCK_NONBLOCK) every
		 *    connection waiting and ADD a KEVENT_SOCKET_RECV kevent
		 *    for each;
		 *  - a connection: echo() it; when it is over, REMOVE its
		 *    kevent, close it and count it as served.
		 */
		break;
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
