/* Table-driven classifier tests across the four triggers: precedence,
 * specificity ties, protections, path tricks, ~, basename rules, mapped
 * addresses, ports, subdomains and remembered decisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "classify.h"
#include "event_json.h"
#include "policy.h"

static const char *policy_json =
	"{\"version\":1,\"root\":\"/p\","
	"\"triggers\":{\"shell\":\"escalate\",\"write\":\"deny\",\"network\":\"escalate\",\"read\":\"allow\"},"
	"\"shell\":{\"allow\":[\"git status*\",\"ls*\",\"git*\",\"curl*\",\"whoami\"],"
	"  \"observe\":[\"make*\"],"
	"  \"escalate\":[\"git push*\",\"npm publish*\",\"curl*\",\"scp *\"],"
	"  \"deny\":[\"sudo*\",\"rm -rf /*\",\"/usr/local/bin/evil*\",\"git push --force*\"]},"
	"\"write\":{\"allow\":[\"./**\",\"/tmp/**\",\"~/.ssh/known_hosts\"],"
	"  \"observe\":[\"./logs/**\"],"
	"  \"escalate\":[\"./secrets/**\",\"**/.env\",\"./build/*.o\"],"
	"  \"deny\":[\"~/.bashrc\",\"./build/*.lock\",\"**/node_modules/**\",\"./secrets/public/**\"]},"
	"\"read\":{\"allow\":[\"~/.ssh/known_hosts\",\"~/.ssh/*.pub\"],"
	"  \"escalate\":[\"~/.ssh/**\",\"**/.env\",\"**/*.pem\"],"
	"  \"deny\":[\"~/.aws/credentials\"]},"
	"\"network\":{\"allow\":[\"registry.npmjs.org:443\",\"10.0.0.0/8\",\"[::1]:*\",\"*.corp.example.com\","
	"  \"192.168.1.0/24:22\",\"tie.example.com\"],"
	"  \"observe\":[\"example.org:80\"],"
	"  \"escalate\":[\"github.com\",\"*.a.corp.example.com\"],"
	"  \"deny\":[\"169.254.169.254\",\"10.66.0.0/16\",\"*:25\",\"evil.example.com\",\"[2001:db8::]/32\","
	"  \"tie.example.com\",\"10.7.0.0/16:8000-8999\"]}}";

struct ccase {
	const char *event;
	const char *decision;	/* expected tier, or "error" */
	const char *rule;	/* expected rule text (exact), NULL to skip */
};

