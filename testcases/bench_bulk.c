// SPDX-License-Identifier: GPL-2.0+
/*
 * bench_bulk: one bulk TCP stream between two lab hosts, per method.
 *
 *   bench_bulk serve PORT BYTES [METHOD...]         (receives)
 *   bench_bulk send ADDR PORT BYTES [METHOD...]     (sends)
 *
 *   aio            aio_send() (zero-copy) and, on the receiving side,
 *                  aio_recv(); DEPTH requests of CHUNK bytes outstanding
 *   send_recv      blocking send() and recv() of CHUNK bytes
 *   uring_send     io_uring IORING_OP_SEND (MSG_WAITALL) of CHUNK bytes, the
 *                  next once the last completed; the receiver recv()s
 *   uring_send_zc  io_uring IORING_OP_SEND_ZC likewise, a buffer reused only
 *                  after its notification (DEPTH buffers); the receiver recv()s
 *
 * Both sides run the methods in the same order, one connection each. The
 * receiver checks every byte against the stream's pattern and answers with
 * the byte count and how many differed; the sender's time runs from its
 * first send to that answer. Each side prints its own line: the sender
 * MB/s, both system calls and guest CPU time per MB (see bench_net.h).
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "bench_net.h"
#include "bench_kevent.h"
#include <liburing.h>

#define CHUNK		(1 << 20)
#define DEPTH		4

enum method { AIO, SEND_RECV, URING_SEND, URING_SEND_ZC, N_METHODS };
static const char *const names[N_METHODS] = { "aio", "send_recv", "uring_send", "uring_send_zc" };

struct answer {
	uint64_t bytes, differ;
};

struct side {
	int s;
	uint64_t bytes;		/* the stream's length */
	uint64_t done;		/* bytes sent (acknowledged by completions) or received */
	uint64_t differ;
	char err[128];
	unsigned char *buf[DEPTH];
};

static void fail(struct side *x, const char *what, int err)
{
	if (!x->err[0])
		snprintf(x->err, sizeof(x->err), "%s: %s", what, strerror(err));
}

/* ---- sending -------------------------------------------------------------- */

static void send_plain(struct side *x)
{
	uint64_t off;

	for (off = 0; off < x->bytes && !x->err[0]; off += CHUNK) {
		size_t n = x->bytes - off < CHUNK ? x->bytes - off : CHUNK;

		bench_fill(x->buf[0], off, n);
		if (bench_write_all(x->s, x->buf[0], n))
			fail(x, "send", errno);
		else
			x->done += n;
	}
}

/* The slot of @id that holds the request @uk completes; DEPTH if none. */
static int request_slot(const long *id, const struct ukevent *uk)
{
	int i;

	for (i = 0; i < DEPTH && id[i] != (long)uk->id.raw[1]; i++)
		;
	return i;
}

static void send_aio(struct side *x)
{
	int kq = kevent_init(), inflight = 0, i;
	uint64_t next = 0;
	long id[DEPTH];
	struct kq_buf kb;

	if (kq < 0 || kq_buf_init(&kb) || kevent_set_async(x->s, 1)) {
		fail(x, "setting up network AIO", errno);
		return;
	}
	for (i = 0; i < DEPTH; i++)
		id[i] = -1;
	for (;;) {
		long n, j;

		for (i = 0; i < DEPTH && next < x->bytes && !x->err[0]; i++) {
			size_t len = x->bytes - next < CHUNK ? x->bytes - next : CHUNK;

			if (id[i] >= 0)
				continue;
			bench_fill(x->buf[i], next, len);
			id[i] = COUNTED(kevent_aio_send(kq, x->s, x->buf[i], len, 0));
			if (id[i] < 0) {
				fail(x, "aio_send", errno);
				break;
			}
			next += len;
			inflight++;
		}
		if (!inflight)
			break;
		n = kq_wait_some(kq, &kb, DEPTH, 60000);
		if (n <= 0) {
			fail(x, "waiting for aio_send", n ? errno : ETIMEDOUT);
			break;
		}
		for (j = 0; j < n; j++) {
			struct ukevent uk;

			kq_get(&kb, j, &uk);
			i = request_slot(id, &uk);
			if (i == DEPTH || (uk.ret_flags & KEVENT_RET_BROKEN)) {
				fail(x, "aio_send completion", i == DEPTH ? EPROTO : uk.ret_data[1]);
				continue;
			}
			x->done += uk.ret_data[0];
			id[i] = -1;
			inflight--;
		}
	}
	close(kq);
	kq_buf_free(&kb);
}

