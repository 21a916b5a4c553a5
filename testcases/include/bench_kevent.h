/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * bench_kevent.h: kevent_ctl() without the allocation kevent_user.h makes
 * per call. A benchmark keeps one buffer per queue: the control block,
 * then the ukevent array at byte offset 12 (see docs/abi.md), so a timed
 * loop measures the system call and not malloc().
 */
#ifndef BENCH_KEVENT_H
#define BENCH_KEVENT_H

#include "bench.h"
#include "kevent_user.h"

struct kq_buf {
	char *mem;		/* control block + KEVENT_CTL_MAX_NUM ukevents */
	unsigned int max;
};

static inline int kq_buf_init(struct kq_buf *b)
{
	b->max = KEVENT_CTL_MAX_NUM;
	b->mem = calloc(1, KEVENT_CTL_SIZE + b->max * sizeof(struct ukevent));
	return b->mem ? 0 : -1;
}

static inline void kq_buf_free(struct kq_buf *b)
{
	free(b->mem);
	b->mem = NULL;
}

/* Entry @i of the array behind the control block (it is not aligned). */
static inline void kq_get(const struct kq_buf *b, unsigned int i, struct ukevent *uk)
{
	memcpy(uk, b->mem + KEVENT_CTL_SIZE + i * sizeof(*uk), sizeof(*uk));
}

static inline void kq_put(struct kq_buf *b, unsigned int i, const struct ukevent *uk)
{
	memcpy(b->mem + KEVENT_CTL_SIZE + i * sizeof(*uk), uk, sizeof(*uk));
}

/* One counted kevent_ctl() of @cmd on the first @num entries of @b. */
static inline long kq_ctl(int kq, struct kq_buf *b, unsigned int cmd,
			  unsigned int num, unsigned int timeout)
{
	struct kevent_user_control ctl = { cmd, num, timeout };

	memcpy(b->mem, &ctl, sizeof(ctl));
	return COUNTED(sys_kevent_ctl(kq, b->mem));
}

/*
 * Registers @n kevents, @per_call at a time (at most KEVENT_CTL_MAX_NUM);
 * @make(i) builds entry i. Returns 0 when every entry was taken.
 */
static inline int kq_add_all(int kq, struct kq_buf *b, unsigned int n,
			     struct ukevent (*make)(unsigned int i, void *arg), void *arg)
{
	unsigned int i, k;

	for (i = 0; i < n; i += k) {
		k = n - i < b->max ? n - i : b->max;
		for (unsigned int j = 0; j < k; j++) {
			struct ukevent uk = make(i + j, arg);

			kq_put(b, j, &uk);
		}
		if (kq_ctl(kq, b, KEVENT_CTL_ADD, k, 0) != k)
			return -1;
	}
	return 0;
}

/*
 * Up to @max ready events into @b, waiting for the first one if none is
 * ready: the loop of a busy server, which takes what is ready in one call
 * and sleeps only when there is nothing (two calls then, as docs/abi.md's
 * "Waiting for several events" shows). Returns how many, or -1.
 */
static inline long kq_wait_some(int kq, struct kq_buf *b, unsigned int max,
				unsigned int timeout_ms)
{
	struct ukevent first;
	long n, more;

	if (max > b->max)
		max = b->max;
	n = kq_ctl(kq, b, KEVENT_CTL_WAIT, max, 0);
	if (n)
		return n;
	n = kq_ctl(kq, b, KEVENT_CTL_WAIT, 1, timeout_ms);
	if (n <= 0 || max == 1)
		return n;
	kq_get(b, 0, &first);
	more = kq_ctl(kq, b, KEVENT_CTL_WAIT, max - 1, 0);
	if (more < 0)
		return -1;
	/* Entry 0 now holds the first of the drained ones: move it to the end. */
	if (more) {
		struct ukevent uk;

		kq_get(b, 0, &uk);
		kq_put(b, more, &uk);
	}
	kq_put(b, 0, &first);
	return 1 + more;
}

#endif /* BENCH_KEVENT_H */
