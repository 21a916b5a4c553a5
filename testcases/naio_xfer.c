// SPDX-License-Identifier: GPL-2.0+
/*
 * naio_xfer: bulk TCP transfers between lab hosts with network AIO only.
 *
 *   naio_xfer serve PORT MODE CONNS BYTES
 *   naio_xfer connect ADDR PORT MODE CONNS BYTES
 *
 * CONNS connections each carry a stream of BYTES bytes, all driven by one
 * kevent queue with DEPTH requests of CHUNK bytes outstanding per
 * connection. Byte i of stream c is pattern(c, i), so the receiver checks
 * every byte where it lands and the stream's FNV-1a hash against the one
 * the pattern gives. MODE says who does what:
 *
 *   push      the connecting side sends with aio_send(), the serving side
 *             receives with aio_recv()
 *   pull      the other way round
 *   file      the serving side writes the stream to a file and sends it
 *             with aio_sendfile() (lseek() before each chunk: the call
 *             itself does not move the offset); the other receives
 *   reset     the connecting side sends with aio_send() without end; the
 *             serving side receives one chunk, checks it, then resets the
 *             connection (SO_LINGER 0): every outstanding aio_send() must
 *             complete with ECONNRESET or EPIPE
 *
 * Each side reports one KTAP result per connection, and finally whether
 * every page pinned on the host was unpinned once its queue was closed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "kselftest.h"
#include "kevent_user.h"

#define CHUNK		(1 << 20)
#define DEPTH		4
#define MAX_CONNS	16
#define DEADLINE_MS	180000

enum mode { PUSH, PULL, FILE_MODE, RESET };
enum role { SEND, RECV, SENDFILE };

static unsigned char pattern(unsigned int stream, uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13 ^ i >> 20 ^ stream * 37);
}

#define FNV_INIT	0xcbf29ce484222325ULL

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

struct slot {
	unsigned char *buf;
	uint64_t off;		/* stream offset of the request */
	long id;		/* request id, -1 when free */
};

struct conn {
	int fd, file, stream;
	enum role role;
	uint64_t bytes;		/* the stream's length; 0: without end */
	uint64_t next;		/* offset of the next request */
	uint64_t done;		/* bytes the completions reported */
	uint64_t hash, bad;
	int outstanding, stop, resets;
	char err[128];
	struct slot slot[DEPTH];
};

static struct conn conns[MAX_CONNS];

static void fill(unsigned char *buf, unsigned int stream, uint64_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = pattern(stream, off + i);
}

static uint64_t expected_hash(unsigned int stream, uint64_t bytes)
{
	static unsigned char buf[CHUNK];
	uint64_t h = FNV_INIT, off;

	for (off = 0; off < bytes; off += CHUNK) {
		size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;

		fill(buf, stream, off, n);
		h = fnv(h, buf, n);
	}
	return h;
}

static void fail(struct conn *c, const char *what, int err)
{
	if (!c->err[0])
		snprintf(c->err, sizeof(c->err), "%s: %s", what, strerror(err));
	c->stop = 1;
}

/* Start the next request of @c in slot @s; false when there is none to start. */
static int submit(int kq, struct conn *c, struct slot *s)
{
	size_t n = CHUNK;
	long id;

	if (c->stop || (c->bytes && c->next >= c->bytes))
		return 0;
	if (c->bytes && c->bytes - c->next < n)
		n = c->bytes - c->next;
	s->off = c->next;
	switch (c->role) {
	case SEND:
		fill(s->buf, c->stream, s->off, n);
		id = kevent_aio_send(kq, c->fd, s->buf, n, 0);
		break;
	case RECV:
		id = kevent_aio_recv(kq, c->fd, s->buf, n, 0);
		break;
	default:
		if (lseek(c->file, s->off, SEEK_SET) != (off_t)s->off) {
			fail(c, "lseek", errno);
			return 0;
		}
		id = kevent_aio_sendfile(kq, c->file, c->fd, n, 0);
		break;
	}
	if (id < 0 && !c->bytes &&
	    (errno == ENOTCONN || errno == ECONNRESET || errno == EPIPE)) {
		/* Sending without end: the peer reset the connection. */
		c->resets++;
		c->stop = 1;
		return 0;
	}
	if (id < 0) {
		fail(c, c->role == RECV ? "aio_recv" : c->role == SEND ?
			"aio_send" : "aio_sendfile", errno);
		return 0;
	}
	s->id = id;
	c->next += n;
	c->outstanding++;
	return 1;
}

static struct slot *find_slot(struct conn *c, long id)
{
	int i;

	for (i = 0; i < DEPTH; i++)
		if (c->slot[i].id == id)
			return &c->slot[i];
	return NULL;
}

