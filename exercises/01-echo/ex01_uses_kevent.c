// SPDX-License-Identifier: GPL-2.0+
/*
 * ex01_uses_kevent: on the server's host, while the answer of exercise 01
 * runs, checks that it waits with a kevent queue and KEVENT_SOCKET kevents,
 * and not with epoll, poll() or threads.
 *
 *   ex01_uses_kevent PROGRAM
 *
 * It looks at /proc/PID/fd and /proc/PID/fdinfo of the process whose name
 * is PROGRAM, until the queue holds a socket kevent or the process is gone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <time.h>

#include "kselftest.h"
#include "kevent_user.h"

#define LOOK_MS	20000
#define FIND_MS	2000	/* the lab starts the answer just before us */

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
	int pid = 0, t;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROGRAM\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(2);
	for (t = 0; t < LOOK_MS; t += 10) {
		pid = pid ? pid : find(argv[1]);
		if (!pid && t > FIND_MS)
			break;
		if (pid) {
			look(pid, &s);
			if (s.socket_kevents || kill(pid, 0))
				break;
		}
		usleep(10 * 1000);
	}
	if (!pid)
		ksft_print_msg("no process named %s ran\n", argv[1]);
	else
		ksft_print_msg("%s (pid %d): %d kevent queue(s), %d socket kevent(s), "
			       "%d epoll fd(s), %d thread(s)\n", argv[1], pid, s.queues,
			       s.socket_kevents, s.epolls, s.threads);
	/* Only a look that found socket kevents says how the answer waits. */
	ksft_test_result(s.queues == 1 && s.socket_kevents > 0,
			 "one_queue_with_KEVENT_SOCKET_kevents\n");
	ksft_test_result(s.socket_kevents > 0 && !s.epolls && s.threads == 1,
			 "no_epoll_no_threads\n");
	ksft_finished();
}