static const struct ccase cases[] = {
	/* ---- shell: longest literal prefix wins, ties stricter ---- */
	{ "{\"kind\":\"exec\",\"path\":\"/usr/bin/git\",\"argv\":[\"git\",\"push\",\"origin\"],\"cwd\":\"/p\"}", "escalate", "git push*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"git\",\"status\"]}", "allow", "git status*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"git\",\"log\",\"-1\"]}", "allow", "git*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"gitk\"]}", "allow", "git*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"git\",\"push\",\"--force\",\"origin\"]}", "deny", "git push --force*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"/usr/bin/git\",\"push\"]}", "escalate", "git push*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"git\",\"push origin\"]}", "escalate", "git push*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"sudo\",\"ls\"]}", "deny", "sudo*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"sudoedit\",\"/etc/x\"]}", "deny", "sudo*" },
	/* argv[0] lies about the program: the executable's name counts too */
	{ "{\"kind\":\"exec\",\"path\":\"/usr/bin/sudo\",\"argv\":[\"ls\",\"-l\"]}", "deny", "sudo*" },
	{ "{\"kind\":\"exec\",\"path\":\"/bin/busybox\",\"argv\":[\"sudo\",\"id\"]}", "deny", "sudo*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"ls\",\"-la\"]}", "allow", "ls*" },
	{ "{\"kind\":\"exec\",\"path\":\"/usr/bin/ls\",\"argv\":[]}", "allow", "ls*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"python3\",\"x.py\"]}", "escalate", "default" },
	{ "{\"kind\":\"exec\",\"argv\":[\"make\",\"all\"]}", "observe", "make*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"rm\",\"-rf\",\"/\"]}", "deny", "rm -rf /*" },
	/* blank and empty words cannot split a pattern */
	{ "{\"kind\":\"exec\",\"argv\":[\"rm\",\"\",\"-rf\",\" \",\"/\"]}", "deny", "rm -rf /*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"rm\",\"-rf\",\"/home\"]}", "deny", "rm -rf /*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"rm\",\"-rf\",\"build\"]}", "escalate", "default" },
	/* full-path rules */
	{ "{\"kind\":\"exec\",\"path\":\"/usr/local/bin/evil\",\"argv\":[\"evil\",\"--x\"]}", "deny", "/usr/local/bin/evil*" },
	{ "{\"kind\":\"exec\",\"path\":\"./evil\",\"argv\":[\"evil\"],\"cwd\":\"/usr/local/bin\"}", "deny", "/usr/local/bin/evil*" },
	{ "{\"kind\":\"exec\",\"path\":\"/usr/local/bin/../bin/evil\",\"argv\":[\"evil\"]}", "deny", "/usr/local/bin/evil*" },
	{ "{\"kind\":\"exec\",\"argv\":[\"evil\"]}", "escalate", "default" },
	{ "{\"kind\":\"exec\",\"argv\":[\"npm\",\"publish\"]}", "escalate", "npm publish*" },
	/* the same pattern in two tiers: the stricter wins */
	{ "{\"kind\":\"exec\",\"argv\":[\"curl\",\"https://x\"]}", "escalate", "curl*" },
	/* exact patterns match the whole command line only */
	{ "{\"kind\":\"exec\",\"argv\":[\"whoami\"]}", "allow", "whoami" },
	{ "{\"kind\":\"exec\",\"argv\":[\"whoami\",\"--help\"]}", "escalate", "default" },
	{ "{\"kind\":\"exec\",\"argv\":[\"scp\",\"a\",\"b:\"]}", "escalate", "scp *" },
	{ "{\"kind\":\"exec\",\"argv\":[\"scp\"]}", "escalate", "default" },
	{ "{\"kind\":\"exec\"}", "error", NULL },
	{ "{\"kind\":\"exec\",\"path\":\"rel/x\",\"argv\":[\"x\"]}", "error", NULL },

	/* ---- write ---- */
	{ "{\"kind\":\"write\",\"path\":\"/p/a.c\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"a.c\",\"cwd\":\"/p/src\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"a.c\"}", "error", NULL },
	{ "{\"kind\":\"write\",\"path\":\"/p/secrets/key\"}", "escalate", "./secrets/**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/secrets\",\"op\":\"rmdir\"}", "escalate", "./secrets/**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/secrets/public/a\"}", "deny", "./secrets/public/**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/sub/.env\"}", "escalate", "**/.env" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.env\"}", "escalate", "**/.env" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.envrc\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/web/node_modules/x/y.js\"}", "deny", "**/node_modules/**" },
	{ "{\"kind\":\"write\",\"path\":\"/home/u/.bashrc\"}", "deny", "~/.bashrc" },
	{ "{\"kind\":\"write\",\"path\":\"/home/u/notes.txt\"}", "deny", "default" },
	{ "{\"kind\":\"write\",\"path\":\"/home/u/.ssh/known_hosts\"}", "allow", "~/.ssh/known_hosts" },
	{ "{\"kind\":\"write\",\"path\":\"/p/build/x.lock\"}", "deny", "./build/*.lock" },
	{ "{\"kind\":\"write\",\"path\":\"/p/build/x.o\"}", "escalate", "./build/*.o" },
	{ "{\"kind\":\"write\",\"path\":\"/p/build/sub/x.o\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/logs/app.log\"}", "observe", "./logs/**" },
	{ "{\"kind\":\"write\",\"path\":\"/tmp/x\"}", "allow", "/tmp/**" },
	{ "{\"kind\":\"write\",\"path\":\"/tmp/../etc/passwd\"}", "deny", "default" },
	{ "{\"kind\":\"write\",\"path\":\"/p/../../../etc/passwd\"}", "deny", "default" },
	{ "{\"kind\":\"write\",\"path\":\"/p\"}", "allow", "./**" },
	/* protections: always deny, whatever else matches */
	{ "{\"kind\":\"write\",\"path\":\"/p/.sandbox/policy.json\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.sandbox\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/x/../.sandbox/audit.db\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p//.sandbox///escalations/done/1.json\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/./.sandbox/./x\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"x\",\"cwd\":\"/p/.sandbox/tmp\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"../.sandbox/x\",\"cwd\":\"/p/src\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.git/hooks/pre-commit\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.git/hooks\",\"op\":\"mkdir\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.git/config\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.git\",\"op\":\"rename-from\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.git\",\"op\":\"open\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.claude\",\"op\":\"rmdir\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p\",\"op\":\"rename-from\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.claude/settings.json\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.claude/settings.local.json\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.claude/notes.json\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.mcp.json\",\"op\":\"rename-to\"}", "deny", "protected" },
	{ "{\"kind\":\"write\",\"path\":\"/p/sub/.mcp.json\"}", "allow", "./**" },
	{ "{\"kind\":\"write\",\"path\":\"/p/.cursor/mcp.json\",\"op\":\"symlink\"}", "deny", "protected" },

	/* ---- read ---- */
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/id_rsa\"}", "escalate", "~/.ssh/**" },
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/known_hosts\"}", "allow", "~/.ssh/known_hosts" },
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/id_rsa.pub\"}", "allow", "~/.ssh/*.pub" },
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/../.ssh/./id_ed25519\"}", "escalate", "~/.ssh/**" },
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.aws/credentials\"}", "deny", "~/.aws/credentials" },
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.aws/config\"}", "allow", "default" },
	{ "{\"kind\":\"read\",\"path\":\"/p/sub/.env\"}", "escalate", "**/.env" },
	{ "{\"kind\":\"read\",\"path\":\"/p/src/main.c\"}", "allow", "default" },
	{ "{\"kind\":\"read\",\"path\":\"/srv/tls/cert.pem\"}", "escalate", "**/*.pem" },
	{ "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/x.pem\"}", "escalate", "**/*.pem" },
	{ "{\"kind\":\"read\"}", "error", NULL },

	/* ---- network ---- */
	{ "{\"kind\":\"connect\",\"addr\":\"140.82.112.3\",\"port\":443,\"proto\":\"tcp\",\"host\":\"github.com\"}", "escalate", "github.com" },
	{ "{\"kind\":\"connect\",\"addr\":\"140.82.112.3\",\"port\":443}", "escalate", "default" },
	{ "{\"kind\":\"connect\",\"addr\":\"10.1.2.3\",\"port\":80}", "allow", "10.0.0.0/8" },
	{ "{\"kind\":\"connect\",\"addr\":\"10.66.1.1\",\"port\":80}", "deny", "10.66.0.0/16" },
	{ "{\"kind\":\"connect\",\"addr\":\"::ffff:10.66.1.1\",\"port\":80}", "deny", "10.66.0.0/16" },
	{ "{\"kind\":\"connect\",\"addr\":\"169.254.169.254\",\"port\":80}", "deny", "169.254.169.254" },
	{ "{\"kind\":\"connect\",\"addr\":\"::ffff:169.254.169.254\",\"port\":80,\"proto\":\"udp\"}", "deny", "169.254.169.254" },
	{ "{\"kind\":\"connect\",\"addr\":\"::ffff:a9fe:a9fe\",\"port\":80}", "deny", "169.254.169.254" },
	{ "{\"kind\":\"connect\",\"addr\":\"::1\",\"port\":8080}", "allow", "[::1]:*" },
	{ "{\"kind\":\"connect\",\"host\":\"registry.npmjs.org\",\"port\":443}", "allow", "registry.npmjs.org:443" },
	{ "{\"kind\":\"connect\",\"host\":\"REGISTRY.npmjs.org.\",\"port\":443}", "allow", "registry.npmjs.org:443" },
	{ "{\"kind\":\"connect\",\"host\":\"registry.npmjs.org\",\"port\":80}", "escalate", "default" },
	{ "{\"kind\":\"connect\",\"host\":\"a.corp.example.com\",\"port\":443}", "allow", "*.corp.example.com" },
	{ "{\"kind\":\"connect\",\"host\":\"x.a.corp.example.com\",\"port\":443}", "escalate", "*.a.corp.example.com" },
	{ "{\"kind\":\"connect\",\"host\":\"b.corp.example.com\",\"port\":443}", "allow", "*.corp.example.com" },
	{ "{\"kind\":\"connect\",\"host\":\"corp.example.com\",\"port\":443}", "escalate", "default" },
	{ "{\"kind\":\"connect\",\"host\":\"xcorp.example.com\",\"port\":443}", "escalate", "default" },
	{ "{\"kind\":\"connect\",\"addr\":\"1.2.3.4\",\"port\":25}", "deny", "*:25" },
	{ "{\"kind\":\"connect\",\"addr\":\"10.1.2.3\",\"port\":25}", "allow", "10.0.0.0/8" },
	{ "{\"kind\":\"connect\",\"addr\":\"10.7.1.1\",\"port\":8080}", "deny", "10.7.0.0/16:8000-8999" },
	{ "{\"kind\":\"connect\",\"addr\":\"10.7.1.1\",\"port\":9000}", "allow", "10.0.0.0/8" },
	{ "{\"kind\":\"connect\",\"host\":\"evil.example.com\",\"addr\":\"10.1.2.3\",\"port\":443}", "deny", "evil.example.com" },
	{ "{\"kind\":\"connect\",\"addr\":\"2001:db8::1\",\"port\":443}", "deny", "[2001:db8::]/32" },
	{ "{\"kind\":\"connect\",\"addr\":\"2001:db9::1\",\"port\":443}", "escalate", "default" },
	{ "{\"kind\":\"connect\",\"addr\":\"192.168.1.5\",\"port\":22}", "allow", "192.168.1.0/24:22" },
	{ "{\"kind\":\"connect\",\"addr\":\"192.168.1.5\",\"port\":23}", "escalate", "default" },
	{ "{\"kind\":\"connect\",\"host\":\"example.org\",\"port\":80}", "observe", "example.org:80" },
	{ "{\"kind\":\"connect\",\"host\":\"tie.example.com\",\"port\":80}", "deny", "tie.example.com" },
	{ "{\"kind\":\"connect\",\"port\":80}", "error", NULL },
	{ "{\"kind\":\"connect\",\"addr\":\"1.2.3.4\"}", "error", NULL },
	{ "{\"kind\":\"connect\",\"addr\":\"1.2.3\",\"port\":1}", "error", NULL },
	{ "{\"kind\":\"connect\",\"host\":\"bad host\",\"port\":1}", "error", NULL },
	{ "{\"kind\":\"teleport\"}", "error", NULL },
	{ "{\"kind\":\"write\",\"path\":\"/p/a\",\"bogus\":1}", "error", NULL },
	{ "{\"kind\":\"read\",\"path\":\"/p/a\",\"op\":\"unlink\"}", "error", NULL },
};

