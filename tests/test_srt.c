/* Importing Anthropic srt settings keeps srt's meaning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "classify.h"
#include "event_json.h"
#include "policy.h"

static const char *srt =
	"{\"network\":{\"allowedDomains\":[\"github.com\",\"*.npmjs.org\",\"api.example.com:443\",\"[::1]:8080\"],"
	"\"deniedDomains\":[\"evil.example.com\"],\"allowLocalBinding\":true},"
	"\"filesystem\":{\"denyRead\":[\"~/.ssh\"],\"allowRead\":[\"~/.ssh/known_hosts\"],"
	"\"allowWrite\":[\".\",\"/tmp\"],\"denyWrite\":[\".env\",\"secrets/\"]},"
	"\"enableWeakerNestedSandbox\":false}";

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/sbsrt-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static enum sb_tier decide(const struct sb_policy *p, const char *event)
{
	struct sb_event_json ev;
	struct sb_decision d;
	struct sb_err err = { { 0 } };

	if (sb_event_from_json(event, strlen(event), &ev, &err) || sb_classify(p, NULL, &ev.ev, &d, &err))
		fail_msg("%s: %s", event, err.msg);
	sb_event_json_free(&ev);
	return d.tier;
}

static void test_import_semantics(void **state)
{
	char *path = write_tmp(srt);
	struct sb_policy *p;
	struct sb_err err = { { 0 } };
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p" };
	size_t i;
	bool warned = false;

	(void)state;
	assert_int_equal(sb_policy_load_srt(path, &o, &p, &err), 0);
	for (i = 0; i < p->nwarnings; i++)
		warned |= strstr(p->warnings[i], "allowLocalBinding") != NULL;
	assert_true(warned);
	assert_non_null(strstr(p->source, "srt:"));
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"host\":\"github.com\",\"port\":22}"), SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"host\":\"registry.npmjs.org\",\"port\":443}"),
			 SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"host\":\"npmjs.org\",\"port\":443}"), SB_TIER_ESCALATE);
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"host\":\"api.example.com\",\"port\":80}"),
			 SB_TIER_ESCALATE);
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"host\":\"evil.example.com\",\"port\":443}"),
			 SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"addr\":\"::1\",\"port\":8080}"), SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/id_rsa\"}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"read\",\"path\":\"/home/u/.ssh\"}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"read\",\"path\":\"/home/u/.ssh/known_hosts\"}"), SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"read\",\"path\":\"/etc/hosts\"}"), SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/src/a.c\"}"), SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/tmp/x\"}"), SB_TIER_ALLOW);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/.env\"}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/secrets/k\"}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/home/u/x\"}"), SB_TIER_DENY);
	/* srt's own mandatory protections come along */
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/.git/config\"}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/home/u/.bashrc\"}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/.vscode/settings.json\"}"), SB_TIER_DENY);
	/* and so do ours */
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/.sandbox/policy.json\"}"), SB_TIER_DENY);
	sb_policy_free(p);
	unlink(path);
	free(path);
}

static void test_strict_allowlist_and_git_config(void **state)
{
	char *path = write_tmp("{\"network\":{\"allowedDomains\":[],\"deniedDomains\":[],\"strictAllowlist\":true},"
			       "\"filesystem\":{\"denyRead\":[],\"allowWrite\":[\".\"],\"denyWrite\":[],"
			       "\"allowGitConfig\":true}}");
	struct sb_policy *p;
	struct sb_err err = { { 0 } };
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p" };

	(void)state;
	assert_int_equal(sb_policy_load_srt(path, &o, &p, &err), 0);
	assert_int_equal(decide(p, "{\"kind\":\"connect\",\"host\":\"github.com\",\"port\":443}"), SB_TIER_DENY);
	assert_int_equal(decide(p, "{\"kind\":\"write\",\"path\":\"/p/.git/config\"}"), SB_TIER_ALLOW);
	sb_policy_free(p);
	unlink(path);
	free(path);
}

static void test_import_errors(void **state)
{
	static const struct {
		const char *json;
		const char *expect;
	} bad[] = {
		{ "{\"network\":{\"allowDomains\":[\"x.com\"]}}", "$.network.allowDomains: unknown srt setting" },
		{ "{\"filesystem\":{\"denyReads\":[]}}", "$.filesystem.denyReads: unknown srt setting" },
		{ "{\"netwrk\":{}}", "$.netwrk: unknown srt setting" },
		{ "{\"filesystem\":{\"disabled\":true}}", "disabled" },
		{ "{\"network\":{\"allowedDomains\":\"x.com\"}}", "expected an array" },
		{ "{\"network\":{\"allowedDomains\":[\"\"]}}", "non-empty string" },
		{ "{\"network\":{\"allowedDomains\":[\"x.com:99999\"]}}", "invalid port" },
		{ "[]", "expected a JSON object" },
		{ "{", "not valid JSON" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *path = write_tmp(bad[i].json);
		struct sb_policy *p = NULL;
		struct sb_err err = { { 0 } };

		if (sb_policy_load_srt(path, NULL, &p, &err) == 0)
			fail_msg("%s was accepted", bad[i].json);
		assert_null(p);
		if (!strstr(err.msg, bad[i].expect))
			fail_msg("%s: error '%s' lacks '%s'", bad[i].json, err.msg, bad[i].expect);
		unlink(path);
		free(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_semantics),
		cmocka_unit_test(test_strict_allowlist_and_git_config),
		cmocka_unit_test(test_import_errors),
	};

	return cmocka_run_group_tests_name("srt", tests, NULL, NULL);
}
