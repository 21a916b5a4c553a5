// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_reliability_test: the bugs of issue 14 ("Reliability, round 2")
 * and of issue 32 ("Reliability, round 3": defect 4 and the suspected
 * items it confirmed), one test each, from user space. Each of them failed on the kernel before its fix (the note
 * before each test says how); run them on the debug
 * kernel too (make lab-run PROFILE=debug LAB=reliability), where lockdep
 * and KASAN see what a uniprocessor guest cannot.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <termios.h>

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
	/*
	 * A period of 200 ms, not 20: between the WAIT that re-arms the timer
	 * and the look at /proc/timer_list a whole period must not pass, and
	 * on the emulated lockdep/KASAN kernel of lab smp reading that file
	 * took longer than 20 ms (the timer had fired and stopped again).
	 */
	struct ukevent uk = kevent_timer(200, 0, 0), out;
	int kq = kevent_init(), armed;

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, kevent_timers_armed());
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	EXPECT_EQ(1, kevent_timers_armed());
	usleep(2000 * 1000);
	armed = kevent_timers_armed();
	EXPECT_EQ(0, armed) TH_LOG("a 200 ms timer nobody reads is still armed");
	/* The delivery counts every period, missed ones included. */
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_GE(out.ret_data[0], 9);
	/* And it runs again, with the next delivery counting from there. */
	EXPECT_EQ(1, kevent_timers_armed());
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	EXPECT_GE(out.ret_data[0], 1);
	EXPECT_LT(out.ret_data[0], 9);
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

/* A KEVENT_SIGNAL kevent for @sig on the calling process. */
static struct ukevent ksig(int sig, unsigned int flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = sig;
	uk.id.raw[1] = flags;
	uk.type = KEVENT_SIGNAL;
	uk.event = KEVENT_SIGNAL_RECEIVED;
	return uk;
}

/*
 * Issue 32, suspected and confirmed: each signal sent to a process walks
 * every KEVENT_SIGNAL kevent of the process, on all its queues, under its
 * siglock with interrupts off, and nothing but the user's max_kevents (some
 * 60000) bounded them. Now a process has at most 1024 (docs/abi.md): the
 * next is ENOSPC, and a closed queue gives its places back. Before the fix
 * the 1025th was added.
 */
#define SIGNAL_KEVENTS_MAX 1024

TEST(signal_kevents_of_a_process_are_capped)
{
	int kq[10], extra, q = 0, sig, f, n = 0;
	struct ukevent uk;

	/* Each queue: every signal but SIGKILL and SIGSTOP, taken and not. */
	while (n < SIGNAL_KEVENTS_MAX) {
		ASSERT_GT(10, q);
		kq[q] = kevent_init();
		ASSERT_GE(kq[q], 0);
		for (sig = 1; sig <= 64 && n < SIGNAL_KEVENTS_MAX; sig++) {
			if (sig == SIGKILL || sig == SIGSTOP)
				continue;
			for (f = 0; f < 2 && n < SIGNAL_KEVENTS_MAX; f++, n++) {
				uk = ksig(sig, f ? KEVENT_SIGNAL_NOMASK : 0);
				ASSERT_LE(0, kevent_add(kq[q], &uk, 1));
				ASSERT_EQ(0, uk.ret_flags)
					TH_LOG("kevent %d refused: errno %u", n, uk.ret_data[0]);
			}
		}
		q++;
	}
	extra = kevent_init();
	ASSERT_GE(extra, 0);
	uk = ksig(SIGUSR1, 0);
	ASSERT_LE(0, kevent_add(extra, &uk, 1));
	EXPECT_EQ(KEVENT_RET_BROKEN, uk.ret_flags);
	EXPECT_EQ(ENOSPC, uk.ret_data[0]);
	EXPECT_EQ(0, kevent_queued(extra));
	close(kq[0]);
	uk = ksig(SIGUSR1, 0);
	ASSERT_LE(0, kevent_add(extra, &uk, 1));
	EXPECT_EQ(0, uk.ret_flags);
	EXPECT_EQ(1, kevent_queued(extra));
	while (--q > 0)
		close(kq[q]);
	close(extra);
}

/*
 * Active objects of slab cache @name (/proc/slabinfo, root only), or -1.
 * The cache is shrunk first: that also empties KASAN's quarantine of it,
 * where the debug kernel keeps freed objects for a while.
 */
static long slab_active(const char *name)
{
	char line[512], cache[64];
	long active = -1, n;
	FILE *f;

	snprintf(line, sizeof(line), "/sys/kernel/slab/%s/shrink", name);
	write_file(line, "1");
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", cache, &n) == 2 && !strcmp(cache, name))
			active = n;
	fclose(f);
	return active;
}

