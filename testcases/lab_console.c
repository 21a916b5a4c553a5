// SPDX-License-Identifier: GPL-2.0+
/*
 * lab_console: a shell on a terminal of a started lab's host, for
 * `labctl console` (/dev/tty1) and `labctl exec` (/dev/tty2).
 *
 *   lab_console TTY
 *
 * The host's run.sh starts it in a loop in the background, and a
 * non-interactive shell starts background commands with SIGINT and SIGQUIT
 * ignored, which every program started from there inherited: Ctrl-C did
 * nothing in the console, and nothing could end a command exec left
 * running. So every signal goes back to its default here, the shell gets
 * TTY as its controlling terminal (job control, Ctrl-C to the foreground
 * command) and a window size, which `stty size` and full-screen programs
 * need (labctl console sets the real one when it attaches).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	sigset_t none;
	int sig, fd;

	if (argc != 2) {
		fprintf(stderr, "usage: lab_console TTY\n");
		return 2;
	}
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);		/* fails harmlessly for KILL, STOP */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	setsid();				/* fails if we lead a group already: fine */
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	ioctl(fd, TIOCSCTTY, 1);
	ioctl(fd, TIOCSWINSZ, &ws);
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	execl("/bin/sh", "sh", "-i", (char *)NULL);
	perror("exec /bin/sh");
	return 127;
}
