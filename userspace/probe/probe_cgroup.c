/* cgroup v2: where it is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
 * in a hybrid layout) and whether we can create a child cgroup (mkdir +
 * rmdir of an empty child, first in our own cgroup, then at the root). */
#include "probe.h"
#include "probe_internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mount_rank(const char *point)
{
	if (!strcmp(point, "/sys/fs/cgroup"))
		return 0;
	if (!strcmp(point, "/sys/fs/cgroup/unified"))
		return 1;
	return 2;
}

int sb_probe_cgroup_parse(const char *mountinfo, const char *self_cgroup, struct sb_probe_cgroup *out)
{
	struct sb_mount_entry *e;
	const char *cur = mountinfo, *line;
	char root[PATH_MAX] = "", path[PATH_MAX] = "";
	int best = 99;

	if (!mountinfo || !out)
		return -EINVAL;
	out->mount[0] = out->self[0] = '\0';
	out->hybrid = false;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	while (sb_mountinfo_next(&cur, e)) {
		if (!strcmp(e->fstype, "cgroup")) {
			out->hybrid = true;
		} else if (!strcmp(e->fstype, "cgroup2") && mount_rank(e->point) < best) {
			best = mount_rank(e->point);
			snprintf(out->mount, sizeof(out->mount), "%s", e->point);
			snprintf(root, sizeof(root), "%s", e->root);
		}
	}
	free(e);
	if (!out->mount[0])
		return -ENOENT;

	/* "0::/some/path" is our place in the v2 hierarchy. */
	line = self_cgroup;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (n > 3 && !strncmp(line, "0::", 3) && n - 3 < sizeof(path)) {
			memcpy(path, line + 3, n - 3);
			path[n - 3] = '\0';
			break;
		}
		line = end ? end + 1 : NULL;
	}
	if (path[0] == '/') {
		const char *rel = path;
		size_t rl = strlen(root);

		/* The mount may show a subtree (root != "/"): strip it. */
		if (strcmp(root, "/") && !strncmp(path, root, rl) && (path[rl] == '/' || !path[rl]))
			rel = path + rl;
		else if (strcmp(root, "/"))
			rel = NULL;
		if (rel && (!rel[0] || !strcmp(rel, "/")))
			snprintf(out->self, sizeof(out->self), "%s", out->mount);
		else if (rel)
			snprintf(out->self, sizeof(out->self), "%s%s", out->mount, rel);
	}
	return 0;
}

void sb_probe_cgroup_classify(struct sb_probe_cgroup *out)
{
	const char *layout = out->hybrid ? " (hybrid layout: cgroup v1 controllers are mounted too)" : "";

	if (!out->mount[0]) {
		sb_probe_set(&out->res, SB_PROBE_MISSING, ENOENT,
			     "mount it: mount -t cgroup2 none /sys/fs/cgroup (or boot with "
			     "systemd.unified_cgroup_hierarchy=1); the sandbox is a cgroup v2 subtree",
			     "no cgroup v2 hierarchy is mounted");
		return;
	}
	if (out->delegate[0]) {
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "mounted at %s%s; can create child cgroups in %s",
			     out->mount, layout, out->delegate);
		return;
	}
	sb_probe_set(&out->res, SB_PROBE_MISSING, out->delegate_err,
		     "run as root, or in a delegated cgroup: systemd-run --user --scope -p Delegate=yes "
		     "sandbox-bpf ...",
		     "mounted at %s%s, but cannot create a child cgroup in %s%s: %s", out->mount, layout,
		     out->self[0] ? out->self : out->mount, out->self[0] && strcmp(out->self, out->mount) ? " or the root" : "",
		     strerror(out->delegate_err ? out->delegate_err : EPERM));
}

/* Removes probe cgroups that a killed doctor left in dir (names carry the
 * pid; only those of processes that no longer exist, and rmdir only
 * succeeds on an empty cgroup). */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX];
		int pid;

		if (sscanf(de->d_name, SB_PROBE_CGROUP_PREFIX "%d.", &pid) != 1 || pid <= 0 || pid == getpid())
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
			rmdir(path);
	}
	closedir(d);
}

/* mkdir + rmdir of a uniquely named empty child of dir. */
static int try_child(const char *dir)
{
	static unsigned seq;
	char child[PATH_MAX];
	sigset_t old;
	int e = 0;

	if (snprintf(child, sizeof(child), "%s/" SB_PROBE_CGROUP_PREFIX "%d.%u", dir, (int)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) >=
	    (int)sizeof(child))
		return ENAMETOOLONG;
	sb_probe_signals_block(&old);
	if (mkdir(child, 0755) != 0)
		e = errno;
	else if (rmdir(child) != 0)
		e = errno;
	sb_probe_signals_restore(&old);
	return e;
}

int sb_probe_cgroup(struct sb_probe_cgroup *out)
{
	char *mountinfo = NULL, *self = NULL;
	int e;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	e = sb_probe_slurp("/proc/self/mountinfo", &mountinfo);
	if (e) {
		sb_probe_set(&out->res, SB_PROBE_ERROR, -e, "mount /proc", "cannot read /proc/self/mountinfo: %s",
			     strerror(-e));
		return 0;
	}
	if (sb_probe_slurp("/proc/self/cgroup", &self) != 0)
		self = NULL;
	e = sb_probe_cgroup_parse(mountinfo, self ? self : "", out);
	free(mountinfo);
	free(self);
	if (e == -ENOMEM) {
		sb_probe_set(&out->res, SB_PROBE_ERROR, ENOMEM, NULL, "out of memory");
		return 0;
	}
	if (out->mount[0]) {
		if (out->self[0])
			sweep_stale(out->self);
		if (strcmp(out->self, out->mount))
			sweep_stale(out->mount);
		if (out->self[0]) {
			e = try_child(out->self);
			if (!e)
				snprintf(out->delegate, sizeof(out->delegate), "%s", out->self);
			else
				out->delegate_err = e;
		}
		if (!out->delegate[0] && strcmp(out->self, out->mount)) {
			e = try_child(out->mount);
			if (!e)
				snprintf(out->delegate, sizeof(out->delegate), "%s", out->mount);
			else
				out->delegate_err = e;
		}
	}
	sb_probe_cgroup_classify(out);
	return 0;
}