/*
 * Forks @n children, one at a time, each of which adds a KEVENT_SIGNAL
 * kevent to @kq (none if @kq is -1) and exits; reaps them. Returns how many
 * did not exit with 0.
 */
static int children_with_signal_kevents(int kq, int n)
{
	int i, bad = 0, status;

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (!pid) {
			/* One queue holds one kevent per signal and flags. */
			int sig = 1 + i % 62;
			struct ukevent uk;

			if (kq < 0)
				_exit(0);
			sig += sig >= SIGKILL;
			sig += sig >= SIGSTOP;
			uk = ksig(sig, i < 62 ? 0 : KEVENT_SIGNAL_NOMASK);
			_exit(kevent_add(kq, &uk, 1) < 0 || uk.ret_flags);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status)
			bad++;
	}
	usleep(300 * 1000);	/* reaped tasks are freed after an RCU grace period */
	return bad;
}

/*
 * Issue 32, suspected and confirmed: a KEVENT_SIGNAL kevent held the
 * task_struct of the thread that added it (some 10 KiB) for as long as its
 * queue lived, long after that process had exited and been reaped. It holds
 * the process's signal_struct now, the storage it watches. Here 100
 * children each add one to a queue their parent keeps, and exit; before
 * the fix their 100 task_structs stayed. First 100 children without a
 * kevent show that reaped tasks leave the slab here at all (KASAN's
 * quarantine keeps freed objects, which the cache's shrink lets go).
 */
TEST(signal_kevents_of_exited_processes_keep_no_task)
{
	const int n = 100;
	long before, mid, after;
	int kq;

	before = slab_active("task_struct");
	if (before < 0)
		SKIP(return, "no task_struct in /proc/slabinfo");
	ASSERT_EQ(0, children_with_signal_kevents(-1, n));
	mid = slab_active("task_struct");
	if (mid - before > n / 2)
		SKIP(return, "%ld task_structs before %d children, %ld after: freed ones stay "
		     "allocated here", before, n, mid);
	kq = kevent_init();
	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, children_with_signal_kevents(kq, n));
	EXPECT_EQ(n, kevent_queued(kq));
	after = slab_active("task_struct");
	EXPECT_GT(mid + n / 2, after)
		TH_LOG("%ld task_structs before, %ld with %d exited processes' kevents",
		       mid, after, n);
	close(kq);
}

/*
 * Issue 32, suspected and confirmed: a background process that reads its
 * terminal is sent SIGTTIN, and the read is to be restarted once the signal
 * has stopped it. A kevent of the process that took the signal left the
 * restart to happen at once, for ever: the process spun. The same for
 * SIGTTOU and a write with TOSTOP. Now the terminal treats a signal that a
 * kevent takes as blocked, as with signalfd: the read fails with EIO, the
 * write goes on. Before the fix both calls spun until SIGALRM killed them
 * (exit codes 30 and 31 below).
 */
static int background_call(int tty, int sig, bool write_it)
{
	struct ukevent uk = ksig(sig, 0);
	int kq = kevent_init();
	char c = 'x';

	if (kq < 0 || kevent_add(kq, &uk, 1) < 0 || uk.ret_flags)
		return 10;
	alarm(5);	/* a spin ends here: SIGALRM is not taken */
	if (write_it)
		return write(tty, &c, 1) == 1 ? 0 : 11;
	return read(tty, &c, 1) == -1 && errno == EIO ? 0 : 12;
}

static int session_with_a_background_job(const char *name)
{
	struct termios t;
	int tty, w;

	if (setsid() < 0)
		return 20;
	tty = open(name, O_RDWR);	/* the session's controlling terminal */
	if (tty < 0 || tcgetattr(tty, &t))
		return 21;
	t.c_lflag |= TOSTOP;
	if (tcsetattr(tty, TCSANOW, &t))
		return 22;
	for (w = 0; w < 2; w++) {
		pid_t job = fork();
		int status;

		if (!job) {
			setpgid(0, 0);	/* not the terminal's process group */
			_exit(background_call(tty, w ? SIGTTOU : SIGTTIN, w));
		}
		if (job < 0 || waitpid(job, &status, 0) != job)
			return 23;
		if (!WIFEXITED(status))
			return 30 + w;
		if (WEXITSTATUS(status))
			return WEXITSTATUS(status);
	}
	return 0;
}

