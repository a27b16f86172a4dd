/* sandbox-bpf policy check|show|import-srt|reload */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "kernel/kpolicy.h"
#include "kernel/loader.h"
#include "policy.h"
#include "policy_internal.h"
#include "policy_load.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf policy check FILE [--srt] [--root DIR] [--home DIR] [--json]\n"
		"       sandbox-bpf policy show [FILE] [--srt-settings FILE] [--folder DIR] [--root DIR] [--home DIR]\n"
		"       sandbox-bpf policy import-srt FILE\n"
		"       sandbox-bpf policy reload --cgroup PATH [--policy FILE] [--folder DIR] [--home DIR] [--json]\n"
		"\n"
		"check       validate a policy; exit 0 when valid, 1 with the file, line and\n"
		"            column or the JSON path of the first problem\n"
		"show        print the effective policy: rules as written, root and home\n"
		"            resolved, the protections that are always added, its hash\n"
		"            (default: .sandbox/policy.json in the folder, else the embedded default)\n"
		"import-srt  print the sandbox-bpf policy equivalent to an Anthropic srt\n"
		"            settings file (warnings about unmapped settings go to stderr)\n"
		"reload      switch an attached sandbox to the policy atomically (the new\n"
		"            rules are complete before the old ones go); default: the\n"
		"            policy source it was attached with, re-read\n"
		"\n"
		"  --srt           (check) FILE is an srt settings file\n"
		"  --root DIR      project folder, overriding the policy's root\n"
		"  --home DIR      home directory used for ~ (default: $HOME)\n"
		"  --folder DIR    project folder (default: current directory)\n"
		"  --json          (check, reload) print the result as JSON\n"
		"  --cgroup PATH   (reload) the sandbox's cgroup\n"
		"  --policy FILE   (reload) the new policy file\n");
}

enum { OPT_SRT = 256, OPT_SRT_SETTINGS, OPT_ROOT, OPT_HOME, OPT_FOLDER, OPT_JSON, OPT_CGROUP, OPT_POLICY };

static const struct option opts[] = {
	{ "srt", no_argument, NULL, OPT_SRT },
	{ "srt-settings", required_argument, NULL, OPT_SRT_SETTINGS },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "home", required_argument, NULL, OPT_HOME },
	{ "folder", required_argument, NULL, OPT_FOLDER },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int policy_check(struct sb_policy_source *src, bool json)
{
	struct sb_err err = { { 0 } };
	struct sb_policy *p = NULL;
	const char *file = src->srt_file ? src->srt_file : src->policy_file;
	size_t i, nrules = 0;

	if (sb_policy_source_load(src, &p, &err)) {
		if (json) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "file", file);
			cJSON_AddBoolToObject(o, "valid", 0);
			cJSON_AddStringToObject(o, "error", err.msg);
			sb_print_json_line(stdout, o);
		} else {
			fprintf(stderr, "sandbox-bpf policy check: %s\n", err.msg);
		}
		return SB_EXIT_FAIL;
	}
	for (i = 0; i < p->nrules; i++)
		nrules += !p->rules[i].is_protected;
	if (json) {
		cJSON *o = cJSON_CreateObject(), *w;

		cJSON_AddStringToObject(o, "file", file);
		cJSON_AddBoolToObject(o, "valid", 1);
		cJSON_AddNumberToObject(o, "rules", (double)nrules);
		cJSON_AddStringToObject(o, "hash", p->hash);
		w = cJSON_AddArrayToObject(o, "warnings");
		for (i = 0; i < p->nwarnings; i++)
			cJSON_AddItemToArray(w, cJSON_CreateString(p->warnings[i]));
		sb_print_json_line(stdout, o);
	} else {
		printf("%s: valid policy, %zu rules, %s mode, hash %.16s\n", file, nrules,
		       p->mode == SB_MODE_AUDIT ? "audit" : "enforce", p->hash);
		for (i = 0; i < p->nwarnings; i++)
			printf("warning: %s\n", p->warnings[i]);
	}
	sb_policy_free(p);
	return SB_EXIT_OK;
}

static int policy_show(struct sb_policy_source *src)
{
	struct sb_err err = { { 0 } };
	struct sb_policy *p = NULL;
	cJSON *o;
	char *s;

	if (sb_policy_source_load(src, &p, &err))
		return sb_fail("policy show", "%s", err.msg);
	o = sb_policy_to_json(p, true);
	s = cJSON_Print(o);
	if (s)
		puts(s);
	free(s);
	cJSON_Delete(o);
	sb_policy_free(p);
	return SB_EXIT_OK;
}

static int policy_import_srt(const char *file, const struct sb_policy_opts *popts)
{
	struct sb_err err = { { 0 } };
	struct sb_policy *check = NULL;
	const cJSON *it;
	cJSON *conv;
	char *buf, *s;
	size_t len;

	if (sb_read_file(file, 4u << 20, &buf, &len, &err))
		return sb_fail("policy import-srt", "%s", err.msg);
	if (sb_srt_to_policy_json(buf, len, file, &conv, &err)) {
		free(buf);
		return sb_fail("policy import-srt", "%s", err.msg);
	}
	free(buf);
	/* Never print a policy that would not load. */
	if (sb_policy_load_srt(file, popts, &check, &err)) {
		cJSON_Delete(conv);
		return sb_fail("policy import-srt", "%s", err.msg);
	}
	sb_policy_free(check);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(conv, "warnings"))
		fprintf(stderr, "sandbox-bpf policy import-srt: warning: %s\n", it->valuestring);
	s = cJSON_Print(cJSON_GetObjectItemCaseSensitive(conv, "policy"));
	if (s)
		puts(s);
	free(s);
	cJSON_Delete(conv);
	return SB_EXIT_OK;
}

