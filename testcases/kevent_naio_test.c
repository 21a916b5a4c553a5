// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_naio_test: network AIO within one host, on loopback TCP: aio_send,
 * aio_recv and aio_sendfile, their completions, order, cancelling, a queue
 * closed or a process gone with requests outstanding, resets and shutdowns,
 * the memory lock limit, and every bad argument.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/sockios.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000
#define NEVER 100
#define MIB (1 << 20)

static unsigned char pattern(unsigned int tag, size_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) + tag * 17);
}

static void fill(unsigned char *buf, unsigned int tag, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = pattern(tag, off + i);
}

/* Where @buf first differs from the pattern, or -1. */
static long differs(const unsigned char *buf, unsigned int tag, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != pattern(tag, off + i))
			return i;
	return -1;
}

static void *map(size_t size, int prot)
{
	void *p = mmap(NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Wait for one event; 0 if none came. */
static long one(int kq, struct ukevent *ev, unsigned int ms)
{
	return kevent_wait(kq, ev, 1, ms);
}

FIXTURE(naio) {
	int kq;
	int s[2];
	unsigned char *tx, *rx;
};

FIXTURE_SETUP(naio)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, kevent_tcp_pair(self->s));
	self->tx = map(8 * MIB, PROT_READ | PROT_WRITE);
	self->rx = map(8 * MIB, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, self->tx);
	ASSERT_NE(NULL, self->rx);
}

FIXTURE_TEARDOWN(naio)
{
	close(self->kq);
	close(self->s[0]);
	close(self->s[1]);
	/* Every test ends with nothing pinned: no request leaks its pages. */
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	munmap(self->tx, 8 * MIB);
	munmap(self->rx, 8 * MIB);
}

/*
 * After calls that were refused: nothing was added to the queue, and a
 * transfer on it works.
 */
static void expect_naio_works(struct __test_metadata *_metadata,
			      FIXTURE_DATA(naio) *self)
{
	struct ukevent ev[2];

	EXPECT_EQ(0, kevent_queued(self->kq)) TH_LOG("a refused call left a kevent");
	fill(self->tx, 9, 0, 100);
	memset(self->rx, 0, 100);
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, 100, 0), 0);
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx, 100, 0), 0);
	ASSERT_EQ(2, kevent_wait(self->kq, ev, 2, SOON));
	EXPECT_EQ(100, ev[0].ret_data[0]);
	EXPECT_EQ(100, ev[1].ret_data[0]);
	EXPECT_EQ(-1, differs(self->rx, 9, 0, 100));
	EXPECT_QUEUE_WORKS(self->kq);
}

/*
 * Runs @checks in a child that is user 65534 (no CAP_IPC_LOCK) with a
 * locked-memory limit of @memlock bytes. Returns what @checks returned
 * (0: all passed), 10 if the child could not become that user, -1 if it
 * did not exit. The queue is shared: what the child starts is the test's.
 */
static int as_unprivileged(FIXTURE_DATA(naio) *self, rlim_t memlock,
			   int (*checks)(FIXTURE_DATA(naio) *self))
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		struct rlimit rl = { memlock, memlock };

		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
			_exit(10);
		_exit(checks(self));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* An unlinked regular file of @size bytes, opened with @flags; -1 on failure. */
static int tmp_file(size_t size, int flags)
{
	char path[] = "/tmp/kevent_naio_test.XXXXXX";
	int fd = mkstemp(path), again;

	if (fd < 0)
		return -1;
	again = open(path, flags);
	unlink(path);
	if (ftruncate(fd, size) && again >= 0) {
		close(again);
		again = -1;
	}
	close(fd);
	return again;
}

TEST_F(naio, sockopt)
{
	int on = -1, u = socket(AF_INET, SOCK_DGRAM, 0), t = socket(AF_INET, SOCK_STREAM, 0);
	int p[2];
	socklen_t len = sizeof(on);

	ASSERT_EQ(0, getsockopt(self->s[0], SOL_SOCKET, SO_ASYNC_SOCK, &on, &len));
	EXPECT_EQ(1, on);
	ASSERT_EQ(0, getsockopt(t, SOL_SOCKET, SO_ASYNC_SOCK, &on, &len));
	EXPECT_EQ(0, on);
	EXPECT_EQ(0, kevent_set_async(t, 1));
	EXPECT_EQ(0, kevent_set_async(t, 0));
	ASSERT_EQ(0, getsockopt(t, SOL_SOCKET, SO_ASYNC_SOCK, &on, &len));
	EXPECT_EQ(0, on);
	EXPECT_EQ(-1, kevent_set_async(u, 1));
	EXPECT_EQ(ENOPROTOOPT, errno);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, p));
	EXPECT_EQ(-1, kevent_set_async(p[0], 1));
	EXPECT_EQ(ENOPROTOOPT, errno);
	close(u);
	close(t);
	close(p[0]);
	close(p[1]);
}

TEST_F(naio, send_and_recv)
{
	size_t size = 3 * MIB + 123;
	struct ukevent ev[2];
	long sid, rid, n;

	fill(self->tx + 5, 1, 0, size);
	rid = kevent_aio_recv(self->kq, self->s[1], self->rx + 7, size, 0);
	ASSERT_GE(rid, 0);
	sid = kevent_aio_send(self->kq, self->s[0], self->tx + 5, size, 0);
	ASSERT_GE(sid, 0);
	EXPECT_NE(sid, rid);

	n = kevent_wait(self->kq, ev, 2, SOON);
	ASSERT_EQ(2, n);
	for (n = 0; n < 2; n++) {
		int send = ev[n].id.raw[0] == (unsigned int)self->s[0];

		EXPECT_EQ(KEVENT_NAIO, ev[n].type);
		EXPECT_EQ(send ? sid : rid, ev[n].id.raw[1]);
		EXPECT_EQ(send ? KEVENT_SOCKET_SEND : KEVENT_SOCKET_RECV, ev[n].event);
		EXPECT_EQ(KEVENT_RET_DONE, ev[n].ret_flags);
		EXPECT_EQ(size, ev[n].ret_data[0]);
		EXPECT_EQ(0, ev[n].ret_data[1]);
		EXPECT_EQ((uintptr_t)(send ? self->tx + 5 : self->rx + 7), ev[n].ptr);
	}
	EXPECT_EQ(-1, differs(self->rx + 7, 1, 0, size));
	/* Oneshot: both kevents are gone. */
	EXPECT_EQ(0, kevent_queued(self->kq));
}

