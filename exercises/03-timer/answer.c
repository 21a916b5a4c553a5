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
 * What is given: main(). What you write: the parts marked TODO.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "kevent_user.h"

int main(int argc, char **argv)
{
	unsigned int period, ticks, late;
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

	/* TODO 1: ADD a periodic timer (kevent_timer()); TICKS times WAIT, print "tick N". */

	/* TODO 2: usleep() LATE_MS, WAIT, print "late N". */

	/* TODO 3: REMOVE it; a WAIT of 3 * PERIOD_MS must return 0; print "done". */

	(void)period, (void)ticks, (void)late;
	return 1;
}
