/* The folder queue: .sandbox/escalations/ under a project folder, the only
 * bus between the kernel broker, the Claude Code hook, the MCP server and
 * the approvers (`sandbox-bpf watch|pending|approve|deny`). docs/queue.md
 * describes the layout, the file schemas and the guarantees.
 *
 *   pending/<id>.json    a request waiting for a human        (producer)
 *   claimed/<id>.json    a request a human is looking at      (approver)
 *   claimed/<id>.lease   who claimed it and until when        (approver)
 *   done/<id>.json       request + decision, exactly once     (decider)
 *   applied/<id>.json    hard link to done/: broker applied it (broker)
 *   out/<id>.txt         output of an approved privileged command
 *   quarantine/          malformed files, each with a .error note
 *   ../tmp/              temp files (same filesystem), renamed or linked in
 *
 * Every function returns 0 or a negative errno and fills err; nothing
 * prints. Files in the queue are untrusted input: every reader bounds
 * sizes, refuses symlinks and non-regular files, validates the schema
 * strictly and moves what fails to quarantine/ instead of failing.
 *
 * A struct sb_queue holds only directory descriptors and is immutable after
 * sb_queue_open (except the logger, set once before use), so one handle
 * may be shared by the broker's threads. A struct sb_queue_notify is for
 * one thread. */
#ifndef SB_QUEUE_H
#define SB_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "classify.h"
#include "policy.h"
#include "sb_err.h"

struct cJSON;

#define SB_QUEUE_ID_MAX 64		/* id length, without the NUL */
#define SB_QUEUE_FILE_MAX (1u << 20)	/* largest request/done/lease file */
#define SB_QUEUE_OUTPUT_MAX (16u << 20) /* largest out/<id>.txt */
#define SB_QUEUE_ARGV_MAX 4096
#define SB_QUEUE_CHAIN_MAX 64		/* process chain entries */
#define SB_QUEUE_NAME_MAX 128		/* reviewer, comm */
#define SB_QUEUE_OWNER_MAX 256		/* claim owner */
#define SB_QUEUE_TEXT_MAX (64u << 10)	/* command, cmdline */
#define SB_QUEUE_DEFAULT_LEASE_MS 60000
#define SB_QUEUE_CLAIM_GRACE_MS 30000	/* a claim without a lease file is kept this long */
#define SB_QUEUE_TMP_MAX_AGE_MS 600000	/* tmp files older than this are crash leftovers */

enum sb_queue_origin {
	SB_ORIGIN_KERNEL = 0,
	SB_ORIGIN_HOOK,
	SB_ORIGIN_MCP,
};
const char *sb_queue_origin_name(enum sb_queue_origin o);
int sb_queue_origin_parse(const char *s, enum sb_queue_origin *out);

enum sb_queue_state {
	SB_QS_NONE = 0,		/* not in the queue */
	SB_QS_PENDING,
	SB_QS_CLAIMED,
	SB_QS_DONE,		/* decided, not yet applied by the broker */
	SB_QS_APPLIED,		/* decided and acknowledged by the broker */
};
#define SB_QSM(s) (1u << (s))	/* state masks for sb_queue_list / notify */
const char *sb_queue_state_name(enum sb_queue_state s);

enum sb_queue_verdict {
	SB_QV_ALLOW = 0,
	SB_QV_DENY,
};

struct sb_queue_proc {
	int pid;
	const char *comm;	/* may be NULL */
	const char *cmdline;	/* may be NULL */
};

/* A request. Producers fill it with pointers to their own strings (nothing
 * is copied or freed by submit); parsed requests own their strings through
 * `own`, released by sb_queue_request_free. */
struct sb_queue_request {
	char id[SB_QUEUE_ID_MAX + 1];	/* set by submit, ignored on input */
	int64_t created_ms;		/* ms since the epoch; 0: submit uses now */
	int64_t deadline_ms;		/* 0: no deadline (broker's timeout) */
	enum sb_queue_origin origin;
	enum sb_trigger trigger;	/* must agree with kind */
	enum sb_event_kind kind;
	const char *key;		/* canonical key (sb_event_key); dedup with pid */
	/* the event */
	const char *path;		/* exec: executable (optional); write/read: target */
	const char *const *argv;	/* exec */
	size_t argc;
	const char *command;		/* exec: a shell command line (the hook's Bash input) */
	enum sb_write_op op;		/* write */
	const char *addr;		/* connect: address text, or NULL */
	const char *host;		/* connect: host name, or NULL */
	int port;			/* connect */
	enum sb_proto proto;		/* connect */
	/* where and who */
	const char *cwd;		/* absolute, or NULL */
	int pid;			/* requesting process (0 if unknown) */
	const struct sb_queue_proc *chain; /* pid first, then parent, ... */
	size_t nchain;
	const char *rule;		/* the matched rule ("default" ...) */
	const char *reason;		/* the classifier's reason */
	struct sb_queue_own *own;	/* parsed requests only */
};
void sb_queue_request_free(struct sb_queue_request *r);

