/* Several processes appending at once never fork the chain, and a writer
 * killed at any point loses nothing it had acknowledged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "audit_testutil.h"

static bool slow(void)
{
	/* Under valgrind every child is instrumented too. */
	const char *v = getenv("SB_VALGRIND");

	return v && !strcmp(v, "1");
}

struct counter {
	int per_writer[16];
	int other;
};

static int count_writers(const cJSON *rec, void *arg)
{
	struct counter *c = arg;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(rec, "writer");

	if (cJSON_IsNumber(w) && w->valueint >= 0 && w->valueint < 16)
		c->per_writer[w->valueint]++;
	else
		c->other++;
	return 0;
}

static void writer(const char *dir, int id, int m)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	int i;

	if (sb_audit_open(dir, SB_AUDIT_CREATE, &a, &err)) {
		fprintf(stderr, "writer %d: %s\n", id, err.msg);
		_exit(2);
	}
	/* Seal often, so that seals race with appends too. */
	sb_audit_set_intervals(a, 7, 0, 60);
	for (i = 0; i < m; i++) {
		cJSON *r = audit_test_record("w", i);

		cJSON_AddNumberToObject(r, "writer", id);
		if (sb_audit_append(a, r, NULL, &err)) {
			fprintf(stderr, "writer %d: %s\n", id, err.msg);
			_exit(3);
		}
		cJSON_Delete(r);
	}
	if (sb_audit_close(a, &err)) {
		fprintf(stderr, "writer %d close: %s\n", id, err.msg);
		_exit(4);
	}
	_exit(0);
}

static void test_concurrent_writers(void **state)
{
	const int w = 6, m = slow() ? 15 : 150;
	struct audit_tmp t;
	struct sb_audit_report r;
	struct sb_audit_query q = { 0 };
	struct counter c = { { 0 }, 0 };
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	pid_t pids[16];
	int i, status;

	(void)state;
	audit_tmp_init(&t);
	/* All of them start on a folder with no store: creation races too. */
	for (i = 0; i < w; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			writer(t.dir, i, m);
	}
	for (i = 0; i < w; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(audit_verify(&t, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.records, (uint64_t)(w * m));
	assert_int_equal(r.sealed_seq, (uint64_t)(w * m));
	assert_true(r.seals >= (uint64_t)w);
	assert_int_equal(sb_audit_open(t.dir, SB_AUDIT_READONLY, &a, &err), 0);
	assert_int_equal(sb_audit_query_run(a, &q, count_writers, &c, &err), 0);
	sb_audit_close(a, &err);
	for (i = 0; i < w; i++)
		assert_int_equal(c.per_writer[i], m);
	assert_int_equal(c.other, 0);
	audit_tmp_free(&t);
}

/* The child appends in a loop and reports each acknowledged seq on a
 * pipe; it is killed with SIGKILL at a random moment, many times over. */
static void crash_child(const char *dir, int iter, int fd)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	uint64_t seq, ack[2];
	int n;

	if (sb_audit_open(dir, SB_AUDIT_CREATE, &a, &err))
		_exit(2);
	sb_audit_set_intervals(a, 5, 0, 60);
	for (n = 0;; n++) {
		cJSON *r = audit_test_record("crash", n);

		cJSON_AddNumberToObject(r, "iter", iter);
		if (sb_audit_append(a, r, &seq, &err))
			_exit(3);
		cJSON_Delete(r);
		ack[0] = seq;
		ack[1] = ((uint64_t)iter << 32) | (uint32_t)n;
		if (write(fd, ack, sizeof(ack)) != sizeof(ack))
			_exit(4);
	}
}

struct acked {
	uint64_t *seq, *tag;
	size_t n, cap;
};

static int check_acked(const cJSON *rec, void *arg)
{
	struct acked *ak = arg;
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(rec, "seq");
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(rec, "iter");
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(rec, "i");
	size_t k;

	for (k = 0; k < ak->n; k++) {
		if (ak->seq[k] != (uint64_t)s->valuedouble)
			continue;
		if (!cJSON_IsNumber(it) || !cJSON_IsNumber(i) ||
		    ak->tag[k] != (((uint64_t)it->valueint << 32) | (uint32_t)i->valueint))
			fail_msg("seq %llu holds another record than the one acknowledged", (unsigned long long)ak->seq[k]);
		ak->seq[k] = 0;	/* found */
	}
	return 0;
}

static void test_crash_mid_write(void **state)
{
	const int iters = slow() ? 4 : 40;
	struct audit_tmp t;
	struct sb_audit_report r;
	struct sb_audit_query q = { 0 };
	struct sb_err err = { { 0 } };
	struct acked ak = { 0 };
	struct sb_audit *a;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int iter, status;
	size_t k;

	(void)state;
	audit_tmp_init(&t);
	srand(seed);
	print_message("crash test seed %u\n", seed);
	for (iter = 0; iter < iters; iter++) {
		uint64_t ack[2];
		int fds[2];
		pid_t pid;

		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			crash_child(t.dir, iter, fds[1]);
		}
		close(fds[1]);
		/* 2..62 ms (longer under valgrind): lands in open, appends,
		 * commits and seals alike. */
		usleep((useconds_t)(rand() % 60000) + (slow() ? 1500000 : 2000));
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		while (read(fds[0], ack, sizeof(ack)) == sizeof(ack)) {
			if (ak.n == ak.cap) {
				ak.cap = ak.cap ? ak.cap * 2 : 256;
				ak.seq = realloc(ak.seq, ak.cap * sizeof(*ak.seq));
				ak.tag = realloc(ak.tag, ak.cap * sizeof(*ak.tag));
				assert_non_null(ak.seq);
				assert_non_null(ak.tag);
			}
			ak.seq[ak.n] = ack[0];
			ak.tag[ak.n++] = ack[1];
		}
		close(fds[0]);
	}
	print_message("%zu acknowledged records over %d kills\n", ak.n, iters);
	assert_true(ak.n > 0);
	assert_int_equal(audit_verify(&t, NULL, &r), SB_AUDIT_INTACT);
	assert_true(r.records >= ak.n);
	assert_int_equal(sb_audit_open(t.dir, SB_AUDIT_READONLY, &a, &err), 0);
	assert_int_equal(sb_audit_query_run(a, &q, check_acked, &ak, &err), 0);
	sb_audit_close(a, &err);
	for (k = 0; k < ak.n; k++)
		if (ak.seq[k])
			fail_msg("acknowledged seq %llu is missing", (unsigned long long)ak.seq[k]);
	free(ak.seq);
	free(ak.tag);
	audit_tmp_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_writers),
		cmocka_unit_test(test_crash_mid_write),
	};

	return cmocka_run_group_tests_name("audit_concurrency", tests, NULL, NULL);
}
