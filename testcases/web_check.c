// SPDX-License-Identifier: GPL-2.0
/*
 * web_check: checks a web server of the web lab from another host.
 *
 *   web_check http ADDR PORT        HTTP/1.1 as kevent_httpd promises it:
 *                                   every file byte for byte with its
 *                                   Content-Length over one kept-alive
 *                                   connection, HEAD, 404, 40 pipelined
 *                                   requests answered in order, and
 *                                   Connection: close honoured
 *   web_check curl ADDR PORT        the machine's curl (a host with tools)
 *                                   fetches each file; its bytes must be
 *                                   the file's
 *   web_check load ADDR PORT FILE CONNS SECONDS [DEPTH]
 *                                   the machine's wrk against /FILE: no
 *                                   non-2xx answer, no socket error; prints
 *                                   requests/s and latency as a bench line;
 *                                   DEPTH requests at a time per connection
 *                                   (pipelined), 1 unless given
 *   web_check bench ADDR FILE:CONNS:SECONDS[:DEPTH],... [cpu=PORT] METHOD=PORT...
 *                                   the benchmark: wrk against each server
 *                                   at each point, one "# bench:
 *                                   scenario=web" line each; with web_cpu
 *                                   on the server's host at cpu=PORT, its
 *                                   guest's CPU per request; DEPTH > 1:
 *                                   each connection sends DEPTH requests
 *                                   at a time (HTTP pipelining, as the
 *                                   TechEmpower plaintext test at 16);
 *                                   a server that answers /.stats
 *                                   (kevent_httpd -q) gets its system
 *                                   calls per request counted
 *   web_check quit ADDR PORT        asks a server started with -q to exit
 *
 * The files and their bytes are include/web.h's. Results are KTAP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench_net.h"
#include "web.h"

static const char *addr;
static int port, failed, tests;

static void result(bool ok, const char *name, const char *why)
{
	tests++;
	if (!ok) {
		failed++;
		printf("# %s: %s\n", name, why);
	}
	printf("%s %d %s\n", ok ? "ok" : "not ok", tests, name);
}

static int dial(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 20 };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, addr, &sa.sin_addr);
	for (int tries = 0; tries < 600; tries++) {
		if (!connect(s, (void *)&sa, sizeof(sa))) {
			setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			return s;
		}
		/* The server may not listen yet: retry for up to 60 s. */
		close(s);
		usleep(100 * 1000);
		s = socket(AF_INET, SOCK_STREAM, 0);
	}
	return -1;
}

/* A buffered reader of one connection. */
struct reader {
	int s;
	char buf[1 << 16];
	size_t len;
	bool eof;
};

static bool fill(struct reader *r)
{
	ssize_t n;

	if (r->len == sizeof(r->buf))
		return false;
	n = recv(r->s, r->buf + r->len, sizeof(r->buf) - r->len, 0);
	if (n <= 0) {
		r->eof = true;
		return false;
	}
	r->len += n;
	return true;
}

struct response {
	int status;
	long length;		/* Content-Length, -1 if none */
	bool close;		/* Connection: close */
};

