/* Structs and constants shared by the kernel side (bpf/sandbox.bpf.c) and
 * the loader (userspace/kernel/). One header so a layout change is seen by
 * both at compile time; SB_ABI_VERSION guards pinned objects made by an
 * older binary (docs/architecture.md, "Pinning").
 *
 * Include after vmlinux.h (BPF) or <linux/types.h> (userspace). */
#ifndef SB_SANDBOX_H
#define SB_SANDBOX_H

/* Bump on any change to a map key/value layout or a map's meaning. */
#define SB_ABI_VERSION 2

#define SB_PIN_DIR "/sys/fs/bpf/sandbox-bpf"

#define SB_MAX_SANDBOXES 64	/* sandbox ids 1..63; 0 = "not in a sandbox" */
#define SB_MAX_LEVELS 32	/* cgroup levels scanned for the scope check */
#define SB_WALK_MAX 64		/* dentry levels walked; deeper paths are denied */
#define SB_NAME_KEY 32		/* name bytes in a map key; longer names are verified */
#define SB_NAME_MAX 256		/* NAME_MAX + 1 */
#define SB_CHAIN_MAX 4		/* missing path components a chain entry can name */
#define SB_CHAINS_PER_KEY 8
#define SB_GLOBS_MAX 64		/* single-star name globs per sandbox */
#define SB_GLOB_PART 32		/* glob prefix/suffix bytes */
#define SB_CMD_KEY 248		/* command-line bytes in a shell key */
#define SB_NET_SEGS 32		/* must equal SB_NET_MAX_SEGS (policy/compile.h) */
#define SB_EV_PATH 512		/* path bytes in an event (about 256 usable, see events) */
#define SB_EV_ARGV 256		/* canonical command line bytes in an exec event */
#define SB_RING_BYTES (256 * 1024)	/* per-sandbox ring buffer */

/* Tiers, same values as enum sb_tier (policy/policy.h). */
#define SB_K_ALLOW 0
#define SB_K_OBSERVE 1
#define SB_K_ESCALATE 2
#define SB_K_DENY 3
#define SB_K_NONE 0xff		/* slot unused */

/* Triggers, same values as enum sb_trigger. */
#define SB_K_SHELL 0
#define SB_K_WRITE 1
#define SB_K_NETWORK 2
#define SB_K_READ 3

/* Write ops, same values as enum sb_write_op (policy/classify.h). */
enum sb_kop {
	SB_KOP_OPEN = 0, SB_KOP_CREATE, SB_KOP_TRUNCATE, SB_KOP_UNLINK, SB_KOP_RENAME_FROM,
	SB_KOP_RENAME_TO, SB_KOP_LINK, SB_KOP_SYMLINK, SB_KOP_MKDIR, SB_KOP_RMDIR, SB_KOP_MKNOD,
	SB_KOP_CHMOD, SB_KOP_CHOWN, SB_KOP_SETXATTR, SB_KOP_UTIMES, SB_KOP_CONNECT_UNIX,
	SB_KOP_READ,		/* not a write op: reads */
	SB_KOP_LINK_SOURCE,	/* the existing file a hard link points at */
	SB_KOP__COUNT
};

/* Every hook the kernel side attaches, for counters and events. The
 * names (sb_hook_name in userspace) are part of the event format. */
