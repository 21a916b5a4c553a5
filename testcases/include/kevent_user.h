/* SPDX-License-Identifier: GPL-2.0+ */
/*
 * kevent_user.h: a small user-space library for the kevent system calls.
 *
 * The kernel reads the ukevent array right behind struct
 * kevent_user_control, at byte offset 12, where a C struct with a trailing
 * array could not put it (struct ukevent is 8-byte aligned). These helpers
 * build that layout in a buffer and copy the entries in and out.
 */
#ifndef KEVENT_USER_H
#define KEVENT_USER_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/kevent.h>

#ifndef __NR_aio_recv
#define __NR_aio_recv		451
#define __NR_aio_send		452
#define __NR_aio_sendfile	453
#define __NR_kevent_ctl		454
#endif

#define KEVENT_CTL_SIZE		sizeof(struct kevent_user_control)

#ifndef __NR_kevent_get_events
#define __NR_kevent_get_events	455
#endif

/* kevent_get_events(): between @min_nr and @max_nr events; @args may be NULL. */
static inline long kevent_get_events(int fd, unsigned int min_nr, unsigned int max_nr,
				     struct ukevent *out, const struct kevent_get_args *args)
{
	return syscall(__NR_kevent_get_events, fd, min_nr, max_nr, out, args);
}

#ifndef __NR_kevent_init
#define __NR_kevent_init	456
#endif

/* kevent_init(): a queue of kevent's later takes; @args may be NULL. */
static inline int sys_kevent_init(const struct kevent_init_args *args, size_t size)
{
	return syscall(__NR_kevent_init, args, size);
}

/* sys_kevent_init() with @flags (KEVENT_INIT_CLOEXEC). */
static inline int kevent_init_flags(unsigned long long flags)
{
	struct kevent_init_args args = { .flags = flags };

	return sys_kevent_init(&args, sizeof(args));
}

static inline long sys_kevent_ctl(int fd, void *ctl)
{
	return syscall(__NR_kevent_ctl, fd, ctl);
}

/* A new queue: its file descriptor, or -1 with errno set. */
static inline int kevent_init(void)
{
	struct kevent_user_control ctl = { .cmd = KEVENT_CTL_INIT };

	return sys_kevent_ctl(0, &ctl);
}

/*
 * Run @cmd on @n entries of @uk (copied in, and back out again), with
 * @timeout for WAIT. Returns what kevent_ctl() returns.
 */
static inline long kevent_cmd(int fd, unsigned int cmd, struct ukevent *uk,
			      unsigned int n, unsigned int timeout)
{
	struct kevent_user_control ctl = { cmd, n, timeout };
	size_t len = KEVENT_CTL_SIZE + (size_t)n * sizeof(*uk);
	char *buf = calloc(1, len);
	long ret;
	int err;

	if (!buf)
		return -1;
	memcpy(buf, &ctl, sizeof(ctl));
	if (n)
		memcpy(buf + KEVENT_CTL_SIZE, uk, n * sizeof(*uk));
	ret = sys_kevent_ctl(fd, buf);
	err = errno;
	if (n)
		memcpy(uk, buf + KEVENT_CTL_SIZE, n * sizeof(*uk));
	free(buf);
	errno = err;
	return ret;
}

static inline long kevent_add(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_ADD, uk, n, 0);
}

static inline long kevent_remove(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_REMOVE, uk, n, 0);
}

static inline long kevent_modify(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_MODIFY, uk, n, 0);
}

/* Wait for @num events or @timeout_ms; returns how many were written. */
static inline long kevent_wait(int fd, struct ukevent *out, unsigned int num,
			       unsigned int timeout_ms)
{
	return kevent_cmd(fd, KEVENT_CTL_WAIT, out, num, timeout_ms);
}

/* KEVENT_CTL_READY: post each entry's events to its KEVENT_USER kevent. */
static inline long kevent_post(int fd, struct ukevent *uk, unsigned int n)
{
	return kevent_cmd(fd, KEVENT_CTL_READY, uk, n, 0);
}

