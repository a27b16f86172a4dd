/* Where a command's policy comes from: --policy FILE, --srt-settings FILE,
 * the project's .sandbox/policy.json, or the embedded default. */
#ifndef SB_POLICY_LOAD_H
#define SB_POLICY_LOAD_H

#include "policy.h"

struct sb_policy_source {
	const char *policy_file;
	const char *srt_file;
	const char *folder;		/* project folder for .sandbox/policy.json */
	struct sb_policy_opts opts;
};

int sb_policy_source_load(const struct sb_policy_source *src, struct sb_policy **out, struct sb_err *err);

#endif
