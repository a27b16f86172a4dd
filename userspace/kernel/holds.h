/* The kernel's held requests (pinned sb_hold, with sb_verdict): read by
 * the broker (adoption, reconciliation) and by status. */
#ifndef SB_KHOLDS_H
#define SB_KHOLDS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox.h"

struct sb_kernel;

struct sb_khold {
	struct sb_hold_key key;
	struct sb_hold h;	/* h.ev: the event as first pushed */
	bool has_verdict;
	struct sb_verdict v;
};

/* Every hold of sandbox (0: all); *out is malloc'd. */
int sb_kernel_holds(struct sb_kernel *k, uint32_t sandbox, struct sb_khold **out, size_t *n);

/* A sandbox is being removed: its holds, verdicts and held marks go, and
 * (cont) its held tasks are continued: no longer confined, their syscalls
 * restart and run like everything else in that cgroup now does (a task
 * held after exec runs its new image). Returns how many were continued. */
int sb_kernel_holds_release(struct sb_kernel *k, uint32_t sandbox, bool cont);

#endif
