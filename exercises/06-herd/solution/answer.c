// SPDX-License-Identifier: GPL-2.0+
/*
 * Exercise 06: the thundering herd. (docs/exercises/06-herd.md)
 * REFERENCE SOLUTION (for teachers): edge-triggered kevents, read until
 * EAGAIN.
 *
 *   ex06_answer PORT CLIENTS    serve CLIENTS connections, then exit
 *
 * An echo server with a pool of THREADS threads that all wait on one
 * kevent queue. It works: every byte comes back. But each message a client
 * sends wakes more than one thread, where one would do. Find out why in the
 * trace the lab records (the kevent_wake tracepoint names every thread a
 * wake-up woke), then change the server so that each message wakes one
 * thread, with the same four threads and without losing a byte.
 *
 * What you change: the parts marked TODO. What stays: THREADS threads on
 * one queue, the KTAP line the lab reads.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "kselftest.h"
#include "kevent_user.h"

#define THREADS		4
#define MAX_FD		1024

static int kq, ls, clients, served;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t accept_lock = PTHREAD_MUTEX_INITIALIZER;
/* One thread at a time on a connection. */
static pthread_mutex_t conn_lock[MAX_FD];
static int conn_open[MAX_FD];

static int finished(void)
{
	int done;

	pthread_mutex_lock(&state_lock);
	done = served >= clients;
	pthread_mutex_unlock(&state_lock);
	return done;
}

/*
 * ADD a KEVENT_SOCKET kevent for @fd: edge triggered, so that a kevent is
 * queued, and wakes a thread, once per arrival, not again when WAIT has
 * delivered it and the data is still unread.
 */
static void watch(int fd, unsigned int event)
{
	struct ukevent uk = kevent_fd(fd, KEVENT_SOCKET, event, KEVENT_REQ_ET);

	if (kevent_add(kq, &uk, 1) != 1)
		ksft_exit_fail_msg("ADD fd %d: %s\n", fd, strerror(uk.ret_data[0]));
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EAGAIN)
			continue;	/* small messages: the socket takes them soon */
		if (w < 0)
			return -1;
		buf += w;
		len -= w;
	}
	return 0;
}

/*
 * Echo what connection @fd has to read. Returns 1 when the connection is
 * over (the client shut down, or an error), 0 when it stays open.
 *
 * Edge triggered: no event comes for data that is already there, so read
 * until the socket says EAGAIN.
 */
static int echo(int fd)
{
	char buf[4096];

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r == 0)
			return 1;
		if (r < 0)
			return errno != EAGAIN;
		if (write_all(fd, buf, r) < 0)
			return 1;
	}
}

static void accept_all(void)
{
	int fd;

	pthread_mutex_lock(&accept_lock);
	while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
		if (fd >= MAX_FD)
			ksft_exit_fail_msg("connection fd %d\n", fd);
		pthread_mutex_lock(&conn_lock[fd]);
		conn_open[fd] = 1;
		pthread_mutex_unlock(&conn_lock[fd]);
		watch(fd, KEVENT_SOCKET_RECV);
	}
	pthread_mutex_unlock(&accept_lock);
}

static void *worker(void *arg)
{
	struct ukevent ev;

	while (!finished()) {
		/* A limit, so that a thread sees that the others finished. */
		long n = kevent_wait(kq, &ev, 1, 200);
		int fd = ev.id.raw[0];

		if (n < 0)
			ksft_exit_fail_msg("WAIT: %s\n", strerror(errno));
		if (n == 0)
			continue;
		if (fd == ls) {
			accept_all();
			continue;
		}
		pthread_mutex_lock(&conn_lock[fd]);
		if (conn_open[fd] && echo(fd)) {
			struct ukevent uk = kevent_fd(fd, KEVENT_SOCKET, 0, 0);

			kevent_remove(kq, &uk, 1);
			close(fd);
			conn_open[fd] = 0;
			pthread_mutex_lock(&state_lock);
			served++;
			pthread_mutex_unlock(&state_lock);
		}
		pthread_mutex_unlock(&conn_lock[fd]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	pthread_t t[THREADS];
	int one = 1, i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PORT CLIENTS\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(1);
	sa.sin_port = htons(atoi(argv[1]));
	clients = atoi(argv[2]);
	for (i = 0; i < MAX_FD; i++)
		pthread_mutex_init(&conn_lock[i], NULL);
	kq = kevent_init();
	ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (kq < 0 || ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 64))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	watch(ls, KEVENT_SOCKET_ACCEPT);
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ksft_test_result(served == clients, "served_all_clients\n");
	ksft_finished();
}
