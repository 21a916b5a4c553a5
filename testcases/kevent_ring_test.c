// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_ring_test: the ready ring (docs/abi.md, "The ready ring"), after
 * kevent's take25. A queue made by kevent_init() with ring_entries has a
 * ring that user space maps; the kernel puts each event into it as the
 * event becomes ready, and user space takes events with no system call,
 * sleeping with one (kevent_get_events()) only when the ring is empty.
 * Here: what a ring is refused for, events arriving without a call, the
 * indexes wrapping, overflow and recovery, level-triggered events, several
 * consumer threads, network AIO completions, the memory charge, and a
 * process that exits with events in its ring.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

/* Ring of 1024 slots: 40 992 bytes, 11 pages. */
#define SMALL_RING	1024
#define SMALL_PAGES	((KEVENT_RING_SIZE(SMALL_RING) + 4095) / 4096)

/* Add KEVENT_USER kevents named @first .. @first + @n - 1. */
static int add_users(int kq, unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct ukevent uk = kevent_user_event(first + i, KEVENT_MASK_ALL, 0);

		if (kevent_add(kq, &uk, 1) != 1)
			return -1;
	}
	return 0;
}

static long post(int kq, unsigned int name, unsigned int bits)
{
	struct ukevent uk = kevent_user_event(name, bits, 0);

	return kevent_post(kq, &uk, 1);
}

/* Wait up to @ms, without a kevent call, until @r holds @n events. */
static int arrives(struct kevent_ring *r, unsigned int n, int ms)
{
	while (kevent_ring_pending(r) < n && ms-- > 0)
		usleep(1000);
	return kevent_ring_pending(r) >= n;
}

/* @ev is a delivery of the kevent of @type named @id, reporting @data. */
static void expect_event(struct __test_metadata *_metadata,
			 const struct ukevent *ev, unsigned int type,
			 unsigned int id, unsigned int data)
{
	EXPECT_EQ(type, ev->type);
	EXPECT_EQ(id, ev->id.raw[0]);
	EXPECT_EQ(KEVENT_RET_DONE, ev->ret_flags);
	EXPECT_EQ(data, ev->ret_data[0]);
}

TEST(bad_ring_size_is_einval)
{
	struct kevent_init_args args = { .ring_entries = 3 };

	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(&args, sizeof(args)), "3 slots");
	args.ring_entries = KEVENT_RING_MAX_ENTRIES * 2;
	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(&args, sizeof(args)), "too many slots");
	args.ring_entries = 0x80000000;
	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(&args, sizeof(args)), "2^31 slots");
	args.ring_entries = 8;
	args.__reserved = 1;
	EXPECT_FAILS_WITH(EINVAL, sys_kevent_init(&args, sizeof(args)), "reserved field");
}

TEST(mmap_of_a_queue_without_a_ring_is_enodev)
{
	int kq = kevent_init_flags(0);
	void *p;

	ASSERT_GE(kq, 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, kq, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENODEV, errno);
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(bad_ring_mapping_is_einval)
{
	struct kevent_ring *r;
	int kq = kevent_ring_open(8, &r);
	void *p;

	ASSERT_GE(kq, 0);
	EXPECT_EQ(7, r->mask);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, kq, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno) TH_LOG("a private mapping");
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, kq, 4096);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno) TH_LOG("at offset 4096");
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, kq, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno) TH_LOG("larger than the ring");
	kevent_ring_close(kq, r);
}

/* A ring queue delivers into its ring only, and a ring-full at most. */
TEST(ring_wait_with_an_array_or_beyond_the_ring_is_einval)
{
	struct kevent_ring *r;
	struct ukevent ev[9];
	int kq = kevent_ring_open(8, &r);

	ASSERT_GE(kq, 0);
	EXPECT_FAILS_WITH(EINVAL, kevent_get_events(kq, 1, 1, ev, NULL), "an array");
	EXPECT_FAILS_WITH(EINVAL, kevent_get_events(kq, 0, 1, NULL, NULL), "max_nr 1");
	EXPECT_FAILS_WITH(EINVAL, kevent_get_events(kq, 9, 0, NULL, NULL), "9 of 8");
	EXPECT_FAILS_WITH(EINVAL, kevent_wait(kq, ev, 9, 0), "WAIT for 9 of 8");
	EXPECT_EQ(0, kevent_ring_wait(kq, 0, 0));
	kevent_ring_close(kq, r);
}

