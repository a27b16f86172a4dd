/* The verifier: one pass over records in chain order, with each seal fed
 * right after the record it covers. It stops judging at the first broken
 * record, but keeps reading when that alone cannot tell a deletion from a
 * reordering (a record that appears early may turn up later). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_internal.h"


struct sb_av {
	struct sb_audit_verify_opts o;
	uint8_t pinned[SB_AUDIT_PK_LEN];
	struct sb_audit_report *r;
	uint64_t expect_first;
	bool started, failed;
	uint64_t last_seq;
	uint8_t last_hash[SB_AUDIT_HASH_LEN];
	uint8_t last_prev[SB_AUDIT_HASH_LEN];	/* prev_hash of the last good record */
	/* A gap was seen: is the missing record somewhere later? */
	bool diag;
	uint64_t diag_want, diag_after;
	bool have_key;
	char key[SB_AUDIT_HEX_LEN];
	bool filter;
	char since[SB_AUDIT_TIME_LEN], until[SB_AUDIT_TIME_LEN], sandbox[256];
	bool has_since, has_until, has_sandbox;
};

static const char *const problem_names[] = {
	[SB_AUDIT_INTACT] = "intact",
	[SB_AUDIT_EDITED] = "edited",
	[SB_AUDIT_MISSING] = "missing",
	[SB_AUDIT_INSERTED] = "inserted",
	[SB_AUDIT_REORDERED] = "reordered",
	[SB_AUDIT_TRUNCATED] = "truncated",
	[SB_AUDIT_REWRITTEN] = "rewritten",
	[SB_AUDIT_BAD_SIGNATURE] = "bad_signature",
	[SB_AUDIT_KEY_MISMATCH] = "key_mismatch",
	[SB_AUDIT_MALFORMED] = "malformed",
	[SB_AUDIT_UNSEALED] = "unsealed",
	[SB_AUDIT_FILTER] = "filter_mismatch",
};

const char *sb_audit_problem_name(enum sb_audit_problem p)
{
	return (unsigned)p < sizeof(problem_names) / sizeof(problem_names[0]) ? problem_names[p] : "unknown";
}

struct sb_av *sb_av_new(const struct sb_audit_verify_opts *o, struct sb_audit_report *r)
{
	struct sb_av *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	memset(r, 0, sizeof(*r));
	v->r = r;
	if (o)
		v->o = *o;
	if (v->o.pubkey) {
		memcpy(v->pinned, v->o.pubkey, sizeof(v->pinned));
		v->o.pubkey = v->pinned;
		sb_audit_hex(v->pinned, sizeof(v->pinned), v->key);
		v->have_key = true;
		r->pinned = true;
	}
	return v;
}

void sb_av_free(struct sb_av *v)
{
	free(v);
}

void sb_av_expect_first(struct sb_av *v, uint64_t seq)
{
	v->expect_first = seq;
}

void sb_av_set_filter(struct sb_av *v, const char *since, const char *until, const char *sandbox)
{
	v->has_since = since && *since;
	v->has_until = until && *until;
	v->has_sandbox = sandbox != NULL;
	snprintf(v->since, sizeof(v->since), "%s", v->has_since ? since : "");
	snprintf(v->until, sizeof(v->until), "%s", v->has_until ? until : "");
	snprintf(v->sandbox, sizeof(v->sandbox), "%s", sandbox ? sandbox : "");
	v->filter = v->has_since || v->has_until || v->has_sandbox;
}

bool sb_av_failed(const struct sb_av *v)
{
	return v->failed;
}

bool sb_av_settled(const struct sb_av *v)
{
	return v->failed && !v->diag;
}

uint64_t sb_av_last_seq(const struct sb_av *v)
{
	return v->last_seq;
}

void sb_av_fail(struct sb_av *v, enum sb_audit_problem p, uint64_t seq, const char *fmt, ...)
{
	va_list ap;

	v->failed = true;
	v->r->problem = p;
	v->r->problem_seq = seq;
	va_start(ap, fmt);
	vsnprintf(v->r->detail, sizeof(v->r->detail), fmt, ap);
	va_end(ap);
}

