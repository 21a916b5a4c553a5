// SPDX-License-Identifier: GPL-2.0
/*
 * kevent_httpd: a small HTTP/1.1 server of static files, whose event loop
 * is kevent, epoll or io_uring.
 *
 *   kevent_httpd DOCROOT PORT MODE [-m] [-q] [-t SECONDS]
 *
 * MODE    kevent  KEVENT_SOCKET for accepts; per connection one aio_recv()
 *                 (KEVENT_NAIO_RECV_SOME) posted at a time, each response's
 *                 header (and a small body) sent with a plain send() when
 *                 the socket takes it whole and nothing is under way, else
 *                 with aio_send() (zero-copy: it stays put until
 *                 acknowledged), a large body with aio_sendfile(), all
 *                 completions read with WAIT
 *         epoll   level-triggered epoll, non-blocking read(), write() of the
 *                 header and sendfile() of the body
 *         uring   io_uring: accept, recv, and send of the header and of the
 *                 body, mmap()ed, one send in flight per connection
 * -m      make the web lab's files (include/web.h) in DOCROOT first
 * -q      exit when a client asks for /.quit
 * -t      exit after SECONDS (default 600)
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
 * and answers pipelined requests in order. At the end it prints KTAP: the
 * requests it answered, by status.
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
#include <time.h>
#include <unistd.h>

#include "kevent_user.h"
#include "web.h"

#define MAX_FD		4096
#define INBUF		8192
#define MAX_RESP	32	/* pipelined responses queued per connection */

enum mode { KEVENT, EPOLL, URING };

/* A body this small goes out in the header's buffer: one send, one segment. */
#define INLINE_BODY	1024

struct resp {
	char head[256 + INLINE_BODY];
	int head_len;
	int file;		/* the body's file, or -1 */
	off_t size;		/* of the body */
	long ids[2];		/* kevent: the header's and the body's requests */
	int parts;		/* kevent: requests not completed yet */
	void *map;		/* uring: the body, mapped */
};

