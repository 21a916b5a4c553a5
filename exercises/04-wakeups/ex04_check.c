// SPDX-License-Identifier: GPL-2.0+
/*
 * ex04_check: compares the figures of an answer to exercise 04 with the
 * trace the same lab run recorded.
 *
 *   ex04_check TRACE ANSWER_FILE
 *
 * TRACE is the text of /sys/kernel/tracing/trace (as lab_trace saved it);
 * lab/kevent_lab/trace.py reads the same lines on the host. Each figure
 * of the answer ("NAME: NUMBER") is compared with the one counted here:
 *
 *   kevents_added       kevent_add events                       exactly
 *   accept_deliveries   kevent_deliver of the listening socket  exactly
 *                       (the kevent added with event=0x2)
 *   kevent_wakeups      sched_wakeup of the task kevent_echo    give or take 1
 *   epoll_wakeups       sched_wakeup of ex04_epoll_echo         give or take 1
 *
 * The first two follow from the code and are the same in every run; how
 * often a server sleeps and is woken depends on how the segments fall, so
 * the answer, from an earlier run, may be one off.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest.h"

struct figures {
	int kevents_added, accept_deliveries, kevent_wakeups, epoll_wakeups;
};

/* The value of field @key ("id=", "comm=") in @line, into @out. */
static int field(const char *line, const char *key, char *out, size_t size)
{
	const char *v = strstr(line, key);

	if (!v)
		return 0;
	v += strlen(key);
	snprintf(out, size, "%.*s", (int)strcspn(v, " \n"), v);
	return 1;
}

static int count(const char *path, struct figures *f)
{
	char line[512], id[64], accept_id[64] = "", comm[64];
	FILE *t = fopen(path, "r");
	int events = 0;

	memset(f, 0, sizeof(*f));
	while (t && fgets(line, sizeof(line), t)) {
		if (line[0] == '#')
			continue;
		events++;
		if (strstr(line, " kevent_add: ")) {
			f->kevents_added++;
			if (strstr(line, "type=socket") && strstr(line, " event=0x2 "))
				field(line, " id=", accept_id, sizeof(accept_id));
		} else if (strstr(line, " kevent_deliver: ") && accept_id[0] &&
			   field(line, " id=", id, sizeof(id)) && !strcmp(id, accept_id) &&
			   strstr(line, "type=socket")) {
			f->accept_deliveries++;
		} else if (strstr(line, " sched_wakeup: ") && field(line, " comm=", comm, sizeof(comm))) {
			f->kevent_wakeups += !strcmp(comm, "kevent_echo");
			f->epoll_wakeups += !strcmp(comm, "ex04_epoll_echo");
		}
	}
	if (t)
		fclose(t);
	return events;
}

/* The number after "@key:" in the answer file, or -1. */
static int answer(const char *path, const char *key)
{
	char line[256];
	size_t n = strlen(key);
	FILE *f = fopen(path, "r");
	int v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%d", &v) != 1)
			v = -1;
	if (f)
		fclose(f);
	return v;
}

static void compare(const char *path, const char *key, int traced, int tolerance)
{
	int given = answer(path, key);

	if (given < 0)
		ksft_print_msg("%s: no number in the answer\n", key);
	else if (abs(given - traced) > tolerance)
		ksft_print_msg("%s: the answer says %d, this run's trace %d\n", key, given, traced);
	ksft_test_result(given >= 0 && abs(given - traced) <= tolerance, "%s\n", key);
}

int main(int argc, char **argv)
{
	struct figures f;
	int events;

	if (argc != 3) {
		fprintf(stderr, "usage: %s TRACE ANSWER_FILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(5);
	events = count(argv[1], &f);
	ksft_print_msg("%s: %d events; kevents_added %d, accept_deliveries %d, "
		       "kevent_wakeups %d, epoll_wakeups %d\n", argv[1], events, f.kevents_added,
		       f.accept_deliveries, f.kevent_wakeups, f.epoll_wakeups);
	/* Without both servers in the trace, nothing below means anything. */
	ksft_test_result(f.kevents_added && f.accept_deliveries && f.kevent_wakeups &&
			 f.epoll_wakeups, "the_trace_saw_both_servers\n");
	compare(argv[2], "kevents_added", f.kevents_added, 0);
	compare(argv[2], "accept_deliveries", f.accept_deliveries, 0);
	compare(argv[2], "kevent_wakeups", f.kevent_wakeups, 1);
	compare(argv[2], "epoll_wakeups", f.epoll_wakeups, 1);
	ksft_finished();
}
