/* Shared between the queue's source files; not part of the API. */
#ifndef SB_QUEUE_INTERNAL_H
#define SB_QUEUE_INTERNAL_H

#include <limits.h>
#include <sys/stat.h>

#include "queue.h"

enum sbq_dir {
	SBQ_PENDING = 0,
	SBQ_CLAIMED,
	SBQ_DONE,
	SBQ_APPLIED,
	SBQ_OUT,
	SBQ_QUARANTINE,
	SBQ_TMP,	/* .sandbox/tmp */
	SBQ_ROOT,	/* .sandbox/escalations (holds the submit lock) */
	SBQ__COUNT
};

struct sb_queue {
	int dfd[SBQ__COUNT];
	char path[PATH_MAX];
	sb_queue_log_fn log;
	void *log_ctx;
};

const char *sbq_dir_name(enum sbq_dir d);
enum sbq_dir sbq_state_dir(enum sb_queue_state s);

/* "<id>.json" / "<id>.lease" / "<id>.txt" into out (NAME_MAX + 1). */
#define SBQ_NAME_LEN 96
void sbq_name(const char *id, const char *ext, char out[SBQ_NAME_LEN]);
/* Splits a directory entry "<id><ext>" and validates the id. */
bool sbq_name_id(const char *name, const char *ext, char id[SB_QUEUE_ID_MAX + 1]);

void sbq_log(struct sb_queue *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- queue_write.c: the only way files enter the queue ---- */

/* Writes data to a new file in tmp/ and fsyncs it. name receives its name. */
#define SBQ_TMP_NAME_LEN 64
int sbq_tmp_write(struct sb_queue *q, const void *data, size_t len, char name[SBQ_TMP_NAME_LEN],
		  struct sb_err *err);
/* Publishes a tmp file as dir/dst: link(2) when noreplace (-EEXIST if dst
 * exists), rename(2) otherwise. The tmp name is removed either way and
 * the destination directory is fsynced. */
int sbq_publish(struct sb_queue *q, const char *tmp, enum sbq_dir dir, const char *dst, bool noreplace,
		struct sb_err *err);
/* sbq_tmp_write + sbq_publish. */
int sbq_write_file(struct sb_queue *q, enum sbq_dir dir, const char *dst, const void *data, size_t len,
		   bool noreplace, struct sb_err *err);
/* cJSON -> text -> sbq_write_file; takes ownership of j. When check is
 * not NULL the text is parsed with it first, so nothing unreadable is
 * ever published. */
typedef int (*sbq_check_fn)(const char *text, size_t len, struct sb_err *err);
int sbq_write_json(struct sb_queue *q, enum sbq_dir dir, const char *dst, struct cJSON *j, bool noreplace,
		   sbq_check_fn check, struct sb_err *err);
int sbq_fsync_dir(struct sb_queue *q, enum sbq_dir dir);
/* rename without replacing (renameat2 RENAME_NOREPLACE, or link+unlink
 * where that is unsupported). -errno. */
int sbq_rename_noreplace(int from_dfd, const char *from, int to_dfd, const char *to);

/* ---- queue_scan.c: reading untrusted files ---- */

/* Reads a regular file (no symlinks, no FIFOs) of at most max bytes into
 * a NUL-terminated buffer. -ENOENT, -ELOOP (symlink), -EFTYPE style
 * -EINVAL (not a regular file), -EFBIG. */
int sbq_read_file(int dfd, const char *name, size_t max, char **out, size_t *len, struct sb_err *err);
/* Moves dir/name to quarantine/ with a .error note holding why. 0 also
 * when the file is already gone (someone else moved it). */
int sbq_quarantine(struct sb_queue *q, enum sbq_dir dir, const char *name, const char *why);

/* Loads and validates <id>.json from a state's directory. A malformed file
 * is quarantined and reported as -EBADMSG; a missing one is -ENOENT. */
int sbq_load(struct sb_queue *q, enum sb_queue_state state, const char *id, struct sb_queue_item *it,
	     struct sb_err *err);
/* Loads claimed/<id>.lease. -ENOENT, or -EBADMSG (quarantined). */
int sbq_load_lease(struct sb_queue *q, const char *id, struct sb_queue_lease *l, struct sb_err *err);
bool sbq_exists(struct sb_queue *q, enum sbq_dir dir, const char *id, const char *ext);
/* Where id is now: done/applied first (a decision wins over a stale
 * pending copy), then claimed, then pending. */
enum sb_queue_state sbq_locate(struct sb_queue *q, const char *id);

/* Directory listing: the ids of the "<id><ext>" entries, sorted. Names
 * that have no place in that directory (pending: <id>.json; claimed: also
 * <id>.lease; out: <id>.txt) are quarantined when quarantine_bad, and
 * counted in *bad. */
struct sbq_ids {
	char (*ids)[SB_QUEUE_ID_MAX + 1];
	size_t n, cap;
};
int sbq_list_ids(struct sb_queue *q, enum sbq_dir dir, const char *ext, bool quarantine_bad,
		 struct sbq_ids *out, size_t *bad, struct sb_err *err);
void sbq_ids_free(struct sbq_ids *ids);

/* A decision wins: removes the pending/claimed copies and the lease of a
 * decided id (a decider's own cleanup, or a crash leftover of it). */
void sbq_remove_undecided(struct sb_queue *q, const char *id);
bool sbq_decided(struct sb_queue *q, const char *id);

/* queue_claim.c: returns expired and lease-less claims (lease-less for
 * longer than grace_ms) to pending; removes orphan leases. */
int sbq_reclaim(struct sb_queue *q, int64_t now_ms, int64_t grace_ms, size_t *reclaimed,
		size_t *leases_removed, struct sb_err *err);
/* Modification or status-change time of dir/name in ms, whichever is later. */
int sbq_file_time(struct sb_queue *q, enum sbq_dir dir, const char *name, int64_t *ms);

#endif
