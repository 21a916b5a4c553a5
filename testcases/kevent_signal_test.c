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

TEST_HARNESS_MAIN