/* A KEVENT_USER kevent named @name (id.raw[0]) taking the bits of @mask. */
static inline struct ukevent kevent_user_event(unsigned int name, unsigned int mask,
					       unsigned int req_flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = name;
	uk.type = KEVENT_USER;
	uk.event = mask;
	uk.req_flags = req_flags;
	return uk;
}

/*
 * A thread asleep in WAIT for one event of a queue, without a time limit:
 * kevent_waiter_start(), then whatever should wake it, then
 * kevent_waiter_join(). @got is -2 until WAIT returned, then what it did.
 */
struct kevent_waiter {
	int kq;
	long got;
	struct ukevent out;
	pthread_t thread;
};

static inline void *kevent_waiter_run(void *arg)
{
	struct kevent_waiter *w = arg;

	w->got = kevent_wait(w->kq, &w->out, 1, KEVENT_WAIT_FOREVER);
	return NULL;
}

/* Starts @w on @kq and gives it 100 ms to fall asleep; 0 or an errno. */
static inline int kevent_waiter_start(struct kevent_waiter *w, int kq)
{
	int err;

	w->kq = kq;
	w->got = -2;
	err = pthread_create(&w->thread, NULL, kevent_waiter_run, w);
	if (!err)
		usleep(100 * 1000);
	return err;
}

static inline int kevent_waiter_join(struct kevent_waiter *w)
{
	return pthread_join(w->thread, NULL);
}

/*
 * The ready ring (docs/abi.md, "The ready ring"): a queue made by
 * kevent_init() with @entries slots, its ring mapped at *@ring. Returns the
 * queue's descriptor, or -1 with errno set (and nothing left open).
 */
static inline int kevent_ring_open(unsigned int entries, struct kevent_ring **ring)
{
	struct kevent_init_args args = { .ring_entries = entries };
	int kq = sys_kevent_init(&args, sizeof(args)), err;
	void *p;

	if (kq < 0)
		return -1;
	p = mmap(NULL, KEVENT_RING_SIZE(entries), PROT_READ | PROT_WRITE,
		 MAP_SHARED, kq, 0);
	if (p == MAP_FAILED) {
		err = errno;
		close(kq);
		errno = err;
		return -1;
	}
	*ring = p;
	return kq;
}

static inline void kevent_ring_close(int kq, struct kevent_ring *ring)
{
	munmap(ring, KEVENT_RING_SIZE(ring->mask + 1));
	close(kq);
}

/* Events in @r not taken yet. */
static inline unsigned int kevent_ring_pending(struct kevent_ring *r)
{
	return __atomic_load_n(&r->kidx, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->uidx, __ATOMIC_RELAXED);
}

/*
 * Take one event from @r into @ev without a system call: 1, or 0 when the
 * ring is empty. Any number of threads may take from one ring: each copies
 * a slot, then claims it by moving uidx on with a compare-and-swap, and
 * copies again if another thread claimed it first.
 */
