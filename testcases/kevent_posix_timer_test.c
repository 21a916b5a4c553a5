// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_posix_timer_test: KEVENT_POSIX_TIMER (docs/abi.md), the later
 * takes' SIGEV_KEVENT: a POSIX timer made by timer_create() reports its
 * expiries to a kevent queue instead of sending a signal. The timer and its
 * kevent may each go first: timer_delete(), exit and exec break the kevent,
 * a REMOVE or the queue's close leaves the timer running, reporting nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON	2000	/* ms */
#define NEVER	50	/* ms */
#define MS	1000000LL	/* ns */

static volatile sig_atomic_t alarms;

static void count_alarm(int sig)
{
	alarms++;
}

/* Arm @timer: first expiry in @first_ms, then every @period_ms (0: once). */
static int arm(timer_t timer, long first_ms, long period_ms)
{
	struct itimerspec its = {
		.it_value = { first_ms / 1000, first_ms % 1000 * 1000000 },
		.it_interval = { period_ms / 1000, period_ms % 1000 * 1000000 },
	};

	return timer_settime(timer, 0, &its, NULL);
}

FIXTURE(ptimer) {
	int kq;
	timer_t timer;
	bool deleted;
};

FIXTURE_SETUP(ptimer)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	ASSERT_EQ(0, kevent_timer_create(self->kq, CLOCK_MONOTONIC, self,
					 &self->timer));
	self->deleted = false;
	alarms = 0;
	signal(SIGALRM, count_alarm);
}

FIXTURE_TEARDOWN(ptimer)
{
	if (!self->deleted)
		timer_delete(self->timer);
	close(self->kq);
	signal(SIGALRM, SIG_DFL);
}

TEST_F(ptimer, an_expiry_is_reported_and_no_signal_is_sent)
{
	struct ukevent out, uk = kevent_posix_timer(self->timer, getpid());
	sigset_t pending;

	EXPECT_EQ(1, kevent_queued(self->kq));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	ASSERT_EQ(0, arm(self->timer, 30, 0));
	/* WAIT sleeps until the expiry wakes it. */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_POSIX_TIMER, out.type);
	EXPECT_EQ(uk.id.raw[0], out.id.raw[0]);
	EXPECT_EQ(getpid(), out.id.raw[1]);
	EXPECT_EQ(KEVENT_POSIX_TIMER_EXPIRED, out.event);
	EXPECT_EQ((uint64_t)(uintptr_t)self, out.ptr);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(1, out.ret_data[0]);
	EXPECT_EQ(0, alarms);
	sigpending(&pending);
	EXPECT_FALSE(sigismember(&pending, SIGALRM));
	/* A oneshot timer: once. The kevent stays with the timer. */
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(1, kevent_queued(self->kq));
	/* Set again, it reports again. */
	ASSERT_EQ(0, arm(self->timer, 10, 0));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(1, out.ret_data[0]);
}

/*
 * A periodic timer runs on while its event waits; the delivery counts every
 * expiry since the previous one: never more than have happened, and not
 * far fewer (an expiry due just before WAIT may not have fired yet).
 */
TEST_F(ptimer, a_periodic_timer_counts_its_expiries)
{
	const long period = 20;
	long long before, armed, waited, done;
	unsigned int total = 0;
	struct ukevent out;
	int round;

	before = kevent_now_ns();
	ASSERT_EQ(0, arm(self->timer, period, period));
	armed = kevent_now_ns();
	for (round = 0; round < 2; round++) {
		usleep(200 * 1000);
		waited = kevent_now_ns();
		ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
		done = kevent_now_ns();
		total += out.ret_data[0];
		EXPECT_LE(total, (done - before) / (period * MS))
			TH_LOG("round %d: %u expiries in %lld ms", round, total,
			       (done - before) / MS);
		EXPECT_GE(total + 2, (waited - armed) / (period * MS))
			TH_LOG("round %d: %u expiries in %lld ms", round, total,
			       (waited - armed) / MS);
	}
	/* Not a signal: there is no overrun to read. */
	EXPECT_EQ(0, timer_getoverrun(self->timer));
	EXPECT_EQ(0, alarms);
}

TEST_F(ptimer, a_cpu_time_clock_reports_too)
{
	struct ukevent out;
	timer_t cpu;
	long long until;
	long got = 0;

	ASSERT_EQ(0, kevent_timer_create(self->kq, CLOCK_PROCESS_CPUTIME_ID,
					 NULL, &cpu));
	ASSERT_EQ(0, arm(cpu, 20, 0));
	/* Burn CPU time until it expires, 5 s at most. */
	until = kevent_now_ns() + 5000 * MS;
	while (got == 0 && kevent_now_ns() < until)
		got = kevent_wait(self->kq, &out, 1, 0);
	ASSERT_EQ(1, got);
	EXPECT_EQ((unsigned int)(long)cpu, out.id.raw[0]);
	EXPECT_EQ(1, out.ret_data[0]);
	EXPECT_EQ(0, timer_delete(cpu));
}

