// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_posted_test: user-posted events (docs/abi.md, "Posted events"),
 * after kevent's take30. A KEVENT_USER kevent is never ready by itself;
 * KEVENT_CTL_READY, from any thread or process that holds the queue, posts
 * event bits to it, and WAIT delivers them: the bits of every post since
 * the last delivery or-ed in ret_data[0], their number in ret_data[1].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

/* A queue holding one KEVENT_USER kevent, @name, with @mask and @flags. */
static int queue_with(unsigned int name, unsigned int mask, unsigned int flags)
{
	struct ukevent uk = kevent_user_event(name, mask, flags);
	int kq = kevent_init();

	if (kq < 0 || kevent_add(kq, &uk, 1) != 1)
		return -1;
	return kq;
}

static long post(int kq, unsigned int name, unsigned int bits)
{
	struct ukevent uk = kevent_user_event(name, bits, 0);

	return kevent_post(kq, &uk, 1);
}

TEST(never_ready_by_itself)
{
	struct ukevent out[2];
	int kq = queue_with(7, KEVENT_MASK_ALL, 0);

	ASSERT_GE(kq, 0);
	EXPECT_EQ(0, kevent_wait(kq, out, 2, 50));
	EXPECT_EQ(0, kevent_ready(kq));
	close(kq);
}

TEST(a_post_is_delivered_with_its_bits_and_the_user_data)
{
	struct ukevent uk = kevent_user_event(7, KEVENT_MASK_ALL, 0), out[2];
	int kq = kevent_init();

	ASSERT_GE(kq, 0);
	uk.user[0] = 0xfeed;
	uk.user[1] = 0xbeef;
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	ASSERT_EQ(1, post(kq, 7, 0x5));
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 1000));
	EXPECT_EQ(KEVENT_USER, out[0].type);
	EXPECT_EQ(7, out[0].id.raw[0]);
	EXPECT_EQ(KEVENT_RET_DONE, out[0].ret_flags);
	EXPECT_EQ(0x5, out[0].ret_data[0]);
	EXPECT_EQ(1, out[0].ret_data[1]);
	EXPECT_EQ(0xfeed, out[0].user[0]);
	EXPECT_EQ(0xbeef, out[0].user[1]);
	/* Delivered: not ready again until the next post. */
	EXPECT_EQ(0, kevent_wait(kq, out, 2, 50));
	ASSERT_EQ(1, post(kq, 7, 0x2));
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 1000));
	EXPECT_EQ(0x2, out[0].ret_data[0]);
	EXPECT_EQ(1, out[0].ret_data[1]);
	close(kq);
}

TEST(posts_before_a_wait_merge_and_are_counted)
{
	struct ukevent out[2];
	int kq = queue_with(1, KEVENT_MASK_ALL, 0);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, post(kq, 1, 0x1));
	ASSERT_EQ(1, post(kq, 1, 0x2));
	ASSERT_EQ(1, post(kq, 1, 0x1));
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 1000));
	EXPECT_EQ(0x3, out[0].ret_data[0]);
	EXPECT_EQ(3, out[0].ret_data[1]);
	close(kq);
}

TEST(one_call_posts_to_several_kevents)
{
	struct ukevent uk[3] = {
		kevent_user_event(1, KEVENT_MASK_ALL, 0),
		kevent_user_event(2, KEVENT_MASK_ALL, 0),
		kevent_user_event(3, KEVENT_MASK_ALL, 0),
	}, out[4];
	int kq = kevent_init(), i, seen = 0;

	ASSERT_GE(kq, 0);
	ASSERT_EQ(3, kevent_add(kq, uk, 3));
	for (i = 0; i < 3; i++)
		uk[i].event = 1u << i;
	ASSERT_EQ(3, kevent_post(kq, uk, 3));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, uk[i].ret_flags);
	ASSERT_EQ(3, kevent_wait(kq, out, 4, 1000));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(1u << (out[i].id.raw[0] - 1), out[i].ret_data[0]);
		seen |= 1 << out[i].id.raw[0];
	}
	EXPECT_EQ(0xe, seen);
	close(kq);
}

TEST(the_mask_filters_what_is_posted)
{
	struct ukevent uk = kevent_user_event(1, 0x2, 0), out[2];
	int kq = queue_with(1, 0x1, 0);

	ASSERT_GE(kq, 0);
	/* No bit of the kevent's mask: refused, and nothing is ready. */
	EXPECT_EQ(0, kevent_post(kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "post of 0x2 to mask 0x1");
	EXPECT_EQ(0, kevent_wait(kq, out, 2, 50));
	ASSERT_EQ(1, post(kq, 1, 0x3));
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 1000));
	EXPECT_EQ(0x1, out[0].ret_data[0]);
	close(kq);
}

