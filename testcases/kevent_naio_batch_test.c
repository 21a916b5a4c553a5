// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_naio_batch_test: network AIO without a call per request
 * (docs/abi.md, "KEVENT_NAIO"): a receive that stays posted
 * (KEVENT_NAIO_RECV_POSTED), whose buffer is a ring of bytes the kernel
 * fills as the stream arrives; aio_submit(), many requests in one call; and
 * both with the ready ring, where a request/response exchange makes no
 * call to receive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON	5000
#define NEVER	100
#define HDR	sizeof(struct kevent_naio_posted)

static unsigned char pattern(unsigned int tag, size_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) + tag * 17);
}

static void fill(unsigned char *buf, unsigned int tag, size_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = pattern(tag, off + i);
}

/* Bytes the kernel put in posted ring @p, of @len bytes, not consumed yet. */
static unsigned int posted_pending(struct kevent_naio_posted *p)
{
	return __atomic_load_n(&p->head, __ATOMIC_ACQUIRE) - p->tail;
}

/*
 * Consume what @p holds, checking it against pattern @tag. Byte numbers are
 * 64 bits: *@pos is the number of the next byte to read (its low 32 bits
 * are tail), and @start the number of the stream's first byte (the
 * header's head when the receive was posted). A ring whose size does not
 * divide 2^32 needs them past head's wrap. Returns the bytes consumed, or
 * -1 at the first wrong one.
 */
static long posted_consume64(struct kevent_naio_posted *p, size_t len, unsigned int tag,
			     unsigned long long *pos, unsigned long long start)
{
	const unsigned char *data = (const unsigned char *)(p + 1);
	unsigned int n = posted_pending(p), i;

	for (i = 0; i < n; i++)
		if (data[(*pos + i) % len] != pattern(tag, *pos + i - start))
			return -1;
	/* Done with the bytes: the kernel may write over them now. */
	*pos += n;
	__atomic_store_n(&p->tail, (unsigned int)*pos, __ATOMIC_RELEASE);
	return n;
}

/* The same for a stream that started at 0 and is still short of 4 GiB. */
static long posted_consume(struct kevent_naio_posted *p, size_t len, unsigned int tag)
{
	unsigned long long pos = p->tail;

	return posted_consume64(p, len, tag, &pos, 0);
}

FIXTURE(posted) {
	int kq;
	int s[2];
	unsigned char *tx;
	struct kevent_naio_posted *rx;
};

FIXTURE_SETUP(posted)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, kevent_tcp_pair(self->s));
	self->tx = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	self->rx = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->tx);
	ASSERT_NE(MAP_FAILED, self->rx);
}

FIXTURE_TEARDOWN(posted)
{
	close(self->kq);
	close(self->s[0]);
	close(self->s[1]);
	/* Every test ends with nothing pinned: no request leaks its pages. */
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	munmap(self->tx, 1 << 20);
	munmap(self->rx, 1 << 20);
}

/* One receive call, many messages: each lands, and is reported, alone. */
TEST_F(posted, one_call_receives_many_messages)
{
	struct ukevent ev;
	long id;
	int i;

	id = kevent_aio_recv(self->kq, self->s[1], self->rx, HDR + 4096,
			     KEVENT_NAIO_RECV_POSTED);
	ASSERT_GE(id, 0);
	EXPECT_EQ(0, kevent_wait(self->kq, &ev, 1, NEVER));
	for (i = 0; i < 20; i++) {
		fill(self->tx, 1, i * 100, 100);
		ASSERT_EQ(100, write(self->s[0], self->tx, 100));
		ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
		EXPECT_EQ(KEVENT_NAIO, ev.type);
		EXPECT_EQ(id, ev.id.raw[1]);
		EXPECT_EQ(KEVENT_RET_DONE, ev.ret_flags);
		EXPECT_EQ((i + 1) * 100, ev.ret_data[0]);
		EXPECT_EQ((i + 1) * 100, self->rx->head);
		ASSERT_EQ(100, posted_consume(self->rx, 4096, 1));
	}
	/* Still posted: one kevent, the request. */
	EXPECT_EQ(1, kevent_fdinfo(self->kq, "kevents"));
}

