// SPDX-License-Identifier: GPL-2.0+
/*
 * bench_rr: request/response of small messages between two lab hosts.
 *
 *   bench_rr serve PORT CONNS OPS SIZE [METHOD...]
 *   bench_rr call ADDR PORT CONNS OPS SIZE [METHOD...]
 *
 * The caller keeps one request of SIZE bytes outstanding on each of CONNS
 * connections, OPS times per connection, and checks that every answer is
 * its request echoed (each request carries its connection and number).
 * The caller is the same for every method (epoll, read, write); the server
 * is what is compared:
 *
 *   aio_recv    one aio_recv() of SIZE bytes per connection: when its
 *               completion arrives the request is already in the buffer,
 *               no read() is needed; write() the answer, post the next
 *   epoll_read  epoll_wait(), read(), write()
 *   uring_recv  io_uring: a recv (MSG_WAITALL) per connection; its
 *               completion queues the answer's send, whose completion
 *               queues the next recv
 *   aio_ring    kevent at its best: a queue with a ready ring, one receive
 *               per connection that stays posted (KEVENT_NAIO_RECV_POSTED),
 *               events taken from the ring without a call, and all the
 *               answers found in one pass sent with one aio_submit()
 *               that also waits (KEVENT_NAIO_SUBMIT_WAIT) when the ring
 *               is empty
 *   uring_multi io_uring at its best: one multishot recv per connection
 *               into provided buffers (a buffer ring), the answers of one
 *               pass of the completion queue submitted with the wait for
 *               the next, in one io_uring_enter()
 *
 * The caller prints ops/s; the server its system calls and the guest's
 * CPU time per operation, and whether it served exactly CONNS * OPS.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/mman.h>

#include "bench_net.h"
#include "bench_kevent.h"
#include <liburing.h>

#define MAX_CONNS	256
#define MAX_SIZE	4096

enum method { AIO_RECV, EPOLL_READ, URING_RECV, AIO_RING, URING_MULTI, N_METHODS };
static const char *const names[N_METHODS] = {
	"aio_recv", "epoll_read", "uring_recv", "aio_ring", "uring_multi",
};

/*
 * Anonymous memory from mmap(), not a static array: network AIO refuses
 * pages of a file mapping, and the start of a static binary's .bss shares
 * its page with the file-backed .data.
 */
static unsigned char (*bufs)[MAX_SIZE];

struct serve {
	int fd[MAX_CONNS];
	unsigned int conns, size;
	unsigned long long ops;
	char err[128];
};

static void fail(struct serve *v, const char *what, int err)
{
	if (!v->err[0])
		snprintf(v->err, sizeof(v->err), "%s: %s", what, strerror(err));
}

/* ---- the server's methods --------------------------------------------------- */

static void serve_epoll(struct serve *v)
{
	struct epoll_event ev[MAX_CONNS];
	unsigned int open = v->conns, i;
	int ep = epoll_create1(0), n, j;

	for (i = 0; i < v->conns; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };

		epoll_ctl(ep, EPOLL_CTL_ADD, v->fd[i], &e);
	}
	while (open && !v->err[0]) {
		n = COUNTED(epoll_wait(ep, ev, MAX_CONNS, 60000));
		if (n <= 0) {
			fail(v, "epoll_wait", n ? errno : ETIMEDOUT);
			break;
		}
		for (j = 0; j < n; j++) {
			i = ev[j].data.u32;
			if (bench_read_all(v->fd[i], bufs[i], v->size)) {
				/* The caller is done with this connection. */
				epoll_ctl(ep, EPOLL_CTL_DEL, v->fd[i], NULL);
				open--;
				continue;
			}
			if (bench_write_all(v->fd[i], bufs[i], v->size))
				fail(v, "write", errno);
			v->ops++;
		}
	}
	close(ep);
}