/* A completion of @c's request in @s. */
static void completed(struct conn *c, struct slot *s, const struct ukevent *ev)
{
	uint32_t n = ev->ret_data[0], err = ev->ret_data[1];

	c->outstanding--;
	s->id = -1;
	if (!(ev->ret_flags & KEVENT_RET_DONE))
		fail(c, "completion without KEVENT_RET_DONE", EPROTO);
	if (!err != !(ev->ret_flags & KEVENT_RET_BROKEN))
		fail(c, "KEVENT_RET_BROKEN disagrees with ret_data[1]", EPROTO);
	if (c->role == RECV) {
		uint32_t i;

		if (s->off != c->done)
			fail(c, "receive completed out of order", EPROTO);
		for (i = 0; i < n; i++)
			if (s->buf[i] != pattern(c->stream, s->off + i))
				c->bad++;
		c->hash = fnv(c->hash, s->buf, n);
	}
	c->done += n;
	if (err == ECONNRESET || err == EPIPE) {
		c->resets++;
		c->stop = 1;
	} else if (err) {
		fail(c, "request", err);
	} else if (c->role == RECV && c->bytes && n < CHUNK &&
		   s->off + n < c->bytes) {
		fail(c, "stream ended early", EPIPE);
	}
}

/* Drive every connection until all requests completed or time is up. */
static void run(int kq, int nconns, int reset_after)
{
	struct ukevent ev[32];
	int i, j, busy = 1;

	for (i = 0; i < nconns; i++)
		for (j = 0; j < DEPTH; j++)
			submit(kq, &conns[i], &conns[i].slot[j]);

	while (busy) {
		long n = kevent_wait(kq, ev, 1, DEADLINE_MS), k;

		if (n > 0)
			n += kevent_wait(kq, ev + 1, 31, 0);
		if (n <= 0) {
			for (i = 0; i < nconns; i++)
				if (conns[i].outstanding)
					fail(&conns[i], "no completion in time",
					     n < 0 ? errno : ETIMEDOUT);
			return;
		}
		for (k = 0; k < n; k++) {
			struct conn *c = NULL;
			struct slot *s;

			for (i = 0; i < nconns; i++)
				if (conns[i].fd == (int)ev[k].id.raw[0])
					c = &conns[i];
			s = c ? find_slot(c, ev[k].id.raw[1]) : NULL;
			if (ev[k].type != KEVENT_NAIO || !s) {
				ksft_print_msg("unexpected event type %u id %u,%u\n",
					       ev[k].type, ev[k].id.raw[0], ev[k].id.raw[1]);
				if (c)
					fail(c, "unknown completion", EPROTO);
				continue;
			}
			if ((uint64_t)(uintptr_t)s->buf != ev[k].ptr &&
			    c->role != SENDFILE)
				fail(c, "completion names another buffer", EPROTO);
			completed(c, s, &ev[k]);
			if (reset_after && c->role == RECV && c->done >= CHUNK) {
				struct linger l = { 1, 0 };

				/*
				 * Close with a reset once the queue is closed,
				 * which cancels the receives still waiting.
				 */
				setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
				c->stop = 2;
				continue;
			}
			submit(kq, c, s);
		}
		busy = 0;
		for (i = 0; i < nconns; i++)
			busy |= conns[i].outstanding > 0 && conns[i].stop != 2;
	}
}

static int setup_conn(struct conn *c, int fd, int stream, enum role role,
		      uint64_t bytes)
{
	int i;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->file = -1;
	c->stream = stream;
	c->role = role;
	c->bytes = bytes;
	c->hash = FNV_INIT;
	if (kevent_set_async(fd, 1))
		return -1;
	for (i = 0; i < DEPTH; i++) {
		c->slot[i].id = -1;
		c->slot[i].buf = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c->slot[i].buf == MAP_FAILED)
			return -1;
	}
	return 0;
}

/* The stream of @c as a file, for aio_sendfile(). */
static int make_file(struct conn *c, int port)
{
	static unsigned char buf[CHUNK];
	char path[64];
	uint64_t off;

	snprintf(path, sizeof(path), "/tmp/naio_xfer.%d.%d", port, c->stream);
	c->file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (c->file < 0)
		return -1;
	unlink(path);
	for (off = 0; off < c->bytes; off += CHUNK) {
		size_t n = c->bytes - off < CHUNK ? c->bytes - off : CHUNK;

		fill(buf, c->stream, off, n);
		if (write(c->file, buf, n) != (ssize_t)n)
			return -1;
	}
	ksft_print_msg("stream %d: file of %llu bytes, FNV-1a %016llx\n", c->stream,
		       (unsigned long long)c->bytes,
		       (unsigned long long)expected_hash(c->stream, c->bytes));
	return 0;
}