/*
 * A posted receive of a @len-byte ring, its header starting at byte number
 * @start, takes @total bytes of pattern @tag sent @chunk at a time, each
 * checked where its 64-bit number puts it, and each event reports head.
 */
static void posted_stream(struct __test_metadata *_metadata, FIXTURE_DATA(posted) *self,
			  size_t len, size_t total, size_t chunk, unsigned int tag,
			  unsigned long long start)
{
	unsigned long long pos = start;
	struct ukevent ev;
	size_t sent = 0;
	long got = 0;

	self->rx->head = self->rx->tail = (unsigned int)start;
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, HDR + len,
				  KEVENT_NAIO_RECV_POSTED), 0);
	fill(self->tx, tag, 0, total);
	while (got < (long)total) {
		long n;

		if (sent < total && sent - got < len) {
			ASSERT_EQ((ssize_t)chunk, write(self->s[0], self->tx + sent, chunk));
			sent += chunk;
		}
		ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
		/*
		 * The event's head is one the header held: not before what was
		 * consumed, not past the header's head now. On one CPU they are
		 * equal; on several the worker may have taken the next step
		 * since it made the event ready (make smp-check, lab smp).
		 */
		EXPECT_LE((__u32)(ev.ret_data[0] - self->rx->tail),
			  (__u32)(__atomic_load_n(&self->rx->head, __ATOMIC_ACQUIRE) - self->rx->tail));
		n = posted_consume64(self->rx, len, tag, &pos, start);
		ASSERT_LE(0, n) TH_LOG("wrong byte near number %llu (stream offset %llu)",
				       pos, pos - start);
		got += n;
	}
	EXPECT_EQ((unsigned int)(start + total), self->rx->head);
}

/* The stream wraps around the ring, byte for byte. */
TEST_F(posted, the_stream_wraps_around_the_ring)
{
	posted_stream(_metadata, self, 1000, 9000, 300, 2, 0);
}

/*
 * Issue 32, defect 3: the kernel reduced head's 32 bits modulo the ring's
 * size, so where the size does not divide 2^32 the offset jumped when head
 * wrapped (2^32 % 1000 = 296 bytes here) and the stream landed in the
 * wrong place after 4 GiB. Bytes are numbered in 64 bits now, from the
 * head the header holds when the receive is posted: started 2500 bytes
 * before 2^32, 9000 bytes cross the wrap, each at data[i % 1000] of its
 * number i. (The series before the fix also started every receive at 0,
 * whatever the header held: this failed there at the first head.)
 */
TEST_F(posted, byte_numbers_cross_the_4_gib_wrap)
{
	posted_stream(_metadata, self, 1000, 9000, 300, 5, (1ULL << 32) - 2500);
}

/* A header with unread bytes (head not at tail) cannot start a receive. */
TEST_F(posted, a_header_with_head_not_at_tail_is_einval)
{
	self->rx->head = 10;
	self->rx->tail = 0;
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(self->kq, self->s[1], self->rx, HDR + 1000,
						  KEVENT_NAIO_RECV_POSTED), "head 10, tail 0");
	EXPECT_EQ(0, kevent_fdinfo(self->kq, "kevents"));
}

/*
 * A full ring stops the receive (the socket keeps the rest, TCP's window
 * closes); consuming does not restart it, the next wait call does.
 */
TEST_F(posted, a_full_ring_waits_for_the_next_wait_call)
{
	const size_t len = 1000, total = 6000;
	struct ukevent ev;
	long got = 0;

	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, HDR + len,
				  KEVENT_NAIO_RECV_POSTED), 0);
	fill(self->tx, 3, 0, total);
	ASSERT_EQ((ssize_t)total, write(self->s[0], self->tx, total));
	ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
	/* Give the worker time to fill the ring and stop. */
	usleep(200 * 1000);
	EXPECT_EQ(len, posted_pending(self->rx));
	EXPECT_EQ(KEVENT_NAIO_POSTED_FULL, self->rx->flags);
	while (got < (long)total) {
		long n = posted_consume(self->rx, len, 3);

		ASSERT_LE(0, n);
		got += n;
		if (got < (long)total)
			ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON))
				TH_LOG("not resumed at %ld bytes", got);
	}
	EXPECT_EQ(total, self->rx->head);
	EXPECT_EQ(0, kevent_wait(self->kq, &ev, 1, NEVER));
}

