// SPDX-License-Identifier: GPL-2.0
/*
 * kevent_httpd: a small HTTP/1.1 server of static files, whose event loop
 * is kevent, epoll or io_uring.
 *
 *   kevent_httpd DOCROOT PORT MODE [-m] [-q] [-t SECONDS]
 *
 * MODE    kevent  kevent at its best: a queue with a ready ring, taken from
 *                 without a call; KEVENT_SOCKET for accepts; per connection
 *                 one receive that stays posted (KEVENT_NAIO_RECV_POSTED), so
 *                 that requests land without a call; the answers found in
 *                 one pass of the ring (aio_send of the header and a small
 *                 body, aio_sendfile of a large body) started with one
 *                 aio_submit() that also waits for the next event
 *         epoll   level-triggered epoll, non-blocking read(), the headers
 *                 and small bodies of the answers found in one read() in
 *                 one sendmsg(), sendfile() of a large body
 *         uring   io_uring: accept, recv, and the answers as the epoll loop
 *                 sends them (one sendmsg, then the body, mmap()ed, with
 *                 a send), one send in flight per connection
 * -m      make the web lab's files (include/web.h) in DOCROOT first
 * -q      exit when a client asks for /.quit, and answer /.stats
 * -t      exit after SECONDS (default 600)
 *
 * Every loop keeps the files it serves open (an open-file cache, as nginx's
 * open_file_cache, which lab web's nginx has too): a file is looked up,
 * opened and its small body read once, then checked again (stat()) at most
 * once a second; a request for it then costs no call for the file. Each loop
 * learns the time from a tick once a second (a KEVENT_TIMER in the ring, a
 * timerfd in the epoll set, an io_uring timeout), not with a call per pass.
 *
 * A body of up to 1 KiB goes out with its header, in one send, in every
 * mode; sockets have TCP_NODELAY, and a header followed by a body is sent
 * with MSG_MORE where the call takes it (epoll, io_uring).
 *
 * It answers GET and HEAD of regular files below DOCROOT (no "..") with
 * 200 and their Content-Length, 404 for anything else, 400 for what it
 * cannot parse, 501 for other methods and 500 when it cannot open a file
 * for want of descriptors or memory (not the client's fault); keeps connections alive (HTTP/1.1,
 * unless "Connection: close"; HTTP/1.0 only with "Connection: keep-alive");
 * and answers pipelined requests in order. With -q, GET /.stats answers
 * "requests=N calls=M": the requests answered and the system calls the
 * loop made so far (each counted where it is made, as the benchmarks count
 * theirs), so that a benchmark can take calls per request. At the end it
 * prints KTAP: the requests it answered, by status, and the calls.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kevent_user.h"
#include "web.h"

#define MAX_FD		4096
#define INBUF		8192
#define MAX_RESP	32	/* pipelined responses queued per connection */

/* One system call, counted (the benchmarks' COUNTED(), include/bench.h). */
static unsigned long calls;
#define CALL(call)	(calls++, (call))

enum mode { KEVENT, EPOLL, URING };

/* A body this small goes out in the header's buffer: one send, one segment. */
#define INLINE_BODY	1024

/* ---- the open-file cache ------------------------------------------------ */

#define CACHE_MAX	1000	/* files kept open, as nginx's open_file_cache max= */
#define CACHE_BUCKETS	256

struct cached {
	struct cached *next;
	char *path;		/* the full path */
	int fd;
	off_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	time_t checked;		/* when it was last found unchanged */
	void *map;		/* uring: the whole file, mapped once */
	bool small;		/* the whole body is in @body */
	char body[INLINE_BODY];
};

static struct cached *cache[CACHE_BUCKETS];
static unsigned int cache_count;
static time_t now_s;		/* the loop's clock, from its one-second tick */

static unsigned int cache_hash(const char *s)
{
	unsigned int h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % CACHE_BUCKETS;
}

/* Lets go of an entry: one cache_get() made for one request alone, or a dropped one. */
static void cache_put(struct cached *e)
{
	if (e->map)
		CALL(munmap(e->map, e->size));
	CALL(close(e->fd));
	free(e->path);
	free(e);
}

static void cache_drop(struct cached **link)
{
	struct cached *e = *link;

	*link = e->next;
	cache_put(e);
	cache_count--;
}

