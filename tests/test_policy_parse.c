/* Every policy validation error names where it is and what was expected;
 * nothing invalid is ever partly accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "policy.h"

struct bad {
	const char *json;
	const char *expect;	/* substring of the error message */
};

#define V "\"version\":1"
static const struct bad bad_policies[] = {
	{ "{\n  \"version\": 1,\n  \"mode\": enforce\n}", "t.json:3:11" },
	{ "{" V "} trailing", "t.json:1:" },
	{ "", "t.json:1:1" },
	{ "[1,2]", "expected a JSON object at the top level" },
	{ "\"x\"", "expected a JSON object" },
	{ "{}", "$.version: missing" },
	{ "{\"version\":2}", "$.version: expected 1" },
	{ "{\"version\":\"1\"}", "$.version: expected 1" },
	{ "{\"version\":1.5}", "$.version: expected 1" },
	{ "{" V ",\"mode\":\"strict\"}", "$.mode: expected \"enforce\" or \"audit\"" },
	{ "{" V ",\"mode\":1}", "$.mode" },
	{ "{" V ",\"root\":\"\"}", "$.root: expected a non-empty string" },
	{ "{" V ",\"root\":7}", "$.root" },
	{ "{" V ",\"root\":\"~bob/x\"}", "$.root" },
	{ "{" V ",\"escalation_timeout_seconds\":0}", "$.escalation_timeout_seconds" },
	{ "{" V ",\"escalation_timeout_seconds\":-5}", "$.escalation_timeout_seconds" },
	{ "{" V ",\"escalation_timeout_seconds\":1.5}", "$.escalation_timeout_seconds" },
	{ "{" V ",\"escalation_timeout_seconds\":86401}", "$.escalation_timeout_seconds" },
	{ "{" V ",\"escalation_timeout_seconds\":\"300\"}", "$.escalation_timeout_seconds" },
	{ "{" V ",\"user_namespaces\":\"maybe\"}", "$.user_namespaces" },
	{ "{" V ",\"shel\":{}}", "$.shel: unknown key" },
	{ "{" V ",\"Shell\":{}}", "$.Shell: unknown key" },
	{ "{" V ",\"version\":1}", "duplicate key \"version\"" },
	{ "{" V ",\"write\":{\"allow\":[],\"allow\":[\"x\"]}}", "$.write: duplicate key \"allow\"" },
	{ "{" V ",\"triggers\":[]}", "$.triggers: expected an object" },
	{ "{" V ",\"triggers\":{\"exec\":\"allow\"}}", "$.triggers.exec: unknown trigger" },
	{ "{" V ",\"triggers\":{\"shell\":\"block\"}}", "$.triggers.shell: expected" },
	{ "{" V ",\"triggers\":{\"shell\":3}}", "$.triggers.shell: expected" },
	{ "{" V ",\"shell\":[\"ls\"]}", "$.shell: expected an object" },
	{ "{" V ",\"shell\":{\"allowed\":[\"ls\"]}}", "$.shell.allowed: unknown key" },
	{ "{" V ",\"shell\":{\"allow\":\"ls\"}}", "$.shell.allow: expected an array of strings" },
	{ "{" V ",\"shell\":{\"allow\":[\"ls\",3]}}", "$.shell.allow[1]: expected a string" },
	{ "{" V ",\"shell\":{\"deny\":[\"   \"]}}", "$.shell.deny[0]: empty shell pattern" },
	{ "{" V ",\"shell\":{\"deny\":[\"./rel*\"]}}", NULL },
	{ "{" V ",\"shell\":{\"deny\":[\"/usr/*/../x*\"]}}", "ambiguous" },
	{ "{" V ",\"write\":{\"deny\":[\"\"]}}", "$.write.deny[0]: empty path pattern" },
	{ "{" V ",\"write\":{\"deny\":[\"~bob/.ssh\"]}}", "$.write.deny[0]" },
	{ "{" V ",\"read\":{\"deny\":[\"/a**b\"]}}", "$.read.deny[0]: '**' must be a whole path component" },
	{ "{" V ",\"read\":{\"deny\":[\"/a/*/../b\"]}}", "$.read.deny[0]" },
	{ "{" V ",\"read\":{\"escalate\":[null]}}", "$.read.escalate[0]: expected a string" },
	{ "{" V ",\"network\":{\"allow\":[\"1.2.3.4:99999\"]}}", "$.network.allow[0]: invalid port" },
	{ "{" V ",\"network\":{\"allow\":[\"1.2.3.4:0\"]}}", "invalid port" },
	{ "{" V ",\"network\":{\"allow\":[\"1.2.3.4:90-80\"]}}", "invalid port" },
	{ "{" V ",\"network\":{\"allow\":[\"host:\"]}}", "invalid port" },
	{ "{" V ",\"network\":{\"allow\":[\"host:http\"]}}", "invalid port" },
	{ "{" V ",\"network\":{\"allow\":[\":80\"]}}", "missing host" },
	{ "{" V ",\"network\":{\"allow\":[\"10.1.2.3/8\"]}}", "did you mean 10.0.0.0/8" },
	{ "{" V ",\"network\":{\"allow\":[\"1.2.3.4/33\"]}}", "invalid prefix length" },
	{ "{" V ",\"network\":{\"allow\":[\"1.2.3.4/x\"]}}", "invalid prefix length" },
	{ "{" V ",\"network\":{\"allow\":[\"[::1\"]}}", "missing ']'" },
	{ "{" V ",\"network\":{\"allow\":[\"[::1]x\"]}}", "expected ':port' after ']'" },
	{ "{" V ",\"network\":{\"allow\":[\"[1.2.3.4]:80\"]}}", "brackets are for IPv6" },
	{ "{" V ",\"network\":{\"allow\":[\"2001:db8::/129\"]}}", "invalid prefix length" },
	{ "{" V ",\"network\":{\"allow\":[\"2001:db8::1/32\"]}}", "host bits" },
	{ "{" V ",\"network\":{\"allow\":[\"2001:zz::1\"]}}", "not an IPv6 address" },
	{ "{" V ",\"network\":{\"allow\":[\"*.\"]}}", "not a valid domain" },
	{ "{" V ",\"network\":{\"allow\":[\"foo*.com\"]}}", "'*' is only allowed" },
	{ "{" V ",\"network\":{\"allow\":[\"bad_host!\"]}}", "not a valid host name" },
	{ "{" V ",\"network\":{\"allow\":[\"1.2.3\"]}}", "not a valid IPv4 address" },
	{ "{" V ",\"network\":{\"allow\":[\"a b\"]}}", "whitespace" },
	{ "{" V ",\"network\":{\"allow\":[\"\"]}}", "empty network entry" },
	{ "{" V ",\"network\":{\"allow\":[\"a..b\"]}}", "not a valid host name" },
};

