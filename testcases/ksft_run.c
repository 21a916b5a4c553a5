// SPDX-License-Identifier: GPL-2.0
/*
 * ksft_run: one of the kernel's own test programs (a selftest, or Debian's
 * stress-ng) as KTAP results the lab can count, whatever that program prints.
 *
 *   ksft_run [--name NAME] [--skip-exit N]... [--chdir DIR]
 *            [--wait-listen PORT] -- PROGRAM [ARGS...]
 *
 * The kernel's selftests do not agree on an output: the harness ones print
 * KTAP, kselftest.h ones a plan without a version line (or results without a
 * plan), the timers and the network ones only words and an exit status. So
 * PROGRAM's output becomes a subtest of result NAME (PROGRAM's name if not
 * given): its plan and result lines as they are, every other line as a
 * diagnostic, its own version lines dropped (the subtest has one). Its exit
 * status is one more result, NAME.exit (NAME itself where PROGRAM printed
 * no results): 0 passes; 4 (KSFT_SKIP) and every --skip-exit N is a skip;
 * any other status or a signal fails, with PROGRAM's last lines. So neither
 * the words nor the status alone can make a failure pass.
 *
 * --chdir runs PROGRAM in DIR (the selftests' scripts call their programs
 * as ./NAME). --wait-listen first waits, up to 60 s, until a TCP socket of
 * this host listens on PORT (/proc/net/tcp): a client whose server, a
 * background run, may not be listening yet. It looks instead of connecting,
 * for a server that takes one connection only (msg_zerocopy -r).
 *
 * ksft_run itself exits 0 once it has reported, so that the lab counts the
 * verdict above and not the wrapper's status; 2 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KSFT_SKIP 4
#define MAX_SKIP_CODES 8

static int is_version(const char *l)
{
	return !strncmp(l, "TAP version ", 12) || !strncmp(l, "KTAP version ", 13);
}

static int is_plan(const char *l)
{
	return !strncmp(l, "1..", 3);
}

static int is_result(const char *l)
{
	const char *p;

	if (!strncmp(l, "ok ", 3))
		p = l + 3;
	else if (!strncmp(l, "not ok ", 7))
		p = l + 7;
	else
		return 0;
	return *p >= '0' && *p <= '9';
}

/* A result of PROGRAM's that failed (a skip of the same line does not). */
static int child_failed, nresults, opened;

/* PROGRAM's last lines that were not results: repeated in a failure. */
#define TAIL 12
static char *tail[TAIL];
static unsigned int ntail;

static void keep(const char *line)
{
	free(tail[ntail % TAIL]);
	tail[ntail++ % TAIL] = strdup(line);
}

static void tail_lines(void)
{
	if (!opened)		/* they are the top level's diagnostics already */
		return;
	unsigned int i = ntail > TAIL ? ntail - TAIL : 0;

	for (; i < ntail; i++)
		if (tail[i % TAIL])
			printf("# %s\n", tail[i % TAIL][0] == '#' ?
			       tail[i % TAIL] + 1 : tail[i % TAIL]);
}

/* One line of PROGRAM's output, one level down. */
static void relay(const char *line)
{
	if (is_version(line))
		return;
	if (is_result(line)) {
		nresults++;
		if (!strncmp(line, "not ok ", 7) && !strcasestr(line, "# SKIP"))
			child_failed = 1;
	} else if (!is_plan(line)) {
		keep(line);
	}
	/*
	 * The subtest opens at PROGRAM's first plan or result: what comes
	 * before (all of it, for a program that prints no results) is
	 * diagnostics of the top level, which a failure there carries.
	 */
	if (!opened && (is_plan(line) || is_result(line))) {
		printf("    KTAP version 1\n");
		opened = 1;
	}
	if (is_plan(line) || is_result(line) || (opened && line[0] == '#'))
		printf("    %s\n", line);
	else
		printf("%s# %s\n", opened ? "    " : "", line[0] == '#' ? line + 1 : line);
}

/* Whether /proc/net/FILE lists a socket listening on local @port. */
static int listed(const char *file, int port)
{
	char line[512];
	unsigned int lport, state;
	int found = 0;
	FILE *f = fopen(file, "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		/* "  0: 00000000:1F40 00000000:0000 0A ...": 0A is LISTEN */
		found = sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x",
			       &lport, &state) == 2 && (int)lport == port && state == 0x0A;
	fclose(f);
	return found;
}

