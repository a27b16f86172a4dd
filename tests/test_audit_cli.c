/* sandbox-bpf audit ...: exit codes, messages and the whole loop through
 * the real binary ($SB_BIN, set by make test). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "audit_testutil.h"

struct run {
	int status;
	char out[16384], err[16384];
};

static void slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, cap - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* Runs the binary with args (NULL-terminated) and input on stdin. */
static void run(const struct audit_tmp *t, struct run *r, const char *input, ...)
{
	const char *bin = getenv("SB_BIN");
	char out[400], err[400], in[400];
	const char *argv[32];
	va_list ap;
	int n = 0;
	pid_t pid;

	argv[n++] = bin;
	va_start(ap, input);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/.out", t->dir);
	snprintf(err, sizeof(err), "%s/.err", t->dir);
	snprintf(in, sizeof(in), "%s/.in", t->dir);
	{
		FILE *f = fopen(in, "w");

		fputs(input ? input : "", f);
		fclose(f);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (chdir(t->dir) || !freopen(in, "r", stdin) || !freopen(out, "w", stdout) || !freopen(err, "w", stderr))
			_exit(127);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	assert_true(WIFEXITED(r->status));
	r->status = WEXITSTATUS(r->status);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
}

static int setup(void **state)
{
	struct audit_tmp *t;

	if (!getenv("SB_BIN"))
		return 0;
	t = calloc(1, sizeof(*t));
	audit_tmp_init(t);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	if (*state) {
		audit_tmp_free(*state);
		free(*state);
	}
	return 0;
}

#define NEED_BIN()                                             \
	do {                                                   \
		if (!*state) {                                 \
			print_message("SB_BIN is not set\n"); \
			skip();                                \
		}                                              \
	} while (0)

static void test_usage(void **state)
{
	struct audit_tmp *t;
	struct run r;

	NEED_BIN();
	t = *state;
	run(t, &r, NULL, "audit", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "verify"));
	run(t, &r, NULL, "audit", NULL);
	assert_int_equal(r.status, 2);
	run(t, &r, NULL, "audit", "frob", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "sandbox-bpf audit: unknown command"));
	{
		static const char *const subs[] = { "verify", "export", "query", "tail", "append", "seal" };
		size_t i;

		for (i = 0; i < 6; i++) {
			run(t, &r, NULL, "audit", subs[i], "--help", NULL);
			assert_int_equal(r.status, 0);
			assert_non_null(strstr(r.out, "usage: sandbox-bpf audit"));
			run(t, &r, NULL, "audit", subs[i], "--no-such-option", NULL);
			assert_int_equal(r.status, 2);
		}
	}
	run(t, &r, NULL, "audit", "export", NULL);	/* no --output */
	assert_int_equal(r.status, 2);
	run(t, &r, NULL, "audit", "query", "--since", "last tuesday", NULL);
	assert_int_equal(r.status, 2);
	run(t, &r, NULL, "audit", "verify", NULL);	/* no store */
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "no audit store"));
}

static void test_append_bad_line_writes_nothing(void **state)
{
	struct audit_tmp *t;
	struct stat st;
	struct run r;

	NEED_BIN();
	t = *state;
	run(t, &r,
	    "{\"kind\":\"ci_step\",\"step\":\"build\"}\n"
	    "\n"
	    "{\"kind\":\"ci_step\",\"ratio\":0.5}\n"
	    "{\"kind\":\"ci_step\"\n",
	    "audit", "append", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "line 3:"));
	assert_non_null(strstr(r.err, "line 4:"));
	assert_null(strstr(r.err, "line 1:"));
	assert_int_equal(stat(t->db, &st), -1);
}

static void test_loop(void **state)
{
	struct audit_tmp *t;
	struct run r;
	char pub[400];

	NEED_BIN();
	t = *state;
	run(t, &r,
	    "{\"kind\":\"decision\",\"sandbox\":\"ci\",\"trigger\":\"shell\",\"decision\":\"deny\",\"command\":\"git push\",\"pid\":7}\n"
	    "{\"kind\":\"verdict\",\"origin\":\"approver\",\"sandbox\":\"ci\",\"decision\":\"allow\",\"reviewer\":\"alice\"}\n"
	    "{\"step\":\"deploy\",\"path\":\"/srv/app\"}\n",
	    "audit", "append", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "appended 3 records (seq 1..3)"));

	run(t, &r, NULL, "audit", "verify", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "intact: 3 records"));
	assert_non_null(strstr(r.out, "sealed through seq 3"));

	run(t, &r, NULL, "audit", "query", "--command", "push", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"seq\":1"));
	assert_null(strstr(r.out, "\"seq\":2"));
	run(t, &r, NULL, "audit", "query", "--kind", "verdict", NULL);
	assert_non_null(strstr(r.out, "claimed_origin=approver"));
	assert_non_null(strstr(r.out, "reviewer=alice"));
	run(t, &r, NULL, "audit", "tail", "-n", "1", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "path=/srv/app"));
	assert_null(strstr(r.out, "git push"));
	run(t, &r, NULL, "audit", "seal", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "already sealed"));

	snprintf(pub, sizeof(pub), "%s/audit-ed25519.pub", t->keys);
	run(t, &r, NULL, "audit", "export", "--output", "x.jsonl.gz", NULL);
	assert_int_equal(r.status, 0);
	run(t, &r, NULL, "audit", "verify", "--file", "x.jsonl.gz", "--pubkey", pub, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "(pinned)"));
	run(t, &r, NULL, "audit", "verify", "--file", "x.jsonl.gz", "--pubkey",
	    "1111111111111111111111111111111111111111111111111111111111111111", "--json", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "\"problem\":\"key_mismatch\""));
	run(t, &r, NULL, "audit", "verify", "--pubkey", "nonsense", NULL);
	assert_int_equal(r.status, 2);

	audit_sql(t, "UPDATE records SET record = replace(record, 'alice', 'mallory') WHERE seq = 2");
	run(t, &r, NULL, "audit", "verify", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "FAILED at seq 2: edited"));
	/* The export taken before the edit still verifies: that is the
	 * point of keeping one elsewhere. */
	run(t, &r, NULL, "audit", "verify", "--file", "x.jsonl.gz", NULL);
	assert_int_equal(r.status, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append_bad_line_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop, setup, teardown),
	};

	return cmocka_run_group_tests_name("audit_cli", tests, NULL, NULL);
}