static inline int kevent_ring_take(struct kevent_ring *r, struct ukevent *ev)
{
	unsigned int mask = r->mask;
	__u32 u = __atomic_load_n(&r->uidx, __ATOMIC_ACQUIRE);

	for (;;) {
		if (u == __atomic_load_n(&r->kidx, __ATOMIC_ACQUIRE))
			return 0;
		*ev = r->event[u & mask];
		/* Release: the copy is done before the kernel may reuse the slot. */
		if (__atomic_compare_exchange_n(&r->uidx, &u, u + 1, 0,
						__ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
			return 1;
	}
}

/*
 * Sleep, with one call, until @r holds @min_nr events or @timeout_ms passed
 * (< 0: no limit); it also moves in what waited for room. Returns how many
 * the ring holds, or -1 with errno set.
 */
static inline long kevent_ring_wait(int kq, unsigned int min_nr, long long timeout_ms)
{
	struct kevent_get_args args = {
		.timeout_ns = timeout_ms < 0 ? -1 : timeout_ms * 1000000LL,
	};

	return kevent_get_events(kq, min_nr, 0, NULL, &args);
}

/* CLOCK_MONOTONIC now, in ns: the clock of kevent's timeouts and timers. */
static inline long long kevent_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A KEVENT_TIMER request: @period_ms, told apart by @tag. */
static inline struct ukevent kevent_timer(unsigned int period_ms,
					  unsigned int tag,
					  unsigned int req_flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = period_ms;
	uk.id.raw[1] = tag;
	uk.type = KEVENT_TIMER;
	uk.event = KEVENT_TIMER_FIRED;
	uk.req_flags = req_flags;
	return uk;
}

/*
 * KEVENT_POSIX_TIMER: timer_create() that reports to kevent queue @kq. The
 * kernel reads the queue's descriptor where SIGEV_THREAD_ID reads the
 * thread's (the kernel's sigev_notify_kevent_fd); glibc passes the
 * sigevent through unchanged for anything but SIGEV_THREAD.
 */
#ifndef SIGEV_KEVENT
#define SIGEV_KEVENT	8
#endif

static inline int kevent_timer_create(int kq, clockid_t clock, void *ptr,
				      timer_t *timer)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_KEVENT;
	sev.sigev_value.sival_ptr = ptr;
	sev._sigev_un._tid = kq;
	return timer_create(clock, &sev, timer);
}

/* The kevent that timer_create() made for @timer of process @pid. */
static inline struct ukevent kevent_posix_timer(timer_t timer, pid_t pid)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = (unsigned int)(long)timer;
	uk.id.raw[1] = pid;
	uk.type = KEVENT_POSIX_TIMER;
	uk.event = KEVENT_POSIX_TIMER_EXPIRED;
	return uk;
}

/* A request on file descriptor @fd: KEVENT_POLL, KEVENT_SOCKET or KEVENT_INODE. */
static inline struct ukevent kevent_fd(int fd, unsigned int type,
				       unsigned int event, unsigned int req_flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = fd;
	uk.type = type;
	uk.event = event;
	uk.req_flags = req_flags;
	return uk;
}

/* A number queue @kq shows in /proc/self/fdinfo ("kevents", "ready"); -1 if unknown. */
static inline int kevent_fdinfo(int kq, const char *key)
{
	char path[64], line[256], name[32];
	int n = -1, v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", kq);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%31[^:]: %d", name, &v) == 2 && !strcmp(name, key)) {
			n = v;
			break;
		}
	fclose(f);
	return n;
}

/*
 * The event mask and req_flags of the kevent of queue @kq with the type and
 * id of @uk, as /proc/self/fdinfo lists it. Returns 0, or -1 if it is not
 * there.
 */
static inline int kevent_fdinfo_kevent(int kq, const struct ukevent *uk,
				       unsigned int *event, unsigned int *req_flags)
{
	unsigned int type, id0, id1, ev, fl;
	char path[64], line[256];
	int found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", kq);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "kevent: type:%u id:%u,%u event:%x req_flags:%x",
			   &type, &id0, &id1, &ev, &fl) == 5 &&
		    type == uk->type && id0 == uk->id.raw[0] && id1 == uk->id.raw[1]) {
			*event = ev;
			*req_flags = fl;
			found = 0;
			break;
		}
	fclose(f);
	return found;
}

/* How many kevents queue @kq holds; -1 if unknown. */
static inline int kevent_queued(int kq)
{
	return kevent_fdinfo(kq, "kevents");
}

/* How many events of queue @kq are ready for WAIT; -1 if unknown. */
static inline int kevent_ready(int kq)
{
	return kevent_fdinfo(kq, "ready");
}

