/* Helpers shared inside the policy library; not part of its API. */
#ifndef SB_POLICY_INTERNAL_H
#define SB_POLICY_INTERNAL_H

#include <stddef.h>

#include "policy.h"

/* Fills a zeroed rule (its own copies of text and where) and compiles its
 * pattern; on failure the rule holds nothing to free. */
int sb_rule_set(struct sb_policy *p, struct sb_rule *r, enum sb_trigger trigger, enum sb_tier tier,
		const char *text, const char *where, struct sb_err *err);
void sb_rule_free(struct sb_rule *r);
int sb_policy_compute_hash(struct sb_policy *p);
int sb_read_file(const char *path, size_t max, char **out, size_t *out_len, struct sb_err *err);

#endif