/* Without RECV_SOME a receive waits for its whole buffer. */
TEST_F(naio, recv_waits_for_full_buffer)
{
	struct ukevent ev;

	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, 2000, 0), 0);
	fill(self->tx, 2, 0, 2000);
	ASSERT_EQ(1000, write(self->s[0], self->tx, 1000));
	EXPECT_EQ(0, one(self->kq, &ev, NEVER));
	ASSERT_EQ(1000, write(self->s[0], self->tx + 1000, 1000));
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(2000, ev.ret_data[0]);
	EXPECT_EQ(-1, differs(self->rx, 2, 0, 2000));
}

TEST_F(naio, recv_some)
{
	struct ukevent ev;

	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, MIB,
				  KEVENT_NAIO_RECV_SOME), 0);
	EXPECT_EQ(0, one(self->kq, &ev, NEVER));
	fill(self->tx, 3, 0, 100);
	ASSERT_EQ(100, write(self->s[0], self->tx, 100));
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(100, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
	EXPECT_EQ(-1, differs(self->rx, 3, 0, 100));
}

/* Requests of one socket and direction run in the order they were made. */
TEST_F(naio, many_outstanding_keep_order)
{
	const size_t chunk = 256 * 1024 + 17;
	struct ukevent ev[16];
	long got = 0, n, i;

	fill(self->tx, 4, 0, 8 * chunk);
	for (i = 0; i < 8; i++)
		ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx + i * chunk,
					  chunk, 0), 0);
	for (i = 0; i < 8; i++)
		ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx + i * chunk,
					  chunk, 0), 0);
	while (got < 16) {
		n = kevent_wait(self->kq, ev, 1, SOON);
		ASSERT_EQ(1, n);
		EXPECT_EQ(chunk, ev[0].ret_data[0]);
		EXPECT_EQ(0, ev[0].ret_flags & KEVENT_RET_BROKEN);
		got++;
	}
	EXPECT_EQ(-1, differs(self->rx, 4, 0, 8 * chunk));
}

/* Several sockets with requests outstanding on one queue. */
TEST_F(naio, several_sockets)
{
	int pairs[4][2], i, n = 0;
	struct ukevent ev;

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kevent_tcp_pair(pairs[i]));
		fill(self->tx + i * MIB, 10 + i, 0, MIB);
		ASSERT_GE(kevent_aio_recv(self->kq, pairs[i][1], self->rx + i * MIB, MIB, 0), 0);
		ASSERT_GE(kevent_aio_send(self->kq, pairs[i][0], self->tx + i * MIB, MIB, 0), 0);
	}
	while (n < 8) {
		ASSERT_EQ(1, one(self->kq, &ev, SOON));
		EXPECT_EQ(MIB, ev.ret_data[0]);
		n++;
	}
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(-1, differs(self->rx + i * MIB, 10 + i, 0, MIB));
		close(pairs[i][0]);
		close(pairs[i][1]);
	}
}

TEST_F(naio, sendfile)
{
	char path[] = "/tmp/kevent_naio_test.XXXXXX";
	size_t size = 2 * MIB + 300;
	int fd = mkstemp(path);
	struct ukevent ev[2];
	long id;

	ASSERT_GE(fd, 0);
	unlink(path);
	fill(self->tx, 5, 0, size);
	ASSERT_EQ(size, write(fd, self->tx, size));
	ASSERT_EQ(1000, lseek(fd, 1000, SEEK_SET));

	/* From offset 1000 to the end: asks for more than is there. */
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, size - 1000, 0), 0);
	id = kevent_aio_sendfile(self->kq, fd, self->s[0], size, 0);
	ASSERT_GE(id, 0);
	ASSERT_EQ(2, kevent_wait(self->kq, ev, 2, SOON));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(size - 1000, ev[i].ret_data[0]);
		EXPECT_EQ(0, ev[i].ret_data[1]);
		if (ev[i].id.raw[0] == (unsigned int)self->s[0]) {
			EXPECT_EQ(id, ev[i].id.raw[1]);
			EXPECT_EQ(1000, ev[i].ptr);	/* where it started */
		}
	}
	EXPECT_EQ(-1, differs(self->rx, 5, 1000, size - 1000));
	/* The file offset stays where it was. */
	EXPECT_EQ(1000, lseek(fd, 0, SEEK_CUR));
	close(fd);
}