static void serve_aio(struct serve *v)
{
	unsigned int open = v->conns, i;
	int kq = kevent_init();
	struct kq_buf kb;
	long n, j;

	if (kq < 0 || kq_buf_init(&kb)) {
		fail(v, "kevent queue", errno);
		return;
	}
	for (i = 0; i < v->conns; i++)
		if (kevent_set_async(v->fd[i], 1) ||
		    COUNTED(kevent_aio_recv(kq, v->fd[i], bufs[i], v->size, 0)) < 0)
			fail(v, "aio_recv", errno);
	while (open && !v->err[0]) {
		n = kq_wait_some(kq, &kb, kb.max, 60000);
		if (n <= 0) {
			fail(v, "waiting for aio_recv", n ? errno : ETIMEDOUT);
			break;
		}
		for (j = 0; j < n; j++) {
			struct ukevent uk;

			kq_get(&kb, j, &uk);
			for (i = 0; i < v->conns && v->fd[i] != (int)uk.id.raw[0]; i++)
				;
			if (i == v->conns) {
				fail(v, "completion of an unknown socket", EPROTO);
				continue;
			}
			if (uk.ret_data[0] < v->size) {
				/* End of stream (or an error): the caller is done. */
				if (uk.ret_data[1])
					fail(v, "aio_recv", uk.ret_data[1]);
				open--;
				continue;
			}
			/* The request is in bufs[i] already: no read(). */
			if (bench_write_all(v->fd[i], bufs[i], v->size))
				fail(v, "write", errno);
			v->ops++;
			if (COUNTED(kevent_aio_recv(kq, v->fd[i], bufs[i], v->size, 0)) < 0)
				fail(v, "aio_recv", errno);
		}
	}
	close(kq);
	kq_buf_free(&kb);
}

#define SENDING		(1ULL << 32)

static void uring_queue(struct io_uring *ring, struct serve *v, unsigned int i, int send)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (send)
		io_uring_prep_send(sqe, v->fd[i], bufs[i], v->size, MSG_WAITALL);
	else
		io_uring_prep_recv(sqe, v->fd[i], bufs[i], v->size, MSG_WAITALL);
	io_uring_sqe_set_data64(sqe, i | (send ? SENDING : 0));
}

