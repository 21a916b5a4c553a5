// SPDX-License-Identifier: GPL-2.0+
/*
 * ex04_servers: for exercise 04, the kevent echo server and then the epoll
 * one, each for one client, in one traced run (a host has one trace buffer).
 *
 *   ex04_servers KEVENT_PORT EPOLL_PORT
 *
 * Each server is a process of its own, so the trace tells their tasks
 * apart by name: kevent_echo and ex04_epoll_echo. Their KTAP output goes to
 * KEVENT_PORT.log and EPOLL_PORT.log in the working directory (the host's
 * results directory); this program reports how each ended.
 */
#define _GNU_SOURCE
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "kselftest.h"

static int run(const char *log, char *const argv[])
{
	int status = -1;
	pid_t pid = fork();

	if (!pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	char *kevent[] = { "/opt/kevent/kevent_echo", "server", argv[1], "1", NULL };
	char *epoll[] = { "/opt/kevent/ex04_epoll_echo", argv[2], "1", NULL };

	if (argc != 3) {
		fprintf(stderr, "usage: %s KEVENT_PORT EPOLL_PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(2);
	ksft_test_result(run("kevent_echo.log", kevent), "kevent_echo_served_its_client\n");
	ksft_test_result(run("epoll_echo.log", epoll), "epoll_echo_served_its_client\n");
	ksft_finished();
}
