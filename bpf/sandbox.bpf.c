// SPDX-License-Identifier: GPL-2.0
/* sandbox-bpf kernel side: global BPF-LSM programs that confine every task
 * in a sandbox cgroup subtree, deciding against the compiled policy in maps.
 *
 * Shape of every hook: sb_enter() finds the current task's sandbox through
 * the scope map (one lookup for a task outside every sandbox when all
 * sandboxes sit at one cgroup level) and returns 0 for outsiders, who are
 * never denied. For confined tasks the hook decides a tier, sb_verdict()
 * turns it into a return value, counts it and reports it on the sandbox's
 * ring buffer. docs/kernel.md has the hook table; docs/architecture.md the
 * maps, the generation flip and the event flow. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sandbox.h"

char LICENSE[] SEC("license") = "GPL";

#define EPERM 1
#define ERESTARTNOINTR 513
#define SIGKILL 9
#define SIGCONT 18
#define SIGSTOP 19
#define PF_EXITING 0x00000004
#define PF_IO_WORKER 0x00000010
#define PF_KTHREAD 0x00200000
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define AF_UNSPEC 0
#define AF_NETLINK 16
#define S_IFBLK 0060000
#define FMODE_READ 0x1
#define FMODE_WRITE 0x2
#define FMODE_EXEC 0x20
#define O_TRUNC 01000
#define PROT_EXEC 0x4
#define S_IFMT 00170000
#define S_IFREG 0100000
#define ATTR_MODE (1 << 0)
#define ATTR_UID (1 << 1)
#define ATTR_GID (1 << 2)
#define ATTR_SIZE (1 << 3)
#define ATTR_ATIME (1 << 4)
#define ATTR_MTIME (1 << 5)

/* Index clamp for the verifier: after a range check the compiler may drop
 * a plain mask, so the mask is applied in asm where it cannot. */
#define SB_MASK(v, m) ({ __u64 __x = (v); asm volatile("%0 &= " #m : "+r"(__x)); __x; })

/* Set by the loader before load (rodata). */
const volatile bool inode_fallback = false;	/* no path_* hooks: inode_setattr covers truncate/chmod/chown */

/* ---- maps -------------------------------------------------------------- */

/* Entry 0: level mask (written by userspace); entry 1: event sequence
 * (incremented here). Separate entries so a userspace update of the mask
 * never races with the sequence counter. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sb_global);
} sb_global SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SB_MAX_SANDBOXES);
	__type(key, __u64);	/* cgroup id */
	__type(value, __u32);	/* sandbox id */
} sb_scope SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SB_MAX_SANDBOXES);
	__type(key, __u32);
	__type(value, __u32);	/* generation counter; generation = counter & 1 */
} sb_active SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SB_MAX_SANDBOXES * 2);
	__type(key, __u32);	/* sbgen */
	__type(value, struct sb_cfg);
} sb_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SB_MAX_SANDBOXES);
	__type(key, __u32);
	__type(value, struct sb_info);
} sb_info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sb_meta);
} sb_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);	/* tgid of a broker (attach, run) */
	__type(value, __u32);
} sb_protected SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_inode_key);
	__type(value, struct sb_pval);
} sb_pinode SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_child_key);
	__type(value, struct sb_pval);
} sb_pchild SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_child_key);
	__type(value, struct sb_chain);
} sb_pchain SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_name_key);
	__type(value, struct sb_pval);
} sb_pname SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_child_key);	/* name entries use dev = ino = 0, kind 0xff */
	__type(value, struct sb_longname);
} sb_longname SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SB_MAX_SANDBOXES * 2 * SB_GLOBS_MAX);
	__type(key, __u32);	/* sbgen * SB_GLOBS_MAX + i */
	__type(value, struct sb_glob);
} sb_pglob SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_shell_key);
	__type(value, struct sb_shell_val);
} sb_shell SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_inode_key);
	__type(value, struct sb_xinode_val);
} sb_xinode SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_net4_key);
	__type(value, struct sb_net_val);
} sb_net4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_net6_key);
	__type(value, struct sb_net_val);
} sb_net6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SB_MAX_SANDBOXES * SB_HOOK__COUNT);
	__type(key, __u32);
	__type(value, struct sb_counters);
} sb_counters SEC(".maps");

/* Events go to the sandbox's own ring buffer so several attach processes
 * (one per sandbox) each consume only theirs. */
struct sb_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SB_RING_BYTES);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SB_MAX_SANDBOXES);
	__type(key, __u32);
	__array(values, struct sb_ring);
} sb_rings SEC(".maps");

/* Holds (docs/kernel.md, "Holds"): the kernel writes sb_hold and
 * sb_held, the broker writes sb_verdict and deletes what is resolved. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SB_HOLD_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_hold_key);
	__type(value, struct sb_hold);
} sb_hold SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SB_HOLD_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sb_verdict_key);
	__type(value, struct sb_verdict);
} sb_verdict SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SB_HOLD_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);	/* tid */
	__type(value, struct sb_held);
} sb_held SEC(".maps");

/* Per-task scratch: too big for the 512-byte stack, and per-CPU memory is
 * not safe here (a preempted or sleeping program would share it). The
 * heavy code works on it through global functions, which the verifier
 * checks once per program instead of once per call site. */
struct sb_level {
	__u64 name_ptr;
	__u32 len;
	__u32 dev;
	__u64 ino;
	char name[SB_NAME_KEY];
};

struct sb_cand {
	__u32 spec;
	__u32 rule;
	__u32 level;
	__u8 tier;
	__u8 found;
	__u8 pad[2];
};

struct sb_res {
	__u32 rule;
	__u8 tier;
	__u8 trig;
	/* An open for reading and writing: the other trigger's result, so
	 * a write approval does not also approve the read (two requests). */
	__u8 tier2;
	__u8 trig2;
	__u32 rule2;
};

struct sb_walk {
	__u64 dentry;
	__u64 mnt;		/* struct mount *, 0 when the hook has no vfsmount */
	__u32 sbgen;
	__u32 nlev;		/* levels walked including the root */
	__u8 done, partial, move;
	__u8 unwalked;		/* decided without a walk: dentry/mnt kept for the event's path */
	__u8 trigmask;		/* bit SB_PT_WRITE, bit SB_PT_READ */
	__u8 has_names;
	__u8 nglobs;
	__u8 pad;
	__u8 defaults[2];	/* per path trigger */
	__u8 pad2[2];
	__u32 namelen;		/* level 0 name in s->name (globs) */
	struct sb_cand best[2];	/* absolute specificity */
	struct sb_cand rel[2];	/* basename rules: the lowest level wins */
	struct sb_res res[2];
	struct sb_level lv[SB_WALK_MAX];
};

struct sb_lpm {
	__u64 lens[4];		/* prefix lengths present for this kind */
	__u32 n;
	__u32 rule;		/* result */
	__u32 rrule;		/* the longest refine entry */
	__u16 spec;
	__u16 rspec;
	__u8 tier;
	__u8 found;
	__u8 refine;
	__u8 refine_tier;
	__u8 seen_refine;
	__u8 dflt;
	__u8 pad[2];
};

/* argv parsing and string helpers (exec). */
struct sb_argv {
	__u32 n;		/* bytes read */
	__u32 argc;
	__u32 word;		/* current word index */
	__u32 out;		/* bytes in s->rest */
	__u32 a0len;		/* length of argv[0] */
	__u32 last;		/* basename: index after the last '/' */
	__u32 at;		/* append: position in s->sk.text */
	__u32 cn;		/* append: bytes to copy */
	__u8 space;		/* a separator is pending */
	__u8 trunc;
	__u8 src;		/* basename: 0 s->buf, 1 s->name */
	__u8 pad[5];
};

struct sb_scratch {
	struct sb_walk w;
	struct sb_lpm lpm;
	struct sb_argv av;
	struct sb_inode_key ik;
	struct sb_child_key ck;
	struct sb_name_key nk;
	struct sb_shell_key sk;
	char name[SB_NAME_MAX];
	char buf[512];
	char rest[SB_CMD_KEY];
	char path[SB_EV_PATH];
	char cmd[SB_EV_ARGV];
	__u32 pathlen;
	__u32 restlen;
	__u32 cmdlen;
	__u32 pathpos;
	__u8 pathflags;
	__u8 cmdflags;		/* SB_EVF_ARGV_TRUNC: s->cmd is not the whole command line */
	__u8 hsame;		/* sb_hold_same: the stored request asks for this object */
	__u8 pad[5];
	/* holds: the request being held, and this thread's grant chain */
	struct sb_hold_key hk;
	struct sb_hold hv;
	__u64 hash;		/* FNV-1a state while hashing s->path */
	__u32 hlen;
	__u32 pad2;
	__u64 hchain;		/* the chain of grants this thread used last */
	__u64 hchain_ns;	/* when it last used one */
	__u64 hchain_sig;	/* the syscall it was used in (sb_syscall_sig) */
	__u64 hhold_seq;	/* the request it is held for now (0: none) */
	__u64 hhold_chain;	/* that request's chain */
	__u64 xgrant_ns;	/* bprm_check let this exec through on a verdict... */
	__u32 xgrant_rule;	/* ...for this binary-level rule (committed_creds honours it) */
	__u32 pad3;
	/* An exec held after its point of no return: its request and hold
	 * key. The task must not run its new image without the broker's
	 * allow, whoever continues it (sb_xpend_check). */
	__u64 xpend_seq;
	struct sb_hold_key xpend_key;
	char hcmp[SB_EV_PATH];	/* the stored request's object, for sb_hold_same */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sb_scratch);
} sb_scratch SEC(".maps");

/* ---- scope ------------------------------------------------------------- */

struct sb_ctx {
	__u64 cgid;
	__u32 id;
	__u32 counter;
	__u32 sbgen;
	__u32 hook;
	struct sb_cfg *cfg;
	struct sb_scratch *s;
};

/* Returns 1 when current is confined (c filled), 0 when it is outside
 * every sandbox, -1 when it is confined but the sandbox state is not
 * usable (fail closed: the caller denies). */
/* An exec held after its point of no return is stopped before its first
 * instruction, but the kernel itself can continue a stopped task without
 * task_kill seeing it (SIGCONT to an orphaned process group, a tty
 * hangup, SIGIO). So the task's first hook after the hold checks that the
 * broker allowed it: without an allow verdict it is killed. Inside the
 * execve that was held (the loader maps the image after the hook) there
 * is nothing to check yet. 1: killed. */
__noinline int sb_xpend_g(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct sb_scratch *s = bpf_task_storage_get(&sb_scratch, t, 0, 0);
	struct sb_verdict_key vk = { 0 };
	struct sb_verdict *v;
	struct sb_hold *h;
	struct sb_held *hd;
	__u32 tid;

	if (!s || !s->xpend_seq)
		return 0;
#ifdef __TARGET_ARCH_x86
	{
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
		long nr = regs ? BPF_CORE_READ(regs, orig_ax) : -1;

		if (nr == 59 /* execve */ || nr == 322 /* execveat */)
			return 0;
	}
#endif
	tid = s->xpend_key.tid;
	vk.tid = tid;
	vk.seq = s->xpend_seq;
	v = bpf_map_lookup_elem(&sb_verdict, &vk);
	if (v && v->verdict == SB_VERDICT_ALLOW) {
		/* Used: the broker may now forget the hold. */
		h = bpf_map_lookup_elem(&sb_hold, &s->xpend_key);
		if (h && h->ev.seq == vk.seq) {
			h->used = 1;
			h->used_ns = bpf_ktime_get_ns();
		}
		hd = bpf_map_lookup_elem(&sb_held, &tid);
		if (hd && hd->seq == vk.seq)
			bpf_map_delete_elem(&sb_held, &tid);
		s->xpend_seq = 0;
		return 0;
	}
	bpf_send_signal(SIGKILL);
	return 1;
}

/* After exec's point of no return a deny can only kill. bprm_committed_creds
 * returns nothing, so a SIGKILL that could not be sent would let the image
 * run: the task is also marked doomed, and its first hook kills it again
 * (sb_xpend_g finds no verdict for this seq). */
#define SB_XPEND_DOOMED (~0ULL)
static __always_inline void sb_kill_committed(struct sb_scratch *s)
{
	if (s)
		s->xpend_seq = SB_XPEND_DOOMED;
	bpf_send_signal(SIGKILL);
}

static __always_inline int sb_enter(struct sb_ctx *c, __u32 hook)
{
	__u32 zero = 0, id = 0, idx;
	struct sb_global *g;
	__u32 *cnt;
	__u64 mask;
	int l;

	g = bpf_map_lookup_elem(&sb_global, &zero);
	if (!g)
		return 0;
	mask = g->level_mask;
	if (!mask)
		return 0;
	for (l = 0; l < SB_MAX_LEVELS; l++) {
		__u64 cg;
		__u32 *p;

		if (!(mask >> l))
			break;
		if (!(mask & (1ULL << l)))
			continue;
		cg = bpf_get_current_ancestor_cgroup_id(l);
		if (!cg)
			break;
		p = bpf_map_lookup_elem(&sb_scope, &cg);
		if (p) {
			id = *p;
			c->cgid = cg;
			break;
		}
	}
	if (!id)
		return 0;
	c->id = id;
	c->hook = hook;
	c->cfg = NULL;
	c->s = NULL;
	cnt = bpf_map_lookup_elem(&sb_active, &id);
	if (!cnt || !*cnt)
		return -1;
	c->counter = *cnt;
	c->sbgen = SB_SBGEN(id, c->counter);
	idx = c->sbgen;
	c->cfg = bpf_map_lookup_elem(&sb_cfg, &idx);
	if (!c->cfg)
		return -1;
	if (sb_xpend_g())
		return -1;
	return 1;
}

/* Re-reads the generation after a decision: a reload that flipped in the
 * middle may have deleted entries the decision looked for. */
static __always_inline int sb_refresh(struct sb_ctx *c)
{
	__u32 id = c->id, idx;
	__u32 *cnt = bpf_map_lookup_elem(&sb_active, &id);

	if (!cnt || !*cnt)
		return -1;
	if (*cnt == c->counter)
		return 0;
	c->counter = *cnt;
	c->sbgen = SB_SBGEN(id, c->counter);
	idx = c->sbgen;
	c->cfg = bpf_map_lookup_elem(&sb_cfg, &idx);
	return c->cfg ? 1 : -1;
}

