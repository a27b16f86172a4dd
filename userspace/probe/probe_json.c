/* The probe report as one JSON object. */
#include "probe.h"
#include "probe_internal.h"

#include <cjson/cJSON.h>
#include <string.h>

static cJSON *check_json(const struct sb_probe_result *res)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", sb_probe_status_name(res->status));
	cJSON_AddStringToObject(o, "detail", res->detail);
	if (res->remedy[0])
		cJSON_AddStringToObject(o, "remedy", res->remedy);
	if (res->code)
		cJSON_AddStringToObject(o, "errno", sb_probe_errno_name(res->code));
	return o;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
	if (v && v[0])
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

/* Structured values beside status/detail/remedy, by check name. */
static void add_extras(const struct sb_probe_report *r, const char *name, cJSON *o)
{
	if (!strcmp(name, "kernel")) {
		cJSON_AddStringToObject(o, "release", r->kernel.release);
		cJSON_AddStringToObject(o, "machine", r->kernel.machine);
	} else if (!strcmp(name, "privileges")) {
		cJSON_AddBoolToObject(o, "root", r->privs.root);
		cJSON_AddBoolToObject(o, "cap_bpf", r->privs.cap_bpf);
		cJSON_AddBoolToObject(o, "cap_perfmon", r->privs.cap_perfmon);
		cJSON_AddBoolToObject(o, "cap_sys_admin", r->privs.cap_sys_admin);
		cJSON_AddBoolToObject(o, "cap_net_admin", r->privs.cap_net_admin);
		cJSON_AddBoolToObject(o, "cap_mac_admin", r->privs.cap_mac_admin);
	} else if (!strcmp(name, "btf")) {
		cJSON_AddStringToObject(o, "path", SB_BTF_VMLINUX);
		cJSON_AddNumberToObject(o, "size", (double)r->btf.size);
	} else if (!strcmp(name, "lsm-list")) {
		add_str_or_null(o, "list", r->lsm.known ? r->lsm.list : NULL);
		add_str_or_null(o, "lockdown", r->lsm.lockdown);
		cJSON_AddBoolToObject(o, "has_bpf", r->lsm.has_bpf);
		cJSON_AddBoolToObject(o, "private_mount", r->lsm.private_mount);
	} else if (!strcmp(name, "bpf-lsm")) {
		cJSON_AddStringToObject(o, "state", sb_bpf_lsm_state_name(r->bpf_lsm.state));
	} else if (!strcmp(name, "cgroup2")) {
		add_str_or_null(o, "mount", r->cgroup.mount);
		cJSON_AddBoolToObject(o, "hybrid", r->cgroup.hybrid);
		add_str_or_null(o, "self", r->cgroup.self);
		add_str_or_null(o, "delegate", r->cgroup.delegate);
	} else if (!strcmp(name, "bpffs")) {
		cJSON_AddStringToObject(o, "path", SB_BPFFS_PATH);
		cJSON_AddBoolToObject(o, "mounted", r->bpffs.mounted);
	} else if (!strcmp(name, "landlock")) {
		cJSON_AddNumberToObject(o, "abi", r->landlock.abi);
	} else if (!strcmp(name, "seccomp")) {
		cJSON_AddBoolToObject(o, "filter", r->seccomp.filter);
		cJSON_AddBoolToObject(o, "user_notif", r->seccomp.user_notif);
	} else if (!strcmp(name, "qemu")) {
		add_str_or_null(o, "path", r->vm.qemu_path);
	} else if (!strcmp(name, "kvm")) {
		cJSON_AddBoolToObject(o, "present", r->vm.kvm_present);
	} else if (!strcmp(name, "backend")) {
		cJSON_AddStringToObject(o, "name", sb_backend_name(r->backend));
		cJSON_AddBoolToObject(o, "built", r->backend_built);
	}
}

cJSON *sb_probe_report_to_json(const struct sb_probe_report *r)
{
	struct sb_probe_line lines[SB_PROBE_MAX_LINES];
	cJSON *root, *checks;
	size_t i, n;

	if (!r)
		return NULL;
	root = cJSON_CreateObject();
	checks = cJSON_CreateObject();
	if (!root || !checks || !cJSON_AddItemToObject(root, "checks", checks)) {
		cJSON_Delete(root);
		cJSON_Delete(checks);
		return NULL;
	}
	n = sb_probe_report_lines(r, lines, SB_PROBE_MAX_LINES);
	for (i = 0; i < n; i++) {
		cJSON *c = check_json(lines[i].res);

		if (!c || !cJSON_AddItemToObject(checks, lines[i].name, c)) {
			cJSON_Delete(c);
			cJSON_Delete(root);
			return NULL;
		}
		add_extras(r, lines[i].name, c);
	}
	cJSON_AddStringToObject(root, "backend", sb_backend_name(r->backend));
	cJSON_AddBoolToObject(root, "backend_built", r->backend_built);
	cJSON_AddStringToObject(root, "bpf_lsm", sb_bpf_lsm_state_name(r->bpf_lsm.state));
	cJSON_AddBoolToObject(root, "vm_tests", r->vmtests.status == SB_PROBE_OK);
	return root;
}
