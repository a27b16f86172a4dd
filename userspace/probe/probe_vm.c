/* VM tests: qemu-system-x86_64 on PATH, and whether /dev/kvm opens. Nothing
 * is booted: whether KVM can really run the test kernels is decided by the VM
 * harness (vmtests/run.sh boots a probe VM and falls back to TCG). */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int sb_probe_find_in_path(const char *name, const char *path_env, char *out, size_t out_len)
{
	const char *p = path_env && path_env[0] ? path_env : "/usr/local/bin:/usr/bin:/bin";

	if (!name || !name[0] || !out || !out_len)
		return -EINVAL;
	while (*p) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char cand[PATH_MAX];
		struct stat st;

		if (n > 0 && snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, name) < (int)sizeof(cand) &&
		    stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
			if (strlen(cand) >= out_len)
				return -ENAMETOOLONG;
			strcpy(out, cand);
			return 0;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return -ENOENT;
}

void sb_probe_vm_classify(const char *qemu_path, int kvm_err, int kvm_api, struct sb_probe_vm *out)
{
	memset(out, 0, sizeof(*out));
	if (qemu_path && qemu_path[0]) {
		snprintf(out->qemu_path, sizeof(out->qemu_path), "%s", qemu_path);
		sb_probe_set(&out->qemu, SB_PROBE_OK, 0, NULL, "%s", qemu_path);
	} else {
		sb_probe_set(&out->qemu, SB_PROBE_MISSING, ENOENT,
			     "install it for the VM tests: apt-get install qemu-system-x86 (or make deps)",
			     SB_QEMU_BINARY " not found on PATH");
	}
	out->kvm_present = kvm_err == 0;
	if (kvm_err == 0)
		sb_probe_set(&out->kvm, SB_PROBE_OK, 0, NULL,
			     "/dev/kvm present and opens (API %d); the VM harness checks that it can boot the "
			     "test kernels and otherwise uses TCG", kvm_api);
	else if (kvm_err == ENOENT)
		sb_probe_set(&out->kvm, SB_PROBE_MISSING, kvm_err,
			     "nothing to do: VM tests use TCG emulation (slower); for KVM enable virtualization "
			     "and load kvm_intel or kvm_amd",
			     "no /dev/kvm");
	else
		sb_probe_set(&out->kvm, SB_PROBE_MISSING, kvm_err,
			     "VM tests use TCG emulation (slower); for KVM add the user to group kvm",
			     "/dev/kvm cannot be opened: %s", strerror(kvm_err));
}

int sb_probe_vm(struct sb_probe_vm *out)
{
	char path[PATH_MAX];
	int fd, kvm_err = 0, api = -1;
	bool found;

	if (!out)
		return -EINVAL;
	found = sb_probe_find_in_path(SB_QEMU_BINARY, getenv("PATH"), path, sizeof(path)) == 0;
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		kvm_err = errno;
	} else {
		api = ioctl(fd, KVM_GET_API_VERSION, 0);
		close(fd);
	}
	sb_probe_vm_classify(found ? path : NULL, kvm_err, api, out);
	return 0;
}
