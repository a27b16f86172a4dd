/* BPF-LSM really usable? Reading the LSM list is not enough: when bpf is not
 * an active LSM, load and attach succeed but the program never runs, and some
 * kernels refuse LSM programs outright (EPERM, empty verifier log). So: load
 * lsm/file_open (bpf/doctor_probe.bpf.c), attach it, open a file, check that
 * it counted the open, detach. The program counts only this process's opens
 * and returns the verdict it was given, so no other process is affected. The
 * sleepable lsm.s/bprm_committed_creds program is only loaded, never attached. */
#include "probe.h"
#include "probe_internal.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "doctor_probe.skel.h"

#define VM_HINT "kernel enforcement can be tested in the VM: make vmtest"

const char *sb_bpf_lsm_state_name(enum sb_bpf_lsm_state s)
{
	switch (s) {
	case SB_BPF_LSM_WORKS:
		return "works";
	case SB_BPF_LSM_NO_BTF:
		return "no-btf";
	case SB_BPF_LSM_NO_PRIV:
		return "no-privilege";
	case SB_BPF_LSM_LOAD_REFUSED:
		return "load-refused";
	case SB_BPF_LSM_NOT_BUILT:
		return "not-built";
	case SB_BPF_LSM_LOAD_FAILED:
		return "load-failed";
	case SB_BPF_LSM_ATTACH_FAILED:
		return "attach-failed";
	case SB_BPF_LSM_NEVER_RAN:
		return "never-ran";
	case SB_BPF_LSM_TRIGGER_FAILED:
		return "trigger-failed";
	}
	return "unknown";
}

static void classify_main(const struct sb_bpf_lsm_obs *o, struct sb_probe_bpf_lsm *out)
{
	struct sb_probe_result *r = &out->res;
	char remedy[SB_PROBE_TEXT_MAX], lsm_arg[300];
	const char *msg = o->message && o->message[0] ? o->message : NULL;

	if (!o->btf) {
		out->state = SB_BPF_LSM_NO_BTF;
		sb_probe_set(r, SB_PROBE_MISSING, ENOENT,
			     "use a kernel built with CONFIG_DEBUG_INFO_BTF=y and CONFIG_BPF_LSM=y; " VM_HINT,
			     "cannot try: no kernel BTF at " SB_BTF_VMLINUX " (LSM programs attach by BTF id)");
		return;
	}
	if (o->load_err == EPERM || o->load_err == EACCES) {
		if (!o->privileged) {
			out->state = SB_BPF_LSM_NO_PRIV;
			sb_probe_set(r, SB_PROBE_MISSING, o->load_err,
				     "run doctor (and sandbox-bpf) as root: loading LSM programs needs CAP_BPF, "
				     "CAP_PERFMON (or CAP_SYS_ADMIN)",
				     "lsm/file_open load refused with %s: not privileged",
				     sb_probe_errno_name(o->load_err));
			return;
		}
		out->state = SB_BPF_LSM_LOAD_REFUSED;
		sb_probe_set(r, SB_PROBE_MISSING, o->load_err,
			     "no userspace fix: BPF-LSM needs another kernel or host; " VM_HINT,
			     "lsm/file_open load refused with %s although privileged%s: this kernel refuses LSM "
			     "programs (lockdown or a hypervisor policy on BPF)",
			     sb_probe_errno_name(o->load_err),
			     o->log_empty ? ", before the verifier ran (empty log)" : "");
		return;
	}
	if (o->load_err == ESRCH || o->load_err == ENOENT) {
		out->state = SB_BPF_LSM_NOT_BUILT;
		sb_probe_set(r, SB_PROBE_MISSING, o->load_err,
			     "use a kernel built with CONFIG_BPF_LSM=y (Debian's cloud kernels are); " VM_HINT,
			     "the kernel has no BPF-LSM hooks (bpf_lsm_file_open not in its BTF: CONFIG_BPF_LSM "
			     "is off)%s%s", msg ? "; libbpf: " : "", msg ? msg : "");
		return;
	}
	if (o->load_err) {
		out->state = SB_BPF_LSM_LOAD_FAILED;
		sb_probe_set(r, SB_PROBE_ERROR, o->load_err, "report this with the output of sandbox-bpf doctor --json",
			     "loading an lsm/file_open program failed: %s%s%s", strerror(o->load_err),
			     msg ? "; libbpf: " : "", msg ? msg : "");
		return;
	}
	if (o->attach_err) {
		out->state = SB_BPF_LSM_ATTACH_FAILED;
		sb_probe_set(r, o->attach_err == EPERM ? SB_PROBE_MISSING : SB_PROBE_ERROR, o->attach_err,
			     "report this with the output of sandbox-bpf doctor --json; " VM_HINT,
			     "lsm/file_open loaded but attaching it failed: %s", strerror(o->attach_err));
		return;
	}
	if (o->trigger_err) {
		out->state = SB_BPF_LSM_TRIGGER_FAILED;
		sb_probe_set(r, SB_PROBE_ERROR, o->trigger_err, "report this with the output of sandbox-bpf doctor --json",
			     "lsm/file_open attached, but opening / to trigger it failed: %s",
			     strerror(o->trigger_err));
		return;
	}
	if (o->count_after <= o->count_before) {
		out->state = SB_BPF_LSM_NEVER_RAN;
		if (o->lsm_list && strstr(o->lsm_list, "bpf")) {
			snprintf(remedy, sizeof(remedy),
				 "bpf is listed among the active LSMs (%s) but the program did not run: report "
				 "this with the output of sandbox-bpf doctor --json", o->lsm_list);
		} else {
			sb_probe_lsm_suggest(o->lsm_list, lsm_arg, sizeof(lsm_arg));
			snprintf(remedy, sizeof(remedy),
				 "add bpf to the active LSMs: boot with %s (Debian: append it to GRUB_CMDLINE_LINUX "
				 "in /etc/default/grub, run update-grub, reboot)", lsm_arg);
		}
		sb_probe_set(r, SB_PROBE_MISSING, 0, remedy,
			     "lsm/file_open loaded and attached but never ran: bpf is not an active LSM");
		return;
	}
	out->state = SB_BPF_LSM_WORKS;
	sb_probe_set(r, SB_PROBE_OK, 0, NULL, "lsm/file_open loaded, attached and ran (counted %llu open%s of this "
		     "process), then detached", o->count_after - o->count_before,
		     o->count_after - o->count_before == 1 ? "" : "s");
}

