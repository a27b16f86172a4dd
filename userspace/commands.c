#include "commands.h"

#include <stddef.h>

const struct sb_command sb_commands[] = {
	{ "classify", cmd_classify, "decide events (JSON lines on stdin) against a policy" },
	{ "policy", cmd_policy, "check, show or import a policy" },
	{ "audit", cmd_audit, "verify, export, query or append to the tamper-evident audit chain" },
	{ "doctor", cmd_doctor, "tell what this machine supports and which backend run would use" },
	{ "pending", cmd_pending, "list escalated requests waiting for a decision" },
	{ "approve", cmd_approve, "allow an escalated request (optionally remember it)" },
	{ "deny", cmd_deny, "deny an escalated request" },
	{ "watch", cmd_watch, "show escalated requests as they arrive and ask what to do" },
	{ NULL, NULL, NULL },
};