static void report(int nconns, enum mode mode)
{
	int i;

	for (i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];
		const char *what = c->role == RECV ? "recv" :
				   c->role == SEND ? "send" : "sendfile";
		int ok;

		if (mode == RESET && c->role == SEND) {
			/* Every request ended, and the reset ended them. */
			ok = !c->err[0] && !c->outstanding && c->resets > 0;
			ksft_print_msg("stream %d: %llu bytes sent before the reset, which %d requests saw%s%s\n",
				       c->stream, (unsigned long long)c->done, c->resets,
				       c->err[0] ? ", " : "", c->err);
		} else if (mode == RESET) {
			ok = !c->err[0] && c->done >= CHUNK && !c->bad;
			ksft_print_msg("stream %d: %llu bytes received, %llu differ, then reset%s%s\n",
				       c->stream, (unsigned long long)c->done,
				       (unsigned long long)c->bad, c->err[0] ? ": " : "", c->err);
		} else if (c->role == RECV) {
			uint64_t want = expected_hash(c->stream, c->bytes);

			ok = !c->err[0] && c->done == c->bytes && !c->bad && c->hash == want;
			ksft_print_msg("stream %d: %llu of %llu bytes, %llu differ, FNV-1a %016llx (want %016llx)%s%s\n",
				       c->stream, (unsigned long long)c->done,
				       (unsigned long long)c->bytes, (unsigned long long)c->bad,
				       (unsigned long long)c->hash, (unsigned long long)want,
				       c->err[0] ? ", " : "", c->err);
		} else {
			ok = !c->err[0] && c->done == c->bytes;
			ksft_print_msg("stream %d: %llu of %llu bytes sent%s%s\n", c->stream,
				       (unsigned long long)c->done, (unsigned long long)c->bytes,
				       c->err[0] ? ", " : "", c->err);
		}
		ksft_test_result(ok, "%s_%d\n", what, i);
	}
}

static enum mode parse_mode(const char *s)
{
	if (!strcmp(s, "push"))
		return PUSH;
	if (!strcmp(s, "pull"))
		return PULL;
	if (!strcmp(s, "file"))
		return FILE_MODE;
	if (!strcmp(s, "reset"))
		return RESET;
	fprintf(stderr, "unknown mode %s: push, pull, file or reset\n", s);
	exit(2);
}

/* What the serving (or connecting) side does in @mode. */
static enum role role_of(enum mode mode, int serving)
{
	switch (mode) {
	case PUSH:
	case RESET:
		return serving ? RECV : SEND;
	case PULL:
		return serving ? SEND : RECV;
	default:
		return serving ? SENDFILE : RECV;
	}
}

static void finish(int kq, int nconns, enum mode mode)
{
	long long pinned;
	int i;

	/* Closing the queue cancels what is left (the reset side's receives). */
	close(kq);
	for (i = 0; i < nconns; i++) {
		close(conns[i].fd);
		if (conns[i].file >= 0)
			close(conns[i].file);
	}
	report(nconns, mode);
	pinned = kevent_wait_unpinned(30000);
	if (pinned)
		ksft_print_msg("%lld pages still pinned 30 s after the queue was closed\n",
			       pinned);
	ksft_test_result(!pinned, "no_pages_pinned\n");
	ksft_finished();
}

static void serve(int port, enum mode mode, int nconns, uint64_t bytes)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int ls = socket(AF_INET, SOCK_STREAM, 0), kq = kevent_init(), one = 1, i;

	ksft_print_header();
	ksft_set_plan(nconns + 1);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (kq < 0 || ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 64))
		ksft_exit_fail_msg("setting up port %d: %s\n", port, strerror(errno));
	for (i = 0; i < nconns; i++) {
		int s = accept(ls, NULL, NULL);

		if (s < 0 || setup_conn(&conns[i], s, i, role_of(mode, 1), bytes))
			ksft_exit_fail_msg("connection %d: %s\n", i, strerror(errno));
		if (mode == FILE_MODE && make_file(&conns[i], port))
			ksft_exit_fail_msg("file for stream %d: %s\n", i, strerror(errno));
	}
	close(ls);
	run(kq, nconns, mode == RESET);
	finish(kq, nconns, mode);
}

static void connect_to(const char *addr, int port, enum mode mode, int nconns,
		       uint64_t bytes)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int kq = kevent_init(), i, tries;

	ksft_print_header();
	ksft_set_plan(nconns + 1);
	if (kq < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		ksft_exit_fail_msg("bad address %s or no queue: %s\n", addr, strerror(errno));
	for (i = 0; i < nconns; i++) {
		int s = -1;

		/* The server may still be starting: retry for a while. */
		for (tries = 0; tries < 600; tries++) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(s, (void *)&sa, sizeof(sa)))
				break;
			close(s);
			s = -1;
			usleep(50 * 1000);
		}
		if (s < 0 || setup_conn(&conns[i], s, i, role_of(mode, 0),
					mode == RESET ? 0 : bytes))
			ksft_exit_fail_msg("connecting to %s:%d: %s\n", addr, port,
					   strerror(errno));
	}
	run(kq, nconns, 0);
	finish(kq, nconns, mode);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[1], "serve") && atoi(argv[4]) <= MAX_CONNS)
		serve(atoi(argv[2]), parse_mode(argv[3]), atoi(argv[4]),
		      strtoull(argv[5], NULL, 0));
	if (argc == 7 && !strcmp(argv[1], "connect") && atoi(argv[5]) <= MAX_CONNS)
		connect_to(argv[2], atoi(argv[3]), parse_mode(argv[4]), atoi(argv[5]),
			   strtoull(argv[6], NULL, 0));
	fprintf(stderr, "usage: %s serve PORT MODE CONNS BYTES | connect ADDR PORT MODE CONNS BYTES\n"
		"  MODE: push, pull, file or reset; CONNS at most %d\n", argv[0], MAX_CONNS);
	return 2;
}
