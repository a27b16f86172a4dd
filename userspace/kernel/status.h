/* What is attached: sandboxes, their cgroups, policies and counters, read
 * from the pinned maps (no process of attach/run needs to be running). */
#ifndef SB_KSTATUS_H
#define SB_KSTATUS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

#include "sandbox.h"
#include "sb_err.h"

/* A task held for the broker (an escalation waiting for its verdict). */
struct sb_kstatus_held {
	__u32 pid, tid;
	char comm[17];
	char trigger[16];
	char what[SB_EV_PATH + SB_EV_ARGV + 64];
	__u64 age_ms;		/* since it was first held */
	bool after_exec;	/* stopped before the first instruction of a new image */
	bool verdict;		/* a verdict is written: it is being resumed */
};

struct sb_kstatus_box {
	__u32 id;
	struct sb_kstatus_held *held;	/* sorted oldest first */
	size_t nheld;
	struct sb_info info;
	bool owner_alive;
	struct sb_counters counters[SB_HOOK__COUNT];
	struct sb_counters total;
};

struct sb_kstatus {
	bool pinned;
	struct sb_meta meta;
	int nlinks;			/* programs attached through pins */
	struct sb_kstatus_box box[SB_MAX_SANDBOXES];
	size_t nbox;
};

int sb_kstatus_read(struct sb_kstatus *st, struct sb_err *err);
void sb_kstatus_free(struct sb_kstatus *st);	/* what read allocated (not st) */

struct cJSON;
struct cJSON *sb_kstatus_to_json(const struct sb_kstatus *st);

#endif
