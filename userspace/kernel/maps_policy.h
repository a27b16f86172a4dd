/* Compiled policy -> the entries of the kernel maps (bpf/sandbox.h), for
 * one sandbox generation. Pure computation over a resolver: the default
 * resolver asks the filesystem (paths -> the kernel's (dev, ino)), PATH
 * (executables) and DNS (host names); unit tests pass their own. Writing
 * the entries into maps is loader.c's job.
 *
 * How each compiled path kind becomes entries (docs/kernel.md has more):
 *   EXACT, SUBTREE  inode entry for the path when it exists, plus a
 *                   named-child entry (parent inode, name) so a file that
 *                   does not exist yet or is replaced by rename is covered;
 *                   a missing parent makes a chain on the nearest existing
 *                   ancestor.
 *   NAME*           basename entries (level 0 / any level).
 *   NAME_GLOB, CHILD_GLOB  single-star glob entries scanned at level 0.
 *   GLOB            expanded against the filesystem at load (a note says
 *                   which patterns were expanded and to how many paths). */
#ifndef SB_MAPS_POLICY_H
#define SB_MAPS_POLICY_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compile.h"
#include "policy.h"
#include "sandbox.h"
#include "sb_err.h"

struct sb_kstat {
	uint32_t kdev;		/* inode->i_sb->s_dev */
	uint64_t ino;
	mode_t mode;
};

struct sb_kaddr {
	int family;		/* AF_INET, AF_INET6 */
	uint8_t addr[16];
};

struct sb_kresolver {
	/* stat(2) that follows symlinks and reports the kernel's device
	 * number; returns 0, -ENOENT, or another -errno. */
	int (*stat)(void *arg, const char *path, struct sb_kstat *st);
	/* Addresses of a host name; *out is malloc'd. -ENOENT: none. */
	int (*resolve)(void *arg, const char *host, struct sb_kaddr **out, size_t *n);
	const char *const *exec_dirs;	/* directories scanned for executables (PATH) */
	const char *const *sysfs;	/* kernel control filesystems (write-protected) */
	size_t glob_budget;		/* directory entries a glob expansion may visit */
	void *arg;
};

struct sb_kopts {
	uint8_t anon_exec;	/* tier for exec of a nameless file (memfd, O_TMPFILE) */
	bool hold;		/* escalate holds the task for a broker (SB_CFG_HOLD) */
};

struct sb_kv;	/* a keyed vector (maps_policy.c) */

struct sb_kentries {
	struct sb_cfg cfg;
	struct sb_kv *inodes;	/* sb_inode_key -> sb_pval */
	struct sb_kv *children;	/* sb_child_key -> sb_pval */
	struct sb_kv *chains;	/* sb_child_key (kind 1..) -> sb_chain */
	struct sb_kv *names;	/* sb_name_key -> sb_pval */
	struct sb_kv *longnames;	/* sb_child_key -> sb_longname */
	struct sb_kv *shell;	/* sb_shell_key -> sb_shell_val */
	struct sb_kv *xinodes;	/* sb_inode_key -> sb_xinode_val */
	struct sb_kv *net4;	/* sb_net4_key -> sb_net_val */
	struct sb_kv *net6;	/* sb_net6_key -> sb_net_val */
	struct sb_glob globs[SB_GLOBS_MAX];
	size_t nglobs;
	char **notes;		/* what the operator should know: expanded globs, skipped rules */
	size_t nnotes;
};

int sb_kentries_compute(const struct sb_policy *p, const struct sb_compiled *c, const struct sb_kresolver *r,
			const struct sb_kopts *o, struct sb_kentries **out, struct sb_err *err);
void sb_kentries_free(struct sb_kentries *e);

/* Iteration over one table: key and value pointers of entry i. */
size_t sb_kv_count(const struct sb_kv *kv);
const void *sb_kv_key(const struct sb_kv *kv, size_t i);
const void *sb_kv_val(const struct sb_kv *kv, size_t i);
/* Lookup by key (tests); NULL when absent. */
const void *sb_kv_find(const struct sb_kv *kv, const void *key);

/* The resolver used by attach, run and reload: statx + mountinfo for
 * devices, getaddrinfo for host names, $PATH plus the standard bin
 * directories, the mounted kernel control filesystems. */
int sb_kresolver_default(struct sb_kresolver *r, struct sb_err *err);
void sb_kresolver_cleanup(struct sb_kresolver *r);

/* Key helpers shared with the loader and tests. */
void sb_kname_key(struct sb_name_key *k, const char *name);
void sb_kchild_key(struct sb_child_key *k, uint32_t dev, uint64_t ino, const char *name, uint8_t kind);
void sb_kshell_key(struct sb_shell_key *k, uint8_t kind, const char *text, size_t len);

#endif
