/* Kernel BTF (/sys/kernel/btf/vmlinux): CO-RE programs and LSM hooks need it. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sb_probe_btf_at(const char *path, struct sb_probe_btf *out)
{
	struct stat st;
	int fd, e;

	if (!path || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->size = -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			sb_probe_set(&out->res, SB_PROBE_MISSING, e,
				     "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels "
				     "since 2020 are); BPF-LSM and CO-RE programs need it",
				     "no kernel BTF at %s", path);
		else
			sb_probe_set(&out->res, e == EACCES || e == EPERM ? SB_PROBE_MISSING : SB_PROBE_ERROR, e,
				     "run as root, or make it readable", "cannot open %s: %s", path, strerror(e));
		return 0;
	}
	if (fstat(fd, &st) != 0 || st.st_size <= 0) {
		e = errno ? errno : EINVAL;
		close(fd);
		sb_probe_set(&out->res, SB_PROBE_ERROR, e, NULL, "%s is empty or cannot be read", path);
		return 0;
	}
	close(fd);
	out->size = (long long)st.st_size;
	sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "%s (%.1f MiB)", path, (double)st.st_size / (1 << 20));
	return 0;
}

int sb_probe_btf(struct sb_probe_btf *out)
{
	return sb_probe_btf_at(SB_BTF_VMLINUX, out);
}
