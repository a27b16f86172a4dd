/* Cgroups and mounts as the kernel side sees them: which cgroup a
 * sandbox is (its id and level), where cgroup v2 is mounted, and which
 * kernel control filesystems must be write-protected from a sandbox. */
#ifndef SB_KSCOPE_H
#define SB_KSCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sb_err.h"

struct sb_kscope {
	char path[4096];	/* absolute path of the cgroup directory */
	char rel[4096];		/* path relative to the cgroup2 root, "/" for the root */
	uint64_t id;		/* cgroup id (kernfs node id), as bpf_get_current_cgroup_id() */
	unsigned level;		/* 0 for the root cgroup */
};

/* The cgroup v2 mount point (first one in /proc/self/mountinfo); fails
 * with a message saying what to mount when there is none, or when it is
 * mounted inside a cgroup namespace (levels would not match the kernel's). */
int sb_cgroup2_root(char *out, size_t len, struct sb_err *err);

/* Resolves PATH (absolute, or relative to the cgroup2 root) to a cgroup. */
int sb_cgroup_resolve(const char *path, struct sb_kscope *out, struct sb_err *err);

/* The cgroup (relative to the cgroup2 root) that pid is in, from
 * /proc/PID/cgroup ("0::/path"). */
int sb_cgroup_of_pid(int pid, char *out, size_t len, struct sb_err *err);

/* True when one of a and b (cgroup paths relative to the root) is the
 * other or an ancestor of it. */
bool sb_cgroup_nested(const char *a, const char *b);

/* Mount points of filesystems a sandbox must never write: cgroup,
 * cgroup2, bpf, securityfs, tracefs, debugfs, efivarfs. Returns a
 * NULL-terminated array (free with sb_strv_free). */
int sb_sysfs_mounts(char ***out, struct sb_err *err);
void sb_strv_free(char **v);

/* Kernel-view device number (inode->i_sb->s_dev: MAJOR << 20 | MINOR) of
 * the mount with the given id, from /proc/self/mountinfo. Used to key
 * inodes as the kernel sees them (btrfs subvolumes report another st_dev
 * through stat(2)). */
struct sb_mountdevs;
int sb_mountdevs_load(struct sb_mountdevs **out, struct sb_err *err);
int sb_mountdevs_lookup(const struct sb_mountdevs *m, uint64_t mnt_id, uint32_t *kdev);
void sb_mountdevs_free(struct sb_mountdevs *m);

#endif