static struct sb_policy *load_test_policy(const char *json)
{
	struct sb_policy_opts o = { .home_override = "/home/u" };
	struct sb_policy *p = NULL;
	struct sb_err err = { { 0 } };

	if (sb_policy_parse(json, strlen(json), &o, &p, &err))
		fail_msg("policy did not parse: %s", err.msg);
	return p;
}

static int run_case(const struct sb_policy *p, const struct sb_memory *mem, const char *event,
		    struct sb_decision *d, struct sb_err *err)
{
	struct sb_event_json ev;
	int rc;

	rc = sb_event_from_json(event, strlen(event), &ev, err);
	if (rc)
		return rc;
	rc = sb_classify(p, mem, &ev.ev, d, err);
	sb_event_json_free(&ev);
	return rc;
}

static void test_table(void **state)
{
	struct sb_policy *p = load_test_policy(policy_json);
	size_t i, failures = 0;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sb_decision d;
		struct sb_err err = { { 0 } };
		int rc = run_case(p, NULL, cases[i].event, &d, &err);

		if (!strcmp(cases[i].decision, "error")) {
			if (rc == 0) {
				print_error("case %zu %s: expected an error, got %s (%s)\n", i, cases[i].event,
					    sb_tier_name(d.tier), d.rule);
				failures++;
			} else if (!err.msg[0]) {
				print_error("case %zu: error without a message\n", i);
				failures++;
			}
			continue;
		}
		if (rc) {
			print_error("case %zu %s: unexpected error: %s\n", i, cases[i].event, err.msg);
			failures++;
			continue;
		}
		if (strcmp(sb_tier_name(d.tier), cases[i].decision) ||
		    (cases[i].rule && strcmp(d.rule, cases[i].rule))) {
			print_error("case %zu %s: expected %s/%s, got %s/%s (%s)\n", i, cases[i].event,
				    cases[i].decision, cases[i].rule ? cases[i].rule : "*", sb_tier_name(d.tier),
				    d.rule, d.reason);
			failures++;
		}
		if (!d.reason[0]) {
			print_error("case %zu: empty reason\n", i);
			failures++;
		}
	}
	sb_policy_free(p);
	assert_int_equal(failures, 0);
	assert_true(sizeof(cases) / sizeof(cases[0]) >= 80);
}

