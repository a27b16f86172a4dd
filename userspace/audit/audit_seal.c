/* Seals: an Ed25519 signature over (head hash, seq, time, key). The
 * chain alone shows that nothing in the middle changed; a seal also fixes
 * where the chain ended when it was signed, so records cut from the tail
 * are noticed, and a chain recomputed by someone without the key no
 * longer matches. The signed bytes carry a context string so a seal can
 * never be mistaken for any other signature made with the same key. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit_internal.h"

#define SEAL_CONTEXT "sandbox-bpf audit seal v1"

int sb_audit_seal_message(const struct sb_audit_seal_rec *s, char **msg, size_t *len, struct sb_err *err)
{
	cJSON *o = cJSON_CreateObject();
	int rc;

	if (!o || !cJSON_AddStringToObject(o, "context", SEAL_CONTEXT) ||
	    !cJSON_AddStringToObject(o, "head_hash", s->head_hash) || !cJSON_AddStringToObject(o, "pubkey", s->pubkey) ||
	    !cJSON_AddNumberToObject(o, "seq", (double)s->seq) || !cJSON_AddStringToObject(o, "time", s->time)) {
		cJSON_Delete(o);
		return sb_errf(err, -ENOMEM, "out of memory");
	}
	rc = sb_audit_canon(o, msg, len, err);
	cJSON_Delete(o);
	return rc;
}

int sb_audit_seal_sign(struct sb_audit_seal_rec *s, const uint8_t sk[64], struct sb_err *err)
{
	uint8_t sig[crypto_sign_BYTES];
	char *msg;
	size_t len;
	int rc = sb_audit_seal_message(s, &msg, &len, err);

	if (rc)
		return rc;
	crypto_sign_detached(sig, NULL, (const unsigned char *)msg, len, sk);
	free(msg);
	sb_audit_hex(sig, sizeof(sig), s->sig);
	return 0;
}

int sb_audit_seal_check(const struct sb_audit_seal_rec *s, struct sb_err *err)
{
	uint8_t sig[crypto_sign_BYTES], pk[SB_AUDIT_PK_LEN], h[SB_AUDIT_HASH_LEN];
	char *msg;
	size_t len;
	int rc;

	if (sb_audit_unhex(s->sig, sig, sizeof(sig)) || sb_audit_unhex(s->pubkey, pk, sizeof(pk)) ||
	    sb_audit_unhex(s->head_hash, h, sizeof(h)) || !sb_audit_time_valid(s->time) || s->seq < 1 ||
	    s->seq > 9007199254740991ULL)
		return sb_errf(err, -EINVAL, "malformed seal");
	rc = sb_audit_seal_message(s, &msg, &len, err);
	if (rc)
		return rc;
	rc = crypto_sign_verify_detached(sig, (const unsigned char *)msg, len, pk);
	free(msg);
	return rc ? sb_errf(err, -EBADMSG, "seal signature does not verify") : 0;
}

cJSON *sb_audit_seal_json(const struct sb_audit_seal_rec *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "kind", "seal") || !cJSON_AddNumberToObject(o, "seq", (double)s->seq) ||
	    !cJSON_AddStringToObject(o, "head_hash", s->head_hash) || !cJSON_AddStringToObject(o, "time", s->time) ||
	    !cJSON_AddStringToObject(o, "pubkey", s->pubkey) || !cJSON_AddStringToObject(o, "sig", s->sig)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int copy_field(const cJSON *j, const char *key, char *out, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap)
		return -EINVAL;
	strcpy(out, v->valuestring);
	return 0;
}

int sb_audit_seal_from_json(const cJSON *j, struct sb_audit_seal_rec *s, struct sb_err *err)
{
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(j, "seq");

	memset(s, 0, sizeof(*s));
	if (!cJSON_IsNumber(seq) || seq->valuedouble < 1 || seq->valuedouble > 9007199254740991.0 ||
	    seq->valuedouble != (double)(uint64_t)seq->valuedouble)
		return sb_errf(err, -EINVAL, "seal: \"seq\" must be a positive integer");
	s->seq = (uint64_t)seq->valuedouble;
	if (copy_field(j, "head_hash", s->head_hash, sizeof(s->head_hash)) ||
	    copy_field(j, "time", s->time, sizeof(s->time)) || copy_field(j, "pubkey", s->pubkey, sizeof(s->pubkey)) ||
	    copy_field(j, "sig", s->sig, sizeof(s->sig)))
		return sb_errf(err, -EINVAL, "seal: head_hash, time, pubkey and sig must be strings of the right length");
	return 0;
}

int sb_audit_seal(struct sb_audit *a, struct sb_audit_seal_info *info, struct sb_err *err)
{
	struct sb_audit_seal_rec s = { 0 };
	uint8_t sk[64], pk[SB_AUDIT_PK_LEN], head[SB_AUDIT_HASH_LEN];
	struct sb_audit_seal_info dummy;
	bool sealed = false;
	int rc;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	if (a->flags & SB_AUDIT_READONLY)
		return sb_errf(err, -EROFS, "%s: opened read-only", a->path);
	/* The key is read before taking the write lock other writers wait on. */
	rc = sb_audit_key_load(sk, pk, true, err);
	if (rc)
		return -ENOKEY;
	sb_audit_hex(pk, sizeof(pk), s.pubkey);
	rc = sb_audit_begin(a, true, err);
	if (rc)
		goto out;
	rc = sb_audit_head_locked(a, &s.seq, head, err);
	if (rc || s.seq == 0)
		goto done;
	sb_audit_hex(head, sizeof(head), s.head_hash);
	sqlite3_reset(a->st_last_seal);
	rc = sqlite3_step(a->st_last_seal);
	if (rc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(a->st_last_seal, 0) == s.seq &&
	    !strcmp((const char *)sqlite3_column_text(a->st_last_seal, 1), s.head_hash) &&
	    !strcmp((const char *)sqlite3_column_text(a->st_last_seal, 3), s.pubkey)) {
		snprintf(s.time, sizeof(s.time), "%s", (const char *)sqlite3_column_text(a->st_last_seal, 2));
		sealed = true;
	}
	sqlite3_reset(a->st_last_seal);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = sb_audit_db_err(a, err, rc, "reading the last seal");
		goto done;
	}
	rc = 0;
	if (!sealed) {
		sb_audit_time_now(s.time);
		rc = sb_audit_seal_sign(&s, sk, err);
		if (rc)
			goto done;
		sqlite3_bind_int64(a->st_insert_seal, 1, (sqlite3_int64)s.seq);
		sqlite3_bind_text(a->st_insert_seal, 2, s.head_hash, -1, SQLITE_STATIC);
		sqlite3_bind_text(a->st_insert_seal, 3, s.time, -1, SQLITE_STATIC);
		sqlite3_bind_text(a->st_insert_seal, 4, s.pubkey, -1, SQLITE_STATIC);
		sqlite3_bind_text(a->st_insert_seal, 5, s.sig, -1, SQLITE_STATIC);
		rc = sqlite3_step(a->st_insert_seal);
		sqlite3_reset(a->st_insert_seal);
		sqlite3_clear_bindings(a->st_insert_seal);
		rc = rc == SQLITE_DONE ? 0 : sb_audit_db_err(a, err, rc, "storing a seal");
	}
done:
	if (rc) {
		sb_audit_rollback(a);
	} else {
		rc = sb_audit_commit(a, err);
	}
	if (!rc) {
		info->seq = s.seq;
		info->created = s.seq > 0 && !sealed;
		if (s.seq) {
			snprintf(info->head_hash, sizeof(info->head_hash), "%s", s.head_hash);
			snprintf(info->time, sizeof(info->time), "%s", s.time);
		}
		snprintf(info->pubkey, sizeof(info->pubkey), "%s", s.pubkey);
		a->appended_since_seal = 0;
		clock_gettime(CLOCK_MONOTONIC, &a->last_seal);
	}
out:
	sodium_memzero(sk, sizeof(sk));
	return rc;
}
