// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_et_test: edge-triggered delivery (KEVENT_REQ_ET, kevent's later
 * takes; docs/abi.md). A level-triggered KEVENT_SOCKET or KEVENT_POLL
 * kevent is delivered by every WAIT while its file is ready; an
 * edge-triggered one once for each new activity of the file, as epoll's
 * EPOLLET. These tests pin down epoll ET's rules, the cases where a
 * program loses a wake-up with them, and KEVENT_REQ_LAST_CHECK.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

FIXTURE(et) {
	int kq;
	int s[2];	/* a connected stream socket pair */
	int p[2];	/* a pipe */
};

FIXTURE_SETUP(et)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, self->s));
	ASSERT_EQ(0, pipe2(self->p, O_NONBLOCK));
}

FIXTURE_TEARDOWN(et)
{
	close(self->kq);
	close(self->s[0]);
	close(self->s[1]);
	close(self->p[0]);
	close(self->p[1]);
}

static void put(int fd, const char *what)
{
	if (write(fd, what, strlen(what)) != (ssize_t)strlen(what))
		abort();
}

/* Reads everything there is; returns how many bytes. */
static int drain(int fd)
{
	char buf[4096];
	int total = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	return n < 0 && errno == EAGAIN ? total : -1;
}

/* One WAIT for one event, @ms milliseconds at most. */
static int wait1(int kq, struct ukevent *out, unsigned int ms)
{
	memset(out, 0, sizeof(*out));
	return kevent_wait(kq, out, 1, ms);
}

static int add_recv(int kq, int fd, unsigned int flags)
{
	struct ukevent uk = kevent_fd(fd, KEVENT_SOCKET, KEVENT_SOCKET_RECV, flags);

	return kevent_add(kq, &uk, 1);
}

TEST_F(et, once_per_arrival_not_while_data_remains)
{
	struct ukevent out;

	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET));
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	put(self->s[1], "a");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	/* The byte is still there: a level kevent would be delivered again. */
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	put(self->s[1], "b");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	EXPECT_EQ(2, drain(self->s[0]));
}

TEST_F(et, level_for_comparison)
{
	struct ukevent out;

	ASSERT_EQ(1, add_recv(self->kq, self->s[0], 0));
	put(self->s[1], "a");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(1, wait1(self->kq, &out, 0));
	EXPECT_EQ(1, drain(self->s[0]));
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
}

/* Ready when added: reported once, as EPOLL_CTL_ADD with EPOLLET does. */
TEST_F(et, ready_at_add_is_reported_once)
{
	struct ukevent out;

	put(self->s[1], "a");
	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET));
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
}

/*
 * The rule ET asks of a program: read until EAGAIN, then wait. Data that
 * arrives after the EAGAIN is a new edge, never lost.
 */
TEST_F(et, read_until_eagain_then_wait_loses_nothing)
{
	struct ukevent out;

	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET));
	for (int round = 0; round < 3; round++) {
		put(self->s[1], "abc");
		ASSERT_EQ(1, wait1(self->kq, &out, 1000)) TH_LOG("round %d", round);
		EXPECT_EQ(3, drain(self->s[0]));
	}
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
}

/*
 * The lost wake-up ET is known for: a program that reads only part of
 * the data and waits again sleeps while data is there, until more comes.
 */
TEST_F(et, partial_read_then_wait_sleeps_until_more_arrives)
{
	struct ukevent out;
	char c;

	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET));
	put(self->s[1], "ab");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	ASSERT_EQ(1, read(self->s[0], &c, 1));
	EXPECT_EQ(0, wait1(self->kq, &out, 100));	/* "b" waits unseen */
	put(self->s[1], "c");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(2, drain(self->s[0]));
}

/*
 * Without KEVENT_REQ_LAST_CHECK an edge is delivered as its wake-up
 * reported it, even if the data was read meanwhile; with it, the socket
 * is looked at when WAIT delivers and a stale edge is not delivered.
 */
TEST_F(et, stale_edge_is_delivered_without_last_check)
{
	struct ukevent out;

	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET));
	put(self->s[1], "a");
	EXPECT_EQ(1, drain(self->s[0]));
	ASSERT_EQ(1, wait1(self->kq, &out, 0));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
}

TEST_F(et, last_check_drops_a_stale_edge)
{
	struct ukevent out;

	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET | KEVENT_REQ_LAST_CHECK));
	put(self->s[1], "a");
	EXPECT_EQ(1, drain(self->s[0]));
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	put(self->s[1], "b");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
}

/* KEVENT_SOCKET_SEND: space at add, then again only when space is freed. */
TEST_F(et, send_space_is_an_edge_too)
{
	struct ukevent uk = kevent_fd(self->s[0], KEVENT_SOCKET, KEVENT_SOCKET_SEND,
				      KEVENT_REQ_ET);
	char buf[4096] = { 0 };
	struct ukevent out;
	int full = 0;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_SEND, out.ret_data[0]);
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	while (write(self->s[0], buf, sizeof(buf)) > 0)
		full++;
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_GT(full, 0);
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	EXPECT_GT(drain(self->s[1]), 0);
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_SEND, out.ret_data[0]);
}

