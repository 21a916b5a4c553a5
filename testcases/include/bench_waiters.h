/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * bench_waiters.h: one interface over every way of waiting for readable
 * descriptors that the readiness benchmarks compare:
 *
 *   kevent_socket  KEVENT_SOCKET / KEVENT_SOCKET_RECV
 *   kevent_poll    KEVENT_POLL / POLLIN
 *   kevent_et      KEVENT_SOCKET / KEVENT_SOCKET_RECV, edge-triggered
 *                  (KEVENT_REQ_ET), waited for with kevent_get_events():
 *                  one call takes what is ready, as epoll_wait() does
 *   kevent_ring    KEVENT_SOCKET / KEVENT_SOCKET_RECV, level triggered, on a
 *                  queue with a ready ring: the kernel puts events in as
 *                  they happen, they are taken without a call, and the
 *                  waiter calls kevent_get_events() only when it is empty
 *   epoll_lt       epoll, level-triggered
 *   epoll_et       epoll, edge-triggered (EPOLLET)
 *   poll           poll() over every descriptor
 *   select         select(), only while every descriptor is below FD_SETSIZE
 *   uring_poll     io_uring IORING_OP_POLL_ADD, oneshot, re-armed after
 *                  each read and submitted with the next wait
 *
 * A waiter watches descriptors fds[0..n) for input and reports ready ones
 * by their index. Every system call it makes goes through COUNTED(); for
 * io_uring that is one io_uring_enter() per io_uring_submit_and_wait() with
 * a wait count of 1, which liburing always makes.
 */
#ifndef BENCH_WAITERS_H
#define BENCH_WAITERS_H

#include <liburing.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "bench_kevent.h"

/* open() results besides 0: the method cannot run here (say why). */
#define WAITER_UNSUPPORTED	(-2)

struct waiter {
	const char *name;
	const int *fds;
	unsigned int n;
	/* one of these, by method */
	int kq;
	struct kq_buf kb;
	int epfd;
	struct epoll_event *eev;
	struct pollfd *pfd;
	fd_set set;
	int maxfd;
	struct io_uring ring;
	int ring_up;
	struct kevent_ring *kring;
	char why[96];		/* why the method is unsupported */
};

struct waiter_ops {
	const char *name;
	int (*open)(struct waiter *w);
	/* Blocks until something is ready; fills @ready with up to @max indices. */
	long (*wait)(struct waiter *w, unsigned int *ready, unsigned int max);
	/* After the caller read descriptor @i dry (oneshot methods re-arm). */
	void (*consumed)(struct waiter *w, unsigned int i);
	void (*close)(struct waiter *w);
};

/* ---- kevent --------------------------------------------------------------- */

struct kevent_reg { const int *fds; unsigned int type, event, flags; };

static struct ukevent kevent_reg_make(unsigned int i, void *arg)
{
	struct kevent_reg *r = arg;
	struct ukevent uk = kevent_fd(r->fds[i], r->type, r->event, r->flags);

	uk.user[0] = i;
	return uk;
}

static int kevent_open_as(struct waiter *w, unsigned int type, unsigned int event,
			  unsigned int flags)
{
	struct kevent_reg r = { w->fds, type, event, flags };

	w->kq = kevent_init();
	if (w->kq < 0) {
		snprintf(w->why, sizeof(w->why), "kevent_ctl(INIT): %s", strerror(errno));
		return errno == ENOSYS ? WAITER_UNSUPPORTED : -1;
	}
	if (kq_buf_init(&w->kb) || kq_add_all(w->kq, &w->kb, w->n, kevent_reg_make, &r))
		return -1;
	return 0;
}

static int kevent_socket_open(struct waiter *w)
{
	return kevent_open_as(w, KEVENT_SOCKET, KEVENT_SOCKET_RECV, 0);
}

static int kevent_et_open(struct waiter *w)
{
	return kevent_open_as(w, KEVENT_SOCKET, KEVENT_SOCKET_RECV, KEVENT_REQ_ET);
}

static int kevent_poll_open(struct waiter *w)
{
	return kevent_open_as(w, KEVENT_POLL, KEVENT_POLL_POLLIN, 0);
}

/* The events @n of them in @w->kb as ready indices; -1 for a broken one. */
static long kevent_ready_indices(struct waiter *w, long n, unsigned int *ready)
{
	long i;

	for (i = 0; i < n; i++) {
		struct ukevent uk;

		kq_get(&w->kb, i, &uk);
		if (uk.ret_flags & KEVENT_RET_BROKEN) {
			errno = uk.ret_data[0];
			return -1;
		}
		ready[i] = uk.user[0];
	}
	return n;
}

