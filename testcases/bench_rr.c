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

enum method { AIO_RECV, EPOLL_READ, URING_RECV, N_METHODS };
static const char *const names[N_METHODS] = { "aio_recv", "epoll_read", "uring_recv" };

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
		else
			serve_uring(&v);
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
