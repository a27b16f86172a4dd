/* sandbox-bpf approve | deny: decide one request by id. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "approver.h"
#include "cli.h"
#include "commands.h"

static void usage(FILE *f, bool allow)
{
	if (allow)
		fprintf(f,
			"usage: sandbox-bpf approve [--folder DIR] ID [--remember SCOPE [--value V]]\n"
			"                           [--reason TEXT] [--reviewer NAME] [--json]\n"
			"\n"
			"Allows the escalated request ID (see 'sandbox-bpf pending').\n"
			"\n"
			"  --remember SCOPE  also allow the same kind of request from now on:\n"
			"                      once     this exact request, one more time\n"
			"                      command  this exact command line\n"
			"                      prefix   commands starting with the same words\n"
			"                               (default: the first two words)\n"
			"                      dir      writes/reads/programs under the directory\n"
			"                               (default: the directory of the path)\n"
			"                      host     connections to the host (default: its name,\n"
			"                               else its address; 'host:443' for one port)\n"
			"  --value V         what to remember instead of the default\n");
	else
		fprintf(f,
			"usage: sandbox-bpf deny [--folder DIR] ID [--reason TEXT] [--reviewer NAME] [--json]\n"
			"\n"
			"Denies the escalated request ID (see 'sandbox-bpf pending').\n"
			"\n");
	fprintf(f,
		"  --folder DIR      project folder (default: the current directory)\n"
		"  --reason TEXT     why; recorded with the decision and shown to the agent\n"
		"  --reviewer NAME   who decided (default: $SUDO_USER, else your user name)\n"
		"  --json            print the decision as one JSON line\n"
		"\n"
		"Exit status: 0 decided, 1 unknown or already decided ID or invalid value,\n"
		"2 usage error.\n");
}

static int decide_cmd(const char *cmd, bool allow, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'f' }, { "remember", required_argument, NULL, 'r' },
		{ "value", required_argument, NULL, 'v' },  { "reason", required_argument, NULL, 'R' },
		{ "reviewer", required_argument, NULL, 'u' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },	    { NULL, 0, NULL, 0 },
	};
	const char *folder = NULL, *remember = NULL, *value = NULL, *reason = NULL, *reviewer = NULL, *id;
	struct sb_queue_decision d;
	struct sb_err err = { { 0 } };
	struct sb_queue_item it;
	struct sb_queue *q;
	bool json = false;
	int c, rc;

	/* GNU getopt_long permutes, so options may follow the id. */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			folder = optarg;
			break;
		case 'r':
			if (!allow)
				return sb_usage_error(cmd, "a denial cannot be remembered (remembered decisions only allow)");
			remember = optarg;
			break;
		case 'v':
			if (!allow)
				return sb_usage_error(cmd, "--value goes with --remember, which only 'approve' has");
			value = optarg;
			break;
		case 'R':
			reason = optarg;
			break;
		case 'u':
			reviewer = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout, allow);
			return SB_EXIT_OK;
		default:
			return sb_usage_error(cmd, "invalid option");
		}
	}
	if (optind >= argc)
		return sb_usage_error(cmd, "which request? give its ID (see 'sandbox-bpf pending')");
	if (optind + 1 < argc)
		return sb_usage_error(cmd, "one request ID at a time (unexpected '%s')", argv[optind + 1]);
	id = argv[optind];
	if (value && !remember)
		return sb_usage_error(cmd, "--value needs --remember SCOPE");
	memset(&d, 0, sizeof(d));
	d.verdict = allow ? SB_QV_ALLOW : SB_QV_DENY;
	if (remember) {
		if (sb_remember_scope_parse(remember, &d.scope))
			return sb_usage_error(cmd, "--remember: unknown scope '%s' (once, command, prefix, dir or host)",
					      remember);
		d.remember = true;
		if (value && snprintf(d.remember_value, sizeof(d.remember_value), "%s", value) >=
				     (int)sizeof(d.remember_value))
			return sb_fail(cmd, "--value is too long");
	}
	if (reason && snprintf(d.reason, sizeof(d.reason), "%s", reason) >= (int)sizeof(d.reason))
		return sb_fail(cmd, "--reason is longer than %zu bytes", sizeof(d.reason) - 1);
	if (reviewer) {
		if (snprintf(d.reviewer, sizeof(d.reviewer), "%s", reviewer) >= (int)sizeof(d.reviewer) || !reviewer[0])
			return sb_fail(cmd, "--reviewer must be 1 to %d characters", SB_QUEUE_NAME_MAX);
	} else {
		sb_approver_reviewer(d.reviewer);
	}
	if (sb_queue_id_check(id, &err))
		return sb_fail(cmd, "%s", err.msg);
	if ((rc = sb_approver_open(cmd, folder, 0, &q)))
		return rc;
	rc = sb_queue_get(q, id, &it, &err);
	if (rc) {
		sb_queue_close(q);
		return sb_fail(cmd, "%s", err.msg);
	}
	if (it.state == SB_QS_DONE || it.state == SB_QS_APPLIED) {
		char when[SB_QUEUE_TIME_LEN];

		sb_queue_time_format(it.dec.decided_ms, when);
		rc = sb_fail(cmd, "request %s is already decided: %s by %s at %s%s (state: %s%s)", id,
			     it.dec.verdict == SB_QV_ALLOW ? "allowed" : "denied", it.dec.reviewer, when,
			     it.dec.timed_out ? " after a timeout" : "", sb_queue_state_name(it.state),
			     it.state == SB_QS_DONE ? ", waiting for the broker to apply it" : "");
		goto out;
	}
	if (it.state == SB_QS_CLAIMED && it.has_lease && !json)
		fprintf(stderr, "sandbox-bpf %s: note: %s was claimed by %s; deciding anyway\n", cmd, id,
			it.lease.owner);
	rc = sb_queue_decision_check(&it.req, &d, &err);
	if (rc) {
		rc = sb_fail(cmd, "%s: %s", id, err.msg);
		goto out;
	}
	d.decided_ms = sb_queue_now_ms();
	rc = sb_queue_decide(q, id, &d, &err);
	if (rc) {
		rc = sb_fail(cmd, "%s", err.msg);
		goto out;
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "id", id);
		cJSON_AddItemToObject(o, "decision", sb_queue_decision_to_json(&d));
		sb_print_json_line(stdout, o);
	} else {
		sb_approver_print_decided(stdout, &it.req, &d);
	}
	rc = SB_EXIT_OK;
out:
	sb_queue_item_free(&it);
	sb_queue_close(q);
	return rc;
}

int cmd_approve(int argc, char **argv)
{
	return decide_cmd("approve", true, argc, argv);
}

int cmd_deny(int argc, char **argv)
{
	return decide_cmd("deny", false, argc, argv);
}
