// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_wake_cycle_test: wake-up cycles through a kevent queue (issue 32,
 * confirmed defect 1). A queue Q wakes the pollers of its descriptor under
 * the lock of their wait queue. A poller's callback that runs there and ends,
 * through any chain of other wakers, at a kevent of Q (a KEVENT_POLL watch
 * on an eventfd, a signalfd, another queue) made Q wake its pollers again
 * under the same lock: recursive locking, a hard lockup of the whole machine
 * (lockdep: "possible recursive locking detected" on the debug kernel).
 *
 * Each test builds one such chain, fires it, and checks
 * that every event of it came through: the call returns, aio's or io_uring's
 * completion is there, and Q delivers the watch's event. On the series
 * before the fix, run one test per boot of the debug kernel (-t NAME),
 * lockdep reported "possible recursive locking detected" (&q->wait, taken
 * again in kevent_wake()) for the chains fired by a queue: aio, epoll,
 * signalfd, a queue watching a queue, and the rings of two and three
 * queues. A UML guest runs one CPU and its spinlocks do not spin, so the
 * lab kernel survived them; on SMP each is a hard lockup. The chain fired
 * by the eventfd, the io_uring chains (which complete from task work) and
 * the pollers' test passed there too: they are here so that no later
 * change breaks them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <linux/aio_abi.h>
#include <liburing.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000	/* ms: "it arrives" */
#define NEVER 200	/* ms: "it does not arrive" */

#define kpoll(fd) kevent_fd(fd, KEVENT_POLL, KEVENT_POLL_POLLIN, 0)

/* One aio context, and IOCB_CMD_POLL requests whose completion signals an eventfd. */
struct aio {
	aio_context_t ctx;
};

static int aio_open(struct aio *a)
{
	a->ctx = 0;
	return syscall(__NR_io_setup, 16, &a->ctx);
}

static void aio_close(struct aio *a)
{
	syscall(__NR_io_destroy, a->ctx);
}

/* Poll @fd for POLLIN; the completion signals @resfd. */
static int aio_poll_signalling(struct aio *a, int fd, int resfd, unsigned long tag)
{
	struct iocb cb, *p = &cb;

	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_lio_opcode = IOCB_CMD_POLL;
	cb.aio_buf = POLLIN;
	cb.aio_flags = IOCB_FLAG_RESFD;
	cb.aio_resfd = resfd;
	cb.aio_data = tag;
	return syscall(__NR_io_submit, a->ctx, 1, &p);
}

/* The completion tagged @tag arrived within SOON, with POLLIN. */
static int aio_completed(struct aio *a, unsigned long tag)
{
	struct timespec ts = { SOON / 1000, 0 };
	struct io_event ev;

	if (syscall(__NR_io_getevents, a->ctx, 1, 1, &ev, &ts) != 1)
		return 0;
	return ev.data == tag && (ev.res & POLLIN);
}