static void classify_sleepable(const struct sb_bpf_lsm_obs *o, const struct sb_probe_bpf_lsm *main,
			       struct sb_probe_result *r)
{
	if (o->sleepable_err < 0) {
		sb_probe_set(r, SB_PROBE_MISSING, 0, main->res.remedy, "not tried: %s",
			     main->state == SB_BPF_LSM_NO_BTF ? "no kernel BTF" : "BPF-LSM is unusable");
		return;
	}
	if (o->sleepable_err == 0 && main->state == SB_BPF_LSM_WORKS) {
		sb_probe_set(r, SB_PROBE_OK, 0, NULL,
			     "lsm.s/bprm_committed_creds loads (argv-level exec holds are possible)");
		return;
	}
	if (o->sleepable_err == 0) {
		sb_probe_set(r, SB_PROBE_MISSING, 0, "see bpf-lsm",
			     "lsm.s/bprm_committed_creds loads, but LSM programs are not usable here (bpf-lsm: %s)",
			     sb_bpf_lsm_state_name(main->state));
		return;
	}
	if (main->state != SB_BPF_LSM_WORKS) {
		sb_probe_set(r, SB_PROBE_MISSING, o->sleepable_err, "see bpf-lsm",
			     "loading lsm.s/bprm_committed_creds failed with %s, like lsm/file_open",
			     sb_probe_errno_name(o->sleepable_err));
		return;
	}
	sb_probe_set(r, SB_PROBE_MISSING, o->sleepable_err,
		     "argv-level exec rules need sleepable LSM programs (Linux 5.11+); exec is still checked by "
		     "path in bprm_check_security",
		     "lsm/ programs work but loading lsm.s/bprm_committed_creds failed with %s",
		     sb_probe_errno_name(o->sleepable_err));
}

void sb_probe_bpf_lsm_classify(const struct sb_bpf_lsm_obs *obs, struct sb_probe_bpf_lsm *out)
{
	memset(out, 0, sizeof(*out));
	classify_main(obs, out);
	classify_sleepable(obs, out, &out->sleepable);
}

/* Load, attach, trigger, check, detach. Fills the main part of obs. */
static void try_file_open(struct sb_bpf_lsm_obs *obs, char *msg, size_t msg_len)
{
	static char log[4096];
	struct doctor_probe_bpf *skel;
	struct bpf_link *link;
	int err, fd;

	log[0] = '\0';
	skel = doctor_probe_bpf__open();
	if (!skel) {
		obs->load_err = errno ? errno : EINVAL;
		goto out;
	}
	bpf_program__set_autoload(skel->progs.doctor_bprm_committed_creds, false);
	bpf_program__set_log_buf(skel->progs.doctor_file_open, log, sizeof(log));
	skel->bss->target_tgid = (__u32)getpid();
	err = doctor_probe_bpf__load(skel);
	if (err) {
		obs->load_err = -err;
		obs->log_empty = log[0] == '\0';
		goto out;
	}
	link = bpf_program__attach_lsm(skel->progs.doctor_file_open);
	if (!link) {
		obs->attach_err = errno ? errno : EINVAL;
		goto out;
	}
	obs->count_before = __atomic_load_n(&skel->bss->open_count, __ATOMIC_SEQ_CST);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		obs->trigger_err = errno;
	else
		close(fd);
	obs->count_after = __atomic_load_n(&skel->bss->open_count, __ATOMIC_SEQ_CST);
	bpf_link__destroy(link);
out:
	if (obs->load_err || obs->attach_err)
		snprintf(msg, msg_len, "%s", sb_probe_libbpf_last());
	doctor_probe_bpf__destroy(skel);
}

static int try_sleepable(void)
{
	struct doctor_probe_bpf *skel = doctor_probe_bpf__open();
	int err;

	if (!skel)
		return errno ? errno : EINVAL;
	bpf_program__set_autoload(skel->progs.doctor_file_open, false);
	skel->bss->target_tgid = (__u32)getpid();
	err = doctor_probe_bpf__load(skel);
	doctor_probe_bpf__destroy(skel);
	return -err;
}

int sb_probe_bpf_lsm(const char *lsm_list, struct sb_probe_bpf_lsm *out)
{
	struct sb_bpf_lsm_obs obs = { .sleepable_err = -1, .lsm_list = lsm_list };
	struct sb_probe_privs privs;
	struct sb_probe_btf btf;
	char msg[512] = "";

	if (!out)
		return -EINVAL;
	sb_probe_btf(&btf);
	sb_probe_privs(&privs);
	obs.btf = btf.res.status == SB_PROBE_OK;
	obs.privileged = sb_probe_privs_can_bpf(&privs);
	if (obs.btf) {
		sb_probe_libbpf_quiet();
		try_file_open(&obs, msg, sizeof(msg));
		obs.sleepable_err = try_sleepable();
		sb_probe_libbpf_loud();
		obs.message = msg;
	}
	sb_probe_bpf_lsm_classify(&obs, out);
	return 0;
}
