#include "commands.h"

#include <stddef.h>

const struct sb_command sb_commands[] = {
	{ "classify", cmd_classify, "decide events (JSON lines on stdin) against a policy" },
	{ "policy", cmd_policy, "check, show or import a policy" },
	{ "audit", cmd_audit, "verify, export, query or append to the tamper-evident audit chain" },
	{ "doctor", cmd_doctor, "tell what this machine supports and which backend run would use" },
	{ NULL, NULL, NULL },
};
