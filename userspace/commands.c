#include "commands.h"

#include <stddef.h>

const struct sb_command sb_commands[] = {
	{ "classify", cmd_classify, "decide events (JSON lines on stdin) against a policy" },
	{ "policy", cmd_policy, "check, show, import or reload a policy" },
	{ "attach", cmd_attach, "confine a cgroup with BPF-LSM and stream its events" },
	{ "detach", cmd_detach, "remove a sandbox from a cgroup" },
	{ "run", cmd_run, "run a command in a new confined cgroup" },
	{ "status", cmd_status, "list sandboxes and their counters" },
	{ "doctor", cmd_doctor, "tell what this machine supports and which backend run would use" },
	{ "audit", cmd_audit, "verify, export, query or append to the tamper-evident audit chain" },
	{ "pending", cmd_pending, "list escalated requests waiting for a decision" },
	{ "approve", cmd_approve, "allow an escalated request (optionally remember it)" },
	{ "deny", cmd_deny, "deny an escalated request" },
	{ "watch", cmd_watch, "show escalated requests as they arrive and ask what to do" },
	{ NULL, NULL, NULL },
};