/* At the end of the stream the request ends: broken, errno 0, gone. */
TEST_F(posted, it_ends_with_the_stream)
{
	struct ukevent ev;

	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, HDR + 4096,
				  KEVENT_NAIO_RECV_POSTED), 0);
	fill(self->tx, 4, 0, 10);
	ASSERT_EQ(10, write(self->s[0], self->tx, 10));
	ASSERT_EQ(0, shutdown(self->s[0], SHUT_WR));
	ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
	if (!(ev.ret_flags & KEVENT_RET_BROKEN))
		ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
	EXPECT_EQ(KEVENT_RET_DONE | KEVENT_RET_BROKEN, ev.ret_flags);
	EXPECT_EQ(10, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
	EXPECT_EQ(10, posted_consume(self->rx, 4096, 4));
	EXPECT_EQ(0, kevent_fdinfo(self->kq, "kevents"));
}

/* REMOVE ends a posted receive; its pages are let go (the teardown checks). */
TEST_F(posted, remove_ends_it)
{
	struct ukevent uk = { 0 }, ev;
	long id;

	id = kevent_aio_recv(self->kq, self->s[1], self->rx, HDR + 4096,
			     KEVENT_NAIO_RECV_POSTED);
	ASSERT_GE(id, 0);
	uk.type = KEVENT_NAIO;
	uk.id.raw[0] = self->s[1];
	uk.id.raw[1] = id;
	ASSERT_EQ(1, kevent_remove(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_fdinfo(self->kq, "kevents"));
	EXPECT_EQ(0, kevent_wait(self->kq, &ev, 1, NEVER));
}

TEST_F(posted, bad_posted_receive_is_einval)
{
	unsigned char *buf = (unsigned char *)self->rx;

	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(self->kq, self->s[1], buf, HDR,
						  KEVENT_NAIO_RECV_POSTED), "no room for data");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(self->kq, self->s[1], buf + 8, 4096,
						  KEVENT_NAIO_RECV_POSTED), "header not 16-aligned");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(self->kq, self->s[1], buf, 4096,
						  KEVENT_NAIO_RECV_POSTED |
						  KEVENT_NAIO_RECV_SOME), "posted and some");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(self->kq, self->s[1], buf, 4096, 0x4),
			  "an unknown flag");
	EXPECT_EQ(0, kevent_fdinfo(self->kq, "kevents"));
}

static struct kevent_naio_sub sub(unsigned int op, int sock, void *buf, size_t size,
				  unsigned int flags)
{
	struct kevent_naio_sub s = {
		.op = op, .sock = sock, .fd = -1, .flags = flags,
		.buf = (unsigned long)buf, .size = size, .result = 12345,
	};
	return s;
}

/* Several requests, one call; each entry gets its own result. */
TEST_F(posted, aio_submit_starts_a_batch)
{
	struct kevent_naio_sub subs[4];
	struct ukevent ev[4];
	int n = 0, i;

	fill(self->tx, 5, 0, 3000);
	subs[0] = sub(KEVENT_NAIO_OP_RECV, self->s[1], self->rx, HDR + 8192,
		      KEVENT_NAIO_RECV_POSTED);
	subs[1] = sub(KEVENT_NAIO_OP_SEND, self->s[0], self->tx, 1000, 0);
	subs[2] = sub(9, self->s[0], self->tx, 1000, 0);
	subs[3] = sub(KEVENT_NAIO_OP_SEND, self->s[0], self->tx + 1000, 2000, 0);
	ASSERT_EQ(3, kevent_aio_submit(self->kq, subs, 4));
	EXPECT_LE(0, subs[0].result);
	EXPECT_LE(0, subs[1].result);
	EXPECT_EQ(-EINVAL, subs[2].result);
	EXPECT_LE(0, subs[3].result);
	/* Two sends complete; the receive reports until it has the 3000 bytes. */
	while (n < 2 || self->rx->head < 3000) {
		long got = kevent_wait(self->kq, ev, 1, SOON);

		ASSERT_EQ(1, got);
		for (i = 0; i < got; i++)
			if (ev[i].id.raw[1] != subs[0].result)
				n++;
	}
	EXPECT_EQ(2, n);
	EXPECT_EQ(3000, posted_consume(self->rx, 8192, 5));
}

