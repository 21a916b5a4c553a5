/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * kevent_user.h: a small user-space library for the kevent system calls.
 *
 * The kernel reads the ukevent array right behind struct
 * kevent_user_control, at byte offset 12, where a C struct with a trailing
 * array could not put it (struct ukevent is 8-byte aligned). These helpers
 * build that layout in a buffer and copy the entries in and out.
 */
#ifndef KEVENT_USER_H
#define KEVENT_USER_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kevent.h>

#ifndef __NR_aio_recv
#define __NR_aio_recv		451
#define __NR_aio_send		452
#define __NR_aio_sendfile	453
#define __NR_kevent_ctl		454
#endif

#define KEVENT_CTL_SIZE		sizeof(struct kevent_user_control)

static inline long sys_kevent_ctl(int fd, void *ctl)
{
	return syscall(__NR_kevent_ctl, fd, ctl);
}

/* A new queue: its file descriptor, or -1 with errno set. */
static inline int kevent_init(void)
{
	struct kevent_user_control ctl = { .cmd = KEVENT_CTL_INIT };

	return sys_kevent_ctl(0, &ctl);
}

/*
 * Run @cmd on @n entries of @uk (copied in, and back out again), with
 * @timeout for WAIT. Returns what kevent_ctl() returns.
 */
static inline long kevent_cmd(int fd, unsigned int cmd, struct ukevent *uk,
			      unsigned int n, unsigned int timeout)
{
	struct kevent_user_control ctl = { cmd, n, timeout };
	size_t len = KEVENT_CTL_SIZE + (size_t)n * sizeof(*uk);
	char *buf = calloc(1, len);
	long ret;
	int err;

	if (!buf)
		return -1;
	memcpy(buf, &ctl, sizeof(ctl));
	if (n)
		memcpy(buf + KEVENT_CTL_SIZE, uk, n * sizeof(*uk));
	ret = sys_kevent_ctl(fd, buf);
	err = errno;
	if (n)
		memcpy(uk, buf + KEVENT_CTL_SIZE, n * sizeof(*uk));
	free(buf);
	errno = err;
	return ret;
}

static inline long kevent_add(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_ADD, uk, n, 0);
}

static inline long kevent_remove(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_REMOVE, uk, n, 0);
}

static inline long kevent_modify(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_MODIFY, uk, n, 0);
}

/* Wait for @num events or @timeout_ms; returns how many were written. */
static inline long kevent_wait(int fd, struct ukevent *out, unsigned int num,
			       unsigned int timeout_ms)
{
	return kevent_cmd(fd, KEVENT_CTL_WAIT, out, num, timeout_ms);
}

/* A KEVENT_TIMER request: @period_ms, told apart by @tag. */
static inline struct ukevent kevent_timer(unsigned int period_ms,
					  unsigned int tag,
					  unsigned int req_flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = period_ms;
	uk.id.raw[1] = tag;
	uk.type = KEVENT_TIMER;
	uk.event = KEVENT_TIMER_FIRED;
	uk.req_flags = req_flags;
	return uk;
}

/* A request on file descriptor @fd: KEVENT_POLL, KEVENT_SOCKET or KEVENT_INODE. */
static inline struct ukevent kevent_fd(int fd, unsigned int type,
				       unsigned int event, unsigned int req_flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = fd;
	uk.type = type;
	uk.event = event;
	uk.req_flags = req_flags;
	return uk;
}

/* How many kevents queue @kq holds, as /proc/self/fdinfo says; -1 if unknown. */
static inline int kevent_queued(int kq)
{
	char path[64], line[256];
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", kq);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "kevents: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

#endif /* KEVENT_USER_H */
