/* The compiler's flat entries must reproduce the classifier: checked
 * entry by entry for path kinds, and differentially (random policies and
 * events) for the network LPM table and the command prefix table. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "classify.h"
#include "compile.h"
#include "policy.h"

static struct sb_policy *parse(const char *json)
{
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p" };
	struct sb_policy *p = NULL;
	struct sb_err err = { { 0 } };

	if (sb_policy_parse(json, strlen(json), &o, &p, &err))
		fail_msg("parse: %s", err.msg);
	return p;
}

static const struct sb_cpath *find_path(const struct sb_compiled *c, const char *pattern)
{
	size_t i;

	for (i = 0; i < c->npaths; i++)
		if (!strcmp(c->paths[i].pattern, pattern))
			return &c->paths[i];
	fail_msg("no compiled entry for %s", pattern);
	return NULL;
}

static void test_path_kinds(void **state)
{
	struct sb_policy *p = parse("{\"version\":1,\"write\":{\"allow\":[\"./**\",\"~/.bashrc\",\"**/.env\","
				    "\"**/node_modules/**\",\"**/*.pem\",\"./build/*.o\",\"./src/**/*.c\",\"/\",\"/**\","
				    "\"./a?c\"]}}");
	struct sb_compiled *c;
	struct sb_err err = { { 0 } };
	const struct sb_cpath *e;

	(void)state;
	assert_int_equal(sb_policy_compile(p, &c, &err), 0);
	e = find_path(c, "/p/**");
	assert_int_equal(e->kind, SB_CPATH_SUBTREE);
	assert_string_equal(e->path, "/p");
	e = find_path(c, "/home/u/.bashrc");
	assert_int_equal(e->kind, SB_CPATH_EXACT);
	assert_string_equal(e->path, "/home/u/.bashrc");
	e = find_path(c, "/**/.env");
	assert_int_equal(e->kind, SB_CPATH_NAME);
	assert_string_equal(e->name, ".env");
	e = find_path(c, "/**/node_modules/**");
	assert_int_equal(e->kind, SB_CPATH_NAME_SUBTREE);
	assert_string_equal(e->name, "node_modules");
	e = find_path(c, "/**/*.pem");
	assert_int_equal(e->kind, SB_CPATH_NAME_GLOB);
	assert_string_equal(e->glob_prefix, "");
	assert_string_equal(e->glob_suffix, ".pem");
	e = find_path(c, "/p/build/*.o");
	assert_int_equal(e->kind, SB_CPATH_CHILD_GLOB);
	assert_string_equal(e->path, "/p/build");
	assert_string_equal(e->glob_suffix, ".o");
	e = find_path(c, "/p/src/**/*.c");
	assert_int_equal(e->kind, SB_CPATH_GLOB);
	assert_string_equal(e->path, "/p/src");
	e = find_path(c, "/");
	assert_int_equal(e->kind, SB_CPATH_EXACT);
	assert_string_equal(e->path, "/");
	e = find_path(c, "/**");
	assert_int_equal(e->kind, SB_CPATH_SUBTREE);
	assert_string_equal(e->path, "/");
	e = find_path(c, "/p/a?c");
	assert_int_equal(e->kind, SB_CPATH_GLOB);
	/* protections are compiled too, marked */
	e = find_path(c, "/p/.sandbox/**");
	assert_true(e->is_protected);
	assert_int_equal(e->kind, SB_CPATH_SUBTREE);
	assert_int_equal(e->tier, SB_TIER_DENY);
	e = find_path(c, "/p/.claude/settings*.json");
	assert_true(e->is_protected);
	assert_int_equal(e->kind, SB_CPATH_CHILD_GLOB);
	assert_string_equal(e->glob_prefix, "settings");
	assert_string_equal(e->glob_suffix, ".json");
	sb_compiled_free(c);
	sb_policy_free(p);
}

static void test_shell_kinds(void **state)
{
	struct sb_policy *p = parse("{\"version\":1,\"shell\":{\"allow\":[\"git*\",\"git push*\",\"ls\",\"git * --force\","
				    "\"/usr/bin/x*\",\"a\\\\*b*\"]}}");
	struct sb_compiled *c;
	struct sb_err err = { { 0 } };

	(void)state;
	assert_int_equal(sb_policy_compile(p, &c, &err), 0);
	assert_int_equal(c->nshell, 6);
	assert_string_equal(c->shell[0].prefix, "git");
	assert_false(c->shell[0].argv_level);
	assert_false(c->shell[0].refine);
	assert_string_equal(c->shell[1].prefix, "git push");
	assert_true(c->shell[1].argv_level);
	assert_true(c->shell[2].exact);
	assert_true(c->shell[2].argv_level);
	assert_true(c->shell[3].refine);
	assert_string_equal(c->shell[3].prefix, "git ");
	assert_true(c->shell[4].fullpath);
	assert_string_equal(c->shell[5].prefix, "a*b");
	assert_false(c->shell[5].refine);
	sb_compiled_free(c);
	sb_policy_free(p);
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffffff;
}

static const char *const tiers[] = { "allow", "observe", "escalate", "deny" };

