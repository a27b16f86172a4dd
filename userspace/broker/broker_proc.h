/* What the broker learns about a task from /proc: its identity (start
 * time, so a recycled pid is never mistaken for the held task), state,
 * cwd, executable, argv and the process chain up to the sandbox root.
 * Every function takes the proc root ("/proc"; unit tests pass a fake
 * tree) and reads files only: no ptrace, no signals. */
#ifndef SB_BROKER_PROC_H
#define SB_BROKER_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue/queue.h"
#include "sb_err.h"

struct sb_pstat {
	char state;		/* 'R', 'S', 'T' (stopped), 't', 'Z', ... */
	int ppid;
	uint64_t start_ticks;	/* field 22: start time in clock ticks since boot */
	char comm[64];
};

/* /proc/TGID/task/TID/stat (tid 0: /proc/TGID/stat). -ENOENT when gone. */
int sb_proc_stat(const char *proc, int tgid, int tid, struct sb_pstat *st);

/* Whether a start time from /proc (ticks of hz) is the kernel's
 * task->start_boottime (ns): /proc rounds it down to ticks. */
bool sb_proc_same_start(uint64_t start_ticks, uint64_t start_ns, long hz);

/* The thread tid of tgid exists and started at start_ns: 0, with *stopped
 * when it is stopped (T); -ESRCH when it is gone (no such task, a zombie)
 * or a different task (start time); another negative errno when /proc
 * could not be read (EMFILE, ENOMEM, ...): not known to be gone. */
int sb_proc_task_check(const char *proc, int tgid, int tid, uint64_t start_ns, long hz, bool *stopped);

struct sb_pchain_ent {
	int pid;
	char comm[64];
	char *cmdline;		/* argv joined by single spaces; NULL when unreadable */
};

struct sb_penrich {
	char cwd[PATH_MAX];	/* "" when unknown */
	char exe[PATH_MAX];	/* "" when unknown */
	char **argv;		/* /proc/PID/cmdline split at NULs */
	size_t argc;
	struct sb_pchain_ent chain[SB_QUEUE_CHAIN_MAX];
	size_t nchain;
};

/* Fills e for tgid: cwd, exe, argv, and the chain tgid, parent, ... while
 * each is inside the cgroup cg_rel (relative to the cgroup2 root, as in
 * /proc/PID/cgroup) or below it. A process that is gone leaves the
 * fields empty; this never fails except for memory. */
int sb_proc_enrich(const char *proc, int tgid, const char *cg_rel, struct sb_penrich *e);
void sb_proc_enrich_free(struct sb_penrich *e);

/* Splits a cmdline buffer (NUL-separated) into argv. */
int sb_proc_split_cmdline(const char *buf, size_t len, char ***argv, size_t *argc);
void sb_proc_argv_free(char **argv, size_t argc);

/* The arguments a task passed to the execve it is stopped in (binary-level
 * holds restart execve, so its old image is still there): the syscall
 * arguments from /proc/TID/syscall and the strings from its memory.
 * Best effort, for display: another thread of the process could change
 * them before the exec restarts. */
int sb_proc_execve_argv(const char *proc, int tgid, int tid, char ***argv, size_t *argc);

#endif
