// SPDX-License-Identifier: GPL-2.0
/* doctor: is BPF-LSM really usable here? userspace/probe/probe_bpf_lsm.c
 * loads this, attaches file_open, opens a file and checks the counter: when
 * bpf is not an active LSM, load and attach succeed but the program never
 * runs. Only opens by target_tgid are counted; nothing is ever denied, so no
 * other process is affected. The sleepable program is only loaded (never
 * attached) to tell whether lsm.s/ programs are accepted. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u32 target_tgid = 0;
__u64 open_count = 0;

SEC("lsm/file_open")
int BPF_PROG(doctor_file_open, struct file *file, int ret)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&open_count, 1);
	return ret;
}

SEC("lsm.s/bprm_committed_creds")
int BPF_PROG(doctor_bprm_committed_creds, struct linux_binprm *bprm)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&open_count, 0);
	return 0;
}
