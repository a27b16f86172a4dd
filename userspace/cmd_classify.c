/* sandbox-bpf classify: events as JSON lines on stdin, one decision per
 * line on stdout. A bad line gets an {"error": ...} line; the run goes on. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "cli.h"
#include "commands.h"
#include "event_json.h"
#include "policy_load.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf classify [--policy FILE | --srt-settings FILE] [--root DIR] [--home DIR]\n"
		"\n"
		"Reads events as JSON lines on stdin and prints one decision per line:\n"
		"  {\"kind\":\"exec\",\"path\":\"/usr/bin/git\",\"argv\":[\"git\",\"push\"],\"cwd\":\"/p\"}\n"
		"  {\"kind\":\"write\",\"path\":\"/p/a.c\",\"op\":\"open\"}\n"
		"  {\"kind\":\"read\",\"path\":\"/home/u/.ssh/id_rsa\"}\n"
		"  {\"kind\":\"connect\",\"addr\":\"140.82.112.3\",\"port\":443,\"proto\":\"tcp\",\"host\":\"github.com\"}\n"
		"->{\"decision\":\"escalate\",\"trigger\":\"shell\",\"rule\":\"git push*\",\"reason\":\"...\"}\n"
		"\n"
		"An optional \"id\" is echoed back. A malformed line gets {\"error\":\"...\"}.\n"
		"Exit status: 0 when every line was decided, 1 when some line was malformed\n"
		"or the policy is invalid, 2 on usage errors.\n"
		"\n"
		"  --policy FILE        policy file (default: .sandbox/policy.json if present,\n"
		"                       else the embedded default policy)\n"
		"  --srt-settings FILE  use an Anthropic srt settings file as the policy\n"
		"  --root DIR           project folder (overrides the policy's root)\n"
		"  --home DIR           the agent user's home for ~ (default: $HOME)\n");
}

int cmd_classify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' }, { "srt-settings", required_argument, NULL, 's' },
		{ "root", required_argument, NULL, 'r' },   { "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },	    { NULL, 0, NULL, 0 },
	};
	struct sb_policy_source src = { 0 };
	struct sb_policy *p = NULL;
	struct sb_err err = { { 0 } };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			src.policy_file = optarg;
			break;
		case 's':
			src.srt_file = optarg;
			break;
		case 'r':
			src.opts.root_override = optarg;
			break;
		case 'H':
			src.opts.home_override = optarg;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("classify", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("classify", "unexpected argument '%s' (events are read from stdin)", argv[optind]);
	if (src.policy_file && src.srt_file)
		return sb_usage_error("classify", "--policy and --srt-settings cannot be used together");
	if (sb_policy_source_load(&src, &p, &err))
		return sb_fail("classify", "%s", err.msg);

	while ((len = getline(&line, &cap, stdin)) >= 0) {
		struct sb_event_json ev;
		struct sb_decision d;
		cJSON *out;

		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (sb_event_from_json(line, (size_t)len, &ev, &err)) {
			out = cJSON_CreateObject();
			cJSON_AddStringToObject(out, "error", err.msg);
			sb_print_json_line(stdout, out);
			bad = 1;
			continue;
		}
		if (sb_classify(p, NULL, &ev.ev, &d, &err)) {
			out = cJSON_CreateObject();
			if (ev.id)
				cJSON_AddItemToObject(out, "id", cJSON_Duplicate(ev.id, 1));
			cJSON_AddStringToObject(out, "error", err.msg);
			bad = 1;
		} else {
			out = sb_decision_to_json(&d, ev.id);
		}
		sb_print_json_line(stdout, out);
		fflush(stdout);
		sb_event_json_free(&ev);
	}
	free(line);
	sb_policy_free(p);
	return bad ? SB_EXIT_FAIL : SB_EXIT_OK;
}
