#include "scope.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* One /proc/self/mountinfo line, split. Fields with spaces are octal
 * escaped by the kernel (\040); unescape mount points. */
struct mi_line {
	unsigned long id;
	unsigned major, minor;
	char root[PATH_MAX];
	char point[PATH_MAX];
	char fstype[64];
};

static void unescape(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

static int mi_parse(const char *line, struct mi_line *m)
{
	char root[PATH_MAX], point[PATH_MAX];
	const char *sep;
	unsigned long parent;

	if (sscanf(line, "%lu %lu %u:%u %4095s %4095s", &m->id, &parent, &m->major, &m->minor, root, point) != 6)
		return -1;
	sep = strstr(line, " - ");
	if (!sep || sscanf(sep + 3, "%63s", m->fstype) != 1)
		return -1;
	unescape(root);
	unescape(point);
	snprintf(m->root, sizeof(m->root), "%s", root);
	snprintf(m->point, sizeof(m->point), "%s", point);
	return 0;
}

typedef int (*mi_fn)(const struct mi_line *m, void *arg);

static int mi_each(mi_fn fn, void *arg, struct sb_err *err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	if (!f)
		return sb_errf(err, -errno, "cannot read /proc/self/mountinfo: %s (is /proc mounted?)", strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		struct mi_line m;

		if (mi_parse(line, &m))
			continue;
		rc = fn(&m, arg);
		if (rc)
			break;
	}
	free(line);
	fclose(f);
	return rc > 0 ? 0 : rc;
}

struct cg2_find {
	char *out;
	size_t len;
	bool found;
	bool nsroot_bad;
};

static int cg2_cb(const struct mi_line *m, void *arg)
{
	struct cg2_find *c = arg;

	if (strcmp(m->fstype, "cgroup2"))
		return 0;
	if (strcmp(m->root, "/")) {
		c->nsroot_bad = true;
		return 0;
	}
	snprintf(c->out, c->len, "%s", m->point);
	c->found = true;
	return 1;
}

int sb_cgroup2_root(char *out, size_t len, struct sb_err *err)
{
	struct cg2_find c = { .out = out, .len = len };
	int rc = mi_each(cg2_cb, &c, err);

	if (rc)
		return rc;
	if (!c.found && c.nsroot_bad)
		return sb_errf(err, -ENOENT,
			       "cgroup v2 is only mounted from inside a cgroup namespace here; sandbox-bpf needs the root of the hierarchy (run it in the initial cgroup namespace)");
	if (!c.found)
		return sb_errf(err, -ENOENT,
			       "cgroup v2 is not mounted: mount it (mount -t cgroup2 none /sys/fs/cgroup) or use a system with the unified hierarchy");
	return 0;
}

static int cgroup_id_of(const char *path, uint64_t *id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h;
	int mount_id;

	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = sizeof(uint64_t);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) < 0)
		return -errno;
	if (h.fh.handle_bytes != sizeof(uint64_t))
		return -EINVAL;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