/*
 * A descriptor that was open a moment ago and is closed now. It is a high
 * one, so that the files a test opens next do not take its number.
 */
static inline int kevent_closed_fd(void)
{
	int fd = open("/", O_RDONLY), high = -1;

	if (fd >= 0) {
		high = fcntl(fd, F_DUPFD, 512);
		close(fd);
		close(high);
	}
	return high;
}

/*
 * Whether queue @kq still works, after a call that it refused: a oneshot
 * timer added now is delivered by WAIT. Events that are ready before it are
 * taken and skipped, so check last. Returns NULL, or what went wrong.
 */
static inline const char *kevent_queue_check(int kq)
{
	static unsigned int tag = 0x6b657600;	/* apart from the tests' ids */
	struct ukevent uk = kevent_timer(1, ++tag, KEVENT_REQ_ONESHOT), out;
	int i;

	if (kevent_cmd(kq, KEVENT_CTL_ADD, &uk, 1, 0) != 1)
		return "ADD of a timer failed";
	for (i = 0; i < 64; i++) {
		long n = kevent_cmd(kq, KEVENT_CTL_WAIT, &out, 1, 5000);

		/*
		 * Task work of an io_uring (TIF_NOTIFY_SIGNAL) ends a WAIT with
		 * EINTR as it ends epoll_wait(): not the queue's fault.
		 */
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1)
			return "WAIT did not deliver the timer";
		if (out.type == KEVENT_TIMER && out.id.raw[1] == tag)
			return out.ret_flags == KEVENT_RET_DONE ? NULL :
				"the timer was delivered broken";
	}
	return "WAIT delivered other events only";
}

#ifdef __KSELFTEST_HARNESS_H
/* For kselftest_harness.h tests (included before this file). */

/* Queue @kq must still work. */
#define EXPECT_QUEUE_WORKS(kq) do {					\
	const char *__why = kevent_queue_check(kq);			\
	EXPECT_EQ(NULL, __why) TH_LOG("the queue no longer works: %s", __why); \
} while (0)

/* @call must return -1 with errno @err; @what names the case in a failure. */
#define EXPECT_FAILS_WITH(err, call, what) do {				\
	long __ret;							\
	int __err;							\
	errno = 0;							\
	__ret = (call);							\
	__err = errno;							\
	EXPECT_EQ(-1, __ret) TH_LOG("%s: returned %ld", (what), __ret);	\
	EXPECT_EQ((err), __err) TH_LOG("%s: errno %d (%s), not %s",	\
				      (what), __err, strerror(__err), #err); \
} while (0)

/* Entry @uk, written back by ADD, REMOVE or MODIFY, must have failed with @err. */
#define EXPECT_ENTRY_FAILS_WITH(err, uk, what) do {			\
	const struct ukevent __uk = (uk);				\
	EXPECT_EQ(KEVENT_RET_BROKEN, __uk.ret_flags)			\
		TH_LOG("%s: ret_flags %#x", (what), __uk.ret_flags);	\
	EXPECT_EQ((err), __uk.ret_data[0])				\
		TH_LOG("%s: ret_data[0] %u (%s), not %s", (what),	\
		       __uk.ret_data[0], strerror(__uk.ret_data[0]), #err); \
	EXPECT_EQ(0, __uk.ret_data[1]) TH_LOG("%s: ret_data[1]", (what)); \
} while (0)

/*
 * Each mask of @bad (@n of them) is refused with @err, for ADD of @other (a
 * kevent not on @kq) and for MODIFY of @held (on @kq, alone); @held keeps
 * its mask and @kq works on. The "no event bit of the type" rows.
 */