TEST_F(ptimer, timer_delete_breaks_the_kevent)
{
	struct ukevent out, uk = kevent_posix_timer(self->timer, getpid());

	ASSERT_EQ(0, arm(self->timer, 5, 5));
	usleep(30 * 1000);
	ASSERT_EQ(0, timer_delete(self->timer));
	self->deleted = true;
	/* The expiries it had counted give way to the news that it is gone. */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(uk.id.raw[0], out.id.raw[0]);
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(EIDRM, out.ret_data[0]);
	/* Then it is gone from the queue. */
	EXPECT_EQ(0, kevent_queued(self->kq));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(0, kevent_remove(self->kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(ENOENT, uk, "REMOVE after the break");
	EXPECT_QUEUE_WORKS(self->kq);
}

TEST_F(ptimer, remove_leaves_the_timer_running_and_silent)
{
	struct ukevent out, uk = kevent_posix_timer(self->timer, getpid());
	struct itimerspec its;

	ASSERT_EQ(1, kevent_remove(self->kq, &uk, 1));
	ASSERT_EQ(0, uk.ret_flags);
	EXPECT_EQ(0, kevent_queued(self->kq));
	ASSERT_EQ(0, arm(self->timer, 5, 5));
	usleep(50 * 1000);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	/* Still a timer: it runs, and its deletion breaks nothing. */
	ASSERT_EQ(0, timer_gettime(self->timer, &its));
	EXPECT_EQ(5 * 1000000, its.it_interval.tv_nsec);
	EXPECT_EQ(0, timer_delete(self->timer));
	self->deleted = true;
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(0, alarms);
	EXPECT_QUEUE_WORKS(self->kq);
}

TEST_F(ptimer, closing_the_queue_leaves_the_timer_running)
{
	struct itimerspec its;
	int other = kevent_init();
	timer_t timer;

	ASSERT_GE(other, 0);
	ASSERT_EQ(0, kevent_timer_create(other, CLOCK_MONOTONIC, NULL, &timer));
	ASSERT_EQ(0, arm(timer, 2, 2));
	usleep(20 * 1000);
	/* Closed with events ready, and more expiries after it. */
	close(other);
	usleep(20 * 1000);
	ASSERT_EQ(0, timer_gettime(timer, &its));
	EXPECT_EQ(2 * 1000000, its.it_interval.tv_nsec);
	EXPECT_EQ(0, timer_delete(timer));
	EXPECT_EQ(0, alarms);
	EXPECT_QUEUE_WORKS(self->kq);
}

/* The kernel makes and owns the kevent: an ADD or a MODIFY is refused. */
TEST_F(ptimer, add_or_modify_is_einval)
{
	struct ukevent uk = kevent_posix_timer(self->timer, getpid());
	struct ukevent other = kevent_posix_timer((timer_t)(long)12345, getpid());

	EXPECT_EQ(0, kevent_add(self->kq, &other, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, other, "ADD of a POSIX timer kevent");
	EXPECT_EQ(0, kevent_modify(self->kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "MODIFY of a POSIX timer kevent");
	EXPECT_EQ(1, kevent_queued(self->kq));
	EXPECT_QUEUE_WORKS(self->kq);
}

/* timer_create() fails, and makes no timer, when the queue is not one. */
TEST(bad_queue_fd_is_ebadf)
{
	int kq = kevent_init();
	timer_t timer;

	ASSERT_GE(kq, 0);
	EXPECT_FAILS_WITH(EBADF, kevent_timer_create(kevent_closed_fd(),
			  CLOCK_MONOTONIC, NULL, &timer), "a closed descriptor");
	EXPECT_FAILS_WITH(EBADF, kevent_timer_create(-1, CLOCK_MONOTONIC,
			  NULL, &timer), "descriptor -1");
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(not_a_queue_is_einval)
{
	int kq = kevent_init(), p[2];
	struct sigevent sev;
	timer_t timer;

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, pipe(p));
	EXPECT_FAILS_WITH(EINVAL, kevent_timer_create(p[0], CLOCK_MONOTONIC,
			  NULL, &timer), "a pipe");
	/* SIGEV_KEVENT does not combine with SIGEV_THREAD_ID. */
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_KEVENT | SIGEV_THREAD_ID;
	sev._sigev_un._tid = kq;
	EXPECT_FAILS_WITH(EINVAL, timer_create(CLOCK_MONOTONIC, &sev, &timer),
			  "SIGEV_KEVENT | SIGEV_THREAD_ID");
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(p[0]);
	close(p[1]);
	close(kq);
}

#ifndef __NR_clone3
#define __NR_clone3	435
#endif

/*
 * fork(), with pid @pid if it is not 0: clone3() with set_tid, as
 * checkpoint/restore tools give a process its pid back (root only).
 */
static pid_t fork_as(pid_t pid)
{
	pid_t tid[1] = { pid };
	struct {	/* struct clone_args, CLONE_ARGS_SIZE_VER1 */
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
		uint64_t stack, stack_size, tls, set_tid, set_tid_size;
	} args = {
		.exit_signal = SIGCHLD,
		.set_tid = (uintptr_t)tid,
		.set_tid_size = 1,
	};

	if (!pid)
		return fork();
	return syscall(__NR_clone3, &args, sizeof(args));
}

/*
 * In a new process: its first timer (the same id as the first timer of
 * any other process), reporting to @kq, armed for 10 s. 0 or an errno.
 */
static int first_timer(int kq)
{
	timer_t timer;

	if (kevent_timer_create(kq, CLOCK_MONOTONIC, NULL, &timer) ||
	    arm(timer, 10000, 10000))
		return errno;
	return 0;
}

/*
 * A child, with pid @pid if it is not 0, that makes its first timer on
 * @kq and exits: with 0, or the errno of what failed.
 */
static pid_t child_with_timer(int kq, pid_t pid)
{
	pid_t child = fork_as(pid);

	if (child == 0)
		_exit(first_timer(kq) & 0xff);
	return child;
}

/*
 * Timer ids are per process: the kevents of two processes' timers on one
 * queue differ by the pid in id.raw[1]. A process's exit deletes its
 * timers, and so breaks their kevents.
 */
TEST_F(ptimer, exit_breaks_the_kevent_of_a_child)
{
	struct ukevent out;
	int status;
	pid_t child;

	/* Its timer's id is likely the same as the parent's. */
	child = child_with_timer(self->kq, 0);
	ASSERT_GE(child, 0);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("timer_create() failed with %s", strerror(WEXITSTATUS(status)));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_POSIX_TIMER, out.type);
	EXPECT_EQ(child, out.id.raw[1]);
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(EIDRM, out.ret_data[0]);
	/* The parent's own kevent is still there. */
	EXPECT_EQ(1, kevent_queued(self->kq));
}

/* /proc/PID/timers says how each timer notifies: by kevent. */
TEST_F(ptimer, proc_timers_shows_the_kevent_notification)
{
	char line[256], want[64];
	bool found = false;
	FILE *f = fopen("/proc/self/timers", "r");

	ASSERT_NE(NULL, f) TH_LOG("/proc/self/timers: %s", strerror(errno));
	snprintf(want, sizeof(want), "notify: kevent/pid.%d\n", getpid());
	while (fgets(line, sizeof(line), f))
		found |= !strcmp(line, want);
	fclose(f);
	EXPECT_TRUE(found) TH_LOG("no line \"%s\"", want);
}

/*
 * A process gone before left a broken kevent for its first timer, not yet
 * delivered; a new process with its pid makes its first timer on the same
 * queue: the same id. timer_create() succeeds, and the orphan gives its id
 * up (its last event is dropped).
 */
TEST_F(ptimer, a_new_timer_takes_the_id_of_a_gone_process)
{
	struct ukevent out;
	pid_t first, second;
	int status;

	first = child_with_timer(self->kq, 0);
	ASSERT_GE(first, 0);
	ASSERT_EQ(first, waitpid(first, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	second = child_with_timer(self->kq, first);
	ASSERT_EQ(first, second) TH_LOG("clone3(set_tid %d): %s", first, strerror(errno));
	ASSERT_EQ(second, waitpid(second, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("timer_create() failed with %s", strerror(WEXITSTATUS(status)));
	/* One broken kevent with that id: the second process's. */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(first, out.id.raw[1]);
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(1, kevent_queued(self->kq));	/* the parent's own */
}

/* exec deletes the timers too, while the process goes on. */
TEST_F(ptimer, exec_breaks_the_kevent)
{
	struct ukevent out;
	int status;
	pid_t child;

	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		if (first_timer(self->kq))
			_exit(1);
		execlp("sleep", "sleep", "2", (char *)NULL);
		_exit(1);
	}
	/* Before the exec'd sleep ends. */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, 1500));
	EXPECT_EQ(child, out.id.raw[1]);
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(EIDRM, out.ret_data[0]);
	EXPECT_EQ(0, waitpid(child, &status, WNOHANG)) TH_LOG("the child ended early");
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_HARNESS_MAIN