static int parse_str(const char *json, size_t len, struct sb_policy **p, struct sb_err *err)
{
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p", .source_name = "t.json" };

	return sb_policy_parse(json, len, &o, p, err);
}

static void test_bad_policies(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_policies) / sizeof(bad_policies[0]); i++) {
		struct sb_policy *p = (struct sb_policy *)1;
		struct sb_err err = { { 0 } };
		int rc = parse_str(bad_policies[i].json, strlen(bad_policies[i].json), &p, &err);

		if (!bad_policies[i].expect) {
			/* relative executable paths resolve under root: valid */
			if (rc)
				fail_msg("case %zu %s: unexpected error %s", i, bad_policies[i].json, err.msg);
			sb_policy_free(p);
			continue;
		}
		if (rc == 0)
			fail_msg("case %zu %s: accepted an invalid policy", i, bad_policies[i].json);
		assert_null(p);
		if (!strstr(err.msg, bad_policies[i].expect))
			fail_msg("case %zu %s: error '%s' does not mention '%s'", i, bad_policies[i].json, err.msg,
				 bad_policies[i].expect);
		if (strncmp(err.msg, "t.json", 6))
			fail_msg("case %zu: error '%s' does not name the file", i, err.msg);
	}
}

static void test_nul_and_size(void **state)
{
	struct sb_policy *p;
	struct sb_err err = { { 0 } };
	char with_nul[] = "{\"version\":1}\0";
	char *big;

	(void)state;
	assert_int_not_equal(parse_str(with_nul, sizeof(with_nul) - 1, &p, &err), 0);
	assert_non_null(strstr(err.msg, "NUL byte"));
	big = malloc((5u << 20) + 1);
	assert_non_null(big);
	memset(big, ' ', 5u << 20);
	big[5u << 20] = '\0';
	assert_int_not_equal(parse_str(big, 5u << 20, &p, &err), 0);
	assert_non_null(strstr(err.msg, "larger than"));
	free(big);
}

