/* Which remembered decisions become kernel rules: only where the new
 * allow rule can never beat anything but escalate (or allow). Checked
 * case by case, and differentially: for every memory found safe, the
 * classifier with the rules appended decides every probe event like the
 * classifier with the memory, or escalates it (the broker then answers
 * from the memory), never more permissively. */
#include "broker_test_util.h"

#include "broker/broker_krules.h"
#include "netpat.h"

struct kt {
	struct sb_policy *p;
	struct sb_compiled *c;
};

static void kt_load(struct kt *t, const char *json)
{
	struct sb_err err = { { 0 } };

	t->p = bt_policy(json);
	if (sb_policy_compile(t->p, &t->c, &err))
		fail_msg("compile: %s", err.msg);
}

static void kt_free(struct kt *t)
{
	sb_compiled_free(t->c);
	sb_policy_free(t->p);
}

static int check(struct kt *t, enum sb_remember_scope scope, enum sb_trigger trig, const char *value, char *why,
		 size_t len)
{
	struct sb_bmem m;
	struct sb_err err = { { 0 } };
	int rc;

	sb_bmem_init(&m);
	if (sb_bmem_add(&m, scope, trig, value, "", "", 0, NULL, &err))
		fail_msg("memory %s: %s", value, err.msg);
	rc = sb_krule_check(t->p, t->c, &m.e[0], why, len);
	sb_bmem_free(&m);
	return rc;
}

#define SAFE(t, sc, tr, v)                                                                  \
	do {                                                                                \
		char why_[256];                                                             \
		int rc_ = check(t, sc, tr, v, why_, sizeof(why_));                          \
		if (rc_ != 1)                                                               \
			fail_msg("%s '%s' should be kernel-safe: %s", #sc, v, why_);        \
	} while (0)
#define UNSAFE(t, sc, tr, v)                                                                \
	do {                                                                                \
		char why_[256];                                                             \
		int rc_ = check(t, sc, tr, v, why_, sizeof(why_));                          \
		if (rc_ != 0)                                                               \
			fail_msg("%s '%s' should not be kernel-safe", #sc, v);             \
		assert_true(why_[0] != '\0');                                               \
	} while (0)

static const char *base =
	"{\"version\": 1, \"root\": \"/p\", \"triggers\": {\"shell\": \"escalate\", \"write\": \"escalate\", "
	"\"network\": \"escalate\", \"read\": \"allow\"},";

static void test_shell(void **state)
{
	char json[2048];
	struct kt t;

	(void)state;
	snprintf(json, sizeof(json), "%s \"shell\": {\"escalate\": [\"git push*\"], \"allow\": [\"git status*\", \"ls\"],"
		 " \"deny\": [\"git push --force*\", \"sudo*\"], \"observe\": [\"make*\"]}}", base);
	kt_load(&t, json);
	SAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "git push");
	SAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "git push origin");	/* longer deny rules still win */
	SAFE(&t, SB_REM_COMMAND, SB_TRIG_SHELL, "git push origin main");
	SAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "npm install");		/* default escalate */
	UNSAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "sudo rm");		/* would beat 'sudo*' deny */
	UNSAFE(&t, SB_REM_COMMAND, SB_TRIG_SHELL, "sudo ls");
	UNSAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "make all");		/* would silence an observe */
	UNSAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "/usr/bin/git push");	/* a path */
	UNSAFE(&t, SB_REM_ONCE, SB_TRIG_SHELL, "exec:/usr/bin/git push");
	kt_free(&t);

	/* Default deny: only where a plain escalate/allow prefix covers all. */
	snprintf(json, sizeof(json),
		 "{\"version\": 1, \"root\": \"/p\", \"triggers\": {\"shell\": \"deny\"}, \"shell\": {\"escalate\": [\"git*\", \"cur?l*\"]}}");
	kt_load(&t, json);
	SAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "git push");
	UNSAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "npm install");	/* the default deny */
	UNSAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "curl http://x");	/* only a refined rule covers it */
	kt_free(&t);

	/* Full-path rules are matched on the executable: any shorter one counts. */
	snprintf(json, sizeof(json), "%s \"shell\": {\"escalate\": [\"git*\"], \"deny\": [\"/opt/*\"]}}", base);
	kt_load(&t, json);
	UNSAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "git push");
	SAFE(&t, SB_REM_PREFIX, SB_TRIG_SHELL, "g p");	/* shorter than '/opt/': a tie at most */
	kt_free(&t);
}

