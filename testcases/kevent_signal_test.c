// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_signal_test: KEVENT_SIGNAL (docs/abi.md), the later takes' signal
 * type: a signal sent to the process is reported as an event, counted, and
 * taken (no handler runs, no default action) unless KEVENT_SIGNAL_NOMASK
 * lets it through as well; a fault the kernel raises is never taken.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON	2000	/* ms */
#define NEVER	50	/* ms */

static volatile sig_atomic_t handled;

static void count_it(int sig)
{
	handled++;
}

static struct ukevent ksignal(int sig, unsigned int flags)
{
	struct ukevent uk;

	memset(&uk, 0, sizeof(uk));
	uk.id.raw[0] = sig;
	uk.id.raw[1] = flags;
	uk.type = KEVENT_SIGNAL;
	uk.event = KEVENT_SIGNAL_RECEIVED;
	return uk;
}

FIXTURE(sig) {
	int kq;
};

FIXTURE_SETUP(sig)
{
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
	handled = 0;
	signal(SIGUSR1, count_it);
	signal(SIGUSR2, count_it);
}

FIXTURE_TEARDOWN(sig)
{
	close(self->kq);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
}

TEST_F(sig, a_signal_is_reported_and_taken)
{
	struct ukevent uk = ksignal(SIGUSR1, 0), out;
	sigset_t pending;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SIGNAL, out.type);
	EXPECT_EQ(SIGUSR1, out.id.raw[0]);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(1, out.ret_data[0]);
	EXPECT_EQ(0, handled);
	/* Nor is it pending: it never reached the process. */
	sigpending(&pending);
	EXPECT_FALSE(sigismember(&pending, SIGUSR1));
	/* Other signals are not its business. */
	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	EXPECT_EQ(1, handled);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_F(sig, nomask_delivers_the_signal_too)
{
	struct ukevent uk = ksignal(SIGUSR1, KEVENT_SIGNAL_NOMASK), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	EXPECT_EQ(1, handled);
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(1, out.ret_data[0]);
}

TEST_F(sig, signals_before_a_wait_are_counted)
{
	struct ukevent uk = ksignal(SIGUSR2, 0), out;
	int i;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	/* A blocked standard signal pends once; taken, each one counts. */
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(5, out.ret_data[0]);
	EXPECT_EQ(0, handled);
}

TEST_F(sig, a_default_action_does_not_happen)
{
	struct ukevent uk = ksignal(SIGTERM, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, kill(getpid(), SIGTERM));		/* would end this test */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(SIGTERM, out.id.raw[0]);
}

TEST_F(sig, a_signal_to_one_thread_counts)
{
	struct ukevent uk = ksignal(SIGUSR1, 0), out;
	pid_t tid = getpid();

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	/* This thread by its id: a thread-directed signal of the process. */
	ASSERT_EQ(0, syscall(SYS_tgkill, getpid(), tid, SIGUSR1));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(0, handled);
}

TEST_F(sig, removed_kevent_lets_the_signal_through)
{
	struct ukevent uk = ksignal(SIGUSR1, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_remove(self->kq, &uk, 1));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	EXPECT_EQ(1, handled);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_F(sig, a_signal_wakes_a_thread_asleep_in_wait)
{
	struct ukevent uk = ksignal(SIGUSR2, 0);
	struct kevent_waiter w;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, kevent_waiter_start(&w, self->kq));
	EXPECT_EQ(-2, w.got);
	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	ASSERT_EQ(0, kevent_waiter_join(&w));
	EXPECT_EQ(1, w.got);		/* not EINTR: the signal never came */
	EXPECT_EQ(1, w.out.ret_data[0]);
	EXPECT_EQ(0, handled);
}