struct mcase {
	enum sb_remember_scope scope;
	enum sb_trigger trigger;
	const char *value;
	const char *event;
	const char *decision;
	bool remembered;
};

static const struct mcase mcases[] = {
	{ SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "{\"kind\":\"exec\",\"argv\":[\"git\",\"push\",\"origin\"]}", "allow", true },
	{ SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "{\"kind\":\"exec\",\"argv\":[\"git\",\"push\"]}", "allow", true },
	{ SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "{\"kind\":\"exec\",\"argv\":[\"git\",\"pushx\"]}", "escalate", false },
	/* a memory never overrides a deny */
	{ SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "{\"kind\":\"exec\",\"argv\":[\"git\",\"push\",\"--force\"]}", "deny", false },
	{ SB_REM_COMMAND, SB_TRIG_SHELL, "sudo ls", "{\"kind\":\"exec\",\"argv\":[\"sudo\",\"ls\"]}", "deny", false },
	{ SB_REM_COMMAND, SB_TRIG_SHELL, "npm publish", "{\"kind\":\"exec\",\"argv\":[\"npm\",\"publish\"]}", "allow", true },
	{ SB_REM_COMMAND, SB_TRIG_SHELL, "npm  publish", "{\"kind\":\"exec\",\"argv\":[\"npm\",\"publish\"]}", "allow", true },
	{ SB_REM_COMMAND, SB_TRIG_SHELL, "npm publish", "{\"kind\":\"exec\",\"argv\":[\"npm\",\"publish\",\"--tag\"]}", "escalate", false },
	/* every name of the program must be covered: argv[0] cannot borrow a memory */
	{ SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "{\"kind\":\"exec\",\"path\":\"/usr/bin/curl\",\"argv\":[\"git\",\"push\"]}", "escalate", false },
	{ SB_REM_DIR, SB_TRIG_READ, "/home/u/.ssh", "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/id_rsa\"}", "allow", true },
	{ SB_REM_DIR, SB_TRIG_READ, "/home/u/.ssh", "{\"kind\":\"read\",\"path\":\"/home/u/.sshx/id_rsa\"}", "allow", false },
	{ SB_REM_DIR, SB_TRIG_READ, "/home/u/.ssh", "{\"kind\":\"write\",\"path\":\"/p/secrets/x\"}", "escalate", false },
	{ SB_REM_DIR, SB_TRIG_WRITE, "/p/secrets", "{\"kind\":\"write\",\"path\":\"/p/secrets/x\"}", "allow", true },
	{ SB_REM_DIR, SB_TRIG_WRITE, "/p/secrets", "{\"kind\":\"write\",\"path\":\"/p/secrets/public/x\"}", "deny", false },
	{ SB_REM_DIR, SB_TRIG_WRITE, "/p", "{\"kind\":\"write\",\"path\":\"/p/.sandbox/x\"}", "deny", false },
	{ SB_REM_DIR, SB_TRIG_READ, "/home/u/.aws", "{\"kind\":\"read\",\"path\":\"/home/u/.aws/credentials\"}", "deny", false },
	{ SB_REM_HOST, SB_TRIG_NETWORK, "github.com", "{\"kind\":\"connect\",\"host\":\"github.com\",\"port\":22}", "allow", true },
	{ SB_REM_HOST, SB_TRIG_NETWORK, "github.com:443", "{\"kind\":\"connect\",\"host\":\"github.com\",\"port\":22}", "escalate", false },
	{ SB_REM_HOST, SB_TRIG_NETWORK, "GitHub.com:443", "{\"kind\":\"connect\",\"host\":\"github.com\",\"port\":443}", "allow", true },
	{ SB_REM_HOST, SB_TRIG_NETWORK, "140.82.112.3", "{\"kind\":\"connect\",\"addr\":\"::ffff:140.82.112.3\",\"port\":443}", "allow", true },
	{ SB_REM_HOST, SB_TRIG_NETWORK, "169.254.169.254", "{\"kind\":\"connect\",\"addr\":\"169.254.169.254\",\"port\":80}", "deny", false },
	{ SB_REM_ONCE, SB_TRIG_WRITE, "write:open:/p/secrets/k", "{\"kind\":\"write\",\"path\":\"/p/secrets/k\"}", "allow", true },
	{ SB_REM_ONCE, SB_TRIG_WRITE, "write:open:/p/secrets/k", "{\"kind\":\"write\",\"path\":\"/p/secrets/k\",\"op\":\"unlink\"}", "escalate", false },
	{ SB_REM_ONCE, SB_TRIG_SHELL, "exec:git push origin", "{\"kind\":\"exec\",\"argv\":[\"git\",\"push\",\"origin\"]}", "allow", true },
	/* observe is not an escalation: memories leave it alone */
	{ SB_REM_PREFIX, SB_TRIG_SHELL, "make all", "{\"kind\":\"exec\",\"argv\":[\"make\",\"all\"]}", "observe", false },
};

