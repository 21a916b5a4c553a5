// SPDX-License-Identifier: GPL-2.0+
/*
 * kevent_inode_test: KEVENT_INODE on a directory while entries come and go.
 *
 * KEVENT_INODE_TEST_DIR (default /tmp, tmpfs in the lab's guests) names the
 * file system to test on. Every change must be reported once, with the
 * right event (a create is never reported as a remove, the bug of the 2006
 * code), and nothing may be reported after it. The errors of KEVENT_INODE
 * requests come last.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kevent_user.h"

#define SOON 5000
#define NEVER 100

#define kinode(fd, event, flags) kevent_fd(fd, KEVENT_INODE, event, flags)

FIXTURE(dir) {
	char path[256];
	char other[256];
	int dfd;
	int kq;
};

FIXTURE_SETUP(dir)
{
	const char *base = getenv("KEVENT_INODE_TEST_DIR") ?: "/tmp";

	snprintf(self->path, sizeof(self->path), "%s/kevent-inode-%d", base, getpid());
	snprintf(self->other, sizeof(self->other), "%s/kevent-other-%d", base, getpid());
	ASSERT_EQ(0, mkdir(self->path, 0755));
	ASSERT_EQ(0, mkdir(self->other, 0755));
	self->dfd = open(self->path, O_RDONLY | O_DIRECTORY);
	ASSERT_GE(self->dfd, 0);
	self->kq = kevent_init();
	ASSERT_GE(self->kq, 0);
}

FIXTURE_TEARDOWN(dir)
{
	char cmd[600];

	close(self->kq);
	close(self->dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", self->path, self->other);
	system(cmd);
}

static void at(char *buf, size_t n, const char *dir, const char *name)
{
	if (snprintf(buf, n, "%s/%s", dir, name) >= (int)n)
		abort();
}

/* One delivery of exactly @event for @changes changes, then silence. */
#define EXPECT_ONE(self, event, changes) do {					\
	struct ukevent __out;							\
	ASSERT_EQ(1, kevent_wait((self)->kq, &__out, 1, SOON));			\
	EXPECT_EQ((event), __out.ret_data[0]);					\
	EXPECT_EQ((changes), __out.ret_data[1]);				\
	EXPECT_EQ(KEVENT_RET_DONE, __out.ret_flags);				\
	EXPECT_EQ(0, kevent_wait((self)->kq, &__out, 1, NEVER));		\
} while (0)

TEST_F(dir, create_is_create_and_unlink_is_remove)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 0);
	char f[300];
	int fd;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	EXPECT_EQ(0, kevent_wait(self->kq, &uk, 1, 0));
	at(f, sizeof(f), self->path, "a");
	fd = open(f, O_CREAT | O_WRONLY, 0644);
	ASSERT_GE(fd, 0);
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
	/* Writing to or closing an entry changes no entry. */
	ASSERT_EQ(1, write(fd, "x", 1));
	close(fd);
	EXPECT_EQ(0, kevent_wait(self->kq, &uk, 1, NEVER));
	ASSERT_EQ(0, unlink(f));
	EXPECT_ONE(self, KEVENT_INODE_REMOVE, 1);
}

TEST_F(dir, mkdir_rmdir_link_symlink)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 0);
	char d[300], f[300], l[300], s[300];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	at(d, sizeof(d), self->path, "sub");
	ASSERT_EQ(0, mkdir(d, 0755));
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
	ASSERT_EQ(0, rmdir(d));
	EXPECT_ONE(self, KEVENT_INODE_REMOVE, 1);
	at(f, sizeof(f), self->other, "f");
	close(open(f, O_CREAT | O_WRONLY, 0644));
	at(l, sizeof(l), self->path, "hard");
	ASSERT_EQ(0, link(f, l));
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
	at(s, sizeof(s), self->path, "soft");
	ASSERT_EQ(0, symlink(f, s));
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
}

