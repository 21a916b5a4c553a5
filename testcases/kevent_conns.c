// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_conns: many concurrent TCP connections across hosts, both ends
 * driven by one kevent queue each, every event and every byte accounted for.
 *
 *   kevent_conns server PORT CONNS BYTES
 *   kevent_conns client ADDR PORT CONNS BYTES
 *
 * The client opens CONNS non-blocking connections and waits until all of
 * them are connected (a KEVENT_SOCKET_SEND event each) before it sends a
 * byte, so the server holds all CONNS at once. Then each connection sends
 * its number (4 bytes) and BYTES bytes of a pattern of its own. The server
 * checks every byte against the pattern of the connection it names and
 * echoes it; the client checks every echoed byte.
 *
 * Who closes first matters here: a lab host powers off once its programs
 * ended, and data or a FIN still on its way would be lost with it. So the
 * client shuts its side down only when it has the whole echo, the server
 * closes only when it saw that (and lingers until its FIN is acknowledged),
 * and the client is done when it sees the server's end.
 *
 * Both sides count the events they are given: each must be for a
 * descriptor they watch, with a bit they asked for, and not broken.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kselftest.h"
#include "kevent_user.h"

#define DEADLINE_MS	180000
#define BATCH		64
#define CHUNK		65536

#define ksock(fd, event) kevent_fd(fd, KEVENT_SOCKET, event, 0)

static unsigned char pattern(uint32_t conn, uint64_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) + conn * 7919 + 11);
}

/* One connection, at either end, indexed by its descriptor. */
struct conn {
	int open;
	uint32_t id;		/* its number; the server learns it from the header */
	unsigned int hdr;	/* header bytes sent or received */
	unsigned char hdr_buf[4];
	int shut;		/* client: its side is shut down (it has the whole echo) */
	uint64_t in;		/* payload bytes received (and checked) */
	uint64_t out;		/* payload bytes sent */
	uint64_t bad;		/* received bytes that differ from the pattern */
	int eof;
	unsigned char *pend;	/* server: echo data the socket did not take yet */
	size_t plen;
	unsigned int mask;	/* the kevent's current event mask */
	unsigned long changed;	/* the batch in which @mask last changed */
};

static struct conn *conns;
static int max_fd;
static unsigned long ev_total, ev_unknown, ev_stale, ev_broken, ev_unasked;
/*
 * The number of the batch of events being handled. A batch is two WAITs
 * (one that blocks for an event, one that collects the rest), so a
 * level-triggered kevent that is still ready can be in it twice, the
 * second time with the bits of a mask the first one changed.
 */
static unsigned long batch;

static void fail(const char *what)
{
	ksft_exit_fail_msg("%s: %s\n", what, strerror(errno));
}

/* Room for @n connections and a few more descriptors. */
static void make_room(int n)
{
	struct rlimit rl = { n + 64, n + 64 };

	if (setrlimit(RLIMIT_NOFILE, &rl))
		fail("setrlimit(RLIMIT_NOFILE)");
	max_fd = n + 64;
	conns = calloc(max_fd, sizeof(*conns));
	if (!conns)
		fail("calloc");
}

static void watch(int kq, int fd, unsigned int mask)
{
	struct ukevent uk = ksock(fd, mask);
	long r;

	if (conns[fd].mask == mask)
		return;
	if (!conns[fd].mask)
		r = kevent_add(kq, &uk, 1);
	else if (!mask)
		r = kevent_remove(kq, &uk, 1);
	else
		r = kevent_modify(kq, &uk, 1);
	if (r != 1)
		ksft_exit_fail_msg("kevent_ctl on fd %d: %s\n", fd,
				   strerror(r < 0 ? errno : (int)uk.ret_data[0]));
	conns[fd].mask = mask;
	conns[fd].changed = batch;
}

/*
 * Check one delivered event; returns its bits, or 0 if it must be skipped:
 * a connection closed, or whose mask changed, earlier in the same batch
 * (counted as stale).
 */
static unsigned int account(const struct ukevent *ev, int listener)
{
	int fd = ev->id.raw[0];

	ev_total++;
	if (ev->type != KEVENT_SOCKET || fd < 0 || fd >= max_fd) {
		ev_unknown++;
		return 0;
	}
	if (ev->ret_flags & KEVENT_RET_BROKEN) {
		ev_broken++;
		return 0;
	}
	if (fd == listener)
		return ev->ret_data[0];
	if (!conns[fd].open) {
		ev_stale++;
		return 0;
	}
	if (!(ev->ret_data[0] & conns[fd].mask)) {
		if (conns[fd].changed != batch) {
			ev_unasked++;
			return ev->ret_data[0];
		}
		ev_stale++;
		return 0;
	}
	return ev->ret_data[0];
}