static bool same_file(const struct cached *e, const struct stat *st)
{
	return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/*
 * The regular file at @full, open, from the cache or opened into it: NULL
 * with errno set if there is none (ENOENT: not a regular file). When the
 * cache is full, a file is opened for this request alone: *@own is then
 * true and the caller closes e->fd and frees the entry (cache_put()).
 */
static struct cached *cache_get(const char *full, bool *own)
{
	struct cached **bucket = &cache[cache_hash(full)], **link = bucket, *e;
	struct stat st;
	int fd;

	*own = false;
	for (; (e = *link); link = &e->next) {
		if (strcmp(e->path, full))
			continue;
		if (now_s - e->checked < 1)
			return e;
		/* A second old: is it still the file that is there? */
		if (!CALL(stat(full, &st)) && same_file(e, &st)) {
			e->checked = now_s;
			return e;
		}
		cache_drop(link);
		break;
	}
	fd = CALL(open(full, O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return NULL;
	if (CALL(fstat(fd, &st)))
		goto fail;
	errno = ENOENT;		/* a directory, say: nothing to serve */
	if (!S_ISREG(st.st_mode))
		goto fail;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto fail;
	e->fd = fd;
	e->size = st.st_size;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->mtime = st.st_mtim;
	e->checked = now_s;
	e->small = e->size <= INLINE_BODY &&
		   CALL(pread(fd, e->body, e->size, 0)) == e->size;
	if (cache_count >= CACHE_MAX) {
		*own = true;
		return e;
	}
	e->path = strdup(full);
	if (!e->path) {
		*own = true;
		return e;
	}
	e->next = *bucket;
	*bucket = e;
	cache_count++;
	return e;
fail:
	{
		int err = errno;

		CALL(close(fd));
		errno = err;
		return NULL;
	}
}

/* ---- connections and responses ------------------------------------------ */

struct resp {
	char head[256 + INLINE_BODY];
	int head_len;
	struct cached *file;	/* the body's file, or NULL */
	bool own;		/* @file is this response's alone (cache full) */
	off_t size;		/* of the body */
	long ids[2];		/* kevent: the header's and the body's requests */
	int parts;		/* kevent: requests not completed yet */
	bool started;		/* kevent: its requests were submitted */
	char *joined;		/* kevent: the answers sent with this one's, joined */
};

struct conn {
	int fd;
	char in[INBUF];
	size_t in_len;
	struct resp q[MAX_RESP];
	unsigned int head, tail;	/* q[head % MAX_RESP] is the oldest */
	size_t sent;		/* epoll, uring: of the oldest response */
	bool eof;		/* the connection broke, or (not kevent) the peer ended */
	bool ended;		/* kevent: the peer ended its stream */
	bool closing;		/* close once every response is out */
	bool reading;		/* kevent, uring: a receive is posted */
	bool sending;		/* uring: a send is in flight */
	bool heads;		/* uring: it is heads_msg()'s */
	long recv_id;		/* kevent: the posted receive */
	struct kevent_naio_posted *rx;	/* kevent: its ring, a page */
	uint64_t rx_read;	/* kevent: the number of the next byte to take */
	struct iovec iov[MAX_RESP];	/* epoll, uring: the answers of heads_msg() */
	struct msghdr msg;
	unsigned int unsubmitted;	/* kevent: its requests waiting for aio_submit() */
	bool touched;		/* kevent: had an event in this pass */
	struct conn *next_touched;
	unsigned int events;	/* epoll: what it waits for */
};

static const char *docroot;
static struct conn *conns[MAX_FD];
static bool quit_enabled;
static volatile sig_atomic_t stop;
static unsigned long answered[5];	/* 200, 400, 404, 501, 500 */

static void on_signal(int sig)
{
	stop = 1;
}

static void die(const char *what)
{
	printf("not ok 1 %s: %s\n", what, strerror(errno));
	exit(1);
}

static unsigned int queued(struct conn *c)
{
	return c->tail - c->head;
}

static struct resp *oldest(struct conn *c)
{
	return &c->q[c->head % MAX_RESP];
}

static unsigned long requests_answered(void)
{
	return answered[0] + answered[1] + answered[2] + answered[3] + answered[4];
}

/* Builds the response to one request line and its headers (NUL-ended). */
static void respond(struct conn *c, char *req)
{
	struct resp *r = &c->q[c->tail++ % MAX_RESP];
	char method[8], path[1024], version[16], full[1200], stats[64];
	const char *status = "200 OK", *body = "";
	bool head_only, keep, bad;
	struct cached *e;
	char *line;

	r->file = NULL;
	r->own = false;
	r->size = 0;
	line = strstr(req, "\r\n");
	keep = true;
	if (line)
		*line = 0;
	if (sscanf(req, "%7s %1023s %15s", method, path, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7)) {
		status = "400 Bad Request";
		body = "bad request\n";
		keep = false;
		answered[1]++;
		goto out;
	}
	/* Connection: keep-alive is HTTP/1.1's default, close HTTP/1.0's. */
	keep = strcmp(version, "HTTP/1.0") != 0;
	for (line = line ? line + 2 : NULL; line && *line; ) {
		char *end = strstr(line, "\r\n");

		if (end)
			*end = 0;
		if (!strncasecmp(line, "Connection:", 11)) {
			const char *v = line + 11 + strspn(line + 11, " \t");

			if (!strncasecmp(v, "close", 5))
				keep = false;
			else if (!strncasecmp(v, "keep-alive", 10))
				keep = true;
		}
		line = end ? end + 2 : NULL;
	}
	head_only = !strcmp(method, "HEAD");
	if (!head_only && strcmp(method, "GET")) {
		status = "501 Not Implemented";
		body = "not implemented\n";
		answered[3]++;
		goto out;
	}
	if (quit_enabled && !strcmp(path, WEB_QUIT)) {
		stop = 1;
		body = "bye\n";
		answered[0]++;
		goto out;
	}
	if (quit_enabled && !strcmp(path, WEB_STATS)) {
		answered[0]++;
		snprintf(stats, sizeof(stats), "requests=%lu calls=%lu\n",
			 requests_answered(), calls);
		body = stats;
		goto out;
	}
	snprintf(full, sizeof(full), "%s%s", docroot, path);
	bad = path[0] != '/' || strstr(path, "..");
	e = bad ? NULL : cache_get(full, &r->own);
	if (!e) {
		bool missing = bad || errno == ENOENT || errno == ENOTDIR ||
			       errno == EACCES || errno == ENAMETOOLONG;

		/* Out of descriptors or memory is ours, not the client's: 500. */
		status = missing ? "404 Not Found" : "500 Internal Server Error";
		body = missing ? "not found\n" : "server error\n";
		answered[missing ? 2 : 4]++;
		goto out;
	}
	answered[0]++;
	r->head_len = snprintf(r->head, sizeof(r->head),
			       "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n"
			       "Content-Type: application/octet-stream\r\n%s\r\n",
			       (long long)e->size, keep ? "" : "Connection: close\r\n");
	if (!head_only && e->small) {
		memcpy(r->head + r->head_len, e->body, e->size);
		r->head_len += e->size;
	} else if (!head_only && e->size) {
		r->file = e;
		r->size = e->size;
	}
	if (r->own && !r->file) {
		cache_put(e);
		r->own = false;
	}
	if (!keep)
		c->closing = true;
	return;
out:
	r->head_len = snprintf(r->head, sizeof(r->head),
			       "HTTP/1.1 %s\r\nContent-Length: %zu\r\nContent-Type: text/plain\r\n%s\r\n%s",
			       status, strlen(body), keep ? "" : "Connection: close\r\n", body);
	if (!keep)
		c->closing = true;
}

/* Answers every complete request in the input, in order; 0, or -1 if the
 * input is full of something that is not one. */
static int parse(struct conn *c)
{
	char *end;

	while (!c->closing && queued(c) < MAX_RESP &&
	       (end = memmem(c->in, c->in_len, "\r\n\r\n", 4))) {
		size_t len = end + 4 - c->in;

		end[2] = 0;
		respond(c, c->in);
		memmove(c->in, c->in + len, c->in_len - len);
		c->in_len -= len;
	}
	if (c->in_len == INBUF && queued(c) < MAX_RESP && !c->closing) {
		respond(c, "");		/* 400: a request longer than the buffer */
		return -1;
	}
	return 0;
}

static void end_oldest(struct conn *c)
{
	struct resp *r = oldest(c);

	if (r->own)
		cache_put(r->file);
	free(r->joined);
	r->joined = NULL;
	c->head++;
	c->sent = 0;
}

static struct conn *new_conn(int fd)
{
	struct conn *c;

	if (fd >= MAX_FD) {
		CALL(close(fd));
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		die("calloc");
	/* A response's last segment leaves at once, not after the peer's delayed ACK. */
	CALL(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int)));
	c->fd = fd;
	conns[fd] = c;
	return c;
}

static void free_conn(struct conn *c)
{
	while (queued(c))
		end_oldest(c);
	conns[c->fd] = NULL;
	CALL(close(c->fd));
	free(c->rx);
	free(c);
}

/* The loop's clock: once a second, and at the start. */
static void tick(void)
{
	now_s = CALL(time(NULL));
}

/* ---- epoll ------------------------------------------------------------ */

static void epoll_want(int ep, struct conn *c, unsigned int events)
{
	struct epoll_event ev = { .events = events, .data.fd = c->fd };

	if (c->events != events && !CALL(epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev)))
		c->events = events;
}

/*
 * epoll and io_uring: the headers (and small bodies) of the queued
 * responses from the oldest on, up to the first that has a file body, as
 * one message in c->iov: pipelined answers leave with one call, as the
 * kevent loop's one aio_submit() sends them. Returns the flags to send
 * it with.
 */
static int heads_msg(struct conn *c)
{
	size_t skip = c->sent;
	unsigned int i = c->head;
	struct resp *r;

	c->msg = (struct msghdr){ .msg_iov = c->iov };
	do {
		r = &c->q[i++ % MAX_RESP];
		c->iov[c->msg.msg_iovlen].iov_base = r->head + skip;
		c->iov[c->msg.msg_iovlen++].iov_len = r->head_len - skip;
		skip = 0;
	} while (!r->size && i != c->tail);
	/* A body follows: let TCP put it in the same segments. */
	return MSG_NOSIGNAL | (r->size ? MSG_MORE : 0);
}

/* @n bytes of heads_msg()'s message went: the answers that went whole are done. */
static void heads_sent(struct conn *c, size_t n)
{
	while (n) {
		struct resp *r = oldest(c);

		if (n < r->head_len - c->sent || r->size) {
			c->sent += n;
			return;
		}
		n -= r->head_len - c->sent;
		end_oldest(c);
	}
}

static ssize_t epoll_send_heads(struct conn *c)
{
	ssize_t n = CALL(sendmsg(c->fd, &c->msg, heads_msg(c)));

	if (n > 0)
		heads_sent(c, n);
	return n;
}

/* Writes what it can; false once the connection is done and freed. */
static bool epoll_flush(int ep, struct conn *c)
{
	/* Requests waiting behind a full queue get their turn as it drains. */
	while (parse(c), queued(c)) {
		struct resp *r = oldest(c);
		ssize_t n;

		if (c->sent < (size_t)r->head_len) {
			n = epoll_send_heads(c);
			if (n > 0)
				continue;
		} else if (c->sent < r->head_len + (size_t)r->size) {
			off_t off = c->sent - r->head_len;

			/* With an offset of its own: the file is shared. */
			n = CALL(sendfile(c->fd, r->file->fd, &off, r->size - off));
			if (n > 0)
				c->sent += n;
		} else {
			end_oldest(c);
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			epoll_want(ep, c, EPOLLOUT);
			return true;
		}
		if (n <= 0) {
			free_conn(c);
			return false;
		}
	}
	if (c->closing || c->eof) {
		free_conn(c);
		return false;
	}
	epoll_want(ep, c, EPOLLIN);
	return true;
}

static void run_epoll(int ls, time_t deadline)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = ls }, evs[64];
	struct itimerspec second = { .it_interval.tv_sec = 1, .it_value.tv_sec = 1 };
	int ep = epoll_create1(EPOLL_CLOEXEC), tfd, i, n;

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep < 0 || tfd < 0 || timerfd_settime(tfd, 0, &second, NULL) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev))
		die("epoll");
	ev.data.fd = tfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev))
		die("epoll");
	while (!stop && now_s < deadline) {
		n = CALL(epoll_wait(ep, evs, 64, -1));
		for (i = 0; i < n; i++) {
			struct conn *c;
			int fd = evs[i].data.fd;

			if (fd == tfd) {
				uint64_t expirations;

				if (CALL(read(tfd, &expirations, sizeof(expirations))) > 0)
					tick();
				continue;
			}
			if (fd == ls) {
				while ((fd = CALL(accept4(ls, NULL, NULL,
							  SOCK_NONBLOCK | SOCK_CLOEXEC))) >= 0) {
					c = new_conn(fd);
					ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = fd };
					if (c && !CALL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)))
						c->events = EPOLLIN;
				}
				continue;
			}
			c = conns[fd];
			if (!c)
				continue;
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR) && c->events & EPOLLIN) {
				ssize_t got = CALL(read(fd, c->in + c->in_len, INBUF - c->in_len));

				if (got > 0)
					c->in_len += got;
				else if (got == 0 || errno != EAGAIN)
					c->eof = true;
			}
			epoll_flush(ep, c);
		}
	}
	close(tfd);
	close(ep);
}