/* Appends the four tier lists (entries already quoted and comma-joined)
 * to json and closes it. The tiers are emitted in an order that changes
 * with round, so ties are never resolved by rule order by accident. */
#define LIST_LEN 8192

static void finish_policy(char *json, size_t len, char lists[][LIST_LEN], int round)
{
	int i, k = 0;

	for (i = 0; i < 4; i++) {
		int t = (i + round) % 4;

		if (!lists[t][0])
			continue;
		snprintf(json + strlen(json), len - strlen(json), "%s\"%s\":[%s]", k++ ? "," : "", tiers[t],
			 lists[t]);
	}
	strncat(json, "}}", len - strlen(json) - 1);
}

/* Appends one quoted entry to a comma-separated list. */
static void add_entry(char *list, size_t len, const char *entry)
{
	snprintf(list + strlen(list), len - strlen(list), "%s\"%s\"", list[0] ? "," : "", entry);
}

/* Random address/port rules; then for many addresses, the compiled LPM +
 * port segments must give the classifier's tier. */
static void test_net_differential(void **state)
{
	unsigned seed = 12345;
	int round;

	(void)state;
	for (round = 0; round < 60; round++) {
		char json[16384] = "{\"version\":1,\"network\":{";
		char lists[4][LIST_LEN] = { "", "", "", "" };
		struct sb_policy *p;
		struct sb_compiled *c;
		struct sb_err err = { { 0 } };
		int nrules = 1 + (int)(rnd(&seed) % 14), i, t;

		for (i = 0; i < nrules; i++) {
			char e[96], port[32] = "";
			int pl = (int)(rnd(&seed) % 4);
			unsigned a = 10u << 24 | (rnd(&seed) % 4) << 16 | (rnd(&seed) % 4) << 8 | (rnd(&seed) % 4);
			int prefix = pl == 0 ? 8 : pl == 1 ? 16 : pl == 2 ? 24 : 32;
			unsigned mask = prefix == 32 ? 0xffffffffu : ~((1u << (32 - prefix)) - 1);
			int pk = (int)(rnd(&seed) % 3);

			a &= mask;
			if (pk == 1)
				snprintf(port, sizeof(port), ":%u", 1 + rnd(&seed) % 5);
			else if (pk == 2) {
				unsigned lo = 1 + rnd(&seed) % 5;

				snprintf(port, sizeof(port), ":%u-%u", lo, lo + rnd(&seed) % 3);
			}
			if (rnd(&seed) % 10 == 0)
				snprintf(e, sizeof(e), "*%s", port[0] ? port : ":*");
			else
				snprintf(e, sizeof(e), "%u.%u.%u.%u/%d%s", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255,
					 prefix, port);
			t = (int)(rnd(&seed) % 4);
			add_entry(lists[t], sizeof(lists[t]), e);
		}
		finish_policy(json, sizeof(json), lists, round);
		p = parse(json);
		assert_int_equal(sb_policy_compile(p, &c, &err), 0);
		for (i = 0; i < 400; i++) {
			struct sb_event ev = { .kind = SB_EV_CONNECT };
			struct sb_decision d;
			unsigned a = 10u << 24 | (rnd(&seed) % 4) << 16 | (rnd(&seed) % 4) << 8 | (rnd(&seed) % 4);
			uint8_t addr[16] = { 0 };
			long ri;
			enum sb_tier kt;

			if (rnd(&seed) % 8 == 0)
				a = 11u << 24 | 7;
			ev.dst.has_addr = true;
			ev.dst.family = AF_INET;
			addr[0] = (uint8_t)(a >> 24);
			addr[1] = (uint8_t)(a >> 16);
			addr[2] = (uint8_t)(a >> 8);
			addr[3] = (uint8_t)a;
			memcpy(ev.dst.addr, addr, 16);
			ev.dst.port = (uint16_t)(1 + rnd(&seed) % 9);
			assert_int_equal(sb_classify(p, NULL, &ev, &d, &err), 0);
			kt = sb_compiled_net_decide(c, AF_INET, addr, ev.dst.port, &ri);
			if (kt != d.tier)
				fail_msg("round %d policy %s: %u.%u.%u.%u:%u classifier %s (%s) compiled %s (rule %ld)", round,
					 json, addr[0], addr[1], addr[2], addr[3], ev.dst.port, sb_tier_name(d.tier), d.rule,
					 sb_tier_name(kt), ri);
		}
		sb_compiled_free(c);
		sb_policy_free(p);
	}
}

/* Prefix ("X*") and exact command rules: the compiled longest-prefix
 * table gives the classifier's tier for argv without path. */