/*
 * io_uring send or send_zc. One stream: a send is submitted only once the
 * one before it completed (two in flight could go out of order, as this
 * benchmark's check found when it linked them across submissions). With
 * send_zc a buffer is reused only after its notification, so up to DEPTH
 * buffers are still on their way while the next send goes out.
 */
static void send_uring(struct side *x, int zc)
{
	int busy[DEPTH] = { 0 }, pending = 0, outstanding = 0, i, ret;
	struct io_uring ring;
	uint64_t next = 0;

	ret = io_uring_queue_init(2 * DEPTH, &ring, 0);
	if (ret < 0) {
		fail(x, "io_uring_setup", -ret);
		return;
	}
	for (;;) {
		struct io_uring_cqe *cqe;

		for (i = 0; i < DEPTH && busy[i]; i++)
			;
		if (!pending && i < DEPTH && next < x->bytes && !x->err[0]) {
			size_t len = x->bytes - next < CHUNK ? x->bytes - next : CHUNK;
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			bench_fill(x->buf[i], next, len);
			if (zc)
				io_uring_prep_send_zc(sqe, x->s, x->buf[i], len, MSG_WAITALL, 0);
			else
				io_uring_prep_send(sqe, x->s, x->buf[i], len, MSG_WAITALL);
			io_uring_sqe_set_data64(sqe, i);
			busy[i] = zc ? 2 : 1;	/* zc: the result, then the notification */
			next += len;
			pending = 1;
			outstanding++;
		}
		if (!outstanding)
			break;
		ret = COUNTED(io_uring_submit_and_wait(&ring, 1));
		if (ret < 0 && ret != -EINTR) {
			fail(x, "io_uring_enter", -ret);
			break;
		}
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			i = (int)io_uring_cqe_get_data64(cqe);
			if (cqe->flags & IORING_CQE_F_NOTIF) {
				busy[i]--;
			} else {
				if (cqe->res < 0)
					fail(x, zc ? "send_zc" : "send", -cqe->res);
				else
					x->done += cqe->res;
				pending = 0;
				busy[i]--;
				/* No notification follows a result without F_MORE. */
				if (zc && !(cqe->flags & IORING_CQE_F_MORE))
					busy[i]--;
			}
			if (!busy[i])
				outstanding--;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
}

/* ---- receiving ------------------------------------------------------------ */

static void recv_plain(struct side *x)
{
	while (x->done < x->bytes && !x->err[0]) {
		size_t want = x->bytes - x->done < CHUNK ? x->bytes - x->done : CHUNK;
		ssize_t r = COUNTED(recv(x->s, x->buf[0], want, 0));

		if (r <= 0) {
			fail(x, "recv", r ? errno : EPIPE);
			break;
		}
		x->differ += bench_differ(x->buf[0], x->done, r);
		x->done += r;
	}
}

static void recv_aio(struct side *x)
{
	int kq = kevent_init(), inflight = 0, i;
	uint64_t next = 0, at[DEPTH];
	long id[DEPTH];
	struct kq_buf kb;

	if (kq < 0 || kq_buf_init(&kb) || kevent_set_async(x->s, 1)) {
		fail(x, "setting up network AIO", errno);
		return;
	}
	for (i = 0; i < DEPTH; i++)
		id[i] = -1;
	for (;;) {
		long n, j;

		for (i = 0; i < DEPTH && next < x->bytes && !x->err[0]; i++) {
			size_t len = x->bytes - next < CHUNK ? x->bytes - next : CHUNK;

			if (id[i] >= 0)
				continue;
			id[i] = COUNTED(kevent_aio_recv(kq, x->s, x->buf[i], len, 0));
			if (id[i] < 0) {
				fail(x, "aio_recv", errno);
				break;
			}
			at[i] = next;
			next += len;
			inflight++;
		}
		if (!inflight)
			break;
		n = kq_wait_some(kq, &kb, DEPTH, 60000);
		if (n <= 0) {
			fail(x, "waiting for aio_recv", n ? errno : ETIMEDOUT);
			break;
		}
		for (j = 0; j < n; j++) {
			struct ukevent uk;

			kq_get(&kb, j, &uk);
			i = request_slot(id, &uk);
			if (i == DEPTH || (uk.ret_flags & KEVENT_RET_BROKEN)) {
				fail(x, "aio_recv completion", i == DEPTH ? EPROTO : uk.ret_data[1]);
				continue;
			}
			/* The data is in place: check it where it landed, no read. */
			if (at[i] != x->done)
				fail(x, "aio_recv completed out of order", EPROTO);
			x->differ += bench_differ(x->buf[i], at[i], uk.ret_data[0]);
			x->done += uk.ret_data[0];
			id[i] = -1;
			inflight--;
		}
	}
	close(kq);
	kq_buf_free(&kb);
}

/* ---- the two sides ---------------------------------------------------------- */

static void line(const char *side, enum method m, const struct side *x, double seconds,
		 unsigned long long calls, double busy, int ok)
{
	double mb = x->bytes / 1e6;

	bench_line("bulk", names[m],
		   "side=%s bytes=%llu seconds=%.3f mb_s=%.2f calls_per_mb=%.2f guest_cpu_ms_per_mb=%.2f valid=%d",
		   side, (unsigned long long)x->bytes, seconds, mb / seconds, calls / mb,
		   busy * 1e3 / mb, ok);
	ksft_test_result(ok, "%s.%s\n", side, names[m]);
}

static void one(int serving, int s, enum method m, struct side *x)
{
	struct answer ans = { 0 };
	struct bench_span span;
	double busy0 = bench_guest_busy();
	int ok;

	x->s = s;
	x->done = x->differ = 0;
	x->err[0] = 0;
	bench_start(&span);
	if (serving) {
		if (m == AIO)
			recv_aio(x);
		else
			recv_plain(x);
		ans.bytes = x->done;
		ans.differ = x->differ;
		if (bench_write_all(s, &ans, sizeof(ans)))
			fail(x, "answering", errno);
	} else {
		if (m == AIO)
			send_aio(x);
		else if (m == SEND_RECV)
			send_plain(x);
		else
			send_uring(x, m == URING_SEND_ZC);
		if (bench_read_all(s, &ans, sizeof(ans)))
			fail(x, "reading the answer", errno);
	}
	bench_stop(&span);
	ok = !x->err[0] && x->done == x->bytes && ans.bytes == x->bytes && !ans.differ;
	if (!ok)
		ksft_print_msg("%s: %llu of %llu bytes, the receiver got %llu with %llu differing%s%s\n",
			       names[m], (unsigned long long)x->done, (unsigned long long)x->bytes,
			       (unsigned long long)ans.bytes, (unsigned long long)ans.differ,
			       x->err[0] ? ": " : "", x->err);
	line(serving ? "recv" : "send", m, x, span.seconds, span.calls,
	     bench_guest_busy() - busy0, ok);
}

int main(int argc, char **argv)
{
	int serving = argc >= 4 && !strcmp(argv[1], "serve");
	int sending = argc >= 5 && !strcmp(argv[1], "send");
	int first = serving ? 4 : 5, ls = -1, i, m;
	struct side x = { 0 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!serving && !sending) {
		fprintf(stderr, "usage: %s serve PORT BYTES [METHOD...] | send ADDR PORT BYTES [METHOD...]\n",
			argv[0]);
		return 2;
	}
	x.bytes = strtoull(argv[first - 1], NULL, 0);
	ksft_print_header();
	ksft_set_plan(N_METHODS);
	if (bench_pattern_init())
		ksft_exit_fail_msg("no memory\n");
	for (i = 0; i < DEPTH; i++) {
		x.buf[i] = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (x.buf[i] == MAP_FAILED)
			ksft_exit_fail_msg("no memory\n");
	}
	if (serving && (ls = bench_listen(atoi(argv[2]))) < 0)
		ksft_exit_fail_msg("listening on %s: %s\n", argv[2], strerror(errno));
	for (m = 0; m < N_METHODS; m++) {
		int s;

		if (!bench_wanted(names[m], argv + first, argc - first)) {
			ksft_test_result_skip("%s (not asked for)\n", names[m]);
			continue;
		}
		s = serving ? accept(ls, NULL, NULL) :
			      bench_connect(argv[2], atoi(argv[3]), CONNECT_TRIES);
		if (s < 0) {
			ksft_print_msg("%s: connection: %s\n", names[m], strerror(errno));
			ksft_test_result_fail("%s\n", names[m]);
			continue;
		}
		one(serving, s, m, &x);
		close(s);
	}
	ksft_finished();
}