TEST(taken_sigttin_and_sigttou_do_not_make_a_background_job_spin)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY), status;
	pid_t pid;

	ASSERT_LE(0, master);
	ASSERT_EQ(0, grantpt(master));
	ASSERT_EQ(0, unlockpt(master));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(session_with_a_background_job(ptsname(master)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("30: the read spun; 31: the write spun; else see the test");
	close(master);
}

/*
 * Issue 32, a suspected lost wake-up, confirmed: a posted receive whose
 * ring is full parks, and the queue's next wait call resumes it
 * (kevent_naio_resume()). The worker found the ring full, then parked; a
 * consumer that made room and called WAIT between the two found nothing
 * parked and slept, while the rest of the stream waited in the socket
 * (TCP's window shut, so nothing else would come to wake it). Test kernels
 * hold the worker between the two (naio_park_window_ms). Before the fix
 * the WAIT below returned 0 after 5 s, and only a second one resumed it.
 */
#define PARK_WINDOW "/sys/module/kevent_naio/parameters/naio_park_window_ms"

TEST(posted_receive_parks_after_the_wait_that_would_resume_it)
{
	const size_t len = 4096, hdr = sizeof(struct kevent_naio_posted);
	struct kevent_naio_posted *rx;
	static char tx[3 * 4096];
	struct ukevent ev;
	int kq, s[2], i;

	if (access(PARK_WINDOW, W_OK))
		SKIP(return, "no %s: a kernel without CONFIG_KEVENT_KUNIT_TEST", PARK_WINDOW);
	kq = kevent_init();
	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, kevent_tcp_pair(s));
	rx = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rx);
	ASSERT_LE(0, kevent_aio_recv(kq, s[1], rx, hdr + len, KEVENT_NAIO_RECV_POSTED));

	ASSERT_EQ(0, write_file(PARK_WINDOW, "1000"));
	ASSERT_EQ((ssize_t)sizeof(tx), write(s[0], tx, sizeof(tx)));
	/* The ring filled (one event), then the worker found it full. */
	for (i = 0; i < 5000 && !__atomic_load_n(&rx->flags, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	ASSERT_EQ(KEVENT_NAIO_POSTED_FULL, rx->flags);
	ASSERT_EQ(1, kevent_wait(kq, &ev, 1, NEVER));
	EXPECT_EQ(len, ev.ret_data[0]);
	/* Room for all of it, and a wait, while the worker has not parked. */
	__atomic_store_n(&rx->tail, rx->head, __ATOMIC_RELEASE);
	EXPECT_EQ(1, kevent_wait(kq, &ev, 1, SOON))
		TH_LOG("the wait slept: the receive parked after it looked");
	EXPECT_EQ(0, write_file(PARK_WINDOW, "0"));
	EXPECT_LT(len, __atomic_load_n(&rx->head, __ATOMIC_ACQUIRE));
	close(kq);
	close(s[0]);
	close(s[1]);
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	munmap(rx, 2 * 4096);
}

/*
 * Issue 32, defect 4: the array of aio_submit() stays the caller's while
 * the call runs, and another thread can take its pages away between two
 * requests. The call stops at the first entry whose result it cannot
 * write and says what started (docs/abi.md). Test kernels hold the call
 * after each request it started (naio_submit_window_ms); a thread unmaps
 * a page of the array right there. Before the fix the call wrote every
 * result back at the end and failed with EFAULT while its requests ran:
 * both tests below failed on it (-1 where 1 is expected, and the entries
 * after the lost page started too).
 */
#define SUBMIT_WINDOW "/sys/module/kevent_naio/parameters/naio_submit_window_ms"

/* One send of @size bytes from @buf on @sock, its result not written yet. */
static struct kevent_naio_sub send_sub(int sock, void *buf, size_t size)
{
	struct kevent_naio_sub s = {
		.op = KEVENT_NAIO_OP_SEND, .sock = sock, .fd = -1,
		.buf = (unsigned long)buf, .size = size, .result = 12345,
	};
	return s;
}

struct unmapper {
	pid_t tid;		/* the thread in aio_submit() */
	void *page;		/* what to unmap while it is held */
	int err;
};

/* The state letter of thread @tid ('D': asleep, uninterruptibly), or 0. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	paren = strrchr(buf, ')');
	return paren && paren[1] ? paren[2] : 0;
}

/*
 * Waits until the submitting thread sleeps in the window, unmaps, and
 * closes the window: the first one is the only one the test needs.
 */
static void *unmap_in_window(void *arg)
{
	struct unmapper *u = arg;
	int i;

	for (i = 0; i < 5000 && thread_state(u->tid) != 'D'; i++)
		usleep(1000);
	u->err = thread_state(u->tid) != 'D' ? ETIMEDOUT :
		 munmap(u->page, 4096) ? errno :
		 write_file(SUBMIT_WINDOW, "0") ? EIO : 0;
	return NULL;
}

/* aio_submit(@subs, @nr) while a thread unmaps @page in the first window. */
static long submit_losing_a_page(struct __test_metadata *_metadata, int kq,
				 struct kevent_naio_sub *subs, unsigned int nr,
				 void *page)
{
	struct unmapper u = { .tid = gettid(), .page = page };
	pthread_t t;
	long ret;

	ASSERT_EQ(0, write_file(SUBMIT_WINDOW, "1000"));
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_in_window, &u));
	ret = kevent_aio_submit(kq, subs, nr);
	EXPECT_EQ(0, write_file(SUBMIT_WINDOW, "0"));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, u.err);
	return ret;
}

