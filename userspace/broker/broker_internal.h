/* The broker's state, shared by its files (not an API). */
#ifndef SB_BROKER_INTERNAL_H
#define SB_BROKER_INTERNAL_H

#include <limits.h>

#include "audit/audit.h"
#include "broker.h"
#include "broker_memory.h"
#include "classify.h"
#include "queue/queue.h"

enum bh_state {
	BH_WAIT = 0,		/* waiting for its request's decision */
	BH_DECIDED,		/* verdict chosen, applied after its record is written */
	BH_DONE,		/* verdict applied (or the task is gone) */
};

/* One kernel hold: exactly one request of one thread. */
struct bhold {
	struct sb_hold_key key;
	uint64_t seq;
	uint64_t start_ns;
	uint32_t tgid;
	bool committed;		/* after exec's point of no return: continue or kill */
	enum bh_state state;
	uint8_t verdict;	/* SB_VERDICT_* once decided */
	char req[SB_QUEUE_ID_MAX + 1];	/* its queue request, "" when a rule decided */
	int64_t since_ms;
	bool unrecorded;	/* the record of its allow was lost: deny instead */
};

/* A hold whose request could not be filed: dropped, taken on again by the
 * next reconciliation, and denied once it failed for the escalation
 * timeout. */
struct bunfiled {
	uint32_t tid;
	uint64_t seq;
	int64_t first_ms, last_ms;
};

/* One queue request (several holds may share it: same key and process). */
struct breq {
	char id[SB_QUEUE_ID_MAX + 1];
	int pid;
	int64_t created_ms, deadline_ms;
	bool decided;
	bool recorded;		/* verdict/timeout record queued */
	struct sb_queue_decision dec;
	enum sb_trigger trigger;
	char what[512];
};

struct sb_broker {
	struct sb_broker_opts o;
	char folder[PATH_MAX];
	char sandbox[256];
	char cgroup_rel[PATH_MAX];
	char proc[PATH_MAX];
	char source[PATH_MAX];
	const struct sb_policy *policy;
	long hz;
	struct sb_queue *q;
	struct sb_queue_notify *qn;
	struct sb_bmem mem;
	struct sb_memory cmem;		/* the classifier's view of mem */
	bool rules_changed;
	struct bhold *h;
	size_t nh, caph;
	struct breq *r;
	size_t nr, capr;
	struct bunfiled *uf;
	size_t nuf, capuf;
	uint64_t resolved;
	/* audit */
	struct sb_audit *a;
	struct cJSON **rec;		/* records waiting to be written */
	size_t nrec, caprec;
	bool audit_failing;
	uint64_t audit_dropped;
	int64_t audit_err_ms;		/* last time the failure was reported */
	/* counters already recorded */
	struct sb_counters last[SB_HOOK__COUNT];
	bool have_last;
	int64_t next_reconcile_ms;
};

int64_t bk_now(const struct sb_broker *b);
void bk_log(struct sb_broker *b, const char *kind, struct cJSON *detail, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* broker_hold.c */
int bk_on_held(struct sb_broker *b, const struct sb_kevent *ev, bool adopted);
struct bhold *bk_find_hold(struct sb_broker *b, uint32_t tid, uint64_t seq);
void bk_unfiled_prune(struct sb_broker *b);

/* broker_decide.c */
struct breq *bk_find_req(struct sb_broker *b, const char *id);
struct breq *bk_add_req(struct sb_broker *b, const char *id);
void bk_hold_decide(struct sb_broker *b, struct bhold *h, uint8_t verdict);
int bk_progress(struct sb_broker *b);
int bk_check_requests(struct sb_broker *b);
int bk_deadlines(struct sb_broker *b);
int bk_apply_hold(struct sb_broker *b, struct bhold *h);

/* broker_audit.c */
int bk_audit_open(struct sb_broker *b, struct sb_err *err);
void bk_audit_add(struct sb_broker *b, struct cJSON *rec);	/* takes ownership */
struct cJSON *bk_record(const struct sb_broker *b, const char *kind, const char *origin);
void bk_record_subject(struct cJSON *rec, const struct sb_kevent *ev);
void bk_record_kernel_event(struct sb_broker *b, const struct sb_kevent *ev);
int bk_audit_flush(struct sb_broker *b);
void bk_audit_counters(struct sb_broker *b);
void bk_audit_close(struct sb_broker *b);

/* broker_memory use */
int bk_memory_rebuild(struct sb_broker *b);

#endif
