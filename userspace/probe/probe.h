/* Probes: what this machine supports, one function per capability.
 *
 * Used by `sandbox-bpf doctor` (which prints them), by `run` (backend
 * selection, sb_backend_select) and by the VM tests. Every probe fills a
 * struct whose first member is a struct sb_probe_result (status ok / missing /
 * error, a detail sentence saying what was found, a remedy sentence saying
 * what to do when it is not ok) plus the structured values callers need (the
 * Landlock ABI, the cgroup2 mount, ...).
 *
 * Probe functions return 0 when they produced a result (whatever its status)
 * and a negative errno only when they could not (bad arguments); they never
 * print. Probes that touch the kernel are scoped so that no other process is
 * affected and nothing is left behind, also on error paths: BPF programs are
 * fd-based and detached before return, the BPF-LSM program only counts the
 * calling process and never denies, cgroup programs are attached only to an
 * empty child cgroup created for the probe and removed again, securityfs is
 * mounted only inside a private mount namespace of a short-lived child.
 *
 * The sb_probe_*_classify / *_parse functions hold the decision logic of the
 * probes as pure functions of what the probe observed, so that tests can
 * inject observations that this machine cannot produce. */
#ifndef SB_PROBE_H
#define SB_PROBE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sb_probe_status {
	SB_PROBE_OK = 0,	/* present and usable */
	SB_PROBE_MISSING,	/* not available here: information, not a failure */
	SB_PROBE_ERROR,		/* the probe itself failed unexpectedly */
};

#define SB_PROBE_TEXT_MAX 512

struct sb_probe_result {
	enum sb_probe_status status;
	int code;			/* positive errno behind the status, 0 if none */
	char detail[SB_PROBE_TEXT_MAX]; /* what was found */
	char remedy[SB_PROBE_TEXT_MAX]; /* what to do; empty when ok */
};

/* "ok", "missing", "error". */
const char *sb_probe_status_name(enum sb_probe_status s);