static long wait_events(int kq, struct ukevent *ev)
{
	long n;

	batch++;
	n = kevent_wait(kq, ev, 1, KEVENT_WAIT_FOREVER);

	if (n == 1)
		n += kevent_wait(kq, ev + 1, BATCH - 1, 0);
	if (n < 1)
		fail("WAIT");
	return n;
}

static void check_bytes(struct conn *c, const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pattern(c->id, c->in + i))
			c->bad++;
	c->in += n;
}

static int is_deadline(const struct ukevent *ev)
{
	return ev->type == KEVENT_TIMER;
}

/* The line of /proc/self/fdinfo of @kq that shows the kevent of @fd. */
static void fdinfo_line(int kq, int fd, char *out, size_t size)
{
	char path[64], line[256], want[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", kq);
	snprintf(want, sizeof(want), "kevent: type:%u id:%d,0 ", KEVENT_SOCKET, fd);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want))) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, size, "%s", line);
			break;
		}
	fclose(f);
}

/*
 * The deadline passed: say where each connection still open stands, what
 * poll() says of its socket and what the queue says of its kevent.
 */
static void report_open(int kq, int listener)
{
	int fd, shown = 0;

	for (fd = 0; fd < max_fd && shown < 20; fd++) {
		struct conn *c = &conns[fd];
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
		char line[256] = "";

		if (!c->open || fd == listener)
			continue;
		poll(&p, 1, 0);
		fdinfo_line(kq, fd, line, sizeof(line));
		ksft_print_msg("open: fd %d conn %u in %llu out %llu hdr %u shut %d eof %d "
			       "mask %#x poll %#x kevent: %s\n", fd, c->id,
			       (unsigned long long)c->in, (unsigned long long)c->out,
			       c->hdr, c->shut, c->eof, c->mask, p.revents,
			       line[0] ? line : "none");
		shown++;
	}
}

static void print_events(void)
{
	ksft_print_msg("events: %lu delivered, %lu unknown, %lu broken, %lu with bits not "
		       "asked for, %lu for connections closed or changed in the same batch\n",
		       ev_total, ev_unknown, ev_broken, ev_unasked, ev_stale);
}

/* ---- server ---------------------------------------------------------- */

/*
 * Read what is there: the header names the connection, then every payload
 * byte is checked and kept for the echo. Returns -1 on a socket error.
 */
static int server_read(int fd, int nconns, unsigned char *seen)
{
	struct conn *c = &conns[fd];
	static unsigned char buf[CHUNK];

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf)), off = 0;

		if (r == 0)
			c->eof = 1;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return r ? -1 : 0;
		if (c->hdr < 4) {
			uint32_t id;

			while (c->hdr < 4 && off < r)
				c->hdr_buf[c->hdr++] = buf[off++];
			if (c->hdr < 4)
				continue;
			memcpy(&id, c->hdr_buf, 4);
			c->id = ntohl(id);
			/* No such connection, or one named twice. */
			if (!c->id || c->id > (uint32_t)nconns || seen[c->id - 1]++)
				c->bad++;
		}
		if (off < r) {
			check_bytes(c, buf + off, r - off);
			c->pend = realloc(c->pend, c->plen + r - off);
			if (!c->pend)
				fail("realloc");
			memcpy(c->pend + c->plen, buf + off, r - off);
			c->plen += r - off;
		}
	}
}

static int server_flush(int fd)
{
	struct conn *c = &conns[fd];

	while (c->plen) {
		ssize_t w = write(fd, c->pend, c->plen);

		if (w < 0)
			return errno == EAGAIN ? 0 : -1;
		memmove(c->pend, c->pend + w, c->plen - w);
		c->plen -= w;
		c->out += w;
	}
	return 0;
}

/*
 * Close, and wait (up to 10 s) until the peer acknowledged everything,
 * FIN included, so that powering the host off loses nothing.
 */