static __always_inline struct sb_scratch *sb_get_scratch(struct sb_ctx *c)
{
	struct task_struct *t = bpf_get_current_task_btf();

	c->s = bpf_task_storage_get(&sb_scratch, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	return c->s;
}

/* Sandbox of another task: its cgroup and ancestors against the scope map. */
static __always_inline __u32 sb_task_sandbox(struct task_struct *t)
{
	struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
	int i;

	for (i = 0; i < SB_MAX_LEVELS && cg; i++) {
		__u64 id = BPF_CORE_READ(cg, kn, id);
		__u32 *p = bpf_map_lookup_elem(&sb_scope, &id);

		if (p)
			return *p;
		cg = (struct cgroup *)BPF_CORE_READ(cg, self.parent);
	}
	return 0;
}

/* ---- counters, events, verdicts ---------------------------------------- */

static __always_inline struct sb_counters *sb_counter(struct sb_ctx *c)
{
	__u32 idx = c->id * SB_HOOK__COUNT + c->hook;

	if (idx >= SB_MAX_SANDBOXES * SB_HOOK__COUNT)
		return NULL;
	return bpf_map_lookup_elem(&sb_counters, &idx);
}

static __always_inline struct sb_kevent *sb_ev_reserve(struct sb_ctx *c)
{
	__u32 id = c->id;
	struct sb_counters *k;
	struct sb_kevent *ev;
	void *ring;

	ring = bpf_map_lookup_elem(&sb_rings, &id);
	if (ring) {
		ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0);
		if (ev)
			return ev;
	}
	/* The decision never depends on delivery: count the loss and go on. */
	k = sb_counter(c);
	if (k)
		__sync_fetch_and_add(&k->lost, 1);
	return NULL;
}

static __always_inline void sb_ev_fill(struct sb_ctx *c, struct sb_kevent *ev, __u8 kind, __u8 action,
				       __u8 tier, __u8 trig, __u32 rule, int ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 pidtgid = bpf_get_current_pid_tgid();
	__u32 one = 1;
	struct sb_global *g = bpf_map_lookup_elem(&sb_global, &one);

	ev->seq = g ? __sync_fetch_and_add(&g->seq, 1) : 0;
	ev->ts_ns = bpf_ktime_get_ns();
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->start_ns = BPF_CORE_READ(t, start_boottime);
	ev->ident = 0;
	ev->pid = (__u32)pidtgid;
	ev->tgid = pidtgid >> 32;
	ev->ppid = BPF_CORE_READ(t, real_parent, tgid);
	ev->uid = (__u32)bpf_get_current_uid_gid();
	ev->sandbox = c->id;
	ev->rule = rule;
	ev->hook = c->hook;
	ev->kind = kind;
	ev->action = action;
	ev->tier = tier;
	ev->trigger = trig;
	ev->op = 0;
	ev->flags = 0;
	ev->ret = ret;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
}

/* What a tier means for the syscall, and whether it is reported. */
static __always_inline int sb_outcome(struct sb_ctx *c, __u8 tier, __u8 *action)
{
	struct sb_counters *k = sb_counter(c);
	bool audit = c->cfg && (c->cfg->flags & SB_CFG_AUDIT);

	if (tier == SB_K_DENY) {
		if (k)
			__sync_fetch_and_add(&k->denied, 1);
		*action = audit ? SB_ACT_AUDIT : SB_ACT_DENIED;
		return audit ? 0 : -EPERM;
	}
	if (tier == SB_K_ESCALATE) {
		if (k)
			__sync_fetch_and_add(&k->escalated, 1);
		/* Reached when the task is not held (holds off, or a task that
		 * cannot be held: sb_can_hold): escalate denies. */
		*action = audit ? SB_ACT_AUDIT : SB_ACT_ESCALATED;
		return audit ? 0 : -EPERM;
	}
	if (k)
		__sync_fetch_and_add(&k->allowed, 1);
	/* Audit mode reports allows too: the audit chain stores them one by
	 * one there (docs/audit.md); otherwise they are only counted. */
	*action = tier == SB_K_OBSERVE ? SB_ACT_OBSERVED : audit ? SB_ACT_ALLOWED : 0;
	return 0;
}

/* Verdict for hooks whose event carries no object (bpf, mounts, ...). */
static __always_inline int sb_verdict_plain(struct sb_ctx *c, __u8 tier, __u32 rule, __u8 trig, __u32 arg)
{
	__u8 action;
	int ret = sb_outcome(c, tier, &action);
	struct sb_kevent *ev;

	if (!action)
		return ret;
	ev = sb_ev_reserve(c);
	if (!ev)
		return ret;
	sb_ev_fill(c, ev, SB_EVK_TASK, action, tier, trig, rule, ret);
	ev->task.target_pid = 0;
	ev->task.target_tgid = 0;
	ev->task.arg = arg;
	bpf_ringbuf_submit(ev, 0);
	return ret;
}

static __always_inline int sb_verdict_task(struct sb_ctx *c, __u8 tier, __u32 rule, struct task_struct *target,
					   __u32 arg)
{
	__u8 action;
	int ret = sb_outcome(c, tier, &action);
	struct sb_kevent *ev;

	if (!action)
		return ret;
	ev = sb_ev_reserve(c);
	if (!ev)
		return ret;
	sb_ev_fill(c, ev, SB_EVK_TASK, action, tier, SB_K_SHELL, rule, ret);
	ev->task.target_pid = target ? BPF_CORE_READ(target, pid) : 0;
	ev->task.target_tgid = target ? BPF_CORE_READ(target, tgid) : 0;
	ev->task.arg = arg;
	bpf_ringbuf_submit(ev, 0);
	return ret;
}

/* Fail closed when the sandbox state cannot be read. */
static __always_inline int sb_fail_closed(struct sb_ctx *c)
{
	c->cfg = NULL;
	return sb_verdict_plain(c, SB_K_DENY, SB_RULE_NO_SCRATCH, 0, 0);
}

/* Global functions see pointer arguments as plain memory, which 6.1 does
 * not accept as map keys: they take the scratch from task storage
 * themselves (a map value, usable as a key). */
static __always_inline struct sb_scratch *sb_s(void)
{
	return bpf_task_storage_get(&sb_scratch, bpf_get_current_task_btf(), 0, 0);
}

/* ---- holds ------------------------------------------------------------- */

#define SB_FNV_OFFSET 0xcbf29ce484222325ULL
#define SB_FNV_PRIME 0x100000001b3ULL

static __always_inline __u64 sb_fnv(__u64 h, __u64 byte)
{
	return (h ^ (byte & 0xff)) * SB_FNV_PRIME;
}

/* One byte of s->path into s->hash (loop state in the scratch, as for
 * every bpf_loop here). */
__noinline int sb_hash_g(__u32 i)
{
	struct sb_scratch *s = sb_s();

	if (!s || i >= s->hlen || i >= SB_EV_PATH)
		return 1;
	s->hash = sb_fnv(s->hash, (__u8)s->path[SB_MASK(i, 511)]);
	return 0;
}

static long sb_hash_cb(__u32 i, void *arg)
{
	return sb_hash_g(i) ? 1 : 0;
}

/* The identity of a request: trigger + object. A restarted syscall asks
 * for the same object again and so finds its hold. */
static __always_inline __u64 sb_hash_path(struct sb_scratch *s, __u8 trig, __u32 len)
{
	s->hash = sb_fnv(SB_FNV_OFFSET, trig);
	s->hlen = len;
	bpf_loop(SB_EV_PATH, sb_hash_cb, NULL, 0);
	return s->hash;
}

static __always_inline bool sb_hold_enabled(struct sb_ctx *c)
{
	return c->cfg && (c->cfg->flags & SB_CFG_HOLD) && !(c->cfg->flags & SB_CFG_AUDIT);
}

/* A task can be held when the hook's error goes straight back to the
 * syscall it came from, so -ERESTARTNOINTR restarts it: not kernel
 * threads or io_uring workers, not io_uring_enter (an operation's error
 * goes to its completion entry) or sendmmsg (a partial batch drops it), and
 * not a traced task (its tracer could swallow the SIGSTOP). Those are
 * denied instead. */
static __always_inline bool sb_can_hold(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	if (t->flags & (PF_KTHREAD | PF_IO_WORKER | PF_EXITING))
		return false;
	if (t->ptrace)
		return false;
#ifdef __TARGET_ARCH_x86
	{
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
		long nr = regs ? BPF_CORE_READ(regs, orig_ax) : -1;

		if (nr < 0 || nr == 426 /* io_uring_enter */ || nr == 307 /* sendmmsg */)
			return false;
	}
#endif
	return true;
}

enum { SB_H_NEW = 1, SB_H_AGAIN, SB_H_ALLOW, SB_H_DENY, SB_H_FAIL };

/* The current syscall as user space made it: number, arguments, return
 * address and stack. The rest of one syscall (its next hook, its restart
 * after a hold) has the same signature however long it was preempted; a
 * different call has another one (unless it repeats the same call from
 * the same place with the same arguments). 0 where unknown. */
static __always_inline __u64 sb_syscall_sig(void)
{
	__u64 h = SB_FNV_OFFSET;
#ifdef __TARGET_ARCH_x86
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 v[9];
	int i;

	if (!r)
		return 0;
	v[0] = BPF_CORE_READ(r, orig_ax);
	v[1] = BPF_CORE_READ(r, ip);
	v[2] = BPF_CORE_READ(r, sp);
	v[3] = BPF_CORE_READ(r, di);
	v[4] = BPF_CORE_READ(r, si);
	v[5] = BPF_CORE_READ(r, dx);
	v[6] = BPF_CORE_READ(r, r10);
	v[7] = BPF_CORE_READ(r, r8);
	v[8] = BPF_CORE_READ(r, r9);
	for (i = 0; i < 9; i++)
		h = (h ^ v[i]) * SB_FNV_PRIME;
	return h | 1;
#else
	return 0;
#endif
}

/* This thread is still in the syscall its last grant was used in: within
 * SB_HOLD_GRANT_NS of that use, or with the same syscall signature within
 * SB_HOLD_SAME_CALL_NS (a preempted syscall under load). */
static __always_inline bool sb_chain_fresh(struct sb_scratch *s, __u64 now, __u64 sig)
{
	if (now - s->hchain_ns < SB_HOLD_GRANT_NS)
		return true;
	return sig && sig == s->hchain_sig && now - s->hchain_ns < SB_HOLD_SAME_CALL_NS;
}

/* Marked before the SIGSTOP is sent, so there is no moment where the task
 * is stopped but a SIGCONT from inside the sandbox would be let through. */
static __always_inline long sb_held_mark(__u32 tid, __u64 seq, __u64 start)
{
	struct sb_held hd = { .seq = seq, .start_ns = start };

	return bpf_map_update_elem(&sb_held, &tid, &hd, BPF_ANY);
}

/* Path ops that one approval covers together: an open for writing that
 * creates (mknod, then open) or truncates the file. Any other op is its
 * own request (an approved append is not an approved unlink or rename). */
static __always_inline __u8 sb_op_class(__u8 op)
{
	return op <= SB_KOP_TRUNCATE ? 0 : op;
}

/* One byte of the stored request's object (s->hcmp) against the current
 * one (s->path); loop state in the scratch. */
__noinline int sb_cmp_g(__u32 i)
{
	struct sb_scratch *s = sb_s();

	if (!s || i >= s->hlen || i >= SB_EV_PATH)
		return 1;
	if (s->hcmp[SB_MASK(i, 511)] != s->path[SB_MASK(i, 511)]) {
		s->hsame = 0;
		return 1;
	}
	return 0;
}

static long sb_cmp_cb(__u32 i, void *arg)
{
	return sb_cmp_g(i) ? 1 : 0;
}

/* The stored request asks for exactly what the current one (s->hv.ev, its
 * object in s->path) asks for. The key's 64-bit hash only finds the
 * request: a hash can be made to collide, an approval must not carry over
 * to another object. */
static __always_inline bool sb_hold_same(struct sb_scratch *s, struct sb_hold *h)
{
	struct sb_kevent *b = &s->hv.ev;
	__u8 kind = h->ev.kind;
	__u32 len;
	int i;

	if (kind != b->kind || h->ev.trigger != b->trigger)
		return false;
	if (kind == SB_EVK_NET) {
		if (h->ev.net.family != b->net.family || h->ev.net.port != b->net.port ||
		    h->ev.net.proto != b->net.proto)
			return false;
		for (i = 0; i < 16; i++)
			if (h->ev.net.addr[i] != b->net.addr[i])
				return false;
		return true;
	}
	if (kind == SB_EVK_PATH) {
		if (sb_op_class(h->ev.op) != sb_op_class(b->op) || h->ev.path.len != b->path.len)
			return false;
		len = b->path.len;
		bpf_probe_read_kernel(s->hcmp, SB_EV_PATH, h->ev.path.path);
	} else if (kind == SB_EVK_EXEC) {
		if (h->ev.exec.len != b->exec.len)
			return false;
		len = b->exec.len;
		bpf_probe_read_kernel(s->hcmp, SB_EV_PATH, h->ev.exec.path);
	} else {
		return false;
	}
	s->hlen = len;
	s->hsame = 1;
	bpf_loop(SB_EV_PATH, sb_cmp_cb, NULL, 0);
	return s->hsame;
}

/* The hold state machine for the request in s->hk / s->hv.ev (filled by
 * the caller, seq already taken). Returns SB_H_*:
 *   NEW    first time: recorded, SIGSTOP sent, the caller pushes the event
 *   AGAIN  back without a verdict (a stray SIGCONT): stopped again, no event
 *   ALLOW, DENY  the broker's verdict for exactly this request
 *   FAIL   cannot hold (map full, signal refused): the caller denies
 * committed: held after exec's point of no return; never restarts, so
 * there is nothing to look up. */
static __always_inline int sb_hold_decide(struct sb_scratch *s, bool committed)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns(), start = BPF_CORE_READ(t, start_boottime), seq, sig = sb_syscall_sig();
	__u32 tid = s->hk.tid;
	struct sb_hold *h = NULL;
	struct sb_held *hd;

	if (!committed)
		h = bpf_map_lookup_elem(&sb_hold, &s->hk);
	if (h && h->ev.start_ns == start && sb_hold_same(s, h)) {
		struct sb_verdict_key vk = { .tid = tid, .seq = h->ev.seq };
		struct sb_verdict *v = bpf_map_lookup_elem(&sb_verdict, &vk);

		if (!v) {
			if (sb_held_mark(tid, h->ev.seq, start) || bpf_send_signal(SIGSTOP))
				return SB_H_FAIL;
			s->hhold_seq = h->ev.seq;
			s->hhold_chain = h->chain;
			return SB_H_AGAIN;
		}
		if (!h->used) {
			/* First use. A hold made while this thread's chain was
			 * running (the same syscall's next object) continues
			 * it; anything else starts a chain. */
			h->used = 1;
			h->used_ns = now;
			if (!h->chain || h->chain != s->hchain) {
				s->hchain = h->ev.seq;
				h->chain = h->ev.seq;
			}
			s->hchain_ns = now;
			s->hchain_sig = sig;
			s->hhold_seq = 0;
			s->hhold_chain = 0;
			hd = bpf_map_lookup_elem(&sb_held, &tid);
			if (hd && hd->seq == h->ev.seq)
				bpf_map_delete_elem(&sb_held, &tid);
			return v->verdict == SB_VERDICT_ALLOW ? SB_H_ALLOW : SB_H_DENY;
		}
		/* Used before: still good within its syscall (the chain is
		 * fresh, or held for its next object); otherwise a repeat,
		 * which is a new request. */
		if (h->chain == s->hchain &&
		    (sb_chain_fresh(s, now, sig) || (s->hhold_seq && s->hhold_chain == s->hchain)))
			return v->verdict == SB_VERDICT_ALLOW ? SB_H_ALLOW : SB_H_DENY;
		bpf_map_delete_elem(&sb_verdict, &vk);
	}
	seq = s->hv.ev.seq;
	s->hv.ev.start_ns = start;
	s->hv.ev.ident = s->hk.ident;
	s->hv.chain = (s->hchain && sb_chain_fresh(s, now, sig)) ? s->hchain : 0;
	s->hv.used = 0;
	s->hv.used_ns = 0;
	s->hv.committed = committed;
	if (bpf_map_update_elem(&sb_hold, &s->hk, &s->hv, BPF_ANY))
		return SB_H_FAIL;
	if (sb_held_mark(tid, seq, start) || bpf_send_signal(SIGSTOP)) {
		bpf_map_delete_elem(&sb_held, &tid);
		bpf_map_delete_elem(&sb_hold, &s->hk);
		return SB_H_FAIL;
	}
	s->hhold_seq = seq;
	s->hhold_chain = s->hv.chain;
	if (committed) {
		s->xpend_seq = seq;
		s->xpend_key = s->hk;
	}
	return SB_H_NEW;
}

