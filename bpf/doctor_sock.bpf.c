// SPDX-License-Identifier: GPL-2.0
/* doctor: can cgroup socket programs be loaded and attached here?
 * userspace/probe/probe_cgroup_sock.c attaches this to a freshly created,
 * empty child cgroup and detaches it again. It allows every connect. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup/connect4")
int doctor_connect4(struct bpf_sock_addr *ctx)
{
	return 1;
}
