// SPDX-License-Identifier: GPL-2.0
/* VM harness smoke test: an lsm/file_open program that counts the opens of
 * one process and denies it one inode. lsm_smoke.c drives it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define EPERM 1

char LICENSE[] SEC("license") = "GPL";

__u32 target_tgid = 0;
__u64 deny_ino = 0;
__u64 open_count = 0;
__u64 deny_count = 0;

SEC("lsm/file_open")
int BPF_PROG(smoke_file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&open_count, 1);
	if (deny_ino && file->f_inode->i_ino == deny_ino) {
		__sync_fetch_and_add(&deny_count, 1);
		return -EPERM;
	}
	return 0;
}
