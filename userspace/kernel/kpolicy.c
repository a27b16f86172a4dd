#include "kpolicy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy_load.h"

int sb_kpolicy_parse_tier(const char *s, uint8_t *out)
{
	enum sb_tier t;

	if (sb_tier_parse(s, &t))
		return -EINVAL;
	*out = (uint8_t)t;
	return 0;
}

int sb_kpolicy_load(const struct sb_kpolicy_opts *o, struct sb_kpolicy *kp, struct sb_err *err)
{
	struct sb_policy_source src = { 0 };
	struct sb_kresolver r;
	/* Every sandbox of attach/run/reload has a broker model: escalate
	 * holds the task (with no broker running it stays held until one
	 * adopts the sandbox: fail closed). */
	struct sb_kopts ko = { .anon_exec = o->anon_exec, .hold = true };
	size_t i;
	char cwd[PATH_MAX], path[PATH_MAX * 2];
	struct stat st;
	int rc;

	memset(kp, 0, sizeof(*kp));
	if (o->folder) {
		snprintf(kp->folder, sizeof(kp->folder), "%s", o->folder);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return sb_errf(err, -errno, "cannot get the current directory: %s", strerror(errno));
		snprintf(kp->folder, sizeof(kp->folder), "%s", cwd);
	}
	src.folder = kp->folder;
	src.policy_file = o->policy_file;
	src.opts.home_override = o->home;
	if (o->policy_file) {
		if (!realpath(o->policy_file, kp->source))
			snprintf(kp->source, sizeof(kp->source), "%s", o->policy_file);
	} else {
		snprintf(path, sizeof(path), "%s/.sandbox/policy.json", kp->folder);
		if (lstat(path, &st) == 0 || errno != ENOENT)
			snprintf(kp->source, sizeof(kp->source), "%s", path);
		else
			snprintf(kp->source, sizeof(kp->source), "<default>");
	}
	rc = sb_policy_source_load(&src, &kp->policy, err);
	if (rc)
		return rc;
	for (i = 0; i < o->nextra; i++) {
		const struct sb_kpolicy_extra *x = &o->extra[i];

		rc = sb_policy_append_rule(kp->policy, x->trigger, x->tier, x->text, x->where, err);
		if (rc) {
			sb_err_prefix(err, "remembered rule '%s': ", x->text);
			goto fail;
		}
	}
	rc = sb_policy_compile(kp->policy, &kp->compiled, err);
	if (rc)
		goto fail;
	rc = sb_kresolver_default(&r, err);
	if (rc)
		goto fail;
	rc = sb_kentries_compute(kp->policy, kp->compiled, &r, &ko, &kp->entries, err);
	sb_kresolver_cleanup(&r);
	if (rc)
		goto fail;
	return 0;
fail:
	sb_kpolicy_free(kp);
	return rc;
}

void sb_kpolicy_free(struct sb_kpolicy *kp)
{
	sb_kentries_free(kp->entries);
	sb_compiled_free(kp->compiled);
	sb_policy_free(kp->policy);
	kp->entries = NULL;
	kp->compiled = NULL;
	kp->policy = NULL;
}