/* Reads one response's head. */
static bool read_head(struct reader *r, struct response *out)
{
	char *end, *line;

	while (!(end = memmem(r->buf, r->len, "\r\n\r\n", 4)))
		if (!fill(r))
			return false;
	*end = 0;
	out->length = -1;
	out->close = false;
	if (sscanf(r->buf, "HTTP/1.1 %d", &out->status) != 1)
		return false;
	for (line = strstr(r->buf, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
		if (!strncasecmp(line + 2, "Content-Length:", 15))
			out->length = atol(line + 17);
		if (!strncasecmp(line + 2, "Connection: close", 17))
			out->close = true;
	}
	memmove(r->buf, end + 4, r->len - (end + 4 - r->buf));
	r->len -= end + 4 - r->buf;
	return true;
}

/* Reads @n body bytes; checks them against file @f unless @f < 0. */
static bool read_body(struct reader *r, long n, int f)
{
	uint64_t at = 0;

	while (n > 0) {
		size_t take;

		if (!r->len && !fill(r))
			return false;
		take = r->len < (size_t)n ? r->len : (size_t)n;
		for (size_t i = 0; f >= 0 && i < take; i++)
			if ((unsigned char)r->buf[i] != web_byte(f, at + i))
				return false;
		memmove(r->buf, r->buf + take, r->len - take);
		r->len -= take;
		at += take;
		n -= take;
	}
	return true;
}

static bool get(struct reader *r, unsigned int f)
{
	struct response rs;

	return read_head(r, &rs) && rs.status == 200 && rs.length == (long)web_files[f].size &&
	       read_body(r, rs.length, f);
}

static void send_all(int s, const char *text)
{
	send(s, text, strlen(text), MSG_NOSIGNAL);
}

static void check_http(void)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct response rs;
	char req[256], *many;
	unsigned int f, i;
	bool ok;

	r->s = dial();
	if (r->s < 0) {
		result(false, "connect", strerror(errno));
		return;
	}
	ok = true;
	for (f = 0; f < WEB_NFILES; f++) {
		snprintf(req, sizeof(req), "GET /%s HTTP/1.1\r\nHost: lab\r\n\r\n", web_files[f].name);
		send_all(r->s, req);
		ok = ok && get(r, f);
	}
	result(ok, "files_over_one_kept_alive_connection", "a status, a length or a byte is wrong");
	send_all(r->s, "HEAD /large HTTP/1.1\r\nHost: lab\r\n\r\n"
		 "GET /no-such-file HTTP/1.1\r\nHost: lab\r\n\r\n");
	ok = read_head(r, &rs) && rs.status == 200 && rs.length == (long)web_files[1].size;
	result(ok, "head_has_the_length_and_no_body", "wrong HEAD answer");
	ok = read_head(r, &rs) && rs.status == 404 && rs.length >= 0 && read_body(r, rs.length, -1);
	result(ok, "missing_file_is_404", "no 404");
	/* 40 requests in one write: the answers in the order asked. */
	many = calloc(40, 64);	/* each request is under 64 bytes */
	for (i = 0; i < 40; i++)
		strcat(many, i % 3 == 1 ? "GET /large HTTP/1.1\r\nHost: lab\r\n\r\n" :
					  "GET /small HTTP/1.1\r\nHost: lab\r\n\r\n");
	send_all(r->s, many);
	ok = true;
	for (i = 0; i < 40 && ok; i++)
		ok = get(r, i % 3 == 1 ? 1 : 0);
	result(ok, "pipelined_requests_answered_in_order", "an answer is missing or out of order");
	send_all(r->s, "GET /small HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n");
	ok = read_head(r, &rs) && rs.status == 200 && rs.close && read_body(r, rs.length, 0);
	ok = ok && !fill(r) && r->eof && r->len == 0;
	result(ok, "connection_close_is_honoured", "the server kept the connection open");
	close(r->s);
	free(many);
	free(r);
}

static void check_curl(void)
{
	for (unsigned int f = 0; f < WEB_NFILES; f++) {
		char cmd[256], name[64], buf[4096];
		uint64_t at = 0;
		bool ok = true;
		size_t n;
		FILE *p;

		snprintf(cmd, sizeof(cmd), "curl -sS --fail http://%s:%d/%s", addr, port, web_files[f].name);
		p = popen(cmd, "r");
		if (!p) {
			result(false, "curl", strerror(errno));
			continue;
		}
		while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
			for (size_t i = 0; i < n; i++)
				ok = ok && (unsigned char)buf[i] == web_byte(f, at + i);
			at += n;
		}
		ok = pclose(p) == 0 && ok && at == web_files[f].size;
		snprintf(name, sizeof(name), "curl_gets_%s", web_files[f].name);
		result(ok, name, "curl failed, or its bytes are not the file's");
	}
}

struct load {
	long non2xx, errors, requests;
	double rps, p50, p99;
};

/*
 * wrk's script for pipelining, as TechEmpower's pipeline.lua: each of a
 * connection's writes carries DEPTH requests, and wrk counts each answer.
 */
#define PIPELINE_LUA	"/tmp/web_check_pipeline.lua"

static bool write_pipeline_script(void)
{
	FILE *f = fopen(PIPELINE_LUA, "w");

	if (!f)
		return false;
	fputs("init = function(args)\n"
	      "  local r = {}\n"
	      "  for i = 1, tonumber(args[1]) do r[i] = wrk.format() end\n"
	      "  req = table.concat(r)\n"
	      "end\n"
	      "request = function() return req end\n", f);
	return !fclose(f);
}