static void test_memory(void **state)
{
	struct sb_policy *p = load_test_policy(policy_json);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mcases) / sizeof(mcases[0]); i++) {
		struct sb_memory m;
		struct sb_decision d;
		struct sb_err err = { { 0 } };

		sb_memory_init(&m);
		if (sb_memory_add(&m, mcases[i].scope, mcases[i].trigger, mcases[i].value, &err))
			fail_msg("memory case %zu: add failed: %s", i, err.msg);
		if (run_case(p, &m, mcases[i].event, &d, &err))
			fail_msg("memory case %zu: %s", i, err.msg);
		if (strcmp(sb_tier_name(d.tier), mcases[i].decision) || d.remembered != mcases[i].remembered)
			fail_msg("memory case %zu (%s %s) %s: expected %s remembered=%d, got %s remembered=%d (%s)", i,
				 sb_remember_scope_name(mcases[i].scope), mcases[i].value, mcases[i].event,
				 mcases[i].decision, mcases[i].remembered, sb_tier_name(d.tier), d.remembered, d.reason);
		if (d.remembered)
			assert_int_equal(d.memory_index, 0);
		sb_memory_free(&m);
	}
	sb_policy_free(p);
}

static void test_memory_validation(void **state)
{
	struct sb_memory m;
	struct sb_err err = { { 0 } };

	(void)state;
	sb_memory_init(&m);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "git", &err), 0);
	assert_non_null(strstr(err.msg, "two words"));
	assert_int_not_equal(sb_memory_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "  git   ", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_DIR, SB_TRIG_WRITE, "relative/dir", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_DIR, SB_TRIG_WRITE, "/", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_DIR, SB_TRIG_NETWORK, "/x", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "bad host", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "x.com:0", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "x.com:70000", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_HOST, SB_TRIG_SHELL, "x.com", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_COMMAND, SB_TRIG_WRITE, "ls", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_ONCE, SB_TRIG_WRITE, "", &err), 0);
	assert_int_not_equal(sb_memory_add(&m, SB_REM_COMMAND, SB_TRIG_SHELL, " \t ", &err), 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(sb_memory_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "[::1]:8080", &err), 0);
	assert_int_equal(m.items[0].port, 8080);
	assert_string_equal(m.items[0].value, "::1");
	assert_int_equal(sb_memory_add(&m, SB_REM_DIR, SB_TRIG_WRITE, "/a/b/../c/", &err), 0);
	assert_string_equal(m.items[1].value, "/a/c");
	sb_memory_remove(&m, 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.items[0].value, "/a/c");
	sb_memory_free(&m);
}