static long kevent_wait_ready(struct waiter *w, unsigned int *ready, unsigned int max)
{
	long n = kq_wait_some(w->kq, &w->kb, max, KEVENT_WAIT_FOREVER);

	return n < 0 ? n : kevent_ready_indices(w, n, ready);
}

static long kevent_get_ready(struct waiter *w, unsigned int *ready, unsigned int max)
{
	long n;

	if (max > w->kb.max)
		max = w->kb.max;
	n = COUNTED(kevent_get_events(w->kq, 1, max,
				      (struct ukevent *)(w->kb.mem + KEVENT_CTL_SIZE), NULL));
	return n < 0 ? n : kevent_ready_indices(w, n, ready);
}

static void kevent_close(struct waiter *w)
{
	if (w->kring)
		munmap(w->kring, KEVENT_RING_SIZE(w->kring->mask + 1));
	w->kring = NULL;
	close(w->kq);
	kq_buf_free(&w->kb);
}

#define WAITER_RING	4096

static int kevent_ring_waiter_open(struct waiter *w)
{
	struct kevent_reg r = { w->fds, KEVENT_SOCKET, KEVENT_SOCKET_RECV, 0 };

	w->kq = kevent_ring_open(WAITER_RING, &w->kring);
	if (w->kq < 0) {
		snprintf(w->why, sizeof(w->why), "kevent_init(ring): %s", strerror(errno));
		return errno == ENOSYS || errno == EINVAL ? WAITER_UNSUPPORTED : -1;
	}
	if (kq_buf_init(&w->kb) || kq_add_all(w->kq, &w->kb, w->n, kevent_reg_make, &r))
		return -1;
	return 0;
}

/* What the ring holds, without a call; one call to sleep when it is empty. */
static long kevent_ring_waiter_wait(struct waiter *w, unsigned int *ready, unsigned int max)
{
	struct ukevent uk;
	long n = 0;

	while (!kevent_ring_pending(w->kring))
		if (COUNTED(kevent_ring_wait(w->kq, 1, -1)) < 0)
			return -1;
	while (n < max && kevent_ring_take(w->kring, &uk)) {
		if (uk.ret_flags & KEVENT_RET_BROKEN) {
			errno = uk.ret_data[0];
			return -1;
		}
		ready[n++] = uk.user[0];
	}
	return n;
}

/* ---- epoll ---------------------------------------------------------------- */

static int epoll_open_as(struct waiter *w, unsigned int flags)
{
	unsigned int i;

	w->epfd = epoll_create1(0);
	w->eev = calloc(KEVENT_CTL_MAX_NUM, sizeof(*w->eev));
	if (w->epfd < 0 || !w->eev)
		return -1;
	for (i = 0; i < w->n; i++) {
		struct epoll_event ev = { .events = EPOLLIN | flags, .data.u32 = i };

		if (COUNTED(epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->fds[i], &ev)))
			return -1;
	}
	return 0;
}

static int epoll_lt_open(struct waiter *w)
{
	return epoll_open_as(w, 0);
}

static int epoll_et_open(struct waiter *w)
{
	return epoll_open_as(w, EPOLLET);
}

static long epoll_wait_ready(struct waiter *w, unsigned int *ready, unsigned int max)
{
	long n, i;

	if (max > KEVENT_CTL_MAX_NUM)
		max = KEVENT_CTL_MAX_NUM;
	do
		n = COUNTED(epoll_wait(w->epfd, w->eev, max, -1));
	while (n < 0 && errno == EINTR);
	for (i = 0; i < n; i++)
		ready[i] = w->eev[i].data.u32;
	return n;
}

static void epoll_close(struct waiter *w)
{
	close(w->epfd);
	free(w->eev);
}

/* ---- poll and select ------------------------------------------------------ */

static int poll_open(struct waiter *w)
{
	unsigned int i;

	w->pfd = calloc(w->n, sizeof(*w->pfd));
	if (!w->pfd)
		return -1;
	for (i = 0; i < w->n; i++) {
		w->pfd[i].fd = w->fds[i];
		w->pfd[i].events = POLLIN;
	}
	return 0;
}

static long poll_wait_ready(struct waiter *w, unsigned int *ready, unsigned int max)
{
	long n = COUNTED(poll(w->pfd, w->n, -1)), got = 0;
	unsigned int i;

	if (n < 0)
		return -1;
	/* What a poll() user pays besides the call: looking at every entry. */
	for (i = 0; i < w->n && got < max; i++)
		if (w->pfd[i].revents)
			ready[got++] = i;
	return got;
}

static void poll_close(struct waiter *w)
{
	free(w->pfd);
}

