// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_reliability_test: the bugs of issue 14 ("Reliability, round 2"),
 * one test each, from user space. Each of them failed on the kernel before
 * its fix (the note before each test says how); run them on the debug
 * kernel too (make lab-run PROFILE=debug LAB=reliability), where lockdep
 * and KASAN see what a uniprocessor guest cannot.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000	/* ms: "it arrives" */
#define NEVER 200	/* ms: "it does not arrive" */

#define kpoll(fd, event, flags) kevent_fd(fd, KEVENT_POLL, event, flags)

/*
 * Finding 7: WAIT(num=2) with one level-triggered kevent still ready and a
 * second one that is no longer ready returned the first one twice: the
 * harvest put it back on the ready list and the next turn of WAIT's loop
 * harvested it again. docs/abi.md: at most once per WAIT.
 */
TEST(level_kevent_once_per_wait)
{
	struct ukevent uk[2], out[4];
	int kq = kevent_init(), s[2], p[2];
	char c;

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s));
	ASSERT_EQ(0, pipe2(p, O_NONBLOCK));
	ASSERT_EQ(1, write(s[1], "x", 1));
	ASSERT_EQ(1, write(p[1], "y", 1));
	uk[0] = kpoll(s[0], KEVENT_POLL_POLLIN, 0);
	uk[1] = kpoll(p[0], KEVENT_POLL_POLLIN, 0);
	ASSERT_EQ(2, kevent_add(kq, uk, 2));
	/* Both are queued ready; the pipe's condition goes away. */
	ASSERT_EQ(1, read(p[0], &c, 1));
	memset(out, 0, sizeof(out));
	/* The socket once, then nothing else is ready: the timeout ends it. */
	ASSERT_EQ(1, kevent_wait(kq, out, 2, NEVER));
	EXPECT_EQ(s[0], out[0].id.raw[0]);
	/* Still readable: the next WAIT delivers it again, once. */
	ASSERT_EQ(1, kevent_wait(kq, out, 4, NEVER));
	EXPECT_EQ(s[0], out[0].id.raw[0]);
	/* The whole queue still works, and once drained, nothing comes. */
	ASSERT_EQ(1, read(s[0], &c, 1));
	EXPECT_EQ(0, kevent_wait(kq, out, 2, NEVER));
	close(s[0]);
	close(s[1]);
	close(p[0]);
	close(p[1]);
	close(kq);
}

/* Two still-ready level kevents and WAIT(num=3): each once. */
TEST(two_level_kevents_once_each)
{
	struct ukevent uk[2], out[3];
	int kq = kevent_init(), a[2], b[2];

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pipe2(a, O_NONBLOCK));
	ASSERT_EQ(0, pipe2(b, O_NONBLOCK));
	ASSERT_EQ(1, write(a[1], "a", 1));
	ASSERT_EQ(1, write(b[1], "b", 1));
	uk[0] = kpoll(a[0], KEVENT_POLL_POLLIN, 0);
	uk[1] = kpoll(b[0], KEVENT_POLL_POLLIN, 0);
	ASSERT_EQ(2, kevent_add(kq, uk, 2));
	ASSERT_EQ(2, kevent_wait(kq, out, 3, NEVER));
	EXPECT_NE(out[0].id.raw[0], out[1].id.raw[0]);
	/* And a WAIT for one takes one, the other stays ready. */
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 0));
	EXPECT_EQ(2, kevent_ready(kq));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(kq);
}

/*
 * Finding 1: a kevent queue and an epoll instance that watch each other.
 * A wake-up of the queue ran epoll's callback, which woke the epoll file's
 * waiters, the queue's KEVENT_POLL watch among them, which woke the queue
 * again under its own wait lock: lockdep's "possible recursive locking"
 * on the debug kernel, a hard lockup on SMP. epoll checks loops only
 * through epoll files, and a kevent queue does not know which files an
 * epoll instance watches, so a queue does not watch epoll instances at all
 * (ELOOP), in either order of setting up.
 */
