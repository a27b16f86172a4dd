/* The loader: loads the BPF-LSM programs (bpf/sandbox.bpf.c) and pins
 * them under /sys/fs/bpf/sandbox-bpf/ so enforcement outlives the process,
 * or adopts what an earlier attach/run pinned; adds, reloads and removes
 * sandboxes (scope entry + policy entries of one generation). Changes to
 * the sandbox set are serialised with a lock on the pin directory. */
#ifndef SB_LOADER_H
#define SB_LOADER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "maps_policy.h"
#include "sandbox.h"
#include "sb_err.h"
#include "scope.h"

enum sb_kmap {
	SB_KM_GLOBAL = 0,
	SB_KM_SCOPE,
	SB_KM_ACTIVE,
	SB_KM_CFG,
	SB_KM_INFO,
	SB_KM_META,
	SB_KM_PROTECTED,
	SB_KM_PINODE,
	SB_KM_PCHILD,
	SB_KM_PCHAIN,
	SB_KM_PNAME,
	SB_KM_LONGNAME,
	SB_KM_PGLOB,
	SB_KM_SHELL,
	SB_KM_XINODE,
	SB_KM_NET4,
	SB_KM_NET6,
	SB_KM_COUNTERS,
	SB_KM_RINGS,
	SB_KM_HOLD,		/* held requests (kernel writes, broker reads/deletes) */
	SB_KM_VERDICT,		/* verdicts (broker writes) */
	SB_KM_HELD,		/* tid -> request it is held for */
	SB_KM__COUNT
};

struct sandbox_bpf;
struct bpf_link;

struct sb_kernel {
	struct sandbox_bpf *skel;	/* set when this process loaded the programs */
	int fd[SB_KM__COUNT];
	int lock_fd;
	int locked;
	uint32_t features;		/* SB_META_* */
	bool loaded;			/* loaded now (else adopted pinned objects) */
	int nprogs;			/* programs attached (when loaded) */
	struct bpf_link *links[64];	/* held until close; the pins keep them attached */
};

#define SB_KOPEN_LOAD 0x1	/* load and pin when nothing is pinned yet */

/* Opens the pinned objects, or (SB_KOPEN_LOAD) loads, attaches and pins
 * them. Fails with a message that says what failed and what to do; it
 * never leaves half-pinned state behind. -ENOENT: nothing pinned (without
 * SB_KOPEN_LOAD). */
int sb_kernel_open(struct sb_kernel *k, unsigned flags, struct sb_err *err);
void sb_kernel_close(struct sb_kernel *k);

/* True when programs are pinned (something is or was attached). */
bool sb_kernel_pinned(void);
/* Removes every pin: programs detach once no process holds them. */
int sb_kernel_unpin_all(struct sb_err *err);

/* Adds the cgroup as a new sandbox with the entries (generation 1). */
int sb_kernel_add(struct sb_kernel *k, const struct sb_kscope *scope, const struct sb_kentries *e,
		  const struct sb_info *info, uint32_t *id, struct sb_err *err);
/* Replaces a sandbox's policy atomically: the other generation is
 * written completely, then the active generation flips with one map
 * update, then the old generation is deleted. */
int sb_kernel_reload(struct sb_kernel *k, uint32_t id, const struct sb_kentries *e, const char *hash,
		     const char *source, struct sb_err *err);
/* Removes a sandbox; with unpin_if_last, unpins everything when no
 * sandbox is left. *unpinned tells whether that happened. */
int sb_kernel_remove(struct sb_kernel *k, uint32_t id, bool unpin_if_last, bool *unpinned, struct sb_err *err);

/* Unpins everything when no sandbox is attached (after a failed first
 * attach, so no programs stay pinned for nothing). */
int sb_kernel_unpin_if_empty(struct sb_kernel *k, struct sb_err *err);

int sb_kernel_find(struct sb_kernel *k, uint64_t cgid, uint32_t *id, struct sb_info *info);
int sb_kernel_info(struct sb_kernel *k, uint32_t id, struct sb_info *info);
int sb_kernel_set_owner(struct sb_kernel *k, uint32_t id, uint32_t pid);
/* Brokers: tasks of a sandbox can neither signal nor ptrace them. */
int sb_kernel_protect(struct sb_kernel *k, uint32_t tgid, uint32_t id, bool on);
/* A new fd of the sandbox's ring buffer (caller closes). */
int sb_kernel_ring_fd(struct sb_kernel *k, uint32_t id, struct sb_err *err);
/* Counters summed over CPUs, one per hook. */
int sb_kernel_counters(struct sb_kernel *k, uint32_t id, struct sb_counters *out /* [SB_HOOK__COUNT] */);
int sb_kernel_meta(struct sb_kernel *k, struct sb_meta *m);

const char *sb_kmap_name(enum sb_kmap m);

#endif