TEST_F(posted, bad_submission_is_einval)
{
	struct kevent_naio_sub subs[2];
	int p[2];

	subs[0] = sub(KEVENT_NAIO_OP_SEND, self->s[0], self->tx, 100, 0);
	subs[1] = subs[0];
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_submit(self->kq, subs, 0), "no entry");
	EXPECT_FAILS_WITH(EINVAL, syscall(__NR_aio_submit, self->kq, subs, 1, 2),
			  "an unknown flag");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_submit_wait(self->kq, subs, 1),
			  "SUBMIT_WAIT without a ring");
	ASSERT_EQ(0, pipe(p));
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_submit(p[0], subs, 1), "not a queue");
	close(p[0]);
	close(p[1]);
	/* Per entry: the errno its own call would return, and no others hurt. */
	subs[0].size = 0;
	subs[1].flags = KEVENT_NAIO_RECV_POSTED;
	EXPECT_EQ(0, kevent_aio_submit(self->kq, subs, 2));
	EXPECT_EQ(-EINVAL, subs[0].result);
	EXPECT_EQ(-EINVAL, subs[1].result);
	EXPECT_EQ(0, kevent_fdinfo(self->kq, "kevents"));
}

/* On a ring queue: the requests, then a sleep until the ring holds one. */
TEST(submit_and_wait_in_one_call)
{
	struct kevent_naio_sub s = { .op = KEVENT_NAIO_OP_SEND, .fd = -1, .size = 100 };
	unsigned char *tx = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kevent_ring *r;
	struct ukevent ev;
	int sv[2], kq;

	ASSERT_NE(MAP_FAILED, tx);
	ASSERT_EQ(0, kevent_tcp_pair(sv));
	kq = kevent_ring_open(8, &r);
	ASSERT_GE(kq, 0);
	s.sock = sv[0];
	s.buf = (unsigned long)tx;
	ASSERT_EQ(1, kevent_aio_submit_wait(kq, &s, 1));
	/* It slept until the send's completion was in the ring. */
	ASSERT_EQ(1, kevent_ring_take(r, &ev));
	EXPECT_EQ(s.result, ev.id.raw[1]);
	EXPECT_EQ(100, ev.ret_data[0]);
	/* Nothing to start, an event in the ring: at once. */
	ASSERT_EQ(1, kevent_aio_submit(kq, &s, 1));
	ASSERT_EQ(1, kevent_ring_wait(kq, 1, SOON));
	EXPECT_EQ(0, kevent_aio_submit_wait(kq, NULL, 0));
	EXPECT_EQ(1, kevent_ring_take(r, &ev));
	kevent_ring_close(kq, r);
	close(sv[0]);
	close(sv[1]);
	munmap(tx, 4096);
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
}