/* Runs the state machine for the event in s->hv.ev and accounts for it.
 * Returns the SB_H_* result; for NEW the event has been pushed (or counted
 * lost: the broker finds the hold in sb_hold anyway). */
static __always_inline int sb_hold_run(struct sb_ctx *c, struct sb_scratch *s, bool committed)
{
	struct sb_counters *k = sb_counter(c);
	int h = sb_hold_decide(s, committed);
	__u32 id = c->id;
	void *ring;

	if (h == SB_H_NEW) {
		if (k)
			__sync_fetch_and_add(&k->escalated, 1);
		ring = bpf_map_lookup_elem(&sb_rings, &id);
		if ((!ring || bpf_ringbuf_output(ring, &s->hv.ev, sizeof(s->hv.ev), 0)) && k)
			__sync_fetch_and_add(&k->lost, 1);
	} else if (h == SB_H_ALLOW && k) {
		__sync_fetch_and_add(&k->allowed, 1);
	} else if (h == SB_H_DENY && k) {
		__sync_fetch_and_add(&k->denied, 1);
	}
	return h;
}

static __always_inline int sb_hold_ret(int h)
{
	if (h == SB_H_ALLOW)
		return 0;
	if (h == SB_H_DENY)
		return -EPERM;
	return -ERESTARTNOINTR;
}

/* Whether a task is held (for task_kill and ptrace from inside). */
static __always_inline bool sb_task_held(struct task_struct *t)
{
	__u32 tid;
	struct sb_held *hd;

	if (!t)
		return false;
	tid = BPF_CORE_READ(t, pid);
	hd = bpf_map_lookup_elem(&sb_held, &tid);
	return hd && hd->start_ns == BPF_CORE_READ(t, start_boottime);
}

/* ---- path walk --------------------------------------------------------- */

static __always_inline void sb_cand(struct sb_cand *b, __u32 spec, __u8 tier, __u32 rule)
{
	if (tier == SB_K_NONE)
		return;
	if (!b->found || spec > b->spec || (spec == b->spec && tier > b->tier)) {
		b->found = 1;
		b->spec = spec;
		b->tier = tier;
		b->rule = rule;
	}
}

/* An entry (inode, named child or completed chain) that sits at walk
 * level v relative to the object. */
__noinline int sb_apply_g(struct sb_walk *w, struct sb_pval *pv, int v)
{
	int t;

	if (!w || !pv || v < 0)
		return 0;
	for (t = 0; t < 2; t++) {
		if (!(w->trigmask & (1 << t)))
			continue;
		if (v == 0)
			sb_cand(&w->best[t], pv->slot[t][SB_PL_EXACT].spec, pv->slot[t][SB_PL_EXACT].tier,
				pv->slot[t][SB_PL_EXACT].rule);
		sb_cand(&w->best[t], pv->slot[t][SB_PL_SUBTREE].spec, pv->slot[t][SB_PL_SUBTREE].tier,
			pv->slot[t][SB_PL_SUBTREE].rule);
		if (v >= 1)
			sb_cand(&w->best[t], pv->slot[t][SB_PL_BELOW].spec, pv->slot[t][SB_PL_BELOW].tier,
				pv->slot[t][SB_PL_BELOW].rule);
	}
	if (v == 0 && w->move && (pv->flags & SB_PV_PROT_ANCESTOR) && (w->trigmask & (1 << SB_PT_WRITE)))
		sb_cand(&w->best[SB_PT_WRITE], SB_SPEC_PROTECTED, SB_K_DENY, pv->prot_rule);
	return 0;
}

static __always_inline void sb_rel(struct sb_cand *b, __u8 tier, __u32 rule, __u32 level)
{
	if (tier == SB_K_NONE)
		return;
	if (!b->found || level < b->level || (level == b->level && tier > b->tier)) {
		b->found = 1;
		b->level = level;
		b->tier = tier;
		b->rule = rule;
	}
}

