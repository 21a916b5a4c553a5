// SPDX-License-Identifier: GPL-2.0+
/*
 * ex01_uses_kevent: on the server's host, while the answer of exercise 01
 * runs, checks that it waits with a kevent queue and KEVENT_SOCKET kevents,
 * and not with epoll, poll() or threads.
 *
 *   ex01_uses_kevent PROGRAM PORT [LATE_MS]
 *
 * It looks at /proc/PID/fd and /proc/PID/fdinfo of the process whose name
 * is PROGRAM, at a moment when the answer must be waiting: while a
 * connection of our own to it (127.0.0.1:PORT) is open and idle. The
 * answer serves one client more than ex01_check opens, ours, so it cannot
 * have finished before we look, however fast it is. (Sampling /proc every
 * 10 ms, as this checker did before, missed a fast answer about one run
 * in 30.) With LATE_MS it connects only after that long, when the other
 * clients are done and a fast answer waits for nothing but us: the moment
 * the old checker missed, which the exercise's lab now creates every run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "kselftest.h"
#include "kevent_user.h"

#define CONNECT_MS	5000	/* the lab starts the answer just before us */
#define CLOSE_MS	5000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * A connection to the answer on 127.0.0.1:@port, trying again until it
 * listens; -1 with errno set (ECONNREFUSED if it never listened).
 */
static int dial_local(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	long long until = now_ms() + CONNECT_MS;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s >= 0 && !connect(s, (void *)&sa, sizeof(sa)))
			return s;
		if (s >= 0)
			close(s);
		if (now_ms() > until)
			return -1;
		usleep(20 * 1000);
	}
}

/* The pid of a process named @comm, or 0. */
static int find(const char *comm)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int pid = 0;

	while (d && (e = readdir(d)) && !pid) {
		char path[300], name[64] = "";
		FILE *f;

		if (!atoi(e->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f && fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = 0;
			if (!strcmp(name, comm))
				pid = atoi(e->d_name);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return pid;
}

struct seen {
	int queues, socket_kevents, epolls, threads;
};

static void look(int pid, struct seen *s)
{
	char path[300], link[300], line[256];
	struct dirent *e;
	DIR *d;
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strstr(link, "[eventpoll]"))
			s->epolls++;
		if (!strstr(link, "[kevent]"))
			continue;
		s->queues++;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "kevent: type:0 ", 15))
				s->socket_kevents++;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		sscanf(line, "Threads: %d", &s->threads);
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	struct seen s = { 0 };
	struct pollfd p;
	int pid = 0, conn;
	char c;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s PROGRAM PORT [LATE_MS]\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(2);
	if (argc == 4)
		usleep(atoi(argv[3]) * 1000);
	conn = dial_local(atoi(argv[2]));
	if (conn < 0) {
		ksft_print_msg("connect to 127.0.0.1:%s: %s: the answer %s\n", argv[2], strerror(errno),
			       errno == ECONNREFUSED ? "never listened there (did it start? see its log)"
						     : "did not accept");
	} else {
		/*
		 * Accepted: the connection waits in the answer's queue, or
		 * soon will; the answer cannot be done before it is closed.
		 * Give it a moment to accept and ADD, then look.
		 */
		int t;

		for (t = 0; t < 2000; t += 10) {
			pid = pid ? pid : find(argv[1]);
			if (pid) {
				look(pid, &s);
				if (s.socket_kevents >= 2)	/* listener + our connection */
					break;
			}
			usleep(10 * 1000);
		}
		/* Our part as a client: shut down, expect the answer to close. */
		shutdown(conn, SHUT_WR);
		p = (struct pollfd){ conn, POLLIN, 0 };
		if (poll(&p, 1, CLOSE_MS) != 1 || recv(conn, &c, 1, 0) != 0)
			ksft_print_msg("the answer did not close our connection after our shutdown\n");
		close(conn);
	}
	if (!pid)
		ksft_print_msg("no process named %s ran\n", argv[1]);
	else
		ksft_print_msg("%s (pid %d) while it served a connection: %d kevent queue(s), "
			       "%d socket kevent(s), %d epoll fd(s), %d thread(s)\n", argv[1], pid,
			       s.queues, s.socket_kevents, s.epolls, s.threads);
	ksft_test_result(s.queues == 1 && s.socket_kevents > 0,
			 "one_queue_with_KEVENT_SOCKET_kevents\n");
	ksft_test_result(s.socket_kevents > 0 && !s.epolls && s.threads == 1,
			 "no_epoll_no_threads\n");
	ksft_finished();
}