TEST(queue_and_epoll_watching_each_other)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ukevent watch, timer = kevent_timer(1, 0, KEVENT_REQ_ONESHOT), out;
	int kq = kevent_init(), ep = epoll_create1(0);

	ASSERT_GE(kq, 0);
	ASSERT_GE(ep, 0);
	ev.data.fd = kq;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, kq, &ev));
	watch = kpoll(ep, KEVENT_POLL_POLLIN, 0);
	EXPECT_EQ(0, kevent_add(kq, &watch, 1));
	EXPECT_ENTRY_FAILS_WITH(ELOOP, watch, "an epoll instance that watches the queue");
	/* The timer's wake-up goes to the queue and through epoll: once. */
	ASSERT_EQ(1, kevent_add(kq, &timer, 1));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, SOON));
	EXPECT_EQ(kq, ev.data.fd);
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_TIMER, out.type);
	EXPECT_EQ(0, kevent_wait(kq, &out, 1, NEVER));
	close(ep);
	close(kq);
}

/* The other order: the queue first, epoll closes the loop afterwards. */
TEST(queue_watches_epoll_before_epoll_watches_it)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ukevent watch, timer = kevent_timer(1, 0, KEVENT_REQ_ONESHOT), out;
	int q1 = kevent_init(), q2 = kevent_init(), ep = epoll_create1(0);

	ASSERT_GE(q1, 0);
	ASSERT_GE(q2, 0);
	ASSERT_GE(ep, 0);
	watch = kpoll(ep, KEVENT_POLL_POLLIN, 0);
	EXPECT_EQ(0, kevent_add(q2, &watch, 1));
	EXPECT_ENTRY_FAILS_WITH(ELOOP, watch, "an epoll instance");
	/* A chain q2 -> ep -> q1: epoll may watch a queue, as before. */
	ev.data.fd = q1;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, q1, &ev));
	ev.data.fd = q2;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, q2, &ev));
	ASSERT_EQ(1, kevent_add(q1, &timer, 1));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, SOON));
	EXPECT_EQ(q1, ev.data.fd);
	ASSERT_EQ(1, kevent_wait(q1, &out, 1, SOON));
	EXPECT_EQ(0, kevent_queued(q2));
	close(ep);
	close(q1);
	close(q2);
}

/*
 * Finding 10, first part: MODIFY that clears KEVENT_REQ_ONESHOT on a
 * oneshot timer that fired but was not delivered yet left a periodic
 * kevent whose hrtimer had stopped for good: one event, then never again.
 */
TEST(modify_oneshot_timer_to_periodic_after_it_fired)
{
	struct ukevent uk = kevent_timer(20, 0, KEVENT_REQ_ONESHOT), out;
	int kq = kevent_init();

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	usleep(100 * 1000);
	EXPECT_EQ(1, kevent_ready(kq));
	uk.req_flags = 0;
	ASSERT_EQ(1, kevent_modify(kq, &uk, 1));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(0, out.req_flags);
	/* Periodic now: it keeps firing, and stays on the queue. */
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(1, kevent_queued(kq));
	close(kq);
}

/*
 * Finding 10, second part: a rename within a watched directory is one
 * change (reported as CREATE and REMOVE), but ret_data[1] counted two.
 */
TEST(rename_within_a_directory_is_one_change)
{
	const char *base = getenv("KEVENT_INODE_TEST_DIR") ?: "/tmp";
	char d[256], f[300], g[300];
	struct ukevent uk, out;
	int kq = kevent_init(), dfd;

	ASSERT_GE(kq, 0);
	snprintf(d, sizeof(d), "%s/kevent-rel-%d", base, getpid());
	snprintf(f, sizeof(f), "%s/f", d);
	snprintf(g, sizeof(g), "%s/g", d);
	ASSERT_EQ(0, mkdir(d, 0755));
	close(open(f, O_CREAT | O_WRONLY, 0644));
	dfd = open(d, O_RDONLY | O_DIRECTORY);
	ASSERT_GE(dfd, 0);
	uk = kevent_fd(dfd, KEVENT_INODE, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	ASSERT_EQ(0, rename(f, g));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, out.ret_data[0]);
	EXPECT_EQ(1, out.ret_data[1]);
	/* Two renames are two changes. */
	ASSERT_EQ(0, rename(g, f));
	ASSERT_EQ(0, rename(f, g));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(2, out.ret_data[1]);
	/* A kevent that asked for CREATE only counts the rename once too. */
	uk.event = KEVENT_INODE_CREATE;
	ASSERT_EQ(1, kevent_modify(kq, &uk, 1));
	ASSERT_EQ(0, rename(g, f));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_INODE_CREATE, out.ret_data[0]);
	EXPECT_EQ(1, out.ret_data[1]);
	close(dfd);
	close(kq);
	unlink(f);
	rmdir(d);
}