TEST_F(dir, renames_in_out_and_within)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 0);
	char out1[300], in1[300], in2[300];

	at(out1, sizeof(out1), self->other, "f");
	at(in1, sizeof(in1), self->path, "f");
	at(in2, sizeof(in2), self->path, "g");
	close(open(out1, O_CREAT | O_WRONLY, 0644));
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, rename(out1, in1));
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
	ASSERT_EQ(0, rename(in1, in2));
	EXPECT_ONE(self, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 1);
	ASSERT_EQ(0, rename(in2, out1));
	EXPECT_ONE(self, KEVENT_INODE_REMOVE, 1);
}

TEST_F(dir, many_changes_are_counted)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE, 0), out;
	unsigned int total = 0;
	char f[300];
	int i;

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	for (i = 0; i < 50; i++) {
		snprintf(f, sizeof(f), "%s/f%d", self->path, i);
		close(open(f, O_CREAT | O_WRONLY, 0644));
		if (i % 10 == 3)	/* deliveries in between, too */
			while (kevent_wait(self->kq, &out, 1, 0) == 1)
				total += out.ret_data[1];
		unlink(f);		/* not asked for: not counted */
	}
	while (kevent_wait(self->kq, &out, 1, NEVER) == 1)
		total += out.ret_data[1];
	EXPECT_EQ(50, total);
}

TEST_F(dir, only_direct_entries)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE | KEVENT_INODE_REMOVE, 0);
	char d[300], f[300];

	at(d, sizeof(d), self->path, "sub");
	ASSERT_EQ(0, mkdir(d, 0755));
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	at(f, sizeof(f), d, "deep");
	close(open(f, O_CREAT | O_WRONLY, 0644));
	EXPECT_EQ(0, kevent_wait(self->kq, &uk, 1, NEVER));
	unlink(f);
	rmdir(d);
	EXPECT_ONE(self, KEVENT_INODE_REMOVE, 1);
}

TEST_F(dir, removing_the_directory_breaks_the_kevent)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE, 0), out;
	char f[300];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	/* The kevent does not need the descriptor after ADD. */
	close(self->dfd);
	self->dfd = -1;
	at(f, sizeof(f), self->path, "a");
	close(open(f, O_CREAT | O_WRONLY, 0644));
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
	ASSERT_EQ(0, unlink(f));
	ASSERT_EQ(0, rmdir(self->path));
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(ENOENT, out.ret_data[0]);
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
}

TEST_F(dir, removed_while_open)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE, 0), out;
	int kq2 = kevent_init();

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(0, rmdir(self->path));
	/* As with inotify, the directory is gone when its last user is. */
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	/* But nothing new can watch it. */
	EXPECT_EQ(0, kevent_add(kq2, &uk, 1));
	EXPECT_ENTRY_FAILS_WITH(ENOENT, uk, "ADD of a removed directory");
	EXPECT_EQ(0, kevent_queued(kq2));
	EXPECT_QUEUE_WORKS(kq2);
	close(kq2);
	close(self->dfd);
	self->dfd = -1;
	ASSERT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(KEVENT_RET_BROKEN | KEVENT_RET_DONE, out.ret_flags);
	EXPECT_EQ(ENOENT, out.ret_data[0]);
}

TEST_F(dir, two_queues_and_remove)
{
	struct ukevent uk = kinode(self->dfd, KEVENT_INODE_CREATE, 0), out;
	int kq2 = kevent_init();
	char f[300];

	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	ASSERT_EQ(1, kevent_add(kq2, &uk, 1));
	at(f, sizeof(f), self->path, "a");
	close(open(f, O_CREAT | O_WRONLY, 0644));
	EXPECT_EQ(1, kevent_wait(self->kq, &out, 1, SOON));
	EXPECT_EQ(1, kevent_wait(kq2, &out, 1, SOON));
	/* Removing one leaves the other watching. */
	ASSERT_EQ(1, kevent_remove(self->kq, &uk, 1));
	at(f, sizeof(f), self->path, "b");
	close(open(f, O_CREAT | O_WRONLY, 0644));
	EXPECT_EQ(0, kevent_wait(self->kq, &out, 1, NEVER));
	EXPECT_EQ(1, kevent_wait(kq2, &out, 1, SOON));
	close(kq2);
	/* And watching again after everything was removed works. */
	ASSERT_EQ(1, kevent_add(self->kq, &uk, 1));
	at(f, sizeof(f), self->path, "c");
	close(open(f, O_CREAT | O_WRONLY, 0644));
	EXPECT_ONE(self, KEVENT_INODE_CREATE, 1);
}