static void linger_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 10 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static void server(int port, int nconns, uint64_t bytes)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ukevent deadline = kevent_timer(DEADLINE_MS, 0, KEVENT_REQ_ONESHOT);
	struct ukevent ev[BATCH];
	int one = 1, kq, ls, late = 0, open = 0, peak = 0, accepted = 0;
	unsigned long done_ok = 0, done_bad = 0;
	uint64_t total_in = 0, total_out = 0;
	unsigned char *seen;

	ksft_print_header();
	ksft_set_plan(5);
	make_room(nconns);
	seen = calloc(nconns, sizeof(*seen));
	kq = kevent_init();
	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!seen || kq < 0 || ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) ||
	    listen(ls, nconns + 16))
		fail("setup");
	conns[ls].mask = 0;
	watch(kq, ls, KEVENT_SOCKET_ACCEPT);
	if (kevent_add(kq, &deadline, 1) != 1)
		fail("ADD deadline");

	while (done_ok + done_bad < (unsigned long)nconns && !late) {
		long n = wait_events(kq, ev), i;

		for (i = 0; i < n; i++) {
			int fd = ev[i].id.raw[0];
			unsigned int bits;

			if (is_deadline(&ev[i])) {
				late = 1;
				continue;
			}
			bits = account(&ev[i], ls);
			if (!bits)
				continue;
			if (fd == ls) {
				int c;

				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					if (c >= max_fd)
						ksft_exit_fail_msg("fd %d beyond %d\n", c, max_fd);
					conns[c] = (struct conn){ .open = 1 };
					watch(kq, c, KEVENT_SOCKET_RECV);
					accepted++;
					if (++open > peak)
						peak = open;
				}
				continue;
			}
			if (((bits & KEVENT_SOCKET_RECV) && server_read(fd, nconns, seen)) ||
			    server_flush(fd)) {
				done_bad++;
			} else if (!(conns[fd].eof && !conns[fd].plen)) {
				watch(kq, fd, (conns[fd].plen ? KEVENT_SOCKET_SEND : 0) |
					      (conns[fd].eof ? 0 : KEVENT_SOCKET_RECV));
				continue;
			} else if (conns[fd].in == bytes && !conns[fd].bad && conns[fd].hdr == 4) {
				done_ok++;
			} else {
				done_bad++;
			}
			total_in += conns[fd].in;
			total_out += conns[fd].out;
			watch(kq, fd, 0);
			free(conns[fd].pend);
			conns[fd] = (struct conn){ 0 };
			linger_close(fd);
			open--;
		}
	}
	if (late)
		report_open(kq, ls);
	ksft_print_msg("%d accepted, at most %d open at once; %lu served, %lu failed\n",
		       accepted, peak, done_ok, done_bad);
	ksft_print_msg("%llu bytes in, %llu echoed, %llu expected each way\n",
		       (unsigned long long)total_in, (unsigned long long)total_out,
		       (unsigned long long)bytes * nconns);
	print_events();
	ksft_test_result(!late, "no_deadline_passed\n");
	ksft_test_result(accepted == nconns && done_ok == (unsigned long)nconns,
			 "every_connection_served\n");
	ksft_test_result(peak == nconns, "all_connections_open_at_once\n");
	ksft_test_result(total_in == bytes * nconns && total_out == total_in,
			 "every_byte_checked_and_echoed\n");
	ksft_test_result(ev_total && !ev_unknown && !ev_broken && !ev_unasked,
			 "every_event_accounted\n");
	ksft_finished();
}

/* ---- client ---------------------------------------------------------- */

/*
 * Send what is left of the header and as much payload as the socket takes.
 * Returns -1 on a socket error.
 */
static int client_send(int fd, uint64_t bytes)
{
	struct conn *c = &conns[fd];
	unsigned char buf[CHUNK];

	while (c->hdr < 4 || c->out < bytes) {
		uint32_t id = htonl(c->id);
		size_t h = 4 - c->hdr, n;
		ssize_t w;

		memcpy(buf, (unsigned char *)&id + c->hdr, h);
		for (n = h; n < sizeof(buf) && c->out + (n - h) < bytes; n++)
			buf[n] = pattern(c->id, c->out + (n - h));
		w = write(fd, buf, n);
		if (w < 0)
			return errno == EAGAIN ? 0 : -1;
		if ((size_t)w < h) {
			c->hdr += w;
		} else {
			c->hdr = 4;
			c->out += w - h;
		}
	}
	return 0;
}

/*
 * Read and check the echo; once it is whole, say so with a shutdown.
 * Returns -1 on a socket error.
 */
static int client_read(int fd, uint64_t bytes)
{
	struct conn *c = &conns[fd];
	static unsigned char buf[CHUNK];

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r == 0)
			c->eof = 1;
		if (r < 0 && errno != EAGAIN)
			return -1;
		if (r > 0)
			check_bytes(c, buf, r);
		if (c->in >= bytes && !c->shut) {
			c->shut = 1;
			if (shutdown(fd, SHUT_WR))
				return -1;
		}
		if (r <= 0)
			return 0;
	}
}