TEST(events_arrive_without_a_call)
{
	struct ukevent t = kevent_timer(20, 0, KEVENT_REQ_ONESHOT), ev;
	struct kevent_ring *r;
	int kq = kevent_ring_open(8, &r);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, add_users(kq, 1, 3));
	ASSERT_EQ(1, post(kq, 2, 0x4));
	ASSERT_EQ(1, arrives(r, 1, 2000));
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	expect_event(_metadata, &ev, KEVENT_USER, 2, 0x4);
	EXPECT_EQ(1, ev.ret_data[1]);
	EXPECT_EQ(0, kevent_ring_take(r, &ev));

	/* A timer fires while this thread only sleeps. */
	ASSERT_EQ(1, kevent_add(kq, &t, 1));
	ASSERT_EQ(1, arrives(r, 1, 2000));
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	expect_event(_metadata, &ev, KEVENT_TIMER, 20, 1);
	EXPECT_EQ(2, r->kidx);
	EXPECT_EQ(2, r->uidx);
	EXPECT_EQ(0, r->flags);
	/* Everything taken: the ring holds nothing. */
	EXPECT_EQ(0, kevent_ring_wait(kq, 0, 0));
	kevent_ring_close(kq, r);
}

TEST(indexes_wrap_around_the_ring)
{
	struct kevent_ring *r;
	unsigned int round, i;
	struct ukevent ev;
	int kq = kevent_ring_open(4, &r);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, add_users(kq, 100, 3));
	for (round = 0; round < 200; round++) {
		for (i = 0; i < 3; i++)
			ASSERT_EQ(1, post(kq, 100 + i, round + 1));
		ASSERT_EQ(3, kevent_ring_wait(kq, 3, 2000));
		for (i = 0; i < 3; i++) {
			ASSERT_EQ(1, kevent_ring_take(r, &ev));
			/* Oldest first, each with its own post. */
			EXPECT_EQ(100 + i, ev.id.raw[0]);
			EXPECT_EQ(round + 1, ev.ret_data[0]);
		}
		ASSERT_EQ(0, kevent_ring_take(r, &ev));
	}
	EXPECT_EQ(600, r->kidx);
	EXPECT_EQ(600, r->uidx);
	kevent_ring_close(kq, r);
}

TEST(overflow_is_never_silent_and_recovers)
{
	unsigned int seen[10] = { 0 }, i, taken = 0;
	struct kevent_ring *r;
	struct ukevent ev;
	int kq = kevent_ring_open(4, &r);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, add_users(kq, 0, 10));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(1, post(kq, i, 1));
	ASSERT_EQ(4, kevent_ring_wait(kq, 4, 2000));
	EXPECT_EQ(KEVENT_RING_OVERFLOW, r->flags);
	EXPECT_EQ(1, r->overflow);
	EXPECT_EQ(1, kevent_fdinfo(kq, "ready") >= 6);
	/* Each time the ring is empty, one call moves in what waited. */
	while (taken < 10) {
		ASSERT_LT(0, kevent_ring_wait(kq, 0, 0));
		while (kevent_ring_take(r, &ev)) {
			ASSERT_LT(ev.id.raw[0], 10);
			seen[ev.id.raw[0]]++;
			taken++;
		}
	}
	for (i = 0; i < 10; i++)
		EXPECT_EQ(1, seen[i]);
	EXPECT_EQ(0, kevent_ring_wait(kq, 0, 0));
	EXPECT_EQ(0, r->flags);
	EXPECT_EQ(1, r->overflow);
	kevent_ring_close(kq, r);
}