static void test_audit_mode(void **state)
{
	struct sb_policy *p = load_test_policy(
		"{\"version\":1,\"mode\":\"audit\",\"root\":\"/p\",\"write\":{\"deny\":[\"./x\"]}}");
	struct sb_decision d;
	struct sb_err err = { { 0 } };

	(void)state;
	assert_int_equal(run_case(p, NULL, "{\"kind\":\"write\",\"path\":\"/p/x\"}", &d, &err), 0);
	assert_int_equal(d.tier, SB_TIER_DENY);
	assert_false(d.enforced);
	/* without a triggers block: escalate commands, writes and network; allow reads */
	assert_int_equal(run_case(p, NULL, "{\"kind\":\"write\",\"path\":\"/p/y\"}", &d, &err), 0);
	assert_int_equal(d.tier, SB_TIER_ESCALATE);
	assert_int_equal(run_case(p, NULL, "{\"kind\":\"read\",\"path\":\"/p/y\"}", &d, &err), 0);
	assert_int_equal(d.tier, SB_TIER_ALLOW);
	sb_policy_free(p);
}

/* The embedded default allows writes under /tmp, and connecting to an
 * AF_UNIX socket is a write to its path: the sockets of a tmux server, an
 * X server and an ssh-agent there would let the agent act outside the
 * sandbox (docs/threat-model.md), so the default denies them. */
