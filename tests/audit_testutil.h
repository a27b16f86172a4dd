/* Helpers shared by the audit tests: a throw-away project folder and key
 * directory, records to append, and raw sqlite access to play the
 * attacker who edits the store behind the library's back. */
#ifndef SB_AUDIT_TESTUTIL_H
#define SB_AUDIT_TESTUTIL_H

#include <errno.h>
#include <cjson/cJSON.h>
#include <ftw.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit_internal.h"

struct audit_tmp {
	char dir[256];		/* project folder */
	char keys[300];		/* SANDBOX_BPF_KEY_DIR */
	char db[300];
};

static inline void audit_tmp_init(struct audit_tmp *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/sb-audit-test.XXXXXX");
	if (!mkdtemp(t->dir))
		abort();
	snprintf(t->keys, sizeof(t->keys), "%s/keys", t->dir);
	snprintf(t->db, sizeof(t->db), "%s/.sandbox/audit.db", t->dir);
	setenv("SANDBOX_BPF_KEY_DIR", t->keys, 1);
}

static inline int audit_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void audit_tmp_free(struct audit_tmp *t)
{
	nftw(t->dir, audit_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A decision record as the broker would write it; i makes each unique. */
static inline cJSON *audit_test_record(const char *sandbox, int i)
{
	char cmd[64];
	cJSON *r = cJSON_CreateObject();

	snprintf(cmd, sizeof(cmd), "git push origin branch-%d", i);
	cJSON_AddStringToObject(r, "kind", "decision");
	cJSON_AddStringToObject(r, "origin", "kernel");
	cJSON_AddStringToObject(r, "sandbox", sandbox);
	cJSON_AddStringToObject(r, "trigger", i % 2 ? "shell" : "write");
	cJSON_AddStringToObject(r, "decision", i % 3 ? "deny" : "allow");
	cJSON_AddStringToObject(r, "rule", "git push*");
	cJSON_AddStringToObject(r, "command", cmd);
	cJSON_AddNumberToObject(r, "pid", 1000 + i);
	cJSON_AddNumberToObject(r, "i", i);
	return r;
}

static inline int audit_test_append(struct sb_audit *a, const char *sandbox, int i)
{
	cJSON *r = audit_test_record(sandbox, i);
	struct sb_err err = { { 0 } };
	int rc = sb_audit_append(a, r, NULL, &err);

	if (rc)
		fprintf(stderr, "append: %s\n", err.msg);
	cJSON_Delete(r);
	return rc;
}

/* Opens a store, appends n records ("p" for even i, "q" for odd), closes
 * (which seals). */
static inline int audit_fill(const struct audit_tmp *t, int from, int n)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	int i, rc = sb_audit_open(t->dir, SB_AUDIT_CREATE, &a, &err);

	if (rc) {
		fprintf(stderr, "open: %s\n", err.msg);
		return rc;
	}
	for (i = from; i < from + n && !rc; i++)
		rc = audit_test_append(a, i % 2 ? "q" : "p", i);
	if (sb_audit_close(a, &err) && !rc) {
		fprintf(stderr, "close: %s\n", err.msg);
		rc = -1;
	}
	return rc;
}

static inline enum sb_audit_problem audit_verify(const struct audit_tmp *t, const uint8_t *pin,
						 struct sb_audit_report *r)
{
	struct sb_audit_verify_opts o = { .pubkey = pin };
	struct sb_err err = { { 0 } };
	struct sb_audit *a;

	if (sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err) || sb_audit_verify_store(a, &o, r, &err)) {
		fprintf(stderr, "verify: %s\n", err.msg);
		abort();
	}
	sb_audit_close(a, &err);
	if (r->problem)
		fprintf(stderr, "  (verify says: %s at %llu: %s)\n", sb_audit_problem_name(r->problem),
			(unsigned long long)r->problem_seq, r->detail);
	return r->problem;
}

