// SPDX-License-Identifier: GPL-2.0+
/*
 * ex02_check: checks a directory watcher of exercise 02.
 *
 *   ex02_check PROGRAM
 *
 * Runs "PROGRAM DIR" on a fresh directory with its output on a pipe, makes
 * one change at a time and reads the line the answer prints for it. Twice
 * the answer is stopped (SIGSTOP) while several changes are made, so that
 * they fall between two of its WAITs and must come as one event with their
 * count. At the end the directory is removed: the answer must say "gone"
 * with ENOENT and exit 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "kevent_user.h"
#include "ex_answer.h"

#define LINE_MS		3000	/* the answer's report of a change */
#define QUIET_MS	300	/* no report: this long without a line */

static char dir[64];
static struct ex_lines from_answer;
static pid_t answer;

/* The answer's next line, within @ms; "" if none came, "(exited)" at its end. */
static const char *next_line(int ms, char *line, size_t size)
{
	if (ex_next_line(&from_answer, ms, line, size) < 0)
		snprintf(line, size, "%s", "(exited)");
	return line;
}

/* Test @name: the answer's next line must be @want, and nothing after it. */
static void expect_line(const char *name, const char *want)
{
	char got[256], extra[256];

	next_line(LINE_MS, got, sizeof(got));
	if (strcmp(got, want)) {
		ksft_print_msg("%s: expected \"%s\", the answer printed \"%s\"\n", name, want,
			       got[0] ? got : "(nothing)");
		ksft_test_result_fail("%s\n", name);
		return;
	}
	next_line(QUIET_MS, extra, sizeof(extra));
	if (extra[0])
		ksft_print_msg("%s: one more line, \"%s\"\n", name, extra);
	ksft_test_result(!extra[0], "%s\n", name);
}

static void expect_quiet(const char *name)
{
	char got[256];

	next_line(QUIET_MS * 2, got, sizeof(got));
	if (got[0])
		ksft_print_msg("%s: expected no line, the answer printed \"%s\"\n", name, got);
	ksft_test_result(!got[0], "%s\n", name);
}

static void in_dir(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", dir, name);
}

static void touch(const char *name)
{
	char path[128];
	int fd;

	in_dir(name, path, sizeof(path));
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		ksft_exit_fail_msg("create %s: %s\n", path, strerror(errno));
	close(fd);
}

static void rm(const char *name)
{
	char path[128];

	in_dir(name, path, sizeof(path));
	if (unlink(path) && rmdir(path))
		ksft_exit_fail_msg("remove %s: %s\n", path, strerror(errno));
}

/* Stop the answer, so that what follows falls between two of its WAITs. */
static void pause_answer(void)
{
	int status;

	kill(answer, SIGSTOP);
	waitpid(answer, &status, WUNTRACED);
}

int main(int argc, char **argv)
{
	char path[128], other[128], line[256];
	int status = -1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROGRAM\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(9);
	snprintf(dir, sizeof(dir), "/tmp/ex02-%d", getpid());
	if (mkdir(dir, 0755))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	from_answer.fd = ex_start((char *[]){ argv[1], dir, NULL }, &answer);
	if (from_answer.fd < 0)
		ksft_exit_fail_msg("starting %s: %s\n", argv[1], strerror(errno));

	next_line(LINE_MS, line, sizeof(line));
	ksft_test_result(!strcmp(line, "watching"), "answer_is_watching\n");

	touch("a");
	expect_line("create_a_file", "event=create changes=1");
	in_dir("sub", path, sizeof(path));
	mkdir(path, 0755);
	expect_line("make_a_directory", "event=create changes=1");
	in_dir("a", path, sizeof(path));
	in_dir("b", other, sizeof(other));
	rename(path, other);
	expect_line("rename_inside_is_both", "event=create+remove changes=1");
	rm("b");
	expect_line("unlink_a_file", "event=remove changes=1");

	/* Only the directory's own entries count. */
	touch("sub/deeper");
	expect_quiet("change_in_a_subdirectory_is_not_reported");

	pause_answer();
	touch("x");
	touch("y");
	touch("z");
	kill(answer, SIGCONT);
	expect_line("three_creates_between_two_waits_are_one_event",
		    "event=create changes=3");

	pause_answer();
	rm("x");
	rm("y");
	kill(answer, SIGCONT);
	expect_line("two_removes_between_two_waits_are_one_event",
		    "event=remove changes=2");

	/* The end: everything goes, the directory itself last. */
	rm("z");
	next_line(LINE_MS, line, sizeof(line));
	rm("sub/deeper");
	rm("sub");
	next_line(LINE_MS, line, sizeof(line));
	rmdir(dir);
	next_line(LINE_MS, line, sizeof(line));
	if (strcmp(line, "gone errno=2"))
		ksft_print_msg("after rmdir of the directory: expected \"gone errno=2\", "
			       "the answer printed \"%s\"\n", line[0] ? line : "(nothing)");
	else if (strcmp(next_line(LINE_MS, line, sizeof(line)), "(exited)"))
		ksft_print_msg("the answer did not end after \"gone\"\n");
	else if (waitpid(answer, &status, 0) == answer && !(WIFEXITED(status) && !WEXITSTATUS(status)))
		ksft_print_msg("the answer ended with status %#x, not 0\n", status);
	kill(answer, SIGKILL);
	if (status == -1)
		waitpid(answer, NULL, 0);
	ksft_test_result(WIFEXITED(status) && !WEXITSTATUS(status) && status != -1,
			 "directory_removed_is_gone\n");
	ksft_finished();
}