static int select_open(struct waiter *w)
{
	unsigned int i;

	FD_ZERO(&w->set);
	w->maxfd = -1;
	for (i = 0; i < w->n; i++) {
		if (w->fds[i] >= FD_SETSIZE) {
			snprintf(w->why, sizeof(w->why), "descriptor %d is above FD_SETSIZE (%d)",
				 w->fds[i], FD_SETSIZE);
			return WAITER_UNSUPPORTED;
		}
		FD_SET(w->fds[i], &w->set);
		if (w->fds[i] > w->maxfd)
			w->maxfd = w->fds[i];
	}
	return 0;
}

static long select_wait_ready(struct waiter *w, unsigned int *ready, unsigned int max)
{
	fd_set set = w->set;
	long n = COUNTED(select(w->maxfd + 1, &set, NULL, NULL, NULL)), got = 0;
	unsigned int i;

	if (n < 0)
		return -1;
	for (i = 0; i < w->n && got < max; i++)
		if (FD_ISSET(w->fds[i], &set))
			ready[got++] = i;
	return got;
}

static void select_close(struct waiter *w)
{
}

/* ---- io_uring ------------------------------------------------------------- */

#define URING_SQ	1024

static struct io_uring_sqe *uring_sqe(struct waiter *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);

	if (!sqe) {
		/* The submission queue is full: hand it over and go on. */
		COUNTED(io_uring_submit(&w->ring));
		sqe = io_uring_get_sqe(&w->ring);
	}
	return sqe;
}

static void uring_arm(struct waiter *w, unsigned int i)
{
	struct io_uring_sqe *sqe = uring_sqe(w);

	io_uring_prep_poll_add(sqe, w->fds[i], POLLIN);
	io_uring_sqe_set_data64(sqe, i);
}

static int uring_poll_open(struct waiter *w)
{
	struct io_uring_params p = { 0 };
	unsigned int i;
	int ret;

	/*
	 * Every watched descriptor may complete at once: room for all of them
	 * in the CQ ring (which may not be smaller than the SQ ring).
	 */
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = w->n < URING_SQ ? 2 * URING_SQ : 2 * w->n;
	ret = io_uring_queue_init_params(URING_SQ, &w->ring, &p);
	if (ret < 0) {
		snprintf(w->why, sizeof(w->why), "io_uring_setup: %s", strerror(-ret));
		return ret == -ENOSYS ? WAITER_UNSUPPORTED : -1;
	}
	w->ring_up = 1;
	for (i = 0; i < w->n; i++)
		uring_arm(w, i);
	return COUNTED(io_uring_submit(&w->ring)) < 0 ? -1 : 0;
}

static long uring_poll_wait_ready(struct waiter *w, unsigned int *ready, unsigned int max)
{
	struct io_uring_cqe *cqe;
	long got = 0;
	int ret;

	do
		ret = COUNTED(io_uring_submit_and_wait(&w->ring, 1));
	while (ret == -EINTR);
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	while (got < max && !io_uring_peek_cqe(&w->ring, &cqe)) {
		if (cqe->res < 0) {
			errno = -cqe->res;
			return -1;
		}
		ready[got++] = (unsigned int)io_uring_cqe_get_data64(cqe);
		io_uring_cqe_seen(&w->ring, cqe);
	}
	return got;
}

static void uring_poll_consumed(struct waiter *w, unsigned int i)
{
	/* Queued only: the next io_uring_submit_and_wait() submits it. */
	uring_arm(w, i);
}

static void uring_close(struct waiter *w)
{
	if (w->ring_up)
		io_uring_queue_exit(&w->ring);
	w->ring_up = 0;
}

static const struct waiter_ops waiter_methods[] = {
	{ "kevent_socket", kevent_socket_open, kevent_wait_ready, NULL, kevent_close },
	{ "kevent_poll", kevent_poll_open, kevent_wait_ready, NULL, kevent_close },
	{ "kevent_et", kevent_et_open, kevent_get_ready, NULL, kevent_close },
	{ "kevent_ring", kevent_ring_waiter_open, kevent_ring_waiter_wait, NULL, kevent_close },
	{ "epoll_lt", epoll_lt_open, epoll_wait_ready, NULL, epoll_close },
	{ "epoll_et", epoll_et_open, epoll_wait_ready, NULL, epoll_close },
	{ "poll", poll_open, poll_wait_ready, NULL, poll_close },
	{ "select", select_open, select_wait_ready, NULL, select_close },
	{ "uring_poll", uring_poll_open, uring_poll_wait_ready, uring_poll_consumed, uring_close },
};

#define N_WAITER_METHODS	(sizeof(waiter_methods) / sizeof(waiter_methods[0]))

#endif /* BENCH_WAITERS_H */