/* All connected: now every connection talks. */
static void start_talking(int kq, const int *fds, int nconns, int *sending)
{
	int i;

	for (i = 0; i < nconns; i++)
		watch(kq, fds[i], KEVENT_SOCKET_SEND | KEVENT_SOCKET_RECV);
	*sending = 1;
}

static void client(const char *addr, int port, int nconns, uint64_t bytes)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ukevent deadline = kevent_timer(DEADLINE_MS, 0, KEVENT_REQ_ONESHOT);
	struct ukevent ev[BATCH];
	unsigned long done_ok = 0, done_bad = 0;
	uint64_t total = 0;
	int kq, i, late = 0, connected = 0, refused = 0, sending = 0;
	int *fds;

	ksft_print_header();
	ksft_set_plan(5);
	make_room(nconns);
	fds = calloc(nconns, sizeof(*fds));
	kq = kevent_init();
	if (!fds || kq < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		fail("setup");
	if (kevent_add(kq, &deadline, 1) != 1)
		fail("ADD deadline");

	/*
	 * The server may not listen yet: the first connection is made with
	 * a blocking connect, retried until it answers.
	 */
	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0)
			fail("socket");
		if (!connect(s, (void *)&sa, sizeof(sa))) {
			fcntl(s, F_SETFL, O_NONBLOCK);
			fds[0] = s;
			conns[s] = (struct conn){ .open = 1, .id = 1 };
			connected = 1;
			break;
		}
		close(s);
		if (++refused > 600)
			ksft_exit_fail_msg("the server did not answer: %s\n", strerror(errno));
		usleep(100 * 1000);
	}
	/* The others all at once: each is writable when connected. */
	for (i = 1; i < nconns; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (s < 0 || s >= max_fd)
			fail("socket");
		if (connect(s, (void *)&sa, sizeof(sa)) && errno != EINPROGRESS)
			fail("connect");
		fds[i] = s;
		conns[s] = (struct conn){ .open = 1, .id = i + 1 };
		watch(kq, s, KEVENT_SOCKET_SEND);
	}
	if (connected == nconns)
		start_talking(kq, fds, nconns, &sending);

	while (done_ok + done_bad < (unsigned long)nconns && !late) {
		long n = wait_events(kq, ev), j;

		for (j = 0; j < n; j++) {
			int fd = ev[j].id.raw[0];
			unsigned int bits;
			struct conn *c;

			if (is_deadline(&ev[j])) {
				late = 1;
				continue;
			}
			bits = account(&ev[j], -1);
			if (!bits)
				continue;
			c = &conns[fd];
			if (!sending) {
				int err = 0;
				socklen_t len = sizeof(err);

				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
				if (err)
					ksft_exit_fail_msg("connection %u: %s\n", c->id,
							   strerror(err));
				connected++;
				if (connected == nconns)
					start_talking(kq, fds, nconns, &sending);
				else
					watch(kq, fd, 0);
				continue;
			}
			if (((bits & KEVENT_SOCKET_SEND) && client_send(fd, bytes)) ||
			    ((bits & KEVENT_SOCKET_RECV) && client_read(fd, bytes))) {
				done_bad++;
			} else if (!c->eof) {
				watch(kq, fd, (c->out < bytes || c->hdr < 4 ?
					       KEVENT_SOCKET_SEND : 0) | KEVENT_SOCKET_RECV);
				continue;
			} else if (c->in == bytes && !c->bad && c->out == bytes && c->shut) {
				done_ok++;
			} else {
				done_bad++;
			}
			total += c->in;
			watch(kq, fd, 0);
			*c = (struct conn){ 0 };
			close(fd);
		}
	}
	if (late)
		report_open(kq, -1);
	ksft_print_msg("%d connected (%d tries refused first), %lu done, %lu failed, %llu bytes back\n",
		       connected, refused, done_ok, done_bad, (unsigned long long)total);
	print_events();
	ksft_test_result(!late, "no_deadline_passed\n");
	ksft_test_result(connected == nconns && sending, "all_connected_before_sending\n");
	ksft_test_result(done_ok == (unsigned long)nconns, "every_connection_done\n");
	ksft_test_result(total == bytes * nconns, "every_byte_echoed_and_checked\n");
	ksft_test_result(ev_total && !ev_unknown && !ev_broken && !ev_unasked,
			 "every_event_accounted\n");
	ksft_finished();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "server"))
		server(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 0));
	if (argc == 6 && !strcmp(argv[1], "client"))
		client(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 0));
	fprintf(stderr, "usage: %s server PORT CONNS BYTES | client ADDR PORT CONNS BYTES\n",
		argv[0]);
	return 2;
}