/* Fills the event part (kind, trigger, path, argv, cwd, op, addr, host,
 * port, proto) from a classifier event. addr_buf receives the address text
 * and must outlive r. */
void sb_queue_request_set_event(struct sb_queue_request *r, const struct sb_event *ev,
				char addr_buf[48]);

/* A decision. Fixed buffers so a decider can build one on the stack. */
struct sb_queue_decision {
	enum sb_queue_verdict verdict;
	char reviewer[SB_QUEUE_NAME_MAX + 1];	/* who: a user, or "sandbox-bpf" */
	char reason[SB_REASON_MAX];		/* may be empty */
	bool remember;				/* allow only */
	enum sb_remember_scope scope;
	char remember_value[SB_PATH_MAX + 1];
	bool timed_out;				/* the broker's timeout decided */
	int64_t decided_ms;			/* 0: decide uses now */
};

struct sb_queue_lease {
	char owner[SB_QUEUE_OWNER_MAX + 1];
	int64_t claimed_ms;
	int64_t expires_ms;
};

/* One entry of the queue as read from disk. */
struct sb_queue_item {
	enum sb_queue_state state;
	struct sb_queue_request req;
	bool has_decision;		/* done, applied */
	struct sb_queue_decision dec;
	bool has_lease;			/* claimed (a fresh claim may have none yet) */
	struct sb_queue_lease lease;
};
void sb_queue_item_free(struct sb_queue_item *it);

struct sb_queue_list {
	struct sb_queue_item *items;	/* sorted by id: oldest first */
	size_t n;
	size_t quarantined;		/* malformed files moved aside by this scan */
};
void sb_queue_list_free(struct sb_queue_list *l);

/* ---- the handle --------------------------------------------------------- */

struct sb_queue;

#define SB_QUEUE_CREATE 0x1u	/* create the layout when missing */

/* Opens FOLDER/.sandbox/escalations. Without SB_QUEUE_CREATE a missing
 * queue is -ENOENT with a message. Symlinked queue directories and a tmp/
 * on another filesystem are refused. */
int sb_queue_open(const char *folder, unsigned flags, struct sb_queue **out, struct sb_err *err);
void sb_queue_close(struct sb_queue *q);
/* The escalations directory, for messages. */
const char *sb_queue_path(const struct sb_queue *q);

/* Called (from the calling thread) for every file moved to quarantine and
 * every crash leftover removed, so a broker can log them. Set before the
 * handle is shared. */
typedef void (*sb_queue_log_fn)(void *ctx, const char *msg);
void sb_queue_set_logger(struct sb_queue *q, sb_queue_log_fn fn, void *ctx);

/* ---- ids ---------------------------------------------------------------- */

/* "YYYYMMDD-HHMMSS-uuuuuu-rrrrrrrr": UTC time to the microsecond and 32
 * random bits. Sorting ids sorts by creation time. */
int sb_queue_id_new(char out[SB_QUEUE_ID_MAX + 1], int64_t now_us);
/* Any id a user gives: 1..64 of [A-Za-z0-9_-], starting with a letter or
 * digit. So no '/', no "..", no option-like leading '-'. */
bool sb_queue_id_valid(const char *id);
int sb_queue_id_check(const char *id, struct sb_err *err);

/* ---- producers: broker, hook, MCP server -------------------------------- */

struct sb_queue_submit_result {
	char id[SB_QUEUE_ID_MAX + 1];
	bool existing;			/* an identical request was already filed */
	enum sb_queue_state state;	/* its state: pending, claimed or done */
};

/* Validates and files a request in pending/. When a request with the same
 * key and pid is pending, claimed, or decided but not yet applied, nothing
 * is written and its id is returned with existing = true (the check and
 * the write are one step under a lock file, so concurrent submitters file
 * it once). */
