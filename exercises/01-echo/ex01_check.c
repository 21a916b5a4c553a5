// SPDX-License-Identifier: GPL-2.0+
/*
 * ex01_check: checks an echo server of exercise 01 from another host.
 *
 *   ex01_check ADDR PORT
 *
 * Three connections are open at once, and each is answered while the
 * others stay open: a server that blocks on one client (a read() that
 * waits, a loop over accept()) does not pass. The server must serve
 * exactly three clients (run it as "ex01_answer PORT 3").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "kselftest.h"
#include "kevent_user.h"

#define CONNECT_MS	6000	/* the server's host boots beside ours (in 1 s) */
#define ANSWER_MS	5000
#define BIG		(256 * 1024)

static struct sockaddr_in server;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * A connection to the server, trying again until @wait_ms passed. Each try
 * is bounded too: a SYN to a host that is gone gets no answer at all.
 */
static int dial(long long wait_ms)
{
	long long until = now_ms() + wait_ms;
	int telling = 0;	/* the last error that says more than "no answer yet" */

	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		struct pollfd p = { s, POLLOUT, 0 };
		int err = 0, left = until - now_ms();
		socklen_t len = sizeof(err);

		if (connect(s, (void *)&server, sizeof(server)) && errno != EINPROGRESS)
			err = errno;
		else if (poll(&p, 1, left > 1000 ? 1000 : left > 0 ? left : 0) != 1)
			err = ETIMEDOUT;
		else
			getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
		if (!err) {
			/* The checks below use blocking calls bounded by poll(). */
			fcntl(s, F_SETFL, 0);
			return s;
		}
		close(s);
		/*
		 * The last try can run out of time (ETIMEDOUT) though every
		 * try before was refused: report the refusal, which says
		 * what is wrong (nothing listens on the port).
		 */
		if (err != ETIMEDOUT)
			telling = err;
		errno = telling ? telling : err;
		if (now_ms() > until)
			return -1;
		usleep(50 * 1000);
	}
}

static unsigned char pattern(int who, size_t i)
{
	return (unsigned char)(i * 7 + (i >> 9) + who * 41);
}

/*
 * Send @len bytes of client @who's pattern on @s and read the echo at the
 * same time (a big message does not fit the socket buffers at once).
 * Returns NULL, or what went wrong.
 */
static const char *exchange(int s, int who, size_t len)
{
	size_t sent = 0, got = 0;
	long long until = now_ms() + ANSWER_MS;
	unsigned char buf[16384];

	while (got < len) {
		struct pollfd p = { s, POLLIN | (sent < len ? POLLOUT : 0), 0 };
		int left = until - now_ms();

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return got ? "the echo stopped before its end" : "no echo came back";
		if (p.revents & POLLOUT) {
			size_t n = len - sent < sizeof(buf) ? len - sent : sizeof(buf), i;
			ssize_t w;

			for (i = 0; i < n; i++)
				buf[i] = pattern(who, sent + i);
			w = send(s, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0 && errno != EAGAIN)
				return "send failed";
			sent += w > 0 ? w : 0;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(s, buf, sizeof(buf), MSG_DONTWAIT), i;

			if (r <= 0 && !(r < 0 && errno == EAGAIN))
				return "the server closed the connection before the echo was complete";
			for (i = 0; i < r; i++)
				if (buf[i] != pattern(who, got + i))
					return "the echo differs from what was sent";
			got += r > 0 ? r : 0;
		}
	}
	return NULL;
}

/* After our shutdown(SHUT_WR) the server must close: recv() gives 0. */
static const char *closed_by_server(int s)
{
	struct pollfd p = { s, POLLIN, 0 };
	char c;

	shutdown(s, SHUT_WR);
	if (poll(&p, 1, ANSWER_MS) <= 0)
		return "the server did not close the connection after our shutdown";
	return recv(s, &c, 1, 0) == 0 ? NULL : "more data came after the echo";
}

static void result(const char *why, const char *name)
{
	if (why)
		ksft_print_msg("%s: %s\n", name, why);
	ksft_test_result(!why, "%s\n", name);
}

int main(int argc, char **argv)
{
	int a, b, c;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	/*
	 * A server that crashes resets our connections: a send() then must
	 * fail with EPIPE and be reported, not kill this checker (SIGPIPE).
	 */
	signal(SIGPIPE, SIG_IGN);
	server.sin_family = AF_INET;
	server.sin_port = htons(atoi(argv[2]));
	inet_pton(AF_INET, argv[1], &server.sin_addr);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(6);

	a = dial(CONNECT_MS);
	if (a < 0) {
		static const char *const rest[] = {
			"one_message_echoed", "second_client_served_while_first_is_open",
			"first_client_served_again", "big_message_echoed_byte_for_byte",
			"connections_closed_after_client_shutdown",
		};
		unsigned int i;

		ksft_print_msg("connect to %s:%s: %s%s\n", argv[1], argv[2], strerror(errno),
			       errno == ECONNREFUSED ? ": nothing listens there (did the server start? "
						       "see a.echo.server.log)" : "");
		ksft_test_result_fail("server_accepts\n");
		ksft_print_msg("no server: the other checks fail with it\n");
		for (i = 0; i < ARRAY_SIZE(rest); i++)
			ksft_test_result_fail("%s\n", rest[i]);
		ksft_finished();
	}
	ksft_test_result_pass("server_accepts\n");
	result(exchange(a, 0, 64), "one_message_echoed");

	/* a stays open: a server stuck in read(a) never answers b. */
	b = dial(ANSWER_MS);
	result(b < 0 ? "the second connection was refused" : exchange(b, 1, 1000),
	       "second_client_served_while_first_is_open");
	result(exchange(a, 0, 100), "first_client_served_again");

	c = dial(ANSWER_MS);
	result(c < 0 ? "the third connection was refused" : exchange(c, 2, BIG),
	       "big_message_echoed_byte_for_byte");

	{
		const char *why = closed_by_server(a);

		why = why ? why : b < 0 ? "no second connection" : closed_by_server(b);
		why = why ? why : c < 0 ? "no third connection" : closed_by_server(c);
		result(why, "connections_closed_after_client_shutdown");
	}
	ksft_finished();
}
