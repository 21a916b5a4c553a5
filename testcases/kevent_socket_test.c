// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_socket_test: KEVENT_SOCKET within one host, on Unix, TCP and UDP
 * sockets: RECV, ACCEPT with the accept-queue length, SEND only when there
 * is room, shutdown and errors, a closed socket; and the errors of
 * KEVENT_SOCKET requests.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000
#define NEVER 100

#define ksock(fd, event, flags) kevent_fd(fd, KEVENT_SOCKET, event, flags)

/* A listening TCP socket on loopback, its port in *port. */
static int tcp_listener(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (void *)&sa, sizeof(sa)) || listen(s, 16) ||
	    getsockname(s, (void *)&sa, &len))
		return -1;
	*port = ntohs(sa.sin_port);
	return s;
}

static int tcp_connect(int port, int flags)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM | flags, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (void *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		close(s);
		return -1;
	}
	return s;
}

FIXTURE(unix_pair) {
	int kq;
	int s[2];
};

FIXTURE_SETUP(unix_pair)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, self->s));
}

FIXTURE_TEARDOWN(unix_pair)
{
	close(self->kq);
	close(self->s[0]);
	close(self->s[1]);
}

TEST_F(unix_pair, recv_when_data_arrives)
{
	struct ukevent uk = ksock(self->s[0], KEVENT_SOCKET_RECV, 0), out;
	char buf[8];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, 0));
	ASSERT_EQ(5, write(self->s[1], "hello", 5));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SOCKET, out.type);
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	EXPECT_EQ(0, out.ret_data[1]);
	ASSERT_EQ(5, read(self->s[0], buf, sizeof(buf)));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_F(unix_pair, recv_on_peer_shutdown)
{
	struct ukevent uk = ksock(self->s[0], KEVENT_SOCKET_RECV, 0), out;
	char buf[8];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, shutdown(self->s[1], SHUT_WR));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	EXPECT_EQ(0, read(self->s[0], buf, sizeof(buf)));
}

TEST_F(unix_pair, send_only_when_there_is_room)
{
	struct ukevent uk = ksock(self->s[0], KEVENT_SOCKET_SEND, 0), out;
	static char buf[65536];
	long filled = 0, r;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, 0));
	EXPECT_EQ(KEVENT_SOCKET_SEND, out.ret_data[0]);
	while ((r = write(self->s[0], buf, sizeof(buf))) > 0)
		filled += r;
	ASSERT_EQ(EAGAIN, errno);
	/* Full: no SEND, however often the peer's reads wake us. */
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	while (filled > 0 && (r = read(self->s[1], buf, sizeof(buf))) > 0)
		filled -= r;
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
}

TEST_F(unix_pair, close_breaks)
{
	struct ukevent uk = ksock(self->s[0], KEVENT_SOCKET_RECV, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	close(self->s[0]);
	self->s[0] = -1;
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_RET_BROKEN, out.ret_flags & KEVENT_RET_BROKEN);
	EXPECT_EQ(EBADF, out.ret_data[0]);
}

TEST(accept_reports_the_queue_length)
{
	int kq = kevent_init(), port, ls = tcp_listener(&port), c[3], i, a;
	struct ukevent uk = ksock(ls, KEVENT_SOCKET_ACCEPT, 0), out;

	ASSERT_GE(kq, 0);
	ASSERT_GE(ls, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(kq, &out, 1, 0));
	for (i = 0; i < 3; i++)
		ASSERT_GE(c[i] = tcp_connect(port, 0), 0);
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SOCKET_ACCEPT, out.ret_data[0]);
	EXPECT_EQ(3, out.ret_data[1]);
	for (i = 0; i < 3; i++) {
		a = accept(ls, NULL, NULL);
		ASSERT_GE(a, 0);
		close(a);
	}
	EXPECT_EQ(0, kevent_wait(kq, &out, 1, NEVER));
	for (i = 0; i < 3; i++)
		close(c[i]);
	close(ls);
	close(kq);
}