static __always_inline bool sb_name_eq(const char *a, const char *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/* A name longer than SB_NAME_KEY matched on its first bytes and length:
 * compare it in full with the name the loader stored (key: s->ck). */
__noinline int sb_longname_g(__u64 name_ptr, __u32 len)
{
	struct sb_scratch *s = sb_s();
	struct sb_longname *ln;
	const __u64 *a, *b;
	int i;

	if (!s)
		return 0;
	ln = bpf_map_lookup_elem(&sb_longname, &s->ck);
	if (!ln)
		return 0;
	__builtin_memset(s->name, 0, sizeof(s->name));
	bpf_probe_read_kernel(s->name, SB_MASK(len, 255), (void *)name_ptr);
	a = (const __u64 *)s->name;
	b = (const __u64 *)ln->name;
	for (i = 0; i < SB_NAME_MAX / 8; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* Chain entries under the named child at level i: the missing components
 * must match the levels below (already walked). */
__noinline int sb_chains_g(__u32 i, __u32 nchains)
{
	struct sb_scratch *s = sb_s();
	int k, j;

	if (!s)
		return 0;
	for (k = 1; k <= SB_CHAINS_PER_KEY; k++) {
		struct sb_chain *ch;
		bool ok = true;

		if (k > nchains)
			break;
		s->ck.kind = k;
		ch = bpf_map_lookup_elem(&sb_pchain, &s->ck);
		if (!ch)
			continue;
		for (j = 0; j < SB_CHAIN_MAX; j++) {
			int lvl = (int)i - 1 - j;
			struct sb_level *l;

			if (j >= ch->ncomps)
				break;
			if (lvl < 0) {
				ok = false;
				break;
			}
			l = &s->w.lv[SB_MASK(lvl, 63)];
			if (l->len != ch->lens[j] || !sb_name_eq(l->name, ch->names[j])) {
				ok = false;
				break;
			}
		}
		if (ok)
			sb_apply_g(&s->w, &ch->val, (int)i - (int)ch->ncomps);
	}
	s->ck.kind = 0;
	return 0;
}

/* One level of the walk up from the object; 1 when the walk is over. */
__noinline int sb_level_g(__u32 i)
{
	struct sb_scratch *s = sb_s();
	struct sb_walk *w;
	struct dentry *d, *parent, *named;
	struct mount *m, *next_m;
	struct inode *inode, *pinode;
	struct sb_level *lv;
	struct sb_pval *pv;
	__u32 len;
	int root = 0, k;

	if (!s || i >= SB_WALK_MAX)
		return 1;
	w = &s->w;
	lv = &w->lv[SB_MASK(i, 63)];
	d = (struct dentry *)w->dentry;
	m = (struct mount *)w->mnt;
	if (!d)
		return 1;
	inode = BPF_CORE_READ(d, d_inode);
	parent = BPF_CORE_READ(d, d_parent);
	named = d;
	next_m = m;
	if (m) {
		/* At a mount root the path continues at the mountpoint in the
		 * parent mount (stacked mounts: several times). */
		for (k = 0; k < 4; k++) {
			struct dentry *mroot = BPF_CORE_READ(next_m, mnt.mnt_root);
			struct mount *mp;

			if (named != mroot)
				break;
			mp = BPF_CORE_READ(next_m, mnt_parent);
			if (mp == next_m) {
				/* The root of a namespace or a detached mount
				 * (open_tree(OPEN_TREE_CLONE)): when it shows a
				 * subdirectory, go on up inside its filesystem
				 * so rules on the directories above still apply
				 * (red team: a clone of a subdirectory of a
				 * protected tree). */
				if (mroot == BPF_CORE_READ(mroot, d_sb, s_root))
					root = 1;
				break;
			}
			named = BPF_CORE_READ(next_m, mnt_mountpoint);
			next_m = mp;
		}
		if (!root) {
			parent = BPF_CORE_READ(named, d_parent);
			if (parent == named) {
				root = 1;
				w->partial = 1;
				/* A disconnected dentry (open_by_handle_at) is
				 * its own parent without being the filesystem's
				 * root: its ancestors are unknown, so the walk is
				 * incomplete and the decision denies. */
				if (named != BPF_CORE_READ(named, d_sb, s_root))
					return 1;
			}
		}
	} else if (parent == d) {
		root = 1;
		w->partial = 1;
	}

	lv->dev = 0;
	lv->ino = 0;
	if (inode) {
		s->ik.sbgen = w->sbgen;
		s->ik.dev = BPF_CORE_READ(inode, i_sb, s_dev);
		s->ik.ino = BPF_CORE_READ(inode, i_ino);
		lv->dev = s->ik.dev;
		lv->ino = s->ik.ino;
		pv = bpf_map_lookup_elem(&sb_pinode, &s->ik);
		if (pv)
			sb_apply_g(w, pv, i);
	}
	if (root) {
		w->done = 1;
		w->nlev = i + 1;
		return 1;
	}

	len = BPF_CORE_READ(named, d_name.len);
	lv->len = len;
	lv->name_ptr = (__u64)BPF_CORE_READ(named, d_name.name);
	__builtin_memset(lv->name, 0, sizeof(lv->name));
	bpf_probe_read_kernel(lv->name, len < SB_NAME_KEY ? len : SB_NAME_KEY, (void *)lv->name_ptr);

	pinode = BPF_CORE_READ(parent, d_inode);
	if (pinode) {
		s->ck.sbgen = w->sbgen;
		s->ck.dev = BPF_CORE_READ(pinode, i_sb, s_dev);
		s->ck.ino = BPF_CORE_READ(pinode, i_ino);
		s->ck.len = len;
		s->ck.kind = 0;
		__builtin_memcpy(s->ck.name, lv->name, SB_NAME_KEY);
		pv = bpf_map_lookup_elem(&sb_pchild, &s->ck);
		if (pv && (!(pv->flags & SB_PV_LONGNAME) || sb_longname_g(lv->name_ptr, len))) {
			sb_apply_g(w, pv, i);
			if (pv->nchains)
				sb_chains_g(i, pv->nchains);
		}
	}
	if (w->has_names) {
		s->nk.sbgen = w->sbgen;
		s->nk.len = len;
		__builtin_memcpy(s->nk.name, lv->name, SB_NAME_KEY);
		pv = bpf_map_lookup_elem(&sb_pname, &s->nk);
		if (pv && pv->flags & SB_PV_LONGNAME) {
			s->ck.sbgen = w->sbgen;
			s->ck.dev = 0;
			s->ck.ino = 0;
			s->ck.len = len;
			s->ck.kind = 0xff;
			__builtin_memcpy(s->ck.name, lv->name, SB_NAME_KEY);
			if (!sb_longname_g(lv->name_ptr, len))
				pv = NULL;
		}
		if (pv) {
			int t;

			for (t = 0; t < 2; t++) {
				if (!(w->trigmask & (1 << t)))
					continue;
				if (i == 0)
					sb_rel(&w->rel[t], pv->slot[t][SB_PL_EXACT].tier, pv->slot[t][SB_PL_EXACT].rule, i);
				sb_rel(&w->rel[t], pv->slot[t][SB_PL_SUBTREE].tier, pv->slot[t][SB_PL_SUBTREE].rule, i);
			}
		}
	}
	w->dentry = (__u64)parent;
	w->mnt = (__u64)next_m;
	return 0;
}

static long sb_level_cb(__u32 i, void *arg)
{
	return sb_level_g(i) ? 1 : 0;
}

/* Single-star name globs at level 0 (name in s->name). */
__noinline int sb_glob_g(__u32 i)
{
	struct sb_scratch *s = sb_s();
	struct sb_glob *g;
	__u32 idx, L, off;
	int k;

	if (!s || i >= SB_GLOBS_MAX)
		return 1;
	idx = s->w.sbgen * SB_GLOBS_MAX + i;
	g = bpf_map_lookup_elem(&sb_pglob, &idx);
	if (!g)
		return 1;
	if (g->trig > 1 || !(s->w.trigmask & (1 << g->trig)))
		return 0;
	if ((g->flags & SB_GLOB_CHILD) && (s->w.lv[1].dev != g->dev || s->w.lv[1].ino != g->ino))
		return 0;
	L = s->w.namelen;
	if (L < (__u32)g->plen + g->slen || g->plen > SB_GLOB_PART || g->slen > SB_GLOB_PART)
		return 0;
	for (k = 0; k < SB_GLOB_PART; k++) {
		if (k >= g->plen)
			break;
		if (s->name[k] != g->prefix[k])
			return 0;
	}
	off = L - g->slen;
	for (k = 0; k < SB_GLOB_PART; k++) {
		if (k >= g->slen)
			break;
		if (s->name[SB_MASK(off + k, 255)] != g->suffix[k])
			return 0;
	}
	sb_cand(&s->w.best[g->trig & 1], (g->flags & SB_GLOB_ANCHORED) ? 2 * (s->w.nlev - 1) : g->spec, g->tier,
		g->rule);
	return 0;
}

static long sb_glob_cb(__u32 i, void *arg)
{
	return sb_glob_g(i) ? 1 : 0;
}

/* Decides the path triggers in s->w.trigmask for the object s->w.dentry
 * (s->w.mnt: its struct mount, or 0). Results in s->w.res[]. */
__noinline int sb_walk_g(void)
{
	struct sb_scratch *s = sb_s();
		struct sb_walk *w;
	int t;

	if (!s)
		return -1;
	w = &s->w;
	w->nlev = 0;
	w->done = 0;
	w->partial = 0;
	__builtin_memset(w->best, 0, sizeof(w->best));
	__builtin_memset(w->rel, 0, sizeof(w->rel));
	bpf_loop(SB_WALK_MAX, sb_level_cb, NULL, 0);

	if (!w->done) {
		/* Deeper than SB_WALK_MAX: never silently allow. */
		for (t = 0; t < 2; t++) {
			w->res[t].tier = SB_K_DENY;
			w->res[t].rule = SB_RULE_WALK_LIMIT;
		}
		return 0;
	}
	if (w->nglobs && w->nlev >= 2 && w->lv[0].len) {
		__u32 len = w->lv[0].len;

		__builtin_memset(s->name, 0, sizeof(s->name));
		bpf_probe_read_kernel(s->name, SB_MASK(len, 255), (void *)w->lv[0].name_ptr);
		w->namelen = SB_MASK(len, 255);
		bpf_loop(w->nglobs < SB_GLOBS_MAX ? w->nglobs : SB_GLOBS_MAX, sb_glob_cb, NULL, 0);
	}
	for (t = 0; t < 2; t++) {
		struct sb_cand *b = &w->best[t];

		if (w->rel[t].found && w->nlev - 1 >= w->rel[t].level)
			sb_cand(b, 2 * (w->nlev - 1 - w->rel[t].level) + 1, w->rel[t].tier, w->rel[t].rule);
		if (b->found) {
			w->res[t].tier = b->tier;
			w->res[t].rule = b->rule;
		} else {
			w->res[t].tier = w->defaults[t];
			w->res[t].rule = SB_RULE_DEFAULT;
		}
	}
	return 0;
}

/* The stricter of the decided triggers; a trigger whose tier is uniform
 * (every rule and the default agree) is decided without walking. A reload
 * that flips the generation during the decision makes it start over once
 * (entries of the old generation may be gone); twice denies. */
static __always_inline int sb_decide_path(struct sb_ctx *c, struct dentry *dentry, struct mount *mnt,
					  __u8 trigmask, bool move, struct sb_res *out)
{
	struct sb_scratch *s = c->s;
	struct sb_res res[2] = {};
	__u8 need;
	int t, attempt, r;

	if (!s)
		return -1;
	for (attempt = 0; attempt < 2; attempt++) {
		need = 0;
		for (t = 0; t < 2; t++) {
			__u8 u;

			if (!(trigmask & (1 << t)))
				continue;
			u = c->cfg->uniform[t == SB_PT_WRITE ? SB_K_WRITE : SB_K_READ];
			if (u != SB_K_NONE) {
				res[t].tier = u;
				res[t].rule = SB_RULE_DEFAULT;
			} else {
				need |= 1 << t;
			}
		}
		if (need) {
			s->w.dentry = (__u64)dentry;
			s->w.mnt = (__u64)mnt;
			s->w.sbgen = c->sbgen;
			s->w.move = move;
			s->w.trigmask = need;
			s->w.has_names = c->cfg->has_names;
			s->w.nglobs = c->cfg->nglobs;
			s->w.defaults[SB_PT_WRITE] = c->cfg->defaults[SB_K_WRITE];
			s->w.defaults[SB_PT_READ] = c->cfg->defaults[SB_K_READ];
			if (sb_walk_g() < 0)
				return -1;
			for (t = 0; t < 2; t++) {
				if (need & (1 << t))
					res[t] = s->w.res[t];
			}
			s->w.unwalked = 0;
		} else {
			s->w.nlev = 0;
			s->w.done = 0;
			s->w.dentry = (__u64)dentry;
			s->w.mnt = (__u64)mnt;
			s->w.sbgen = c->sbgen;
			s->w.move = move;
			s->w.unwalked = 1;
		}
		r = sb_refresh(c);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
	}
	if (attempt == 2) {
		out->tier = SB_K_DENY;
		out->rule = SB_RULE_RELOAD_RACE;
		out->trig = SB_K_WRITE;
		out->tier2 = SB_K_ALLOW;
		return 0;
	}
	{
		bool have = false;

		out->tier2 = SB_K_ALLOW;
		for (t = 0; t < 2; t++) {
			if (!(trigmask & (1 << t)))
				continue;
			if (!have || res[t].tier > out->tier) {
				if (have) {
					out->tier2 = out->tier;
					out->trig2 = out->trig;
					out->rule2 = out->rule;
				}
				out->tier = res[t].tier;
				out->rule = res[t].rule;
				out->trig = t == SB_PT_WRITE ? SB_K_WRITE : SB_K_READ;
				have = true;
			} else {
				out->tier2 = res[t].tier;
				out->rule2 = res[t].rule;
				out->trig2 = t == SB_PT_WRITE ? SB_K_WRITE : SB_K_READ;
			}
		}
	}
	return 0;
}

/* Event path from the walk's levels (hooks where bpf_d_path is not
 * allowed). Components are read in full from the dentries. */
__noinline int sb_pathb_g(__u32 i, __u32 top)
{
	struct sb_scratch *s = sb_s();
	__u32 lvl, pos;
	long n;

	if (!s || i >= top || top > SB_WALK_MAX)
		return 1;
	lvl = SB_MASK(top - 1 - i, 63);
	pos = s->pathpos;
	if (pos > SB_EV_PATH / 2 - 1) {
		s->pathflags |= SB_EVF_PATH_TRUNC;
		return 1;
	}
	s->path[SB_MASK(pos, 255)] = '/';
	pos++;
	n = bpf_probe_read_kernel_str(&s->path[SB_MASK(pos, 255)], SB_EV_PATH / 2, (void *)s->w.lv[lvl].name_ptr);
	if (n > 1)
		pos += n - 1;
	s->pathpos = pos;
	return 0;
}

struct sb_pathb_ctx {
	struct sb_scratch *s;
	__u32 top;
};

static long sb_pathb_cb(__u32 i, void *arg)
{
	struct sb_pathb_ctx *pc = arg;

	return sb_pathb_g(i, pc->top) ? 1 : 0;
}

static __always_inline void sb_path_from_walk(struct sb_scratch *s)
{
	struct sb_pathb_ctx pc = { .s = s };

	s->pathflags = s->w.partial ? SB_EVF_PATH_PARTIAL : 0;
	s->pathpos = 0;
	if (!s->w.done) {
		s->pathflags |= SB_EVF_PATH_TRUNC;
		pc.top = SB_WALK_MAX;
	} else {
		pc.top = s->w.nlev ? s->w.nlev - 1 : 0;
	}
	if (pc.top == 0) {
		s->path[0] = '/';
		s->path[1] = 0;
		s->pathlen = 1;
		return;
	}
	bpf_loop(SB_WALK_MAX, sb_pathb_cb, &pc, 0);
	s->pathlen = s->pathpos < SB_EV_PATH ? s->pathpos : SB_EV_PATH - 1;
	s->path[SB_MASK(s->pathlen, 511)] = 0;
}

static __always_inline void sb_path_from_dpath(struct sb_scratch *s, const struct path *p)
{
	long n = bpf_d_path((struct path *)p, s->path, SB_EV_PATH);

	s->pathflags = 0;
	if (n > 0) {
		s->pathlen = n - 1;
	} else {
		/* bpf_d_path fails on names longer than the buffer. */
		sb_path_from_walk(s);
	}
}

/* The event's path: bpf_d_path where the hook allows it, else the walk's
 * levels (walking now when the decision needed no walk). */
static __always_inline void sb_event_path(struct sb_scratch *s, const struct path *dpath)
{
	if (dpath) {
		sb_path_from_dpath(s, dpath);
		return;
	}
	if (s->w.unwalked) {
		s->w.trigmask = 0;	/* names only: no rule is looked at */
		s->w.has_names = 0;
		s->w.nglobs = 0;
		sb_walk_g();
		s->w.unwalked = 0;
	}
	sb_path_from_walk(s);
}

/* Escalate with holds on: hold the task until the broker's verdict for
 * this (thread, trigger, path). Returns 1 when it could not be held (the
 * caller denies as before), else the syscall's return value in *ret. */
static __always_inline int sb_hold_path(struct sb_ctx *c, struct sb_res *r, __u8 op, const struct path *dpath,
					int *ret)
{
	struct sb_scratch *s = c->s;
	int h;

	if (!s || !sb_hold_enabled(c) || !sb_can_hold())
		return 1;
	sb_event_path(s, dpath);
	/* A cut path cannot say which object a human would approve. */
	if (s->pathflags & SB_EVF_PATH_TRUNC)
		return 1;
	sb_ev_fill(c, &s->hv.ev, SB_EVK_PATH, SB_ACT_ESCALATED, r->tier, r->trig, r->rule, -ERESTARTNOINTR);
	s->hv.ev.op = op;
	s->hv.ev.flags = s->pathflags | SB_EVF_HELD;
	s->hv.ev.path.len = s->pathlen;
	bpf_probe_read_kernel(s->hv.ev.path.path, SB_EV_PATH, s->path);
	s->hk.tid = (__u32)bpf_get_current_pid_tgid();
	s->hk.pad = 0;
	s->hk.ident = sb_fnv(sb_hash_path(s, r->trig, s->pathlen), sb_op_class(op));
	h = sb_hold_run(c, s, false);
	if (h == SB_H_FAIL)
		return 1;
	*ret = sb_hold_ret(h);
	return 0;
}

static __always_inline int sb_verdict_path(struct sb_ctx *c, struct sb_res *r, __u8 op, const struct path *dpath)
{
	struct sb_scratch *s = c->s;
	struct sb_res r2;
	struct sb_kevent *ev;
	__u8 action;
	int ret;

	if (r->tier == SB_K_ESCALATE && sb_hold_path(c, r, op, dpath, &ret) == 0) {
		/* Both triggers escalate (an O_RDWR open of a file whose reads
		 * and writes are both escalated): the other one is asked for
		 * on its own once the first is approved, in the same syscall. */
		if (ret || op != SB_KOP_OPEN || r->tier2 != SB_K_ESCALATE)
			return ret;
		r2.tier = r->tier2;
		r2.trig = r->trig2;
		r2.rule = r->rule2;
		r2.tier2 = SB_K_ALLOW;
		if (sb_hold_path(c, &r2, r->trig2 == SB_K_READ ? SB_KOP_READ : SB_KOP_OPEN, dpath, &ret) == 0)
			return ret;
		r = &r2;	/* cannot be held: decided (denied) as escalate */
	}
	ret = sb_outcome(c, r->tier, &action);
	if (!action || !s)
		return ret;
	sb_event_path(s, dpath);
	ev = sb_ev_reserve(c);
	if (!ev)
		return ret;
	sb_ev_fill(c, ev, SB_EVK_PATH, action, r->tier, r->trig, r->rule, ret);
	ev->op = op;
	ev->flags = s->pathflags;
	ev->path.len = s->pathlen;
	bpf_probe_read_kernel(ev->path.path, SB_EV_PATH, s->path);
	bpf_ringbuf_submit(ev, 0);
	return ret;
}

static __always_inline struct mount *sb_real_mount(struct vfsmount *mnt)
{
	if (!mnt)
		return NULL;
	return (struct mount *)((void *)mnt - bpf_core_field_offset(struct mount, mnt));
}

/* Objects that have no name in any mount namespace (pipes, sockets,
 * memfd, anonymous inodes) cannot be named by a path rule. */
static __always_inline bool sb_internal_mount(struct mount *m)
{
	unsigned long ns = (unsigned long)BPF_CORE_READ(m, mnt_ns);

	return ns == 0 || ns >= (unsigned long)-4095;
}

/* One path object, one op: the common body of the path hooks. */
static __always_inline int sb_path_op(struct sb_ctx *c, struct dentry *dentry, struct mount *mnt, __u8 trigmask,
				      bool move, __u8 op, const struct path *dpath)
{
	struct sb_res r;

	if (!sb_get_scratch(c))
		return sb_fail_closed(c);
	if (mnt && sb_internal_mount(mnt)) {
		struct sb_counters *k = sb_counter(c);

		if (k)
			__sync_fetch_and_add(&k->allowed, 1);
		return 0;
	}
	if (sb_decide_path(c, dentry, mnt, trigmask, move, &r) < 0)
		return sb_fail_closed(c);
	return sb_verdict_path(c, &r, op, dpath);
}

#define W (1 << SB_PT_WRITE)
#define R (1 << SB_PT_READ)

/* ---- file hooks -------------------------------------------------------- */

SEC("lsm/file_open")
int BPF_PROG(sb_file_open, struct file *file)
{
	struct sb_ctx c;
	unsigned int fmode, flags;
	__u8 mask = 0;
	int e = sb_enter(&c, SB_HOOK_FILE_OPEN);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	fmode = file->f_mode;
	flags = file->f_flags;
	if ((fmode & FMODE_WRITE) || (flags & O_TRUNC))
		mask |= W;
	/* Exec opens are decided by the exec hooks, not as reads. */
	if ((fmode & FMODE_READ) && !(fmode & FMODE_EXEC))
		mask |= R;
	if (!mask)
		return 0;
	/* A block device holds every file of its filesystems: reading or
	 * writing it goes around every path rule (red team). */
	if ((BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) == S_IFBLK) {
		struct sb_res r = { .tier = SB_K_DENY, .rule = SB_RULE_RAW_DEVICE,
				    .trig = (mask & W) ? SB_K_WRITE : SB_K_READ };

		if (!sb_get_scratch(&c))
			return sb_fail_closed(&c);
		return sb_verdict_path(&c, &r, (mask & W) ? SB_KOP_OPEN : SB_KOP_READ, &file->f_path);
	}
	return sb_path_op(&c, file->f_path.dentry, sb_real_mount(file->f_path.mnt), mask, false,
			  (mask & W) ? SB_KOP_OPEN : SB_KOP_READ, &file->f_path);
}

SEC("lsm/file_truncate")
int BPF_PROG(sb_file_truncate, struct file *file)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_FILE_TRUNCATE);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, file->f_path.dentry, sb_real_mount(file->f_path.mnt), W, false, SB_KOP_TRUNCATE,
			  NULL);
}

SEC("lsm/path_truncate")
int BPF_PROG(sb_path_truncate, const struct path *path)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_TRUNCATE);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, path->dentry, sb_real_mount(path->mnt), W, false, SB_KOP_TRUNCATE, NULL);
}

SEC("lsm/path_unlink")
int BPF_PROG(sb_path_unlink, const struct path *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_UNLINK);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, dentry, sb_real_mount(dir->mnt), W, true, SB_KOP_UNLINK, NULL);
}

SEC("lsm/path_rmdir")
int BPF_PROG(sb_path_rmdir, const struct path *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_RMDIR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, dentry, sb_real_mount(dir->mnt), W, true, SB_KOP_RMDIR, NULL);
}

SEC("lsm/path_mkdir")
int BPF_PROG(sb_path_mkdir, const struct path *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_MKDIR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, dentry, sb_real_mount(dir->mnt), W, false, SB_KOP_MKDIR, NULL);
}