/* A file shorter than asked for: its tail is sent, not left corked. */
TEST_F(naio, sendfile_short_file_is_pushed)
{
	char path[] = "/tmp/kevent_naio_test.XXXXXX";
	int fd = mkstemp(path), unsent = -1;
	struct ukevent ev;

	ASSERT_GE(fd, 0);
	unlink(path);
	fill(self->tx, 7, 0, 1000);
	ASSERT_EQ(1000, write(fd, self->tx, 1000));
	ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
	ASSERT_GE(kevent_aio_sendfile(self->kq, fd, self->s[0], 4096, 0), 0);
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(1000, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
	/* Nothing waits in the socket for more: it all went out. */
	ASSERT_EQ(0, ioctl(self->s[0], SIOCOUTQNSD, &unsent));
	EXPECT_EQ(0, unsent);
	close(fd);
}

/* REMOVE cancels: no completion, the pages are let go. */
TEST_F(naio, remove_cancels)
{
	struct ukevent ev;
	long id;

	id = kevent_aio_recv(self->kq, self->s[1], self->rx, MIB, 0);
	ASSERT_GE(id, 0);
	EXPECT_EQ(1, kevent_queued(self->kq));
	/* The counters the pin checks rely on see the request's 256 pages. */
	EXPECT_LE(MIB / 4096, kevent_vmstat("nr_foll_pin_acquired") -
			      kevent_vmstat("nr_foll_pin_released"));
	ev = kevent_fd(self->s[1], KEVENT_NAIO, KEVENT_SOCKET_RECV, 0);
	ev.id.raw[1] = id;
	EXPECT_EQ(1, kevent_remove(self->kq, &ev, 1));
	EXPECT_EQ(0, kevent_queued(self->kq));
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	/* The next data goes to a plain read, not to the cancelled buffer. */
	ASSERT_EQ(5, write(self->s[0], "hello", 5));
	ASSERT_EQ(5, read(self->s[1], self->tx, 5));
	EXPECT_EQ(0, one(self->kq, &ev, NEVER));
	EXPECT_EQ(0, self->rx[0]);
	EXPECT_EQ(0, kevent_remove(self->kq, &ev, 1));	/* already gone */
	EXPECT_EQ(ENOENT, ev.ret_data[0]);
}

/* MODIFY of a request and ADD of KEVENT_NAIO through kevent_ctl: EINVAL. */
TEST_F(naio, ctl_cannot_make_or_modify_requests)
{
	struct ukevent uk = kevent_fd(self->s[1], KEVENT_NAIO, KEVENT_SOCKET_RECV, 0);
	long id;

	uk.ptr = (uintptr_t)self->rx;
	EXPECT_EQ(0, kevent_add(self->kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "ADD of a new request");

	id = kevent_aio_recv(self->kq, self->s[1], self->rx, 100, 0);
	ASSERT_GE(id, 0);
	uk = kevent_fd(self->s[1], KEVENT_NAIO, KEVENT_SOCKET_SEND, 0);
	uk.id.raw[1] = id;
	EXPECT_EQ(0, kevent_modify(self->kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "MODIFY of a request");
	/* Even with the id of a request that exists. */
	EXPECT_EQ(0, kevent_add(self->kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "ADD with the id of a request");
	/* The request is still there: REMOVE cancels it. */
	EXPECT_EQ(1, kevent_remove(self->kq, &uk, 1));
	expect_naio_works(_metadata, self);
}

/* The peer shuts down: a receive completes with what came, no error. */
TEST_F(naio, peer_shutdown_ends_recv)
{
	struct ukevent ev;

	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, MIB, 0), 0);
	fill(self->tx, 6, 0, 4000);
	ASSERT_EQ(4000, write(self->s[0], self->tx, 4000));
	ASSERT_EQ(0, shutdown(self->s[0], SHUT_WR));
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(4000, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
	EXPECT_EQ(KEVENT_RET_DONE, ev.ret_flags);
	EXPECT_EQ(-1, differs(self->rx, 6, 0, 4000));
}

/* Our own shutdown: a send that cannot go any more fails with EPIPE. */
TEST_F(naio, own_shutdown_ends_send)
{
	struct ukevent ev;

	ASSERT_EQ(0, shutdown(self->s[0], SHUT_WR));
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx, 1000, 0), 0);
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(0, ev.ret_data[0]);
	EXPECT_EQ(EPIPE, ev.ret_data[1]);
	EXPECT_EQ(KEVENT_RET_DONE | KEVENT_RET_BROKEN, ev.ret_flags);
}

/* The peer resets while sends wait for room: each ends with the error. */
TEST_F(naio, peer_reset_ends_sends)
{
	struct linger l = { 1, 0 };
	struct ukevent ev;
	int i, resets = 0;

	for (i = 0; i < 4; i++)
		ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx + i * 2 * MIB,
					  2 * MIB, 0), 0);
	/* A receive on the same socket must learn of the reset too. */
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[0], self->rx, 100, 0), 0);
	EXPECT_EQ(0, one(self->kq, &ev, NEVER));	/* nobody reads */
	ASSERT_EQ(0, setsockopt(self->s[1], SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	close(self->s[1]);
	self->s[1] = socket(AF_INET, SOCK_STREAM, 0);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(1, one(self->kq, &ev, SOON));
		if (ev.event == KEVENT_SOCKET_RECV) {
			/* Not a clean end of stream: the error that ended it. */
			EXPECT_EQ(0, ev.ret_data[0]);
			EXPECT_EQ(ECONNRESET, ev.ret_data[1]);
			continue;
		}
		if (ev.ret_data[1] == ECONNRESET || ev.ret_data[1] == EPIPE)
			resets++;
		else
			EXPECT_EQ(2 * MIB, ev.ret_data[0]);
		EXPECT_GT(2 * MIB + 1, ev.ret_data[0]);
	}
	EXPECT_GT(resets, 0);
}

/* Data that arrived before a reset can still be received. */
TEST_F(naio, recv_after_reset_gets_the_data)
{
	struct linger l = { 1, 0 };
	struct ukevent ev;

	fill(self->tx, 8, 0, 100);
	ASSERT_EQ(100, write(self->s[0], self->tx, 100));
	usleep(20 * 1000);
	ASSERT_EQ(0, setsockopt(self->s[0], SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	close(self->s[0]);
	self->s[0] = socket(AF_INET, SOCK_STREAM, 0);
	usleep(20 * 1000);
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, 100, 0), 0);
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(100, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
	EXPECT_EQ(-1, differs(self->rx, 8, 0, 100));
}

/* Closing the queue with requests outstanding cancels them all. */
TEST_F(naio, closed_queue_cancels)
{
	int i;

	for (i = 0; i < 4; i++) {
		ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx + i * MIB, MIB, 0), 0);
		ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx + i * MIB, MIB, 0), 0);
	}
	close(self->kq);
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	self->kq = kevent_init();
	/*
	 * The sockets still work, and closing them really closes them. What
	 * the sends had moved before they were cancelled may fill s[1]'s
	 * receive buffer and s[0]'s send queue (nobody reads it any more):
	 * read it, so that s[0] has room again, instead of blocking in the
	 * write (a debug kernel's CI run once did, until the test timed out).
	 */
	{
		struct pollfd out = { .fd = self->s[0], .events = POLLOUT };
		static char sink[65536];

		for (i = 0; i < 100 && poll(&out, 1, 0) == 0; i++) {
			while (recv(self->s[1], sink, sizeof(sink), MSG_DONTWAIT) > 0)
				;
			usleep(10 * 1000);
		}
		EXPECT_EQ(1, poll(&out, 1, SOON));
	}
	ASSERT_EQ(3, send(self->s[0], "abc", 3, MSG_DONTWAIT));
}