/* KEVENT_POLL on a pipe, with the poll bits the wake-up reported. */
TEST_F(et, poll_on_a_pipe)
{
	struct ukevent uk = kevent_fd(self->p[0], KEVENT_POLL, KEVENT_POLL_POLLIN,
				      KEVENT_REQ_ET);
	struct ukevent out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	put(self->p[1], "a");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_TRUE(out.ret_data[0] & KEVENT_POLL_POLLIN) TH_LOG("%#x", out.ret_data[0]);
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	/* The writer's end closes: a hang-up is new activity. */
	close(self->p[1]);
	self->p[1] = open("/dev/null", O_WRONLY);
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_TRUE(out.ret_data[0] & KEVENT_POLL_POLLHUP) TH_LOG("%#x", out.ret_data[0]);
}

/* MODIFY turns a level kevent edge triggered, and back. */
TEST_F(et, modify_between_level_and_edge)
{
	struct ukevent uk = kevent_fd(self->s[0], KEVENT_SOCKET, KEVENT_SOCKET_RECV, 0);
	struct ukevent out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	put(self->s[1], "a");
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	ASSERT_EQ(1, wait1(self->kq, &out, 0));
	uk.req_flags = KEVENT_REQ_ET;
	ASSERT_EQ(1, kevent_modify(self->kq, &uk, 1));
	/* MODIFY looks at the socket: once, then not while it lasts. */
	EXPECT_EQ(1, wait1(self->kq, &out, 0));
	EXPECT_EQ(0, wait1(self->kq, &out, 0));
	uk.req_flags = 0;
	ASSERT_EQ(1, kevent_modify(self->kq, &uk, 1));
	EXPECT_EQ(1, wait1(self->kq, &out, 0));
	EXPECT_EQ(1, wait1(self->kq, &out, 0));
}

/* Two edges on two sockets, one WAIT for both: each once. */
TEST_F(et, one_wait_delivers_each_edge_once)
{
	struct kevent_get_args args = { .timeout_ns = 0 };
	struct ukevent out[4];
	int t[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, t));
	ASSERT_EQ(1, add_recv(self->kq, self->s[0], KEVENT_REQ_ET));
	ASSERT_EQ(1, add_recv(self->kq, t[0], KEVENT_REQ_ET));
	put(self->s[1], "a");
	put(t[1], "a");
	put(self->s[1], "b");
	EXPECT_EQ(2, kevent_get_events(self->kq, 0, 4, out, &args));
	EXPECT_NE(out[0].id.raw[0], out[1].id.raw[0]);
	EXPECT_EQ(0, kevent_get_events(self->kq, 0, 4, out, &args));
	close(t[0]);
	close(t[1]);
}

/*
 * A connecting TCP socket becomes writable with a wake-up that does not
 * say what happened (its state change); data that arrives next says RECV.
 * Both must be reported: the keyless wake-up makes WAIT look at the socket.
 */
TEST_F(et, keyless_wakeup_is_looked_at)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct ukevent uk, out;
	int a;

	ASSERT_GE(ls, 0);
	ASSERT_GE(c, 0);
	ASSERT_EQ(0, bind(ls, (void *)&sa, sizeof(sa)));
	ASSERT_EQ(0, listen(ls, 1));
	ASSERT_EQ(0, getsockname(ls, (void *)&sa, &len));
	uk = kevent_fd(c, KEVENT_SOCKET, KEVENT_SOCKET_RECV | KEVENT_SOCKET_SEND, KEVENT_REQ_ET);
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	/* An unconnected socket reads as hung up: that edge is not the point. */
	wait1(self->kq, &out, 0);
	ASSERT_TRUE(connect(c, (void *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS);
	a = accept(ls, NULL, NULL);
	ASSERT_GE(a, 0);
	put(a, "x");
	/*
	 * Loopback delivers the byte from a softirq, which a debug kernel may
	 * run only later: WAIT would then find the connection's SEND alone.
	 */
	{
		struct pollfd pfd = { .fd = c, .events = POLLIN };

		ASSERT_EQ(1, poll(&pfd, 1, 5000));
	}
	ASSERT_EQ(1, wait1(self->kq, &out, 1000));
	EXPECT_EQ(KEVENT_SOCKET_RECV | KEVENT_SOCKET_SEND, out.ret_data[0]);
	close(a);
	close(c);
	close(ls);
}

/* Types that are edge triggered anyway have no use for the flags. */
TEST_F(et, timer_or_inode_with_et_or_last_check_is_einval)
{
	static const unsigned int flags[] = { KEVENT_REQ_ET, KEVENT_REQ_LAST_CHECK };
	struct ukevent uk;

	for (int i = 0; i < 2; i++) {
		uk = kevent_timer(1000, 1, flags[i]);
		EXPECT_EQ(0, kevent_add(self->kq, &uk, 1));
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "timer");
		uk = kevent_fd(open("/", O_RDONLY | O_DIRECTORY), KEVENT_INODE,
			       KEVENT_INODE_CREATE, flags[i]);
		EXPECT_EQ(0, kevent_add(self->kq, &uk, 1));
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "inode");
		close(uk.id.raw[0]);
	}
	EXPECT_QUEUE_WORKS(self->kq);
}

TEST_HARNESS_MAIN