int sb_queue_submit(struct sb_queue *q, const struct sb_queue_request *req,
		    struct sb_queue_submit_result *res, struct sb_err *err);

/* Waits until id is decided and fills dec (and the request, when req is
 * not NULL; free it with sb_queue_request_free). timeout_ms < 0 waits
 * forever. -ETIMEDOUT when the time is up, -ENOENT when the request left
 * the queue undecided (quarantined), -EBADMSG when its decision file was
 * malformed (quarantined: decide again). inotify on done/, polling when
 * inotify is unavailable. */
int sb_queue_wait(struct sb_queue *q, const char *id, int timeout_ms,
		  struct sb_queue_decision *dec, struct sb_queue_request *req, struct sb_err *err);

/* The broker applied the decision: links done/<id>.json into applied/ so a
 * restarted broker does not apply it again. -EALREADY when already acked
 * (harmless), -ENOENT when not decided. Ack after applying: a crash in
 * between re-applies on restart, so applying must be idempotent. */
int sb_queue_ack(struct sb_queue *q, const char *id, struct sb_err *err);

/* Startup recovery: removes crash leftovers in tmp/ (writer dead or file
 * older than SB_QUEUE_TMP_MAX_AGE_MS), quarantines malformed files in every
 * state, removes pending/claimed copies of decided requests (the decision
 * wins), returns expired or lease-less claims to pending and removes
 * orphan leases. Decisions not yet applied are left in done/ for
 * sb_queue_list(SB_QSM(SB_QS_DONE)). */
struct sb_queue_recover_stats {
	size_t tmp_removed, quarantined, reclaimed, stale_removed, leases_removed;
	size_t pending, claimed, done;
};
int sb_queue_recover(struct sb_queue *q, struct sb_queue_recover_stats *st, struct sb_err *err);

/* Removes applied requests (done + applied + out) and quarantine entries
 * whose files are older than now - max_age_ms. */
int sb_queue_prune(struct sb_queue *q, int64_t max_age_ms, size_t *removed, struct sb_err *err);

/* ---- approvers ---------------------------------------------------------- */

/* Lists the requests in the given states (SB_QSM mask), validating every
 * file and quarantining malformed ones. SB_QS_DONE lists decisions not yet
 * applied. */
int sb_queue_list(struct sb_queue *q, unsigned states, struct sb_queue_list *out, struct sb_err *err);

/* Where a request is now, without reading it (cheap enough to poll). */
int sb_queue_locate(struct sb_queue *q, const char *id, enum sb_queue_state *state, struct sb_err *err);
/* Loads one request in whatever state it is. -ENOENT when unknown. */
int sb_queue_get(struct sb_queue *q, const char *id, struct sb_queue_item *out, struct sb_err *err);

/* Claims a pending request for owner (rename pending -> claimed: one
 * winner) and writes its lease. -EBUSY when someone else holds it,
 * -EALREADY when decided, -ENOENT when unknown. lease_ms <= 0 uses
 * SB_QUEUE_DEFAULT_LEASE_MS. */
int sb_queue_claim(struct sb_queue *q, const char *id, const char *owner, int lease_ms,
		   struct sb_err *err);
/* Claims the oldest pending request and loads it into out. -ENOENT when
 * nothing is pending. */
int sb_queue_claim_next(struct sb_queue *q, const char *owner, int lease_ms,
			struct sb_queue_item *out, struct sb_err *err);
/* Extends owner's lease. -EPERM when the lease is someone else's, -ENOENT
 * when the claim is gone (reclaimed or decided). */
int sb_queue_renew(struct sb_queue *q, const char *id, const char *owner, int lease_ms,
		   struct sb_err *err);
/* Gives owner's claim back to pending. 0 also when it is no longer claimed. */
int sb_queue_release(struct sb_queue *q, const char *id, const char *owner, struct sb_err *err);
/* Returns claims whose lease expired (or that have had no lease for
 * SB_QUEUE_CLAIM_GRACE_MS) to pending. now_ms 0 means the clock. */
int sb_queue_reclaim_stale(struct sb_queue *q, int64_t now_ms, size_t *reclaimed, struct sb_err *err);

/* Validates d against the request (remember: allow only, scope applicable
 * to the trigger, value accepted by sb_memory_add) and canonicalises the
 * remember value in place. */
int sb_queue_decision_check(const struct sb_queue_request *r, struct sb_queue_decision *d,
			    struct sb_err *err);