/* Also the O_CREAT path: may_o_create() calls security_path_mknod(). */
SEC("lsm/path_mknod")
int BPF_PROG(sb_path_mknod, const struct path *dir, struct dentry *dentry, umode_t mode)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_MKNOD);
	__u8 op = ((mode & S_IFMT) == S_IFREG || (mode & S_IFMT) == 0) ? SB_KOP_CREATE : SB_KOP_MKNOD;

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, dentry, sb_real_mount(dir->mnt), W, false, op, NULL);
}

SEC("lsm/path_symlink")
int BPF_PROG(sb_path_symlink, const struct path *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_SYMLINK);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, dentry, sb_real_mount(dir->mnt), W, false, SB_KOP_SYMLINK, NULL);
}

SEC("lsm/path_chmod")
int BPF_PROG(sb_path_chmod, const struct path *path)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_CHMOD);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, path->dentry, sb_real_mount(path->mnt), W, false, SB_KOP_CHMOD, NULL);
}

SEC("lsm/path_chown")
int BPF_PROG(sb_path_chown, const struct path *path)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_CHOWN);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_path_op(&c, path->dentry, sb_real_mount(path->mnt), W, false, SB_KOP_CHOWN, NULL);
}

/* A file that moves keeps its inode entries but leaves name rules behind
 * (basename rules such as .env anywhere, a rule on a path created after
 * the policy loaded): renaming a read-protected file is refused like
 * linking it (red team: rename .env away, then read it). 0: allowed. */
static __always_inline int sb_move_read(struct sb_ctx *c, struct dentry *dentry, struct mount *mnt, __u8 op)
{
	struct sb_res r;

	if (sb_decide_path(c, dentry, mnt, R, false, &r) < 0)
		return sb_fail_closed(c);
	if (r.tier < SB_K_ESCALATE)
		return 0;
	return sb_verdict_path(c, &r, op, NULL);
}

#define RENAME_EXCHANGE (1 << 1)

/* Both ends are writes, and both move a directory entry (so ancestors of
 * protected paths are protected too). RENAME_EXCHANGE is covered because
 * both ends are checked the same way, for reads too. */
SEC("lsm/path_rename")
int BPF_PROG(sb_path_rename, const struct path *old_dir, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, unsigned int flags)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PATH_RENAME), ret;

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	ret = sb_path_op(&c, old_dentry, sb_real_mount(old_dir->mnt), W, true, SB_KOP_RENAME_FROM, NULL);
	if (ret)
		return ret;
	ret = sb_path_op(&c, new_dentry, sb_real_mount(new_dir->mnt), W, true, SB_KOP_RENAME_TO, NULL);
	if (ret)
		return ret;
	ret = sb_move_read(&c, old_dentry, sb_real_mount(old_dir->mnt), SB_KOP_RENAME_FROM);
	if (ret || !(flags & RENAME_EXCHANGE))
		return ret;
	return sb_move_read(&c, new_dentry, sb_real_mount(new_dir->mnt), SB_KOP_RENAME_TO);
}

/* The new name is a write. The existing file must not gain a name that
 * its rules do not cover: a link to a file that is read- or
 * write-protected (by name rules that would not follow the new name) is
 * denied with the stricter of its read and write decisions. */
SEC("lsm/path_link")
int BPF_PROG(sb_path_link, struct dentry *old_dentry, const struct path *new_dir, struct dentry *new_dentry)
{
	struct sb_ctx c;
	struct mount *m;
	struct sb_res r;
	int e = sb_enter(&c, SB_HOOK_PATH_LINK), ret;

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	m = sb_real_mount(new_dir->mnt);
	ret = sb_path_op(&c, new_dentry, m, W, false, SB_KOP_LINK, NULL);
	if (ret)
		return ret;
	if (sb_decide_path(&c, old_dentry, m, W | R, false, &r) < 0)
		return sb_fail_closed(&c);
	if (r.tier < SB_K_ESCALATE)
		return 0;
	return sb_verdict_path(&c, &r, SB_KOP_LINK_SOURCE, NULL);
}

/* No vfsmount here: the walk stops at the filesystem's root (the event
 * says "partial"); entries on directories inside that filesystem match,
 * entries above its mount point do not. */
static __always_inline int sb_inode_op(struct sb_ctx *c, struct dentry *dentry, __u8 op)
{
	return sb_path_op(c, dentry, NULL, W, op == SB_KOP_UNLINK || op == SB_KOP_RMDIR ||
					       op == SB_KOP_RENAME_FROM || op == SB_KOP_RENAME_TO,
			  op, NULL);
}

SEC("lsm/inode_setxattr")
int BPF_PROG(sb_inode_setxattr, void *idmap, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_SETXATTR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_SETXATTR);
}

SEC("lsm/inode_removexattr")
int BPF_PROG(sb_inode_removexattr, void *idmap, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_REMOVEXATTR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_SETXATTR);
}

SEC("lsm/inode_set_acl")
int BPF_PROG(sb_inode_set_acl, void *idmap, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_SET_ACL);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_SETXATTR);
}

SEC("lsm/inode_remove_acl")
int BPF_PROG(sb_inode_remove_acl, void *idmap, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_REMOVE_ACL);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_SETXATTR);
}

/* utimes (and, without path_* hooks, truncate/chmod/chown). The argument
 * list changed in 6.3 (idmap first): two programs, the loader autoloads
 * the one matching the kernel's BTF. */
static __always_inline int sb_setattr(struct dentry *dentry, struct iattr *attr)
{
	struct sb_ctx c;
	unsigned int valid;
	__u8 op;
	int e = sb_enter(&c, SB_HOOK_INODE_SETATTR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	valid = BPF_CORE_READ(attr, ia_valid);
	if (inode_fallback && (valid & ATTR_SIZE))
		op = SB_KOP_TRUNCATE;
	else if (inode_fallback && (valid & ATTR_MODE))
		op = SB_KOP_CHMOD;
	else if (inode_fallback && (valid & (ATTR_UID | ATTR_GID)))
		op = SB_KOP_CHOWN;
	else if ((valid & (ATTR_ATIME | ATTR_MTIME)) && !(valid & (ATTR_SIZE | ATTR_MODE | ATTR_UID | ATTR_GID)))
		op = SB_KOP_UTIMES;
	else
		return 0;
	return sb_inode_op(&c, dentry, op);
}

SEC("lsm/inode_setattr")
int BPF_PROG(sb_inode_setattr, struct dentry *dentry, struct iattr *attr)
{
	return sb_setattr(dentry, attr);
}

SEC("lsm/inode_setattr")
int BPF_PROG(sb_inode_setattr_idmap, void *idmap, struct dentry *dentry, struct iattr *attr)
{
	return sb_setattr(dentry, attr);
}

/* Fallbacks for kernels without CONFIG_SECURITY_PATH (the loader picks). */
SEC("lsm/inode_create")
int BPF_PROG(sb_inode_create, struct inode *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_CREATE);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_CREATE);
}

SEC("lsm/inode_unlink")
int BPF_PROG(sb_inode_unlink, struct inode *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_UNLINK);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_UNLINK);
}

SEC("lsm/inode_rmdir")
int BPF_PROG(sb_inode_rmdir, struct inode *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_RMDIR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_RMDIR);
}

SEC("lsm/inode_mkdir")
int BPF_PROG(sb_inode_mkdir, struct inode *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_MKDIR);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_MKDIR);
}

SEC("lsm/inode_mknod")
int BPF_PROG(sb_inode_mknod, struct inode *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_MKNOD);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_MKNOD);
}

SEC("lsm/inode_symlink")
int BPF_PROG(sb_inode_symlink, struct inode *dir, struct dentry *dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_SYMLINK);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_inode_op(&c, dentry, SB_KOP_SYMLINK);
}

SEC("lsm/inode_link")
int BPF_PROG(sb_inode_link, struct dentry *old_dentry, struct inode *dir, struct dentry *new_dentry)
{
	struct sb_ctx c;
	struct sb_res r;
	int e = sb_enter(&c, SB_HOOK_INODE_LINK), ret;

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	ret = sb_inode_op(&c, new_dentry, SB_KOP_LINK);
	if (ret)
		return ret;
	if (sb_decide_path(&c, old_dentry, NULL, W | R, false, &r) < 0)
		return sb_fail_closed(&c);
	if (r.tier < SB_K_ESCALATE)
		return 0;
	return sb_verdict_path(&c, &r, SB_KOP_LINK_SOURCE, NULL);
}

SEC("lsm/inode_rename")
int BPF_PROG(sb_inode_rename, struct inode *old_dir, struct dentry *old_dentry, struct inode *new_dir,
	     struct dentry *new_dentry)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_INODE_RENAME), ret;

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	ret = sb_inode_op(&c, old_dentry, SB_KOP_RENAME_FROM);
	if (ret)
		return ret;
	ret = sb_inode_op(&c, new_dentry, SB_KOP_RENAME_TO);
	if (ret)
		return ret;
	/* RENAME_EXCHANGE calls this hook a second time with the ends swapped. */
	return sb_move_read(&c, old_dentry, NULL, SB_KOP_RENAME_FROM);
}

/* ---- exec -------------------------------------------------------------- */

struct sb_shres {
	__u32 rule;
	__u16 spec;
	__u8 tier;
	__u8 found;
	__u8 refine;
};

/* One step of the descending prefix scan over s->sk.text. */
__noinline int sb_lpm_g(__u32 j)
{
	struct sb_scratch *s = sb_s();
	struct sb_lpm *lp;
	struct sb_shell_val *v;
	__u32 l;

	if (!s)
		return 1;
	lp = &s->lpm;
	if (j >= lp->n)
		return 1;
	l = lp->n - j;
	if (l >= SB_CMD_KEY || l == 0)
		return 1;
	if ((lp->lens[(l >> 6) & 3] >> (l & 63)) & 1) {
		s->sk.len = l;
		v = bpf_map_lookup_elem(&sb_shell, &s->sk);
		if (v && v->refine) {
			/* A wildcard the kernel does not evaluate: the rule may
			 * or may not apply, so the stricter of it and the next
			 * shorter match (or the default) decides. */
			if (!lp->seen_refine) {
				lp->rrule = v->rule;
				lp->rspec = v->spec;
			}
			lp->seen_refine = 1;
			if (v->tier > lp->refine_tier)
				lp->refine_tier = v->tier;
		} else if (v) {
			lp->tier = v->tier;
			lp->rule = v->rule;
			lp->spec = v->spec;
			lp->found = 1;
			return 1;
		}
	}
	s->sk.text[SB_MASK(l - 1, 255)] = 0;
	return 0;
}

static long sb_lpm_cb(__u32 j, void *arg)
{
	return sb_lpm_g(j) ? 1 : 0;
}

/* Longest literal prefix of s->sk.text (length n, zero padded) among the
 * entries of kind; with exact, the whole-line entry first. The caller
 * filled s->sk.sbgen, s->lpm.lens and s->lpm.dflt. Result in s->lpm. */
__noinline int sb_shell_lpm_g(__u32 kind, __u32 n, __u32 exact)
{
	struct sb_scratch *s = sb_s();
		struct sb_shell_val *v;
	struct sb_lpm *lp;

	if (!s)
		return 0;
	lp = &s->lpm;
	lp->found = 0;
	lp->refine = 0;
	lp->tier = 0;
	lp->spec = 0;
	lp->rule = SB_RULE_DEFAULT;
	lp->seen_refine = 0;
	lp->refine_tier = 0;
	if (exact && n < SB_CMD_KEY) {
		s->sk.kind = kind + 1;
		s->sk.len = n;
		v = bpf_map_lookup_elem(&sb_shell, &s->sk);
		if (v) {
			lp->found = 1;
			lp->tier = v->tier;
			lp->rule = v->rule;
			lp->spec = v->spec;
			return 0;
		}
	}
	s->sk.kind = kind;
	lp->n = n > SB_CMD_KEY - 1 ? SB_CMD_KEY - 1 : n;
	bpf_loop(SB_CMD_KEY, sb_lpm_cb, NULL, 0);
	if (lp->seen_refine) {
		__u8 base = lp->found ? lp->tier : lp->dflt;

		lp->refine = 1;
		lp->found = 1;
		lp->spec = lp->rspec;
		if (lp->refine_tier >= base) {
			lp->tier = lp->refine_tier;
			lp->rule = lp->rrule;
		} else {
			lp->tier = base;
		}
	}
	return 0;
}

static __always_inline void sb_shell_lpm(struct sb_ctx *c, __u8 kind, __u32 n, bool exact, struct sb_shres *res)
{
	struct sb_scratch *s = c->s;
	int k;

	res->found = 0;
	res->rule = SB_RULE_DEFAULT;
	if (!s)
		return;
	s->sk.sbgen = c->sbgen;
	for (k = 0; k < 4; k++)
		s->lpm.lens[k] = c->cfg->shell_lens[kind == SB_SHK_FULL][k];
	s->lpm.dflt = c->cfg->defaults[SB_K_SHELL];
	sb_shell_lpm_g(kind, n, exact);
	res->found = s->lpm.found;
	res->tier = s->lpm.tier;
	res->rule = s->lpm.rule;
	res->spec = s->lpm.spec;
	res->refine = s->lpm.refine;
}

/* Copies a kernel string into s->sk.text (zero padded); returns length. */
static __always_inline __u32 sb_key_from_kernel(struct sb_scratch *s, const void *src, __u32 len)
{
	__builtin_memset(s->sk.text, 0, sizeof(s->sk.text));
	if (len > SB_CMD_KEY - 1)
		len = SB_CMD_KEY - 1;
	bpf_probe_read_kernel(s->sk.text, SB_MASK(len, 255), src);
	return len;
}

static __always_inline bool sb_argvname(struct sb_ctx *c, __u32 len)
{
	struct sb_scratch *s = c->s;

	s->sk.sbgen = c->sbgen;
	s->sk.kind = SB_SHK_ARGVNAME;
	s->sk.len = len;
	return bpf_map_lookup_elem(&sb_shell, &s->sk) != NULL;
}

/* The classifier's order for one name: the longest literal prefix over
 * basename rules (matched on the name's line) and full-path rules
 * (matched on the executable's path line); ties go to the stricter. */
static __always_inline void sb_shell_pick(struct sb_shres *best, struct sb_shres *a, struct sb_shres *f)
{
	*best = *a;
	if (!f->found)
		return;
	if (!a->found || f->spec > a->spec || (f->spec == a->spec && f->tier > a->tier))
		*best = *f;
}

struct sb_xdec {
	__u8 tier;
	__u8 refine;		/* the deciding rule has a wildcard the kernel does not evaluate */
	__u8 pad[2];
	__u32 rule;
};

static __always_inline void sb_xmerge(struct sb_xdec *d, __u8 tier, __u32 rule)
{
	if (tier > d->tier || d->rule == SB_RULE_DEFAULT) {
		if (tier >= d->tier) {
			d->tier = tier;
			d->rule = rule;
		}
	}
}

