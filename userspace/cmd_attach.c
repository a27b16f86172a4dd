/* sandbox-bpf attach | detach */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "cli.h"
#include "commands.h"
#include "kernel/events.h"
#include "kernel/kpolicy.h"
#include "kernel/loader.h"
#include "kernel/scope.h"
#include "cmd_session.h"

static void attach_usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf attach --cgroup PATH [--policy FILE] [--folder DIR] [--home DIR]\n"
		"                          [--anon-exec TIER] [--adopt] [--no-stream] [--json]\n"
		"\n"
		"Confines every task in the cgroup PATH (and its descendants) with BPF-LSM\n"
		"programs: loads and pins them under " SB_PIN_DIR " (or adopts the ones\n"
		"already pinned), compiles the policy into maps, adds the cgroup to the\n"
		"scope, then runs the broker until SIGINT/SIGTERM: escalations hold the task\n"
		"and become requests in FOLDER/.sandbox/escalations (see 'sandbox-bpf watch'),\n"
		"decisions are applied, everything is recorded in FOLDER/.sandbox/audit.db,\n"
		"and every denial, escalation and observed event is printed. The sandbox\n"
		"stays enforced after attach exits, and held tasks stay held until a broker\n"
		"runs again ('attach --adopt'); remove it with 'sandbox-bpf detach --cgroup\n"
		"PATH'. SIGHUP re-reads the policy and the remembered decisions.\n"
		"\n"
		"  --cgroup PATH     cgroup v2 directory (absolute, or relative to the cgroup2 mount)\n"
		"  --policy FILE     policy file (default: FOLDER/.sandbox/policy.json if present,\n"
		"                    else the embedded default policy)\n"
		"  --folder DIR      project folder (default: current directory)\n"
		"  --home DIR        the agent user's home for ~ in rules (default: $HOME)\n"
		"  --anon-exec TIER  exec of files without a name (memfd, O_TMPFILE, deleted):\n"
		"                    allow, observe, escalate or deny (default: deny)\n"
		"  --adopt           take over the sandbox of PATH whose broker is gone (killed,\n"
		"                    or --no-stream): its held tasks and requests are adopted\n"
		"  --no-stream       attach and exit (events wait in the ring buffer; escalations\n"
		"                    stay held until a broker adopts the sandbox)\n"
		"  --json            JSON lines instead of readable lines\n"
		"\n"
		"Exit status: 0 when streaming stopped on a signal (the sandbox stays enforced)\n"
		"or with --no-stream, 1 when attaching failed (nothing runs unconfined), 2 on\n"
		"usage errors. Without BPF-LSM (most hosts: see 'sandbox-bpf doctor') attach\n"
		"fails; 'make vmtest' shows enforcement in a VM.\n");
}

static void detach_usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf detach (--cgroup PATH | --all) [--json]\n"
		"\n"
		"Removes the sandbox of cgroup PATH: its tasks are no longer confined and its\n"
		"policy entries are deleted. When no sandbox is left, the programs and maps\n"
		"pinned under " SB_PIN_DIR " are removed too. --all removes every sandbox\n"
		"(also pins left by another sandbox-bpf version).\n");
}

int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' }, { "policy", required_argument, NULL, 'p' },
		{ "folder", required_argument, NULL, 'f' }, { "home", required_argument, NULL, 'H' },
		{ "anon-exec", required_argument, NULL, 'a' }, { "no-stream", no_argument, NULL, 'n' },
		{ "adopt", no_argument, NULL, 'A' },
		{ "json", no_argument, NULL, 'j' },	     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sb_session_opts so = { .anon_exec = SB_K_DENY, .out = stdout };
	struct sb_session s;
	struct sb_err err = { { 0 } };
	char folder[PATH_MAX];
	bool no_stream = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			so.cgroup = optarg;
			break;
		case 'p':
			so.kp.policy_file = optarg;
			break;
		case 'f':
			so.kp.folder = optarg;
			break;
		case 'H':
			so.kp.home = optarg;
			break;
		case 'a':
			if (sb_kpolicy_parse_tier(optarg, &so.anon_exec))
				return sb_usage_error("attach", "--anon-exec: expected allow, observe, escalate or deny");
			break;
		case 'n':
			no_stream = true;
			break;
		case 'A':
			so.adopt = true;
			break;
		case 'j':
			so.json = true;
			break;
		case 'h':
			attach_usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("attach", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("attach", "unexpected argument '%s'", argv[optind]);
	if (!so.cgroup)
		return sb_usage_error("attach", "--cgroup PATH is required");
	if (so.kp.folder) {
		if (sb_resolve_folder(so.kp.folder, folder, sizeof(folder)))
			return sb_fail("attach", "folder '%s' does not exist", so.kp.folder);
		so.kp.folder = folder;
	}
	so.kp.anon_exec = so.anon_exec;
	rc = sb_session_start(&s, &so, &err);
	if (rc)
		return sb_fail("attach", "%s", err.msg);
	sb_session_print_attached(&s, "attach");
	if (no_stream) {
		sb_session_end(&s, false);
		return SB_EXIT_OK;
	}
	rc = sb_session_stream(&s, NULL, &err);
	sb_session_end(&s, false);
	if (rc)
		return sb_fail("attach", "%s", err.msg);
	return SB_EXIT_OK;
}