/* Runs the machine's wrk against /@file; false if it did not run. */
static bool wrk(const char *file, int conns, int seconds, int depth, struct load *l)
{
	char cmd[512], line[512], script[128] = "";
	long non2xx = 0, errors = 0, requests = -1;
	double rps = 0, p50 = -1, p99 = -1;
	FILE *p;

	if (depth > 1) {
		if (!write_pipeline_script())
			return false;
		snprintf(script, sizeof(script), " -s " PIPELINE_LUA);
	}
	/* A request may take as long as the run (1000 connections of 256 KiB). */
	snprintf(cmd, sizeof(cmd), "wrk --latency -t1 -c%d -d%ds --timeout %ds%s http://%s:%d/%s%s%.0d 2>&1",
		 conns, seconds, seconds > 10 ? seconds : 10, script, addr, port, file,
		 depth > 1 ? " -- " : "", depth > 1 ? depth : 0);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		long a, b, c, d;
		double v;
		char unit[8];

		fputs("# ", stdout);
		fputs(line, stdout);
		/* sscanf() counts the conversions before a mismatch: find the words first. */
		if (strstr(line, "Non-2xx") && sscanf(line, " Non-2xx or 3xx responses: %ld", &a) == 1)
			non2xx = a;
		else if (strstr(line, "Socket errors") &&
			 sscanf(line, " Socket errors: connect %ld, read %ld, write %ld, timeout %ld",
				&a, &b, &c, &d) == 4)
			errors = a + b + c + d;
		else if (strstr(line, " requests in ") && sscanf(line, " %ld requests in", &a) == 1)
			requests = a;
		else if (strstr(line, "Requests/sec:") && sscanf(line, "Requests/sec: %lf", &v) == 1)
			rps = v;
		else if (strstr(line, "%") && sscanf(line, " %ld%% %lf%7s", &a, &v, unit) == 3 &&
			 (a == 50 || a == 99))
			*(a == 50 ? &p50 : &p99) = v * (!strcmp(unit, "s") ? 1e6 :
							 !strcmp(unit, "ms") ? 1e3 : 1);
	}
	*l = (struct load){ non2xx, errors, requests, rps, p50, p99 };
	return p && !pclose(p) && requests > 0;
}

static void check_load(const char *file, int conns, int seconds, int depth)
{
	struct load l;
	char name[80];

	snprintf(name, sizeof(name), "wrk_%s_%d_connections%s%.0d", file, conns,
		 depth > 1 ? "_depth_" : "", depth > 1 ? depth : 0);
	if (depth < 1 || depth > 64) {
		result(false, name, "DEPTH is 1 to 64");
		return;
	}
	if (!wrk(file, conns, seconds, depth, &l)) {
		result(false, name, "wrk did not run (a host with tools runs the machine's wrk)");
		return;
	}
	printf("# load: file=%s conns=%d requests=%ld rps=%.1f p50_us=%.0f p99_us=%.0f\n",
	       file, conns, l.requests, l.rps, l.p50, l.p99);
	result(l.non2xx == 0 && l.errors == 0, name, "non-2xx answers or socket errors");
}

/* The server guest's busy time so far (web_cpu on @cpu_port), or -1. */
static double server_busy(int cpu_port, const char *word)
{
	int saved = port, s;
	char line[64] = "";
	ssize_t n;

	port = cpu_port;
	s = dial();
	port = saved;
	if (s < 0)
		return -1;
	send_all(s, word);
	n = recv(s, line, sizeof(line) - 1, MSG_WAITALL);
	close(s);
	return n > 0 ? atof(line) : -1;
}

/*
 * The system calls the server made so far, from its /.stats answer
 * ("requests=N calls=M", kevent_httpd -q); -1 if it gave none (nginx).
 */
static double server_calls(void)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct response rs;
	double calls = -1;
	long n, c;

	if (!r)
		return -1;
	r->s = dial();
	if (r->s >= 0) {
		send_all(r->s, "GET " WEB_STATS " HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n");
		if (read_head(r, &rs) && rs.status == 200 && rs.length > 0 && rs.length < 64) {
			while (r->len < (size_t)rs.length && fill(r))
				;
			r->buf[r->len < sizeof(r->buf) ? r->len : sizeof(r->buf) - 1] = 0;
			if (sscanf(r->buf, "requests=%ld calls=%ld", &n, &c) == 2)
				calls = c;
		}
		close(r->s);
	}
	free(r);
	return calls;
}

/*
 * Before each point the server's guest must be idle again (below 5% busy
 * over half a second, for up to 60 s): closing a thousand connections, or
 * sending what the last point's clients no longer read, is work too, and
 * would be charged to the next server.
 */
static void settle(int cpu_port)
{
	double before = server_busy(cpu_port, "busy"), now;

	for (int i = 0; i < 120 && before >= 0; i++, before = now) {
		usleep(500 * 1000);
		now = server_busy(cpu_port, "busy");
		if (now < 0 || now - before < 0.025)
			return;
	}
}

/*
 * The benchmark: every server (METHOD=PORT) at every point (FILE:CONNS:
 * SECONDS), one after the other, in one run (bench.py compares figures of
 * one log only): a "# bench:" line each, valid when wrk answered, every
 * answer was a 2xx and no socket failed. With cpu=PORT (web_cpu on the
 * server's host) each line also has the server guest's CPU per request and
 * how busy each guest was: a client near 1.0 means wrk, not the server,
 * set the pace.
 */