/* 0 once this host has a TCP socket listening on @port, -1 after 60 s. */
static int wait_listen(int port)
{
	int i;

	for (i = 0; i < 600; i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		if (listed("/proc/net/tcp", port) || listed("/proc/net/tcp6", port))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

/*
 * PROGRAM's stdout is a pipe, so its C library buffers what it prints
 * until it exits: one that hangs and is killed at its timeout would show
 * nothing of how far it got. Where this machine's coreutils can be reached
 * (a `tools` host), ask for line buffering the way stdbuf -oL -eL does,
 * through its preload; programs linked statically are not affected.
 */
#define LIBSTDBUF "/usr/libexec/coreutils/libstdbuf.so"

static void line_buffered(void)
{
	const char *old = getenv("LD_PRELOAD");
	char *preload;

	if (access(LIBSTDBUF, R_OK))
		return;
	if (asprintf(&preload, "%s%s%s", old ? old : "", old ? ":" : "", LIBSTDBUF) < 0)
		return;
	setenv("LD_PRELOAD", preload, 1);
	setenv("_STDBUF_O", "L", 1);
	setenv("_STDBUF_E", "L", 1);
	free(preload);
}

static void usage(void)
{
	fprintf(stderr, "usage: ksft_run [--name NAME] [--skip-exit N]... [--chdir DIR] "
		"[--wait-listen PORT] -- PROGRAM [ARGS...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int skip[MAX_SKIP_CODES] = { KSFT_SKIP }, nskip = 1;
	const char *name = NULL, *dir = NULL;
	int wait = 0;
	char *line = NULL;
	size_t cap = 0;
	int i, n, pipefd[2], status, skipped = 0;
	char exit_name[512];
	ssize_t len;
	FILE *out;
	pid_t pid;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--name") && i + 1 < argc) {
			name = argv[++i];
		} else if (!strcmp(argv[i], "--chdir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strcmp(argv[i], "--wait-listen") && i + 1 < argc) {
			wait = atoi(argv[++i]);
			if (wait <= 0 || wait > 65535)
				usage();
		} else if (!strcmp(argv[i], "--skip-exit") && i + 1 < argc &&
			   nskip < MAX_SKIP_CODES) {
			char *end;

			skip[nskip++] = strtol(argv[++i], &end, 10);
			if (*end)
				usage();
		} else {
			usage();
		}
	}
	if (i + 1 >= argc)
		usage();
	argv += i + 1;
	if (!name)
		name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	printf("TAP version 13\n");
	fflush(stdout);
	if (wait && wait_listen(wait)) {
		printf("# nothing listened on TCP port %d for 60 s\nnot ok 1 %s\n1..1\n",
		       wait, name);
		return 0;
	}
	if (dir && chdir(dir)) {
		printf("# cannot enter %s: %s\nnot ok 1 %s\n1..1\n", dir, strerror(errno), name);
		return 0;
	}
	if (pipe(pipefd))
		return perror("pipe"), 1;
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (!pid) {
		line_buffered();
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	out = fdopen(pipefd[0], "r");
	if (!out)
		return perror("fdopen"), 1;
	while ((len = getline(&line, &cap, out)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		relay(line);
		fflush(stdout);
	}
	fclose(out);
	free(line);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return perror("waitpid"), 1;

	/*
	 * PROGRAM's results, if it printed any, are the children of result 1;
	 * its exit status is a result of its own, so that a status that
	 * fails is counted even where every printed result passed. The plan
	 * comes last, when it is known (KTAP allows that).
	 */
	if (nresults) {
		printf("%s 1 %s\n", child_failed ? "not ok" : "ok", name);
		snprintf(exit_name, sizeof(exit_name), "%s.exit", name);
		n = 2;
	} else {
		snprintf(exit_name, sizeof(exit_name), "%s", name);
		n = 1;
	}
	if (WIFSIGNALED(status)) {
		tail_lines();
		printf("# %s was killed by signal %d (%s)\nnot ok %d %s\n", argv[0],
		       WTERMSIG(status), strsignal(WTERMSIG(status)), n, exit_name);
	} else {
		for (i = 0; i < nskip; i++)
			skipped |= WEXITSTATUS(status) == skip[i];
		if (!WEXITSTATUS(status)) {
			printf("ok %d %s\n", n, exit_name);
		} else if (skipped) {
			printf("ok %d %s # SKIP %s exited with status %d\n", n, exit_name,
			       argv[0], WEXITSTATUS(status));
		} else {
			tail_lines();
			printf("# %s exited with status %d\nnot ok %d %s\n", argv[0],
			       WEXITSTATUS(status), n, exit_name);
		}
	}
	printf("1..%d\n", n);
	return 0;
}