/* ---- kevent ----------------------------------------------------------- */

#define RING_ENTRIES	16384	/* room for every connection's events of a pass */
#define POSTED_SIZE	4096	/* a connection's posted receive: one page */
#define POSTED_DATA	(POSTED_SIZE - sizeof(struct kevent_naio_posted))
#define TICK_TAG	1

static int kq;
static struct kevent_ring *ring;
/* The requests of one pass, started with the wait that ends it. */
static struct kevent_naio_sub subs[KEVENT_CTL_MAX_NUM];
static struct { struct conn *c; struct resp *r; int part; } sub_of[KEVENT_CTL_MAX_NUM];
static unsigned int nsubs;
static unsigned long sends_in_flight;
static struct conn *touched;	/* connections to look at after the pass */

/* Looks at @c again once the events of the pass are taken. */
static void kevent_touch(struct conn *c)
{
	if (!c->touched) {
		c->touched = true;
		c->next_touched = touched;
		touched = c;
	}
}

/* Starts the requests of the pass (and, with @wait, waits for an event). */
static void kevent_submit(bool wait)
{
	long n = CALL(wait ? kevent_aio_submit_wait(kq, subs, nsubs)
			   : kevent_aio_submit(kq, subs, nsubs));

	if (n < 0 && errno != EINTR && nsubs)
		die("aio_submit");
	for (unsigned int i = 0; i < nsubs; i++) {
		struct conn *c = sub_of[i].c;
		struct resp *r = sub_of[i].r;

		c->unsubmitted--;
		if (r)
			r->started = true;
		if (subs[i].result < 0) {
			/* Not started (its socket broke, or memory): the connection ends. */
			c->eof = true;
			kevent_touch(c);
		} else if (!r) {
			c->recv_id = subs[i].result;
			c->reading = true;
		} else {
			r->ids[sub_of[i].part] = subs[i].result;
			r->parts++;
			sends_in_flight++;
		}
		/* One that ended meanwhile is ended now that nothing waits to start. */
		if (c->eof)
			kevent_touch(c);
	}
	nsubs = 0;
}