/* Reload of an attached sandbox: same policy source as at attach unless
 * --policy says otherwise. */
static int policy_reload(const char *cgroup, const char *file, const struct sb_policy_source *src, bool json)
{
	struct sb_err err = { { 0 } };
	struct sb_kpolicy_opts o = { 0 };
	struct sb_kpolicy kp;
	struct sb_kscope scope;
	struct sb_kernel k;
	struct sb_info info;
	uint32_t id;
	size_t i;
	int rc;

	if (sb_cgroup_resolve(cgroup, &scope, &err))
		return sb_fail("policy reload", "%s", err.msg);
	if (sb_kernel_open(&k, 0, &err))
		return sb_fail("policy reload", "%s", err.msg);
	if (sb_kernel_find(&k, scope.id, &id, &info)) {
		sb_kernel_close(&k);
		return sb_fail("policy reload", "cgroup %s is not a sandbox ('sandbox-bpf status' lists them)", scope.path);
	}
	o.policy_file = file ? file : (strcmp(info.policy_source, "<default>") ? info.policy_source : NULL);
	o.folder = src->folder ? src->folder : info.folder;
	o.home = src->opts.home_override;
	o.anon_exec = (uint8_t)(info.flags & 0xff);
	rc = sb_kpolicy_load(&o, &kp, &err);
	if (!rc) {
		rc = sb_kernel_reload(&k, id, kp.entries, kp.policy->hash, kp.source, &err);
		if (!rc)
			sb_kernel_info(&k, id, &info);
	}
	sb_kernel_close(&k);
	if (rc)
		return sb_fail("policy reload", "%s", err.msg);
	if (json) {
		cJSON *out = cJSON_CreateObject(), *notes;

		cJSON_AddNumberToObject(out, "sandbox", id);
		cJSON_AddStringToObject(out, "cgroup", scope.path);
		cJSON_AddStringToObject(out, "policy", kp.source);
		cJSON_AddStringToObject(out, "hash", kp.policy->hash);
		cJSON_AddNumberToObject(out, "generation", info.counter);
		notes = cJSON_AddArrayToObject(out, "notes");
		for (i = 0; i < kp.entries->nnotes; i++)
			cJSON_AddItemToArray(notes, cJSON_CreateString(kp.entries->notes[i]));
		sb_print_json_line(stdout, out);
	} else {
		printf("sandbox %u (%s): now enforcing %s, hash %.16s, generation %u\n", id, scope.path, kp.source,
		       kp.policy->hash, info.counter);
		for (i = 0; i < kp.entries->nnotes; i++)
			printf("note: %s\n", kp.entries->notes[i]);
	}
	sb_kpolicy_free(&kp);
	return SB_EXIT_OK;
}

int cmd_policy(int argc, char **argv)
{
	struct sb_policy_source src = { 0 };
	const char *sub, *file = NULL, *cgroup = NULL, *policy_opt = NULL;
	bool srt = false, json = false;
	char folder[4096];
	int c;

	if (argc < 2)
		return sb_usage_error("policy", "missing subcommand: check, show or import-srt");
	sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
		usage(stdout);
		return SB_EXIT_OK;
	}
	if (strcmp(sub, "check") && strcmp(sub, "show") && strcmp(sub, "import-srt") && strcmp(sub, "reload"))
		return sb_usage_error("policy", "unknown subcommand '%s': expected check, show, import-srt or reload",
				      sub);
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_SRT:
			srt = true;
			break;
		case OPT_SRT_SETTINGS:
			src.srt_file = optarg;
			break;
		case OPT_ROOT:
			src.opts.root_override = optarg;
			break;
		case OPT_HOME:
			src.opts.home_override = optarg;
			break;
		case OPT_FOLDER:
			src.folder = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_CGROUP:
			cgroup = optarg;
			break;
		case OPT_POLICY:
			policy_opt = optarg;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("policy", "invalid option");
		}
	}
	if (optind < argc)
		file = argv[optind++];
	if (optind < argc)
		return sb_usage_error("policy", "unexpected argument '%s'", argv[optind]);
	if (src.folder) {
		if (sb_resolve_folder(src.folder, folder, sizeof(folder)))
			return sb_fail("policy", "folder '%s' does not exist", src.folder);
		src.folder = folder;
	}

	if (!strcmp(sub, "reload")) {
		if (!cgroup)
			return sb_usage_error("policy", "reload needs --cgroup PATH");
		if (file)
			return sb_usage_error("policy", "reload takes the policy as --policy FILE");
		return policy_reload(cgroup, policy_opt, &src, json);
	}
	if (cgroup || policy_opt)
		return sb_usage_error("policy", "--cgroup and --policy belong to 'policy reload'");
	if (!strcmp(sub, "check")) {
		if (!file)
			return sb_usage_error("policy", "check needs a FILE");
		if (srt)
			src.srt_file = file;
		else
			src.policy_file = file;
		return policy_check(&src, json);
	}
	if (!strcmp(sub, "show")) {
		if (file && src.srt_file)
			return sb_usage_error("policy", "give either FILE or --srt-settings, not both");
		src.policy_file = file;
		return policy_show(&src);
	}
	if (!file)
		return sb_usage_error("policy", "import-srt needs a FILE");
	return policy_import_srt(file, &src.opts);
}