static inline sqlite3 *audit_raw(const struct audit_tmp *t)
{
	sqlite3 *db;

	if (sqlite3_open(t->db, &db) != SQLITE_OK)
		abort();
	sqlite3_busy_timeout(db, 10000);
	return db;
}

static inline void audit_sql(const struct audit_tmp *t, const char *sql)
{
	sqlite3 *db = audit_raw(t);
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "sql '%s': %s\n", sql, msg);
		abort();
	}
	sqlite3_close(db);
}

/* Reads the host key's public half. */
static inline void audit_host_pk(const struct audit_tmp *t, uint8_t pk[SB_AUDIT_PK_LEN])
{
	char path[400];
	struct sb_err err = { { 0 } };

	snprintf(path, sizeof(path), "%s/audit-ed25519.pub", t->keys);
	if (sb_audit_pubkey_parse(path, pk, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		abort();
	}
}

/* What an attacker without the key can do: recompute prev_hash and hash
 * of every row from seq `from` on so that the chain itself links again. */
static inline void audit_rechain(const struct audit_tmp *t, uint64_t from)
{
	sqlite3 *db = audit_raw(t);
	sqlite3_stmt *sel, *upd;
	uint8_t prev[SB_AUDIT_HASH_LEN] = { 0 }, h[SB_AUDIT_HASH_LEN];
	char prev_hex[SB_AUDIT_HEX_LEN], hex[SB_AUDIT_HEX_LEN];
	struct sb_err err = { { 0 } };

	sqlite3_prepare_v2(db, "SELECT seq, record, hash FROM records ORDER BY seq", -1, &sel, NULL);
	sqlite3_prepare_v2(db, "UPDATE records SET prev_hash = ?, hash = ? WHERE seq = ?", -1, &upd, NULL);
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	while (sqlite3_step(sel) == SQLITE_ROW) {
		uint64_t seq = (uint64_t)sqlite3_column_int64(sel, 0);
		cJSON *rec = cJSON_Parse((const char *)sqlite3_column_text(sel, 1));

		if (seq < from) {
			sb_audit_unhex((const char *)sqlite3_column_text(sel, 2), prev, sizeof(prev));
			cJSON_Delete(rec);
			continue;
		}
		if (sb_audit_chain_hash(prev, rec, false, h, &err))
			abort();
		cJSON_Delete(rec);
		sb_audit_hex(prev, sizeof(prev), prev_hex);
		sb_audit_hex(h, sizeof(h), hex);
		sqlite3_bind_text(upd, 1, prev_hex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(upd, 2, hex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(upd, 3, (sqlite3_int64)seq);
		if (sqlite3_step(upd) != SQLITE_DONE)
			abort();
		sqlite3_reset(upd);
		memcpy(prev, h, sizeof(prev));
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	sqlite3_close(db);
}

/* Replaces every seal by one over the current head signed with sk. */
static inline void audit_forge_seal(const struct audit_tmp *t, const uint8_t sk[64], const uint8_t pk[32])
{
	struct sb_audit_seal_rec s = { 0 };
	struct sb_err err = { { 0 } };
	sqlite3 *db = audit_raw(t);
	sqlite3_stmt *st;
	char sql[1024];

	sqlite3_prepare_v2(db, "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1", -1, &st, NULL);
	if (sqlite3_step(st) != SQLITE_ROW)
		abort();
	s.seq = (uint64_t)sqlite3_column_int64(st, 0);
	snprintf(s.head_hash, sizeof(s.head_hash), "%s", (const char *)sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	sb_audit_time_now(s.time);
	sb_audit_hex(pk, 32, s.pubkey);
	if (sb_audit_seal_sign(&s, sk, &err))
		abort();
	snprintf(sql, sizeof(sql),
		 "DELETE FROM seals; INSERT INTO seals (seq, head_hash, time, pubkey, sig) VALUES (%llu, '%s', '%s', '%s', '%s')",
		 (unsigned long long)s.seq, s.head_hash, s.time, s.pubkey, s.sig);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		abort();
	sqlite3_close(db);
}

#endif