static void kevent_queue_sub(struct conn *c, struct resp *r, int part,
			     struct kevent_naio_sub sub)
{
	if (nsubs == KEVENT_CTL_MAX_NUM)
		kevent_submit(false);
	sub.result = -EAGAIN;
	subs[nsubs] = sub;
	sub_of[nsubs].c = c;
	sub_of[nsubs].r = r;
	sub_of[nsubs].part = part;
	nsubs++;
	c->unsubmitted++;
}

/* Posts the connection's receive, which stays posted until the stream ends. */
static void kevent_post_recv(struct conn *c)
{
	c->rx = aligned_alloc(POSTED_SIZE, POSTED_SIZE);
	if (!c->rx) {
		c->eof = true;
		return;
	}
	memset(c->rx, 0, sizeof(*c->rx));
	kevent_queue_sub(c, NULL, 0, (struct kevent_naio_sub){
		.op = KEVENT_NAIO_OP_RECV, .sock = c->fd, .fd = -1,
		.flags = KEVENT_NAIO_RECV_POSTED,
		.buf = (uintptr_t)c->rx, .size = POSTED_SIZE,
	});
}

/* Moves what the posted receive holds into the input, as far as it goes. */
static void kevent_take_input(struct conn *c)
{
	const unsigned char *data = (const unsigned char *)(c->rx + 1);
	uint32_t head, n, off, first;

	if (!c->rx)
		return;
	head = __atomic_load_n(&c->rx->head, __ATOMIC_ACQUIRE);
	n = head - c->rx->tail;
	if (n > INBUF - c->in_len)
		n = INBUF - c->in_len;
	if (!n)
		return;
	/* The ring's size does not divide 2^32: byte i is at i % POSTED_DATA. */
	off = c->rx_read % POSTED_DATA;
	first = POSTED_DATA - off < n ? POSTED_DATA - off : n;
	memcpy(c->in + c->in_len, data + off, first);
	memcpy(c->in + c->in_len + first, data, n - first);
	c->in_len += n;
	c->rx_read += n;
	__atomic_store_n(&c->rx->tail, c->rx->tail + n, __ATOMIC_RELEASE);
}