void sb_av_malformed(struct sb_av *v, const char *where, const char *msg)
{
	if (!v->failed)
		sb_av_fail(v, SB_AUDIT_MALFORMED, v->last_seq + 1, "%s: %s", where, msg);
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static bool filter_selects(const struct sb_av *v, const cJSON *rec)
{
	const char *t = str_of(rec, "time");

	if (v->has_since && strcmp(t, v->since) < 0)
		return false;
	if (v->has_until && strcmp(t, v->until) > 0)
		return false;
	return !v->has_sandbox || !strcmp(str_of(rec, "sandbox"), v->sandbox);
}

static void accept(struct sb_av *v, const cJSON *rec, uint64_t seq, const uint8_t prev[SB_AUDIT_HASH_LEN],
		   const uint8_t hash[SB_AUDIT_HASH_LEN], bool elided)
{
	struct sb_audit_report *r = v->r;

	if (!v->started) {
		v->started = true;
		r->first_seq = seq;
		snprintf(r->first_time, sizeof(r->first_time), "%s", str_of(rec, "time"));
		sb_audit_hex(prev, SB_AUDIT_HASH_LEN, r->anchor_hash);
	}
	v->last_seq = seq;
	memcpy(v->last_prev, prev, SB_AUDIT_HASH_LEN);
	memcpy(v->last_hash, hash, SB_AUDIT_HASH_LEN);
	r->records++;
	if (elided)
		r->elided++;
	r->last_seq = seq;
	snprintf(r->last_time, sizeof(r->last_time), "%s", str_of(rec, "time"));
}

void sb_av_record(struct sb_av *v, const cJSON *rec, bool elided, const char *prev_hex, const char *hash_hex,
		  const char *where)
{
	uint8_t prev[SB_AUDIT_HASH_LEN], stored[SB_AUDIT_HASH_LEN], computed[SB_AUDIT_HASH_LEN];
	struct sb_err e = { { 0 } };
	uint64_t seq, want;

	if (v->failed && !v->diag)
		return;
	if (sb_audit_record_validate(rec, elided, &seq, &e)) {
		sb_av_malformed(v, where, e.msg);
		return;
	}
	if (v->diag) {
		if (seq == v->diag_want) {
			v->diag = false;
			sb_av_fail(v, SB_AUDIT_REORDERED, seq, "seq %llu appears at %s, after seq %llu: records were reordered",
			     (unsigned long long)seq, where, (unsigned long long)v->diag_after);
		}
		return;
	}
	if (sb_audit_unhex(prev_hex, prev, sizeof(prev)) || sb_audit_unhex(hash_hex, stored, sizeof(stored))) {
		sb_av_fail(v, SB_AUDIT_MALFORMED, seq, "seq %llu (%s): prev_hash and hash must be 64 lower-case hex digits",
		     (unsigned long long)seq, where);
		return;
	}
	if (sb_audit_chain_hash(prev, rec, elided, computed, &e)) {
		sb_av_fail(v, SB_AUDIT_MALFORMED, seq, "seq %llu (%s): %s", (unsigned long long)seq, where, e.msg);
		return;
	}
	if (memcmp(computed, stored, sizeof(stored))) {
		sb_av_fail(v, SB_AUDIT_EDITED, seq, "seq %llu (%s) was edited: its content does not match its hash",
		     (unsigned long long)seq, where);
		return;
	}
	if (elided && v->filter && filter_selects(v, rec)) {
		sb_av_fail(v, SB_AUDIT_FILTER, seq, "seq %llu (%s) is elided but the export's filter selects it",
		     (unsigned long long)seq, where);
		return;
	}
	want = v->started ? v->last_seq + 1 : (v->expect_first ? v->expect_first : seq);
	if (seq > want) {
		/* Deleted, unless the missing record turns up later. */
		if (seq - want > 1)
			sb_av_fail(v, SB_AUDIT_MISSING, want, "seq %llu..%llu missing before %s: records were deleted",
			     (unsigned long long)want, (unsigned long long)(seq - 1), where);
		else
			sb_av_fail(v, SB_AUDIT_MISSING, want, "seq %llu missing before %s: a record was deleted",
			     (unsigned long long)want, where);
		v->diag = true;
		v->diag_want = want;
		v->diag_after = seq;
		return;
	}
	if (seq < want) {
		if (v->started && seq == v->last_seq && !memcmp(prev, v->last_prev, sizeof(prev)))
			sb_av_fail(v, SB_AUDIT_INSERTED, seq,
			     "two records claim seq %llu, both chained after seq %llu: one was inserted (the second is at %s)",
			     (unsigned long long)seq, (unsigned long long)(seq - 1), where);
		else if (v->started)
			sb_av_fail(v, SB_AUDIT_REORDERED, seq, "seq %llu appears at %s, after seq %llu: records were reordered",
			     (unsigned long long)seq, where, (unsigned long long)v->last_seq);
		else
			sb_av_fail(v, SB_AUDIT_MALFORMED, seq, "the export starts at seq %llu but its header says %llu",
			     (unsigned long long)seq, (unsigned long long)want);
		return;
	}
	if (!v->started && seq == 1) {
		static const uint8_t zero[SB_AUDIT_HASH_LEN];

		if (memcmp(prev, zero, sizeof(zero))) {
			sb_av_fail(v, SB_AUDIT_EDITED, 1, "seq 1 (%s) does not start from the all-zero hash", where);
			return;
		}
	}
	if (v->started && memcmp(prev, v->last_hash, sizeof(prev))) {
		/* This record was chained after a different record at seq-1:
		 * that one was replaced by a record with a recomputed hash. */
		sb_av_fail(v, SB_AUDIT_EDITED, seq - 1,
		     "seq %llu was replaced: seq %llu (%s) was chained after a different record",
		     (unsigned long long)(seq - 1), (unsigned long long)seq, where);
		return;
	}
	accept(v, rec, seq, prev, stored, elided);
}

void sb_av_seal(struct sb_av *v, const struct sb_audit_seal_rec *s, const char *where)
{
	struct sb_err e = { { 0 } };
	uint8_t head[SB_AUDIT_HASH_LEN];
	int rc;

	if (v->failed)
		return;
	if (!v->have_key) {
		snprintf(v->key, sizeof(v->key), "%s", s->pubkey);
		v->have_key = true;
	} else if (strcmp(s->pubkey, v->key)) {
		sb_av_fail(v, SB_AUDIT_KEY_MISMATCH, s->seq, "the seal of seq %llu (%s) is signed by key %.16s..., %s %.16s...",
		     (unsigned long long)s->seq, where, s->pubkey, v->r->pinned ? "not by the pinned key" : "earlier seals by",
		     v->key);
		return;
	}
	rc = sb_audit_seal_check(s, &e);
	if (rc == -EBADMSG) {
		sb_av_fail(v, SB_AUDIT_BAD_SIGNATURE, s->seq, "the seal of seq %llu (%s, signed %s) has a bad signature",
		     (unsigned long long)s->seq, where, s->time);
		return;
	}
	if (rc) {
		sb_av_fail(v, SB_AUDIT_MALFORMED, s->seq, "%s: %s", where, e.msg);
		return;
	}
	snprintf(v->r->pubkey, sizeof(v->r->pubkey), "%s", s->pubkey);
	v->r->seals++;
	if (!v->started || s->seq > v->last_seq) {
		sb_av_fail(v, SB_AUDIT_TRUNCATED, v->started ? v->last_seq + 1 : 1,
		     "truncated: a seal signed %s covers records up to seq %llu but the chain ends at seq %llu",
		     s->time, (unsigned long long)s->seq, (unsigned long long)v->last_seq);
		return;
	}
	if (s->seq < v->last_seq) {
		sb_av_fail(v, SB_AUDIT_MALFORMED, s->seq, "%s: the seal of seq %llu is out of place (after seq %llu)", where,
		     (unsigned long long)s->seq, (unsigned long long)v->last_seq);
		return;
	}
	sb_audit_unhex(s->head_hash, head, sizeof(head));
	if (memcmp(head, v->last_hash, sizeof(head))) {
		sb_av_fail(v, SB_AUDIT_REWRITTEN, s->seq,
		     "seq %llu is not the head signed %s: the chain up to seq %llu was rewritten",
		     (unsigned long long)s->seq, s->time, (unsigned long long)s->seq);
		return;
	}
	v->r->sealed_seq = s->seq;
}

void sb_av_finish(struct sb_av *v)
{
	struct sb_audit_report *r = v->r;

	v->diag = false;
	if (v->have_key && !r->pubkey[0])
		snprintf(r->pubkey, sizeof(r->pubkey), "%s", v->key);
	if (v->started)
		sb_audit_hex(v->last_hash, sizeof(v->last_hash), r->head_hash);
	if (v->failed)
		return;
	if (v->o.require_seal && r->records > 0 && r->sealed_seq < r->last_seq)
		sb_av_fail(v, SB_AUDIT_UNSEALED, r->sealed_seq + 1, "seq %llu..%llu are not covered by a seal",
		     (unsigned long long)(r->sealed_seq + 1), (unsigned long long)r->last_seq);
}

cJSON *sb_audit_report_json(const struct sb_audit_report *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "intact", r->problem == SB_AUDIT_INTACT);
	if (r->problem != SB_AUDIT_INTACT) {
		cJSON_AddStringToObject(o, "problem", sb_audit_problem_name(r->problem));
		cJSON_AddNumberToObject(o, "seq", (double)r->problem_seq);
		cJSON_AddStringToObject(o, "detail", r->detail);
	}
	cJSON_AddNumberToObject(o, "records", (double)r->records);
	cJSON_AddNumberToObject(o, "elided", (double)r->elided);
	cJSON_AddNumberToObject(o, "seals", (double)r->seals);
	cJSON_AddNumberToObject(o, "first_seq", (double)r->first_seq);
	cJSON_AddNumberToObject(o, "last_seq", (double)r->last_seq);
	cJSON_AddNumberToObject(o, "sealed_seq", (double)r->sealed_seq);
	cJSON_AddStringToObject(o, "first_time", r->first_time);
	cJSON_AddStringToObject(o, "last_time", r->last_time);
	cJSON_AddStringToObject(o, "anchor_hash", r->anchor_hash);
	cJSON_AddStringToObject(o, "head_hash", r->head_hash);
	cJSON_AddStringToObject(o, "pubkey", r->pubkey);
	cJSON_AddBoolToObject(o, "pinned", r->pinned);
	return o;
}