/*
 * On a new queue, requests that stay outstanding: receives on s[0], which
 * nobody sends to, and more to send from it than the peer, who does not
 * read, takes. Returns whether all of them started.
 */
static int start_stuck_requests(FIXTURE_DATA(naio) *self)
{
	int kq = kevent_init(), i, ok = kq >= 0;

	for (i = 0; i < 4; i++) {
		ok &= kevent_aio_recv(kq, self->s[0], self->rx + i * MIB, MIB, 0) >= 0;
		ok &= kevent_aio_send(kq, self->s[0], self->tx + i * 2 * MIB,
				      2 * MIB, 0) >= 0;
	}
	return ok;
}

/* A process that exits with requests outstanding leaves nothing pinned. */
TEST_F(naio, exit_with_requests_outstanding)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(start_stuck_requests(self) ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
}

/* The same, killed by SIGKILL while it waits with requests outstanding. */
TEST_F(naio, killed_with_requests_outstanding)
{
	int status, ready[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		(void)!write(ready[1], start_stuck_requests(self) ? "y" : "n", 1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ('y', c);
	/* Its requests are outstanding: their pages are pinned now. */
	EXPECT_LT(0, kevent_vmstat("nr_foll_pin_acquired") -
		     kevent_vmstat("nr_foll_pin_released"));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	close(ready[0]);
	close(ready[1]);
}

/* Pinned pages count against RLIMIT_MEMLOCK without CAP_IPC_LOCK. */
/* 48 pages: one 32-page request fits, a second does not. */
static int memlock_limit_checks(FIXTURE_DATA(naio) *self)
{
	long a, b;

	if (kevent_aio_send(self->kq, self->s[0], self->tx, MIB, 0) != -1 ||
	    errno != ENOMEM)
		return 11;
	a = kevent_aio_recv(self->kq, self->s[1], self->rx, 128 * 1024, 0);
	b = kevent_aio_recv(self->kq, self->s[1], self->rx + MIB, 128 * 1024, 0);
	if (a < 0 || b != -1 || errno != ENOMEM)
		return 12;
	/* The limit is checked before the pages are: no EFAULT. */
	if (kevent_aio_send(self->kq, self->s[0], NULL, MIB, 0) != -1 ||
	    errno != ENOMEM)
		return 13;
	return 0;
}

TEST_F(naio, memlock_limit)
{
	EXPECT_EQ(0, as_unprivileged(self, 192 * 1024, memlock_limit_checks))
		TH_LOG("11: send, 12: second recv not ENOMEM, 13: NULL not ENOMEM");
	/* The first receive is still outstanding; the queue works around it. */
	EXPECT_EQ(1, kevent_queued(self->kq));
	EXPECT_QUEUE_WORKS(self->kq);
}

/*
 * A buffer in a file mapping (other than shmem) cannot be pinned for long:
 * EOPNOTSUPP. The lab's initramfs (/lab) is ramfs under UML, 9p (the
 * host's directory, KEVENT_NAIO_TEST_FILE_DIR) is one in lab smp; tmpfs is not.
 */
TEST_F(naio, file_mapping_is_eopnotsupp)
{
	const char *dir = getenv("KEVENT_NAIO_TEST_FILE_DIR") ?: "/lab";
	char path[256];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/naio_test_map.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		SKIP(return, "no writable non-tmpfs directory at %s", dir);
	/* Unlinked once mapped: 9p (lab smp) cannot truncate an unlinked file. */
	ASSERT_EQ(0, ftruncate(fd, 8192));
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	unlink(path);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_FAILS_WITH(EOPNOTSUPP, kevent_aio_recv(self->kq, self->s[1], p, 8192, 0), "recv");
	EXPECT_FAILS_WITH(EOPNOTSUPP, kevent_aio_send(self->kq, self->s[0], p, 8192, 0), "send");
	munmap(p, 8192);
	close(fd);
	expect_naio_works(_metadata, self);
}

/*
 * Bad arguments, one test per row of the network AIO table of docs/abi.md
 * ("Errors"), each call that the row concerns with each kind of bad value,
 * and then expect_naio_works().
 */
TEST_F(naio, unknown_flags_is_einval)
{
	int f = tmp_file(100, O_RDONLY), kq = self->kq;

	ASSERT_GE(f, 0);
	/* KEVENT_NAIO_RECV_SOME (1) is for receiving only. */
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_send(kq, self->s[0], self->tx, 10, 1), "send, 1");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_send(kq, self->s[0], self->tx, 10, 0x80000000u),
			  "send, 0x80000000");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(kq, self->s[1], self->rx, 10, 2), "recv, 2");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(kq, self->s[1], self->rx, 10,
						  KEVENT_NAIO_RECV_SOME | 2), "recv, 3");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(kq, self->s[1], self->rx, 10, 0xffffffffu),
			  "recv, 0xffffffff");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_sendfile(kq, f, self->s[0], 10, 1), "sendfile, 1");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_sendfile(kq, f, self->s[0], 10, 0xffffffffu),
			  "sendfile, 0xffffffff");
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, size_zero_is_einval)
{
	int f = tmp_file(100, O_RDONLY), kq = self->kq;

	ASSERT_GE(f, 0);
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_send(kq, self->s[0], self->tx, 0, 0), "send");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(kq, self->s[1], self->rx, 0, 0), "recv");
	EXPECT_FAILS_WITH(EINVAL, kevent_aio_sendfile(kq, f, self->s[0], 0, 0), "sendfile");
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, size_above_limit_is_e2big)
{
	int f = tmp_file(100, O_RDONLY), kq = self->kq;
	const size_t over = KEVENT_NAIO_MAX_SIZE + 1;

	ASSERT_GE(f, 0);
	EXPECT_FAILS_WITH(E2BIG, kevent_aio_send(kq, self->s[0], self->tx, over, 0), "send");
	EXPECT_FAILS_WITH(E2BIG, kevent_aio_recv(kq, self->s[1], self->rx, over, 0), "recv");
	EXPECT_FAILS_WITH(E2BIG, kevent_aio_sendfile(kq, f, self->s[0], over, 0), "sendfile");
	EXPECT_FAILS_WITH(E2BIG, kevent_aio_send(kq, self->s[0], self->tx, SIZE_MAX, 0),
			  "send, SIZE_MAX");
	EXPECT_FAILS_WITH(E2BIG, kevent_aio_recv(kq, self->s[1], self->rx, SIZE_MAX, 0),
			  "recv, SIZE_MAX");
	EXPECT_FAILS_WITH(E2BIG, kevent_aio_sendfile(kq, f, self->s[0], SIZE_MAX, 0),
			  "sendfile, SIZE_MAX");
	close(f);
	expect_naio_works(_metadata, self);
}