FIXTURE(submit) {
	int kq;
	int s[2];
	char *tx;
};

FIXTURE_SETUP(submit)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, kevent_tcp_pair(self->s));
	self->tx = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->tx);
	memset(self->tx, 'x', 4096);
}

FIXTURE_TEARDOWN(submit)
{
	close(self->kq);
	close(self->s[0]);
	close(self->s[1]);
	EXPECT_EQ(0, kevent_wait_unpinned(SOON));
	munmap(self->tx, 4096);
}

/*
 * Entry 0 at the end of page 0; entry 1 starts page 1, which goes away
 * while entry 0's request is held; entry 104, the last, lies on page 2.
 * The call returns 1: entry 0 started and has its id; entry 1 did not
 * start (only entry 0's 100 bytes reach the peer); entry 104 was not
 * reached and reads -EAGAIN.
 */
TEST_F(submit, stops_where_its_array_went_away)
{
	const unsigned int nr = 105;
	struct kevent_naio_sub *subs;
	struct ukevent ev;
	char *pages, got[512];
	unsigned int i;

	if (access(SUBMIT_WINDOW, W_OK))
		SKIP(return, "no %s: a kernel without CONFIG_KEVENT_KUNIT_TEST", SUBMIT_WINDOW);
	pages = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	subs = (void *)(pages + 4096 - sizeof(*subs));
	ASSERT_LE(2 * 4096, (char *)&subs[nr - 1] - pages);
	subs[0] = send_sub(self->s[0], self->tx, 100);
	for (i = 1; i < nr; i++)
		subs[i] = send_sub(self->s[0], self->tx + 100, 200);

	ASSERT_EQ(1, submit_losing_a_page(_metadata, self->kq, subs, nr, pages + 4096));
	EXPECT_LE(0, subs[0].result);
	EXPECT_EQ(-EAGAIN, subs[nr - 1].result);
	ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
	EXPECT_EQ(subs[0].result, ev.id.raw[1]);
	EXPECT_EQ(100, ev.ret_data[0]);
	EXPECT_EQ(0, kevent_wait(self->kq, &ev, 1, NEVER));
	EXPECT_EQ(100, recv(self->s[1], got, sizeof(got), MSG_DONTWAIT));
	EXPECT_EQ(0, kevent_queued(self->kq));
	munmap(pages, 3 * 4096);
}

/*
 * The only entry's page goes away after its request started, before its
 * id could be written: the request runs, so the call counts it (1, not
 * EFAULT), and its completion, which names its socket and buffer, comes.
 */
TEST_F(submit, counts_a_started_request_whose_id_it_could_not_write)
{
	struct kevent_naio_sub *subs;
	struct ukevent ev;
	char *page, got[512];

	if (access(SUBMIT_WINDOW, W_OK))
		SKIP(return, "no %s: a kernel without CONFIG_KEVENT_KUNIT_TEST", SUBMIT_WINDOW);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	subs = (void *)page;
	subs[0] = send_sub(self->s[0], self->tx, 100);

	ASSERT_EQ(1, submit_losing_a_page(_metadata, self->kq, subs, 1, page));
	ASSERT_EQ(1, kevent_wait(self->kq, &ev, 1, SOON));
	EXPECT_EQ(KEVENT_NAIO, ev.type);
	EXPECT_EQ(self->s[0], ev.id.raw[0]);
	EXPECT_EQ((unsigned long)self->tx, ev.ptr);
	EXPECT_EQ(100, ev.ret_data[0]);
	EXPECT_EQ(100, recv(self->s[1], got, sizeof(got), MSG_DONTWAIT));
}

TEST_HARNESS_MAIN