/* Binary-level decision for one name already in s->sk.text. */
static __always_inline void sb_bin_name(struct sb_ctx *c, __u32 len, struct sb_shres *full, struct sb_xdec *d)
{
	struct sb_shres a, best;

	if (!len)
		return;
	if (sb_argvname(c, len))
		return;	/* argv-level rules: decided in bprm_committed_creds */
	sb_shell_lpm(c, SB_SHK_NAME, len, false, &a);
	sb_shell_pick(&best, &a, full);
	if (best.found) {
		sb_xmerge(d, best.tier, best.rule);
		if (best.refine && d->rule == best.rule)
			d->refine = 1;
	} else {
		sb_xmerge(d, c->cfg->defaults[SB_K_SHELL], SB_RULE_DEFAULT);
	}
}

__noinline int sb_base_g(__u32 i)
{
	struct sb_scratch *s = sb_s();
	char ch;

	if (!s || i >= s->av.n || i >= 256)
		return 1;
	ch = s->av.src ? s->name[SB_MASK(i, 255)] : s->buf[SB_MASK(i, 255)];
	if (ch == '/')
		s->av.last = i + 1;
	return 0;
}

static long sb_base_cb(__u32 i, void *arg)
{
	return sb_base_g(i) ? 1 : 0;
}

/* Basename of a string in s->buf (src 0) or s->name (src 1) of length n
 * (at most 256): offset of its first byte.
 * (Loop state lives in the scratch, never in a stack context: 6.1 checks
 * a bpf_loop callback once with the caller's stack values and drops the
 * branches it did not see.) */
static __always_inline __u32 sb_basename_off(struct sb_scratch *s, __u32 n, __u8 src)
{
	s->av.n = n;
	s->av.src = src;
	s->av.last = 0;
	bpf_loop(256, sb_base_cb, NULL, 0);
	return s->av.last;
}

static __always_inline int sb_verdict_exec(struct sb_ctx *c, __u8 tier, __u32 rule, __u8 action_override,
					   const struct path *fpath)
{
	struct sb_scratch *s = c->s;
	struct sb_kevent *ev;
	__u8 action;
	int ret = sb_outcome(c, tier, &action);

	if (action_override && action && action != SB_ACT_AUDIT && action != SB_ACT_OBSERVED) {
		action = action_override;
		ret = SIGKILL;
	}
	if (!action || !s)
		return ret;
	sb_path_from_dpath(s, fpath);
	ev = sb_ev_reserve(c);
	if (!ev)
		return ret;
	sb_ev_fill(c, ev, SB_EVK_EXEC, action, tier, SB_K_SHELL, rule, ret);
	ev->flags = s->pathflags | s->cmdflags;
	ev->exec.len = s->pathlen;
	ev->exec.argv_len = s->cmdlen;
	bpf_probe_read_kernel(ev->exec.path, SB_EV_PATH, s->path);
	bpf_probe_read_kernel(ev->exec.argv, SB_EV_ARGV, s->cmd);
	bpf_ringbuf_submit(ev, 0);
	return ret;
}

/* Escalate with holds on. Before the point of no return (bprm_check) the
 * execve restarts after the verdict like any syscall; after it
 * (committed) the new image is stopped before its first instruction and
 * the broker resumes (SIGCONT) or kills it. 1: not held. */
static __always_inline int sb_hold_exec(struct sb_ctx *c, __u8 tier, __u32 rule, const struct path *fpath,
					bool committed, bool refine, int *ret)
{
	struct sb_scratch *s = c->s;
	int h;

	if (!s || !sb_hold_enabled(c) || !sb_can_hold())
		return 1;
	sb_path_from_dpath(s, fpath);
	if (s->pathflags & SB_EVF_PATH_TRUNC)
		return 1;
	sb_ev_fill(c, &s->hv.ev, SB_EVK_EXEC, SB_ACT_ESCALATED, tier, SB_K_SHELL, rule,
		   committed ? SIGSTOP : -ERESTARTNOINTR);
	s->hv.ev.flags = s->pathflags | s->cmdflags | SB_EVF_HELD | (committed ? SB_EVF_HELD_EXEC : 0);
	s->hv.ev.exec.len = s->pathlen;
	s->hv.ev.exec.argv_len = s->cmdlen;
	bpf_probe_read_kernel(s->hv.ev.exec.path, SB_EV_PATH, s->path);
	bpf_probe_read_kernel(s->hv.ev.exec.argv, SB_EV_ARGV, s->cmd);
	s->hk.tid = (__u32)bpf_get_current_pid_tgid();
	s->hk.pad = 0;
	s->hk.ident = sb_fnv(sb_hash_path(s, SB_K_SHELL, s->pathlen), committed ? 0xfe : 0xfd);
	h = sb_hold_run(c, s, committed);
	if (h == SB_H_FAIL)
		return 1;
	if (h == SB_H_ALLOW && !committed && !refine) {
		/* The approval is for this binary with any arguments: the same
		 * rule must not hold the exec again after its point of no return.
		 * Not for a rule with a wildcard the kernel cannot evaluate
		 * (npm*publish*): what was approved here may not be what the
		 * arguments in the new image say, so that rule decides again. */
		s->xgrant_ns = bpf_ktime_get_ns();
		s->xgrant_rule = rule;
	}
	*ret = sb_hold_ret(h);
	return 0;
}

/* bprm_check's verdict: held when escalate can be held, else as decided. */
static __always_inline int sb_exec_check_verdict(struct sb_ctx *c, __u8 tier, __u32 rule, bool refine,
						 const struct path *fpath)
{
	int ret;

	if (tier == SB_K_ESCALATE && sb_hold_exec(c, tier, rule, fpath, false, refine, &ret) == 0)
		return ret;
	return sb_verdict_exec(c, tier, rule, 0, fpath);
}

/* Full-path line (executable path) into s->sk.text; returns its length. */
static __always_inline __u32 sb_fullpath_key(struct sb_scratch *s, const struct path *p)
{
	long n;

	__builtin_memset(s->sk.text, 0, sizeof(s->sk.text));
	n = bpf_d_path((struct path *)p, s->path, SB_EV_PATH);
	if (n <= 1 || n > SB_CMD_KEY)
		return 0;	/* too long for a key: no full-path rule can be that long */
	bpf_probe_read_kernel(s->sk.text, SB_MASK(n - 1, 255), s->path);
	return n - 1;
}

/* Binary-level rules, before the point of no return: the exec fails
 * cleanly with EPERM. Names: the path given to execve (its basename), the
 * file's own name (symlinks resolved), and the inode's known name (hard
 * links, fds, renamed copies of the same inode); the stricter wins. A
 * name with argv-level rules is decided in bprm_committed_creds. */
SEC("lsm/bprm_check_security")
int BPF_PROG(sb_bprm_check, struct linux_binprm *bprm)
{
	struct sb_ctx c;
	struct sb_scratch *s;
	struct file *file = bprm->file;
	struct inode *inode = file->f_inode;
	struct sb_xinode_val *xv;
	struct sb_xdec d = { .tier = 0, .rule = SB_RULE_DEFAULT };
	struct sb_shres full = { 0 };
	__u32 len, off;
	long n;
	int e = sb_enter(&c, SB_HOOK_BPRM_CHECK);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	s = sb_get_scratch(&c);
	if (!s)
		return sb_fail_closed(&c);
	s->cmdlen = 0;
	s->cmdflags = 0;
	s->cmd[0] = 0;

	if (BPF_CORE_READ(inode, i_nlink) == 0) {
		/* memfd, O_TMPFILE, a deleted file: no name a rule can use. */
		sb_xmerge(&d, c.cfg->anon_exec, SB_RULE_ANON_EXEC);
		return sb_exec_check_verdict(&c, d.tier, d.rule, false, &file->f_path);
	}
	if (!c.cfg->has_shell) {
		sb_xmerge(&d, c.cfg->defaults[SB_K_SHELL], SB_RULE_DEFAULT);
		return sb_exec_check_verdict(&c, d.tier, d.rule, false, &file->f_path);
	}

	s->ik.sbgen = c.sbgen;
	s->ik.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	s->ik.ino = BPF_CORE_READ(inode, i_ino);
	xv = bpf_map_lookup_elem(&sb_xinode, &s->ik);
	if (xv && !(xv->flags & SB_XI_ARGV))
		sb_xmerge(&d, xv->tier, xv->rule);

	len = sb_fullpath_key(s, &file->f_path);
	if (len && !sb_argvname(&c, len))
		sb_shell_lpm(&c, SB_SHK_FULL, len, false, &full);

	/* The path given to execve. */
	__builtin_memset(s->buf, 0, 256);
	n = bpf_probe_read_kernel_str(s->buf, 256, bprm->filename);
	if (n > 1) {
		off = sb_basename_off(s, n - 1, 0);
		len = sb_key_from_kernel(s, &s->buf[SB_MASK(off, 255)], SB_MASK(n - 1 - off, 255));
		sb_bin_name(&c, len, &full, &d);
	}
	/* The file's own name. */
	len = BPF_CORE_READ(file, f_path.dentry, d_name.len);
	len = sb_key_from_kernel(s, BPF_CORE_READ(file, f_path.dentry, d_name.name), len);
	sb_bin_name(&c, len, &full, &d);

	/* A reload that flipped mid-decision may have mixed generations here;
	 * an exec that passes is decided again in bprm_committed_creds. */
	return sb_exec_check_verdict(&c, d.tier, d.rule, d.refine, &file->f_path);
}

/* Canonical argv (argv[1..]) from the new image's stack: words joined by
 * one space, blank runs collapsed (policy/shellpat.c sb_cmdline_build). */
__noinline int sb_argv_g(__u32 i)
{
	struct sb_scratch *s = sb_s();
	struct sb_argv *ac;
	char ch;

	if (!s)
		return 1;
	ac = &s->av;
	if (i >= ac->n)
		return 1;
	ch = s->buf[SB_MASK(i, 511)];
	if (ch == 0) {
		ac->word++;
		if (ac->word >= ac->argc)
			return 1;
		ac->space = 1;
		return 0;
	}
	if (ac->word == 0) {
		ac->a0len = i + 1;
		return 0;
	}
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r') {
		ac->space = 1;
		return 0;
	}
	if (ac->out >= SB_CMD_KEY - 2) {
		ac->trunc = 1;
		return 1;
	}
	if (ac->space) {
		s->rest[SB_MASK(ac->out, 255)] = ' ';
		ac->out++;
		ac->space = 0;
	}
	s->rest[SB_MASK(ac->out, 255)] = ch;
	ac->out++;
	return 0;
}

static long sb_argv_cb(__u32 i, void *arg)
{
	return sb_argv_g(i) ? 1 : 0;
}

__noinline int sb_cat_g(__u32 i)
{
	struct sb_scratch *s = sb_s();
	__u32 p;

	if (!s || i >= s->av.cn)
		return 1;
	p = s->av.at + i;
	if (p >= SB_CMD_KEY - 1)
		return 1;
	s->sk.text[SB_MASK(p, 255)] = s->rest[SB_MASK(i, 255)];
	return 0;
}

static long sb_cat_cb(__u32 i, void *arg)
{
	return sb_cat_g(i) ? 1 : 0;
}

/* s->sk.text holds a name of length len: append the canonical args. */
static __always_inline __u32 sb_append_rest(struct sb_scratch *s, __u32 len)
{
	__u32 total = len + s->restlen;

	s->av.at = len;
	s->av.cn = s->restlen < SB_CMD_KEY ? s->restlen : SB_CMD_KEY;
	bpf_loop(SB_CMD_KEY, sb_cat_cb, NULL, 0);
	return total > SB_CMD_KEY - 1 ? SB_CMD_KEY : total;
}

/* Full decision for one name: the name's command line against basename
 * rules, the path line against full-path rules. */
static __always_inline void sb_argv_name(struct sb_ctx *c, __u32 len, struct sb_shres *full, struct sb_xdec *d)
{
	struct sb_shres a, best;
	__u32 n;

	if (!len)
		return;
	n = sb_append_rest(c->s, len);
	sb_shell_lpm(c, SB_SHK_NAME, n, true, &a);
	sb_shell_pick(&best, &a, full);
	if (best.found)
		sb_xmerge(d, best.tier, best.rule);
	else
		sb_xmerge(d, c->cfg->defaults[SB_K_SHELL], SB_RULE_DEFAULT);
}

/* Argv-level rules after the point of no return: argv sits at bprm->p in
 * the new, private mm and cannot be changed by another thread. A deny
 * kills the new image before its first instruction (SIGKILL). */
