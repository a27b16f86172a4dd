/* Appending records, the fast-path counters, and the periodic work
 * (counter flushes, seals) that rides on appends and sb_audit_tick. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_internal.h"

/* Chains one record after (seq - 1, prev) inside the caller's write
 * transaction; *hash gets its hash. */
static int insert_locked(struct sb_audit *a, const cJSON *in, uint64_t seq, const uint8_t prev[SB_AUDIT_HASH_LEN],
			 uint8_t hash[SB_AUDIT_HASH_LEN], struct sb_err *err)
{
	char now[SB_AUDIT_TIME_LEN], prev_hex[SB_AUDIT_HEX_LEN], hash_hex[SB_AUDIT_HEX_LEN];
	cJSON *rec = cJSON_Duplicate(in, 1);
	char *text = NULL;
	size_t len;
	int rc;

	if (!rec)
		return sb_errf(err, -ENOMEM, "out of memory");
	/* prev and hash may be the same buffer. */
	sb_audit_hex(prev, SB_AUDIT_HASH_LEN, prev_hex);
	sb_audit_time_now(now);
	if (!cJSON_AddNumberToObject(rec, "seq", (double)seq) || !cJSON_AddStringToObject(rec, "time", now)) {
		cJSON_Delete(rec);
		return sb_errf(err, -ENOMEM, "out of memory");
	}
	rc = sb_audit_canon(rec, &text, &len, err);
	if (!rc && len > SB_AUDIT_RECORD_MAX)
		rc = sb_errf(err, -E2BIG, "record is larger than %d bytes", SB_AUDIT_RECORD_MAX);
	if (!rc)
		rc = sb_audit_chain_hash(prev, rec, false, hash, err);
	cJSON_Delete(rec);
	if (rc) {
		free(text);
		return rc;
	}
	sb_audit_hex(hash, SB_AUDIT_HASH_LEN, hash_hex);
	sqlite3_reset(a->st_insert);
	sqlite3_bind_int64(a->st_insert, 1, (sqlite3_int64)seq);
	sqlite3_bind_text(a->st_insert, 2, text, (int)len, free);
	sqlite3_bind_text(a->st_insert, 3, prev_hex, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(a->st_insert, 4, hash_hex, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(a->st_insert);
	sqlite3_reset(a->st_insert);
	sqlite3_clear_bindings(a->st_insert);
	return rc == SQLITE_DONE ? 0 : sb_audit_db_err(a, err, rc, "inserting a record");
}

static int append_records(struct sb_audit *a, const cJSON *const *recs, size_t n, uint64_t *first_seq,
			  struct sb_err *err)
{
	uint8_t hash[SB_AUDIT_HASH_LEN];
	uint64_t seq;
	size_t i;
	int rc;

	if (a->flags & SB_AUDIT_READONLY)
		return sb_errf(err, -EROFS, "%s: opened read-only", a->path);
	/* Checked before taking the write lock, which other writers wait on. */
	for (i = 0; i < n; i++) {
		rc = sb_audit_record_check(recs[i], err);
		if (rc) {
			if (n > 1)
				sb_err_prefix(err, "record %zu: ", i + 1);
			return rc;
		}
	}
	rc = sb_audit_begin(a, true, err);
	if (rc)
		return rc;
	rc = sb_audit_head_locked(a, &seq, hash, err);
	if (!rc && first_seq)
		*first_seq = seq + 1;
	for (i = 0; i < n && !rc; i++)
		rc = insert_locked(a, recs[i], ++seq, hash, hash, err);
	if (rc) {
		sb_audit_rollback(a);
		return rc;
	}
	rc = sb_audit_commit(a, err);
	if (!rc)
		a->appended_since_seal += n;
	return rc;
}

static bool seal_due(const struct sb_audit *a)
{
	if (a->flags & (SB_AUDIT_READONLY | SB_AUDIT_NO_SEAL) || a->appended_since_seal == 0)
		return false;
	return (a->seal_records && a->appended_since_seal >= a->seal_records) ||
	       (a->seal_seconds && sb_audit_elapsed(&a->last_seal) >= a->seal_seconds);
}

static bool counters_due(const struct sb_audit *a)
{
	return a->ncounters > 0 && sb_audit_elapsed(&a->last_counter_flush) >= a->counter_seconds;
}

int sb_audit_tick(struct sb_audit *a, struct sb_err *err)
{
	int rc = 0;

	if (counters_due(a))
		rc = sb_audit_flush_counters(a, err);
	if (!rc && seal_due(a)) {
		rc = sb_audit_seal(a, NULL, err);
		/* Whatever the outcome, wait a full interval before trying
		 * again: a writer without the key must not retry per record. */
		a->appended_since_seal = 0;
		clock_gettime(CLOCK_MONOTONIC, &a->last_seal);
		if (rc)
			snprintf(a->seal_error, sizeof(a->seal_error), "%s", err ? err->msg : "seal failed");
		else
			a->seal_error[0] = '\0';
	}
	return rc;
}

/* The record is committed; periodic work that fails afterwards is kept
 * for sb_audit_seal_error rather than turned into a failed append. */
static void periodic(struct sb_audit *a)
{
	struct sb_err e = { { 0 } };

	sb_audit_tick(a, &e);
}

int sb_audit_append(struct sb_audit *a, const cJSON *record, uint64_t *seq_out, struct sb_err *err)
{
	int rc = append_records(a, &record, 1, seq_out, err);

	if (!rc)
		periodic(a);
	return rc;
}

int sb_audit_append_batch(struct sb_audit *a, const cJSON *const *records, size_t n, uint64_t *first_seq_out,
			  struct sb_err *err)
{
	int rc;

	if (n == 0) {
		if (first_seq_out)
			*first_seq_out = 0;
		return 0;
	}
	rc = append_records(a, records, n, first_seq_out, err);
	if (!rc)
		periodic(a);
	return rc;
}

static bool word_valid(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n >= max)
		return false;
	for (i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

int sb_audit_count(struct sb_audit *a, const char *origin, const char *sandbox, const char *what,
		   const char *trigger, uint64_t n, struct sb_err *err)
{
	struct sb_audit_counter *c;
	size_t i;
	int rc;

	if (!origin || !sb_audit_origin_valid(origin) || !sandbox || strlen(sandbox) >= sizeof(c->sandbox) ||
	    !what || !word_valid(what, sizeof(c->what)) || !trigger || !word_valid(trigger, sizeof(c->trigger)))
		return sb_errf(err, -EINVAL, "counter needs a valid origin, a sandbox name under %zu bytes and "
					     "lower-case what/trigger words", sizeof(c->sandbox));
	for (i = 0; i < a->ncounters; i++) {
		c = &a->counters[i];
		if (!strcmp(c->origin, origin) && !strcmp(c->sandbox, sandbox) && !strcmp(c->what, what) &&
		    !strcmp(c->trigger, trigger)) {
			c->n += n;
			return 0;
		}
	}
	if (a->ncounters == SB_AUDIT_COUNTERS_MAX) {
		rc = sb_audit_flush_counters(a, err);
		if (rc)
			return rc;
	}
	if (a->ncounters == 0)
		sb_audit_time_now(a->counters_since);
	c = &a->counters[a->ncounters++];
	snprintf(c->origin, sizeof(c->origin), "%s", origin);
	snprintf(c->sandbox, sizeof(c->sandbox), "%s", sandbox);
	snprintf(c->what, sizeof(c->what), "%s", what);
	snprintf(c->trigger, sizeof(c->trigger), "%s", trigger);
	c->n = n;
	return 0;
}

/* {kind: counters, origin, sandbox, since, until, counts: {what: {trigger: n}}} */
static cJSON *counters_record(const struct sb_audit *a, size_t first, bool *used, const char *until)
{
	const struct sb_audit_counter *k = &a->counters[first];
	cJSON *rec = cJSON_CreateObject(), *counts = cJSON_CreateObject();
	size_t i;

	if (!rec || !counts || !cJSON_AddItemToObject(rec, "counts", counts)) {
		cJSON_Delete(counts);
		goto oom;
	}
	if (!cJSON_AddStringToObject(rec, "kind", "counters") || !cJSON_AddStringToObject(rec, "origin", k->origin) ||
	    !cJSON_AddStringToObject(rec, "sandbox", k->sandbox) ||
	    !cJSON_AddStringToObject(rec, "since", a->counters_since) || !cJSON_AddStringToObject(rec, "until", until))
		goto oom;
	for (i = first; i < a->ncounters; i++) {
		const struct sb_audit_counter *c = &a->counters[i];
		cJSON *w;

		if (used[i] || strcmp(c->origin, k->origin) || strcmp(c->sandbox, k->sandbox))
			continue;
		used[i] = true;
		w = cJSON_GetObjectItemCaseSensitive(counts, c->what);
		if (!w && !(w = cJSON_AddObjectToObject(counts, c->what)))
			goto oom;
		/* Counts beyond 2^53 would not be exact JSON integers. */
		if (!cJSON_AddNumberToObject(w, c->trigger, (double)(c->n > 9007199254740991ULL ? 9007199254740991ULL : c->n)))
			goto oom;
	}
	return rec;
oom:
	cJSON_Delete(rec);
	return NULL;
}

int sb_audit_flush_counters(struct sb_audit *a, struct sb_err *err)
{
	const cJSON *recs[SB_AUDIT_COUNTERS_MAX] = { NULL };
	bool used[SB_AUDIT_COUNTERS_MAX] = { false };
	char until[SB_AUDIT_TIME_LEN];
	size_t i, n = 0;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &a->last_counter_flush);
	if (a->ncounters == 0)
		return 0;
	sb_audit_time_now(until);
	for (i = 0; i < a->ncounters && !rc; i++) {
		if (used[i])
			continue;
		recs[n] = counters_record(a, i, used, until);
		if (!recs[n])
			rc = sb_errf(err, -ENOMEM, "out of memory");
		else
			n++;
	}
	if (!rc)
		rc = append_records(a, recs, n, NULL, err);
	for (i = 0; i < n; i++)
		cJSON_Delete((cJSON *)recs[i]);
	/* Kept on failure: the next flush writes them. */
	if (!rc)
		a->ncounters = 0;
	return rc;
}
