/* bpffs at /sys/fs/bpf: pinning programs, links and maps (so enforcement
 * survives a broker crash) needs it. */
#include "probe.h"
#include "probe_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sb_probe_bpffs_classify(const char *mountinfo, struct sb_probe_bpffs *out)
{
	memset(out, 0, sizeof(*out));
	out->mounted = mountinfo && sb_mountinfo_has(mountinfo, SB_BPFFS_PATH, "bpf");
	if (out->mounted)
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "bpf filesystem mounted at " SB_BPFFS_PATH);
	else
		sb_probe_set(&out->res, SB_PROBE_MISSING, ENOENT,
			     "mount it (as root): mount -t bpf bpf " SB_BPFFS_PATH
			     " (pinning, which keeps enforcement up across broker restarts, needs it)",
			     "no bpf filesystem at " SB_BPFFS_PATH);
}

int sb_probe_bpffs(struct sb_probe_bpffs *out)
{
	char *mountinfo = NULL;
	int e;

	if (!out)
		return -EINVAL;
	e = sb_probe_slurp("/proc/self/mountinfo", &mountinfo);
	if (e) {
		memset(out, 0, sizeof(*out));
		sb_probe_set(&out->res, SB_PROBE_ERROR, -e, "mount /proc", "cannot read /proc/self/mountinfo: %s",
			     strerror(-e));
		return 0;
	}
	sb_probe_bpffs_classify(mountinfo, out);
	free(mountinfo);
	return 0;
}