/* Not an error: a request of KEVENT_NAIO_MAX_SIZE moves all of it. */
TEST_F(naio, size_at_limit_is_accepted)
{
	const size_t size = KEVENT_NAIO_MAX_SIZE;
	unsigned char *tx = map(size, PROT_READ | PROT_WRITE);
	unsigned char *rx = map(size, PROT_READ | PROT_WRITE);
	int f = tmp_file(1000, O_RDONLY);
	struct ukevent ev[2];

	ASSERT_NE(NULL, tx);
	ASSERT_NE(NULL, rx);
	ASSERT_GE(f, 0);
	fill(tx, 12, 0, size);
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], rx, size, 0), 0);
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], tx, size, 0), 0);
	ASSERT_EQ(2, kevent_wait(self->kq, ev, 2, 6 * SOON));
	EXPECT_EQ(size, ev[0].ret_data[0]);
	EXPECT_EQ(size, ev[1].ret_data[0]);
	EXPECT_EQ(-1, differs(rx, 12, 0, size));
	/* A file shorter than that: it sends what there is. */
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], rx, 1000, 0), 0);
	ASSERT_GE(kevent_aio_sendfile(self->kq, f, self->s[0], size, 0), 0);
	ASSERT_EQ(2, kevent_wait(self->kq, ev, 2, SOON));
	EXPECT_EQ(1000, ev[0].ret_data[0]);
	EXPECT_EQ(1000, ev[1].ret_data[0]);
	close(f);
	munmap(tx, size);
	munmap(rx, size);
}

