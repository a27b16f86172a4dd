// SPDX-License-Identifier: GPL-2.0
/* vmbench floor: the cheapest possible LSM program on each hook the
 * benchmark reports, counting calls and allowing everything. Its
 * run_time_ns / run_cnt next to ours is what the hook itself costs a BPF
 * program (trampoline, stats) before any decision. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 calls[16];

#define FLOOR(sec, name, i)                     \
	SEC(sec)                                \
	int BPF_PROG(name)                      \
	{                                       \
		__sync_fetch_and_add(&calls[i], 1); \
		return 0;                       \
	}

FLOOR("lsm/file_open", floor_file_open, 0)
FLOOR("lsm/path_mknod", floor_path_mknod, 1)
FLOOR("lsm/path_unlink", floor_path_unlink, 2)
FLOOR("lsm/bprm_check_security", floor_bprm_check_security, 3)
FLOOR("lsm/mmap_file", floor_mmap_file, 4)
FLOOR("lsm/socket_connect", floor_socket_connect, 5)
FLOOR("lsm/task_alloc", floor_task_alloc, 6)
FLOOR("lsm/capable", floor_capable, 7)
FLOOR("lsm/file_fcntl", floor_file_fcntl, 8)
FLOOR("lsm/file_ioctl", floor_file_ioctl, 9)
FLOOR("lsm.s/bprm_committed_creds", floor_bprm_committed_creds, 10)
