// SPDX-License-Identifier: GPL-2.0
/*
 * web_nginx: the machine's nginx (a host with tools) as the web lab's
 * baseline server, serving the files of include/web.h.
 *
 *   web_nginx PORT CONTROL_PORT [SECONDS]
 *
 * Writes the files and a configuration of its own under /tmp (one worker,
 * epoll, sendfile, tcp_nopush and tcp_nodelay, as nginx is usually run,
 * access log off, every temporary path in /tmp: no root needed; and
 * open_file_cache, checked again after a second, as kevent_httpd's loops
 * keep their files open: the same work per request), starts
 * nginx in the foreground, and stops it when a client connects to
 * CONTROL_PORT (web_check quit ADDR CONTROL_PORT) or after SECONDS.
 * KTAP: that nginx started and was still running when told to stop.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "web.h"

#define DIR	"/tmp/web-nginx"

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int port, seconds = 600, cs, one = 1, status;
	struct pollfd pfd;
	pid_t pid;
	FILE *conf;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s PORT CONTROL_PORT [SECONDS]\n", argv[0]);
		return 2;
	}
	port = atoi(argv[1]);
	if (argc == 4)
		seconds = atoi(argv[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..2\n");
	mkdir(DIR, 0755);
	if (web_make_files(DIR "/www"))
		goto fail;
	conf = fopen(DIR "/nginx.conf", "w");
	if (!conf)
		goto fail;
	fprintf(conf,
		/* 1000 connections, each with a file open: above the usual 1024. */
		"worker_processes 1;\nworker_rlimit_nofile 8192;\n"
		"pid " DIR "/nginx.pid;\nerror_log " DIR "/error.log;\n"
		"events { worker_connections 4096; use epoll; }\n"
		"http {\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  tcp_nodelay on;\n"
		"  keepalive_requests 1000000;\n  default_type application/octet-stream;\n"
		"  open_file_cache max=1000 inactive=60s;\n  open_file_cache_valid 1s;\n"
		"  client_body_temp_path " DIR "/body;\n  proxy_temp_path " DIR "/proxy;\n"
		"  fastcgi_temp_path " DIR "/fastcgi;\n  uwsgi_temp_path " DIR "/uwsgi;\n"
		"  scgi_temp_path " DIR "/scgi;\n"
		"  server { listen %d; root " DIR "/www; location / { } }\n}\n", port);
	if (fclose(conf))
		goto fail;
	cs = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = htons(atoi(argv[2]));
	if (cs < 0 || setsockopt(cs, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(cs, (void *)&sa, sizeof(sa)) || listen(cs, 4))
		goto fail;
	pid = fork();
	if (pid == 0) {
		close(cs);
		execlp("nginx", "nginx", "-p", DIR, "-e", DIR "/error.log", "-c", DIR "/nginx.conf",
		       "-g", "daemon off;", (char *)NULL);
		fprintf(stderr, "web_nginx: cannot run nginx: %s (a host with tools runs the machine's)\n",
			strerror(errno));
		_exit(127);
	}
	printf("# nginx %d serving port %d; stops when port %s is connected to\n", pid, port, argv[2]);
	pfd = (struct pollfd){ .fd = cs, .events = POLLIN };
	for (int waited = 0; waited < seconds * 10; waited++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			printf("not ok 1 nginx_ran # it exited, status %d\n", status);
			system("cat " DIR "/error.log");
			return 1;
		}
		if (poll(&pfd, 1, 100) == 1)
			break;
	}
	printf("ok 1 nginx_ran\n");
	kill(pid, SIGQUIT);		/* nginx's graceful shutdown */
	waitpid(pid, &status, 0);
	printf("%s 2 nginx_stopped\n", WIFEXITED(status) || WIFSIGNALED(status) ? "ok" : "not ok");
	return 0;
fail:
	printf("not ok 1 setup # %s\n", strerror(errno));
	return 1;
}