SEC("lsm.s/bprm_committed_creds")
int BPF_PROG(sb_bprm_committed, struct linux_binprm *bprm)
{
	struct sb_ctx c;
	struct sb_scratch *s;
	struct file *file = bprm->file;
	struct inode *inode;
	struct sb_xinode_val *xv;
	struct sb_xdec d = { .tier = 0, .rule = SB_RULE_DEFAULT };
	struct sb_shres full = { 0 };
	unsigned long p, avail;
	__u32 len, want, a0len, a0off, flen, foff;
	int attempt, r;
	bool unread;
	int e = sb_enter(&c, SB_HOOK_BPRM_COMMITTED);

	if (e < 0) {
		bpf_send_signal(SIGKILL);
		return 0;
	}
	if (e == 0 || !c.cfg->has_shell)
		return 0;
	s = sb_get_scratch(&c);
	if (!s) {
		bpf_send_signal(SIGKILL);
		return 0;
	}
	inode = BPF_CORE_READ(file, f_inode);
	if (BPF_CORE_READ(inode, i_nlink) == 0)
		return 0;	/* decided in bprm_check */

	/* argv and envp strings lie between bprm->p and bprm->exec. */
	p = BPF_CORE_READ(bprm, p);
	avail = BPF_CORE_READ(bprm, exec) - p;
	want = avail < 512 ? avail : 512;
	__builtin_memset(s->buf, 0, sizeof(s->buf));
	if (bpf_copy_from_user(s->buf, want & 511 ? want & 511 : 512, (void *)p) < 0) {
		/* Cannot read the arguments: fail closed. */
		sb_kill_committed(s);
		return 0;
	}
	__builtin_memset(&s->av, 0, sizeof(s->av));
	s->cmdflags = 0;
	s->av.n = want;
	s->av.argc = BPF_CORE_READ(bprm, argc);
	__builtin_memset(s->rest, 0, sizeof(s->rest));
	bpf_loop(512, sb_argv_cb, NULL, 0);
	s->restlen = s->av.out;
	if (s->av.trunc)
		s->restlen = SB_CMD_KEY;	/* longer than any exact rule */
	a0len = s->av.a0len;
	/* The command line is unknown when the buffer ended before argv did
	 * and before the line reached a key's length (hundreds of empty
	 * words, which the classifier collapses), or argv[0] is too long to
	 * find its basename (red team): killed (rule argv-unreadable). */
	unread = (s->av.word < s->av.argc && !s->av.trunc) || a0len > 255;
	if (unread)
		s->cmdflags |= SB_EVF_ARGV_TRUNC;

	/* argv[0]'s basename (chosen by the caller: it can lie, so it is one
	 * more name that must pass), and the event's command line. */
	if (a0len > 255)
		a0len = 255;
	a0off = sb_basename_off(s, a0len, 0);
	if (a0len > a0off) {
		len = sb_key_from_kernel(s, &s->buf[SB_MASK(a0off, 255)], SB_MASK(a0len - a0off, 255));
		__builtin_memset(s->cmd, 0, sizeof(s->cmd));
		bpf_probe_read_kernel(s->cmd, SB_MASK(len, 255), s->sk.text);
		s->cmdlen = len;
		/* As much of the arguments as fits; anything less than the
		 * whole line is flagged, so no one takes it for the command
		 * (a remembered "command" must not match a cut line). */
		if (s->restlen && len < SB_EV_ARGV - 1) {
			__u32 room = SB_EV_ARGV - 1 - len, cp = s->restlen < room ? s->restlen : room;

			if (cp > SB_CMD_KEY)
				cp = SB_CMD_KEY;
			if (cp)
				bpf_probe_read_kernel(&s->cmd[SB_MASK(len, 255)], SB_MASK(cp, 255), s->rest);
			s->cmdlen = len + cp;
			if (cp < s->restlen)
				s->cmdflags |= SB_EVF_ARGV_TRUNC;
		} else if (s->restlen) {
			s->cmdflags |= SB_EVF_ARGV_TRUNC;
		}
		if (s->av.trunc || s->restlen >= SB_CMD_KEY)
			s->cmdflags |= SB_EVF_ARGV_TRUNC;
	}
	/* The path given to execve (for a script: the script), in s->name. */
	__builtin_memset(s->name, 0, sizeof(s->name));
	flen = 0;
	foff = 0;
	{
		long n = bpf_probe_read_kernel_str(s->name, 256, BPF_CORE_READ(bprm, filename));

		if (n > 1) {
			flen = n - 1;
			foff = sb_basename_off(s, flen, 1);
		}
	}
	/* A reload that flips during the decision makes it start over once
	 * with the new generation; a second flip kills (fail closed). */
	for (attempt = 0; attempt < 2; attempt++) {
		d.tier = 0;
		d.rule = SB_RULE_DEFAULT;
		full.found = 0;
		len = sb_fullpath_key(s, &file->f_path);
		if (len)
			sb_shell_lpm(&c, SB_SHK_FULL, sb_append_rest(s, len), true, &full);
		if (a0len > a0off) {
			len = sb_key_from_kernel(s, &s->buf[SB_MASK(a0off, 255)], SB_MASK(a0len - a0off, 255));
			sb_argv_name(&c, len, &full, &d);
		}
		/* The file's own name. */
		len = BPF_CORE_READ(file, f_path.dentry, d_name.len);
		len = sb_key_from_kernel(s, BPF_CORE_READ(file, f_path.dentry, d_name.name), len);
		sb_argv_name(&c, len, &full, &d);
		/* The name the loader knows this inode by. */
		s->ik.sbgen = c.sbgen;
		s->ik.dev = BPF_CORE_READ(inode, i_sb, s_dev);
		s->ik.ino = BPF_CORE_READ(inode, i_ino);
		xv = bpf_map_lookup_elem(&sb_xinode, &s->ik);
		if (xv && xv->namelen) {
			len = sb_key_from_kernel(s, xv->name, xv->namelen < SB_NAME_KEY ? xv->namelen : SB_NAME_KEY);
			sb_argv_name(&c, len, &full, &d);
		}
		if (flen > foff) {
			len = sb_key_from_kernel(s, &s->name[SB_MASK(foff, 255)], SB_MASK(flen - foff, 255));
			sb_argv_name(&c, len, &full, &d);
		}
		r = sb_refresh(&c);
		if (r == 0)
			break;
		if (r < 0) {
			sb_kill_committed(s);
			return 0;
		}
	}
	if (attempt == 2)
		sb_xmerge(&d, SB_K_DENY, SB_RULE_RELOAD_RACE);
	if (unread)
		sb_xmerge(&d, SB_K_DENY, SB_RULE_ARGV_UNREADABLE);
	/* An approval used by bprm_check for this execve covers the rule it
	 * was given for (a more specific argv-level rule still decides). */
	if (d.tier == SB_K_ESCALATE && s->xgrant_ns && bpf_ktime_get_ns() - s->xgrant_ns < SB_HOLD_GRANT_NS &&
	    d.rule == s->xgrant_rule)
		d.tier = SB_K_ALLOW;
	s->xgrant_ns = 0;
	if (d.tier >= SB_K_ESCALATE) {
		int ret;

		/* Escalate: stopped before the first instruction of the new
		 * image; the broker resumes or kills it. Cannot be held: killed. */
		if (d.tier == SB_K_ESCALATE && sb_hold_exec(&c, d.tier, d.rule, &file->f_path, true, false, &ret) == 0)
			return 0;
		ret = sb_verdict_exec(&c, d.tier, d.rule, SB_ACT_KILLED, &file->f_path);
		if (ret)
			sb_kill_committed(s);
		return 0;
	}
	sb_verdict_exec(&c, d.tier, d.rule, 0, &file->f_path);
	return 0;
}

/* `ld.so /usr/bin/X` maps X executable without exec: a binary with a
 * binary-level rule (or argv-level rules, which ld.so would bypass) may
 * only be mapped executable as the process's own executable. */
SEC("lsm/mmap_file")
int BPF_PROG(sb_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot)
{
	struct sb_ctx c;
	struct sb_scratch *s;
	struct sb_xinode_val *xv;
	struct inode *inode, *exe;
	__u32 rule;
	__u8 tier;
	int e;

	if (!file || !(prot & PROT_EXEC))
		return 0;
	e = sb_enter(&c, SB_HOOK_MMAP_FILE);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if (!c.cfg->has_shell)
		return 0;
	s = sb_get_scratch(&c);
	if (!s)
		return sb_fail_closed(&c);
	inode = file->f_inode;
	exe = BPF_CORE_READ(bpf_get_current_task_btf(), mm, exe_file, f_inode);
	if (exe == inode)
		return 0;	/* the process's own image, decided at exec */
	s->ik.sbgen = c.sbgen;
	s->ik.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	s->ik.ino = BPF_CORE_READ(inode, i_ino);
	xv = bpf_map_lookup_elem(&sb_xinode, &s->ik);
	if (xv) {
		tier = xv->flags & SB_XI_ARGV ? SB_K_ESCALATE : xv->tier;
		rule = xv->flags & SB_XI_ARGV ? SB_RULE_EXEC_LOADER : xv->rule;
	} else {
		/* Not known by inode (not on PATH when the policy loaded): its
		 * own name against the binary-level rules that match it; the
		 * shell default is not applied to libraries (red team: ld.so on
		 * a ruled binary installed later or kept off PATH). */
		struct sb_shres a;
		__u32 len = BPF_CORE_READ(file, f_path.dentry, d_name.len);

		len = sb_key_from_kernel(s, BPF_CORE_READ(file, f_path.dentry, d_name.name), len);
		if (!len)
			return 0;
		if (sb_argvname(&c, len)) {
			tier = SB_K_ESCALATE;
			rule = SB_RULE_EXEC_LOADER;
		} else {
			sb_shell_lpm(&c, SB_SHK_NAME, len, false, &a);
			if (!a.found || a.refine)
				return 0;
			tier = a.tier;
			rule = a.rule;
		}
	}
	if (tier < SB_K_ESCALATE)
		return 0;
	s->cmdlen = 0;
	s->cmdflags = 0;
	s->cmd[0] = 0;
	return sb_verdict_exec(&c, tier, rule, 0, &file->f_path);
}

/* ---- network ----------------------------------------------------------- */

struct sb_netres {
	__u8 tier;
	__u32 rule;
};

static __always_inline void sb_net_decide(struct sb_ctx *c, __u16 family, const __u8 *addr, __u16 port,
					  struct sb_netres *r)
{
	struct sb_net_val *v = NULL;
	int i;

	r->tier = c->cfg->defaults[SB_K_NETWORK];
	r->rule = SB_RULE_DEFAULT;
	if (family == AF_INET) {
		struct sb_net4_key k = { .prefixlen = 64, .sbgen = c->sbgen };

		__builtin_memcpy(k.addr, addr, 4);
		v = bpf_map_lookup_elem(&sb_net4, &k);
	} else {
		struct sb_net6_key k = { .prefixlen = 160, .sbgen = c->sbgen };

		__builtin_memcpy(k.addr, addr, 16);
		v = bpf_map_lookup_elem(&sb_net6, &k);
	}
	if (!v)
		return;
	for (i = 0; i < SB_NET_SEGS; i++) {
		if (i >= v->nseg)
			break;
		if (port >= v->seg[i].lo && port <= v->seg[i].hi) {
			r->tier = v->seg[i].tier;
			r->rule = v->seg[i].rule;
			return;
		}
	}
}

/* Reads a sockaddr (kernel copy): IPv4, IPv6, v4-mapped IPv6 as IPv4. */
static __always_inline int sb_sockaddr(const void *sa, int len, __u16 *family, __u8 *addr, __u16 *port)
{
	__u16 fam = 0;

	if (!sa || len < 2)
		return -1;
	bpf_probe_read_kernel(&fam, sizeof(fam), sa);
	if (fam == AF_INET) {
		struct sockaddr_in sin = {};

		if (len < (int)sizeof(sin))
			return -1;
		bpf_probe_read_kernel(&sin, sizeof(sin), sa);
		*family = AF_INET;
		__builtin_memcpy(addr, &sin.sin_addr, 4);
		*port = bpf_ntohs(sin.sin_port);
		return 0;
	}
	if (fam == AF_INET6) {
		struct sockaddr_in6 sin6 = {};
		const __u8 *a;
		int i;
		bool mapped = true;

		if (len < 24)
			return -1;
		bpf_probe_read_kernel(&sin6, len < (int)sizeof(sin6) ? 24 : sizeof(sin6), sa);
		a = (const __u8 *)&sin6.sin6_addr;
		for (i = 0; i < 10; i++)
			if (a[i])
				mapped = false;
		if (a[10] != 0xff || a[11] != 0xff)
			mapped = false;
		*port = bpf_ntohs(sin6.sin6_port);
		if (mapped) {
			*family = AF_INET;
			__builtin_memcpy(addr, a + 12, 4);
		} else {
			*family = AF_INET6;
			__builtin_memcpy(addr, a, 16);
		}
		return 0;
	}
	*family = fam;
	return 1;
}

/* Escalate with holds on: hold until the verdict for this (thread,
 * address, port, protocol). 1: not held (the caller denies). */
static __always_inline int sb_hold_net(struct sb_ctx *c, struct sb_netres *r, __u16 family, const __u8 *addr,
				       __u16 port, __u8 proto, int *ret)
{
	struct sb_scratch *s;
	__u64 hash;
	int h, i;

	if (family != AF_INET && family != AF_INET6)
		return 1;	/* abstract AF_UNIX: nothing a request could name */
	if (!sb_hold_enabled(c) || !sb_can_hold())
		return 1;
	s = c->s ? c->s : sb_get_scratch(c);
	if (!s)
		return 1;
	sb_ev_fill(c, &s->hv.ev, SB_EVK_NET, SB_ACT_ESCALATED, r->tier, SB_K_NETWORK, r->rule, -ERESTARTNOINTR);
	s->hv.ev.flags = SB_EVF_HELD;
	s->hv.ev.net.family = family;
	s->hv.ev.net.port = port;
	s->hv.ev.net.proto = proto;
	__builtin_memset(s->hv.ev.net.addr, 0, 16);
	__builtin_memcpy(s->hv.ev.net.addr, addr, 16);
	hash = sb_fnv(SB_FNV_OFFSET, SB_K_NETWORK);
	hash = sb_fnv(hash, family);
	hash = sb_fnv(hash, port);
	hash = sb_fnv(hash, port >> 8);
	hash = sb_fnv(hash, proto);
	for (i = 0; i < 16; i++)
		hash = sb_fnv(hash, addr[i]);
	s->hk.tid = (__u32)bpf_get_current_pid_tgid();
	s->hk.pad = 0;
	s->hk.ident = hash;
	h = sb_hold_run(c, s, false);
	if (h == SB_H_FAIL)
		return 1;
	*ret = sb_hold_ret(h);
	return 0;
}

static __always_inline int sb_verdict_net(struct sb_ctx *c, struct sb_netres *r, __u16 family, const __u8 *addr,
					  __u16 port, __u8 proto)
{
	struct sb_kevent *ev;
	__u8 action;
	int ret;

	if (r->tier == SB_K_ESCALATE && sb_hold_net(c, r, family, addr, port, proto, &ret) == 0)
		return ret;
	ret = sb_outcome(c, r->tier, &action);
	if (!action)
		return ret;
	ev = sb_ev_reserve(c);
	if (!ev)
		return ret;
	sb_ev_fill(c, ev, SB_EVK_NET, action, r->tier, SB_K_NETWORK, r->rule, ret);
	ev->net.family = family;
	ev->net.port = port;
	ev->net.proto = proto;
	__builtin_memset(ev->net.addr, 0, 16);
	__builtin_memcpy(ev->net.addr, addr, 16);
	bpf_ringbuf_submit(ev, 0);
	return ret;
}

static __always_inline int sb_net_op(struct sb_ctx *c, struct socket *sock, const void *sa, int len, bool send)
{
	__u8 addr[16] = {};
	__u16 family = 0, port = 0;
	__u16 skfam = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
	short type = BPF_CORE_READ(sock, type);
	struct sb_netres r;
	int attempt, k;

	k = sb_sockaddr(sa, len, &family, addr, &port);
	if (k == 1 && family == AF_UNSPEC && send && skfam == AF_INET && type != SOCK_STREAM && len >= 16) {
		/* udp_sendmsg and raw_sendmsg take AF_UNSPEC as AF_INET
		 * (red team: an unconnected sendto around every rule). */
		struct sockaddr_in sin = {};

		bpf_probe_read_kernel(&sin, sizeof(sin), sa);
		family = AF_INET;
		__builtin_memcpy(addr, &sin.sin_addr, 4);
		port = bpf_ntohs(sin.sin_port);
		k = 0;
	} else if (k == 1 && skfam != AF_INET && skfam != AF_INET6 && skfam != AF_UNIX && skfam != AF_NETLINK) {
		/* Packet, vsock, TIPC, ... reach hosts that no address rule
		 * can name: the network default decides. */
		r.tier = c->cfg->defaults[SB_K_NETWORK];
		r.rule = SB_RULE_DEFAULT;
		return sb_verdict_net(c, &r, family, addr, 0, type);
	}
	if (k != 0)
		return 0;	/* AF_UNIX is decided by the unix hooks; AF_UNSPEC disconnects */
	for (attempt = 0; attempt < 2; attempt++) {
		int f;

		sb_net_decide(c, family, addr, port, &r);
		f = sb_refresh(c);
		if (f < 0)
			return sb_fail_closed(c);
		if (f == 0)
			break;
	}
	if (attempt == 2) {
		r.tier = SB_K_DENY;
		r.rule = SB_RULE_RELOAD_RACE;
	}
	return sb_verdict_net(c, &r, family, addr, port, BPF_CORE_READ(sock, type));
}

