/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kevent_httpd and its checker share: the files the server makes in
 * its document root, whose every byte both sides can compute.
 */
#ifndef WEB_H
#define WEB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/* The files of the web lab: name and size. */
static const struct web_file {
	const char *name;
	size_t size;
} web_files[] = {
	{ "small", 64 },
	{ "large", 256 * 1024 },
	{ "empty", 0 },
};

#define WEB_NFILES	(sizeof(web_files) / sizeof(web_files[0]))

/* Byte @i of file @f. */
static inline unsigned char web_byte(unsigned int f, uint64_t i)
{
	return (unsigned char)(i * 167 + (i >> 8) * 13 + f * 71 + 1);
}

/* Writes the files into @dir (made if missing); 0, or -1 with errno. */
static inline int web_make_files(const char *dir)
{
	char path[1024], buf[4096];
	unsigned int f;

	mkdir(dir, 0755);
	for (f = 0; f < WEB_NFILES; f++) {
		size_t i, j, n;
		FILE *out;

		snprintf(path, sizeof(path), "%s/%s", dir, web_files[f].name);
		out = fopen(path, "w");
		if (!out)
			return -1;
		for (i = 0; i < web_files[f].size; i += n) {
			n = web_files[f].size - i < sizeof(buf) ? web_files[f].size - i : sizeof(buf);
			for (j = 0; j < n; j++)
				buf[j] = web_byte(f, i + j);
			fwrite(buf, 1, n, out);
		}
		if (fclose(out))
			return -1;
	}
	return 0;
}

/* The path a client asks for to make a server started with -q exit. */
#define WEB_QUIT	"/.quit"

/* The path that a server started with -q answers with "requests=N calls=M". */
#define WEB_STATS	"/.stats"

#endif