enum sb_hook {
	SB_HOOK_FILE_OPEN = 0,
	SB_HOOK_FILE_TRUNCATE,
	SB_HOOK_PATH_TRUNCATE,
	SB_HOOK_PATH_UNLINK,
	SB_HOOK_PATH_RENAME,
	SB_HOOK_PATH_LINK,
	SB_HOOK_PATH_SYMLINK,
	SB_HOOK_PATH_MKDIR,
	SB_HOOK_PATH_RMDIR,
	SB_HOOK_PATH_MKNOD,
	SB_HOOK_PATH_CHMOD,
	SB_HOOK_PATH_CHOWN,
	SB_HOOK_INODE_SETXATTR,
	SB_HOOK_INODE_REMOVEXATTR,
	SB_HOOK_INODE_SETATTR,
	SB_HOOK_INODE_SET_ACL,
	SB_HOOK_INODE_REMOVE_ACL,
	SB_HOOK_INODE_CREATE,	/* inode_* fallbacks when there are no path_* hooks */
	SB_HOOK_INODE_UNLINK,
	SB_HOOK_INODE_RENAME,
	SB_HOOK_INODE_LINK,
	SB_HOOK_INODE_SYMLINK,
	SB_HOOK_INODE_MKDIR,
	SB_HOOK_INODE_RMDIR,
	SB_HOOK_INODE_MKNOD,
	SB_HOOK_BPRM_CHECK,
	SB_HOOK_BPRM_COMMITTED,
	SB_HOOK_MMAP_FILE,
	SB_HOOK_SOCKET_CONNECT,
	SB_HOOK_SOCKET_SENDMSG,
	SB_HOOK_UNIX_CONNECT,
	SB_HOOK_UNIX_SEND,
	SB_HOOK_BPF,
	SB_HOOK_PTRACE,
	SB_HOOK_PTRACE_TRACEME,
	SB_HOOK_TASK_KILL,
	SB_HOOK_SB_MOUNT,
	SB_HOOK_SB_UMOUNT,
	SB_HOOK_SB_PIVOTROOT,
	SB_HOOK_MOVE_MOUNT,
	SB_HOOK_KERNEL_READ_FILE,
	SB_HOOK_KERNEL_LOAD_DATA,
	SB_HOOK_MODULE_REQUEST,
	SB_HOOK_USERNS_CREATE,
	SB_HOOK_TASK_ALLOC,	/* clone3(CLONE_INTO_CGROUP) */
	SB_HOOK_PATH_CHROOT,
	SB_HOOK_SB_KERN_MOUNT,	/* fsconfig(FSCONFIG_CMD_CREATE), new mounts */
	SB_HOOK_FILE_IOCTL,	/* TIOCSTI, TIOCLINUX, FIOSETOWN */
	SB_HOOK_FILE_FCNTL,	/* F_SETOWN, F_SETOWN_EX */
	SB_HOOK_CAPABLE,	/* capabilities that reach the kernel or the host */
	SB_HOOK__COUNT
};

/* Rule indexes that are not policy rules (the rest index policy->rules). */
#define SB_RULE_DEFAULT 0xffffffffu	/* the trigger's default tier */
#define SB_RULE_WALK_LIMIT 0xfffffffeu	/* path deeper than SB_WALK_MAX */
#define SB_RULE_ANON_EXEC 0xfffffffdu	/* exec of a file with no name (memfd, O_TMPFILE, deleted) */
#define SB_RULE_SELF 0xfffffffcu	/* self-protection: bpf, ptrace, signals, mounts, modules */
#define SB_RULE_USERNS 0xfffffffbu	/* policy user_namespaces: deny */
#define SB_RULE_SYS_FS 0xfffffffau	/* write to a kernel control filesystem (cgroup, bpf, securityfs) */
#define SB_RULE_NO_SCRATCH 0xfffffff9u	/* per-task scratch unavailable: fail closed */
#define SB_RULE_RELOAD_RACE 0xfffffff8u	/* policy flipped twice during one decision */
#define SB_RULE_EXEC_LOADER 0xfffffff7u	/* a ruled binary mapped executable by something else (ld.so) */
#define SB_RULE_HELD 0xfffffff6u	/* SIGCONT or ptrace from inside the sandbox to a held task */
#define SB_RULE_RAW_DEVICE 0xfffffff5u	/* open of a block device: it bypasses every file rule */
#define SB_RULE_CAPABILITY 0xfffffff4u	/* a capability the sandbox never gets (see SB_CAPS_DENIED) */
#define SB_RULE_ARGV_UNREADABLE 0xfffffff3u	/* argv did not fit the kernel's buffer: command line unknown */
#define SB_RULE_FIRST_SPECIAL 0xfffffff0u

/* ---- scope ------------------------------------------------------------- */

struct sb_global {
	__u64 level_mask;	/* bit L: some sandbox cgroup sits at cgroup level L */
	__u64 seq;		/* event sequence numbers */
};

/* ---- per sandbox, per generation --------------------------------------- */

/* sbgen = sandbox_id << 1 | generation; keys carry it so two generations
 * of one sandbox coexist during a reload (the flip is one map update). */
#define SB_SBGEN(id, gen) (((id) << 1) | ((gen) & 1))

