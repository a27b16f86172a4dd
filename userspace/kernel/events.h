/* Kernel events (struct sb_kevent from the sandbox's ring buffer) as
 * readable lines or JSON lines, and the loop that waits for events,
 * signals and a once-a-second tick. The broker plugs in as the on_event
 * callback. */
#ifndef SB_KEVENTS_H
#define SB_KEVENTS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "sandbox.h"
#include "sb_err.h"

struct cJSON;

const char *sb_hook_name(unsigned hook);
const char *sb_kop_name(unsigned op);
const char *sb_action_name(unsigned action);
/* Name of a rule index: the pattern (policy given), or "default",
 * "protected", "self-protection", ... for the special indexes. */
const char *sb_rule_label(const struct sb_policy *p, __u32 rule, char *buf, size_t len);

/* "tcp", "udp", "raw" or "other" for an event's net.proto. */
const char *sb_kev_proto_name(unsigned proto);
/* Copies a fixed-size, maybe unterminated event field into out (always
 * NUL-terminated, truncated to outlen - 1). */
void sb_kev_field(char *out, size_t outlen, const char *in, size_t inlen);

/* What the event is about: a path, an executable and its command line,
 * an address, a signal's target. */
void sb_event_subject(const struct sb_kevent *ev, char *out, size_t len);

/* One readable line, without a newline. */
void sb_event_format(const struct sb_kevent *ev, const struct sb_policy *p, char *out, size_t len);
/* One JSON object (caller frees). */
struct cJSON *sb_event_to_json(const struct sb_kevent *ev, const struct sb_policy *p);

struct sb_evloop_ops {
	/* An event; a negative return stops the loop with that error. */
	int (*on_event)(const struct sb_kevent *ev, void *arg);
	/* A signal from the set given to sb_evloop_run, with its si_code
	 * (SI_KERNEL for one the terminal sent); return 1 to stop. */
	int (*on_signal)(int sig, int code, void *arg);
	/* About once a second; return 1 to stop. */
	int (*on_tick)(void *arg);
	/* Readable extra fds (a child's pidfd, the queue's inotify); return 1
	 * to stop. -1: none. */
	int extra_fd;
	int (*on_extra)(void *arg);
	int extra2_fd;
	int (*on_extra2)(void *arg);
	/* After every wake-up's events were handled (the broker writes its
	 * records and applies verdicts here, once per batch); 1 to stop. */
	int (*on_wake)(void *arg);
	void *arg;
};

/* Blocks the signals (so they arrive only through the loop), then waits
 * until a callback asks to stop. ring_fd may be -1 (no events). Events
 * left in the ring buffer are delivered before returning. */
int sb_evloop_run(int ring_fd, const int *signals, const struct sb_evloop_ops *ops, struct sb_err *err);

#endif
