// SPDX-License-Identifier: GPL-2.0+
/*
 * ex05_check: checks the answer to exercise 05 (find the bug) and that the
 * kernel under test delivers level-triggered events again.
 *
 *   ex05_check ANSWER_FILE
 *
 * The answer file has the lines "function: NAME", "call: NAME" and
 * "fix: TEXT". The two names are compared by their SHA-256 (busybox
 * sha256sum), so that reading this file does not tell them; a name is
 * compared in lower case, without blanks and without a trailing "()".
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>

#include "kselftest.h"
#include "kevent_user.h"

#define FUNCTION_SHA256	"c12bcac2ccd787fdf4771718661ac2c391d274b91e40a27ccd66d08abd6d69e4"
#define CALL_SHA256	"8a1b482edc2a28d0ac5e49680e48ebf38c21b21821ebd0d9f92cc76a96736c6d"

/* The value of "KEY: value" in @path, into @out; "" if there is none. */
static void field(const char *path, const char *key, char *out, size_t size)
{
	char line[512];
	size_t n = strlen(key);
	FILE *f = fopen(path, "r");

	out[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *v = line + n + 1;

		if (line[0] == '#' || strncmp(line, key, n) || line[n] != ':')
			continue;
		while (isspace((unsigned char)*v))
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(out, size, "%s", v);
	}
	if (f)
		fclose(f);
}

/*
 * @name in lower case, C identifier characters only, without "()" and
 * without leading underscores (kevent_queue_harvest() does its work in
 * __kevent_queue_harvest(): either name is right).
 */
static void normalise(const char *name, char *out, size_t size)
{
	size_t n = 0;

	while (*name == '_' || isspace((unsigned char)*name))
		name++;
	for (; *name && *name != '(' && n + 1 < size; name++)
		if (isalnum((unsigned char)*name) || *name == '_')
			out[n++] = tolower((unsigned char)*name);
	out[n] = 0;
}

static int matches(const char *name, const char *sha256)
{
	char norm[128], cmd[256], sum[65] = "";
	FILE *p;

	normalise(name, norm, sizeof(norm));
	if (!norm[0])
		return 0;
	/* Only [a-z0-9_] is left: safe in a shell word. */
	snprintf(cmd, sizeof(cmd), "printf %%s %s | sha256sum", norm);
	p = popen(cmd, "r");
	if (!p || fscanf(p, "%64s", sum) != 1)
		ksft_exit_fail_msg("cannot run sha256sum in the guest\n");
	pclose(p);
	return !strcmp(sum, sha256);
}

/*
 * A pipe with data in it, watched by a KEVENT_POLL kevent: level triggered,
 * every WAIT delivers it until the data is read. Returns NULL or what failed.
 */
static const char *level_triggered(void)
{
	struct ukevent uk, out;
	int p[2], kq = kevent_init();
	const char *why = NULL;
	char c;

	if (kq < 0 || pipe(p))
		return "setup failed";
	uk = kevent_fd(p[0], KEVENT_POLL, KEVENT_POLL_POLLIN, 0);
	if (kevent_add(kq, &uk, 1) != 1 || write(p[1], "x", 1) != 1)
		why = "ADD or write failed";
	else if (kevent_wait(kq, &out, 1, 1000) != 1)
		why = "the first WAIT did not deliver POLLIN";
	else if (kevent_wait(kq, &out, 1, 200) != 1)
		why = "the second WAIT did not deliver POLLIN, with the data still unread";
	else if (read(p[0], &c, 1) != 1 || kevent_wait(kq, &out, 1, 200) != 0)
		why = "a WAIT delivered POLLIN after the data was read";
	close(p[0]);
	close(p[1]);
	close(kq);
	return why;
}

int main(int argc, char **argv)
{
	char function[256], call[256], fix[512];
	const char *why;

	if (argc != 2) {
		fprintf(stderr, "usage: %s ANSWER_FILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(4);
	field(argv[1], "function", function, sizeof(function));
	field(argv[1], "call", call, sizeof(call));
	field(argv[1], "fix", fix, sizeof(fix));

	ksft_print_msg("function: \"%s\", call: \"%s\"\n", function, call);
	ksft_test_result(matches(function, FUNCTION_SHA256), "the_function_with_the_bug\n");
	ksft_test_result(matches(call, CALL_SHA256), "the_call_the_fix_restores\n");
	ksft_test_result(strlen(fix) >= 10 && strncmp(fix, "TODO", 4), "a_one_line_fix\n");

	why = level_triggered();
	if (why)
		ksft_print_msg("this kernel: %s (does it still have the bug?)\n", why);
	ksft_test_result(!why, "this_kernel_delivers_level_triggered_events_again\n");
	ksft_finished();
}