#define SB_CFG_AUDIT 0x1	/* mode audit: decide and report, never deny */
#define SB_CFG_DENY_USERNS 0x2
#define SB_CFG_HOLD 0x4		/* escalate holds the task for the broker; else it denies */

#define SB_SHK_NAME 0		/* shell key kinds: basename + args, prefix */
#define SB_SHK_NAME_EXACT 1	/* whole command line */
#define SB_SHK_FULL 2		/* executable path + args, prefix */
#define SB_SHK_FULL_EXACT 3
#define SB_SHK_ARGVNAME 4	/* marker: argv-level rules exist for this first word */
#define SB_SHK_COUNT 5

struct sb_cfg {
	__u8 defaults[4];	/* per trigger */
	__u8 uniform[4];	/* per trigger: tier when every rule and the default agree, else SB_K_NONE */
	__u8 anon_exec;		/* tier for exec of a nameless file */
	__u8 flags;		/* SB_CFG_* */
	__u8 has_names;		/* pname entries exist */
	__u8 nglobs;		/* pglob entries 0..nglobs-1 */
	__u8 has_shell;		/* shell entries exist (else exec is decided by the default) */
	__u8 pad[3];
	__u64 shell_lens[2][4];	/* bit L of [k]: a prefix entry of length L exists (k: 0 name, 1 full) */
};

/* A path decision slot: spec is the specificity of the winning rule
 * (policy/pathpat.h: 2*depth+1 for a literal component, 2*depth for a
 * glob); SB_SPEC_PROTECTED always wins; SB_SPEC_RELATIVE means "computed
 * from the level where it matched". */
#define SB_SPEC_PROTECTED 0xffff
#define SB_SPEC_RELATIVE 0

struct sb_slot {
	__u16 spec;
	__u8 tier;		/* SB_K_NONE: unused */
	__u8 pad;
	__u32 rule;
};

#define SB_PL_EXACT 0		/* applies to the object itself (walk level 0) */
#define SB_PL_SUBTREE 1		/* the object and everything below */
#define SB_PL_BELOW 2		/* strictly below (over-approximation of a missing path) */
#define SB_PL_COUNT 3

#define SB_PT_WRITE 0		/* path triggers */
#define SB_PT_READ 1

#define SB_PV_PROT_ANCESTOR 0x1	/* removing/moving this entry would take a protected path along */
#define SB_PV_LONGNAME 0x2	/* name longer than SB_NAME_KEY: verify against sb_longname */

struct sb_pval {
	struct sb_slot slot[2][SB_PL_COUNT];	/* [trigger][placement] */
	__u32 flags;		/* SB_PV_* */
	__u32 prot_rule;	/* rule index for SB_PV_PROT_ANCESTOR */
	__u8 nchains;		/* chain entries under this child key (kind 1..nchains) */
	__u8 pad[7];
};

/* (dev, ino) as the kernel sees them: inode->i_sb->s_dev, inode->i_ino.
 * dev is the kernel's internal encoding (MAJOR << 20 | MINOR). */
struct sb_inode_key {
	__u32 sbgen;
	__u32 dev;
	__u64 ino;
};

/* A named child of a directory: catches files that do not exist yet and
 * files replaced by rename (new inode, same name). kind 0 is the child's
 * own entry (sb_pchild); kind 1..SB_CHAINS_PER_KEY are chains (sb_pchain). */
struct sb_child_key {
	__u32 sbgen;
	__u32 dev;
	__u64 ino;
	__u16 len;		/* full name length */
	__u8 kind;
	__u8 pad[5];
	char name[SB_NAME_KEY];	/* first bytes, zero padded */
};

/* Missing components after the keyed one: the entry applies at the walk
 * level where all of them matched (docs/kernel.md, "Paths that do not
 * exist yet"). */
struct sb_chain {
	__u8 ncomps;
	__u8 pad[3];
	__u16 lens[SB_CHAIN_MAX];
	char names[SB_CHAIN_MAX][SB_NAME_KEY];
	struct sb_pval val;
};

/* Basename rules (NAME: level 0, NAME_SUBTREE: any level), spec relative. */
struct sb_name_key {
	__u32 sbgen;
	__u16 len;
	__u16 pad;
	char name[SB_NAME_KEY];
};

