/* The broker: the userspace half of the escalation loop. It runs inside
 * attach and run (cmd_session.c), one per sandbox, and for every kernel
 * event of its sandbox:
 *
 *   held (escalate)  enrich from /proc (path, argv, cwd, process chain),
 *                    classify with the remembered decisions; a memory or a
 *                    rule the kernel could not evaluate decides at once,
 *                    else the request is filed in the folder queue (origin
 *                    kernel, with a deadline) and the task stays held
 *   decided          (an approver wrote done/ID.json, or the deadline
 *                    passed: deny, exactly once) the verdict goes into the
 *                    verdict map and the task is continued (or, held after
 *                    exec, killed), after checking it is still the same
 *                    task; then the request is acknowledged
 *   anything else    recorded in the audit chain
 *
 * State lives in the kernel (pinned maps: sb_hold, sb_verdict) and in the
 * folder (.sandbox/escalations, .sandbox/remembered.json, audit.db), never
 * only here: a broker killed at any point is replaced by the next attach,
 * which adopts every held task and every decision (sb_broker_start).
 * Nothing here prints: lines for the operator go to the log callback. The
 * kernel is reached through sb_broker_kops so the state machine runs in
 * unit tests against a fake. docs/architecture.md, "Broker". */
#ifndef SB_BROKER_H
#define SB_BROKER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/holds.h"
#include "policy.h"
#include "sandbox.h"
#include "sb_err.h"

struct cJSON;
struct sb_broker;
struct sb_kpolicy_extra;


struct sb_broker_kops {
	/* Every hold of the sandbox; *out is malloc'd. */
	int (*list)(void *arg, uint32_t sandbox, struct sb_khold **out, size_t *n);
	/* One hold (and its verdict) by key; -ENOENT when there is none. */
	int (*get)(void *arg, const struct sb_hold_key *k, struct sb_khold *out);
	int (*set_verdict)(void *arg, uint32_t tid, uint64_t seq, uint8_t verdict);
	/* Removes a resolved hold: its entry (while it is still request seq),
	 * its verdict and the thread's held mark. */
	int (*forget)(void *arg, const struct sb_hold_key *k, uint64_t seq);
	/* 0 when thread tid of tgid exists and started at start_ns
	 * (task->start_boottime), with *stopped; -ESRCH when it is gone or
	 * another task; another negative errno when that cannot be told
	 * (/proc unreadable: EMFILE, ENOMEM): the hold is kept, retried. */
	int (*task)(void *arg, uint32_t tgid, uint32_t tid, uint64_t start_ns, bool *stopped);
	/* Signals process tgid only while thread tid is still that task. */
	int (*signal)(void *arg, uint32_t tgid, uint32_t tid, uint64_t start_ns, int sig);
	/* Per-hook counters of the sandbox (may be NULL). */
	int (*counters)(void *arg, uint32_t sandbox, struct sb_counters *out /* [SB_HOOK__COUNT] */);
	uint64_t (*mono_ns)(void *arg);		/* the clock of bpf_ktime_get_ns */
	void *arg;
};

/* kind: "held", "decided", "applied", "timeout", "remembered", "error", ...;
 * detail (may be NULL) is a JSON object owned by the broker. */
typedef void (*sb_broker_log_fn)(void *arg, const char *kind, const char *text, const struct cJSON *detail);

#define SB_BROKER_NO_AUDIT 0x1u		/* tests, benchmarks: no audit store */
#define SB_BROKER_AUDIT_OPTIONAL 0x2u	/* an audit store that cannot be opened is a warning */

struct sb_broker_opts {
	const char *folder;		/* project folder: queue, memories, audit chain */
	const char *sandbox;		/* its name in records and lines (the cgroup path) */
	const char *cgroup_rel;		/* sandbox cgroup relative to the cgroup2 root */
	uint32_t sandbox_id;
	const struct sb_policy *policy;	/* not owned; sb_broker_set_policy replaces it */
	const char *policy_source;
	const struct sb_broker_kops *kops;
	const char *proc_root;		/* NULL: /proc */
	unsigned flags;			/* SB_BROKER_* */
	sb_broker_log_fn log;
	void *log_arg;
	int64_t (*now_ms)(void *arg);	/* NULL: the wall clock (queue times) */
	void *clock_arg;
};

int sb_broker_open(struct sb_broker **out, const struct sb_broker_opts *o, struct sb_err *err);

/* Recovery and adoption: queue recovery, then every hold in the kernel is
 * taken on (its request found or filed again, a decision made while no
 * broker ran applied). Records attach and policy_load. */
int sb_broker_start(struct sb_broker *b, const char *cgroup, struct sb_err *err);

/* A kernel event of this sandbox. */
int sb_broker_event(struct sb_broker *b, const struct sb_kevent *ev);

/* The queue's notification fd (poll for POLLIN), -1 when polling. */
int sb_broker_queue_fd(const struct sb_broker *b);
/* The queue changed (or polling interval): pick up decisions. */
int sb_broker_queue_changed(struct sb_broker *b);

/* About once a second: deadlines, reconciliation with the kernel's holds
 * (lost events, dead tasks), counters, audit seals. */
int sb_broker_tick(struct sb_broker *b);

/* After a batch of events: records written, decided holds resolved. */
int sb_broker_flush(struct sb_broker *b);

/* A new policy (reload). */
void sb_broker_set_policy(struct sb_broker *b, const struct sb_policy *p, const char *source);
/* Re-reads .sandbox/remembered.json (reload). */
int sb_broker_reload_memory(struct sb_broker *b, struct sb_err *err);

/* Remembered decisions changed since the last call: the kernel rules for
 * them must be recomputed (sb_broker_kernel_rules). */
bool sb_broker_take_rules_changed(struct sb_broker *b);
/* The remembered decisions the kernel can enforce under (p, c), as rules
 * for sb_kpolicy_opts.extra; free with sb_broker_kernel_rules_free. */
struct sb_compiled;
int sb_broker_kernel_rules(const struct sb_broker *b, const struct sb_policy *p, const struct sb_compiled *c,
			   struct sb_kpolicy_extra **out, size_t *n);
void sb_broker_kernel_rules_free(struct sb_kpolicy_extra *r, size_t n);

struct sb_broker_stats {
	size_t holds;		/* tasks held, waiting for a decision */
	size_t requests;	/* requests filed and not yet decided */
	uint64_t resolved;	/* holds resolved since start */
	uint64_t audit_backlog;	/* records not yet written (audit store failing) */
	uint64_t audit_dropped;
	size_t remembered;	/* remembered decisions loaded */
};
void sb_broker_stats(const struct sb_broker *b, struct sb_broker_stats *st);

/* Records detach (when detaching) and closes the audit store. */
void sb_broker_close(struct sb_broker *b, bool detach);

#endif