/* An eventfd's count, taken (0 if it has none). */
static unsigned long long efd_take(int efd)
{
	unsigned long long n = 0;

	if (read(efd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

static int efd_kick(int efd)
{
	unsigned long long one = 1;

	return write(efd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

/* Make @kq ready from user space: a KEVENT_USER kevent named @name, posted. */
static int queue_kick(int kq, unsigned int name)
{
	struct ukevent uk = kevent_user_event(name, 1, KEVENT_REQ_ONESHOT);

	if (kevent_add(kq, &uk, 1) < 0)
		return -1;
	return kevent_post(kq, &uk, 1) < 0 ? -1 : 0;
}

/*
 * @kq delivers, within SOON, a kevent of @type on @id; it may deliver others
 * first (the kick, a watch of the chain), at most 8 of them.
 */
static int queue_delivers(int kq, unsigned int type, unsigned long long id)
{
	struct ukevent out;
	int i;

	for (i = 0; i < 8; i++) {
		long n = kevent_wait(kq, &out, 1, SOON);

		/* io_uring's task work ends a WAIT as it ends epoll_wait(). */
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1)
			return 0;
		if (out.type == type && out.id.raw[0] == id)
			return 1;
	}
	return 0;
}

/*
 * The common start of a chain: queue Q (kq) watches eventfd E (efd) with
 * KEVENT_POLL, and an aio context is open for requests on Q.
 */
FIXTURE(chain) {
	int kq;
	int efd;
	struct aio a;
};

FIXTURE_SETUP(chain)
{
	struct ukevent w;

	self->kq = kevent_init();
	self->efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_GE(self->kq, 0);
	ASSERT_GE(self->efd, 0);
	ASSERT_EQ(0, aio_open(&self->a));
	w = kpoll(self->efd);
	ASSERT_LE(0, kevent_add(self->kq, &w, 1));
}

FIXTURE_TEARDOWN(chain)
{
	EXPECT_QUEUE_WORKS(self->kq);
	aio_close(&self->a);
	close(self->efd);
	close(self->kq);
}

/*
 * The reported chain: Q watches eventfd E; aio polls Q and signals E. Q's
 * first ready event completes the poll inside Q's wake-up, the completion
 * signals E, E's wake-up reaches Q's watch, and Q is ready again there.
 */
TEST_F(chain, aio_poll_and_eventfd_fired_by_the_queue)
{
	ASSERT_EQ(1, aio_poll_signalling(&self->a, self->kq, self->efd, 1));
	ASSERT_EQ(0, queue_kick(self->kq, 7));
	EXPECT_TRUE(aio_completed(&self->a, 1));
	EXPECT_TRUE(queue_delivers(self->kq, KEVENT_POLL, self->efd));
	EXPECT_EQ(1, efd_take(self->efd));
}

/*
 * The same chain fired from its other end, a write to E: E's wake-up
 * reaches Q's watch under E's lock, and Q's wake-up there completes the
 * poll, whose completion signals E again, inside E's own wake-up. aio sees
 * that (eventfd_signal_allowed()) and completes from a work item instead;
 * with the fix Q does not wake its pollers under E's lock at all. Both
 * signals must reach E's count.
 */
TEST_F(chain, aio_poll_and_eventfd_fired_by_the_eventfd)
{
	ASSERT_EQ(1, aio_poll_signalling(&self->a, self->kq, self->efd, 2));
	ASSERT_EQ(0, efd_kick(self->efd));
	EXPECT_TRUE(aio_completed(&self->a, 2));
	EXPECT_TRUE(queue_delivers(self->kq, KEVENT_POLL, self->efd));
	/* Our write, and the completion's signal. */
	EXPECT_EQ(2, efd_take(self->efd));
}

/* Q watches E; an io_uring with E registered (IORING_REGISTER_EVENTFD) polls Q. */
TEST_F(chain, io_uring_poll_with_registered_eventfd)
{
	struct __kernel_timespec ts = { SOON / 1000, 0 };
	struct io_uring_cqe *cqe;
	struct io_uring ring;

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	ASSERT_EQ(0, io_uring_register_eventfd(&ring, self->efd));
	io_uring_prep_poll_add(io_uring_get_sqe(&ring), self->kq, POLLIN);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, queue_kick(self->kq, 7));
	ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
	EXPECT_TRUE(cqe->res & POLLIN);
	io_uring_cqe_seen(&ring, cqe);
	EXPECT_TRUE(queue_delivers(self->kq, KEVENT_POLL, self->efd));
	EXPECT_LE(1, efd_take(self->efd));
	io_uring_queue_exit(&ring);
}

/* The same with a multishot poll: every wake-up of Q completes again. */
TEST_F(chain, io_uring_multishot_poll_with_registered_eventfd)
{
	struct __kernel_timespec ts = { SOON / 1000, 0 };
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct ukevent out[8];
	int i;

	ASSERT_EQ(0, io_uring_queue_init(64, &ring, 0));
	ASSERT_EQ(0, io_uring_register_eventfd(&ring, self->efd));
	io_uring_prep_poll_multishot(io_uring_get_sqe(&ring), self->kq, POLLIN);
	ASSERT_EQ(1, io_uring_submit(&ring));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, queue_kick(self->kq, 10 + i));
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		EXPECT_TRUE(cqe->res & POLLIN);
		io_uring_cqe_seen(&ring, cqe);
		/*
		 * Take the count the completion signalled, then what is
		 * ready (the watch of E is level-triggered), so that the next
		 * kick is a new event for every waker of the chain.
		 */
		EXPECT_LE(1, efd_take(self->efd));
		while (kevent_wait(self->kq, out, 8, 0) > 0)
			;
	}
	/*
	 * Each completion signals E, which makes Q ready, which completes the
	 * poll again (from task work, so no lockup): a loop the test built.
	 * Take E out of the ring before the last look at the queue.
	 */
	ASSERT_EQ(0, io_uring_unregister_eventfd(&ring));
	io_uring_queue_exit(&ring);
	efd_take(self->efd);
	while (kevent_wait(self->kq, out, 8, 0) > 0)
		;
}

/*
 * Through epoll: epoll instance P watches Q, aio polls P and signals E, and
 * Q watches E. Q's wake-up runs P's callback, which wakes P's pollers.
 */
TEST_F(chain, epoll_between_the_queue_and_aio)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = self->kq };
	int ep = epoll_create1(0);

	ASSERT_GE(ep, 0);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->kq, &ev));
	ASSERT_EQ(1, aio_poll_signalling(&self->a, ep, self->efd, 3));
	ASSERT_EQ(0, queue_kick(self->kq, 7));
	EXPECT_TRUE(aio_completed(&self->a, 3));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, SOON));
	EXPECT_TRUE(queue_delivers(self->kq, KEVENT_POLL, self->efd));
	EXPECT_EQ(1, efd_take(self->efd));
	close(ep);
}