/*
 * The answers from @from up to @to (excluded), with no file body between
 * them: one aio_send() of all of them, as the epoll loop's one sendmsg().
 * Pipelined answers are joined into one buffer, which the last of them
 * keeps until its send completed; a lone answer is sent from its own.
 * False if that buffer could not be had.
 */
static bool kevent_send_heads(struct conn *c, unsigned int from, unsigned int to)
{
	struct resp *last = &c->q[(to - 1) % MAX_RESP];
	const char *buf = last->head;
	size_t len = last->head_len;

	if (to - from > 1) {
		len = 0;
		for (unsigned int i = from; i != to; i++)
			len += c->q[i % MAX_RESP].head_len;
		last->joined = malloc(len);
		if (!last->joined)
			return false;
		len = 0;
		for (unsigned int i = from; i != to; i++) {
			struct resp *r = &c->q[i % MAX_RESP];

			memcpy(last->joined + len, r->head, r->head_len);
			len += r->head_len;
			/* Copied: the others are done as far as this loop is concerned. */
			r->started = r != last;
		}
		buf = last->joined;
	}
	kevent_queue_sub(c, last, 0, (struct kevent_naio_sub){
		.op = KEVENT_NAIO_OP_SEND, .sock = c->fd, .fd = -1,
		.buf = (uintptr_t)buf, .size = len,
	});
	return true;
}

