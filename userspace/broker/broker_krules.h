/* Which remembered decisions the kernel can enforce itself, so the same
 * request next time passes without a hold (docs/architecture.md,
 * "Remembered decisions in the kernel").
 *
 * A memory only turns an escalate into an allow. A kernel allow rule for
 * it must therefore never win over anything else: for every event in the
 * memory's scope, every rule the new rule would beat (and the default,
 * where no rule matches) must be escalate (or allow, which changes
 * nothing). Where that is shown here, the memory becomes policy rules
 * appended after the policy's own (sb_kpolicy_extra); everywhere else the
 * broker answers the hold from the memory (correct, one hold slower).
 *
 *   prefix P   shell "P" and "P *"   over the compiled shell entries: every
 *              entry whose literal prefix is a proper prefix of "P " (the
 *              new rule is longer, so it wins) is escalate or allow;
 *              full-path entries shorter than it too; the default too
 *              unless a plain prefix entry covers all of "P"
 *   command C  shell "C" (exact)     the same with C for "P "
 *   host A[:N] network "A[:N]"       addresses only (the kernel never sees
 *              names): the compiled decision at every port in scope is
 *              escalate or allow, and no exact host-name rule (resolved
 *              to addresses at load) is observe or deny
 *   dir D      write/read D and below    every rule of the trigger that can match
 *              below D and has no literal component deeper than D is
 *              escalate or allow, and so is the default (conservative)
 *   once, dir for programs: never (the broker answers them). */
#ifndef SB_BROKER_KRULES_H
#define SB_BROKER_KRULES_H

#include <stddef.h>

#include "broker_memory.h"
#include "compile.h"
#include "kernel/kpolicy.h"
#include "policy.h"

struct sb_krules {
	struct sb_kpolicy_extra *r;	/* text and where are owned */
	size_t n;
};

/* 1 when entry e is enforceable in the kernel under (p, c), 0 when not
 * (why says why), <0 on error. */
int sb_krule_check(const struct sb_policy *p, const struct sb_compiled *c, const struct sb_bmem_entry *e, char *why,
		   size_t why_len);

/* The rules for every enforceable entry of m. */
int sb_krules_compute(const struct sb_policy *p, const struct sb_compiled *c, const struct sb_bmem *m,
		      struct sb_krules *out);
void sb_krules_free(struct sb_krules *k);

/* A literal for a policy pattern: '*', '?', '[' and '\' escaped. */
int sb_krule_escape(const char *in, char *out, size_t out_len);

#endif