TEST_F(naio, bad_kevent_fd_is_ebadf)
{
	int f = tmp_file(100, O_RDONLY), closed = kevent_closed_fd(), path;
	char proc[64];

	ASSERT_GE(f, 0);
	/* An O_PATH descriptor of the queue is not the queue. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", self->kq);
	path = open(proc, O_PATH);
	ASSERT_GE(path, 0);
	EXPECT_FAILS_WITH(EBADF, kevent_aio_send(closed, self->s[0], self->tx, 10, 0), "send, closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_recv(closed, self->s[1], self->rx, 10, 0), "recv, closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(closed, f, self->s[0], 10, 0), "sendfile, closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_send(-1, self->s[0], self->tx, 10, 0), "send, -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_recv(-1, self->s[1], self->rx, 10, 0), "recv, -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(-1, f, self->s[0], 10, 0), "sendfile, -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_send(path, self->s[0], self->tx, 10, 0), "send, O_PATH");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_recv(path, self->s[1], self->rx, 10, 0), "recv, O_PATH");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(path, f, self->s[0], 10, 0), "sendfile, O_PATH");
	close(path);
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, non_kevent_fd_is_einval)
{
	int f = tmp_file(100, O_RDONLY), p[2], i;
	const char *what[] = { "a pipe", "the socket", "a regular file" };
	int fds[3];

	ASSERT_GE(f, 0);
	ASSERT_EQ(0, pipe(p));
	fds[0] = p[0];
	fds[1] = self->s[0];
	fds[2] = f;
	for (i = 0; i < 3; i++) {
		EXPECT_FAILS_WITH(EINVAL, kevent_aio_send(fds[i], self->s[0], self->tx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(EINVAL, kevent_aio_recv(fds[i], self->s[1], self->rx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(EINVAL, kevent_aio_sendfile(fds[i], f, self->s[0], 10, 0), what[i]);
	}
	close(p[0]);
	close(p[1]);
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, bad_socket_fd_is_ebadf)
{
	int f = tmp_file(100, O_RDONLY), closed = kevent_closed_fd(), path = open("/", O_PATH);
	int kq = self->kq;

	ASSERT_GE(f, 0);
	ASSERT_GE(path, 0);
	EXPECT_FAILS_WITH(EBADF, kevent_aio_send(kq, closed, self->tx, 10, 0), "send, closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_recv(kq, closed, self->rx, 10, 0), "recv, closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, f, closed, 10, 0), "sendfile, closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_send(kq, -1, self->tx, 10, 0), "send, -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_recv(kq, -1, self->rx, 10, 0), "recv, -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, f, -1, 10, 0), "sendfile, -1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_send(kq, path, self->tx, 10, 0), "send, O_PATH");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_recv(kq, path, self->rx, 10, 0), "recv, O_PATH");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, f, path, 10, 0), "sendfile, O_PATH");
	close(path);
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, not_a_socket_is_enotsock)
{
	int f = tmp_file(100, O_RDWR), p[2], i, kq = self->kq;
	const char *what[] = { "a pipe", "a regular file", "the kevent queue" };
	int fds[3];

	ASSERT_GE(f, 0);
	ASSERT_EQ(0, pipe(p));
	fds[0] = p[1];
	fds[1] = f;
	fds[2] = kq;
	for (i = 0; i < 3; i++) {
		EXPECT_FAILS_WITH(ENOTSOCK, kevent_aio_send(kq, fds[i], self->tx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(ENOTSOCK, kevent_aio_recv(kq, fds[i], self->rx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(ENOTSOCK, kevent_aio_sendfile(kq, f, fds[i], 10, 0), what[i]);
	}
	close(p[0]);
	close(p[1]);
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, not_tcp_is_esocktnosupport)
{
	int f = tmp_file(100, O_RDONLY), u = socket(AF_INET, SOCK_DGRAM, 0), un[2], i;
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_port = htons(9) };
	const char *what[] = { "UDP, connected", "Unix stream" };
	int fds[2], kq = self->kq;

	ASSERT_GE(f, 0);
	ASSERT_GE(u, 0);
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, connect(u, (void *)&lo, sizeof(lo)));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, un));
	fds[0] = u;
	fds[1] = un[0];
	for (i = 0; i < 2; i++) {
		EXPECT_FAILS_WITH(ESOCKTNOSUPPORT, kevent_aio_send(kq, fds[i], self->tx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(ESOCKTNOSUPPORT, kevent_aio_recv(kq, fds[i], self->rx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(ESOCKTNOSUPPORT, kevent_aio_sendfile(kq, f, fds[i], 10, 0), what[i]);
	}
	close(u);
	close(un[0]);
	close(un[1]);
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, without_so_async_sock_is_ebadfd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int f = tmp_file(100, O_RDONLY), off[2], ls, c, a, i, kq = self->kq;
	const char *what[] = { "turned off", "accepted from an SO_ASYNC_SOCK listener" };
	int fds[2];

	ASSERT_GE(f, 0);
	/* A connected pair whose SO_ASYNC_SOCK was turned off again. */
	ASSERT_EQ(0, kevent_tcp_pair(off));
	ASSERT_EQ(0, kevent_set_async(off[0], 0));
	/* An accepted socket does not inherit it from its listener. */
	ls = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, kevent_set_async(ls, 1));
	ASSERT_EQ(0, bind(ls, (void *)&sa, sizeof(sa)));
	ASSERT_EQ(0, listen(ls, 1));
	ASSERT_EQ(0, getsockname(ls, (void *)&sa, &len));
	c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (void *)&sa, sizeof(sa)));
	a = accept(ls, NULL, NULL);
	ASSERT_GE(a, 0);
	fds[0] = off[0];
	fds[1] = a;
	for (i = 0; i < 2; i++) {
		EXPECT_FAILS_WITH(EBADFD, kevent_aio_send(kq, fds[i], self->tx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(EBADFD, kevent_aio_recv(kq, fds[i], self->rx, 10, 0), what[i]);
		EXPECT_FAILS_WITH(EBADFD, kevent_aio_sendfile(kq, f, fds[i], 10, 0), what[i]);
	}
	close(off[0]);
	close(off[1]);
	close(ls);
	close(c);
	close(a);
	close(f);
	expect_naio_works(_metadata, self);
}

/* Waits until socket @s hangs up (a reset closed it); false if it never does. */
static bool hung_up_soon(int s)
{
	struct pollfd pfd = { .fd = s };
	int ms;

	for (ms = 0; ms < SOON; ms += 5) {
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP))
			return true;
		usleep(5000);
	}
	return false;
}

TEST_F(naio, not_connected_is_enotconn)
{
	struct linger l = { 1, 0 };
	int f = tmp_file(100, O_RDONLY), ls = socket(AF_INET, SOCK_STREAM, 0);
	int fresh = socket(AF_INET, SOCK_STREAM, 0), reset[2], kq = self->kq;

	ASSERT_GE(f, 0);
	ASSERT_EQ(0, kevent_set_async(ls, 1));
	ASSERT_EQ(0, listen(ls, 1));
	ASSERT_EQ(0, kevent_set_async(fresh, 1));
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_send(kq, ls, self->tx, 10, 0), "send, listening");
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_recv(kq, ls, self->rx, 10, 0), "recv, listening");
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_sendfile(kq, f, ls, 10, 0), "sendfile, listening");
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_send(kq, fresh, self->tx, 10, 0), "send, never connected");
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_recv(kq, fresh, self->rx, 10, 0), "recv, never connected");
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_sendfile(kq, f, fresh, 10, 0), "sendfile, never connected");
	/* A connection the peer reset: nothing can be sent on it any more. */
	ASSERT_EQ(0, kevent_tcp_pair(reset));
	ASSERT_EQ(0, setsockopt(reset[1], SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	close(reset[1]);
	ASSERT_TRUE(hung_up_soon(reset[0]));
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_send(kq, reset[0], self->tx, 10, 0), "send, reset");
	EXPECT_FAILS_WITH(ENOTCONN, kevent_aio_sendfile(kq, f, reset[0], 10, 0), "sendfile, reset");
	close(reset[0]);
	close(ls);
	close(fresh);
	close(f);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, kernel_buffer_is_efault)
{
	int kq = self->kq;

	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(kq, self->s[0], (void *)-4096L, 10, 0),
			  "send, the last page");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(kq, self->s[1], (void *)-4096L, 10, 0),
			  "recv, the last page");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(kq, self->s[0], (void *)(1UL << 47), 10, 0),
			  "send, just above user space");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(kq, self->s[1], (void *)(1UL << 47), 10, 0),
			  "recv, just above user space");
	/* buf + size wraps around to 10. */
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(kq, self->s[0], (void *)-10L, 20, 0),
			  "send, wraps");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(kq, self->s[1], (void *)-10L, 20, 0),
			  "recv, wraps");
	expect_naio_works(_metadata, self);
}