static void bench(char *points_list, char **servers, int n)
{
	char *points[16], *save;
	int np = 0, cpu_port = 0;

	for (char *t = strtok_r(points_list, ",", &save); t && np < 16; t = strtok_r(NULL, ",", &save))
		points[np++] = t;
	for (int i = 0; i < n; i++)
		if (!strncmp(servers[i], "cpu=", 4))
			cpu_port = atoi(servers[i] + 4);
	for (int p = 0; p < np; p++) {
		char file[32];
		int conns, seconds, depth = 1, got;

		got = sscanf(points[p], "%31[^:]:%d:%d:%d", file, &conns, &seconds, &depth);
		if (got < 3 || conns < 1 || seconds < 1 || depth < 1 || depth > 64) {
			result(false, points[p], "a point is FILE:CONNS:SECONDS[:DEPTH], DEPTH 1 to 64");
			continue;
		}
		for (int i = 0; i < n; i++) {
			double s0, s1, c0, c1, t0, t1, cpu_us = -1, srv = -1, cli, k0, k1, calls = -1;
			char method[32], name[96], counted[48];
			struct load l;
			bool ran;

			if (!strncmp(servers[i], "cpu=", 4))
				continue;
			snprintf(method, sizeof(method), "%.*s", (int)strcspn(servers[i], "="), servers[i]);
			if (cpu_port)
				settle(cpu_port);
			port = atoi(servers[i] + strcspn(servers[i], "=") + 1);
			k0 = server_calls();
			s0 = cpu_port ? server_busy(cpu_port, "busy") : -1;
			c0 = bench_guest_busy();
			t0 = bench_now();
			ran = wrk(file, conns, seconds, depth, &l);
			t1 = bench_now();
			c1 = bench_guest_busy();
			s1 = cpu_port ? server_busy(cpu_port, "busy") : -1;
			k1 = server_calls();
			/* Less the /.stats request's own calls: a handful, of thousands. */
			if (k0 >= 0 && k1 >= k0 && l.requests > 0)
				calls = (k1 - k0) / l.requests;
			ran = ran && l.non2xx == 0 && l.errors == 0;
			if (s0 >= 0 && s1 >= s0) {
				srv = (s1 - s0) / (t1 - t0);
				cpu_us = l.requests > 0 ? (s1 - s0) * 1e6 / l.requests : -1;
			}
			cli = (c1 - c0) / (t1 - t0);
			/* Only servers that count their calls have the figure. */
			snprintf(counted, sizeof(counted), calls >= 0 ? "server_calls_per_req=%.3f " : "",
				 calls);
			printf("# bench: scenario=web method=%s file=%s conns=%d depth=%d seconds=%d "
			       "requests=%ld rps=%.1f p50_us=%.0f p99_us=%.0f server_cpu_us_per_req=%.1f "
			       "%sserver_busy=%.2f client_busy=%.2f valid=%d\n",
			       method, file, conns, depth, seconds, l.requests, l.rps, l.p50, l.p99,
			       cpu_us, counted, srv, cli, ran);
			snprintf(name, sizeof(name), "%s_%s_%d_connections%s%.0d", method, file, conns,
				 depth > 1 ? "_depth_" : "", depth > 1 ? depth : 0);
			result(ran, name, "wrk did not run, or saw non-2xx answers or socket errors");
		}
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		goto usage;
	addr = argv[2];
	port = atoi(argv[3]);	/* bench: the points; each server names its port */
	printf("TAP version 13\n");
	if (!strcmp(argv[1], "http") && argc == 4) {
		check_http();
	} else if (!strcmp(argv[1], "curl") && argc == 4) {
		check_curl();
	} else if (!strcmp(argv[1], "load") && (argc == 7 || argc == 8)) {
		check_load(argv[4], atoi(argv[5]), atoi(argv[6]), argc == 8 ? atoi(argv[7]) : 1);
	} else if (!strcmp(argv[1], "bench") && argc >= 5) {
		/* bench ADDR FILE:CONNS:SECONDS,... [cpu=PORT] METHOD=PORT... */
		bench(argv[3], argv + 4, argc - 4);
	} else if (!strcmp(argv[1], "quit") && argc == 4) {
		int s = dial();

		send_all(s, "GET " WEB_QUIT " HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n");
		result(s >= 0, "asked_the_server_to_stop", strerror(errno));
		close(s);
	} else {
		goto usage;
	}
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
usage:
	fprintf(stderr, "usage: %s http|curl|quit ADDR PORT | load ADDR PORT FILE CONNS SECONDS [DEPTH] |\n"
		"       bench ADDR FILE:CONNS:SECONDS[:DEPTH],... [cpu=PORT] METHOD=PORT...\n", argv[0]);
	return 2;
}