/* Fills r: status, errno code, remedy (NULL for none) and a formatted detail. */
void sb_probe_set(struct sb_probe_result *r, enum sb_probe_status s, int code, const char *remedy,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- kernel version -------------------------------------------------- */
struct sb_probe_kernel {
	struct sb_probe_result res;
	char release[65];	/* uname -r */
	char machine[65];	/* uname -m */
	int major, minor;
};
int sb_probe_kernel(struct sb_probe_kernel *out);

/* ---- privileges ------------------------------------------------------ */
#define SB_CAP_NET_ADMIN 12
#define SB_CAP_SYS_ADMIN 21
#define SB_CAP_MAC_ADMIN 33
#define SB_CAP_PERFMON 38
#define SB_CAP_BPF 39

struct sb_probe_privs {
	struct sb_probe_result res;
	bool root;		/* effective uid 0 */
	uint64_t cap_eff;	/* CapEff from /proc/self/status */
	bool cap_bpf, cap_perfmon, cap_sys_admin, cap_net_admin, cap_mac_admin;
};
int sb_probe_privs(struct sb_probe_privs *out);
/* From the text of /proc/self/status and the effective uid. */
int sb_probe_privs_parse(const char *proc_status, uid_t euid, struct sb_probe_privs *out);
/* Enough to load BPF programs: CAP_BPF (with CAP_PERFMON) or CAP_SYS_ADMIN. */
bool sb_probe_privs_can_bpf(const struct sb_probe_privs *p);

/* ---- kernel BTF ------------------------------------------------------ */
#define SB_BTF_VMLINUX "/sys/kernel/btf/vmlinux"
struct sb_probe_btf {
	struct sb_probe_result res;
	long long size;		/* bytes, -1 when absent */
};
int sb_probe_btf(struct sb_probe_btf *out);
/* path: normally SB_BTF_VMLINUX (tests pass other files). */
int sb_probe_btf_at(const char *path, struct sb_probe_btf *out);

/* ---- active LSM list (securityfs) ------------------------------------ */
struct sb_probe_lsm_list {
	struct sb_probe_result res;
	bool known;		/* list was read */
	char list[256];		/* "lockdown,capability,landlock,bpf" */
	char lockdown[32];	/* "none" / "integrity" / "confidentiality" / "" */
	bool has_bpf, has_landlock;
	bool private_mount;	/* securityfs was not mounted: read in a private mount namespace */
};
/* Reads /sys/kernel/security/lsm; when securityfs is not mounted there, mounts
 * it in a private mount namespace of a child process (never visible to any
 * other process, gone when the child exits). */
int sb_probe_lsm_list(struct sb_probe_lsm_list *out);
/* list_text: the file's content or NULL when it could not be read (read_err
 * says why); lockdown_text: /sys/kernel/security/lockdown or NULL. */
void sb_probe_lsm_list_classify(const char *list_text, int read_err, const char *lockdown_text,
				bool private_mount, struct sb_probe_lsm_list *out);
/* Writes the lsm= value that adds bpf to list ("...,bpf"); a safe default
 * when list is NULL or empty. */
void sb_probe_lsm_suggest(const char *list, char *out, size_t out_len);

/* ---- BPF-LSM really usable ------------------------------------------- */
enum sb_bpf_lsm_state {
	SB_BPF_LSM_WORKS = 0,		/* loaded, attached, ran */
	SB_BPF_LSM_NO_BTF,		/* no kernel BTF: cannot even try */
	SB_BPF_LSM_NO_PRIV,		/* load refused because we lack CAP_BPF/CAP_SYS_ADMIN */
	SB_BPF_LSM_LOAD_REFUSED,	/* load refused (EPERM) although privileged */
	SB_BPF_LSM_NOT_BUILT,		/* kernel without CONFIG_BPF_LSM (no bpf_lsm_ hooks) */
	SB_BPF_LSM_LOAD_FAILED,		/* other load failure */
	SB_BPF_LSM_ATTACH_FAILED,
	SB_BPF_LSM_NEVER_RAN,		/* attached, hook triggered, counter unchanged */
	SB_BPF_LSM_TRIGGER_FAILED,	/* could not trigger the hook (open failed) */
};
/* "works", "no-btf", "no-privilege", "load-refused", "not-built",
 * "load-failed", "attach-failed", "never-ran", "trigger-failed". */
const char *sb_bpf_lsm_state_name(enum sb_bpf_lsm_state s);

/* What the real probe observed; errors are positive errnos, 0 = success. */
struct sb_bpf_lsm_obs {
	bool btf;			/* kernel BTF present */
	bool privileged;		/* sb_probe_privs_can_bpf() */
	int load_err;
	bool log_empty;			/* verifier log empty after a failed load */
	int attach_err;
	int trigger_err;
	unsigned long long count_before, count_after;
	int sleepable_err;		/* lsm.s/ load; -1 when not tried */
	const char *lsm_list;		/* active LSMs or NULL when unknown */
	const char *message;		/* last libbpf message after a failure, or NULL */
};

struct sb_probe_bpf_lsm {
	struct sb_probe_result res;
	enum sb_bpf_lsm_state state;
	/* lsm.s/bprm_committed_creds load test (argv-level holds need it). */
	struct sb_probe_result sleepable;
};
/* lsm_list: the active LSM list or NULL (only used to word the remedy). */
int sb_probe_bpf_lsm(const char *lsm_list, struct sb_probe_bpf_lsm *out);
void sb_probe_bpf_lsm_classify(const struct sb_bpf_lsm_obs *obs, struct sb_probe_bpf_lsm *out);

/* ---- cgroup v2 ------------------------------------------------------- */
struct sb_probe_cgroup {
	struct sb_probe_result res;
	char mount[PATH_MAX];		/* cgroup2 mount point, "" when none */
	bool hybrid;			/* cgroup v1 hierarchies are mounted too */
	char self[PATH_MAX];		/* our own cgroup's directory, "" if unknown */
	char delegate[PATH_MAX];	/* where we can create a child cgroup, "" if nowhere */
	int delegate_err;		/* errno of the last mkdir that failed */
};
/* Probe cgroups are named PREFIX<pid>.<n>; sb_probe_cgroup removes those of
 * dead processes (a doctor killed by SIGKILL) before probing. */
#define SB_PROBE_CGROUP_PREFIX "sandbox-bpf-doctor."
/* Finds the mount and tries mkdir+rmdir of a child in our own cgroup, then
 * in the mount's root. */
int sb_probe_cgroup(struct sb_probe_cgroup *out);
/* Fills mount, hybrid and self from the text of /proc/self/mountinfo and
 * /proc/self/cgroup; -ENOENT when there is no cgroup2 mount. */
int sb_probe_cgroup_parse(const char *mountinfo, const char *self_cgroup, struct sb_probe_cgroup *out);
/* Sets res from mount/delegate/delegate_err. */
void sb_probe_cgroup_classify(struct sb_probe_cgroup *out);

/* ---- bpffs ----------------------------------------------------------- */
#define SB_BPFFS_PATH "/sys/fs/bpf"
struct sb_probe_bpffs {
	struct sb_probe_result res;
	bool mounted;		/* a bpf filesystem is mounted at /sys/fs/bpf */
};
int sb_probe_bpffs(struct sb_probe_bpffs *out);
void sb_probe_bpffs_classify(const char *mountinfo, struct sb_probe_bpffs *out);

/* ---- cgroup socket programs ------------------------------------------ */
struct sb_probe_cgroup_sock {
	struct sb_probe_result res;
};
/* Loads a cgroup/connect4 program that allows everything, attaches it to a
 * freshly created empty child of cg->delegate, detaches, removes the child. */
int sb_probe_cgroup_sock(const struct sb_probe_cgroup *cg, struct sb_probe_cgroup_sock *out);

/* ---- Landlock -------------------------------------------------------- */
struct sb_probe_landlock {
	struct sb_probe_result res;
	int abi;		/* 0 when unavailable */
};
int sb_probe_landlock(struct sb_probe_landlock *out);
/* ret/err: landlock_create_ruleset(NULL, 0, VERSION) and its errno. */
void sb_probe_landlock_classify(long ret, int err, struct sb_probe_landlock *out);

/* ---- seccomp --------------------------------------------------------- */
struct sb_probe_seccomp {
	struct sb_probe_result res;
	bool filter;		/* seccomp filter mode is available */
	bool user_notif;	/* SECCOMP_RET_USER_NOTIF is available */
};
int sb_probe_seccomp(struct sb_probe_seccomp *out);
/* X_ret / X_err: SECCOMP_GET_ACTION_AVAIL for SECCOMP_RET_ALLOW (filter),
 * for SECCOMP_RET_USER_NOTIF, and SECCOMP_GET_NOTIF_SIZES. */
void sb_probe_seccomp_classify(int filter_ret, int filter_err, int notif_ret, int notif_err, int sizes_ret,
			       int sizes_err, struct sb_probe_seccomp *out);

/* ---- QEMU for the VM tests ------------------------------------------- */
#define SB_QEMU_BINARY "qemu-system-x86_64"
struct sb_probe_vm {
	struct sb_probe_result qemu;	/* qemu-system-x86_64 on PATH */
	struct sb_probe_result kvm;	/* /dev/kvm opens */
	char qemu_path[PATH_MAX];	/* "" when not found */
	bool kvm_present;
};
int sb_probe_vm(struct sb_probe_vm *out);
/* qemu_path: found binary or NULL; kvm_err: errno of open("/dev/kvm"), 0 when
 * it opened; kvm_api: KVM_GET_API_VERSION result (or -1). */
void sb_probe_vm_classify(const char *qemu_path, int kvm_err, int kvm_api, struct sb_probe_vm *out);
/* Looks name up in path_env (colon-separated); writes the first executable
 * match. -ENOENT when there is none. */
int sb_probe_find_in_path(const char *name, const char *path_env, char *out, size_t out_len);

/* ---- everything, and the backend `run` would use ---------------------- */
enum sb_backend {
	SB_BACKEND_NONE = 0,
	SB_BACKEND_BPF_LSM,		/* "bpf-lsm" */
	SB_BACKEND_LANDLOCK_SECCOMP,	/* "landlock+seccomp" (Linux fallback) */
};
const char *sb_backend_name(enum sb_backend b);

struct sb_probe_report {
	struct sb_probe_kernel kernel;
	struct sb_probe_privs privs;
	struct sb_probe_btf btf;
	struct sb_probe_lsm_list lsm;
	struct sb_probe_bpf_lsm bpf_lsm;
	struct sb_probe_cgroup cgroup;
	struct sb_probe_bpffs bpffs;
	struct sb_probe_cgroup_sock cgroup_sock;
	struct sb_probe_landlock landlock;
	struct sb_probe_seccomp seccomp;
	struct sb_probe_vm vm;
	/* derived */
	enum sb_backend backend;	/* what `run` would use */
	bool backend_built;		/* that backend is in this build */
	struct sb_probe_result backend_res;
	struct sb_probe_result vmtests;	/* can `make vmtest` run here */
};

/* The fallback backend (fallback/linux) is not part of this build yet; set
 * to 1 (e.g. -DSB_HAVE_FALLBACK_BACKEND=1) when it is. */
#ifndef SB_HAVE_FALLBACK_BACKEND
#define SB_HAVE_FALLBACK_BACKEND 0
#endif

/* Runs every probe in dependency order, then sb_backend_select. */
int sb_probe_run_all(struct sb_probe_report *r);
/* Derives backend, backend_built, backend_res and vmtests from the probe
 * results in r. bpf-lsm when it works and cgroup v2 is usable; else
 * landlock+seccomp when Landlock ABI >= 1 and seccomp filters are available. */
void sb_backend_select(struct sb_probe_report *r, bool fallback_built);

/* The report as named lines in display order. */
struct sb_probe_line {
	const char *name;
	const struct sb_probe_result *res;
};
size_t sb_probe_report_lines(const struct sb_probe_report *r, struct sb_probe_line *lines, size_t max);
#define SB_PROBE_MAX_LINES 16

/* The report as one JSON object (cJSON; the caller frees it):
 * {"checks":{"NAME":{"status":..,"detail":..,"remedy":..,"errno":..,...}},
 *  "backend":"bpf-lsm"|"landlock+seccomp"|"none","backend_built":bool,
 *  "bpf_lsm":"works"|...,"vm_tests":bool}. NULL on allocation failure. */
struct cJSON *sb_probe_report_to_json(const struct sb_probe_report *r);

#endif
