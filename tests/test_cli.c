/* The command line as a user and a script see it: --help everywhere,
 * exit codes (0 ok, 1 bad input, 2 usage), one output line per input line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Runs "BIN args" through sh with stdin from `input` (may be NULL);
 * captures stdout, discards stderr unless with_stderr. */
static void run(struct run *r, const char *args, const char *input, int with_stderr)
{
	char cmd[8192], inpath[] = "/tmp/sbcli-XXXXXX";
	FILE *f;
	size_t n;
	int fd;

	fd = mkstemp(inpath);
	assert_true(fd >= 0);
	if (input)
		assert_int_equal(write(fd, input, strlen(input)), (ssize_t)strlen(input));
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s %s <%s %s", bin(), args, inpath, with_stderr ? "2>&1" : "2>/dev/null");
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(r->out, 1, sizeof(r->out) - 1, f);
	r->out[n] = '\0';
	r->status = pclose(f);
	r->status = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status);
	unlink(inpath);
}

static void test_help_for_every_command(void **state)
{
	struct run *top = malloc(sizeof(*top)), *r = malloc(sizeof(*r));
	char *line, *save = NULL;
	int ncmds = 0;
	bool in_cmds = false;

	(void)state;
	run(top, "--help", NULL, 0);
	assert_int_equal(top->status, 0);
	for (line = strtok_r(top->out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], args[128];

		if (!strncmp(line, "Commands:", 9)) {
			in_cmds = true;
			continue;
		}
		if (!in_cmds || strncmp(line, "  ", 2) || sscanf(line, " %63s", name) != 1)
			continue;
		snprintf(args, sizeof(args), "%s --help", name);
		run(r, args, NULL, 0);
		if (r->status != 0 || !strstr(r->out, "usage:"))
			fail_msg("'%s --help' exited %d without a usage text on stdout", name, r->status);
		ncmds++;
	}
	assert_true(ncmds >= 3);
	run(r, "--version", NULL, 0);
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->out, "sandbox-bpf "));
	run(r, "no-such-command", NULL, 0);
	assert_int_equal(r->status, 2);
	run(r, "", NULL, 0);
	assert_int_equal(r->status, 2);
	run(r, "classify --no-such-option", NULL, 0);
	assert_int_equal(r->status, 2);
	run(r, "classify extra-arg", NULL, 0);
	assert_int_equal(r->status, 2);
	free(top);
	free(r);
}

static void test_classify_lines(void **state)
{
	struct run *r = malloc(sizeof(*r));
	const char *in = "{\"kind\":\"exec\",\"argv\":[\"git\",\"push\"],\"id\":7}\n"
			 "not json\n"
			 "\n"
			 "{\"kind\":\"write\",\"path\":\"/p/.sandbox/x\",\"id\":\"w\"}\n"
			 "{\"kind\":\"write\",\"path\":\"relative\"}\n"
			 "{\"kind\":\"connect\",\"addr\":\"169.254.169.254\",\"port\":80}\n";
	char *l1, *l2, *l3, *l4, *l5, *save = NULL;

	(void)state;
	run(r, "classify --root /p --home /home/u", in, 0);
	assert_int_equal(r->status, 1); /* some lines were malformed */
	l1 = strtok_r(r->out, "\n", &save);
	l2 = strtok_r(NULL, "\n", &save);
	l3 = strtok_r(NULL, "\n", &save);
	l4 = strtok_r(NULL, "\n", &save);
	l5 = strtok_r(NULL, "\n", &save);
	assert_non_null(l5);
	assert_null(strtok_r(NULL, "\n", &save));
	assert_non_null(strstr(l1, "\"id\":7"));
	assert_non_null(strstr(l1, "\"decision\":\"escalate\""));
	assert_non_null(strstr(l1, "\"rule\":\"git push*\""));
	assert_non_null(strstr(l2, "\"error\""));
	assert_non_null(strstr(l3, "\"id\":\"w\""));
	assert_non_null(strstr(l3, "\"rule\":\"protected\""));
	assert_non_null(strstr(l4, "\"error\""));
	assert_non_null(strstr(l5, "\"decision\":\"deny\""));

	run(r, "classify --root /p --home /home/u", "{\"kind\":\"read\",\"path\":\"/etc/hosts\"}\n", 0);
	assert_int_equal(r->status, 0);
	run(r, "classify --policy /nonexistent.json", "", 1);
	assert_int_equal(r->status, 1);
	assert_non_null(strstr(r->out, "/nonexistent.json"));
	run(r, "classify --policy x --srt-settings y", "", 0);
	assert_int_equal(r->status, 2);
	free(r);
}

static void write_file(char *tmpl, const char *text)
{
	int fd = mkstemp(tmpl);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_policy_commands(void **state)
{
	struct run *r = malloc(sizeof(*r));
	char good[] = "/tmp/sbpol-XXXXXX", bad[] = "/tmp/sbpol-XXXXXX", srt[] = "/tmp/sbsrt-XXXXXX", args[256];

	(void)state;
	write_file(good, "{\"version\":1,\"shell\":{\"deny\":[\"sudo*\"]}}");
	write_file(bad, "{\"version\":1,\"shell\":{\"deny\":[\"sudo*\"]},\"typo\":1}");
	write_file(srt, "{\"network\":{\"allowedDomains\":[\"x.com\"],\"deniedDomains\":[]}}");

	snprintf(args, sizeof(args), "policy check %s", good);
	run(r, args, NULL, 0);
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->out, "valid policy, 1 rules"));
	snprintf(args, sizeof(args), "policy check --json %s", good);
	run(r, args, NULL, 0);
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->out, "\"valid\":true"));
	snprintf(args, sizeof(args), "policy check %s", bad);
	run(r, args, NULL, 1);
	assert_int_equal(r->status, 1);
	assert_non_null(strstr(r->out, "$.typo: unknown key"));
	snprintf(args, sizeof(args), "policy check --json %s", bad);
	run(r, args, NULL, 0);
	assert_int_equal(r->status, 1);
	assert_non_null(strstr(r->out, "\"valid\":false"));
	snprintf(args, sizeof(args), "policy show %s --root /p --home /home/u", good);
	run(r, args, NULL, 0);
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->out, "\"/p/.sandbox/**\""));
	snprintf(args, sizeof(args), "policy import-srt %s", srt);
	run(r, args, NULL, 0);
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->out, "\"x.com\""));
	snprintf(args, sizeof(args), "policy check --srt %s", srt);
	run(r, args, NULL, 0);
	assert_int_equal(r->status, 0);
	run(r, "policy frobnicate", NULL, 0);
	assert_int_equal(r->status, 2);
	run(r, "policy check", NULL, 0);
	assert_int_equal(r->status, 2);
	unlink(good);
	unlink(bad);
	unlink(srt);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_for_every_command),
		cmocka_unit_test(test_classify_lines),
		cmocka_unit_test(test_policy_commands),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