static int detach_all(bool json)
{
	struct sb_kernel k;
	struct sb_err err = { { 0 } };
	int removed = 0;
	__u32 id;

	if (!sb_kernel_pinned()) {
		if (json) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddNumberToObject(o, "detached", 0);
			cJSON_AddBoolToObject(o, "unpinned", 0);
			sb_print_json_line(stdout, o);
		} else {
			printf("nothing is attached (no pins under %s)\n", SB_PIN_DIR);
		}
		return SB_EXIT_OK;
	}
	/* Pins from another version cannot be read: remove them regardless. */
	if (sb_kernel_open(&k, 0, &err) == 0) {
		for (id = 1; id < SB_MAX_SANDBOXES; id++) {
			struct sb_info info;

			if (sb_kernel_info(&k, id, &info) == 0 && sb_kernel_remove(&k, id, false, NULL, &err) == 0)
				removed++;
		}
		sb_kernel_close(&k);
	}
	if (sb_kernel_unpin_all(&err))
		return sb_fail("detach", "%s", err.msg);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "detached", removed);
		cJSON_AddBoolToObject(o, "unpinned", 1);
		sb_print_json_line(stdout, o);
	} else {
		printf("detached %d sandbox%s; removed the pins under %s\n", removed, removed == 1 ? "" : "es",
		       SB_PIN_DIR);
	}
	return SB_EXIT_OK;
}

/* The sandbox's audit chain gets the detach (the broker, if one still
 * runs, is gone a second later). Best effort: detach itself succeeded. */
static void record_detach(const struct sb_info *info)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	cJSON *rec;

	if (!info->folder[0] || sb_audit_open(info->folder, 0, &a, &err))
		return;
	rec = cJSON_CreateObject();
	if (rec) {
		cJSON_AddStringToObject(rec, "kind", "detach");
		cJSON_AddStringToObject(rec, "origin", "cli");
		cJSON_AddStringToObject(rec, "sandbox", info->cgroup);
		cJSON_AddStringToObject(rec, "cgroup", info->cgroup);
		cJSON_AddStringToObject(rec, "backend", "bpf-lsm");
		if (sb_audit_append(a, rec, NULL, &err))
			fprintf(stderr, "sandbox-bpf detach: the audit chain did not get the detach: %s\n", err.msg);
		cJSON_Delete(rec);
	}
	sb_audit_close(a, &err);
}

int cmd_detach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' }, { "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },	     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cgroup = NULL;
	bool all = false, json = false, unpinned = false;
	struct sb_err err = { { 0 } };
	struct sb_kscope scope;
	struct sb_kernel k;
	struct sb_info info;
	uint32_t id;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cgroup = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			detach_usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("detach", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("detach", "unexpected argument '%s'", argv[optind]);
	if (all == !!cgroup)
		return sb_usage_error("detach", "give either --cgroup PATH or --all");
	if (all)
		return detach_all(json);
	if (sb_cgroup_resolve(cgroup, &scope, &err))
		return sb_fail("detach", "%s", err.msg);
	if (sb_kernel_open(&k, 0, &err))
		return sb_fail("detach", "%s", err.msg);
	if (sb_kernel_find(&k, scope.id, &id, &info)) {
		sb_kernel_close(&k);
		return sb_fail("detach", "cgroup %s is not a sandbox ('sandbox-bpf status' lists them)", scope.path);
	}
	rc = sb_kernel_remove(&k, id, true, &unpinned, &err);
	sb_kernel_close(&k);
	if (rc)
		return sb_fail("detach", "%s", err.msg);
	record_detach(&info);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "sandbox", id);
		cJSON_AddStringToObject(o, "cgroup", scope.path);
		cJSON_AddBoolToObject(o, "unpinned", unpinned);
		sb_print_json_line(stdout, o);
	} else {
		printf("detached sandbox %u (%s)%s\n", id, scope.path,
		       unpinned ? "; no sandbox left: programs and maps unpinned" : "");
	}
	return SB_EXIT_OK;
}