static inline void expect_masks_fail(struct __test_metadata *_metadata, int kq,
				     const struct ukevent *held, struct ukevent other,
				     const unsigned int *bad, unsigned int n, int err)
{
	unsigned int i, event = 0, flags;
	struct ukevent uk;
	char what[64];

	for (i = 0; i < n; i++) {
		uk = other;
		uk.event = bad[i];
		snprintf(what, sizeof(what), "ADD, event %#x", bad[i]);
		EXPECT_EQ(0, kevent_add(kq, &uk, 1)) TH_LOG("%s", what);
		EXPECT_ENTRY_FAILS_WITH(err, uk, what);
		uk = *held;
		uk.event = bad[i];
		snprintf(what, sizeof(what), "MODIFY, event %#x", bad[i]);
		EXPECT_EQ(0, kevent_modify(kq, &uk, 1)) TH_LOG("%s", what);
		EXPECT_ENTRY_FAILS_WITH(err, uk, what);
	}
	EXPECT_EQ(1, kevent_queued(kq));
	EXPECT_EQ(0, kevent_fdinfo_kevent(kq, held, &event, &flags));
	EXPECT_EQ(held->event, event) TH_LOG("a refused MODIFY changed the mask");
	EXPECT_QUEUE_WORKS(kq);
}

/*
 * A @type kevent (mask @event) on each descriptor that names no open file:
 * @closed (a descriptor of the type's kind, closed here once the queue is
 * made, so that nothing reuses its number), 9999 (never opened), -1, and
 * an O_PATH one when @with_path: each is refused with @err, nothing is
 * added, the queue works on.
 */
static inline void expect_unopened_fds_fail(struct __test_metadata *_metadata,
					    unsigned int type, unsigned int event,
					    int closed, int with_path, int err)
{
	static const char *const what[] = { "closed", "9999", "-1", "O_PATH" };
	int kq = kevent_init(), path = open("/", O_PATH), i, n = with_path ? 4 : 3;
	struct ukevent uk[4] = {
		kevent_fd(closed, type, event, 0),
		kevent_fd(9999, type, event, 0),
		kevent_fd(-1, type, event, 0),		/* 0xffffffff */
		kevent_fd(path, type, event, 0),
	};

	ASSERT_GE(kq, 0);
	ASSERT_GE(path, 0);
	ASSERT_EQ(0, close(closed));
	EXPECT_EQ(0, kevent_add(kq, uk, n));
	for (i = 0; i < n; i++)
		EXPECT_ENTRY_FAILS_WITH(err, uk[i], what[i]);
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(path);
	close(kq);
}

/*
 * A @type kevent (mask @event) on a file that has no poll(): a regular
 * file and a directory, each refused with @err; the queue works on.
 */
static inline void expect_unpollable_files_fail(struct __test_metadata *_metadata,
						unsigned int type, unsigned int event,
						int err)
{
	int kq = kevent_init(), file = open("/proc/self/stat", O_RDONLY);
	int dir = open("/", O_RDONLY | O_DIRECTORY);
	struct ukevent uk[2] = { kevent_fd(file, type, event, 0),
				 kevent_fd(dir, type, event, 0) };

	ASSERT_GE(kq, 0);
	ASSERT_GE(file, 0);
	ASSERT_GE(dir, 0);
	EXPECT_EQ(0, kevent_add(kq, uk, 2));
	EXPECT_ENTRY_FAILS_WITH(err, uk[0], "regular file");
	EXPECT_ENTRY_FAILS_WITH(err, uk[1], "directory");
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(file);
	close(dir);
	close(kq);
}
#endif

#ifndef SO_ASYNC_SOCK
#define SO_ASYNC_SOCK		76
#endif

/*
 * Network AIO: each call starts one request on TCP socket @s and returns its
 * id (id.raw[1] of the completion, whose id.raw[0] is @s), or -1 with errno.
 */
static inline long kevent_aio_send(int kq, int s, const void *buf, size_t size,
				   unsigned int flags)
{
	return syscall(__NR_aio_send, kq, s, buf, size, flags);
}

static inline long kevent_aio_recv(int kq, int s, void *buf, size_t size,
				   unsigned int flags)
{
	return syscall(__NR_aio_recv, kq, s, buf, size, flags);
}

