/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * ex_answer.h: what the checkers of the exercises share: run the student's
 * program with its output on a pipe, and read that output a line at a time
 * with a time limit.
 */
#ifndef EX_ANSWER_H
#define EX_ANSWER_H

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * The user a student's answer runs as (lab/kevent_lab/run.py's ANSWER_USER):
 * not the checker's, so that the answer can neither signal nor trace the
 * checker, nor read its /proc files. A checker that starts the answer itself
 * runs as root for this alone. The lab driver says which uid in
 * LAB_ANSWER_UID: another one when the machine's user has this one, since
 * the answer would then own its host's logs (hostfs shows the machine's
 * owners).
 */
#define EX_ANSWER_UID	1000

static inline uid_t ex_answer_uid(void)
{
	const char *s = getenv("LAB_ANSWER_UID");
	char *end;
	unsigned long uid;

	if (!s || !*s)
		return EX_ANSWER_UID;
	errno = 0;
	uid = strtoul(s, &end, 10);
	/* Never root, never a malformed value: the default then. */
	if (errno || *end || !uid || uid > 65535)
		return EX_ANSWER_UID;
	return (uid_t)uid;
}

/*
 * Start @argv (argv[0] is the program) with its standard output on a pipe,
 * as ex_answer_uid() when we are root. Returns the pipe's read end and sets
 * *@pid, or -1.
 */
static inline int ex_start(char *const argv[], pid_t *pid)
{
	int p[2];

	if (pipe(p))
		return -1;
	*pid = fork();
	if (*pid < 0)
		return -1;
	if (!*pid) {
		dup2(p[1], 1);
		/*
		 * The answer gets standard input, output and error only: none of
		 * the checker's descriptors (its log, its connections).
		 */
		close_range(3, ~0U, 0);
		uid_t uid = ex_answer_uid();

		if (!geteuid() && (setgroups(0, NULL) || setgid(uid) || setuid(uid))) {
			fprintf(stderr, "cannot become user %u: %s\n", (unsigned int)uid,
				strerror(errno));
			_exit(126);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	return p[0];
}

/* Output of the answer read but not yet taken as lines. */
struct ex_lines {
	int fd;
	char pending[4096];
	size_t len;
};

/*
 * The next line of @in, without its newline, into @line: 1 if one came
 * within @ms, 0 if none did, -1 at the end of the output.
 */
static inline int ex_next_line(struct ex_lines *in, int ms, char *line, size_t size)
{
	for (;;) {
		char *nl = memchr(in->pending, '\n', in->len);
		struct pollfd p = { in->fd, POLLIN, 0 };
		ssize_t r;

		line[0] = 0;
		if (nl) {
			size_t n = nl - in->pending + 1;

			snprintf(line, size, "%.*s", (int)(n - 1), in->pending);
			memmove(in->pending, in->pending + n, in->len - n);
			in->len -= n;
			return 1;
		}
		if (poll(&p, 1, ms) != 1)
			return 0;
		r = read(in->fd, in->pending + in->len, sizeof(in->pending) - in->len - 1);
		if (r <= 0)
			return -1;
		in->len += r;
	}
}

#endif /* EX_ANSWER_H */
