/* attach, detach, run, status and policy reload from the command line, on
 * the host: --help, usage errors, policy errors before the kernel is
 * touched, and the clear failure when BPF-LSM programs cannot be loaded
 * here (the development host refuses them). On a machine where they load,
 * the same tests check that the sandbox really is attached instead. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

struct run {
	int status;
	char out[65536];
};

static const char *bin(void)
{
	const char *b = getenv("SB_BIN");

	return b ? b : "build/sandbox-bpf";
}

/* stdout and stderr together. */
static void run(struct run *r, const char *args)
{
	char cmd[8192];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1 </dev/null", bin(), args);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(r->out, 1, sizeof(r->out) - 1, f);
	r->out[n] = '\0';
	r->status = pclose(f);
	r->status = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 255;
}

static void expect_in(const struct run *r, const char *needle)
{
	if (!strstr(r->out, needle))
		fail_msg("'%s' not in output:\n%s", needle, r->out);
}

/* The cgroup v2 mount point, or "" when there is none. */
static void cgroup2_root(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char root[1024], point[1024];
		const char *sep = strstr(line, " - cgroup2 ");

		if (!sep || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 || strcmp(root, "/"))
			continue;
		snprintf(out, len, "%s", point);
		break;
	}
	fclose(f);
}

static void test_help(void **state)
{
	static const char *const cmds[] = { "attach", "detach", "run", "status", "policy" };
	struct run r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char args[64];

		snprintf(args, sizeof(args), "%s --help", cmds[i]);
		run(&r, args);
		assert_int_equal(r.status, 0);
		expect_in(&r, "usage: sandbox-bpf");
	}
	run(&r, "policy --help");
	expect_in(&r, "policy reload --cgroup PATH");
	run(&r, "run --help");
	expect_in(&r, "125 when run itself failed");
}

static void test_usage_errors(void **state)
{
	struct run r;

	(void)state;
	run(&r, "attach");
	assert_int_equal(r.status, 2);
	expect_in(&r, "--cgroup PATH is required");
	run(&r, "attach --cgroup x --anon-exec sometimes");
	assert_int_equal(r.status, 2);
	run(&r, "detach");
	assert_int_equal(r.status, 2);
	expect_in(&r, "either --cgroup PATH or --all");
	run(&r, "run --policy x");
	assert_int_equal(r.status, 125);
	expect_in(&r, "missing CMD");
	run(&r, "policy reload");
	assert_int_equal(r.status, 2);
	expect_in(&r, "reload needs --cgroup PATH");
	run(&r, "policy check --cgroup x y");
	assert_int_equal(r.status, 2);
	run(&r, "status extra");
	assert_int_equal(r.status, 2);
}

static void test_status_and_detach_without_sandboxes(void **state)
{
	struct run r;

	(void)state;
	if (access("/sys/fs/bpf/sandbox-bpf/maps/sb_meta", F_OK) == 0)
		skip();	/* something is attached on this machine: not our business */
	run(&r, "status");
	assert_int_equal(r.status, 0);
	expect_in(&r, "no sandbox is attached");
	run(&r, "status --json");
	assert_int_equal(r.status, 0);
	expect_in(&r, "\"attached\":false");
	run(&r, "detach --cgroup /nonexistent-cgroup");
	assert_int_equal(r.status, 1);
	run(&r, "detach --all");
	assert_int_equal(r.status, 0);
	expect_in(&r, "nothing is attached");
}

/* A policy problem is reported before anything touches the kernel. */
static void test_policy_errors_first(void **state)
{
	char root[PATH_MAX], args[PATH_MAX + 128];
	struct run r;

	(void)state;
	cgroup2_root(root, sizeof(root));
	snprintf(args, sizeof(args), "attach --cgroup %s --policy /nonexistent/policy.json --no-stream",
		 root[0] ? root : "/sys/fs/cgroup");
	run(&r, args);
	assert_int_equal(r.status, 1);
	if (root[0])
		expect_in(&r, "/nonexistent/policy.json");
	run(&r, "attach --cgroup /nonexistent-cgroup-sbk --no-stream");
	assert_int_equal(r.status, 1);
	expect_in(&r, "does not exist");
}

/* The host refuses BPF-LSM: attach and run must say so and leave nothing
 * behind; where the programs load, attach must really attach. */
static void test_attach_and_run_on_this_kernel(void **state)
{
	char root[PATH_MAX], cg[PATH_MAX + 64], args[PATH_MAX * 2], parent[PATH_MAX + 64];
	struct run r;
	bool lsm_works;

	(void)state;
	cgroup2_root(root, sizeof(root));
	if (!root[0] || geteuid() != 0) {
		/* Not root or no cgroup v2: attach must still fail clearly. */
		run(&r, "attach --cgroup /sys/fs/cgroup --no-stream");
		assert_int_equal(r.status, 1);
		assert_true(strlen(r.out) > 20);
		return;
	}
	snprintf(cg, sizeof(cg), "%s/sbk-unit-%d", root, (int)getpid());
	assert_int_equal(mkdir(cg, 0755), 0);
	snprintf(args, sizeof(args), "attach --cgroup %s --no-stream", cg);
	run(&r, args);
	lsm_works = r.status == 0;
	if (!lsm_works) {
		assert_int_equal(r.status, 1);
		expect_in(&r, "sandbox-bpf doctor");
		expect_in(&r, "make vmtest");
		expect_in(&r, "nothing runs unconfined");
		assert_int_not_equal(access("/sys/fs/bpf/sandbox-bpf/maps/sb_meta", F_OK), 0);
	} else {
		/* BPF-LSM works here: the sandbox exists and detaches. */
		snprintf(args, sizeof(args), "status");
		run(&r, args);
		expect_in(&r, cg);
		snprintf(args, sizeof(args), "detach --cgroup %s", cg);
		run(&r, args);
		assert_int_equal(r.status, 0);
	}
	assert_int_equal(rmdir(cg), 0);

	/* run: 125 with the same explanation, and its cgroup is gone. */
	snprintf(parent, sizeof(parent), "%s/sbk-unit-parent-%d", root, (int)getpid());
	assert_int_equal(mkdir(parent, 0755), 0);
	snprintf(args, sizeof(args), "run --quiet --cgroup-parent %s -- true", parent);
	run(&r, args);
	if (!lsm_works) {
		assert_int_equal(r.status, 125);
		expect_in(&r, "sandbox-bpf doctor");
	} else {
		assert_int_equal(r.status, 0);
	}
	/* Only the parent itself may remain: rmdir fails if run left a child. */
	assert_int_equal(rmdir(parent), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_status_and_detach_without_sandboxes),
		cmocka_unit_test(test_policy_errors_first),
		cmocka_unit_test(test_attach_and_run_on_this_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
