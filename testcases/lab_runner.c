// SPDX-License-Identifier: GPL-2.0+
/*
 * lab_runner: runs one testcase inside a lab host and records its output.
 *
 *   lab_runner -o OUT -t SECONDS [-p PREFIX] [-u UID] -- PROGRAM [ARGS...]
 *
 * With -u the program runs as user and group UID with no supplementary
 * groups (the lab uses 65534, nobody): it cannot write the results of the
 * run (OUT is opened before, as root), mount a file system, or write to the
 * console or the kernel log behind lab_runner's back.
 *
 * Every line the program prints (stdout and stderr) goes to OUT, prefixed
 * with the CLOCK_MONOTONIC time at which it arrived, so the lab driver can
 * tell how long each KTAP test took. The lines also go to our stdout (the
 * console) behind PREFIX. The program runs in its own process group; if
 * it is still running after SECONDS the whole group is killed.
 *
 * Our own records start at the beginning of a line of OUT, where no line of
 * the program can (each of those starts with its time), so a program that
 * prints "#lab-exit status=0" and hangs cannot pass for one that ended:
 *   #lab-start <time> PROGRAM
 *   #lab-exit <time> status=N | signal=N | timeout=SECONDS
 * On the console a record is PREFIX without its trailing space, then the
 * record ("[a:core]#lab-exit ..."), which a program's line (PREFIX, then
 * the line) cannot be either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line of the program's output; fwrite, so that a NUL cannot cut it. */
static void emit(FILE *out, const char *prefix, const char *line, size_t len)
{
	fprintf(out, "%.6f ", now_s());
	fwrite(line, 1, len, out);
	fputc('\n', out);
	fflush(out);
	fputs(prefix, stdout);
	fwrite(line, 1, len, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

/* One of our records: OUT and the console. */
static void record(FILE *out, const char *prefix, const char *what, const char *how, int n)
{
	size_t plen = strlen(prefix);
	double t = now_s();

	fprintf(out, "#lab-%s %.6f %s%d\n", what, t, how, n);
	fflush(out);
	if (plen && prefix[plen - 1] == ' ')
		plen--;
	printf("%.*s#lab-%s %s%d\n", (int)plen, prefix, what, how, n);
	fflush(stdout);
}

/*
 * Best effort: raising a hard limit needs CAP_SYS_RESOURCE, which root in a
 * guest has, but root in a container on a test machine may not; a program
 * that needs the headroom then says so itself.
 */
static void raise_limits(void)
{
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY }, files;
	long nr_open = 1048576;
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");

	if (f) {
		if (fscanf(f, "%ld", &nr_open) != 1)
			nr_open = 1048576;
		fclose(f);
	}
	if (!getrlimit(RLIMIT_NOFILE, &files) && files.rlim_max < (rlim_t)nr_open) {
		files.rlim_max = nr_open;
		setrlimit(RLIMIT_NOFILE, &files);
	}
	setrlimit(RLIMIT_MEMLOCK, &unlimited);
}

int main(int argc, char **argv)
{
	const char *outpath = NULL, *prefix = "";
	char buf[8192];
	size_t used = 0;
	int timeout = 60, opt, p[2], status;
	long uid = -1;
	char *end;
	double deadline;
	FILE *out;
	pid_t pid;

	while ((opt = getopt(argc, argv, "o:t:p:u:")) != -1) {
		switch (opt) {
		case 'o':
			outpath = optarg;
			break;
		case 't':
			timeout = atoi(optarg);
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'u':
			uid = strtol(optarg, &end, 10);
			if (*end || uid < 1 || uid > 65535)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (!outpath || optind >= argc || timeout <= 0)
		goto usage;

	/*
	 * Close-on-exec: the log is ours alone. Left open, the program would
	 * find it at descriptor 3 and could write a record of its own there.
	 */
	out = fopen(outpath, "we");
	if (!out) {
		fprintf(stderr, "lab_runner: %s: %s\n", outpath, strerror(errno));
		return 2;
	}
	if (pipe2(p, O_CLOEXEC)) {
		perror("lab_runner: pipe");
		return 2;
	}
	fprintf(out, "#lab-start %.6f %s\n", now_s(), argv[optind]);
	fflush(out);

	pid = fork();
	if (pid < 0) {
		perror("lab_runner: fork");
		return 2;
	}
	if (pid == 0) {
		setpgid(0, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		/*
		 * An unprivileged run gets the headroom a root one has: it may
		 * raise its descriptor limit to nr_open and lock as much memory
		 * as it likes (as limits.conf gives a user), so that only what
		 * truly needs root (mounting, sysctls, other users) tells the two
		 * apart.
		 */
		if (uid > 0)
			raise_limits();
		if (uid > 0 && (setgroups(0, NULL) || setgid(uid) || setuid(uid))) {
			fprintf(stderr, "lab_runner: cannot become user %ld: %s\n", uid, strerror(errno));
			_exit(126);
		}
		execv(argv[optind], argv + optind);
		fprintf(stderr, "exec %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(p[1]);

	deadline = now_s() + timeout;
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t r;
		char *nl;

		if (left <= 0) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			if (used)
				emit(out, prefix, buf, used);
			record(out, prefix, "exit", "timeout=", timeout);
			return 1;
		}
		if (poll(&pfd, 1, left) <= 0)
			continue;
		r = read(p[0], buf + used, sizeof(buf) - 1 - used);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		used += r;
		while ((nl = memchr(buf, '\n', used))) {
			size_t len = nl - buf;

			emit(out, prefix, buf, len);
			memmove(buf, nl + 1, used - len - 1);
			used -= len + 1;
		}
		if (used == sizeof(buf) - 1) {
			emit(out, prefix, buf, used);
			used = 0;
		}
	}
	if (used)
		emit(out, prefix, buf, used);
	/* The program closed its output; children it left behind go too. */
	waitpid(pid, &status, 0);
	kill(-pid, SIGKILL);
	if (WIFSIGNALED(status))
		record(out, prefix, "exit", "signal=", WTERMSIG(status));
	else
		record(out, prefix, "exit", "status=", WEXITSTATUS(status));
	fclose(out);
	return 0;

usage:
	fprintf(stderr, "usage: lab_runner -o OUT -t SECONDS [-p PREFIX] [-u UID] -- PROGRAM [ARGS...]\n");
	return 2;
}