/*
 * From a signal: a signalfd S wakes under the sender's siglock; Q watches
 * S and E; aio polls Q and signals E. A signal to ourselves runs the whole
 * chain inside the signal's delivery: S's wake-up, Q's, aio's completion,
 * E's, and Q's watch of E.
 */
TEST_F(chain, signalfd_starts_the_chain)
{
	struct signalfd_siginfo si;
	struct ukevent w;
	sigset_t set;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	ASSERT_GE(sfd, 0);
	w = kpoll(sfd);
	ASSERT_LE(0, kevent_add(self->kq, &w, 1));
	ASSERT_EQ(1, aio_poll_signalling(&self->a, self->kq, self->efd, 4));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	EXPECT_TRUE(aio_completed(&self->a, 4));
	EXPECT_TRUE(queue_delivers(self->kq, KEVENT_POLL, self->efd));
	EXPECT_EQ(1, efd_take(self->efd));
	ASSERT_EQ(sizeof(si), read(sfd, &si, sizeof(si)));
	EXPECT_EQ(SIGUSR1, si.ssi_signo);
	close(sfd);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * Through another queue: Q1 watches Q2 (one level, as allowed), aio polls
 * Q1 and signals E, and Q2 watches E. Q2's wake-up runs Q1's watch, Q1's
 * wake-up completes the poll, and E's wake-up reaches Q2 again.
 */
TEST(queue_watching_a_queue_and_aio)
{
	int q1 = kevent_init(), q2 = kevent_init(), efd = eventfd(0, EFD_NONBLOCK);
	struct ukevent w1 = kpoll(q2), w2 = kpoll(efd), out[8];
	struct aio a;

	ASSERT_GE(q1, 0);
	ASSERT_GE(q2, 0);
	ASSERT_GE(efd, 0);
	ASSERT_EQ(0, aio_open(&a));
	ASSERT_LE(0, kevent_add(q1, &w1, 1));
	ASSERT_LE(0, kevent_add(q2, &w2, 1));
	ASSERT_EQ(1, aio_poll_signalling(&a, q1, efd, 5));
	ASSERT_EQ(0, queue_kick(q2, 7));
	EXPECT_TRUE(aio_completed(&a, 5));
	EXPECT_TRUE(queue_delivers(q1, KEVENT_POLL, q2));
	EXPECT_TRUE(queue_delivers(q2, KEVENT_POLL, efd));
	EXPECT_EQ(1, efd_take(efd));
	/*
	 * The kick may still be ready on Q2, and Q1's watch of Q2 is level
	 * triggered: take it, so that Q1 has nothing left to report.
	 */
	while (kevent_wait(q2, out, 8, 0) > 0)
		;
	EXPECT_QUEUE_WORKS(q1);
	EXPECT_QUEUE_WORKS(q2);
	aio_close(&a);
	close(efd);
	close(q1);
	close(q2);
}

/*
 * A ring of @n queues: queue i watches eventfd i, and an aio poll of queue i
 * signals eventfd i+1 (the last one eventfd 0). A kick of queue 0 goes round
 * the ring through every queue and back to queue 0.
 */
static void queue_ring(struct __test_metadata *_metadata, int n)
{
	int kq[3], efd[3], i;
	struct ukevent w;
	struct aio a;

	ASSERT_EQ(0, aio_open(&a));
	for (i = 0; i < n; i++) {
		kq[i] = kevent_init();
		efd[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_GE(kq[i], 0);
		ASSERT_GE(efd[i], 0);
		w = kpoll(efd[i]);
		ASSERT_LE(0, kevent_add(kq[i], &w, 1));
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(1, aio_poll_signalling(&a, kq[i], efd[(i + 1) % n], 100 + i));
	ASSERT_EQ(0, queue_kick(kq[0], 7));
	for (i = 0; i < n; i++) {
		struct timespec ts = { SOON / 1000, 0 };
		struct io_event ev;

		ASSERT_EQ(1, syscall(__NR_io_getevents, a.ctx, 1, 1, &ev, &ts));
		EXPECT_TRUE(ev.res & POLLIN);
	}
	for (i = 0; i < n; i++) {
		EXPECT_TRUE(queue_delivers(kq[i], KEVENT_POLL, efd[i]));
		EXPECT_EQ(1, efd_take(efd[i]));
		EXPECT_QUEUE_WORKS(kq[i]);
	}
	for (i = 0; i < n; i++) {
		close(kq[i]);
		close(efd[i]);
	}
	aio_close(&a);
}

TEST(chain_of_two_queues)
{
	queue_ring(_metadata, 2);
}

TEST(chain_of_three_queues)
{
	queue_ring(_metadata, 3);
}

/*
 * The deferred wake-up of a queue's pollers still reaches them: poll() on
 * the descriptor of a queue whose event comes from inside another wake-up
 * (an eventfd's) returns at once, and so does a second poller.
 */
TEST_F(chain, pollers_woken_from_inside_a_wake_up)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd = { .fd = self->kq, .events = POLLIN };
	int ep = epoll_create1(0);

	ASSERT_GE(ep, 0);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->kq, &ev));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	ASSERT_EQ(0, efd_kick(self->efd));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, SOON));
	EXPECT_EQ(1, poll(&pfd, 1, SOON));
	EXPECT_TRUE(queue_delivers(self->kq, KEVENT_POLL, self->efd));
	EXPECT_EQ(1, efd_take(self->efd));
	close(ep);
}

/*
 * kselftest_harness.h of 6.1 runs every test. `-t NAME` runs test NAME
 * alone, so that each chain can run in a boot of its own: lockdep reports
 * only the first problem of a boot, and the lab's debug run is what shows a
 * chain that locks recursively.
 */
int main(int argc, char **argv)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t, *keep;
	int found = 0;

	if (argc == 3 && !strcmp(argv[1], "-t")) {
		for (f = __fixture_list; f; f = f->next) {
			keep = NULL;
			for (t = f->tests; t; t = t->next)
				if (!strcmp(t->name, argv[2]))
					keep = t;
			if (keep) {
				keep->next = NULL;
				keep->prev = keep;
				found = 1;
			}
			f->tests = keep;
		}
		if (!found) {
			fprintf(stderr, "%s: no test %s\n", argv[0], argv[2]);
			return 2;
		}
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [-t TEST]\n", argv[0]);
		return 2;
	}
	return test_harness_run(argc, argv);
}