/* Queues the sends of the responses parse() made since @from. */
static void kevent_send(struct conn *c, unsigned int from)
{
	for (unsigned int i = from; i != c->tail; i++) {
		struct resp *r = &c->q[i % MAX_RESP];

		r->parts = 0;
		r->started = false;
		r->joined = NULL;
		r->ids[0] = r->ids[1] = -1;
	}
	while (from != c->tail) {
		unsigned int to = from;
		struct resp *r;

		/* Up to and with the first that has a file body. */
		do
			r = &c->q[to++ % MAX_RESP];
		while (!r->file && to != c->tail);
		if (!kevent_send_heads(c, from, to)) {
			c->eof = true;
			return;
		}
		from = to;
		if (!r->file)
			continue;
		/*
		 * From the file's offset, which aio_sendfile() does not move:
		 * a cached descriptor stays at 0 (pread() and the epoll loop's
		 * sendfile() with an offset of its own leave it there too).
		 */
		kevent_queue_sub(c, r, 1, (struct kevent_naio_sub){
			.op = KEVENT_NAIO_OP_SENDFILE, .sock = c->fd,
			.fd = r->file->fd, .size = r->size,
		});
	}
}

/* Frees what is done; false once the whole connection is. */
static bool kevent_settle(struct conn *c)
{
	if (!(c->eof || ((c->closing || c->ended) && !queued(c))))
		return true;
	if (c->reading) {
		struct ukevent uk = kevent_fd(c->fd, KEVENT_NAIO, KEVENT_SOCKET_RECV, 0);

		uk.id.raw[1] = c->recv_id;
		/* Cancelled at once, with no last event. */
		if (CALL(kevent_remove(kq, &uk, 1)) == 1)
			c->reading = false;
	}
	for (unsigned int i = c->head; i != c->tail; i++)
		if (c->q[i % MAX_RESP].parts)
			return true;		/* sends still hold their buffers */
	/* A request waiting for the pass's aio_submit() names it too. */
	if (c->reading || c->unsubmitted)
		return true;
	free_conn(c);
	return false;
}

/* After the pass: answer what can be answered, or end. */
static void kevent_progress(struct conn *c)
{
	unsigned int from;

	c->touched = false;
	for (;;) {
		/* Answers not submitted yet wait for the pass's aio_submit(). */
		while (queued(c) && oldest(c)->parts == 0 && (oldest(c)->started || c->eof))
			end_oldest(c);
		kevent_take_input(c);
		from = c->tail;
		if (c->eof)
			break;
		parse(c);
		if (c->tail == from)
			break;
		kevent_send(c, from);
	}
	kevent_settle(c);
}

/* Every connection that had an event, or a request that did not start. */
static void kevent_progress_touched(void)
{
	while (touched) {
		struct conn *c = touched;

		touched = c->next_touched;
		kevent_progress(c);
	}
}

static void kevent_accept(int ls)
{
	int fd;

	while ((fd = CALL(accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK))) >= 0) {
		struct conn *c = new_conn(fd);

		if (!c)
			continue;
		if (CALL(kevent_set_async(fd, 1)))
			c->eof = true;
		else
			kevent_post_recv(c);
		kevent_touch(c);
	}
}

static void kevent_event(int ls, const struct ukevent *e)
{
	int fd = e->id.raw[0];
	struct conn *c;

	if (e->type == KEVENT_TIMER) {
		tick();
		return;
	}
	if (e->type == KEVENT_SOCKET) {
		kevent_accept(ls);
		return;
	}
	c = fd >= 0 && fd < MAX_FD ? conns[fd] : NULL;
	if (!c || e->type != KEVENT_NAIO)
		return;
	if (e->event == KEVENT_SOCKET_RECV) {
		if (!c->reading || (long)e->id.raw[1] != c->recv_id)
			return;		/* a cancelled receive's, already in the ring */
		if (e->ret_flags & KEVENT_RET_BROKEN) {
			/*
			 * The request is over: the stream ended (ret_data[1] 0),
			 * and what came before the end is answered, as the
			 * other loops do; or it broke, and the connection ends.
			 */
			c->reading = false;
			c->ended = true;
			if (e->ret_data[1])
				c->eof = true;
		}
	} else {
		for (unsigned int j = c->head; j != c->tail; j++) {
			struct resp *r = &c->q[j % MAX_RESP];

			if ((long)e->id.raw[1] == r->ids[0] || (long)e->id.raw[1] == r->ids[1]) {
				r->parts--;
				sends_in_flight--;
				break;
			}
		}
		if (e->ret_data[1])
			c->eof = true;
	}
	kevent_touch(c);
}