TEST_F(naio, null_buffer_is_efault)
{
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(self->kq, self->s[0], NULL, 10, 0), "send");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(self->kq, self->s[1], NULL, 10, 0), "recv");
	expect_naio_works(_metadata, self);
}

TEST_F(naio, unmapped_buffer_is_efault)
{
	unsigned char *gone = map(4096, PROT_READ | PROT_WRITE);
	unsigned char *none = map(4096, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, gone);
	ASSERT_NE(NULL, none);
	ASSERT_EQ(0, munmap(gone, 4096));
	/* Written first, so that its page is there, then made inaccessible. */
	memset(none, 1, 4096);
	ASSERT_EQ(0, mprotect(none, 4096, PROT_NONE));
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(self->kq, self->s[0], gone, 10, 0),
			  "send, unmapped");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(self->kq, self->s[1], gone, 10, 0),
			  "recv, unmapped");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(self->kq, self->s[0], none, 10, 0),
			  "send, PROT_NONE");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(self->kq, self->s[1], none, 10, 0),
			  "recv, PROT_NONE");
	munmap(none, 4096);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, buffer_past_end_of_mapping_is_efault)
{
	unsigned char *edge = map(8192, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, edge);
	ASSERT_EQ(0, munmap(edge + 4096, 4096));
	/* 96 of its 200 bytes are there. */
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_send(self->kq, self->s[0], edge + 4000, 200, 0),
			  "send");
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(self->kq, self->s[1], edge + 4000, 200, 0),
			  "recv");
	munmap(edge, 4096);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, recv_into_read_only_buffer_is_efault)
{
	unsigned char *ro = map(4096, PROT_READ);

	ASSERT_NE(NULL, ro);
	EXPECT_FAILS_WITH(EFAULT, kevent_aio_recv(self->kq, self->s[1], ro, 10, 0), "recv");
	munmap(ro, 4096);
	expect_naio_works(_metadata, self);
}

/* Not an error: aio_send only reads its buffer. */
TEST_F(naio, send_from_read_only_buffer_is_accepted)
{
	unsigned char *ro = map(4096, PROT_READ);
	struct ukevent ev[2];

	ASSERT_NE(NULL, ro);
	ASSERT_GE(kevent_aio_recv(self->kq, self->s[1], self->rx, 10, 0), 0);
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], ro, 10, 0), 0);
	ASSERT_EQ(2, kevent_wait(self->kq, ev, 2, SOON));
	EXPECT_EQ(10, ev[0].ret_data[0]);
	EXPECT_EQ(10, ev[1].ret_data[0]);
	EXPECT_EQ(0, kevent_queued(self->kq));
	munmap(ro, 4096);
}

/*
 * The file is read with the caller's credentials, never the worker's: a
 * descriptor that root opened, used after dropping to another user, reads
 * as that user. /proc/sys/kernel/cad_pid (0600) checks its reader at every
 * read, as read(2) shows. (Issue 14, finding 9: the worker read as root.)
 */
TEST_F(naio, sendfile_reads_with_the_callers_credentials)
{
	int f = open("/proc/sys/kernel/cad_pid", O_RDONLY);
	struct ukevent ev;
	char buf[32];

	if (geteuid() != 0)
		SKIP(return, "needs root: it opens a 0600 file, then drops to another user");
	ASSERT_GE(f, 0);
	/* As root it sends the file: a pid and a newline. */
	ASSERT_GE(kevent_aio_sendfile(self->kq, f, self->s[0], sizeof(buf), 0), 0);
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(0, ev.ret_data[1]);
	ASSERT_GT(ev.ret_data[0], 0);
	EXPECT_EQ(ev.ret_data[0], read(self->s[1], buf, sizeof(buf)));
	/* As nobody, read(2) is refused, and so is the send. */
	ASSERT_EQ(0, setresuid(65534, 65534, 65534));
	EXPECT_FAILS_WITH(EPERM, pread(f, buf, sizeof(buf), 0), "read(2) as nobody");
	ASSERT_GE(kevent_aio_sendfile(self->kq, f, self->s[0], sizeof(buf), 0), 0);
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(0, ev.ret_data[0]);
	EXPECT_EQ(EPERM, ev.ret_data[1]);
	EXPECT_EQ(KEVENT_RET_DONE | KEVENT_RET_BROKEN, ev.ret_flags);
	close(f);
}

TEST_F(naio, sendfile_unreadable_file_is_ebadf)
{
	int wo = tmp_file(100, O_WRONLY), path = open("/proc/self/stat", O_PATH);
	int p[2], closed = kevent_closed_fd(), kq = self->kq;

	ASSERT_GE(wo, 0);
	ASSERT_GE(path, 0);
	ASSERT_EQ(0, pipe(p));
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, closed, self->s[0], 10, 0), "closed");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, -1, self->s[0], 10, 0), "-1");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, wo, self->s[0], 10, 0),
			  "regular file, O_WRONLY");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, p[1], self->s[0], 10, 0),
			  "pipe, write end");
	EXPECT_FAILS_WITH(EBADF, kevent_aio_sendfile(kq, path, self->s[0], 10, 0),
			  "regular file, O_PATH");
	close(p[0]);
	close(p[1]);
	close(path);
	close(wo);
	expect_naio_works(_metadata, self);
}

