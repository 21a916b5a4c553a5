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
 * REFERENCE SOLUTION, for teachers: students write exercises/02-inode/answer.c.
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
	struct ukevent uk;
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

	uk = kevent_fd(dfd, KEVENT_INODE, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 0);
	if (kevent_add(kq, &uk, 1) != 1) {
		fprintf(stderr, "ADD: %s\n", strerror(uk.ret_data[0]));
		return 1;
	}
	/*
	 * The kevent does not need the descriptor after ADD; kept open, it
	 * would keep the directory alive, and "gone" would never come.
	 */
	close(dfd);
	printf("watching\n");

	for (;;) {
		long n = kevent_wait(kq, &uk, 1, KEVENT_WAIT_FOREVER);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1) {
			perror("WAIT");
			return 1;
		}
		if (report(&uk))
			return 0;
	}
}