static void run_kevent(int ls, time_t deadline)
{
	struct ukevent uk[2] = {
		kevent_fd(ls, KEVENT_SOCKET, KEVENT_SOCKET_ACCEPT, 0),
		kevent_timer(1000, TICK_TAG, 0),
	};
	struct ukevent ev;

	kq = kevent_ring_open(RING_ENTRIES, &ring);
	if (kq < 0 || kevent_add(kq, uk, 2) != 2 ||
	    ((uk[0].ret_flags | uk[1].ret_flags) & KEVENT_RET_BROKEN))
		die("kevent");
	while (!stop && now_s < deadline) {
		unsigned int took = 0;

		while (kevent_ring_take(ring, &ev)) {
			took++;
			kevent_event(ls, &ev);
		}
		kevent_progress_touched();
		/*
		 * The answers of the pass, and the wait for the next event, in
		 * one call; it returns at once if the ring is not empty.
		 */
		if (nsubs || !took)
			kevent_submit(!stop);
		/* Connections whose requests did not start end now. */
		kevent_progress_touched();
	}
	/* The last answers (the one to /.quit among them) leave before the queue closes. */
	for (int i = 0; i < 20 && (nsubs || sends_in_flight); i++) {
		if (nsubs)
			kevent_submit(false);
		if (CALL(kevent_ring_wait(kq, 1, 100)) > 0)
			while (kevent_ring_take(ring, &ev))
				kevent_event(ls, &ev);
		kevent_progress_touched();
	}
	kevent_ring_close(kq, ring);
}

/* ---- io_uring --------------------------------------------------------- */

enum { OP_ACCEPT, OP_RECV, OP_SEND, OP_TICK };

static struct io_uring uring;

/* A free submission entry: when the queue is full, what is in it goes first. */
static struct io_uring_sqe *uring_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&uring);

	while (!sqe) {
		CALL(io_uring_submit(&uring));
		sqe = io_uring_get_sqe(&uring);
	}
	return sqe;
}

static void uring_recv(struct conn *c)
{
	struct io_uring_sqe *sqe;

	if (c->reading || c->eof || c->closing || c->in_len == INBUF || queued(c) == MAX_RESP)
		return;
	sqe = uring_sqe();
	io_uring_prep_recv(sqe, c->fd, c->in + c->in_len, INBUF - c->in_len, 0);
	io_uring_sqe_set_data64(sqe, (uint64_t)c->fd << 8 | OP_RECV);
	c->reading = true;
}

/* One send in flight per connection: responses leave in order. */
static void uring_send(struct conn *c)
{
	struct io_uring_sqe *sqe;
	struct resp *r;

	while (!c->sending && queued(c)) {
		r = oldest(c);
		if (c->sent < (size_t)r->head_len) {
			int flags = heads_msg(c);

			sqe = uring_sqe();
			io_uring_prep_sendmsg(sqe, c->fd, &c->msg, flags);
			c->heads = true;
		} else if (c->sent < r->head_len + (size_t)r->size) {
			/* The cache maps a file once, for every response of it. */
			if (!r->file->map) {
				void *map = CALL(mmap(NULL, r->size, PROT_READ, MAP_SHARED,
						      r->file->fd, 0));

				if (map == MAP_FAILED) {
					c->eof = true;
					return;
				}
				r->file->map = map;
			}
			sqe = uring_sqe();
			io_uring_prep_send(sqe, c->fd, (char *)r->file->map + (c->sent - r->head_len),
					   r->head_len + r->size - c->sent, MSG_NOSIGNAL);
		} else {
			end_oldest(c);
			continue;
		}
		io_uring_sqe_set_data64(sqe, (uint64_t)c->fd << 8 | OP_SEND);
		c->sending = true;
	}
}

static void uring_accept(int ls)
{
	struct io_uring_sqe *sqe = uring_sqe();

	io_uring_prep_accept(sqe, ls, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, (uint64_t)ls << 8 | OP_ACCEPT);
}