TEST(a_level_event_comes_again_once_taken)
{
	struct kevent_ring *r;
	struct ukevent uk, ev;
	int sv[2], kq;
	char c;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
	kq = kevent_ring_open(8, &r);
	ASSERT_GE(kq, 0);
	uk = kevent_fd(sv[1], KEVENT_SOCKET, KEVENT_SOCKET_RECV, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	ASSERT_EQ(1, write(sv[0], "x", 1));
	ASSERT_EQ(1, kevent_ring_wait(kq, 1, 2000));
	/* Not taken: not put in twice, however often the ring is filled. */
	EXPECT_EQ(1, kevent_ring_wait(kq, 0, 0));
	ASSERT_EQ(1, write(sv[0], "y", 1));
	EXPECT_EQ(1, kevent_ring_wait(kq, 2, 100));
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	EXPECT_EQ(KEVENT_RET_DONE, ev.ret_flags);
	EXPECT_EQ(KEVENT_SOCKET_RECV, ev.ret_data[0]);
	/* Taken and still ready: the next fill puts it in again. */
	ASSERT_EQ(1, kevent_ring_wait(kq, 1, 2000));
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	ASSERT_EQ(1, read(sv[1], &c, 1));
	ASSERT_EQ(1, read(sv[1], &c, 1));
	/* Read out: no longer ready, nothing comes. */
	EXPECT_EQ(0, kevent_ring_wait(kq, 1, 100));
	ASSERT_EQ(1, write(sv[0], "z", 1));
	EXPECT_EQ(1, arrives(r, 1, 2000));
	kevent_ring_close(kq, r);
	close(sv[0]);
	close(sv[1]);
}

#define NAMES		64
#define POSTS		40
#define CONSUMERS	4

struct consumers {
	struct kevent_ring *r;
	int kq;
	unsigned int posts[NAMES];	/* ret_data[1] summed, atomically */
	unsigned int events;
	int done;
};

static void *consume(void *arg)
{
	struct consumers *c = arg;
	struct ukevent ev;

	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		if (!kevent_ring_take(c->r, &ev)) {
			kevent_ring_wait(c->kq, 1, 20);
			continue;
		}
		if (ev.id.raw[0] < NAMES)
			__atomic_add_fetch(&c->posts[ev.id.raw[0]], ev.ret_data[1],
					   __ATOMIC_RELAXED);
		__atomic_add_fetch(&c->events, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Every post is counted once, by whichever thread took its event. */
TEST(several_threads_take_each_event_once)
{
	struct consumers c = { 0 };
	pthread_t t[CONSUMERS];
	unsigned int i, p, total;
	int ms;

	c.kq = kevent_ring_open(16, &c.r);
	ASSERT_GE(c.kq, 0);
	ASSERT_EQ(0, add_users(c.kq, 0, NAMES));
	for (i = 0; i < CONSUMERS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, consume, &c));
	for (p = 0; p < POSTS; p++)
		for (i = 0; i < NAMES; i++)
			ASSERT_EQ(1, post(c.kq, i, 1));
	for (ms = 0; ms < 10000; ms++) {
		for (total = 0, i = 0; i < NAMES; i++)
			total += __atomic_load_n(&c.posts[i], __ATOMIC_RELAXED);
		if (total >= NAMES * POSTS)
			break;
		usleep(1000);
	}
	/* A little longer: a post counted twice would show now. */
	usleep(100 * 1000);
	__atomic_store_n(&c.done, 1, __ATOMIC_RELEASE);
	for (i = 0; i < CONSUMERS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < NAMES; i++)
		EXPECT_EQ(POSTS, c.posts[i]);
	TH_LOG("%u posts reached %u consumers as %u events (%u overflows)",
	       NAMES * POSTS, CONSUMERS, c.events, c.r->overflow);
	EXPECT_LE(c.events, NAMES * POSTS);
	EXPECT_EQ(c.r->kidx, c.r->uidx);
	kevent_ring_close(c.kq, c.r);
}

/* Network AIO completes into the ring: a receive, then a send. */
TEST(network_aio_completes_into_the_ring)
{
	/* Anonymous memory: NAIO refuses to pin a file's pages. */
	char *rx = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *tx = rx + 4096;
	struct kevent_ring *r;
	struct ukevent ev;
	long id;
	int s[2], kq;

	ASSERT_NE(MAP_FAILED, rx);
	ASSERT_EQ(0, kevent_tcp_pair(s));
	kq = kevent_ring_open(8, &r);
	ASSERT_GE(kq, 0);
	id = kevent_aio_recv(kq, s[1], rx, 4096, KEVENT_NAIO_RECV_SOME);
	ASSERT_GE(id, 0);
	memset(tx, 'k', 4096);
	ASSERT_EQ(100, write(s[0], tx, 100));
	ASSERT_EQ(1, arrives(r, 1, 2000));
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	EXPECT_EQ(KEVENT_NAIO, ev.type);
	EXPECT_EQ(s[1], ev.id.raw[0]);
	EXPECT_EQ(id, ev.id.raw[1]);
	EXPECT_EQ(100, ev.ret_data[0]);
	EXPECT_EQ(0, memcmp(rx, tx, 100));

	id = kevent_aio_send(kq, s[1], tx, 4096, 0);
	ASSERT_GE(id, 0);
	ASSERT_EQ(1, arrives(r, 1, 2000));
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	EXPECT_EQ(id, ev.id.raw[1]);
	EXPECT_EQ(4096, ev.ret_data[0]);
	/* A completion is oneshot: its kevent is gone. */
	EXPECT_EQ(0, kevent_fdinfo(kq, "kevents"));
	kevent_ring_close(kq, r);
	close(s[0]);
	close(s[1]);
	munmap(rx, 8192);
}

/* How many SMALL_RING rings this user may hold now; -1 if unlimited. */
static int rings_that_fit(int max)
{
	struct kevent_ring *r[16];
	int n = 0, i;

	while (n < max && n < 16) {
		int kq = kevent_ring_open(SMALL_RING, &r[n]);

		if (kq < 0)
			break;
		n++;
	}
	for (i = 0; i < n; i++)
		munmap(r[i], KEVENT_RING_SIZE(SMALL_RING));
	/* The queues' descriptors go with this process's next close-all. */
	return n;
}

/* A limit of this user's locked memory that lets @rings rings fit. */
static void limit_to(struct __test_metadata *_metadata, int rings)
{
	struct rlimit rl = { .rlim_cur = rings * SMALL_PAGES * 4096 + 4096,
			     .rlim_max = RLIM_INFINITY };

	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
}

static void close_from(int fd)
{
	for (; fd < 1024; fd++)
		close(fd);
}

/*
 * The ring's pages count against RLIMIT_MEMLOCK until the queue goes:
 * its last descriptor closed and its last mapping gone.
 */
TEST(ring_beyond_memlock_is_enomem)
{
	struct kevent_init_args args = { .ring_entries = KEVENT_RING_MAX_ENTRIES };
	struct kevent_ring *r;
	int first, kq, kq2;

	if (!geteuid())
		SKIP(return, "root has CAP_IPC_LOCK: nothing is charged");
	limit_to(_metadata, 2);
	first = dup(0);
	close(first);
	/* 1.25 MiB does not fit in 100 KiB. */
	EXPECT_FAILS_WITH(ENOMEM, sys_kevent_init(&args, sizeof(args)), "a big ring");
	ASSERT_EQ(2, rings_that_fit(4));
	close_from(first);
	kq = kevent_ring_open(SMALL_RING, &r);
	ASSERT_GE(kq, 0);
	kq2 = kevent_ring_open(SMALL_RING, &r);
	ASSERT_GE(kq2, 0);
	EXPECT_FAILS_WITH(ENOMEM, kevent_ring_open(SMALL_RING, &r), "a third ring");
	EXPECT_EQ(SMALL_RING, kevent_fdinfo(kq, "ring"));
	/* Closed but still mapped: still charged. */
	close(kq2);
	EXPECT_FAILS_WITH(ENOMEM, kevent_ring_open(SMALL_RING, &r), "while mapped");
	munmap(r, KEVENT_RING_SIZE(SMALL_RING));
	kq2 = kevent_ring_open(SMALL_RING, &r);
	EXPECT_GE(kq2, 0);
	close_from(first);
}

/*
 * Processes that exit with events in their rings, mapped and unread, give
 * their charge back: many more of them run than the limit lets live at once.
 */
TEST(exit_with_events_in_the_ring)
{
	int i, status;

	if (!geteuid())
		SKIP(return, "root has CAP_IPC_LOCK: nothing is charged");
	limit_to(_metadata, 1);
	for (i = 0; i < 20; i++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (!pid) {
			struct kevent_ring *r;
			int kq = kevent_ring_open(SMALL_RING, &r);

			if (kq < 0 || add_users(kq, 0, 8))
				_exit(1);
			for (unsigned int n = 0; n < 8; n++)
				post(kq, n, 1);
			_exit(arrives(r, 8, 2000) ? 0 : 2);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(0, status) TH_LOG("child %d: status %#x", i, status);
	}
}

/* The 2006 WAIT works on a ring queue: it fills and counts the ring. */
TEST(wait_on_a_ring_queue_counts_the_ring)
{
	struct kevent_ring *r;
	struct ukevent ev[2];
	int kq = kevent_ring_open(8, &r);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, add_users(kq, 5, 2));
	EXPECT_EQ(0, kevent_wait(kq, ev, 1, 50));
	ASSERT_EQ(1, post(kq, 5, 1));
	ASSERT_EQ(1, post(kq, 6, 1));
	EXPECT_EQ(2, kevent_wait(kq, ev, 2, 2000));
	EXPECT_EQ(2, kevent_ring_pending(r));
	kevent_ring_close(kq, r);
}

TEST_HARNESS_MAIN
