/* The policy a sandbox enforces: loaded (--policy FILE, else
 * FOLDER/.sandbox/policy.json, else the embedded default), compiled, and
 * turned into kernel entries with the default resolver. Shared by attach,
 * run and policy reload so all three mean the same by "the policy". */
#ifndef SB_KPOLICY_H
#define SB_KPOLICY_H

#include <limits.h>
#include <stdint.h>

#include "compile.h"
#include "maps_policy.h"
#include "policy.h"
#include "sb_err.h"

/* A rule added after the policy's own (a remembered decision the broker
 * enforces in the kernel); where labels it in events. */
struct sb_kpolicy_extra {
	enum sb_trigger trigger;
	enum sb_tier tier;
	const char *text;
	const char *where;
};

struct sb_kpolicy_opts {
	const char *policy_file;	/* NULL: FOLDER/.sandbox/policy.json or the default */
	const char *folder;		/* project folder (absolute); NULL: current directory */
	const char *home;		/* for ~ (default: $HOME) */
	uint8_t anon_exec;		/* tier for exec of nameless files */
	const struct sb_kpolicy_extra *extra;
	size_t nextra;
};

struct sb_kpolicy {
	struct sb_policy *policy;
	struct sb_compiled *compiled;
	struct sb_kentries *entries;
	char source[PATH_MAX];		/* absolute policy file, or "<default>" */
	char folder[PATH_MAX];
};

int sb_kpolicy_load(const struct sb_kpolicy_opts *o, struct sb_kpolicy *out, struct sb_err *err);
void sb_kpolicy_free(struct sb_kpolicy *kp);

/* Parses allow|observe|escalate|deny for --anon-exec. */
int sb_kpolicy_parse_tier(const char *s, uint8_t *out);

#endif