static void serve_uring(struct serve *v)
{
	unsigned int open = v->conns, i;
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init(2 * MAX_CONNS, &ring, 0);
	if (ret < 0) {
		fail(v, "io_uring_setup", -ret);
		return;
	}
	for (i = 0; i < v->conns; i++)
		uring_queue(&ring, v, i, 0);
	while (open && !v->err[0]) {
		struct io_uring_cqe *cqe;

		ret = COUNTED(io_uring_submit_and_wait(&ring, 1));
		if (ret < 0 && ret != -EINTR) {
			fail(v, "io_uring_enter", -ret);
			break;
		}
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			uint64_t data = io_uring_cqe_get_data64(cqe);

			i = (unsigned int)data;
			if (data & SENDING) {
				if (cqe->res != (int)v->size)
					fail(v, "send", cqe->res < 0 ? -cqe->res : EPIPE);
				else
					uring_queue(&ring, v, i, 0);
			} else if (cqe->res == (int)v->size) {
				v->ops++;
				uring_queue(&ring, v, i, 1);
			} else {
				if (cqe->res < 0)
					fail(v, "recv", -cqe->res);
				open--;
			}
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
}

/*
 * Answers: a zero-copy send reads its buffer until the peer acknowledged
 * it, so each answer gets a slot of its own, free again at its completion.
 */
#define SLOTS		8
#define POSTED_RING	16384	/* bytes of each connection's posted ring */

struct answers {
	unsigned char *mem;		/* MAX_CONNS * SLOTS * MAX_SIZE */
	unsigned char busy[MAX_CONNS][SLOTS];
};

static unsigned char *answer_slot(struct answers *a, unsigned int i)
{
	for (unsigned int k = 0; k < SLOTS; k++)
		if (!a->busy[i][k]) {
			a->busy[i][k] = 1;
			return a->mem + ((size_t)i * SLOTS + k) * MAX_SIZE;
		}
	return NULL;
}

static void answer_done(struct answers *a, unsigned long long addr)
{
	size_t off = (unsigned char *)(uintptr_t)addr - a->mem;

	if (off < (size_t)MAX_CONNS * SLOTS * MAX_SIZE)
		a->busy[off / MAX_SIZE / SLOTS][off / MAX_SIZE % SLOTS] = 0;
}

/* The posted ring of connection @i, and its header. */
static struct kevent_naio_posted *posted_of(unsigned char *mem, unsigned int i)
{
	return (struct kevent_naio_posted *)(mem + (size_t)i *
		(sizeof(struct kevent_naio_posted) + POSTED_RING));
}

/* Copy request bytes from posted ring @p into @out, and give them back. */
static void posted_take(struct kevent_naio_posted *p, unsigned char *out, unsigned int n)
{
	const unsigned char *data = (const unsigned char *)(p + 1);
	unsigned int off = p->tail % POSTED_RING, first = POSTED_RING - off;

	if (first > n)
		first = n;
	memcpy(out, data + off, first);
	memcpy(out + first, data, n - first);
	__atomic_store_n(&p->tail, p->tail + n, __ATOMIC_RELEASE);
}

static void serve_aio_ring(struct serve *v)
{
	static struct kevent_naio_sub subs[KEVENT_CTL_MAX_NUM];
	size_t rx_size = (size_t)v->conns * (sizeof(struct kevent_naio_posted) + POSTED_RING);
	unsigned int open = v->conns, nsubs = 0, i;
	long posted[MAX_CONNS], conn_of_fd[1024];
	unsigned char *rx = mmap(NULL, rx_size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct answers *a = calloc(1, sizeof(*a));
	struct kevent_ring *r;
	int kq = kevent_ring_open(4096, &r);

	if (kq < 0 || rx == MAP_FAILED || !a) {
		fail(v, "ring queue", errno);
		return;
	}
	a->mem = mmap(NULL, (size_t)MAX_CONNS * SLOTS * MAX_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < v->conns; i++) {
		if (v->fd[i] >= 1024 || kevent_set_async(v->fd[i], 1)) {
			fail(v, "SO_ASYNC_SOCK", errno);
			break;
		}
		conn_of_fd[v->fd[i]] = i;
		posted[i] = COUNTED(kevent_aio_recv(kq, v->fd[i], posted_of(rx, i),
						   sizeof(struct kevent_naio_posted) + POSTED_RING,
						   KEVENT_NAIO_RECV_POSTED));
		if (posted[i] < 0)
			fail(v, "aio_recv", errno);
	}
	while (open && !v->err[0]) {
		unsigned int took = 0;
		struct ukevent ev;

		while (kevent_ring_take(r, &ev)) {
			took++;
			if (ev.id.raw[0] >= 1024) {
				fail(v, "completion of an unknown socket", EPROTO);
				continue;
			}
			i = conn_of_fd[ev.id.raw[0]];
			if (ev.id.raw[1] != posted[i]) {
				/* An answer went out: its slot is free. */
				if (ev.ret_flags & KEVENT_RET_BROKEN)
					fail(v, "aio_send", ev.ret_data[1]);
				answer_done(a, ev.ptr);
				continue;
			}
			/* Every whole request that landed: answer it. */
			while (posted_of(rx, i)->head - posted_of(rx, i)->tail >= v->size) {
				unsigned char *out = answer_slot(a, i);

				if (!out) {
					fail(v, "no free answer slot", ENOBUFS);
					break;
				}
				posted_take(posted_of(rx, i), out, v->size);
				subs[nsubs++] = (struct kevent_naio_sub) {
					.op = KEVENT_NAIO_OP_SEND, .sock = v->fd[i], .fd = -1,
					.buf = (uintptr_t)out, .size = v->size,
				};
				v->ops++;
				if (nsubs == KEVENT_CTL_MAX_NUM) {
					if (COUNTED(kevent_aio_submit(kq, subs, nsubs)) != nsubs)
						fail(v, "aio_submit", errno);
					nsubs = 0;
				}
			}
			if (ev.ret_flags & KEVENT_RET_BROKEN) {
				/* End of stream (or an error): the caller is done. */
				if (ev.ret_data[1])
					fail(v, "posted aio_recv", ev.ret_data[1]);
				open--;
			}
		}
		/*
		 * The answers, and a wait for more, in one call; the wait
		 * returns at once if the ring is not empty.
		 */
		if ((nsubs || !took) && open &&
		    COUNTED(kevent_aio_submit_wait(kq, subs, nsubs)) != nsubs)
			fail(v, "aio_submit", errno);
		nsubs = 0;
	}
	kevent_ring_close(kq, r);
	/* Closing the queue cancels what is left; the pages go after. */
	munmap(rx, rx_size);
	munmap(a->mem, (size_t)MAX_CONNS * SLOTS * MAX_SIZE);
	free(a);
}

#define URING_BGID	7
#define URING_BUFS	1024	/* provided buffers, a power of two */
#define URING_BUF_SIZE	4096

/* What a connection has received and not answered yet. */
struct pending {
	unsigned char data[2 * MAX_SIZE];
	unsigned int len;
};

static void uring_multi_recv(struct io_uring *ring, struct serve *v, unsigned int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_recv_multishot(sqe, v->fd[i], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = URING_BGID;
	io_uring_sqe_set_data64(sqe, i);
}

/* A ring of provided buffers, as liburing 2.4's io_uring_setup_buf_ring(). */
static struct io_uring_buf_ring *uring_buf_ring(struct io_uring *ring, int *err)
{
	struct io_uring_buf_reg reg = { .ring_entries = URING_BUFS, .bgid = URING_BGID };
	void *mem = mmap(NULL, URING_BUFS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	io_uring_buf_ring_init(mem);
	reg.ring_addr = (uintptr_t)mem;
	*err = io_uring_register_buf_ring(ring, &reg, 0);
	if (*err) {
		munmap(mem, URING_BUFS * sizeof(struct io_uring_buf));
		return NULL;
	}
	return mem;
}

static void serve_uring_multi(struct serve *v)
{
	unsigned int open = v->conns, i, mask = io_uring_buf_ring_mask(URING_BUFS);
	struct pending *pend = calloc(MAX_CONNS, sizeof(*pend));
	unsigned char *bufmem = malloc((size_t)URING_BUFS * URING_BUF_SIZE);
	struct answers *a = calloc(1, sizeof(*a));
	struct io_uring_buf_ring *br;
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init(4 * MAX_CONNS, &ring, 0);
	if (ret < 0 || !pend || !bufmem || !a) {
		fail(v, "io_uring_setup", ret < 0 ? -ret : ENOMEM);
		return;
	}
	a->mem = malloc((size_t)MAX_CONNS * SLOTS * MAX_SIZE);
	br = uring_buf_ring(&ring, &ret);
	if (!br || !a->mem) {
		fail(v, "io_uring_register_buf_ring", br ? ENOMEM : -ret);
		io_uring_queue_exit(&ring);
		return;
	}
	for (i = 0; i < URING_BUFS; i++)
		io_uring_buf_ring_add(br, bufmem + (size_t)i * URING_BUF_SIZE, URING_BUF_SIZE,
				      i, mask, i);
	io_uring_buf_ring_advance(br, URING_BUFS);
	for (i = 0; i < v->conns; i++)
		uring_multi_recv(&ring, v, i);
	while (open && !v->err[0]) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0, returned = 0;

		/* This pass's answers go in with the wait for the next. */
		ret = COUNTED(io_uring_submit_and_wait(&ring, 1));
		if (ret < 0 && ret != -EINTR) {
			fail(v, "io_uring_enter", -ret);
			break;
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			uint64_t data = io_uring_cqe_get_data64(cqe);

			seen++;
			if (data & SENDING) {
				if (cqe->res != (int)v->size)
					fail(v, "send", cqe->res < 0 ? -cqe->res : EPIPE);
				answer_done(a, data & ~SENDING);
				continue;
			}
			i = (unsigned int)data;
			if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
				unsigned int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
				struct pending *p = &pend[i];

				if (p->len + cqe->res > sizeof(p->data)) {
					fail(v, "recv: more than two requests at once", EPROTO);
				} else {
					memcpy(p->data + p->len, bufmem + (size_t)bid * URING_BUF_SIZE,
					       cqe->res);
					p->len += cqe->res;
				}
				/* The buffer goes back to the ring at once. */
				io_uring_buf_ring_add(br, bufmem + (size_t)bid * URING_BUF_SIZE,
						      URING_BUF_SIZE, bid, mask, returned++);
				while (p->len >= v->size) {
					unsigned char *out = answer_slot(a, i);
					struct io_uring_sqe *sqe;

					if (!out) {
						fail(v, "no free answer slot", ENOBUFS);
						break;
					}
					memcpy(out, p->data, v->size);
					memmove(p->data, p->data + v->size, p->len - v->size);
					p->len -= v->size;
					sqe = io_uring_get_sqe(&ring);
					if (!sqe) {
						io_uring_submit(&ring);
						sqe = io_uring_get_sqe(&ring);
					}
					io_uring_prep_send(sqe, v->fd[i], out, v->size, MSG_WAITALL);
					io_uring_sqe_set_data64(sqe, (uintptr_t)out | SENDING);
					v->ops++;
				}
				if (!(cqe->flags & IORING_CQE_F_MORE))
					uring_multi_recv(&ring, v, i);
			} else if (cqe->res == -ENOBUFS) {
				uring_multi_recv(&ring, v, i);
			} else {
				/* End of stream (or an error): the caller is done. */
				if (cqe->res < 0)
					fail(v, "recv", -cqe->res);
				open--;
			}
		}
		io_uring_buf_ring_advance(br, returned);
		io_uring_cq_advance(&ring, seen);
	}
	io_uring_queue_exit(&ring);
	free(bufmem);
	free(a->mem);
	free(a);
	free(pend);
}

/* ---- the caller ------------------------------------------------------------- */

/* Request @n of connection @c: its number, then the stream's bytes. */
static void request(unsigned char *buf, unsigned int c, unsigned int n, unsigned int size)
{
	uint32_t head[2] = { c, n };

	bench_fill(buf, (uint64_t)c * 1000003 + n, size);
	memcpy(buf, head, size < sizeof(head) ? size : sizeof(head));
}

static int call(const char *addr, int port, unsigned int conns, unsigned int ops,
		unsigned int size, double *seconds, unsigned long long *calls,
		unsigned long long *answered, unsigned long long *wrong)
{
	unsigned int sent[MAX_CONNS] = { 0 }, left = conns, i;
	unsigned char want[MAX_SIZE], got[MAX_SIZE];
	struct epoll_event ev[MAX_CONNS];
	struct bench_span span;
	int fd[MAX_CONNS], ep = epoll_create1(0), n, j;

	for (i = 0; i < conns; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };

		fd[i] = bench_connect(addr, port, CONNECT_TRIES);
		if (fd[i] < 0)
			return -1;
		bench_nodelay(fd[i]);
		epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &e);
	}
	bench_start(&span);
	for (i = 0; i < conns; i++) {
		request(want, i, sent[i]++, size);
		if (bench_write_all(fd[i], want, size))
			return -1;
	}
	while (left) {
		n = COUNTED(epoll_wait(ep, ev, MAX_CONNS, 60000));
		if (n <= 0)
			return -1;
		for (j = 0; j < n; j++) {
			i = ev[j].data.u32;
			if (bench_read_all(fd[i], got, size))
				return -1;
			request(want, i, sent[i] - 1, size);
			*wrong += !!memcmp(got, want, size);
			(*answered)++;
			if (sent[i] == ops) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd[i], NULL);
				shutdown(fd[i], SHUT_WR);
				left--;
				continue;
			}
			request(want, i, sent[i]++, size);
			if (bench_write_all(fd[i], want, size))
				return -1;
		}
	}
	bench_stop(&span);
	*seconds = span.seconds;
	*calls = span.calls;
	for (i = 0; i < conns; i++)
		close(fd[i]);
	close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	int serving = argc >= 6 && !strcmp(argv[1], "serve");
	int calling = argc >= 7 && !strcmp(argv[1], "call");
	int first = serving ? 6 : 7, ls = -1, m;
	unsigned int conns, ops, size;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!serving && !calling) {
		fprintf(stderr, "usage: %s serve PORT CONNS OPS SIZE [METHOD...] | call ADDR PORT CONNS OPS SIZE [METHOD...]\n",
			argv[0]);
		return 2;
	}
	conns = atoi(argv[first - 3]);
	ops = atoi(argv[first - 2]);
	size = atoi(argv[first - 1]);
	if (!conns || conns > MAX_CONNS || !ops || size < 8 || size > MAX_SIZE) {
		fprintf(stderr, "CONNS 1..%d, OPS > 0, SIZE 8..%d\n", MAX_CONNS, MAX_SIZE);
		return 2;
	}
	ksft_print_header();
	ksft_set_plan(N_METHODS);
	bufs = mmap(NULL, MAX_CONNS * MAX_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bench_pattern_init() || bufs == MAP_FAILED)
		ksft_exit_fail_msg("no memory\n");
	if (serving && (ls = bench_listen(atoi(argv[2]))) < 0)
		ksft_exit_fail_msg("listening on %s: %s\n", argv[2], strerror(errno));
	for (m = 0; m < N_METHODS; m++) {
		unsigned long long answered = 0, wrong = 0, calls = 0;
		double seconds = 0, busy0;
		struct serve v = { .conns = conns, .size = size };
		struct bench_span span;
		unsigned int i;
		int ok;

		if (!bench_wanted(names[m], argv + first, argc - first)) {
			ksft_test_result_skip("%s (not asked for)\n", names[m]);
			continue;
		}
		busy0 = bench_guest_busy();
		if (!serving) {
			ok = !call(argv[2], atoi(argv[3]), conns, ops, size, &seconds, &calls,
				   &answered, &wrong) && answered == (unsigned long long)conns * ops && !wrong;
			if (!ok)
				ksft_print_msg("%s: %llu of %u answers, %llu wrong: %s\n", names[m], answered,
					       conns * ops, wrong, strerror(errno));
			bench_line("rr", names[m],
				   "side=caller size=%u conns=%u ops=%llu seconds=%.3f ops_s=%.1f calls_per_op=%.3f guest_cpu_us_per_op=%.2f valid=%d",
				   size, conns, answered, seconds, answered / seconds,
				   (double)calls / answered, (bench_guest_busy() - busy0) * 1e6 / answered, ok);
			ksft_test_result(ok, "caller.%s\n", names[m]);
			continue;
		}
		for (i = 0; i < conns; i++) {
			v.fd[i] = accept(ls, NULL, NULL);
			if (v.fd[i] < 0)
				ksft_exit_fail_msg("accept: %s\n", strerror(errno));
			bench_nodelay(v.fd[i]);
		}
		busy0 = bench_guest_busy();
		bench_start(&span);
		if (m == AIO_RECV)
			serve_aio(&v);
		else if (m == EPOLL_READ)
			serve_epoll(&v);
		else if (m == URING_RECV)
			serve_uring(&v);
		else if (m == AIO_RING)
			serve_aio_ring(&v);
		else
			serve_uring_multi(&v);
		bench_stop(&span);
		ok = !v.err[0] && v.ops == (unsigned long long)conns * ops;
		if (!ok)
			ksft_print_msg("%s: served %llu of %u%s%s\n", names[m], v.ops, conns * ops,
				       v.err[0] ? ": " : "", v.err);
		bench_line("rr", names[m],
			   "side=server size=%u conns=%u ops=%llu seconds=%.3f calls_per_op=%.3f guest_cpu_us_per_op=%.2f valid=%d",
			   size, conns, v.ops, span.seconds, (double)span.calls / (v.ops ? v.ops : 1),
			   (bench_guest_busy() - busy0) * 1e6 / (v.ops ? v.ops : 1), ok);
		ksft_test_result(ok, "server.%s\n", names[m]);
		for (i = 0; i < conns; i++)
			close(v.fd[i]);
	}
	ksft_finished();
}
