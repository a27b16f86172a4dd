/* Rules added to a parsed policy after the fact: the broker's remembered
 * decisions that are safe to enforce in the kernel (userspace/broker/
 * broker_krules.c proves which). They go after every rule of the file, so
 * the file's rules keep their indexes (events name rules by index), and
 * the policy's hash stays the file's: it identifies what the user wrote. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"

int sb_policy_append_rule(struct sb_policy *p, enum sb_trigger trigger, enum sb_tier tier, const char *text,
			  const char *where, struct sb_err *err)
{
	struct sb_rule *nr, *r;
	int rc;

	if (!text || !where)
		return sb_errf(err, -EINVAL, "a rule needs a pattern and a label");
	nr = realloc(p->rules, (p->nrules + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	p->rules = nr;
	r = &p->rules[p->nrules];
	memset(r, 0, sizeof(*r));
	rc = sb_rule_set(p, r, trigger, tier, text, where, err);
	if (rc)
		return rc;
	p->nrules++;
	return 0;
}
