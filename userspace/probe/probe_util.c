/* Probe helpers: result formatting, small file reads, mountinfo, signals,
 * libbpf output capture. */
#include "probe.h"
#include "probe_internal.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *sb_probe_status_name(enum sb_probe_status s)
{
	switch (s) {
	case SB_PROBE_OK:
		return "ok";
	case SB_PROBE_MISSING:
		return "missing";
	case SB_PROBE_ERROR:
		break;
	}
	return "error";
}

void sb_probe_set(struct sb_probe_result *r, enum sb_probe_status s, int code, const char *remedy,
		  const char *fmt, ...)
{
	va_list ap;

	r->status = s;
	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
	snprintf(r->remedy, sizeof(r->remedy), "%s", remedy ? remedy : "");
}

const char *sb_probe_errno_name(int err)
{
	static __thread char buf[32];
	const char *n = err > 0 ? strerrorname_np(err) : NULL;

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

long sb_probe_read_file(const char *path, char *buf, size_t len)
{
	size_t off = 0;
	int fd, e;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf + off, len - 1 - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = -errno;
			close(fd);
			buf[0] = '\0';
			return e;
		}
		if (n == 0)
			break;
		off += (size_t)n;
		if (off == len - 1) {
			char c;

			e = read(fd, &c, 1) > 0 ? -E2BIG : 0;
			if (e) {
				close(fd);
				buf[off] = '\0';
				return e;
			}
			break;
		}
	}
	close(fd);
	buf[off] = '\0';
	return (long)off;
}

int sb_probe_slurp(const char *path, char **out)
{
	size_t cap = 8192, off = 0;
	char *buf = malloc(cap), *nb;
	int fd, e;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		free(buf);
		return e;
	}
	for (;;) {
		ssize_t n;

		if (cap - off < 2) {
			if (cap > (64u << 20)) {
				e = -E2BIG;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				e = -ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + off, cap - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	*out = buf;
	return 0;
fail:
	close(fd);
	free(buf);
	return e;
}

/* Copies one space-separated mountinfo field, decoding \ooo escapes. */
static const char *field(const char *p, const char *end, char *out, size_t out_len)
{
	size_t n = 0;

	while (p < end && *p == ' ')
		p++;
	while (p < end && *p != ' ') {
		char c = *p++;

		if (c == '\\' && end - p >= 3 && p[0] >= '0' && p[0] <= '3' && p[1] >= '0' && p[1] <= '7' &&
		    p[2] >= '0' && p[2] <= '7') {
			c = (char)((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0'));
			p += 3;
		}
		if (n + 1 < out_len)
			out[n++] = c;
	}
	if (out_len)
		out[n] = '\0';
	return p;
}

bool sb_mountinfo_next(const char **cursor, struct sb_mount_entry *e)
{
	const char *p = *cursor;

	while (p && *p) {
		const char *end = strchr(p, '\n'), *q, *sep;
		char skip[64];
		int i;

		if (!end)
			end = p + strlen(p);
		*cursor = *end ? end + 1 : end;
		/* ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER */
		q = p;
		for (i = 0; i < 3; i++)
			q = field(q, end, skip, sizeof(skip));
		q = field(q, end, e->root, sizeof(e->root));
		q = field(q, end, e->point, sizeof(e->point));
		sep = memmem(q, (size_t)(end - q), " - ", 3);
		if (sep)
			field(sep + 3, end, e->fstype, sizeof(e->fstype));
		p = *cursor;
		if (sep && e->root[0] == '/' && e->point[0] == '/' && e->fstype[0])
			return true;
	}
	*cursor = p;
	return false;
}

bool sb_mountinfo_has(const char *mountinfo, const char *point, const char *fstype)
{
	struct sb_mount_entry *e = malloc(sizeof(*e));
	const char *cur = mountinfo;
	bool found = false;

	if (!e)
		return false;
	while (!found && sb_mountinfo_next(&cur, e))
		found = !strcmp(e->point, point) && !strcmp(e->fstype, fstype);
	free(e);
	return found;
}

void sb_probe_signals_block(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void sb_probe_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static char libbpf_last[512];
static libbpf_print_fn_t libbpf_saved;
static int libbpf_depth;

static int capture(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[sizeof(libbpf_last)];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	if (n)
		memcpy(libbpf_last, line, n + 1);
	return 0;
}

void sb_probe_libbpf_quiet(void)
{
	if (libbpf_depth++ == 0) {
		libbpf_last[0] = '\0';
		libbpf_saved = libbpf_set_print(capture);
	}
}

void sb_probe_libbpf_loud(void)
{
	if (libbpf_depth > 0 && --libbpf_depth == 0)
		libbpf_set_print(libbpf_saved);
}

const char *sb_probe_libbpf_last(void)
{
	return libbpf_last;
}