static void test_deep_nesting_is_an_error_not_a_crash(void **state)
{
	size_t n = 100000, i;
	char *s = malloc(2 * n + 1);
	struct sb_policy *p;
	struct sb_err err = { { 0 } };

	(void)state;
	assert_non_null(s);
	for (i = 0; i < n; i++) {
		s[i] = '[';
		s[n + i] = ']';
	}
	s[2 * n] = '\0';
	assert_int_not_equal(parse_str(s, 2 * n, &p, &err), 0);
	free(s);
}

static void test_warnings_and_defaults(void **state)
{
	const char *j = "{\"version\":1,\"shell\":{\"allow\":[\"curl*\",\"ls*\"],\"deny\":[\"curl*\"]},"
			"\"write\":{\"allow\":[\"./a\",\"./a\"]}}";
	struct sb_policy *p;
	struct sb_err err = { { 0 } };

	(void)state;
	assert_int_equal(parse_str(j, strlen(j), &p, &err), 0);
	assert_int_equal(p->nwarnings, 2);
	assert_non_null(strstr(p->warnings[0], "curl*"));
	assert_non_null(strstr(p->warnings[0], "stricter"));
	assert_non_null(strstr(p->warnings[1], "repeats"));
	assert_int_equal(p->escalation_timeout, 300);
	assert_int_equal(p->mode, SB_MODE_ENFORCE);
	assert_string_equal(p->root, "/p");
	assert_string_equal(p->home, "/home/u");
	assert_int_equal(strlen(p->hash), 64);
	sb_policy_free(p);
}

/* The effective policy printed by `policy show` parses back to the same
 * policy (same hash). */
static void test_show_round_trip(void **state)
{
	struct sb_policy *p, *q;
	struct sb_err err = { { 0 } };
	cJSON *doc;
	char *text;

	(void)state;
	assert_int_equal(sb_policy_load_default(&(struct sb_policy_opts){ .home_override = "/home/u",
									   .root_override = "/p" },
						&p, &err),
			 0);
	doc = sb_policy_to_json(p, true);
	assert_non_null(cJSON_GetObjectItem(doc, "protected"));
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "policy"));
	assert_int_equal(parse_str(text, strlen(text), &q, &err), 0);
	assert_string_equal(p->hash, q->hash);
	assert_int_equal(p->nrules, q->nrules);
	free(text);
	cJSON_Delete(doc);
	sb_policy_free(q);
	sb_policy_free(p);
}

/* A relative root resolves against the project folder of the policy file:
 * the file's directory, or its parent when the file is in .sandbox/. */
static void test_root_relative_to_project(void **state)
{
	char dir[] = "/tmp/sbtest-XXXXXX", path[512];
	struct sb_policy *p;
	struct sb_err err = { { 0 } };
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.sandbox", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.sandbox/policy.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"version\":1,\"root\":\".\"}", f);
	fclose(f);
	assert_int_equal(sb_policy_load_file(path, &(struct sb_policy_opts){ .home_override = "/home/u" }, &p, &err),
			 0);
	assert_string_equal(p->root, dir);
	sb_policy_free(p);
	assert_int_not_equal(sb_policy_load_file("/nonexistent/policy.json", NULL, &p, &err), 0);
	assert_non_null(strstr(err.msg, "/nonexistent/policy.json"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/.sandbox", dir);
	rmdir(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_policies),
		cmocka_unit_test(test_nul_and_size),
		cmocka_unit_test(test_deep_nesting_is_an_error_not_a_crash),
		cmocka_unit_test(test_warnings_and_defaults),
		cmocka_unit_test(test_show_round_trip),
		cmocka_unit_test(test_root_relative_to_project),
	};

	return cmocka_run_group_tests_name("policy_parse", tests, NULL, NULL);
}