TEST(bad_posts_fail_entry_by_entry)
{
	struct ukevent uk[3] = {
		kevent_user_event(99, 0x1, 0),		/* no such kevent */
		kevent_timer(1000, 0, 0),		/* not a KEVENT_USER kevent */
		kevent_user_event(1, 0x1, 0),		/* fine */
	}, timer = kevent_timer(1000, 0, 0), out[2];
	int kq = queue_with(1, KEVENT_MASK_ALL, 0);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, kevent_add(kq, &timer, 1));
	EXPECT_EQ(1, kevent_post(kq, uk, 3));
	EXPECT_ENTRY_FAILS_WITH(ENOENT, uk[0], "post to an unknown kevent");
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk[1], "post to a timer");
	EXPECT_EQ(0, uk[2].ret_flags);
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 500));
	EXPECT_EQ(KEVENT_USER, out[0].type);
	EXPECT_EQ(0, kevent_post(kq, uk, 0));
	close(kq);
}

TEST(a_oneshot_kevent_goes_after_its_delivery)
{
	struct ukevent uk = kevent_user_event(5, KEVENT_MASK_ALL, 0), out[2];
	int kq = queue_with(5, KEVENT_MASK_ALL, KEVENT_REQ_ONESHOT);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, post(kq, 5, 0x1));
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 1000));
	EXPECT_EQ(0, kevent_post(kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(ENOENT, uk, "post after a oneshot delivery");
	EXPECT_EQ(0, kevent_fdinfo(kq, "kevents"));
	close(kq);
}

TEST(removed_kevent_takes_its_posts_with_it)
{
	struct ukevent uk = kevent_user_event(5, KEVENT_MASK_ALL, 0), out[2];
	int kq = queue_with(5, KEVENT_MASK_ALL, 0);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(1, post(kq, 5, 0x1));
	ASSERT_EQ(1, kevent_remove(kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(kq, out, 2, 50));
	close(kq);
}

TEST(a_post_wakes_a_thread_asleep_in_wait)
{
	struct kevent_waiter w;
	int kq = queue_with(3, KEVENT_MASK_ALL, 0);

	ASSERT_GE(kq, 0);
	ASSERT_EQ(0, kevent_waiter_start(&w, kq));	/* asleep, or it finds the post */
	EXPECT_EQ(-2, w.got);
	ASSERT_EQ(1, post(kq, 3, 0x40));
	ASSERT_EQ(0, kevent_waiter_join(&w));
	EXPECT_EQ(1, w.got);
	EXPECT_EQ(0x40, w.out.ret_data[0]);
	close(kq);
}

TEST(another_process_posts_through_the_inherited_queue)
{
	struct ukevent out[2];
	int kq = queue_with(4, KEVENT_MASK_ALL, 0), status;
	pid_t pid;

	ASSERT_GE(kq, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(post(kq, 4, 0x8) == 1 ? 0 : 1);
	ASSERT_EQ(1, kevent_wait(kq, out, 1, 5000));
	EXPECT_EQ(0x8, out[0].ret_data[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(kq);
}

TEST(user_with_et_or_last_check_is_einval)
{
	static const unsigned int bad[] = { KEVENT_REQ_ET, KEVENT_REQ_LAST_CHECK,
					    KEVENT_REQ_ET | KEVENT_REQ_LAST_CHECK };
	struct ukevent uk;
	int kq = kevent_init();
	unsigned int i;

	ASSERT_GE(kq, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uk = kevent_user_event(1, 0x1, bad[i]);
		EXPECT_EQ(0, kevent_add(kq, &uk, 1));
		EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "ADD with ET or LAST_CHECK");
	}
	uk = kevent_user_event(1, 0x1, 0);
	ASSERT_EQ(1, kevent_add(kq, &uk, 1));
	uk.req_flags = KEVENT_REQ_ET;
	EXPECT_EQ(0, kevent_modify(kq, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(EINVAL, uk, "MODIFY to ET");
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST(reserved_type_is_eopnotsupp)
{
	/* The later takes' AIO (their POSIX_TIMER, 8, is here: posix_timer). */
	static const unsigned int reserved[] = { 5 };
	int kq = kevent_init();
	unsigned int i;

	ASSERT_GE(kq, 0);
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		struct ukevent uk = kevent_user_event(1, 0x1, 0);

		uk.type = reserved[i];
		EXPECT_EQ(0, kevent_add(kq, &uk, 1));
		EXPECT_ENTRY_FAILS_WITH(EOPNOTSUPP, uk, "a type of the later takes");
	}
	EXPECT_QUEUE_WORKS(kq);
	close(kq);
}

TEST_HARNESS_MAIN