int sb_cgroup_resolve(const char *path, struct sb_kscope *out, struct sb_err *err)
{
	char root[PATH_MAX], real[PATH_MAX], tried[PATH_MAX * 2];
	struct statfs sfs;
	size_t rl;
	const char *p;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sb_cgroup2_root(root, sizeof(root), err);
	if (rc)
		return rc;
	snprintf(tried, sizeof(tried), "%s", path);
	if (!realpath(tried, real)) {
		/* Not a path from here: try it relative to the cgroup2 root. */
		snprintf(tried, sizeof(tried), "%s/%s", root, path[0] == '/' ? path + 1 : path);
		if (!realpath(tried, real))
			return sb_errf(err, -ENOENT,
				       "cgroup '%s' does not exist (looked at '%s' and '%s'); create it first (mkdir) or give the path of an existing cgroup v2 directory",
				       path, path, tried);
	}
	if (statfs(real, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC)
		return sb_errf(err, -EINVAL, "'%s' is not a cgroup v2 directory (cgroup v2 is mounted at %s)", real,
			       root);
	rl = strlen(root);
	if (strncmp(real, root, rl) || (real[rl] != '/' && real[rl] != '\0'))
		return sb_errf(err, -EINVAL, "'%s' is not under the cgroup v2 mount %s", real, root);
	snprintf(out->path, sizeof(out->path), "%s", real);
	snprintf(out->rel, sizeof(out->rel), "%s", real[rl] ? real + rl : "/");
	out->level = 0;
	for (p = out->rel; *p; p++)
		if (*p == '/' && p[1])
			out->level++;
	rc = cgroup_id_of(real, &out->id);
	if (rc)
		return sb_errf(err, rc, "cannot read the cgroup id of '%s': %s", real, strerror(-rc));
	return 0;
}

int sb_cgroup_of_pid(int pid, char *out, size_t len, struct sb_err *err)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return sb_errf(err, -errno, "cannot read %s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line + 3);
			rc = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	if (rc)
		return sb_errf(err, rc, "%s has no cgroup v2 entry", path);
	return 0;
}

static bool path_under(const char *a, const char *b)
{
	size_t l = strlen(b);

	if (!strcmp(b, "/"))
		return true;
	return !strncmp(a, b, l) && (a[l] == '\0' || a[l] == '/');
}

bool sb_cgroup_nested(const char *a, const char *b)
{
	return path_under(a, b) || path_under(b, a);
}

struct sysfs_collect {
	char **v;
	size_t n, cap;
	int rc;
};

static int sysfs_add(struct sysfs_collect *c, const char *point, const char *suffix)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strncmp(c->v[i], point, strlen(point)) && !strcmp(c->v[i] + strlen(point), suffix))
			return 0;
	if (c->n + 2 > c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 8;
		char **nv = realloc(c->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		c->v = nv;
		c->cap = nc;
	}
	if (asprintf(&c->v[c->n], "%s%s", point, suffix) < 0)
		return -ENOMEM;
	c->n++;
	c->v[c->n] = NULL;
	return 0;
}

static int sysfs_cb(const struct mi_line *m, void *arg)
{
	/* sysfs, binfmt_misc, configfs, pstore and procfs's sys/ and
	 * sysrq-trigger reach the kernel's configuration (uevent_helper,
	 * core_pattern, modprobe, binfmt interpreters run as root outside
	 * the sandbox): red team, root inside the sandbox. */
	static const char *const types[] = { "cgroup",	    "cgroup2", "bpf",	  "securityfs", "tracefs",
					     "debugfs",	    "efivarfs", "sysfs",  "binfmt_misc", "configfs",
					     "pstore",	    "fusectl", "selinuxfs", "smackfs",	  NULL };
	struct sysfs_collect *c = arg;
	const char *const *t;
	int rc;

	if (!strcmp(m->fstype, "proc")) {
		rc = sysfs_add(c, m->point, "/sys");
		return rc ? rc : sysfs_add(c, m->point, "/sysrq-trigger");
	}
	for (t = types; *t; t++)
		if (!strcmp(m->fstype, *t))
			break;
	if (!*t)
		return 0;
	return sysfs_add(c, m->point, "");
}

int sb_sysfs_mounts(char ***out, struct sb_err *err)
{
	struct sysfs_collect c = { 0 };
	int rc = mi_each(sysfs_cb, &c, err);

	if (rc) {
		sb_strv_free(c.v);
		return rc == -ENOMEM ? sb_errf(err, rc, "out of memory") : rc;
	}
	if (!c.v) {
		c.v = calloc(1, sizeof(*c.v));
		if (!c.v)
			return -ENOMEM;
	}
	*out = c.v;
	return 0;
}

void sb_strv_free(char **v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

struct sb_mountdevs {
	struct {
		uint64_t id;
		uint32_t kdev;
	} *e;
	size_t n, cap;
};

static int devs_cb(const struct mi_line *m, void *arg)
{
	struct sb_mountdevs *d = arg;

	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 64;
		void *ne = realloc(d->e, nc * sizeof(*d->e));

		if (!ne)
			return -ENOMEM;
		d->e = ne;
		d->cap = nc;
	}
	d->e[d->n].id = m->id;
	d->e[d->n].kdev = (m->major << 20) | (m->minor & 0xfffff);
	d->n++;
	return 0;
}

int sb_mountdevs_load(struct sb_mountdevs **out, struct sb_err *err)
{
	struct sb_mountdevs *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	rc = mi_each(devs_cb, d, err);
	if (rc) {
		sb_mountdevs_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int sb_mountdevs_lookup(const struct sb_mountdevs *m, uint64_t mnt_id, uint32_t *kdev)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (m->e[i].id == mnt_id) {
			*kdev = m->e[i].kdev;
			return 0;
		}
	}
	return -ENOENT;
}

void sb_mountdevs_free(struct sb_mountdevs *m)
{
	if (!m)
		return;
	free(m->e);
	free(m);
}
