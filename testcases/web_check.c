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
 *   web_check load ADDR PORT FILE CONNS SECONDS
 *                                   the machine's wrk against /FILE: no
 *                                   non-2xx answer, no socket error; prints
 *                                   requests/s and latency as a bench line
 *   web_check bench ADDR SECONDS CONNS,... FILE,... METHOD=PORT...
 *                                   the benchmark: wrk against each server
 *                                   for each file and number of connections,
 *                                   one "# bench: scenario=web" line each
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

/* Runs the machine's wrk against /@file; false if it did not run. */
static bool wrk(const char *file, int conns, int seconds, struct load *l)
{
	char cmd[512], line[512];
	long non2xx = 0, errors = 0, requests = -1;
	double rps = 0, p50 = -1, p99 = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "wrk --latency -t1 -c%d -d%ds --timeout 10s http://%s:%d/%s 2>&1",
		 conns, seconds, addr, port, file);
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

static void check_load(const char *file, int conns, int seconds)
{
	struct load l;
	char name[64];

	snprintf(name, sizeof(name), "wrk_%s_%d_connections", file, conns);
	if (!wrk(file, conns, seconds, &l)) {
		result(false, name, "wrk did not run (a host with tools runs the machine's wrk)");
		return;
	}
	printf("# load: file=%s conns=%d requests=%ld rps=%.1f p50_us=%.0f p99_us=%.0f\n",
	       file, conns, l.requests, l.rps, l.p50, l.p99);
	result(l.non2xx == 0 && l.errors == 0, name, "non-2xx answers or socket errors");
}

/*
 * The benchmark: every server (METHOD=PORT) under every file and number of
 * connections, one after the other, in one run (bench.py compares figures
 * of one log only): a "# bench:" line each, valid when every answer was
 * a 2xx and no socket failed.
 */
static void bench(int seconds, char *conns_list, char *files_list, char **servers, int n)
{
	char *files[8], *conns[8], *save;
	int nf = 0, nc = 0;

	for (char *t = strtok_r(files_list, ",", &save); t && nf < 8; t = strtok_r(NULL, ",", &save))
		files[nf++] = t;
	for (char *t = strtok_r(conns_list, ",", &save); t && nc < 8; t = strtok_r(NULL, ",", &save))
		conns[nc++] = t;
	for (int f = 0; f < nf; f++) {
		for (int c = 0; c < nc; c++) {
			for (int i = 0; i < n; i++) {
				char method[32], name[96];
				struct load l;
				bool ran;

				snprintf(method, sizeof(method), "%.*s", (int)strcspn(servers[i], "="), servers[i]);
				port = atoi(servers[i] + strcspn(servers[i], "=") + 1);
				ran = wrk(files[f], atoi(conns[c]), seconds, &l);
				ran = ran && l.non2xx == 0 && l.errors == 0;
				printf("# bench: scenario=web method=%s file=%s conns=%s requests=%ld rps=%.1f "
				       "p50_us=%.0f p99_us=%.0f valid=%d\n", method, files[f], conns[c],
				       l.requests, l.rps, l.p50, l.p99, ran);
				snprintf(name, sizeof(name), "%s_%s_%s_connections", method, files[f], conns[c]);
				result(ran, name, "wrk did not run, or saw non-2xx answers or socket errors");
			}
		}
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		goto usage;
	addr = argv[2];
	port = atoi(argv[3]);	/* bench: SECONDS; each server names its port */
	printf("TAP version 13\n");
	if (!strcmp(argv[1], "http") && argc == 4) {
		check_http();
	} else if (!strcmp(argv[1], "curl") && argc == 4) {
		check_curl();
	} else if (!strcmp(argv[1], "load") && argc == 7) {
		check_load(argv[4], atoi(argv[5]), atoi(argv[6]));
	} else if (!strcmp(argv[1], "bench") && argc >= 7) {
		/* bench ADDR SECONDS CONNS,... FILE,... METHOD=PORT... */
		bench(atoi(argv[3]), argv[4], argv[5], argv + 6, argc - 6);
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
	fprintf(stderr, "usage: %s http|curl|quit ADDR PORT | load ADDR PORT FILE CONNS SECONDS |\n"
		"       bench ADDR SECONDS CONNS,... FILE,... METHOD=PORT...\n", argv[0]);
	return 2;
}
