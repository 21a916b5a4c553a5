// SPDX-License-Identifier: GPL-2.0+
/*
 * ex06_check: reads the trace of exercise 06's server run and counts its
 * wake-ups (docs/exercises/06-herd.md).
 *
 *   ex06_check TRACE MESSAGES
 *
 * TRACE holds the kevent_wake tracepoint of the answer's run: one line for
 * every thread a wake-up of a kevent queue woke ("pid=N all=0|1"). The
 * clients send one message at a time, so every message finds the threads
 * asleep: one wake-up per message is the least a pool can do, the one that
 * wakes the thread that echoes it. A level-triggered pool makes two: the
 * arrival, and the kevent going back on the ready list after WAIT
 * delivered it while its data was still unread. A message larger than a
 * TCP segment arrives in several, and a segment that comes after the
 * answer read until EAGAIN is a new edge: hence the allowance up to
 * MAX_PER_MESSAGE (one message in 20 is large).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest.h"

#define MAX_PER_MESSAGE	1.3
#define MAX_PIDS	64

int main(int argc, char **argv)
{
	int pids[MAX_PIDS], npids = 0, all = 0;
	long wakeups = 0, messages;
	char line[512];
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: %s TRACE MESSAGES\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	messages = atol(argv[2]);
	ksft_print_header();
	ksft_set_plan(4);
	f = fopen(argv[1], "r");
	if (!f)
		ksft_exit_fail_msg("no trace %s: %s\n", argv[1], strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, " kevent_wake: ");
		char *p;
		int pid, i;

		if (line[0] == '#' || !at)
			continue;
		wakeups++;
		p = strstr(at, " pid=");
		if (p && sscanf(p, " pid=%d", &pid) == 1) {
			for (i = 0; i < npids && pids[i] != pid; i++)
				;
			if (i == npids && npids < MAX_PIDS)
				pids[npids++] = pid;
		}
		all += strstr(at, " all=1") != NULL;
	}
	fclose(f);
	ksft_print_msg("%ld wake-ups for %ld messages: %.2f per message, %d threads woken, "
		       "%d by KEVENT_REQ_WAKEUP_ALL kevents\n", wakeups, messages,
		       messages ? (double)wakeups / messages : 0.0, npids, all);
	ksft_test_result(wakeups >= messages, "every_message_woke_a_thread\n");
	ksft_test_result(npids >= 2, "several_threads_did_the_work\n");
	ksft_test_result(!all, "no_kevent_wakes_every_thread\n");
	ksft_test_result(wakeups >= messages && wakeups <= MAX_PER_MESSAGE * messages,
			 "one_wakeup_per_message\n");
	ksft_finished();
}