/*
 * Finding 8: WAIT checked that its output area was writable, slept, took
 * the events off the queue (destroying oneshot ones) and only then copied
 * them out. Another thread that write-protected the area meanwhile made
 * WAIT fail with EFAULT after the events were gone. Now the area is pinned
 * when WAIT starts: the event is written all the same and WAIT returns it.
 */
static void *protect_later(void *page)
{
	usleep(50 * 1000);
	mprotect(page, 4096, PROT_READ);
	return NULL;
}

TEST(wait_output_write_protected_while_waiting)
{
	struct ukevent timer = kevent_timer(300, 0, KEVENT_REQ_ONESHOT), out;
	struct kevent_user_control ctl = { KEVENT_CTL_WAIT, 1, SOON };
	int kq = kevent_init();
	pthread_t t;
	char *page;
	long ret;

	ASSERT_GE(kq, 0);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memcpy(page, &ctl, sizeof(ctl));
	ASSERT_EQ(1, kevent_add(kq, &timer, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, protect_later, page));
	ret = sys_kevent_ctl(kq, page);
	pthread_join(t, NULL);
	/* Nothing lost: the event was written, or it is still queued. */
	if (ret < 0)
		TH_LOG("WAIT failed with errno %d; kevents left on the queue: %d",
		       errno, kevent_queued(kq));
	ASSERT_EQ(1, ret);
	memcpy(&out, page + KEVENT_CTL_SIZE, sizeof(out));
	EXPECT_EQ(KEVENT_TIMER, out.type);
	EXPECT_EQ(300, out.id.raw[0]);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	munmap(page, 4096);
	close(kq);
}

/* A write-protected output area is refused before anything is taken. */
TEST(wait_output_read_only_is_efault_and_loses_nothing)
{
	struct ukevent timer = kevent_timer(10, 0, KEVENT_REQ_ONESHOT), out;
	struct kevent_user_control ctl = { KEVENT_CTL_WAIT, 1, SOON };
	int kq = kevent_init();
	char *page;

	ASSERT_GE(kq, 0);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memcpy(page, &ctl, sizeof(ctl));
	ASSERT_EQ(0, mprotect(page, 4096, PROT_READ));
	ASSERT_EQ(1, kevent_add(kq, &timer, 1));
	usleep(50 * 1000);
	EXPECT_EQ(-1, sys_kevent_ctl(kq, page));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_TIMER, out.type);
	munmap(page, 4096);
	close(kq);
}

/* How many hrtimers of kevent are queued now, from /proc/timer_list. */
static int kevent_timers_armed(void)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "kevent_timer_fire"))
			n++;
	fclose(f);
	return n;
}

/*
 * Finding 5: a periodic timer re-armed itself in hard-irq context every
 * period whether or not anyone read its events: a queue of 65536 timers of
 * 1 ms, nobody reading, was 65 million interrupts a second. Now a timer
 * whose event waits for delivery stops at its next expiry, and the WAIT
 * that delivers the event counts the periods missed meanwhile and re-arms
 * it. Before the fix the timer stayed armed (in /proc/timer_list) all the
 * time.
 */
TEST(periodic_timer_stops_while_undelivered)
{
	struct ukevent uk = kevent_timer(20, 0, 0), out;
	int kq = kevent_init(), armed;

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, kevent_timers_armed());
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	EXPECT_EQ(1, kevent_timers_armed());
	usleep(500 * 1000);
	armed = kevent_timers_armed();
	EXPECT_EQ(0, armed) TH_LOG("a 20 ms timer nobody reads is still armed");
	/* The delivery counts every period, missed ones included. */
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_GE(out.ret_data[0], 24);
	/* And it runs again, with the next delivery counting from there. */
	EXPECT_EQ(1, kevent_timers_armed());
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_GE(out.ret_data[0], 1);
	EXPECT_LT(out.ret_data[0], 24);
	close(kq);
}

