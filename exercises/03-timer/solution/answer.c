// SPDX-License-Identifier: GPL-2.0+
/*
 * Exercise 03: a periodic KEVENT_TIMER, and what ret_data[0] counts when
 * WAIT comes late. (docs/exercises/03-timer.md)
 *
 *   ex03_answer PERIOD_MS TICKS LATE_MS
 *
 * 1. Add one periodic timer of PERIOD_MS; WAIT for it TICKS times, and
 *    print "tick N" after each, N being the event's ret_data[0].
 * 2. Then do not WAIT for LATE_MS (sleep); WAIT once more and print
 *    "late N", N being ret_data[0] of that delivery.
 * 3. REMOVE the timer, check that a WAIT of 3 periods delivers nothing,
 *    print "done" and exit 0.
 *
 * The checker, ex03_check, reads the lines and the time each arrives.
 * REFERENCE SOLUTION, for teachers: students write exercises/03-timer/answer.c.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "kevent_user.h"

int main(int argc, char **argv)
{
	unsigned int period, ticks, late, i;
	struct ukevent uk, ev;
	int kq;

	if (argc != 4) {
		fprintf(stderr, "usage: %s PERIOD_MS TICKS LATE_MS\n", argv[0]);
		return 2;
	}
	period = atoi(argv[1]);
	ticks = atoi(argv[2]);
	late = atoi(argv[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	kq = kevent_init();
	if (kq < 0) {
		perror("KEVENT_CTL_INIT");
		return 1;
	}

	/* Not oneshot: the timer re-arms itself every period until REMOVE. */
	uk = kevent_timer(period, 0, 0);
	if (kevent_add(kq, &uk, 1) != 1) {
		fprintf(stderr, "ADD: %s\n", strerror(uk.ret_data[0]));
		return 1;
	}
	for (i = 0; i < ticks; i++) {
		if (kevent_wait(kq, &ev, 1, 10 * period) != 1) {
			perror("WAIT");
			return 1;
		}
		printf("tick %u\n", ev.ret_data[0]);
	}

	/*
	 * While nobody waits, the timer keeps firing: its kevent is put on
	 * the ready list once, and each expiry adds one to ret_data[0].
	 */
	usleep(late * 1000);
	if (kevent_wait(kq, &ev, 1, 10 * period) != 1) {
		perror("WAIT");
		return 1;
	}
	printf("late %u\n", ev.ret_data[0]);

	uk = kevent_timer(period, 0, 0);
	if (kevent_remove(kq, &uk, 1) != 1 || kevent_wait(kq, &ev, 1, 3 * period) != 0) {
		fprintf(stderr, "the timer is still there after REMOVE\n");
		return 1;
	}
	printf("done\n");
	return 0;
}
