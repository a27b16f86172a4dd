/* The audit chain: every decision the system takes, in a tamper-evident
 * sqlite store at FOLDER/.sandbox/audit.db. docs/audit.md is the reference
 * (record kinds and fields, canonical encoding, hashes, seals, export
 * format); this header is the API the broker, hook, MCP server, approver
 * and attach call.
 *
 * A handle is not thread-safe: give each thread or process its own. Any
 * number of processes may append at once; the store serialises them and
 * the chain never forks. Functions return 0 or a negative errno and fill
 * err; none prints. */
#ifndef SB_AUDIT_H
#define SB_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sb_err.h"

struct cJSON;
struct sb_audit;

#define SB_AUDIT_HASH_LEN 32
#define SB_AUDIT_HEX_LEN (2 * SB_AUDIT_HASH_LEN + 1)	/* hex + NUL */
#define SB_AUDIT_PK_LEN 32				/* Ed25519 public key */
#define SB_AUDIT_TIME_LEN 31				/* "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" + NUL */

/* Largest canonical record the store accepts. */
#define SB_AUDIT_RECORD_MAX (64 * 1024)

/* sb_audit_open flags. */
#define SB_AUDIT_CREATE 0x1u	/* create .sandbox/ and the store when missing */
#define SB_AUDIT_READONLY 0x2u	/* verify, export, query: never writes */
#define SB_AUDIT_NO_SEAL 0x4u	/* a writer without access to the host key:
				 * neither periodic nor closing seals */

/* Opens FOLDER/.sandbox/audit.db. Without SB_AUDIT_CREATE a missing store
 * is -ENOENT. A created .sandbox/ is mode 0700, the store 0600. */
int sb_audit_open(const char *folder, unsigned flags, struct sb_audit **out, struct sb_err *err);

/* Flushes the counters, seals the head (unless SB_AUDIT_NO_SEAL or
 * read-only) and frees the handle, which is gone even when this fails.
 * A seal that fails for want of the key is not an error here: the next
 * sealing writer or `sandbox-bpf audit seal` covers these records. */
int sb_audit_close(struct sb_audit *a, struct sb_err *err);

/* Appends one record: a JSON object with "kind", "origin" and "sandbox"
 * (strings) and kind-specific fields; see docs/audit.md for the kinds. The
 * library adds "seq" and "time" and chains it. Numbers must be integers
 * within +-(2^53-1). Returns only after a durable commit; *seq_out (may be
 * NULL) gets the record's sequence number. */
int sb_audit_append(struct sb_audit *a, const struct cJSON *record, uint64_t *seq_out, struct sb_err *err);

/* Appends n records in one transaction: all or none. */
int sb_audit_append_batch(struct sb_audit *a, const struct cJSON *const *records, size_t n,
			  uint64_t *first_seq_out, struct sb_err *err);

/* Checks a record the way append would, without writing. "external" is
 * the origin that `audit append` forces (any valid kind name allowed). */
int sb_audit_record_check(const struct cJSON *record, struct sb_err *err);

/* Text from outside (paths, argv, /proc, the queue) made fit for a record
 * (docs/audit.md, "Text escaping"): a byte that is not part of valid UTF-8
 * becomes \xNN (two lowercase hex digits), a backslash becomes \\, so
 * \xNN in a record always stands for one byte. *out: a malloc'd escaped
 * copy, or NULL when s needs no change. 0 or -ENOMEM. */
int sb_audit_escape(const char *s, char **out);

/* Counts allowed fast-path events instead of storing one record each:
 * adds n to the counter (origin, sandbox, what, trigger), e.g. ("kernel",
 * "proj", "allowed", "write"). Counters are written as one "counters"
 * record per (origin, sandbox) by sb_audit_tick once the counter interval
 * has passed, by sb_audit_flush_counters, and by close. May write (and so
 * fail) when the in-memory table is full. */
int sb_audit_count(struct sb_audit *a, const char *origin, const char *sandbox, const char *what,
		   const char *trigger, uint64_t n, struct sb_err *err);
int sb_audit_flush_counters(struct sb_audit *a, struct sb_err *err);

/* Periodic work for long-running writers (the broker's event loop): flush
 * counters and seal when their intervals have passed. Cheap when nothing
 * is due. */
int sb_audit_tick(struct sb_audit *a, struct sb_err *err);

/* Seal policy of this handle: seal after `records` appends by it or
 * `seconds` after its last seal, whichever comes first (0 disables that
 * bound). Defaults: 1000 records, 300 s. Counters: every 60 s. */
void sb_audit_set_intervals(struct sb_audit *a, uint64_t seal_records, unsigned seal_seconds,
			    unsigned counter_seconds);

struct sb_audit_seal_info {
	uint64_t seq;				/* records covered: 1..seq */
	char head_hash[SB_AUDIT_HEX_LEN];
	char time[SB_AUDIT_TIME_LEN];
	char pubkey[SB_AUDIT_HEX_LEN];
	bool created;				/* false: the head was sealed already */
};

/* Signs the current head with the host key (created when missing) and
 * stores the seal. An empty store has nothing to seal (info->seq == 0). */
int sb_audit_seal(struct sb_audit *a, struct sb_audit_seal_info *info, struct sb_err *err);

/* Message of the last periodic seal that failed, or NULL. */
const char *sb_audit_seal_error(const struct sb_audit *a);

/* Current head: seq 0 and the all-zero hash for an empty store. */
int sb_audit_head(struct sb_audit *a, uint64_t *seq, char hash[SB_AUDIT_HEX_LEN], struct sb_err *err);

/* --- host key (Ed25519) ---------------------------------------------- */