static void test_shell_differential(void **state)
{
	static const char *const words[] = { "git", "push", "pull", "ls", "-l", "x", "gi", "origin" };
	unsigned seed = 777;
	int round;

	(void)state;
	for (round = 0; round < 80; round++) {
		char json[8192] = "{\"version\":1,\"shell\":{";
		char lists[4][LIST_LEN] = { "", "", "", "" };
		struct sb_policy *p;
		struct sb_compiled *c;
		struct sb_err err = { { 0 } };
		int n = 1 + (int)(rnd(&seed) % 10), i, t;

		for (i = 0; i < n; i++) {
			char pat[128] = "";
			int nw = 1 + (int)(rnd(&seed) % 3), w;

			for (w = 0; w < nw; w++) {
				const char *word = words[rnd(&seed) % 8];

				snprintf(pat + strlen(pat), sizeof(pat) - strlen(pat), "%s%s", w ? " " : "", word);
			}
			if (rnd(&seed) % 3)
				strcat(pat, rnd(&seed) % 2 ? "*" : " *");
			t = (int)(rnd(&seed) % 4);
			add_entry(lists[t], sizeof(lists[t]), pat);
		}
		finish_policy(json, sizeof(json), lists, round);
		p = parse(json);
		assert_int_equal(sb_policy_compile(p, &c, &err), 0);
		for (i = 0; i < 300; i++) {
			const char *argv[4];
			char line[256] = "";
			int argc = 1 + (int)(rnd(&seed) % 4), a;
			struct sb_event ev = { .kind = SB_EV_EXEC };
			struct sb_decision d;
			bool refine;
			long ri;
			enum sb_tier kt;

			for (a = 0; a < argc; a++) {
				argv[a] = words[rnd(&seed) % 8];
				snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", a ? " " : "", argv[a]);
			}
			ev.argv = argv;
			ev.argc = (size_t)argc;
			assert_int_equal(sb_classify(p, NULL, &ev, &d, &err), 0);
			kt = sb_compiled_shell_decide(c, line, &refine, &ri);
			assert_false(refine);
			if (kt != d.tier)
				fail_msg("policy %s: '%s' classifier %s (%s) compiled %s", json, line, sb_tier_name(d.tier),
					 d.rule, sb_tier_name(kt));
		}
		sb_compiled_free(c);
		sb_policy_free(p);
	}
}

static void test_net_mapped_and_hosts(void **state)
{
	struct sb_policy *p = parse("{\"version\":1,\"network\":{\"deny\":[\"::ffff:10.0.0.0/104\",\"evil.com\","
				    "\"*.evil.com:443\"],\"allow\":[\"[::1]:22\"]}}");
	struct sb_compiled *c;
	struct sb_err err = { { 0 } };
	uint8_t a4[16] = { 10, 9, 9, 9 }, a6[16] = { [15] = 1 };
	long ri;

	(void)state;
	assert_int_equal(sb_policy_compile(p, &c, &err), 0);
	/* a mapped rule is an IPv4 rule */
	assert_int_equal(sb_compiled_net_decide(c, AF_INET, a4, 80, &ri), SB_TIER_DENY);
	assert_int_equal(sb_compiled_net_decide(c, AF_INET6, a6, 22, &ri), SB_TIER_ALLOW);
	assert_int_equal(sb_compiled_net_decide(c, AF_INET6, a6, 23, &ri), SB_TIER_ESCALATE);
	assert_int_equal(c->nhosts, 2);
	assert_string_equal(c->hosts[0].host, "evil.com");
	assert_false(c->hosts[0].subdomains);
	assert_true(c->hosts[1].subdomains);
	assert_int_equal(c->hosts[1].port_lo, 443);
	sb_compiled_free(c);
	sb_policy_free(p);
}

static void test_too_many_port_segments(void **state)
{
	char json[8192] = "{\"version\":1,\"network\":{\"allow\":[";
	struct sb_policy *p;
	struct sb_compiled *c;
	struct sb_err err = { { 0 } };
	int i;

	(void)state;
	for (i = 0; i < 40; i++)
		snprintf(json + strlen(json), sizeof(json) - strlen(json), "%s\"10.0.0.0/8:%d\"", i ? "," : "",
			 1000 + 2 * i);
	strcat(json, "]}}");
	p = parse(json);
	assert_int_not_equal(sb_policy_compile(p, &c, &err), 0);
	assert_non_null(strstr(err.msg, "port ranges"));
	sb_policy_free(p);
}

static void test_default_policy_compiles(void **state)
{
	struct sb_policy *p;
	struct sb_compiled *c;
	struct sb_err err = { { 0 } };

	(void)state;
	assert_int_equal(sb_policy_load_default(&(struct sb_policy_opts){ .home_override = "/home/u",
									   .root_override = "/p" },
						&p, &err),
			 0);
	assert_int_equal(sb_policy_compile(p, &c, &err), 0);
	assert_true(c->npaths > 10);
	assert_true(c->nshell > 10);
	assert_true(c->nnet > 2);
	assert_string_equal(c->hash, p->hash);
	sb_compiled_free(c);
	sb_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_kinds),
		cmocka_unit_test(test_shell_kinds),
		cmocka_unit_test(test_net_differential),
		cmocka_unit_test(test_shell_differential),
		cmocka_unit_test(test_net_mapped_and_hosts),
		cmocka_unit_test(test_too_many_port_segments),
		cmocka_unit_test(test_default_policy_compiles),
	};

	return cmocka_run_group_tests_name("compile", tests, NULL, NULL);
}
