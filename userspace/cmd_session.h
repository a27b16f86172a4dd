/* Command-side glue shared by attach and run: one enforcing session on a
 * cgroup (policy -> kernel entries -> sandbox), its broker (escalations,
 * remembered decisions, the audit chain: broker/broker.h), its event
 * stream and its end. Prints (events, broker lines, notes) to the
 * session's FILE; library code under kernel/ and broker/ does not. */
#ifndef SB_CMD_SESSION_H
#define SB_CMD_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "broker/broker.h"
#include "kernel/kpolicy.h"
#include "kernel/loader.h"
#include "kernel/scope.h"

struct sb_session_opts {
	const char *cgroup;		/* the cgroup to confine */
	struct sb_kpolicy_opts kp;
	uint8_t anon_exec;
	bool json;
	bool quiet;			/* no event lines (run --quiet) */
	bool adopt;			/* take over an existing sandbox whose broker is gone */
	FILE *out;
};

struct sb_session {
	struct sb_session_opts o;
	struct sb_kpolicy kp;
	struct sb_kernel k;
	struct sb_kscope scope;
	uint32_t id;
	int ring_fd;
	char hash[72];
	char reload_failed[72];		/* hash of another process's reload this broker could not take */
	const char *cmd;		/* "attach", "run": prefix of messages */
	bool adopted;			/* an existing sandbox taken over */
	struct sb_broker *broker;
	struct sb_broker_kops kops;
	size_t nextra;			/* remembered decisions enforced in the kernel */
};

/* Extra event sources for run: the child's pidfd, and signal handling
 * (return 1 to stop, 0 to go on, -1 for the default: SIGHUP reloads,
 * SIGINT/SIGTERM stop). */
struct sb_session_hooks {
	int extra_fd;
	int (*on_extra)(void *arg);
	int (*on_signal)(int sig, int code, void *arg);
	void *arg;
};

/* Attaches (or, with o->adopt, takes over a sandbox whose broker died),
 * then starts the broker: recovery of the queue, adoption of every held
 * task. */
int sb_session_start(struct sb_session *s, const struct sb_session_opts *o, struct sb_err *err);
void sb_session_print_attached(struct sb_session *s, const char *cmd);
int sb_session_stream(struct sb_session *s, const struct sb_session_hooks *h, struct sb_err *err);
/* Re-reads the policy from the same source and switches to it. */
int sb_session_reload(struct sb_session *s, struct sb_err *err);
/* Prints the events waiting in the ring buffer. */
void sb_session_drain(struct sb_session *s);
/* Stops streaming; remove: also removes the sandbox (run). */
void sb_session_end(struct sb_session *s, bool remove);

#endif