/* Directory of audit-ed25519.key (0600, root-only) and audit-ed25519.pub:
 * $SANDBOX_BPF_KEY_DIR when set, else /var/lib/sandbox-bpf. */
const char *sb_audit_key_dir(void);

/* Parses a public key given as 64 hex digits or as a file holding them
 * (an audit-ed25519.pub). */
int sb_audit_pubkey_parse(const char *arg, uint8_t pk[SB_AUDIT_PK_LEN], struct sb_err *err);

/* --- time ------------------------------------------------------------- */

/* Now, UTC, RFC 3339 with nanoseconds: the form every record carries. */
void sb_audit_time_now(char out[SB_AUDIT_TIME_LEN]);

/* Parses a time bound for --since/--until into that same form so that
 * byte order is time order: RFC 3339 ("2025-06-01T12:00:00Z", offsets,
 * fractions), a date ("2025-06-01" = its midnight UTC), or a duration
 * before now ("90s", "15m", "2h", "7d"). */
int sb_audit_time_parse(const char *in, char out[SB_AUDIT_TIME_LEN], struct sb_err *err);

/* --- verification ----------------------------------------------------- */

enum sb_audit_problem {
	SB_AUDIT_INTACT = 0,
	SB_AUDIT_EDITED,	/* content does not match its hash, or a record was replaced */
	SB_AUDIT_MISSING,	/* records deleted from the middle (or start) */
	SB_AUDIT_INSERTED,	/* an extra record claims a seq that exists */
	SB_AUDIT_REORDERED,	/* records out of order */
	SB_AUDIT_TRUNCATED,	/* a seal covers records that are gone */
	SB_AUDIT_REWRITTEN,	/* the chain no longer ends in a sealed head hash */
	SB_AUDIT_BAD_SIGNATURE,	/* a seal's signature does not verify */
	SB_AUDIT_KEY_MISMATCH,	/* a seal signed by another key than expected */
	SB_AUDIT_MALFORMED,	/* unparseable line, record or seal */
	SB_AUDIT_UNSEALED,	/* --require-seal: records after the last seal */
	SB_AUDIT_FILTER,	/* an export elided a record its filter selects */
};
const char *sb_audit_problem_name(enum sb_audit_problem p);

struct sb_audit_verify_opts {
	const uint8_t *pubkey;	/* pinned key (32 bytes), or NULL: all seals by one key */
	bool require_seal;	/* records after the last seal are a failure */
};

struct sb_audit_report {
	enum sb_audit_problem problem;
	uint64_t problem_seq;		/* first broken record (or the seal's seq) */
	char detail[512];
	uint64_t records;		/* records checked (full + elided) */
	uint64_t elided;		/* records of an export reduced to their envelope */
	uint64_t seals;
	uint64_t first_seq, last_seq;
	uint64_t sealed_seq;		/* last seq covered by a valid seal (0: none) */
	char first_time[SB_AUDIT_TIME_LEN], last_time[SB_AUDIT_TIME_LEN];
	char anchor_hash[SB_AUDIT_HEX_LEN];	/* prev_hash of the first record */
	char head_hash[SB_AUDIT_HEX_LEN];
	char pubkey[SB_AUDIT_HEX_LEN];	/* the key the seals were signed with */
	bool pinned;
};

/* Both return 0 when verification ran to a verdict (report->problem says
 * which) and a negative errno when it could not run (no store, I/O). */
int sb_audit_verify_store(struct sb_audit *a, const struct sb_audit_verify_opts *o,
			  struct sb_audit_report *r, struct sb_err *err);
int sb_audit_verify_file(const char *path, const struct sb_audit_verify_opts *o,
			 struct sb_audit_report *r, struct sb_err *err);
/* An export held in memory (plain or gzip): the parser behind --file. */
int sb_audit_verify_buffer(const void *data, size_t len, const struct sb_audit_verify_opts *o,
			   struct sb_audit_report *r, struct sb_err *err);

/* The report as JSON (for --json). */
struct cJSON *sb_audit_report_json(const struct sb_audit_report *r);

/* --- export and query ------------------------------------------------- */

struct sb_audit_filter {
	const char *since, *until;	/* canonical times (sb_audit_time_parse), or NULL */
	const char *sandbox;		/* exact sandbox name, or NULL */
};

struct sb_audit_export_stats {
	uint64_t first_seq, last_seq;	/* the exported slice (0, 0: empty) */
	uint64_t records, elided, seals;
	bool sealed_now;		/* export sealed the head first */
	char seal_error[256];		/* why it could not, when it tried */
};

/* Writes the export to path (gzip when it ends in ".gz"), atomically
 * (temp file, fsync, rename). Seals the head first when it is not sealed
 * and the key is at hand. */
int sb_audit_export(struct sb_audit *a, const struct sb_audit_filter *f, const char *path,
		    struct sb_audit_export_stats *st, struct sb_err *err);

struct sb_audit_query {
	struct sb_audit_filter f;
	const char *kind, *trigger, *decision;	/* exact, or NULL */
	const char *path, *command;		/* substrings, or NULL */
	bool has_pid;
	int64_t pid;
	uint64_t after_seq;	/* only records with seq > after_seq */
	uint64_t last;		/* only the last N matches (0: all) */
};

/* Calls cb(record, arg) for each matching record in seq order; record is
 * the stored object (with seq and time) plus "hash". A non-zero return of
 * cb stops the walk and is returned. */
int sb_audit_query_run(struct sb_audit *a, const struct sb_audit_query *q,
		       int (*cb)(const struct cJSON *record, void *arg), void *arg, struct sb_err *err);

#endif
