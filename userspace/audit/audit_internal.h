/* Pieces of the audit subsystem shared between its files. Not an API:
 * callers outside userspace/audit/ (tests aside) use audit.h. */
#ifndef SB_AUDIT_INTERNAL_H
#define SB_AUDIT_INTERNAL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "audit.h"

struct cJSON;

/* --- canonical JSON (audit_canon.c) ------------------------------------
 * RFC 8785 (JCS) restricted to what is exact everywhere: integers within
 * +-(2^53-1), valid UTF-8, no duplicate keys, depth <= SB_AUDIT_DEPTH_MAX.
 * *out is malloc'd and NUL-terminated. */
#define SB_AUDIT_DEPTH_MAX 32
int sb_audit_canon(const struct cJSON *v, char **out, size_t *len, struct sb_err *err);

/* --- hex (audit_record.c) -------------------------------------------- */
void sb_audit_hex(const uint8_t *in, size_t n, char *out);
/* Exactly 2n lowercase hex digits, else -EINVAL. */
int sb_audit_unhex(const char *hex, uint8_t *out, size_t n);

/* --- records and the chain hash (audit_record.c) -----------------------
 * A record's "envelope" is {body_digest, kind, origin, sandbox, seq, time}
 * where body_digest = SHA-256(JCS(record minus the envelope keys)), and
 * hash = SHA-256(prev_hash || JCS(envelope)). An export may carry a record
 * as its envelope alone ("elided"): its hash still verifies. */
extern const char *const sb_audit_envelope_keys[5];	/* seq time kind origin sandbox */

bool sb_audit_kind_valid(const char *kind);
bool sb_audit_origin_valid(const char *origin);
bool sb_audit_time_valid(const char *t);

/* Checks a stored or exported record: envelope fields present and well
 * formed, no chain fields. *seq gets its seq. */
int sb_audit_record_validate(const struct cJSON *rec, bool elided, uint64_t *seq, struct sb_err *err);

/* SHA-256 of JCS(record minus envelope keys), as hex. */
int sb_audit_body_digest(const struct cJSON *rec, char hex[SB_AUDIT_HEX_LEN], struct sb_err *err);

/* The chain hash of a record (elided: rec carries "body_digest"). */
int sb_audit_chain_hash(const uint8_t prev[SB_AUDIT_HASH_LEN], const struct cJSON *rec, bool elided,
			uint8_t out[SB_AUDIT_HASH_LEN], struct sb_err *err);

/* The envelope of a full record, for an elided export line. */
struct cJSON *sb_audit_envelope(const struct cJSON *rec, struct sb_err *err);

/* --- seals (audit_seal.c) ------------------------------------------------ */
struct sb_audit_seal_rec {
	uint64_t seq;
	char head_hash[SB_AUDIT_HEX_LEN];
	char time[SB_AUDIT_TIME_LEN];
	char pubkey[SB_AUDIT_HEX_LEN];
	char sig[2 * 64 + 1];
};

/* The bytes a seal signs (JCS of {context, head_hash, pubkey, seq, time}). */
int sb_audit_seal_message(const struct sb_audit_seal_rec *s, char **msg, size_t *len, struct sb_err *err);
int sb_audit_seal_sign(struct sb_audit_seal_rec *s, const uint8_t sk[64], struct sb_err *err);
/* 0 when the signature verifies; -EBADMSG when not; -EINVAL when malformed. */
int sb_audit_seal_check(const struct sb_audit_seal_rec *s, struct sb_err *err);
struct cJSON *sb_audit_seal_json(const struct sb_audit_seal_rec *s);
int sb_audit_seal_from_json(const struct cJSON *j, struct sb_audit_seal_rec *s, struct sb_err *err);

/* --- host key (audit_key.c) ---------------------------------------------- */
/* Loads (creating when missing and create is set) the Ed25519 key pair.
 * Refuses a secret key file that group or others may read, that is a
 * symlink, or that another user owns. */
int sb_audit_key_load(uint8_t sk[64], uint8_t pk[SB_AUDIT_PK_LEN], bool create, struct sb_err *err);

/* --- store (audit_store.c) ----------------------------------------------- */
#define SB_AUDIT_COUNTERS_MAX 64

struct sb_audit_counter {
	char origin[16];
	char sandbox[128];
	char what[32];
	char trigger[32];
	uint64_t n;
};

struct sb_audit {
	sqlite3 *db;
	unsigned flags;
	char path[4096];
	sqlite3_stmt *st_head, *st_insert, *st_last_seal, *st_insert_seal;
	uint64_t seal_records, appended_since_seal;
	unsigned seal_seconds, counter_seconds;
	struct timespec last_seal, last_counter_flush;
	struct sb_audit_counter counters[SB_AUDIT_COUNTERS_MAX];
	size_t ncounters;
	char counters_since[SB_AUDIT_TIME_LEN];
	char seal_error[256];
};

/* sqlite's message for a failed call, as an sb_err. */
int sb_audit_db_err(struct sb_audit *a, struct sb_err *err, int rc, const char *what);
/* BEGIN IMMEDIATE / COMMIT / ROLLBACK with the store's busy policy. */
int sb_audit_begin(struct sb_audit *a, bool write, struct sb_err *err);
int sb_audit_commit(struct sb_audit *a, struct sb_err *err);
void sb_audit_rollback(struct sb_audit *a);
int sb_audit_head_locked(struct sb_audit *a, uint64_t *seq, uint8_t hash[SB_AUDIT_HASH_LEN], struct sb_err *err);
double sb_audit_elapsed(const struct timespec *since);

/* --- streaming verifier (audit_verify.c) ----------------------------------
 * Fed records in chain order and each seal right after the record it
 * covers; the store and the export reader both drive it. */
struct sb_av;
struct sb_av *sb_av_new(const struct sb_audit_verify_opts *o, struct sb_audit_report *r);
void sb_av_free(struct sb_av *v);
/* Seq the first record must have (1 for a store, the header's for an
 * export); 0 means "whatever comes first" (a slice). */
void sb_av_expect_first(struct sb_av *v, uint64_t seq);
void sb_av_set_filter(struct sb_av *v, const char *since, const char *until, const char *sandbox);
/* rec: the record without prev_hash/hash; where: "line 12" or "row 12". */
void sb_av_record(struct sb_av *v, const struct cJSON *rec, bool elided, const char *prev_hash,
		  const char *hash, const char *where);
void sb_av_seal(struct sb_av *v, const struct sb_audit_seal_rec *s, const char *where);
void sb_av_malformed(struct sb_av *v, const char *where, const char *msg);
void sb_av_fail(struct sb_av *v, enum sb_audit_problem p, uint64_t seq, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool sb_av_failed(const struct sb_av *v);
/* True once the verdict is in and more input cannot change it. */
bool sb_av_settled(const struct sb_av *v);
uint64_t sb_av_last_seq(const struct sb_av *v);
/* Settles pending diagnoses and fills the summary. */
void sb_av_finish(struct sb_av *v);

/* Export format version written in the header line. */
#define SB_AUDIT_EXPORT_FORMAT 1

#endif
