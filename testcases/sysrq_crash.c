// SPDX-License-Identifier: GPL-2.0+
/*
 * sysrq_crash: crash the guest kernel on purpose (SysRq 'c'), to show how
 * the lab reports a host whose kernel panicked while the other hosts'
 * results are kept. Used by lab/labs/crash only.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	int fd = open("/proc/sysrq-trigger", O_WRONLY);

	printf("TAP version 13\n1..1\n# crashing the kernel with SysRq c\n");
	fflush(stdout);
	if (fd < 0 || write(fd, "c", 1) != 1)
		perror("sysrq-trigger");
	/* Not reached when the crash works. */
	printf("not ok 1 crash_the_kernel\n");
	return 1;
}