TEST_F(sig, another_process_signals_it)
{
	struct ukevent uk = ksignal(SIGUSR1, 0), out;
	pid_t me = getpid(), pid;
	int status;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(kill(me, SIGUSR1) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(0, handled);
}

/* The child of a fork is another process: its signals are not the parent's. */
TEST_F(sig, a_childs_signals_are_its_own)
{
	struct ukevent uk = ksignal(SIGUSR1, 0), out;
	pid_t pid;
	int status;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	/* At its default in the child from the start: a signal sent early kills it too. */
	signal(SIGUSR1, SIG_DFL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		pause();
		_exit(0);
	}
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

/* A fault the kernel raises is reported, and delivered all the same. */
TEST(a_fault_is_never_taken)
{
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (!pid) {
		struct ukevent uk = ksignal(SIGSEGV, 0);
		int *volatile bad = (int *)8;
		int kq = kevent_init();

		if (kq < 0 || kevent_add(kq, &uk, 1) != 1)
			_exit(2);
		*bad = 1;			/* SIGSEGV from the kernel */
		_exit(3);			/* taken: the fault would repeat for ever */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("status %#x", status);
}

/* SIGSEGV sent by a process, not raised by a fault, may be taken. */
TEST_F(sig, a_sent_sigsegv_may_be_taken)
{
	struct ukevent uk = ksignal(SIGSEGV, 0), out;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, kill(getpid(), SIGSEGV));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(SIGSEGV, out.id.raw[0]);
}

TEST(bad_signal_or_flags_is_einval)
{
	static const struct { unsigned int sig, flags; const char *what; } bad[] = {
		{ 0, 0, "signal 0" }, { SIGKILL, 0, "SIGKILL" }, { SIGSTOP, 0, "SIGSTOP" },
		{ 65, 0, "signal 65" }, { 0xffffffffu, 0, "signal 0xffffffff" },
		{ SIGUSR1, 0x2, "flag 0x2" }, { SIGUSR1, 0x80000000u, "flag 0x80000000" },
	};
	int kq = kevent_init();
	unsigned int i;

	ASSERT_GE(kq, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ukevent uk = ksignal(bad[i].sig, bad[i].flags);

		EXPECT_EQ(0, kevent_add(kq, &uk, 1)) TH_LOG("%s", bad[i].what);
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, bad[i].what);
	}
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(et_or_last_check_is_einval)
{
	static const unsigned int flags[] = { KEVENT_REQ_ET, KEVENT_REQ_LAST_CHECK };
	int kq = kevent_init();
	unsigned int i;

	ASSERT_GE(kq, 0);
	for (i = 0; i < 2; i++) {
		struct ukevent uk = ksignal(SIGUSR1, 0);

		uk.req_flags = flags[i];
		EXPECT_EQ(0, kevent_add(kq, &uk, 1));
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "ET or LAST_CHECK");
	}
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(the_last_rt_signal_is_accepted)
{
	struct ukevent uk = ksignal(SIGRTMAX, 0), out;
	int kq = kevent_init();

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	ASSERT_EQ(0, kill(getpid(), SIGRTMAX));
	ASSERT_EQ(1, kevent_wait(kq, &out, 1, SOON));
	close(kq);
}

/*
 * Issue 32, defect 2: a KEVENT_SIGNAL kevent outlived the exec of the
 * process it watched, into a set-user-ID program too, and went on taking
 * that program's signals for whoever kept the queue. Now the exec ends it:
 * delivered once more as broken (ESRCH), it takes nothing of the new
 * program. Here the queue is the test's, the kevent added by a child (so
 * it watches the child), which then runs a shell that sends itself
 * SIGUSR1. On the series before the fix the shell exited 0 (the signal was
 * taken) and the queue reported it.
 */
TEST_F(sig, exec_ends_the_signal_kevents_of_the_process)
{
	struct ukevent uk = ksignal(SIGUSR1, 0), out;
	int status, up[2], down[2];
	pid_t pid;
	char c;

	if (access("/bin/sh", X_OK))
		SKIP(return, "no /bin/sh to exec");
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		signal(SIGUSR1, SIG_DFL);
		if (kevent_add(self->kq, &uk, 1) != 1)
			_exit(3);
		/* Watched: a signal now is the kevent's, not ours. */
		if (kill(getpid(), SIGUSR1) || write(up[1], "x", 1) != 1)
			_exit(4);
		/* Until the test has seen it: the exec's last event must not hide it. */
		if (read(down[0], &c, 1) != 1)
			_exit(5);
		execl("/bin/sh", "sh", "-c", "kill -USR1 $$; exit 0", (char *)NULL);
		_exit(6);
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ(1, read(up[0], &c, 1));
	/* The signal before the exec was taken and reported. */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SIGNAL, out.type);
	EXPECT_EQ(KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(1, out.ret_data[0]);
	ASSERT_EQ(1, write(down[1], "y", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1)
		TH_LOG("the program after exec did not die of its SIGUSR1 (status %#x)", status);
	/* The exec ended the kevent: one last event, broken, then nothing. */
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_SIGNAL, out.type);
	EXPECT_TRUE(out.ret_flags & KEVENT_RET_BROKEN);
	EXPECT_EQ(ESRCH, out.ret_data[0]);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(0, kevent_queued(self->kq));
	EXPECT_QUEUE_WORKS(self->kq);
	close(up[0]);
	close(down[1]);
}

/*
 * Issue 32, defect 5: a POSIX timer's signal (SIGEV_SIGNAL) goes through
 * send_sigqueue(), which did not ask KEVENT_SIGNAL: its signal reached the
 * handler and the kevent saw nothing. Now it is reported and taken like any
 * other, and a periodic timer goes on (the kernel re-arms it as for an
 * ignored signal). Before the fix WAIT timed out and the handler ran.
 */
TEST_F(sig, a_posix_timer_signal_is_reported_and_taken)
{
	struct ukevent uk = ksignal(SIGUSR2, 0), out;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };
	struct itimerspec its = { .it_value.tv_nsec = 10000000, .it_interval.tv_nsec = 10000000 };
	unsigned long long got = 0;
	timer_t timer;
	int i;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &timer));
	ASSERT_EQ(0, timer_settime(timer, 0, &its, NULL));
	/* Periodic: it goes on after the first expiry that was taken. */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
		EXPECT_EQ(SIGUSR2, out.id.raw[0]);
		got += out.ret_data[0];
	}
	ASSERT_EQ(0, timer_delete(timer));
	EXPECT_LE(3, got);
	EXPECT_EQ(0, handled);
}

/* With KEVENT_SIGNAL_NOMASK the timer's signal is reported and delivered. */
TEST_F(sig, a_posix_timer_signal_with_nomask_is_delivered_too)
{
	struct ukevent uk = ksignal(SIGUSR2, KEVENT_SIGNAL_NOMASK), out;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };
	struct itimerspec its = { .it_value.tv_nsec = 10000000 };
	timer_t timer;
	int i;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &timer));
	ASSERT_EQ(0, timer_settime(timer, 0, &its, NULL));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(1, out.ret_data[0]);
	for (i = 0; i < 200 && !handled; i++)
		usleep(10000);
	EXPECT_EQ(1, handled);
	ASSERT_EQ(0, timer_delete(timer));
}

TEST_HARNESS_MAIN
