/* Landlock ABI version (landlock_create_ruleset with
 * LANDLOCK_CREATE_RULESET_VERSION): the Linux fallback's file rules. */
#include "probe.h"

#include <errno.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

void sb_probe_landlock_classify(long ret, int err, struct sb_probe_landlock *out)
{
	memset(out, 0, sizeof(*out));
	if (ret >= 1) {
		out->abi = (int)ret;
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "ABI %d%s", out->abi,
			     out->abi >= 4 ? " (file and TCP rules)" : " (file rules)");
		return;
	}
	if (err == ENOSYS)
		sb_probe_set(&out->res, SB_PROBE_MISSING, err,
			     "use Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK=y",
			     "the kernel has no Landlock (ENOSYS)");
	else if (err == EOPNOTSUPP)
		sb_probe_set(&out->res, SB_PROBE_MISSING, err,
			     "enable it: add landlock to lsm= on the kernel command line",
			     "Landlock is built in but disabled at boot (EOPNOTSUPP)");
	else
		sb_probe_set(&out->res, SB_PROBE_ERROR, err ? err : EINVAL, NULL,
			     "landlock_create_ruleset(VERSION) returned %ld: %s", ret, strerror(err ? err : EINVAL));
}

int sb_probe_landlock(struct sb_probe_landlock *out)
{
	long ret;

	if (!out)
		return -EINVAL;
	errno = 0;
	ret = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	sb_probe_landlock_classify(ret, ret < 0 ? errno : 0, out);
	return 0;
}
