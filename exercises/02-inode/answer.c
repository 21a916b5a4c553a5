// SPDX-License-Identifier: GPL-2.0+
/*
 * Exercise 02: watch a directory with KEVENT_INODE.
 * (docs/exercises/02-inode.md)
 *
 *   ex02_answer DIR
 *
 * Prints one line per event WAIT delivers, as report() writes it, and
 * ends (exit status 0) when the directory itself is gone. The checker,
 * ex02_check, runs this program, changes DIR and compares the lines with
 * what it did.
 *
 * What is given: the output format. What you write: the parts marked TODO.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>

#include "kevent_user.h"

/* The line the checker reads for one delivered event; 1 when it was the last. */
static int report(const struct ukevent *ev)
{
	static const char *const names[] = { "none", "create", "remove", "create+remove" };

	if (ev->ret_flags & KEVENT_RET_BROKEN) {
		printf("gone errno=%u\n", ev->ret_data[0]);
		return 1;
	}
	printf("event=%s changes=%u\n", names[ev->ret_data[0] & 3], ev->ret_data[1]);
	return 0;
}

int main(int argc, char **argv)
{
	int kq, dfd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	kq = kevent_init();
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (kq < 0 || dfd < 0) {
		perror(argv[1]);
		return 1;
	}

	/* TODO: ADD a KEVENT_INODE kevent on dfd for creates and removes. */

	printf("watching\n");

	/*
	 * TODO: WAIT for one event at a time, without a time limit, and
	 * report() each; stop when report() says it was the last.
	 * A signal ends a WAIT with -1 and EINTR (the checker stops and
	 * continues this program on purpose): then wait again.
	 */
	(void)report;
	(void)dfd;
	return 1;
}