static void test_default_denies_session_sockets(void **state)
{
	static const struct { const char *path, *tier; } sock_cases[] = {
		{ "/tmp/tmux-1000/default", "deny" }, { "/tmp/.X11-unix/X0", "deny" },
		{ "/tmp/.ICE-unix/1234", "deny" },    { "/tmp/ssh-AbCd/agent.42", "deny" },
		{ "/tmp/build/out.o", "allow" },       { "/tmp/tmuxfile", "allow" },
	};
	struct sb_policy *p;
	struct sb_err err = { { 0 } };
	size_t i;

	(void)state;
	assert_int_equal(sb_policy_load_default(&(struct sb_policy_opts){ .home_override = "/home/u",
									   .root_override = "/p" },
						&p, &err),
			 0);
	for (i = 0; i < sizeof(sock_cases) / sizeof(sock_cases[0]); i++) {
		char ev[256];
		struct sb_decision d;

		snprintf(ev, sizeof(ev), "{\"kind\":\"write\",\"op\":\"connect-unix\",\"path\":\"%s\"}",
			 sock_cases[i].path);
		assert_int_equal(run_case(p, NULL, ev, &d, &err), 0);
		assert_string_equal(sb_tier_name(d.tier), sock_cases[i].tier);
	}
	sb_policy_free(p);
}

/* Protections cannot be removed or overridden by any policy rule, even an
 * exact allow of the protected file or a policy that tries to re-root. */
static void test_protections_cannot_be_overridden(void **state)
{
	struct sb_policy *p = load_test_policy(
		"{\"version\":1,\"root\":\"/p\",\"triggers\":{\"write\":\"allow\"},"
		"\"write\":{\"allow\":[\"./.sandbox/policy.json\",\"./.sandbox/**\",\"/**\",\"**\",\"./.git/hooks/pre-commit\","
		"\".mcp.json\"]}}");
	static const char *const targets[] = {
		"/p/.sandbox/policy.json", "/p/.sandbox/escalations/done/x.json", "/p/.git/hooks/pre-commit",
		"/p/.mcp.json", "/p/.claude/settings.json",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char ev[256];
		struct sb_decision d;
		struct sb_err err = { { 0 } };

		snprintf(ev, sizeof(ev), "{\"kind\":\"write\",\"path\":\"%s\"}", targets[i]);
		assert_int_equal(run_case(p, NULL, ev, &d, &err), 0);
		if (d.tier != SB_TIER_DENY || !d.is_protected)
			fail_msg("%s: expected protected deny, got %s (%s)", targets[i], sb_tier_name(d.tier), d.reason);
	}
	sb_policy_free(p);
}

static void test_event_key(void **state)
{
	struct sb_policy *p = load_test_policy(policy_json);
	struct sb_event_json ev;
	struct sb_err err = { { 0 } };
	char key[SB_EVENT_KEY_MAX];
	const char *e1 = "{\"kind\":\"write\",\"path\":\"x/../y\",\"cwd\":\"/p\",\"op\":\"create\"}";
	const char *e2 = "{\"kind\":\"connect\",\"addr\":\"::ffff:1.2.3.4\",\"port\":53,\"proto\":\"udp\"}";

	(void)state;
	assert_int_equal(sb_event_from_json(e1, strlen(e1), &ev, &err), 0);
	assert_int_equal(sb_event_key(p, &ev.ev, key, sizeof(key), &err), 0);
	assert_string_equal(key, "write:create:/p/y");
	sb_event_json_free(&ev);
	assert_int_equal(sb_event_from_json(e2, strlen(e2), &ev, &err), 0);
	assert_int_equal(sb_event_key(p, &ev.ev, key, sizeof(key), &err), 0);
	assert_string_equal(key, "connect:udp:1.2.3.4:53");
	sb_event_json_free(&ev);
	sb_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_memory_validation),
		cmocka_unit_test(test_audit_mode),
		cmocka_unit_test(test_protections_cannot_be_overridden),
		cmocka_unit_test(test_default_denies_session_sockets),
		cmocka_unit_test(test_event_key),
	};

	return cmocka_run_group_tests_name("classify", tests, NULL, NULL);
}
