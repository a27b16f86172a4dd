/* Kernel version (uname). */
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

int sb_probe_kernel(struct sb_probe_kernel *out)
{
	struct utsname u;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (uname(&u) != 0) {
		int e = errno;

		sb_probe_set(&out->res, SB_PROBE_ERROR, e, NULL, "uname: %s", strerror(e));
		return 0;
	}
	snprintf(out->release, sizeof(out->release), "%s", u.release);
	snprintf(out->machine, sizeof(out->machine), "%s", u.machine);
	if (sscanf(u.release, "%d.%d", &out->major, &out->minor) != 2)
		out->major = out->minor = 0;
	sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "Linux %s %s", out->release, out->machine);
	return 0;
}