static void test_network(void **state)
{
	char json[2048];
	struct kt t;

	(void)state;
	snprintf(json, sizeof(json), "%s \"network\": {\"deny\": [\"10.0.0.0/8:22\", \"169.254.169.254\"],"
		 " \"allow\": [\"10.1.0.0/16:443\"], \"observe\": [\"192.168.0.0/16:8000-8100\"]}}", base);
	kt_load(&t, json);
	SAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "10.2.3.4:443");
	SAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "10.1.2.3:443");	/* already allowed: harmless */
	UNSAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "10.2.3.4");	/* every port: 22 is denied */
	UNSAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "10.2.3.4:22");
	UNSAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "192.168.1.1");	/* 8000-8100 observed */
	SAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "192.168.1.1:9000");
	SAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "8.8.8.8");
	SAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "[2001:db8::1]:443");
	UNSAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "example.com:443");	/* a name: the kernel sees addresses */
	kt_free(&t);
	/* An exact host-name rule is resolved to addresses at load. */
	snprintf(json, sizeof(json), "%s \"network\": {\"deny\": [\"evil.example\"]}}", base);
	kt_load(&t, json);
	UNSAFE(&t, SB_REM_HOST, SB_TRIG_NETWORK, "8.8.8.8:53");
	kt_free(&t);
}

static void test_dir(void **state)
{
	char json[2048];
	struct kt t;

	(void)state;
	snprintf(json, sizeof(json), "%s \"write\": {\"deny\": [\"~/.bashrc\", \"./secrets/**\", \"./build/keep/x\"],"
		 " \"escalate\": [\"./build/**\"]}, \"read\": {\"deny\": [\"**/.env\"]}}", base);
	kt_load(&t, json);
	SAFE(&t, SB_REM_DIR, SB_TRIG_WRITE, "/p/build");	/* build/keep/x is deeper: it still wins */
	SAFE(&t, SB_REM_DIR, SB_TRIG_WRITE, "/p/src");
	UNSAFE(&t, SB_REM_DIR, SB_TRIG_WRITE, "/p/secrets/sub");	/* the secrets rule is shallower */
	SAFE(&t, SB_REM_DIR, SB_TRIG_WRITE, "/p");		/* every deny under /p is deeper: they win */
	UNSAFE(&t, SB_REM_DIR, SB_TRIG_READ, "/p/src");		/* **\/.env may land anywhere: conservative */
	UNSAFE(&t, SB_REM_DIR, SB_TRIG_SHELL, "/opt/tools");	/* programs: the broker answers */
	kt_free(&t);
	/* Default deny for the trigger: never. */
	snprintf(json, sizeof(json), "{\"version\": 1, \"root\": \"/p\", \"triggers\": {\"write\": \"deny\"}, \"write\": {\"escalate\": [\"./a/**\"]}}");
	kt_load(&t, json);
	UNSAFE(&t, SB_REM_DIR, SB_TRIG_WRITE, "/p/a");
	kt_free(&t);
}

