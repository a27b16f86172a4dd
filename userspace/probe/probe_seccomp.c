/* seccomp: filter mode and user notification (SECCOMP_GET_ACTION_AVAIL for
 * SECCOMP_RET_USER_NOTIF, SECCOMP_GET_NOTIF_SIZES). Nothing is installed. */
#include "probe.h"
#include "probe_internal.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void sb_probe_seccomp_classify(int filter_ret, int filter_err, int notif_ret, int notif_err, int sizes_ret,
			       int sizes_err, struct sb_probe_seccomp *out)
{
	memset(out, 0, sizeof(*out));
	out->filter = filter_ret == 0;
	out->user_notif = out->filter && notif_ret == 0 && sizes_ret == 0;
	if (!out->filter) {
		if (filter_err == ENOSYS || filter_err == EINVAL)
			sb_probe_set(&out->res, SB_PROBE_MISSING, filter_err,
				     "use a kernel built with CONFIG_SECCOMP_FILTER=y",
				     "seccomp filters are not available (%s)", sb_probe_errno_name(filter_err));
		else
			sb_probe_set(&out->res, SB_PROBE_ERROR, filter_err, NULL, "seccomp(GET_ACTION_AVAIL): %s",
				     strerror(filter_err));
		return;
	}
	if (out->user_notif) {
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "filters and user notification (SECCOMP_RET_USER_NOTIF)");
		return;
	}
	sb_probe_set(&out->res, SB_PROBE_MISSING, notif_ret ? notif_err : sizes_err,
		     "use Linux 5.0+ for SECCOMP_RET_USER_NOTIF; plain filters still work",
		     "filters work, user notification is not available (%s)",
		     sb_probe_errno_name(notif_ret ? notif_err : sizes_err));
}

int sb_probe_seccomp(struct sb_probe_seccomp *out)
{
	struct seccomp_notif_sizes sizes;
	unsigned int action;
	int fr, fe = 0, nr, ne = 0, sr, se = 0;

	if (!out)
		return -EINVAL;
	action = SECCOMP_RET_ALLOW;
	fr = (int)syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action);
	if (fr)
		fe = errno;
	action = SECCOMP_RET_USER_NOTIF;
	nr = (int)syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action);
	if (nr)
		ne = errno;
	memset(&sizes, 0, sizeof(sizes));
	sr = (int)syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes);
	if (sr)
		se = errno;
	sb_probe_seccomp_classify(fr, fe, nr, ne, sr, se, out);
	return 0;
}