struct conn {
	int fd;
	char in[INBUF];
	size_t in_len;
	struct resp q[MAX_RESP];
	unsigned int head, tail;	/* q[head % MAX_RESP] is the oldest */
	size_t sent;		/* epoll, uring: of the oldest response */
	bool eof;		/* the peer ended, or the connection broke */
	bool closing;		/* close once every response is out */
	bool reading;		/* kevent, uring: a receive is posted */
	bool sending;		/* uring: a send is in flight */
	long recv_id;		/* kevent: the posted receive */
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

/* Builds the response to one request line and its headers (NUL-ended). */
static void respond(struct conn *c, char *req)
{
	struct resp *r = &c->q[c->tail++ % MAX_RESP];
	char method[8], path[1024], version[16], full[1200];
	const char *status = "200 OK", *body = "";
	bool head_only, keep, bad;
	struct stat st;
	char *line;

	r->file = -1;
	r->size = 0;
	r->map = NULL;
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
	snprintf(full, sizeof(full), "%s%s", docroot, path);
	bad = path[0] != '/' || strstr(path, "..");
	if (bad || (r->file = open(full, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(r->file, &st) || !S_ISREG(st.st_mode)) {
		bool missing = bad || r->file >= 0 || errno == ENOENT || errno == ENOTDIR ||
			       errno == EACCES || errno == ENAMETOOLONG;

		if (r->file >= 0)
			close(r->file);
		r->file = -1;
		/* Out of descriptors or memory is ours, not the client's: 500. */
		status = missing ? "404 Not Found" : "500 Internal Server Error";
		body = missing ? "not found\n" : "server error\n";
		answered[missing ? 2 : 4]++;
		goto out;
	}
	answered[0]++;
	r->size = st.st_size;
	if (head_only || !r->size) {
		close(r->file);
		r->file = -1;
	}
	r->head_len = snprintf(r->head, sizeof(r->head),
			       "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n"
			       "Content-Type: application/octet-stream\r\n%s\r\n",
			       (long long)st.st_size, keep ? "" : "Connection: close\r\n");
	if (head_only)
		r->size = 0;
	if (r->file >= 0 && r->size <= INLINE_BODY &&
	    pread(r->file, r->head + r->head_len, r->size, 0) == r->size) {
		r->head_len += r->size;
		r->size = 0;
		close(r->file);
		r->file = -1;
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

	if (r->file >= 0)
		close(r->file);
	if (r->map)
		munmap(r->map, r->size);
	c->head++;
	c->sent = 0;
}

static struct conn *new_conn(int fd)
{
	struct conn *c;

	if (fd >= MAX_FD) {
		close(fd);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		die("calloc");
	/* A response's last segment leaves at once, not after the peer's delayed ACK. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	c->fd = fd;
	conns[fd] = c;
	return c;
}

static void free_conn(struct conn *c)
{
	while (queued(c))
		end_oldest(c);
	conns[c->fd] = NULL;
	close(c->fd);
	free(c);
}

/* ---- epoll ------------------------------------------------------------ */

static void epoll_want(int ep, struct conn *c, unsigned int events)
{
	struct epoll_event ev = { .events = events, .data.fd = c->fd };

	if (c->events != events && !epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev))
		c->events = events;
}

/* Writes what it can; false once the connection is done and freed. */
static bool epoll_flush(int ep, struct conn *c)
{
	/* Requests waiting behind a full queue get their turn as it drains. */
	while (parse(c), queued(c)) {
		struct resp *r = oldest(c);
		ssize_t n;

		if (c->sent < (size_t)r->head_len) {
			/* A body follows: let TCP put it in the same segments. */
			n = send(c->fd, r->head + c->sent, r->head_len - c->sent,
				 MSG_NOSIGNAL | (r->size ? MSG_MORE : 0));
		} else if (c->sent < r->head_len + (size_t)r->size) {
			off_t off = c->sent - r->head_len;

			n = sendfile(c->fd, r->file, &off, r->size - off);
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
		c->sent += n;
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
	int ep = epoll_create1(EPOLL_CLOEXEC), i, n;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev))
		die("epoll");
	while (!stop && time(NULL) < deadline) {
		n = epoll_wait(ep, evs, 64, 1000);
		for (i = 0; i < n; i++) {
			struct conn *c;
			int fd = evs[i].data.fd;

			if (fd == ls) {
				while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					c = new_conn(fd);
					ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = fd };
					if (c && !epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
						c->events = EPOLLIN;
				}
				continue;
			}
			c = conns[fd];
			if (!c)
				continue;
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR) && c->events & EPOLLIN) {
				ssize_t got = read(fd, c->in + c->in_len, INBUF - c->in_len);

				if (got > 0)
					c->in_len += got;
				else if (got == 0 || errno != EAGAIN)
					c->eof = true;
			}
			epoll_flush(ep, c);
		}
	}
	close(ep);
}

/* ---- kevent ----------------------------------------------------------- */

static int kq;

static void kevent_post_recv(struct conn *c)
{
	if (c->reading || c->eof || c->closing || c->in_len == INBUF || queued(c) == MAX_RESP)
		return;
	c->recv_id = kevent_aio_recv(kq, c->fd, c->in + c->in_len, INBUF - c->in_len,
				     KEVENT_NAIO_RECV_SOME);
	if (c->recv_id < 0)
		c->eof = true;
	else
		c->reading = true;
}

/*
 * Sends what it can of @len bytes at @buf at once, with a plain send(): a
 * small response fits the socket's buffer, and then no zero-copy request,
 * no page pinning and no completion to wait for are needed. The rest, if
 * any, goes as an aio_send(). Only while no request of the connection is
 * under way: it would overtake them. Returns the request's id, -2 if none
 * was needed, -1 on error.
 */
static long kevent_send_now(struct conn *c, const char *buf, size_t len, bool *aio_busy)
{
	ssize_t n = 0;

	if (!*aio_busy) {
		n = send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN)
			return -1;
		n = n < 0 ? 0 : n;
		if ((size_t)n == len)
			return -2;
	}
	*aio_busy = true;
	return kevent_aio_send(kq, c->fd, buf + n, len - n, 0);
}

/* Starts the responses parse() queued since @from. */
static void kevent_send(struct conn *c, unsigned int from)
{
	bool aio_busy = false;

	for (unsigned int i = c->head; i != from; i++)
		aio_busy |= c->q[i % MAX_RESP].parts > 0;
	for (; from != c->tail; from++) {
		struct resp *r = &c->q[from % MAX_RESP];

		r->parts = 0;
		r->ids[0] = kevent_send_now(c, r->head, r->head_len, &aio_busy);
		r->parts += r->ids[0] >= 0;
		r->ids[1] = -1;
		if (r->ids[0] != -1 && r->file >= 0 && r->size) {
			/* aio_sendfile sends from the offset and leaves it there. */
			lseek(r->file, 0, SEEK_SET);
			r->ids[1] = kevent_aio_sendfile(kq, r->file, c->fd, r->size, 0);
			r->parts += r->ids[1] >= 0;
			aio_busy = true;
		}
		if (r->ids[0] == -1 || (r->file >= 0 && r->size && r->ids[1] < 0))
			c->eof = true;
	}
}

/* Frees what is done; false once the whole connection is. */
static bool kevent_settle(struct conn *c)
{
	if (!(c->eof || (c->closing && !queued(c))))
		return true;
	if (c->reading) {
		struct ukevent uk = kevent_fd(c->fd, KEVENT_NAIO, KEVENT_SOCKET_RECV, 0);

		uk.id.raw[1] = c->recv_id;
		if (kevent_remove(kq, &uk, 1) == 1)
			c->reading = false;	/* cancelled: no completion comes */
	}
	for (unsigned int i = c->head; i != c->tail; i++)
		if (c->q[i % MAX_RESP].parts)
			return true;		/* sends still hold their buffers */
	if (c->reading)
		return true;
	free_conn(c);
	return false;
}

/* After a completion: answer what can be answered, read on, or end. */
static void kevent_progress(struct conn *c)
{
	unsigned int from;

	/*
	 * What went out with a plain send() is done at once and makes room for
	 * requests still waiting in the input; no completion will come to say
	 * so, so answer them now, until nothing more can be answered.
	 */
	for (;;) {
		while (queued(c) && oldest(c)->parts == 0)
			end_oldest(c);
		from = c->tail;
		parse(c);
		if (c->tail == from)
			break;
		kevent_send(c, from);
	}
	kevent_post_recv(c);
	kevent_settle(c);
}

static void run_kevent(int ls, time_t deadline)
{
	struct ukevent uk = kevent_fd(ls, KEVENT_SOCKET, KEVENT_SOCKET_ACCEPT, 0), evs[64];
	int i, n;

	kq = kevent_init();
	if (kq < 0 || kevent_add(kq, &uk, 1) != 1 || (uk.ret_flags & KEVENT_RET_BROKEN))
		die("kevent");
	while (!stop && time(NULL) < deadline) {
		/*
		 * WAIT returns once num events are ready (the seed's rule): take
		 * what is ready without waiting, one call per batch while busy,
		 * and only when nothing is, wait for one.
		 */
		n = kevent_wait(kq, evs, 64, 0);
		if (n <= 0)
			n = kevent_wait(kq, evs, 1, 1000);
		for (i = 0; i < n; i++) {
			struct ukevent *e = &evs[i];
			int fd = e->id.raw[0];
			struct conn *c;

			if (e->type == KEVENT_SOCKET) {
				while ((fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
					c = new_conn(fd);
					if (c && kevent_set_async(fd, 1))
						c->eof = true;
					if (c)
						kevent_progress(c);
				}
				continue;
			}
			c = conns[fd];
			if (!c || e->type != KEVENT_NAIO)
				continue;
			if (e->event == KEVENT_SOCKET_RECV && c->reading &&
			    (long)e->id.raw[1] == c->recv_id) {
				c->reading = false;
				if (e->ret_data[1] || !e->ret_data[0])
					c->eof = true;
				c->in_len += e->ret_data[0];
			} else if (e->event == KEVENT_SOCKET_SEND) {
				for (unsigned int j = c->head; j != c->tail; j++) {
					struct resp *r = &c->q[j % MAX_RESP];

					if ((long)e->id.raw[1] == r->ids[0] || (long)e->id.raw[1] == r->ids[1]) {
						r->parts--;
						break;
					}
				}
				if (e->ret_data[1])
					c->eof = true;
			}
			kevent_progress(c);
		}
	}
	close(kq);
}

/* ---- io_uring --------------------------------------------------------- */

enum { OP_ACCEPT, OP_RECV, OP_SEND };

static struct io_uring ring;

/* A free submission entry: when the queue is full, what is in it goes first. */
static struct io_uring_sqe *uring_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	while (!sqe) {
		io_uring_submit(&ring);
		sqe = io_uring_get_sqe(&ring);
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
			sqe = uring_sqe();
			io_uring_prep_send(sqe, c->fd, r->head + c->sent, r->head_len - c->sent,
					   MSG_NOSIGNAL | (r->size ? MSG_MORE : 0));
		} else if (c->sent < r->head_len + (size_t)r->size) {
			if (!r->map) {
				r->map = mmap(NULL, r->size, PROT_READ, MAP_SHARED, r->file, 0);
				if (r->map == MAP_FAILED) {
					r->map = NULL;
					c->eof = true;
					return;
				}
			}
			sqe = uring_sqe();
			io_uring_prep_send(sqe, c->fd, (char *)r->map + (c->sent - r->head_len),
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
	struct __kernel_timespec second = { .tv_sec = 1 };
	struct io_uring_cqe *cqe;

	if (io_uring_queue_init(512, &ring, 0))
		die("io_uring_queue_init");
	uring_accept(ls);
	while (!stop && time(NULL) < deadline) {
		io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &second, NULL);
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			uint64_t data = io_uring_cqe_get_data64(cqe);
			int res = cqe->res, fd = data >> 8;
			struct conn *c;

			io_uring_cqe_seen(&ring, cqe);
			if (data == (uint64_t)-1)
				continue;
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
	io_uring_queue_exit(&ring);
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
	if (mode == KEVENT)
		run_kevent(ls, time(NULL) + seconds);
	else if (mode == EPOLL)
		run_epoll(ls, time(NULL) + seconds);
	else
		run_uring(ls, time(NULL) + seconds);
	printf("# answered: %lu 200, %lu 400, %lu 404, %lu 501, %lu 500\n",
	       answered[0], answered[1], answered[2], answered[3], answered[4]);
	printf("%s 1 served_until_%s\n", stop ? "ok" : "not ok",
	       stop ? "asked_to_stop" : "its_deadline");
	return stop ? 0 : 1;
usage:
	fprintf(stderr, "usage: %s DOCROOT PORT kevent|epoll|uring [-m] [-q] [-t SECONDS]\n", argv[0]);
	return 2;
}