TEST_F(posted, bad_submission_fd_is_ebadf)
{
	struct kevent_naio_sub s = sub(KEVENT_NAIO_OP_SEND, self->s[0], self->tx, 100, 0);

	EXPECT_FAILS_WITH(EBADF, kevent_aio_submit(-1, &s, 1), "fd -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_submit(kevent_closed_fd(), &s, 1), "a closed fd");
}

TEST_F(posted, too_many_submissions_is_e2big)
{
	struct kevent_naio_sub s = sub(KEVENT_NAIO_OP_SEND, self->s[0], self->tx, 100, 0);

	EXPECT_FAILS_WITH(E2BIG, kevent_aio_submit(self->kq, &s, KEVENT_CTL_MAX_NUM + 1),
			  "1025 entries");
	s.size = KEVENT_NAIO_MAX_SIZE + 1;
	EXPECT_EQ(0, kevent_aio_submit(self->kq, &s, 1));
	EXPECT_EQ(-E2BIG, s.result);
}

/* Nothing starts when the array cannot be read, or written back. */
TEST_F(posted, unreadable_or_read_only_submission_is_efault)
{
	struct kevent_naio_sub *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_submit(self->kq, NULL, 1), "NULL");
	ro[0] = sub(KEVENT_NAIO_OP_SEND, self->s[0], self->tx, 100, 0);
	ASSERT_EQ(0, mprotect(ro, 4096, PROT_READ));
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_submit(self->kq, ro, 1), "read-only");
	EXPECT_EQ(0, kevent_fdinfo(self->kq, "kevents"));
	munmap(ro, 4096);
}

/*
 * Request and response on a ring queue: the server posts one receive and
 * takes its events from the ready ring; per request it makes one call, the
 * aio_submit() of its answer, and none to receive or to wait while
 * requests keep coming.
 */
TEST(request_response_without_a_call_to_receive)
{
	const unsigned int requests = 200, size = 64;
	struct kevent_naio_posted *rx;
	unsigned int answered = 0, waits = 0, submits = 0, i;
	unsigned char *tx, req[64];
	struct kevent_ring *r;
	struct ukevent ev;
	int s[2], kq;

	rx = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tx = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rx);
	ASSERT_NE(MAP_FAILED, tx);
	ASSERT_EQ(0, kevent_tcp_pair(s));
	kq = kevent_ring_open(64, &r);
	ASSERT_GE(kq, 0);
	ASSERT_GE(kevent_aio_recv(kq, s[1], rx, HDR + 4096, KEVENT_NAIO_RECV_POSTED), 0);

	/* The client writes all its requests up front, as a pipelining one would. */
	for (i = 0; i < requests; i++) {
		fill(req, 6, i * size, size);
		ASSERT_EQ(size, write(s[0], req, size));
	}
	while (answered < requests) {
		struct kevent_naio_sub subs[64];
		unsigned int n = posted_pending(rx) / size, k;

		if (!n) {
			/* Events are only news of what landed: take, or sleep. */
			if (!kevent_ring_take(r, &ev)) {
				waits++;
				ASSERT_LE(0, kevent_ring_wait(kq, 1, SOON));
			}
			continue;
		}
		/* Whole requests: answer each with its own bytes, one batch. */
		for (k = 0; k < n && k < 64; k++) {
			const unsigned char *data = (const unsigned char *)(rx + 1);
			unsigned char *out = tx + (answered + k) * size;

			for (unsigned int b = 0; b < size; b++)
				out[b] = data[(rx->tail + b) % 4096];
			__atomic_store_n(&rx->tail, rx->tail + size, __ATOMIC_RELEASE);
			subs[k] = sub(KEVENT_NAIO_OP_SEND, s[1], out, size, 0);
		}
		ASSERT_EQ(k, kevent_aio_submit(kq, subs, k));
		submits++;
		answered += k;
	}
	TH_LOG("%u requests: 1 receive call, %u aio_submit calls, %u waits",
	       requests, submits, waits);
	/* The client gets every answer, in order. */
	for (i = 0; i < requests; i++) {
		size_t got = 0;

		while (got < size) {
			ssize_t n = read(s[0], req + got, size - got);

			ASSERT_LT(0, n);
			got += n;
		}
		for (unsigned int b = 0; b < size; b++)
			ASSERT_EQ(pattern(6, i * size + b), req[b]);
	}
	EXPECT_LE(submits, requests);
	kevent_ring_close(kq, r);
	close(s[0]);
	close(s[1]);
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
}

TEST_HARNESS_MAIN
