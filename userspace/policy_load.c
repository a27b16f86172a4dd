#include "policy_load.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

int sb_policy_source_load(const struct sb_policy_source *src, struct sb_policy **out, struct sb_err *err)
{
	char path[PATH_MAX];
	struct stat st;

	if (src->srt_file)
		return sb_policy_load_srt(src->srt_file, &src->opts, out, err);
	if (src->policy_file)
		return sb_policy_load_file(src->policy_file, &src->opts, out, err);
	snprintf(path, sizeof(path), "%s/.sandbox/policy.json", src->folder ? src->folder : ".");
	/* A project policy that exists must load; only its absence selects
	 * the default. An unreadable file is an error, never a fallback. */
	if (lstat(path, &st) == 0 || errno != ENOENT)
		return sb_policy_load_file(path, &src->opts, out, err);
	{
		struct sb_policy_opts o = src->opts;

		if (!o.base_dir && src->folder)
			o.base_dir = src->folder;
		return sb_policy_load_default(&o, out, err);
	}
}
