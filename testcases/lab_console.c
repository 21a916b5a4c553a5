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
 *
 * The shell runs in a session of its own, and when it ends (exit, or the
 * hangup UML gives the terminal when its pty on this machine is closed,
 * as after each exec) whatever is left of that session is killed: a
 * command that ignores SIGINT and SIGHUP, which exec's Ctrl-C and the
 * hangup could not end, no longer runs on behind the next shell.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The session of process @pid, from /proc/PID/stat, or -1 (also for a
 * zombie: it is gone but for its parent's wait, and kill() cannot end it).
 */
static pid_t session_of(pid_t pid)
{
	char path[64], buf[512], *p, state;
	int sid = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* After "(comm)", which may hold anything: state ppid pgrp session. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %d", &state, &sid) != 2)
		return -1;
	return state == 'Z' || state == 'X' ? -1 : sid;
}

/* SIGKILL to every live process of session @sid; returns how many. */
static int kill_session(pid_t sid)
{
	struct dirent *d;
	int n = 0;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		pid_t pid = atoi(d->d_name);

		if (pid > 0 && session_of(pid) == sid && !kill(pid, SIGKILL))
			n++;
	}
	closedir(dir);
	return n;
}

static int run_shell(const char *tty)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	int fd;

	setsid();
	fd = open(tty, O_RDWR);
	if (fd < 0) {
		perror(tty);
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

int main(int argc, char **argv)
{
	sigset_t none;
	int sig, status, tries;
	pid_t shell;

	if (argc != 2) {
		fprintf(stderr, "usage: lab_console TTY\n");
		return 2;
	}
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);		/* fails harmlessly for KILL, STOP */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	shell = fork();
	if (shell < 0) {
		perror("fork");
		return 1;
	}
	if (!shell)
		_exit(run_shell(argv[1]));
	/* We are in no session of the terminal's: its hangup is not ours. */
	while (waitpid(shell, &status, 0) < 0 && errno == EINTR)
		;
	/*
	 * The shell led its session: the session's id is its pid. Killed
	 * processes leave it at once (they are zombies, or reaped by init);
	 * the few tries are for a fork that raced the first sweep.
	 */
	for (tries = 0; tries < 100 && kill_session(shell) > 0; tries++)
		usleep(10000);
	return 0;
}
