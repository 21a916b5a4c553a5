// SPDX-License-Identifier: GPL-2.0
/*
 * web_serve: runs several servers side by side as one foreground run, and
 * ends when all of them did.
 *
 *   web_serve PROGRAM ARGS... [-- PROGRAM ARGS...]...
 *
 * A PROGRAM without a slash is one of /opt/kevent. The benchmark lab needs
 * this: a host's background runs start before its first run and last to its
 * end, so the web servers would sit beside the single-host benchmarks that
 * follow them; as one foreground run they live only between the runs before
 * and after it. Each server is one KTAP test, ok when it exited with 0,
 * with the server's own output (its KTAP) as its subtest, indented: kept
 * in a file meanwhile, since servers running together would mix lines.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SERVERS	16

int main(int argc, char **argv)
{
	char *names[MAX_SERVERS], path[256];
	pid_t pids[MAX_SERVERS];
	FILE *out[MAX_SERVERS];
	int n = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: %s PROGRAM ARGS... [-- PROGRAM ARGS...]...\n", argv[0]);
		return 2;
	}
	printf("TAP version 13\n");
	for (int i = 1; i < argc && n < MAX_SERVERS; n++) {
		int end = i;

		while (end < argc && strcmp(argv[end], "--"))
			end++;
		argv[end] = NULL;
		names[n] = argv[i];
		snprintf(path, sizeof(path), "%s%s", strchr(argv[i], '/') ? "" : "/opt/kevent/", argv[i]);
		out[n] = tmpfile();
		pids[n] = out[n] ? fork() : -1;
		if (pids[n] == 0) {
			dup2(fileno(out[n]), 1);
			dup2(fileno(out[n]), 2);
			execv(path, argv + i);
			fprintf(stderr, "web_serve: exec %s failed\n", path);
			_exit(127);
		}
		i = end + 1;
	}
	printf("1..%d\n", n);
	for (int k = 0; k < n; k++) {
		char line[4096];
		int status = -1;

		if (pids[k] > 0)
			waitpid(pids[k], &status, 0);
		if (out[k]) {
			rewind(out[k]);
			while (fgets(line, sizeof(line), out[k]))
				printf("    %s%s", line, strchr(line, '\n') ? "" : "\n");
			fclose(out[k]);
		}
		if (pids[k] < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			failed++;
			printf("not ok %d %s\n", k + 1, names[k]);
		} else {
			printf("ok %d %s\n", k + 1, names[k]);
		}
	}
	return failed ? 1 : 0;
}
