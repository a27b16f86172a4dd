/* sandbox-bpf pending: the requests waiting for a human, oldest first. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "approver.h"
#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf pending [--folder DIR] [--json]\n"
		"\n"
		"Lists the escalated requests in DIR/.sandbox/escalations that wait for a\n"
		"decision (pending, or claimed by an approver who is looking at them), oldest\n"
		"first. Expired claims are returned to pending on the way. Malformed files\n"
		"are moved to quarantine/ and reported on stderr.\n"
		"\n"
		"  --folder DIR  project folder (default: the current directory)\n"
		"  --json        one JSON object per request and line:\n"
		"                {\"state\":\"pending\",\"age_seconds\":12,\"request\":{...},\"lease\":{...}}\n"
		"\n"
		"Decide with 'sandbox-bpf approve ID' or 'sandbox-bpf deny ID', or run\n"
		"'sandbox-bpf watch' to be asked about each one.\n");
}

static void table(const struct sb_queue_list *l, int64_t now)
{
	char what[4096], ewhat[44], rule[SB_RULE_NAME_MAX], erule[40], age[32];
	size_t i;

	printf("%-31s %-7s %-7s %-7s %-40s %-6s %-7s %s\n", "ID", "AGE", "STATE", "TRIGGER", "WHAT", "ORIGIN",
	       "PID", "RULE");
	for (i = 0; i < l->n; i++) {
		const struct sb_queue_request *r = &l->items[i].req;

		sb_queue_request_what(r, what, sizeof(what));
		sb_queue_escape(what, ewhat, sizeof(ewhat));
		snprintf(rule, sizeof(rule), "%s", r->rule);
		sb_queue_escape(rule, erule, sizeof(erule));
		sb_queue_format_age(now - r->created_ms, age, sizeof(age));
		printf("%-31s %-7s %-7s %-7s %-40s %-6s %-7d %s\n", r->id, age,
		       sb_queue_state_name(l->items[i].state), sb_trigger_name(r->trigger), ewhat,
		       sb_queue_origin_name(r->origin), r->pid, erule);
	}
}

int cmd_pending(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *folder = NULL;
	struct sb_err err = { { 0 } };
	struct sb_queue_list l;
	struct sb_queue *q;
	bool json = false;
	int64_t now;
	size_t i;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			folder = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("pending", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("pending", "unexpected argument '%s'", argv[optind]);
	if ((rc = sb_approver_open("pending", folder, 0, &q)))
		return rc;
	/* Best effort: a reader without write access still gets the list. */
	sb_queue_reclaim_stale(q, 0, NULL, NULL);
	if (sb_queue_list(q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED), &l, &err)) {
		sb_queue_close(q);
		return sb_fail("pending", "%s", err.msg);
	}
	now = sb_queue_now_ms();
	if (l.quarantined)
		fprintf(stderr, "sandbox-bpf pending: moved %zu malformed file(s) to %s/quarantine (see the .error notes)\n",
			l.quarantined, sb_queue_path(q));
	if (json) {
		for (i = 0; i < l.n; i++)
			sb_print_json_line(stdout, sb_approver_item_json(&l.items[i], now));
	} else if (l.n == 0) {
		printf("no pending requests in %s\n", sb_queue_path(q));
	} else {
		table(&l, now);
	}
	sb_queue_list_free(&l);
	sb_queue_close(q);
	return SB_EXIT_OK;
}