struct sb_longname {
	char name[SB_NAME_MAX];
};

#define SB_GLOB_CHILD 0x1	/* CHILD_GLOB: the parent must be (dev, ino) */
#define SB_GLOB_ANCHORED 0x2	/* the glob has literal characters (spec 2*depth) */

struct sb_glob {
	__u8 flags;
	__u8 plen, slen;
	__u8 trig;		/* SB_PT_* */
	__u8 tier;
	__u8 pad[3];
	__u32 rule;
	__u32 dev;
	__u64 ino;
	__u16 spec;		/* CHILD_GLOB that is not anchored: absolute spec */
	__u8 pad2[6];
	char prefix[SB_GLOB_PART];
	char suffix[SB_GLOB_PART];
};

/* ---- exec -------------------------------------------------------------- */

struct sb_shell_key {
	__u32 sbgen;
	__u16 len;
	__u8 kind;		/* SB_SHK_* */
	__u8 pad;
	char text[SB_CMD_KEY];
};

struct sb_shell_val {
	__u8 tier;
	__u8 refine;		/* the rule has wildcards the kernel does not match: userspace decides */
	__u16 spec;		/* literal prefix length */
	__u32 rule;
};

/* Executables found through PATH at load: the binary-level decision for
 * the names they are known by, so a hard link, a symlink or an fd cannot
 * rename them. */
#define SB_XI_ARGV 0x1		/* argv-level rules exist for the name: decided after exec */
struct sb_xinode_val {
	__u8 tier;
	__u8 flags;
	__u16 namelen;
	__u32 rule;
	char name[SB_NAME_KEY];	/* the name its rules are written for */
};

/* ---- network ----------------------------------------------------------- */

struct sb_net4_key {
	__u32 prefixlen;	/* 32 (sbgen) + prefix */
	__u32 sbgen;		/* big-endian so it is a bit prefix */
	__u8 addr[4];
};

struct sb_net6_key {
	__u32 prefixlen;
	__u32 sbgen;
	__u8 addr[16];
};

struct sb_net_seg {
	__u16 lo, hi;
	__u8 tier;
	__u8 pad[3];
	__u32 rule;
};

struct sb_net_val {
	__u32 nseg;
	__u32 pad;
	struct sb_net_seg seg[SB_NET_SEGS];
};

/* ---- events, counters -------------------------------------------------- */

#define SB_ACT_DENIED 1
#define SB_ACT_ESCALATED 2	/* held for the broker (SB_EVF_HELD), else denied with EPERM */
#define SB_ACT_OBSERVED 3	/* allowed, reported */
#define SB_ACT_AUDIT 4		/* audit mode: would have been denied or escalated */
#define SB_ACT_KILLED 5		/* argv-level deny after the point of no return */
#define SB_ACT_ALLOWED 6	/* audit mode only: an allow, reported so the audit chain has it */

#define SB_EVF_PATH_TRUNC 0x1	/* path longer than the event holds */
#define SB_EVF_ARGV_TRUNC 0x2
#define SB_EVF_PATH_PARTIAL 0x4	/* walk stopped at a filesystem root (no mount known) */
#define SB_EVF_HELD 0x8		/* escalate: the task is held (SIGSTOP) until the broker's verdict */
#define SB_EVF_HELD_EXEC 0x10	/* held after exec's point of no return: resumed or killed, no restart */

#define SB_EVK_PATH 1
#define SB_EVK_EXEC 2
#define SB_EVK_NET 3
#define SB_EVK_TASK 4		/* ptrace / signal target */
#define SB_EVK_NONE 5

