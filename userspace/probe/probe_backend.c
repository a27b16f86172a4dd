/* Runs every probe and decides which backend `run` would use. */
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *sb_backend_name(enum sb_backend b)
{
	switch (b) {
	case SB_BACKEND_BPF_LSM:
		return "bpf-lsm";
	case SB_BACKEND_LANDLOCK_SECCOMP:
		return "landlock+seccomp";
	case SB_BACKEND_NONE:
		break;
	}
	return "none";
}

#define VM_DEMO "kernel enforcement can be demonstrated in the VM with `make vmtest`"

static void select_vmtests(struct sb_probe_report *r)
{
	if (r->vm.qemu.status == SB_PROBE_OK)
		sb_probe_set(&r->vmtests, SB_PROBE_OK, 0, NULL,
			     "`make vmtest` can run here (qemu, %s)",
			     r->vm.kvm_present ? "KVM if a probe boot works, else TCG" : "TCG emulation");
	else
		sb_probe_set(&r->vmtests, SB_PROBE_MISSING, ENOENT, r->vm.qemu.remedy,
			     "VM tests cannot run: " SB_QEMU_BINARY " not found");
}

void sb_backend_select(struct sb_probe_report *r, bool fallback_built)
{
	bool lsm = r->bpf_lsm.state == SB_BPF_LSM_WORKS && r->bpf_lsm.res.status == SB_PROBE_OK;
	bool cg = r->cgroup.res.status == SB_PROBE_OK;
	bool fallback = r->landlock.abi >= 1 && r->seccomp.filter;
	char why[SB_PROBE_TEXT_MAX];

	select_vmtests(r);
	if (lsm && cg) {
		r->backend = SB_BACKEND_BPF_LSM;
		r->backend_built = true;
		sb_probe_set(&r->backend_res, SB_PROBE_OK, 0, NULL,
			     "bpf-lsm: BPF-LSM programs scoped to the agent's cgroup under %s%s",
			     r->cgroup.delegate,
			     r->bpf_lsm.sleepable.status == SB_PROBE_OK ? ", with argv-level exec holds" : "");
		return;
	}
	if (lsm)
		snprintf(why, sizeof(why), "BPF-LSM works but cgroup v2 is not usable (see cgroup2)");
	else
		snprintf(why, sizeof(why), "BPF-LSM is not usable here (%s)", sb_bpf_lsm_state_name(r->bpf_lsm.state));
	if (fallback) {
		r->backend = SB_BACKEND_LANDLOCK_SECCOMP;
		r->backend_built = fallback_built;
		if (fallback_built)
			sb_probe_set(&r->backend_res, SB_PROBE_OK, 0, NULL,
				     "landlock+seccomp (Landlock ABI %d, seccomp%s%s), since %s",
				     r->landlock.abi, r->seccomp.user_notif ? " user notification" : " filters",
				     r->cgroup_sock.res.status == SB_PROBE_OK ? ", cgroup socket hooks" : "", why);
		else
			sb_probe_set(&r->backend_res, SB_PROBE_MISSING, 0,
				     "`run` would need the fallback backend (not yet available in this build); " VM_DEMO,
				     "landlock+seccomp (Landlock ABI %d, seccomp%s%s), since %s",
				     r->landlock.abi, r->seccomp.user_notif ? " user notification" : " filters",
				     r->cgroup_sock.res.status == SB_PROBE_OK ? ", cgroup socket hooks" : "", why);
		return;
	}
	r->backend = SB_BACKEND_NONE;
	r->backend_built = false;
	sb_probe_set(&r->backend_res, SB_PROBE_MISSING, 0,
		     "fix bpf-lsm, or landlock and seccomp, above; " VM_DEMO,
		     "no kernel enforcement backend: %s, and the fallback needs Landlock (ABI %d) and seccomp "
		     "filters (%s)", why, r->landlock.abi, r->seccomp.filter ? "available" : "missing");
}

int sb_probe_run_all(struct sb_probe_report *r)
{
	if (!r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	sb_probe_kernel(&r->kernel);
	sb_probe_privs(&r->privs);
	sb_probe_btf(&r->btf);
	sb_probe_lsm_list(&r->lsm);
	sb_probe_bpf_lsm(r->lsm.known ? r->lsm.list : NULL, &r->bpf_lsm);
	sb_probe_cgroup(&r->cgroup);
	sb_probe_bpffs(&r->bpffs);
	sb_probe_cgroup_sock(&r->cgroup, &r->cgroup_sock);
	sb_probe_landlock(&r->landlock);
	sb_probe_seccomp(&r->seccomp);
	sb_probe_vm(&r->vm);
	sb_backend_select(r, SB_HAVE_FALLBACK_BACKEND);
	return 0;
}

size_t sb_probe_report_lines(const struct sb_probe_report *r, struct sb_probe_line *lines, size_t max)
{
	const struct sb_probe_line all[] = {
		{ "kernel", &r->kernel.res },
		{ "privileges", &r->privs.res },
		{ "btf", &r->btf.res },
		{ "lsm-list", &r->lsm.res },
		{ "bpf-lsm", &r->bpf_lsm.res },
		{ "bpf-lsm-sleepable", &r->bpf_lsm.sleepable },
		{ "cgroup2", &r->cgroup.res },
		{ "bpffs", &r->bpffs.res },
		{ "cgroup-sock", &r->cgroup_sock.res },
		{ "landlock", &r->landlock.res },
		{ "seccomp", &r->seccomp.res },
		{ "qemu", &r->vm.qemu },
		{ "kvm", &r->vm.kvm },
		{ "backend", &r->backend_res },
		{ "vm-tests", &r->vmtests },
	};
	size_t i, n = sizeof(all) / sizeof(all[0]);

	_Static_assert(sizeof(all) / sizeof(all[0]) <= SB_PROBE_MAX_LINES, "raise SB_PROBE_MAX_LINES");
	for (i = 0; i < n && i < max; i++)
		lines[i] = all[i];
	return i;
}
