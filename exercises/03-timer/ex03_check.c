// SPDX-License-Identifier: GPL-2.0+
/*
 * ex03_check: checks the timer program of exercise 03.
 *
 *   ex03_check PROGRAM
 *
 * Runs "PROGRAM 50 5 320" with its output on a pipe and notes when each
 * line arrives. The figure a late WAIT must report is computed from those
 * times: at least LATE/PERIOD - 1 and the periods measured - 1, at most
 * the periods measured + 2 (the guest's scheduler and the pipe delay a
 * line by a few milliseconds, more on a busy machine).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest.h"
#include "kevent_user.h"
#include "ex_answer.h"

#define PERIOD	50
#define TICKS	5
#define LATE	320
#define LINE_MS	2000

static struct ex_lines from_answer;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The answer's next line into @line ("" if none within LINE_MS); when it came. */
static double next_line(char *line, size_t size)
{
	ex_next_line(&from_answer, LINE_MS, line, size);
	return now_ms();
}

int main(int argc, char **argv)
{
	unsigned int n, counted = 0, good_ticks = 0, i;
	double start, t, last_tick = 0, late_at = 0;
	int status = -1, late_n = -1;
	char line[256], done[256];
	pid_t pid;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROGRAM\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(5);
	start = now_ms();
	from_answer.fd = ex_start((char *[]){ argv[1], "50", "5", "320", NULL }, &pid);
	if (from_answer.fd < 0)
		ksft_exit_fail_msg("starting %s: %s\n", argv[1], strerror(errno));

	for (i = 0; i < TICKS; i++) {
		t = next_line(line, sizeof(line));
		if (sscanf(line, "tick %u", &n) != 1) {
			ksft_print_msg("tick %u: expected \"tick N\", got \"%s\"\n", i + 1,
				       line[0] ? line : "(nothing)");
			break;
		}
		good_ticks += n >= 1;
		counted += n;
		last_tick = t;
	}
	ksft_test_result(i == TICKS && good_ticks == TICKS, "five_ticks_each_counting_at_least_one\n");
	if (i == TICKS)
		ksft_print_msg("%u periods counted in %.0f ms\n", counted, last_tick - start);
	/* Never early: the fifth tick comes after five periods at least. */
	ksft_test_result(i == TICKS && last_tick - start >= TICKS * PERIOD - 5 &&
			 counted <= (last_tick - start) / PERIOD + 1,
			 "ticks_never_early_and_counted_right\n");

	t = next_line(line, sizeof(line));
	if (sscanf(line, "late %d", &late_n) == 1)
		late_at = t;
	if (late_at && last_tick) {
		/* The periods that passed between the two lines, give or take one. */
		int want = (late_at - last_tick) / PERIOD;

		ksft_print_msg("late %d after %.0f ms without a WAIT (about %d periods)\n",
			       late_n, late_at - last_tick, want);
		/*
		 * At least LATE / PERIOD periods expired while the answer slept
		 * (one less for the timer's slack); at most those the checker
		 * saw pass, and two more for a line that reached it late.
		 */
		ksft_test_result(late_n >= LATE / PERIOD - 1 && late_n >= want - 1 && late_n <= want + 2,
				 "late_wait_counts_the_periods_missed\n");
	} else {
		ksft_print_msg("expected \"late N\", got \"%s\"\n", line[0] ? line : "(nothing)");
		ksft_test_result_fail("late_wait_counts_the_periods_missed\n");
	}

	next_line(done, sizeof(done));
	if (strcmp(done, "done"))
		ksft_print_msg("expected \"done\", got \"%s\"\n", done[0] ? done : "(nothing)");
	ksft_test_result(!strcmp(done, "done"), "nothing_after_remove\n");
	for (i = 0; i < 20 && waitpid(pid, &status, WNOHANG) != pid; i++)
		usleep(100 * 1000);
	if (i == 20) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	ksft_test_result(WIFEXITED(status) && !WEXITSTATUS(status), "answer_exits_0\n");
	ksft_finished();
}