TEST_F(naio, sendfile_of_non_regular_file_is_einval)
{
	int dir = open("/", O_RDONLY | O_DIRECTORY), p[2], i, kq = self->kq;
	const char *what[] = { "pipe, read end", "a socket", "a directory", "a kevent queue" };
	int fds[4];

	ASSERT_GE(dir, 0);
	ASSERT_EQ(0, pipe(p));
	fds[0] = p[0];
	fds[1] = self->s[1];
	fds[2] = dir;
	fds[3] = kq;
	for (i = 0; i < 4; i++)
		EXPECT_FAILS_WITH(EINVAL, kevent_aio_sendfile(kq, fds[i], self->s[0], 10, 0),
				  what[i]);
	close(p[0]);
	close(p[1]);
	close(dir);
	expect_naio_works(_metadata, self);
}

/*
 * A send of at most KEVENT_NAIO_COPY_MAX bytes is copied when it starts:
 * the buffer may change at once, and when nothing of the socket's is ahead
 * of it the call sends it itself, so that its completion is ready when the
 * call returns.
 */
TEST_F(naio, small_send_is_copied_and_done_when_the_call_returns)
{
	struct ukevent ev;
	long id;

	fill(self->tx, 5, 0, KEVENT_NAIO_COPY_MAX);
	id = kevent_aio_send(self->kq, self->s[0], self->tx, KEVENT_NAIO_COPY_MAX, 0);
	ASSERT_GE(id, 0);
	memset(self->tx, 0, KEVENT_NAIO_COPY_MAX);
	/* A WAIT that does not sleep finds it. */
	ASSERT_EQ(1, one(self->kq, &ev, 0));
	EXPECT_EQ(id, ev.id.raw[1]);
	EXPECT_EQ(KEVENT_SOCKET_SEND, ev.event);
	EXPECT_EQ(KEVENT_RET_DONE, ev.ret_flags);
	EXPECT_EQ(KEVENT_NAIO_COPY_MAX, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
	EXPECT_EQ((uintptr_t)self->tx, ev.ptr);
	ASSERT_EQ(KEVENT_NAIO_COPY_MAX, recv(self->s[1], self->rx, KEVENT_NAIO_COPY_MAX, MSG_WAITALL));
	EXPECT_EQ(-1, differs(self->rx, 5, 0, KEVENT_NAIO_COPY_MAX));
	EXPECT_EQ(0, kevent_queued(self->kq));
}

/*
 * A copied send pins nothing: it starts for a user whose locked-memory
 * limit is 0, where one byte more, a zero-copy send, is refused.
 */
static int small_send_checks(FIXTURE_DATA(naio) *self)
{
	if (kevent_aio_send(self->kq, self->s[0], self->tx, KEVENT_NAIO_COPY_MAX, 0) < 0)
		return 11;
	if (kevent_aio_send(self->kq, self->s[0], self->tx, KEVENT_NAIO_COPY_MAX + 1, 0) != -1 ||
	    errno != ENOMEM)
		return 12;
	return 0;
}

TEST_F(naio, small_send_needs_no_locked_memory)
{
	struct ukevent ev;

	fill(self->tx, 8, 0, KEVENT_NAIO_COPY_MAX);
	EXPECT_EQ(0, as_unprivileged(self, 0, small_send_checks))
		TH_LOG("11: the small send failed, 12: the larger one was not ENOMEM");
	/* The request is the queue's: its completion comes here. */
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(KEVENT_NAIO_COPY_MAX, ev.ret_data[0]);
	ASSERT_EQ(KEVENT_NAIO_COPY_MAX, recv(self->s[1], self->rx, KEVENT_NAIO_COPY_MAX, MSG_WAITALL));
	EXPECT_EQ(-1, differs(self->rx, 8, 0, KEVENT_NAIO_COPY_MAX));
}

/* A small send made while a large one is under way goes out after it. */
TEST_F(naio, small_send_behind_a_large_one_keeps_order)
{
	const size_t big = 8 * MIB - 4096;
	struct ukevent ev[3];
	unsigned char *small = self->rx + big;
	size_t got = 0;
	long n;

	fill(self->tx, 6, 0, big);
	fill(small, 6, big, 100);
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx, big, 0), 0);
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], small, 100, 0), 0);
	/* The small send's bytes were copied: its buffer is the receiver's now. */
	while (got < big + 100) {
		n = recv(self->s[1], self->rx + got, big + 100 - got, 0);
		ASSERT_GT(n, 0);
		got += n;
	}
	EXPECT_EQ(-1, differs(self->rx, 6, 0, big + 100));
	ASSERT_EQ(2, kevent_wait(self->kq, ev, 2, SOON));
	EXPECT_EQ(0, (ev[0].ret_flags | ev[1].ret_flags) & KEVENT_RET_BROKEN);
}

/* A small send to a full socket waits for room, and the worker sends it. */
TEST_F(naio, small_send_to_a_full_socket_completes_when_there_is_room)
{
	struct ukevent ev;
	size_t full = 0, got = 0;
	ssize_t n;

	while ((n = send(self->s[0], self->tx, 64 * 1024, MSG_DONTWAIT)) > 0)
		full += n;
	ASSERT_EQ(EAGAIN, errno);
	fill(self->tx + MIB, 7, 0, 100);
	ASSERT_GE(kevent_aio_send(self->kq, self->s[0], self->tx + MIB, 100, 0), 0);
	EXPECT_EQ(0, one(self->kq, &ev, NEVER)) TH_LOG("done without room");
	while (got < full) {
		n = recv(self->s[1], self->rx, MIB < full - got ? MIB : full - got, 0);
		ASSERT_GT(n, 0);
		got += n;
	}
	ASSERT_EQ(100, recv(self->s[1], self->rx, 100, MSG_WAITALL));
	EXPECT_EQ(-1, differs(self->rx, 7, 0, 100));
	ASSERT_EQ(1, one(self->kq, &ev, SOON));
	EXPECT_EQ(100, ev.ret_data[0]);
	EXPECT_EQ(0, ev.ret_data[1]);
}

TEST_HARNESS_MAIN
