/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * bench_net.h: what the benchmarks across two lab hosts share: the
 * listening and the connecting side, a byte pattern both can check, and
 * the CPU time of the whole guest.
 *
 * Guest CPU rather than the process's: network AIO does its copying in a
 * kernel worker (kevent_naio), io_uring in its own threads and task work,
 * TCP in softirqs; none of that is charged to the caller. /proc/stat's busy
 * time counts all of it, and each host runs nothing else meanwhile.
 */
#ifndef BENCH_NET_H
#define BENCH_NET_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define CONNECT_TRIES	3000	/* 50 ms apart: the server may still be busy */

/* Busy time of the whole guest (all but idle and iowait), in seconds. */
static inline double bench_guest_busy(void)
{
	unsigned long long v[10] = { 0 }, busy = 0;
	FILE *f = fopen("/proc/stat", "r");
	int i;

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 8)
		v[3] = v[4] = 0;
	fclose(f);
	for (i = 0; i < 8; i++)
		if (i != 3 && i != 4)
			busy += v[i];
	return (double)busy / sysconf(_SC_CLK_TCK);
}

static inline int bench_listen(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (s < 0)
		return -1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (void *)&sa, sizeof(sa)) || listen(s, 1024)) {
		close(s);
		return -1;
	}
	return s;
}

/* A connection to @addr:@port, retried while the server is not listening yet. */
static inline int bench_connect(const char *addr, int port, int tries)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int i;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	for (i = 0; i < tries; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0)
			return -1;
		if (!connect(s, (void *)&sa, sizeof(sa)))
			return s;
		close(s);
		usleep(50 * 1000);
	}
	return -1;
}

static inline void bench_nodelay(int s)
{
	int one = 1;

	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * The stream every benchmark sends: byte i is master[i % PERIOD], PERIOD a
 * prime, so no chunk lines up with it and a misplaced chunk is noticed.
 * Filling and checking are a memcpy() and a memcmp() from the master copy,
 * cheap next to the network, and the same for every method.
 */
#define BENCH_PERIOD	65521
#define BENCH_MAX_CHUNK	(1 << 20)

static unsigned char *bench_master;

static inline int bench_pattern_init(void)
{
	size_t i, n = BENCH_PERIOD + BENCH_MAX_CHUNK;

	bench_master = malloc(n);
	if (!bench_master)
		return -1;
	for (i = 0; i < n; i++) {
		uint64_t j = i % BENCH_PERIOD;

		bench_master[i] = (unsigned char)((j * 2654435761u) >> 13 ^ j >> 7);
	}
	return 0;
}

/* @n (at most BENCH_MAX_CHUNK) bytes of the stream from offset @off. */
static inline void bench_fill(unsigned char *buf, uint64_t off, size_t n)
{
	memcpy(buf, bench_master + off % BENCH_PERIOD, n);
}

/* How many of @n bytes at stream offset @off differ from the stream. */
static inline uint64_t bench_differ(const unsigned char *buf, uint64_t off, size_t n)
{
	const unsigned char *want = bench_master + off % BENCH_PERIOD;
	uint64_t bad = 0;
	size_t i;

	if (!memcmp(buf, want, n))
		return 0;
	for (i = 0; i < n; i++)
		bad += buf[i] != want[i];
	return bad;
}

static inline int bench_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = COUNTED(write(fd, c, n));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= w;
	}
	return 0;
}

static inline int bench_read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = COUNTED(read(fd, c, n));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= r;
	}
	return 0;
}

#endif /* BENCH_NET_H */