static void uring_tick(void)
{
	static struct __kernel_timespec second = { .tv_sec = 1 };
	struct io_uring_sqe *sqe = uring_sqe();

	io_uring_prep_timeout(sqe, &second, 0, 0);
	io_uring_sqe_set_data64(sqe, OP_TICK);
}

static void uring_settle(struct conn *c)
{
	if (c->eof || (c->closing && !queued(c))) {
		if (c->reading || c->sending) {
			struct io_uring_sqe *sqe = uring_sqe();

			/* What is in flight ends with -ECANCELED; then it goes. */
			io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
			io_uring_sqe_set_data64(sqe, (uint64_t)-1);
			c->eof = true;
			return;
		}
		free_conn(c);
	}
}

static void run_uring(int ls, time_t deadline)
{
	struct io_uring_cqe *cqe;

	if (io_uring_queue_init(512, &uring, 0))
		die("io_uring_queue_init");
	uring_accept(ls);
	uring_tick();
	while (!stop && now_s < deadline) {
		CALL(io_uring_submit_and_wait(&uring, 1));
		while (!io_uring_peek_cqe(&uring, &cqe)) {
			uint64_t data = io_uring_cqe_get_data64(cqe);
			int res = cqe->res, fd = data >> 8;
			struct conn *c;

			io_uring_cqe_seen(&uring, cqe);
			if (data == (uint64_t)-1)
				continue;
			if (data == OP_TICK) {
				tick();
				uring_tick();
				continue;
			}
			if ((data & 0xff) == OP_ACCEPT) {
				uring_accept(ls);
				c = res >= 0 ? new_conn(res) : NULL;
				if (c)
					uring_recv(c);
				continue;
			}
			c = conns[fd];
			if (!c)
				continue;
			if (res <= 0)
				c->eof = true;
			if ((data & 0xff) == OP_RECV) {
				c->reading = false;
				c->in_len += res > 0 ? res : 0;
			} else if (c->heads) {
				c->sending = c->heads = false;
				heads_sent(c, res > 0 ? res : 0);
			} else {
				c->sending = false;
				c->sent += res > 0 ? res : 0;
			}
			/* A drained queue makes room for what waits in the input. */
			parse(c);
			uring_recv(c);
			if (!c->eof)
				uring_send(c);
			uring_settle(c);
		}
	}
	io_uring_queue_exit(&uring);
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int ls, one = 1, opt, seconds = 600;
	struct rlimit files;
	enum mode mode;
	bool make = false;

	while ((opt = getopt(argc, argv, "mqt:")) != -1) {
		if (opt == 'm')
			make = true;
		else if (opt == 'q')
			quit_enabled = true;
		else if (opt == 't')
			seconds = atoi(optarg);
		else
			goto usage;
	}
	if (argc - optind != 3)
		goto usage;
	docroot = argv[optind];
	if (!strcmp(argv[optind + 2], "kevent"))
		mode = KEVENT;
	else if (!strcmp(argv[optind + 2], "epoll"))
		mode = EPOLL;
	else if (!strcmp(argv[optind + 2], "uring"))
		mode = URING;
	else
		goto usage;
	/*
	 * A connection and the file it is sent: 1000 connections need more
	 * descriptors than the usual soft limit of 1024 (nginx raises it too,
	 * worker_rlimit_nofile).
	 */
	if (!getrlimit(RLIMIT_NOFILE, &files)) {
		files.rlim_cur = files.rlim_max < MAX_FD ? files.rlim_max : MAX_FD;
		setrlimit(RLIMIT_NOFILE, &files);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..1\n");
	if (make && web_make_files(docroot))
		die(docroot);
	sa.sin_port = htons(atoi(argv[optind + 1]));
	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 1024))
		die("listen");
	printf("# kevent_httpd: %s loop on port %s, files of %s\n", argv[optind + 2],
	       argv[optind + 1], docroot);
	tick();
	if (mode == KEVENT)
		run_kevent(ls, now_s + seconds);
	else if (mode == EPOLL)
		run_epoll(ls, now_s + seconds);
	else
		run_uring(ls, now_s + seconds);
	printf("# answered: %lu 200, %lu 400, %lu 404, %lu 501, %lu 500\n",
	       answered[0], answered[1], answered[2], answered[3], answered[4]);
	printf("# calls: %lu, %.2f per request\n", calls,
	       requests_answered() ? (double)calls / requests_answered() : 0.0);
	printf("%s 1 served_until_%s\n", stop ? "ok" : "not ok",
	       stop ? "asked_to_stop" : "its_deadline");
	return stop ? 0 : 1;
usage:
	fprintf(stderr, "usage: %s DOCROOT PORT kevent|epoll|uring [-m] [-q] [-t SECONDS]\n", argv[0]);
	return 2;
}