/* The value a scope remembers by default for a request: once = its key,
 * command = the command line, prefix = its first two words, dir = the
 * directory of its path, host = its host (or address). */
int sb_queue_remember_default(const struct sb_queue_request *r, enum sb_remember_scope s,
			      char *out, size_t out_len, struct sb_err *err);

/* Decides a pending or claimed request exactly once: the done file is
 * linked into place (link(2) fails if it exists), so of two racing
 * deciders one wins and the other gets -EALREADY (err names the winner).
 * -ENOENT when unknown. d is checked with sb_queue_decision_check. */
int sb_queue_decide(struct sb_queue *q, const char *id, const struct sb_queue_decision *d,
		    struct sb_err *err);

/* ---- outputs of approved privileged commands (MCP server) ---------------- */

/* Atomically writes (or replaces) out/<id>.txt. */
int sb_queue_write_output(struct sb_queue *q, const char *id, const void *data, size_t len,
			  struct sb_err *err);
/* Reads out/<id>.txt (at most SB_QUEUE_OUTPUT_MAX); *data is NUL-terminated
 * and freed by the caller. */
int sb_queue_read_output(struct sb_queue *q, const char *id, char **data, size_t *len,
			 struct sb_err *err);

/* ---- change notification ----------------------------------------------- */

struct sb_queue_notify;

/* Watches the directories of the given states (SB_QSM mask) for files
 * arriving or leaving. Falls back to polling when inotify is unavailable. */
int sb_queue_notify_open(struct sb_queue *q, unsigned states, struct sb_queue_notify **out,
			 struct sb_err *err);
/* An fd to poll(2) for POLLIN, or -1 when polling. */
int sb_queue_notify_fd(const struct sb_queue_notify *n);
/* Waits up to timeout_ms (< 0: forever) for a change and drains the
 * events. 1: something may have changed (rescan), 0: timeout. When polling
 * it sleeps at most SB_QUEUE_POLL_MS and returns 1. */
#define SB_QUEUE_POLL_MS 200
int sb_queue_notify_wait(struct sb_queue_notify *n, int timeout_ms);
/* Drains pending events without waiting. */
void sb_queue_notify_drain(struct sb_queue_notify *n);
void sb_queue_notify_close(struct sb_queue_notify *n);

/* ---- file formats (queue_request.c) ------------------------------------- */

/* Strict parsers for untrusted bytes: bounded, no unknown or duplicate
 * fields, no NUL bytes, every value checked. */
int sb_queue_request_parse(const char *text, size_t len, struct sb_queue_request *out,
			   struct sb_err *err);
int sb_queue_done_parse(const char *text, size_t len, struct sb_queue_request *req,
			struct sb_queue_decision *dec, struct sb_err *err);
int sb_queue_lease_parse(const char *text, size_t len, char id[SB_QUEUE_ID_MAX + 1],
			 struct sb_queue_lease *out, struct sb_err *err);

/* Serialisers. NULL on allocation failure. The request must carry an id. */
struct cJSON *sb_queue_request_to_json(const struct sb_queue_request *r);
struct cJSON *sb_queue_decision_to_json(const struct sb_queue_decision *d);
struct cJSON *sb_queue_done_to_json(const struct sb_queue_request *r, const struct sb_queue_decision *d);
struct cJSON *sb_queue_lease_to_json(const char *id, const struct sb_queue_lease *l);

/* RFC 3339 UTC with milliseconds: "2025-03-14T15:30:12.123Z". */
#define SB_QUEUE_TIME_LEN 32
void sb_queue_time_format(int64_t ms, char out[SB_QUEUE_TIME_LEN]);
int sb_queue_time_parse(const char *s, int64_t *ms);
int64_t sb_queue_now_ms(void);

/* ---- display helpers (queue_show.c) -------------------------------------- */

/* Copies s for a terminal: control characters, invalid UTF-8 and bidi
 * controls become \xNN / \u{NNNN} escapes, so a request cannot move the
 * cursor or disguise itself. Truncates with "..." to fit. */
void sb_queue_escape(const char *s, char *out, size_t out_len);
/* One line saying what a request wants (unescaped): the command line,
 * "write (create) /p/x", "read /p/.env", "connect github.com:443 (tcp)". */
void sb_queue_request_what(const struct sb_queue_request *r, char *out, size_t out_len);
/* "12s", "3m04s", "2h05m", "3d04h". */
void sb_queue_format_age(int64_t ms, char *out, size_t out_len);

#endif