TEST_F(dir, needs_read_permission)
{
	struct ukevent uk;
	pid_t pid;
	int status;

	ASSERT_EQ(0, chmod(self->path, 0311));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int kq, fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(self->path, O_PATH | O_DIRECTORY);
		kq = kevent_init();
		if (fd < 0 || kq < 0)
			_exit(11);
		uk = kinode(fd, KEVENT_INODE_CREATE, 0);
		if (kevent_add(kq, &uk, 1) != 0)
			_exit(12);
		if (uk.ret_flags != KEVENT_RET_BROKEN || uk.ret_data[0] != EACCES)
			_exit(13);
		_exit(kevent_queued(kq) == 0 && !kevent_queue_check(kq) ? 0 : 14);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child exit %d (13: not EACCES, 14: the queue no longer works)",
		       WEXITSTATUS(status));
}

/* Bad input (docs/abi.md, "Errors"): the entry fails, the queue works on. */

TEST_F(dir, event_without_an_inode_bit_is_einval)
{
	static const unsigned int bad[] = { 0, 0x4, 0x80000000u, 0xfffffffcu };
	struct ukevent held = kinode(self->dfd, KEVENT_INODE_CREATE, 0);
	int other = open(self->other, O_RDONLY | O_DIRECTORY);

	ASSERT_GE(other, 0);
	ASSERT_EQ(1, kevent_add(self->kq, &held, 1));
	expect_masks_fail(_metadata, self->kq, &held, kinode(other, 0, 0), bad,
			  sizeof(bad) / sizeof(bad[0]), EINVAL);
	close(other);
}

TEST(closed_fd_is_ebadf)
{
	int closed = open("/", O_RDONLY | O_DIRECTORY);

	ASSERT_GE(closed, 0);
	/* O_PATH is accepted here: a directory is watched by its inode. */
	expect_unopened_fds_fail(_metadata, KEVENT_INODE, KEVENT_INODE_CREATE, closed, 0, EBADF);
}

TEST(not_a_directory_is_enotdir)
{
	int kq = kevent_init(), file = open("/proc/self/stat", O_RDONLY);
	int path = open("/proc/self/stat", O_PATH), p[2];
	struct ukevent uk[4];

	ASSERT_GE(kq, 0);
	ASSERT_GE(file, 0);
	ASSERT_GE(path, 0);
	ASSERT_EQ(0, pipe(p));
	uk[0] = kinode(file, KEVENT_INODE_CREATE, 0);
	uk[1] = kinode(path, KEVENT_INODE_CREATE, 0);
	uk[2] = kinode(p[0], KEVENT_INODE_CREATE, 0);
	uk[3] = kinode(kq, KEVENT_INODE_CREATE, 0);
	EXPECT_EQ(0, kevent_add(kq, uk, 4));
	EXPECT_ENTRY_FAILS_WITH(ENOTDIR, uk[0], "regular file");
	EXPECT_ENTRY_FAILS_WITH(ENOTDIR, uk[1], "O_PATH of a regular file");
	EXPECT_ENTRY_FAILS_WITH(ENOTDIR, uk[2], "pipe");
	EXPECT_ENTRY_FAILS_WITH(ENOTDIR, uk[3], "a kevent queue");
	EXPECT_EQ(0, kevent_queued(kq));
	EXPECT_QUEUE_WORKS(kq);
	close(p[0]);
	close(p[1]);
	close(path);
	close(file);
	close(kq);
}

TEST_HARNESS_MAIN