SEC("lsm/socket_connect")
int BPF_PROG(sb_socket_connect, struct socket *sock, struct sockaddr *address, int addrlen)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_SOCKET_CONNECT);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_net_op(&c, sock, address, addrlen, false);
}

/* Unconnected UDP (sendto with an address) and TCP fast open. */
SEC("lsm/socket_sendmsg")
int BPF_PROG(sb_socket_sendmsg, struct socket *sock, struct msghdr *msg, int size)
{
	struct sb_ctx c;
	void *name;
	int e, len;

	name = msg->msg_name;
	if (!name)
		return 0;
	e = sb_enter(&c, SB_HOOK_SOCKET_SENDMSG);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	len = msg->msg_namelen;
	return sb_net_op(&c, sock, name, len, true);
}

/* AF_UNIX to a socket file: a write to that path (file rules). An
 * abstract socket has no path and is decided by the write default. */
static __always_inline int sb_unix_peer(struct sb_ctx *c, struct sock *other)
{
	struct unix_sock *u = (struct unix_sock *)other;
	struct dentry *dentry = BPF_CORE_READ(u, path.dentry);
	struct vfsmount *mnt = BPF_CORE_READ(u, path.mnt);
	struct sb_res r;
	__u8 zero[16] = {};

	if (!dentry) {
		struct sb_netres nr = { .tier = c->cfg->defaults[SB_K_WRITE], .rule = SB_RULE_DEFAULT };

		return sb_verdict_net(c, &nr, AF_UNIX, zero, 0, 0);
	}
	if (!sb_get_scratch(c))
		return sb_fail_closed(c);
	if (sb_decide_path(c, dentry, sb_real_mount(mnt), W, false, &r) < 0)
		return sb_fail_closed(c);
	return sb_verdict_path(c, &r, SB_KOP_CONNECT_UNIX, NULL);
}

SEC("lsm/unix_stream_connect")
int BPF_PROG(sb_unix_stream_connect, struct sock *sock, struct sock *other)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_UNIX_CONNECT);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_unix_peer(&c, other);
}

SEC("lsm/unix_may_send")
int BPF_PROG(sb_unix_may_send, struct socket *sock, struct socket *other)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_UNIX_SEND);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_unix_peer(&c, BPF_CORE_READ(other, sk));
}

/* ---- self-protection --------------------------------------------------- */

SEC("lsm/bpf")
int BPF_PROG(sb_bpf, int cmd)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_BPF);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, cmd);
}

/* ptrace and /proc/PID/{mem,environ,...} of a task outside this sandbox
 * (the broker, the user's shell, another project's agent). */
SEC("lsm/ptrace_access_check")
int BPF_PROG(sb_ptrace_access_check, struct task_struct *child, unsigned int mode)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PTRACE);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if (sb_task_sandbox(child) == c.id) {
		/* A tracer could resume a held task: not while it is held. */
		if (sb_task_held(child))
			return sb_verdict_task(&c, SB_K_DENY, SB_RULE_HELD, child, mode);
		return 0;
	}
	return sb_verdict_task(&c, SB_K_DENY, SB_RULE_SELF, child, mode);
}

SEC("lsm/ptrace_traceme")
int BPF_PROG(sb_ptrace_traceme, struct task_struct *parent)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_PTRACE_TRACEME);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if (sb_task_sandbox(parent) == c.id)
		return 0;
	return sb_verdict_task(&c, SB_K_DENY, SB_RULE_SELF, parent, 0);
}

/* Signals leave the sandbox only as existence probes (signal 0); a broker
 * (registered tgid) cannot even be probed. */
SEC("lsm/task_kill")
int BPF_PROG(sb_task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig)
{
	struct sb_ctx c;
	__u32 tgid;
	int e = sb_enter(&c, SB_HOOK_TASK_KILL);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	tgid = BPF_CORE_READ(p, tgid);
	if (bpf_map_lookup_elem(&sb_protected, &tgid))
		return sb_verdict_task(&c, SB_K_DENY, SB_RULE_SELF, p, sig);
	if (sig == 0)
		return 0;
	if (sb_task_sandbox(p) == c.id) {
		/* Only the broker resumes a held task (a SIGCONT that gets
		 * through anyway, from outside, just holds it again). */
		if (sig == SIGCONT && (sb_task_held(p) || sb_task_held(BPF_CORE_READ(p, group_leader))))
			return sb_verdict_task(&c, SB_K_DENY, SB_RULE_HELD, p, sig);
		return 0;
	}
	return sb_verdict_task(&c, SB_K_DENY, SB_RULE_SELF, p, sig);
}

#define SB_DENY_ALWAYS(secname, fn, hookid, ...)                                  \
	SEC(secname)                                                              \
	int BPF_PROG(fn, ##__VA_ARGS__)                                           \
	{                                                                         \
		struct sb_ctx c;                                                  \
		int e = sb_enter(&c, hookid);                                     \
		if (e <= 0)                                                       \
			return e < 0 ? sb_fail_closed(&c) : 0;                    \
		return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, 0);       \
	}

SB_DENY_ALWAYS("lsm/sb_mount", sb_sb_mount, SB_HOOK_SB_MOUNT)
SB_DENY_ALWAYS("lsm/sb_umount", sb_sb_umount, SB_HOOK_SB_UMOUNT)
SB_DENY_ALWAYS("lsm/sb_pivotroot", sb_sb_pivotroot, SB_HOOK_SB_PIVOTROOT)
SB_DENY_ALWAYS("lsm/move_mount", sb_move_mount, SB_HOOK_MOVE_MOUNT)
SB_DENY_ALWAYS("lsm/kernel_module_request", sb_kernel_module_request, SB_HOOK_MODULE_REQUEST)

SEC("lsm/kernel_read_file")
int BPF_PROG(sb_kernel_read_file, struct file *file, enum kernel_read_file_id id)
{
	struct sb_ctx c;
	int e;

	if (id != bpf_core_enum_value(enum kernel_read_file_id, READING_MODULE) &&
	    id != bpf_core_enum_value(enum kernel_read_file_id, READING_KEXEC_IMAGE) &&
	    id != bpf_core_enum_value(enum kernel_read_file_id, READING_KEXEC_INITRAMFS) &&
	    id != bpf_core_enum_value(enum kernel_read_file_id, READING_POLICY))
		return 0;
	e = sb_enter(&c, SB_HOOK_KERNEL_READ_FILE);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, id);
}

SEC("lsm/kernel_load_data")
int BPF_PROG(sb_kernel_load_data, enum kernel_load_data_id id)
{
	struct sb_ctx c;
	int e;

	if (id != bpf_core_enum_value(enum kernel_load_data_id, LOADING_MODULE) &&
	    id != bpf_core_enum_value(enum kernel_load_data_id, LOADING_KEXEC_IMAGE) &&
	    id != bpf_core_enum_value(enum kernel_load_data_id, LOADING_KEXEC_INITRAMFS) &&
	    id != bpf_core_enum_value(enum kernel_load_data_id, LOADING_POLICY))
		return 0;
	e = sb_enter(&c, SB_HOOK_KERNEL_LOAD_DATA);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, id);
}

SEC("lsm/userns_create")
int BPF_PROG(sb_userns_create, const struct cred *cred)
{
	struct sb_ctx c;
	int e = sb_enter(&c, SB_HOOK_USERNS_CREATE);

	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if (!(c.cfg->flags & SB_CFG_DENY_USERNS))
		return 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_USERNS, 0, 0);
}

/* ---- routes around the rules above (red team, docs/threat-model.md) ---- */

/* clone3(CLONE_INTO_CGROUP) starts the child in any cgroup whose
 * cgroup.procs the caller may write (root, or the user a cgroup tree is
 * delegated to): leaving the sandbox without a write to cgroupfs. */
#define CLONE_INTO_CGROUP 0x200000000ULL
SEC("lsm/task_alloc")
int BPF_PROG(sb_task_alloc, struct task_struct *task, unsigned long clone_flags)
{
	struct sb_ctx c;
	int e;

	if (!(clone_flags & CLONE_INTO_CGROUP))
		return 0;
	e = sb_enter(&c, SB_HOOK_TASK_ALLOC);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, 0);
}

/* chroot changes the path bpf_d_path prints (full-path exec rules);
 * fsconfig(FSCONFIG_CMD_CREATE) + fsmount makes a detached mount without
 * sb_mount (in a user namespace: overlayfs over protected files). */
SB_DENY_ALWAYS("lsm/path_chroot", sb_path_chroot, SB_HOOK_PATH_CHROOT)
SB_DENY_ALWAYS("lsm/sb_kern_mount", sb_sb_kern_mount, SB_HOOK_SB_KERN_MOUNT)

/* SIGIO and SIGURG go to the owner set on a file (F_SETOWN, F_SETOWN_EX,
 * FIOSETOWN, SIOCSPGRP) without task_kill: the sandbox may name only
 * itself (its thread or process id as the initial pid namespace numbers
 * them; a process group or a pid in a child namespace is refused). */
static __always_inline bool sb_owner_is_self(int pid)
{
	__u64 pt = bpf_get_current_pid_tgid();

	return pid == 0 || (pid > 0 && (pid == (__u32)pt || pid == (__u32)(pt >> 32)));
}

#define TIOCSTI 0x5412
#define TIOCLINUX 0x541C
#define FIOSETOWN 0x8901
#define SIOCSPGRP 0x8902
#define F_SETOWN 8
#define F_SETOWN_EX 15
#define F_OWNER_PGRP 2

/* TIOCSTI pushes input into a terminal the user's shell reads after the
 * agent exits; TIOCLINUX pastes into a console. */
static __always_inline int sb_ioctl(unsigned int cmd, unsigned long arg)
{
	struct sb_ctx c;
	int e, pid = 0;

	if (cmd != TIOCSTI && cmd != TIOCLINUX && cmd != FIOSETOWN && cmd != SIOCSPGRP)
		return 0;
	e = sb_enter(&c, SB_HOOK_FILE_IOCTL);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if ((cmd == FIOSETOWN || cmd == SIOCSPGRP) && bpf_probe_read_user(&pid, sizeof(pid), (void *)arg) == 0 &&
	    sb_owner_is_self(pid))
		return 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, cmd);
}

SEC("lsm/file_ioctl")
int BPF_PROG(sb_file_ioctl, struct file *file, unsigned int cmd, unsigned long arg)
{
	return sb_ioctl(cmd, arg);
}

/* 32-bit processes (6.8+, and stable backports): a hook of its own. */
SEC("lsm/file_ioctl_compat")
int BPF_PROG(sb_file_ioctl_compat, struct file *file, unsigned int cmd, unsigned long arg)
{
	return sb_ioctl(cmd, arg);
}

SEC("lsm/file_fcntl")
int BPF_PROG(sb_file_fcntl, struct file *file, unsigned int cmd, unsigned long arg)
{
	struct {
		int type;
		int pid;
	} ex = {};
	struct sb_ctx c;
	int e;

	if (cmd != F_SETOWN && cmd != F_SETOWN_EX)
		return 0;
	e = sb_enter(&c, SB_HOOK_FILE_FCNTL);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if (cmd == F_SETOWN && sb_owner_is_self((int)arg))
		return 0;
	if (cmd == F_SETOWN_EX && bpf_probe_read_user(&ex, sizeof(ex), (void *)arg) == 0 &&
	    ex.type != F_OWNER_PGRP && sb_owner_is_self(ex.pid))
		return 0;
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_SELF, 0, cmd);
}

/* Capabilities in the initial user namespace whose use reaches the kernel
 * or the host around every rule: raw I/O (iopl, /dev/mem), administration
 * (namespaces, remounts, open_tree, setns, swap, keys), raw and packet
 * sockets and the network configuration, modules, reboot, the clock, BPF
 * and perf, SysV IPC of other users, checkpoint/restore. A sandboxed task
 * never gets them, whoever it runs as; capabilities inside a user
 * namespace it created are left to the other hooks. */
#define SB_CAP(n) (1ULL << (n))
#define SB_CAPS_DENIED                                                                                     \
	(SB_CAP(9) /* LINUX_IMMUTABLE */ | SB_CAP(12) /* NET_ADMIN */ | SB_CAP(13) /* NET_RAW */ |         \
	 SB_CAP(15) /* IPC_OWNER */ | SB_CAP(16) /* SYS_MODULE */ | SB_CAP(17) /* SYS_RAWIO */ |          \
	 SB_CAP(20) /* SYS_PACCT */ | SB_CAP(21) /* SYS_ADMIN */ | SB_CAP(22) /* SYS_BOOT */ |             \
	 SB_CAP(25) /* SYS_TIME */ | SB_CAP(26) /* SYS_TTY_CONFIG */ | SB_CAP(27) /* MKNOD */ |            \
	 SB_CAP(30) /* AUDIT_CONTROL */ | SB_CAP(32) /* MAC_OVERRIDE */ | SB_CAP(33) /* MAC_ADMIN */ |     \
	 SB_CAP(34) /* SYSLOG */ | SB_CAP(38) /* PERFMON */ | SB_CAP(39) /* BPF */ |                       \
	 SB_CAP(40) /* CHECKPOINT_RESTORE */)
#define CAP_OPT_NOAUDIT (1 << 1)

SEC("lsm/capable")
int BPF_PROG(sb_capable, const struct cred *cred, struct user_namespace *ns, int cap, unsigned int opts)
{
	struct task_struct *t;
	struct sb_counters *k;
	struct sb_ctx c;
	int e;

	if (cap < 0 || cap > 63 || !(SB_CAPS_DENIED & SB_CAP(cap)))
		return 0;
	if (BPF_CORE_READ(ns, level) != 0)
		return 0;
	/* Only the caller's own credentials (has_capability() of another
	 * task asks about that task). */
	t = bpf_get_current_task_btf();
	if (cred != t->cred && cred != t->real_cred)
		return 0;
	e = sb_enter(&c, SB_HOOK_CAPABLE);
	if (e <= 0)
		return e < 0 ? sb_fail_closed(&c) : 0;
	if (opts & CAP_OPT_NOAUDIT) {
		/* A probe (has_capability_noaudit): no event. */
		if (c.cfg->flags & SB_CFG_AUDIT)
			return 0;
		k = sb_counter(&c);
		if (k)
			__sync_fetch_and_add(&k->denied, 1);
		return -EPERM;
	}
	return sb_verdict_plain(&c, SB_K_DENY, SB_RULE_CAPABILITY, 0, cap);
}