static void test_escape_and_rules(void **state)
{
	char out[64], json[1024];
	struct sb_bmem m;
	struct sb_krules k;
	struct sb_err err = { { 0 } };
	struct kt t;

	(void)state;
	assert_int_equal(sb_krule_escape("a*b?c[d]\\e", out, sizeof(out)), 0);
	assert_string_equal(out, "a\\*b\\?c\\[d]\\\\e");
	assert_int_equal(sb_krule_escape("abcdef", out, 4), -ENAMETOOLONG);
	snprintf(json, sizeof(json), "%s \"shell\": {\"escalate\": [\"git push*\"]}}", base);
	kt_load(&t, json);
	sb_bmem_init(&m);
	assert_int_equal(sb_bmem_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_bmem_add(&m, SB_REM_ONCE, SB_TRIG_SHELL, "exec:/usr/bin/git push", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_bmem_add(&m, SB_REM_COMMAND, SB_TRIG_SHELL, "echo a*b", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_bmem_add(&m, SB_REM_DIR, SB_TRIG_WRITE, "/p/out", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_bmem_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "10.0.0.1:443", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_krules_compute(t.p, t.c, &m, &k), 0);
	assert_int_equal(k.n, 5);
	assert_string_equal(k.r[0].text, "git push");
	assert_string_equal(k.r[1].text, "git push *");
	assert_string_equal(k.r[1].where, "remembered prefix 'git push'");
	assert_string_equal(k.r[2].text, "echo a\\*b");
	assert_string_equal(k.r[3].text, "/p/out/**");
	assert_int_equal(k.r[3].trigger, SB_TRIG_WRITE);
	assert_string_equal(k.r[4].text, "10.0.0.1:443");
	sb_krules_free(&k);
	sb_bmem_free(&m);
	kt_free(&t);
}

/* Differential: memory vs appended rules, over probe events. */
static enum sb_tier classify(const struct sb_policy *p, const struct sb_memory *mem, const struct sb_event *ev)
{
	struct sb_decision d;
	struct sb_err err = { { 0 } };

	if (sb_classify(p, mem, ev, &d, &err))
		fail_msg("classify: %s", err.msg);
	return d.tier;
}

static void exec_event(struct sb_event *ev, const char *line, char *buf, const char **argv, size_t *argc)
{
	char *save = NULL, *w;

	snprintf(buf, 512, "%s", line);
	*argc = 0;
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		argv[(*argc)++] = w;
	memset(ev, 0, sizeof(*ev));
	ev->kind = SB_EV_EXEC;
	ev->argv = argv;
	ev->argc = *argc;
	ev->cwd = "/p";
}

static void test_differential(void **state)
{
	static const char *const policies[] = {
		"\"shell\": {\"escalate\": [\"git push*\", \"npm*\"], \"allow\": [\"git status*\", \"ls\"],"
		" \"deny\": [\"git push --force*\", \"sudo*\", \"git push -f*\"], \"observe\": [\"git log*\"]}",
		"\"shell\": {\"escalate\": [\"git*\"], \"deny\": [\"git push origin main\", \"git p?sh --mirror*\"]}",
		"\"triggers\": {\"shell\": \"deny\"}, \"shell\": {\"escalate\": [\"git*\", \"npm i*\"], \"allow\": [\"npm install x\"]}",
	};
	static const char *const memories[] = {
		"git push", "git push origin", "git push origin main", "npm install", "npm i", "git log", "sudo rm",
		"git status", "git commit -m", "ls -la", "git p",
	};
	static const char *const probes[] = {
		"git push", "git push origin", "git push origin main", "git push --force", "git push -f x", "git pushy",
		"git push --mirror", "git psh --mirror", "git status", "git log -1", "sudo rm -rf /", "npm install",
		"npm install x", "npm i", "npm ix", "ls", "ls -la", "git commit -m x", "git p", "git p x", "git", "make",
	};
	size_t pi, mi, ei, safe = 0;

	(void)state;
	for (pi = 0; pi < sizeof(policies) / sizeof(policies[0]); pi++) {
		char json[2048];

		snprintf(json, sizeof(json), "{\"version\": 1, \"root\": \"/p\", %s}", policies[pi]);
		for (mi = 0; mi < sizeof(memories) / sizeof(memories[0]); mi++) {
			enum sb_remember_scope scopes[2] = { SB_REM_PREFIX, SB_REM_COMMAND };
			int si;

			for (si = 0; si < 2; si++) {
				struct sb_bmem m;
				struct sb_memory cm;
				struct sb_krules k;
				struct sb_err err = { { 0 } };
				struct kt t;
				size_t r;

				kt_load(&t, json);
				sb_bmem_init(&m);
				if (sb_bmem_add(&m, scopes[si], SB_TRIG_SHELL, memories[mi], "", "", 0, NULL, &err)) {
					kt_free(&t);
					continue;
				}
				assert_int_equal(sb_bmem_to_memory(&m, &cm, &err), 0);
				assert_int_equal(sb_krules_compute(t.p, t.c, &m, &k), 0);
				if (k.n == 0) {
					sb_memory_free(&cm);
					sb_bmem_free(&m);
					kt_free(&t);
					continue;	/* not safe: the broker answers */
				}
				safe++;
				{
					struct sb_policy *withrules = bt_policy(json);

					for (r = 0; r < k.n; r++)
						assert_int_equal(sb_policy_append_rule(withrules, k.r[r].trigger, k.r[r].tier,
										       k.r[r].text, k.r[r].where, &err),
								 0);
					for (ei = 0; ei < sizeof(probes) / sizeof(probes[0]); ei++) {
						struct sb_event ev;
						const char *argv[16];
						char buf[512];
						size_t argc;
						enum sb_tier a, b;

						exec_event(&ev, probes[ei], buf, argv, &argc);
						a = classify(t.p, &cm, &ev);
						b = classify(withrules, NULL, &ev);
						/* The rules may only be stricter where they
						 * escalate (the broker then answers from the
						 * memory); never more permissive. */
						if (b < a || (b != a && b != SB_TIER_ESCALATE))
							fail_msg("policy %zu, %s '%s', event '%s': memory says %s, kernel rules say %s",
								 pi, sb_remember_scope_name(scopes[si]), memories[mi], probes[ei],
								 sb_tier_name(a), sb_tier_name(b));
					}
					sb_policy_free(withrules);
				}
				sb_krules_free(&k);
				sb_memory_free(&cm);
				sb_bmem_free(&m);
				kt_free(&t);
			}
		}
	}
	assert_true(safe >= 10);	/* the comparison ran on enough kernel-safe memories */
}

/* The same for directories and addresses. */
static void test_differential_paths_hosts(void **state)
{
	static const char *const policies[] = {
		"\"write\": {\"escalate\": [\"./build/**\", \"./src/**\"], \"deny\": [\"./build/keep/**\", \"./src/gen/x\"],"
		" \"allow\": [\"./tmp/**\"]}, \"network\": {\"deny\": [\"10.0.0.0/8:22\"], \"observe\": [\"10.1.0.0/16\"]}",
		"\"write\": {\"escalate\": [\"./**\"], \"deny\": [\"./*/secret\", \"./a/b/c\"]}",
	};
	static const char *const dirs[] = { "/p/build", "/p/src", "/p/build/keep", "/p", "/p/a", "/p/a/b", "/p/tmp" };
	static const char *const paths[] = {
		"/p/build", "/p/build/x", "/p/build/keep/y", "/p/src/gen/x", "/p/src/gen/y", "/p/x/secret", "/p/a/secret",
		"/p/a/b/c", "/p/a/b/d", "/p/tmp/z", "/p/other", "/q/x",
	};
	static const char *const hosts[] = { "10.2.3.4", "10.2.3.4:443", "10.2.3.4:22", "10.1.2.3:443", "8.8.8.8" };
	static const char *const addrs[] = { "10.2.3.4", "10.1.2.3", "8.8.8.8" };
	static const int ports[] = { 22, 443, 8080 };
	size_t pi, mi, ei, j, safe = 0;

	(void)state;
	for (pi = 0; pi < sizeof(policies) / sizeof(policies[0]); pi++) {
		char json[2048];

		snprintf(json, sizeof(json),
			 "{\"version\": 1, \"root\": \"/p\", \"triggers\": {\"network\": \"escalate\"}, %s}",
			 policies[pi]);
		for (mi = 0; mi < sizeof(dirs) / sizeof(dirs[0]) + sizeof(hosts) / sizeof(hosts[0]); mi++) {
			bool isdir = mi < sizeof(dirs) / sizeof(dirs[0]);
			const char *v = isdir ? dirs[mi] : hosts[mi - sizeof(dirs) / sizeof(dirs[0])];
			struct sb_bmem m;
			struct sb_memory cm;
			struct sb_krules k;
			struct sb_err err = { { 0 } };
			struct sb_policy *withrules;
			struct kt t;
			size_t r;

			kt_load(&t, json);
			sb_bmem_init(&m);
			assert_int_equal(sb_bmem_add(&m, isdir ? SB_REM_DIR : SB_REM_HOST, isdir ? SB_TRIG_WRITE : SB_TRIG_NETWORK,
						     v, "", "", 0, NULL, &err),
					 0);
			assert_int_equal(sb_bmem_to_memory(&m, &cm, &err), 0);
			assert_int_equal(sb_krules_compute(t.p, t.c, &m, &k), 0);
			withrules = bt_policy(json);
			for (r = 0; r < k.n; r++)
				assert_int_equal(sb_policy_append_rule(withrules, k.r[r].trigger, k.r[r].tier, k.r[r].text,
								       k.r[r].where, &err),
						 0);
			safe += k.n > 0;
			for (ei = 0; k.n && ei < (isdir ? sizeof(paths) / sizeof(paths[0]) : 3 * 3); ei++) {
				struct sb_event ev = { 0 };
				enum sb_tier a, b;

				if (isdir) {
					ev.kind = SB_EV_WRITE;
					ev.op = SB_WOP_CREATE;
					ev.path = paths[ei];
				} else {
					ev.kind = SB_EV_CONNECT;
					assert_int_equal(sb_netaddr_parse(addrs[ei / 3], &ev.dst), 0);
					ev.dst.port = (uint16_t)ports[ei % 3];
				}
				a = classify(t.p, &cm, &ev);
				b = classify(withrules, NULL, &ev);
				if (b < a || (b != a && b != SB_TIER_ESCALATE))
					fail_msg("policy %zu, memory '%s', event %zu: memory says %s, kernel rules say %s", pi, v,
						 ei, sb_tier_name(a), sb_tier_name(b));
			}
			(void)j;
			sb_policy_free(withrules);
			sb_krules_free(&k);
			sb_memory_free(&cm);
			sb_bmem_free(&m);
			kt_free(&t);
		}
	}
	assert_true(safe >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shell),
		cmocka_unit_test(test_network),
		cmocka_unit_test(test_dir),
		cmocka_unit_test(test_escape_and_rules),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_differential_paths_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