/*
 * Finding 10, the third part: a send that had to wait for its socket
 * decided whether to back off from the socket's state after the worker had
 * dropped ns->lock, when a REMOVE could already have ended the request and
 * put the socket it held. Test kernels widen that moment on request
 * (naio_window_ms): the request is cancelled and the socket closed inside
 * it (a trace shows the worker's send at -EAGAIN, then the window), and
 * the socket's memory goes back to the page allocator there (below). On
 * the debug kernel, the old order failed as "BUG: KASAN: use-after-free in
 * kevent_naio_run", a read of size 1 (sk->sk_state) on a freed page.
 */
#define NAIO_WINDOW "/sys/module/kevent_naio/parameters/naio_window_ms"

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

static int set_naio_window(const char *ms)
{
	return write_file(NAIO_WINDOW, ms);
}

/* Closes a TCP socket with a reset: its memory is freed now, not after FIN. */
static void close_abort(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* A connected loopback TCP pair; s[0] asynchronous, with little room. */
static int small_tcp_pair(int s[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0), small = 4096;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 1) ||
	    getsockname(ls, (void *)&sa, &len))
		return -1;
	s[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (s[0] < 0 || setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) ||
	    connect(s[0], (void *)&sa, sizeof(sa)))
		return -1;
	s[1] = accept(ls, NULL, NULL);
	close(ls);
	if (s[1] < 0 || setsockopt(s[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)))
		return -1;
	return kevent_set_async(s[0], 1);
}

TEST(naio_send_cancelled_while_its_worker_lets_go)
{
	static char fill[65536];
	struct ukevent ev;
	int kq, s[2], flags;
	char *buf;
	long id;

	if (access(NAIO_WINDOW, W_OK))
		SKIP(return, "no %s: a kernel without CONFIG_KEVENT_KUNIT_TEST", NAIO_WINDOW);
	kq = kevent_init();
	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, small_tcp_pair(s));
	/* The peer reads nothing: fill the way until a send must wait. */
	flags = fcntl(s[0], F_GETFL);
	ASSERT_EQ(0, fcntl(s[0], F_SETFL, flags | O_NONBLOCK));
	while (write(s[0], fill, sizeof(fill)) > 0)
		;
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, fcntl(s[0], F_SETFL, flags));
	buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);

	ASSERT_EQ(0, set_naio_window("500"));
	id = kevent_aio_send(kq, s[0], buf, 1 << 20, 0);
	ASSERT_GE(id, 0);
	/* The worker finds no room, drops the lock and sleeps in the window. */
	usleep(100 * 1000);
	ev = kevent_fd(s[0], KEVENT_NAIO, KEVENT_SOCKET_SEND, 0);
	ev.id.raw[1] = id;
	EXPECT_EQ(1, kevent_remove(kq, &ev, 1));	/* cancels, puts its socket */
	close_abort(s[0]);				/* the socket's last reference */
	close_abort(s[1]);
	/*
	 * TCP sockets come from a SLAB_TYPESAFE_BY_RCU cache: a freed one stays
	 * a socket's memory, and KASAN says nothing of a read of it. So give
	 * the memory back: with no TCP socket left in the guest, the cache's
	 * slabs are empty, and shrinking it frees their pages (after an RCU
	 * grace period). A worker that still read the socket after it let go
	 * of ns->lock would now read a freed page, which KASAN reports (the
	 * debug profile fails on it). No slab sysfs: the socket just stays.
	 */
	usleep(100 * 1000);				/* the deferred fput */
	write_file("/sys/kernel/slab/TCP/shrink", "1");
	usleep(500 * 1000);				/* the window ends */
	EXPECT_EQ(0, set_naio_window("0"));
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_EQ(0, kevent_wait(kq, &ev, 1, NEVER));
	munmap(buf, 1 << 20);
	close(kq);
}

TEST_HARNESS_MAIN