TEST(tcp_recv_send_and_error)
{
	int kq = kevent_init(), port, ls = tcp_listener(&port), c, a;
	struct linger lg = { 1, 0 };	/* close with a reset */
	struct ukevent uk[2], out[2];
	char buf[4];

	ASSERT_GE(ls, 0);
	ASSERT_GE(c = tcp_connect(port, 0), 0);
	ASSERT_GE(a = accept(ls, NULL, NULL), 0);
	uk[0] = ksock(a, KEVENT_SOCKET_RECV, 0);
	uk[1] = ksock(c, KEVENT_SOCKET_SEND, KEVENT_REQ_ONESHOT);
	ASSERT_EQ(2, kevent_add(kq, uk, 2));
	ASSERT_EQ(1, kevent_wait(kq, out, 2, 0));	/* c can send */
	EXPECT_EQ(c, out[0].id.raw[0]);
	ASSERT_EQ(3, write(c, "abc", 3));
	ASSERT_EQ(1, kevent_wait(kq, out, 1, SOON));
	EXPECT_EQ(a, out[0].id.raw[0]);
	ASSERT_EQ(3, read(a, buf, sizeof(buf)));

	/* A reset: RECV, with the pending error in ret_data[1]. */
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(c);
	ASSERT_EQ(1, kevent_wait(kq, out, 1, SOON));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out[0].ret_data[0]);
	EXPECT_EQ(ECONNRESET, out[0].ret_data[1]);
	close(a);
	close(ls);
	close(kq);
}

TEST(refused_connect_is_an_error_event)
{
	int kq = kevent_init(), port, ls = tcp_listener(&port), c;
	struct ukevent uk, out;

	close(ls);	/* nothing listens on @port any more */
	ASSERT_GE(c = tcp_connect(port, SOCK_NONBLOCK), 0);
	uk = ksock(c, KEVENT_SOCKET_SEND | KEVENT_SOCKET_RECV, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(ECONNREFUSED, out.ret_data[1]);
	close(c);
	close(kq);
}

TEST(udp_recv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int kq = kevent_init();
	int r = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ukevent uk, out;
	char buf[16];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, bind(r, (void *)&sa, sizeof(sa)));
	ASSERT_EQ(0, getsockname(r, (void *)&sa, &len));
	uk = ksock(r, KEVENT_SOCKET_RECV, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(kq, &out, 1, 0));
	ASSERT_EQ(4, sendto(s, "ping", 4, 0, (void *)&sa, sizeof(sa)));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SOCKET_RECV, out.ret_data[0]);
	ASSERT_EQ(4, recv(r, buf, sizeof(buf), 0));
	EXPECT_EQ(0, kevent_wait(kq, &out, 1, NEVER));
	close(r);
	close(s);
	close(kq);
}

/* Bad input (docs/abi.md, "Errors"): the entry fails, the queue works on. */

TEST_F(unix_pair, event_without_a_socket_bit_is_einval)
{
	static const unsigned int bad[] = { 0, 0x8, 0x80000000u, 0xfffffff8u };
	struct ukevent held = ksock(self->s[0], KEVENT_SOCKET_RECV, 0);

	ASSERT_EQ(1, kevent_add(self->kq, &held, 1));
	expect_masks_fail(_metadata, self->kq, &held, ksock(self->s[1], 0, 0), bad,
			  sizeof(bad) / sizeof(bad[0]), EINVAL);
}

TEST(closed_fd_is_ebadf)
{
	int closed = socket(AF_UNIX, SOCK_STREAM, 0);

	ASSERT_GE(closed, 0);
	expect_unopened_fds_fail(_metadata, KEVENT_SOCKET, KEVENT_SOCKET_RECV, closed, 1, EBADF);
}

TEST(file_without_poll_is_eperm)
{
	expect_unpollable_files_fail(_metadata, KEVENT_SOCKET, KEVENT_SOCKET_RECV, EPERM);
}

TEST(not_a_socket_is_enotsock)
{
	int kq = kevent_init(), other = kevent_init(), p[2];
	struct ukevent uk[3];

	ASSERT_GE(kq, 0);
	ASSERT_GE(other, 0);
	ASSERT_EQ(0, pipe(p));
	/* Files that poll, but are no sockets. */
	uk[0] = ksock(p[0], KEVENT_SOCKET_RECV, 0);
	uk[1] = ksock(p[1], KEVENT_SOCKET_SEND, 0);
	uk[2] = ksock(other, KEVENT_SOCKET_RECV, 0);
	EXPECT_EQ(0, kevent_add(kq, uk, 3));
	EXPECT_ENTRY_FAILS_WITH(ENOTSOCK, uk[0], "pipe, read end");
	EXPECT_ENTRY_FAILS_WITH(ENOTSOCK, uk[1], "pipe, write end");
	EXPECT_ENTRY_FAILS_WITH(ENOTSOCK, uk[2], "a kevent queue");
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(p[0]);
	close(p[1]);
	close(other);
	close(kq);
}

TEST_HARNESS_MAIN