/* Sends @size bytes of @fd from its current offset, which stays put. */
static inline long kevent_aio_sendfile(int kq, int fd, int s, size_t size,
				       unsigned int flags)
{
	return syscall(__NR_aio_sendfile, kq, fd, s, size, flags);
}

/* Let network AIO use socket @s (SO_ASYNC_SOCK). */
static inline int kevent_set_async(int s, int on)
{
	return setsockopt(s, SOL_SOCKET, SO_ASYNC_SOCK, &on, sizeof(on));
}

/* A connected TCP pair on loopback, both with SO_ASYNC_SOCK: 0 or -1. */
static inline int kevent_tcp_pair(int s[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	if (ls < 0 || bind(ls, (void *)&sa, len) || listen(ls, 1) ||
	    getsockname(ls, (void *)&sa, &len))
		return -1;
	s[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (s[0] < 0 || connect(s[0], (void *)&sa, len))
		return -1;
	s[1] = accept(ls, NULL, NULL);
	close(ls);
	if (s[1] < 0 || kevent_set_async(s[0], 1) || kevent_set_async(s[1], 1))
		return -1;
	return 0;
}

#ifndef __NR_aio_submit
#define __NR_aio_submit		457
#endif

/* aio_submit(): start @nr requests; how many started, or -1 with errno. */
static inline long kevent_aio_submit(int kq, struct kevent_naio_sub *subs,
				     unsigned int nr)
{
	return syscall(__NR_aio_submit, kq, subs, nr, 0);
}

/*
 * aio_submit() with KEVENT_NAIO_SUBMIT_WAIT, on a ring queue: start @nr
 * requests (@nr may be 0), then sleep until the ring holds an event.
 */
static inline long kevent_aio_submit_wait(int kq, struct kevent_naio_sub *subs,
					  unsigned int nr)
{
	return syscall(__NR_aio_submit, kq, subs, nr, KEVENT_NAIO_SUBMIT_WAIT);
}

/* One counter of /proc/vmstat, or -1. */
static inline long long kevent_vmstat(const char *name)
{
	char line[128], key[64];
	long long v, found = -1;
	FILE *f;
	int fd;

	/*
	 * Each CPU keeps a delta of its own of every counter and adds it to
	 * /proc/vmstat only past a threshold (tens of pages with four CPUs):
	 * on several CPUs the pin counters are exact only after
	 * vm.stat_refresh folds those deltas in, which root may ask for. On
	 * one CPU (UML) acquiring and releasing happen on the same CPU.
	 */
	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd >= 0) {
		/* If it fails, the counters are as exact as they are. */
		(void)!write(fd, "1", 1);
		close(fd);
	}
	f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", key, &v) == 2 && !strcmp(key, name)) {
			found = v;
			break;
		}
	fclose(f);
	return found;
}

/*
 * Wait up to @ms for every page pinned on this host to have been unpinned
 * (pins taken by others end too, so only a leak keeps them apart). Returns
 * the pages still pinned, 0 when none is, -1 if /proc/vmstat has no pin
 * counters.
 */
static inline long long kevent_wait_unpinned(unsigned int ms)
{
	long long left = 0;
	unsigned int t;

	for (t = 0; t <= ms; t += 10) {
		long long acquired = kevent_vmstat("nr_foll_pin_acquired");
		long long released = kevent_vmstat("nr_foll_pin_released");

		/* Without the counters nothing can be told: say so, loudly. */
		if (acquired < 0 || released < 0)
			return -1;
		left = acquired - released;
		if (!left)
			return 0;
		usleep(10 * 1000);
	}
	return left;
}

/*
 * kevent's hrtimers armed now on this host, counted in /proc/timer_list
 * (root only): -1 if it cannot be read.
 */
static inline int kevent_timers_armed(void)
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

#endif /* KEVENT_USER_H */