struct sb_kevent {
	__u64 seq;		/* for a hold: the request's sequence number (verdict key) */
	__u64 ts_ns;		/* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 cgroup_id;
	__u64 start_ns;		/* task->start_boottime: with pid, who the task is (pid reuse) */
	__u64 ident;		/* hold: hash of (trigger, object), the sb_hold key with pid */
	__u32 pid, tgid, ppid, uid;
	__u32 sandbox;
	__u32 rule;
	__u16 hook;		/* enum sb_hook */
	__u8 kind;		/* SB_EVK_* */
	__u8 action;		/* SB_ACT_* */
	__u8 tier;
	__u8 trigger;
	__u8 op;		/* enum sb_kop for paths */
	__u8 flags;		/* SB_EVF_* */
	__s32 ret;		/* what the syscall got: -EPERM, 0, or the signal for KILLED */
	char comm[16];
	union {
		struct {
			__u16 len;
			__u16 pad[3];
			char path[SB_EV_PATH];
		} path;
		struct {
			__u16 len;
			__u16 argv_len;
			__u16 pad[2];
			char path[SB_EV_PATH];
			char argv[SB_EV_ARGV];
		} exec;
		struct {
			__u16 family;	/* AF_INET, AF_INET6 (after unmapping), AF_UNIX */
			__u16 port;	/* host order */
			__u8 proto;	/* SOCK_STREAM, SOCK_DGRAM, ... */
			__u8 pad[3];
			__u8 addr[16];
		} net;
		struct {
			__u32 target_pid;
			__u32 target_tgid;
			__u32 arg;	/* signal, ptrace mode, bpf cmd, ... */
			__u32 pad;
		} task;
	};
};

struct sb_counters {
	__u64 allowed;
	__u64 denied;
	__u64 escalated;
	__u64 lost;		/* events that did not fit the ring buffer */
};

/* ---- holds (escalation) -------------------------------------------------- */

/* A held request: the task (thread) and what it asked for. A restarted
 * syscall asks again with the same key, so it finds its request. */
struct sb_hold_key {
	__u32 tid;
	__u32 pad;
	__u64 ident;		/* FNV-1a of the trigger and the object (path, address, exec) */
};

/* Written by the kernel only (the broker reads and deletes). ev is the
 * event as first pushed: a broker that missed it (full ring buffer, a
 * restart) files the request from here. */
struct sb_hold {
	__u64 chain;		/* grants used within one syscall (see docs/kernel.md, Holds) */
	__u64 used_ns;		/* when its verdict was first used (0: not yet) */
	__u8 used;
	__u8 committed;		/* held after exec's point of no return: the broker resumes or kills */
	__u8 pad[6];
	struct sb_kevent ev;
};

/* Written by the broker: one verdict for exactly one request (tid, seq). */
struct sb_verdict_key {
	__u32 tid;
	__u32 pad;
	__u64 seq;
};

#define SB_VERDICT_ALLOW 1
#define SB_VERDICT_DENY 2
struct sb_verdict {
	__u8 verdict;		/* SB_VERDICT_* */
	__u8 pad[7];
	__u64 set_ns;		/* CLOCK_MONOTONIC when the broker wrote it */
};

/* tid -> the request it is held for: task_kill and ptrace refuse SIGCONT
 * and attaching from inside the sandbox while it exists. */
struct sb_held {
	__u64 seq;
	__u64 start_ns;
};

#define SB_HOLD_MAX 8192
/* A verdict used by a syscall stays good for the same thread and object
 * this long, while the same syscall is held for its next object (rename:
 * both ends; open: create, then open), and for the same call (same
 * syscall, arguments, return address and stack) up to SB_HOLD_SAME_CALL_NS,
 * so a syscall preempted between two hooks still finds its approval. */
#define SB_HOLD_GRANT_NS (250ULL * 1000 * 1000)
#define SB_HOLD_SAME_CALL_NS (5ULL * 1000 * 1000 * 1000)

/* ---- registry (userspace only: status and adoption read it) -------------- */

#define SB_INFO_PATH 256
struct sb_info {
	__u64 cgroup_id;	/* 0: slot free */
	__u32 level;
	__u32 counter;		/* last generation counter written */
	__u32 owner_pid;	/* the attach/run process that streams events, 0 when none */
	__u32 flags;
	__u64 attached_ns;	/* CLOCK_REALTIME seconds of attach */
	char cgroup[SB_INFO_PATH];
	char policy_source[SB_INFO_PATH];
	char folder[SB_INFO_PATH];
	char hash[72];
};

#define SB_META_PATH_HOOKS 0x1	/* path_* hooks active (else inode_* fallbacks) */
#define SB_META_FILE_TRUNCATE 0x2
#define SB_META_ACL_HOOKS 0x4
#define SB_META_SETATTR_IDMAP 0x8
struct sb_meta {
	__u32 abi;
	__u32 features;		/* SB_META_* */
	__u64 created_ns;
};

#endif
