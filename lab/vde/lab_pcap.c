// SPDX-License-Identifier: GPL-2.0
/*
 * lab_pcap: a vde_switch plugin that writes each frame the switch receives
 * to a pcap file, once, whole.
 *
 * vde2's own pdump plugin listens to both "packet/in" and "packet/out", so
 * a frame appears once as it enters and again for each port it leaves by,
 * and its file header claims a 96-byte snapshot, so readers cut every frame
 * there. A segment is one switch: what the switch receives is everything on
 * the segment, each frame once. No process of its own; the switch writes.
 *
 * Commands (vde_switch --rcfile, or its management socket):
 *   lab_pcap/file PATH   start writing to PATH (truncated)
 *   lab_pcap/stop        stop and close it
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * vde_switch's plugin interface, as vde2 2.3's vdeplugin.h declares it
 * (Debian ships that header only as a compressed example): the parts used.
 */
#define NOARG		0
#define STRARG		2
struct comlist {
	char *path;
	char *syntax;
	char *help;
	int (*doit)();
	unsigned char type;
	struct comlist *next;
};

struct plugin {
	char *name;
	char *help;
	void *handle;
	struct plugin *next;
};

int eventadd(int (*fun)(), char *path, void *arg);
int eventdel(int (*fun)(), char *path, void *arg);
void addcl(int ncl, struct comlist *cl);
void delcl(int ncl, struct comlist *cl);

struct plugin vde_plugin_data = {
	.name = "lab_pcap",
	.help = "write received frames to a pcap file",
};

#define SNAPLEN		262144
#define LINKTYPE_ETHERNET 1

static int out_fd = -1;

/* A "packet/in" event: (port, frame, length); 0 lets the frame through. */
static int frame_in(void *event, void *arg, va_list v)
{
	struct { uint32_t sec, usec, caplen, len; } rec;
	struct timeval tv;
	struct iovec iov[2];
	unsigned char *buf;
	int len;

	(void)va_arg(v, int);
	buf = va_arg(v, unsigned char *);
	len = va_arg(v, int);
	if (out_fd < 0 || len <= 0)
		return 0;
	gettimeofday(&tv, NULL);
	rec.sec = tv.tv_sec;
	rec.usec = tv.tv_usec;
	rec.caplen = rec.len = len;
	iov[0] = (struct iovec){ &rec, sizeof(rec) };
	iov[1] = (struct iovec){ buf, len };
	/* One write per frame: a reader never sees half a record but at the end. */
	if (writev(out_fd, iov, 2) < 0)
		fprintf(stderr, "lab_pcap: write: %s\n", strerror(errno));
	return 0;
}

static int stop(void)
{
	if (out_fd < 0)
		return 0;
	eventdel(frame_in, "packet/in", NULL);
	close(out_fd);
	out_fd = -1;
	return 0;
}

static int start(char *path)
{
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t zone;
		uint32_t sigfigs, snaplen, linktype;
	} hdr = { 0xa1b2c3d4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET };
	int fd, err;

	if (out_fd >= 0)
		return EBUSY;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = errno;
		fprintf(stderr, "lab_pcap: %s: %s\n", path, strerror(err));
		return err;
	}
	if (write(fd, &hdr, sizeof(hdr)) != sizeof(hdr)) {
		err = errno ? errno : EIO;
		close(fd);
		return err;
	}
	out_fd = fd;
	err = eventadd(frame_in, "packet/in", NULL);
	if (err)
		stop();
	return err;
}

static struct comlist commands[] = {
	{ "lab_pcap", "============", "write received frames to a pcap file", NULL, NOARG },
	{ "lab_pcap/file", "PATH", "start writing frames to PATH", start, STRARG },
	{ "lab_pcap/stop", "", "stop writing and close the file", stop, NOARG },
};

__attribute__((constructor)) static void init(void)
{
	addcl(sizeof(commands) / sizeof(commands[0]), commands);
}

__attribute__((destructor)) static void fini(void)
{
	stop();
	delcl(sizeof(commands) / sizeof(commands[0]), commands);
}
