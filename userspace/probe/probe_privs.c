/* Privileges: effective uid and capabilities (CapEff of /proc/self/status). */
#include "probe.h"
#include "probe_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has_cap(uint64_t eff, int cap)
{
	return (eff >> cap) & 1;
}

bool sb_probe_privs_can_bpf(const struct sb_probe_privs *p)
{
	return p && ((p->cap_bpf && p->cap_perfmon) || p->cap_sys_admin);
}

int sb_probe_privs_parse(const char *proc_status, uid_t euid, struct sb_probe_privs *out)
{
	const char *line;
	char list[160] = "", who[40];

	if (!proc_status || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->root = euid == 0;
	line = strstr(proc_status, "\nCapEff:");
	if (!line && !strncmp(proc_status, "CapEff:", 7))
		line = proc_status - 1;
	if (!line || sscanf(line + 1, "CapEff: %" SCNx64, &out->cap_eff) != 1) {
		sb_probe_set(&out->res, SB_PROBE_ERROR, EINVAL, NULL, "no CapEff line in /proc/self/status");
		return 0;
	}
	out->cap_bpf = has_cap(out->cap_eff, SB_CAP_BPF);
	out->cap_perfmon = has_cap(out->cap_eff, SB_CAP_PERFMON);
	out->cap_sys_admin = has_cap(out->cap_eff, SB_CAP_SYS_ADMIN);
	out->cap_net_admin = has_cap(out->cap_eff, SB_CAP_NET_ADMIN);
	out->cap_mac_admin = has_cap(out->cap_eff, SB_CAP_MAC_ADMIN);
	if (out->root)
		snprintf(who, sizeof(who), "root");
	else
		snprintf(who, sizeof(who), "not root (euid %u)", (unsigned)euid);
	snprintf(list, sizeof(list), "%s%s%s%s%s", out->cap_bpf ? " CAP_BPF" : "",
		 out->cap_perfmon ? " CAP_PERFMON" : "", out->cap_sys_admin ? " CAP_SYS_ADMIN" : "",
		 out->cap_net_admin ? " CAP_NET_ADMIN" : "", out->cap_mac_admin ? " CAP_MAC_ADMIN" : "");
	if (sb_probe_privs_can_bpf(out) && out->cap_sys_admin)
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "%s, capabilities:%s", who, list);
	else
		sb_probe_set(&out->res, SB_PROBE_MISSING, EPERM,
			     "run as root (sudo): loading BPF programs needs CAP_BPF and CAP_PERFMON, "
			     "creating cgroups and attaching programs needs CAP_SYS_ADMIN",
			     "%s, capabilities:%s", who, list[0] ? list : " none of CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN");
	return 0;
}

int sb_probe_privs(struct sb_probe_privs *out)
{
	char buf[8192];
	long n;

	if (!out)
		return -EINVAL;
	n = sb_probe_read_file("/proc/self/status", buf, sizeof(buf));
	if (n < 0 && n != -E2BIG) {
		memset(out, 0, sizeof(*out));
		out->root = geteuid() == 0;
		sb_probe_set(&out->res, SB_PROBE_ERROR, (int)-n, "mount /proc", "cannot read /proc/self/status: %s",
			     strerror((int)-n));
		return 0;
	}
	return sb_probe_privs_parse(buf, geteuid(), out);
}
