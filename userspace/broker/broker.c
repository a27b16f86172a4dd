/* The broker's life: open, start (recovery and adoption), events, queue
 * changes, ticks (deadlines, reconciliation with the kernel's holds,
 * counters), close. */
#include "broker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_internal.h"
#include "broker_krules.h"
#include "kernel/kpolicy.h"

/* A verdict written but never used by a task that runs on (it left the
 * syscall another way: a signal handler that never returned): dropped. */
#define ABANDONED_NS (60ULL * 1000000000ULL)
/* A verdict not used this long by a task that is still stopped: the
 * continue was lost (or another thread's hold stopped it again). */
#define RESEND_NS (2ULL * 1000000000ULL)
/* A used verdict is kept this long for the rest of its syscall. */
#define USED_KEEP_NS (10ULL * 1000000000ULL)

int64_t bk_now(const struct sb_broker *b)
{
	return b->o.now_ms ? b->o.now_ms(b->o.clock_arg) : sb_queue_now_ms();
}

void bk_log(struct sb_broker *b, const char *kind, cJSON *detail, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (b->o.log)
		b->o.log(b->o.log_arg, kind, text, detail);
	cJSON_Delete(detail);
}

int bk_memory_rebuild(struct sb_broker *b)
{
	struct sb_memory m;
	struct sb_err err = { { 0 } };
	int rc = sb_bmem_to_memory(&b->mem, &m, &err);

	if (rc)
		return rc;
	sb_memory_free(&b->cmem);
	b->cmem = m;
	return 0;
}

static void queue_log(void *ctx, const char *msg)
{
	bk_log(ctx, "queue", NULL, "%s", msg);
}

int sb_broker_open(struct sb_broker **out, const struct sb_broker_opts *o, struct sb_err *err)
{
	struct sb_broker *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->o = *o;
	snprintf(b->folder, sizeof(b->folder), "%s", o->folder);
	snprintf(b->sandbox, sizeof(b->sandbox), "%.255s", o->sandbox ? o->sandbox : "");
	snprintf(b->cgroup_rel, sizeof(b->cgroup_rel), "%s", o->cgroup_rel ? o->cgroup_rel : "/");
	snprintf(b->proc, sizeof(b->proc), "%s", o->proc_root ? o->proc_root : "/proc");
	snprintf(b->source, sizeof(b->source), "%s", o->policy_source ? o->policy_source : "");
	b->policy = o->policy;
	b->hz = sysconf(_SC_CLK_TCK);
	sb_bmem_init(&b->mem);
	sb_memory_init(&b->cmem);
	rc = sb_queue_open(b->folder, SB_QUEUE_CREATE, &b->q, err);
	if (rc)
		goto fail;
	sb_queue_set_logger(b->q, queue_log, b);
	rc = sb_queue_notify_open(b->q, SB_QSM(SB_QS_DONE) | SB_QSM(SB_QS_APPLIED) | SB_QSM(SB_QS_PENDING), &b->qn,
				  err);
	if (rc)
		goto fail;
	rc = sb_bmem_load(b->folder, &b->mem, err);
	if (rc)
		goto fail;
	rc = bk_memory_rebuild(b);
	if (rc) {
		sb_errf(err, rc, "remembered decisions: invalid entry");
		goto fail;
	}
	rc = bk_audit_open(b, err);
	if (rc) {
		sb_err_prefix(err, "the audit chain cannot be opened (%s/.sandbox/audit.db): ", b->folder);
		if (!(o->flags & SB_BROKER_AUDIT_OPTIONAL))
			goto fail;
		bk_log(b, "audit-error", NULL, "AUDIT CHAIN NOT OPEN: %s; retried every second", err->msg);
		b->audit_failing = true;
		rc = 0;
	}
	b->rules_changed = b->mem.n > 0;
	*out = b;
	return 0;
fail:
	sb_broker_close(b, false);
	return rc;
}

static bool tid_waiting(const struct sb_khold *l, size_t n, uint32_t tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (l[i].key.tid == tid && !l[i].has_verdict)
			return true;
	return false;
}

static bool in_list(const struct sb_khold *l, size_t n, const struct bhold *h)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (l[i].key.tid == h->key.tid && l[i].h.ev.seq == h->seq)
			return true;
	return false;
}

/* The kernel's holds are the truth: take on the ones not known here (a
 * lost event, a restart), finish what a crash interrupted, clean up after
 * dead tasks. */
static int reconcile(struct sb_broker *b)
{
	const struct sb_broker_kops *k = b->o.kops;
	struct sb_khold *l = NULL;
	uint64_t mono = k->mono_ns ? k->mono_ns(k->arg) : 0;
	size_t n = 0, i;
	int rc;

	rc = k->list(k->arg, b->o.sandbox_id, &l, &n);
	if (rc) {
		bk_log(b, "error", NULL, "cannot read the kernel's holds: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; i < n; i++) {
		struct sb_khold *e = &l[i];
		uint32_t tgid = e->h.ev.tgid, tid = e->key.tid;
		uint64_t start = e->h.ev.start_ns, seq = e->h.ev.seq;
		bool stopped = false;

		rc = k->task(k->arg, tgid, tid, start, &stopped);
		if (rc == -ESRCH) {
			k->forget(k->arg, &e->key, seq);
			continue;
		}
		if (rc)
			continue;	/* /proc unreadable for now: next round */
		if (!e->has_verdict) {
			if (!bk_find_hold(b, tid, seq))
				bk_on_held(b, &e->h.ev, true);
			continue;
		}
		if (bk_find_hold(b, tid, seq))
			continue;	/* being applied by this broker */
		if (e->h.committed) {
			/* Verdict written, then the broker died (or applied and
			 * waiting to be used): finish it. An allow stays until
			 * the task's first hook has used it. */
			if (e->v.verdict != SB_VERDICT_ALLOW) {
				k->signal(k->arg, tgid, tid, start, SIGKILL);
				k->forget(k->arg, &e->key, seq);
			} else if (e->h.used) {
				k->forget(k->arg, &e->key, seq);
			} else if (stopped) {
				k->signal(k->arg, tgid, tid, start, SIGCONT);
			}
		} else if (!e->h.used) {
			if (stopped && mono > e->v.set_ns && mono - e->v.set_ns > RESEND_NS)
				k->signal(k->arg, tgid, tid, start, SIGCONT);	/* continue lost, or re-stopped */
			else if (mono > e->v.set_ns && mono - e->v.set_ns > ABANDONED_NS)
				k->forget(k->arg, &e->key, seq);
		} else if (mono > e->h.used_ns && mono - e->h.used_ns > USED_KEEP_NS && !tid_waiting(l, n, tid)) {
			k->forget(k->arg, &e->key, seq);
		}
	}
	/* Holds missing from the list: when their task is gone there is
	 * nothing to apply. A live task's hold stays (a listing of a hash map
	 * that changes meanwhile can miss an entry; its request still
	 * resolves it). */
	for (i = 0; i < b->nh; i++) {
		struct bhold *h = &b->h[i];

		if (h->state == BH_DONE || in_list(l, n, h))
			continue;
		if (k->task(k->arg, h->tgid, h->key.tid, h->start_ns, NULL) == -ESRCH)
			h->state = BH_DONE;
		else
			bk_log(b, "debug", NULL, "hold %llu of pid %u is not in the kernel's list (kept)",
			       (unsigned long long)h->seq, h->tgid);
	}
	free(l);
	return 0;
}

/* Requests in the queue from before this broker whose requester is gone
 * are settled (denied if undecided, acknowledged). The live ones are
 * taken on with their holds (reconcile: filing finds them, with their
 * deadline and any decision made meanwhile). */
static void settle_orphans(struct sb_broker *b)
{
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	size_t i;

	if (sb_queue_list(b->q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED) | SB_QSM(SB_QS_DONE), &l, &err))
		return;
	for (i = 0; i < l.n; i++) {
		const struct sb_queue_item *it = &l.items[i];
		char path[PATH_MAX + 16];

		if (it->req.origin != SB_ORIGIN_KERNEL || bk_find_req(b, it->req.id))
			continue;
		snprintf(path, sizeof(path), "%s/%d", b->proc, it->req.pid);
		if (it->req.pid > 0 && access(path, F_OK) != 0) {
			if (!it->has_decision) {
				struct sb_queue_decision t = { .verdict = SB_QV_DENY };

				snprintf(t.reviewer, sizeof(t.reviewer), "sandbox-bpf");
				snprintf(t.reason, sizeof(t.reason), "the requesting process is gone");
				sb_queue_decide(b->q, it->req.id, &t, NULL);
			}
			sb_queue_ack(b->q, it->req.id, NULL);
		}
	}
	sb_queue_list_free(&l);
}

/* Decided requests of live processes that no held task waits for (after
 * reconcile took on every hold still waiting): the broker before this one
 * applied them and died before acknowledging (or their holds ended). They
 * are taken on like any decided request: recorded, remembered if asked,
 * acknowledged. Left alone, the queue's dedup would hand their decision
 * to the next identical request of the process, with no human. */
static int take_on_decided(struct sb_broker *b)
{
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	size_t i;
	int rc;

	rc = sb_queue_list(b->q, SB_QSM(SB_QS_DONE), &l, &err);
	if (rc) {
		bk_log(b, "error", NULL, "cannot list the decided requests: %s", err.msg);
		return rc;
	}
	for (i = 0; i < l.n; i++) {
		const struct sb_queue_item *it = &l.items[i];
		struct breq *q;

		if (it->req.origin != SB_ORIGIN_KERNEL || !it->has_decision || bk_find_req(b, it->req.id))
			continue;
		q = bk_add_req(b, it->req.id);
		if (!q) {
			rc = -ENOMEM;
			break;
		}
		q->pid = it->req.pid;
		q->trigger = it->req.trigger;
		q->created_ms = it->req.created_ms;
		q->deadline_ms = it->req.deadline_ms;
		q->dec = it->dec;
		q->decided = true;
		snprintf(q->what, sizeof(q->what), "%s", it->req.key);
	}
	sb_queue_list_free(&l);
	return rc;
}

static void policy_record(struct sb_broker *b)
{
	cJSON *rec = bk_record(b, "policy_load", "broker");

	if (!rec)
		return;
	cJSON_AddStringToObject(rec, "policy_hash", b->policy->hash);
	cJSON_AddStringToObject(rec, "source", b->source);
	cJSON_AddNumberToObject(rec, "rules", (double)b->policy->nrules);
	cJSON_AddNumberToObject(rec, "remembered", (double)b->mem.n);
	bk_audit_add(b, rec);
}

int sb_broker_start(struct sb_broker *b, const char *cgroup, struct sb_err *err)
{
	const struct sb_broker_kops *k = b->o.kops;
	struct sb_queue_recover_stats st;
	cJSON *rec;
	int rc;

	rc = sb_queue_recover(b->q, &st, err);
	if (rc)
		return rc;
	if (st.pending || st.claimed || st.done || st.quarantined || st.reclaimed)
		bk_log(b, "queue", NULL,
		       "queue %s: %zu pending, %zu claimed, %zu decided and not yet applied; %zu malformed files quarantined, %zu claims returned",
		       sb_queue_path(b->q), st.pending, st.claimed, st.done, st.quarantined, st.reclaimed);
	if (k->counters && k->counters(k->arg, b->o.sandbox_id, b->last) == 0)
		b->have_last = true;	/* counts before now were recorded by whoever ran before */
	rec = bk_record(b, "attach", "broker");
	if (rec) {
		cJSON_AddStringToObject(rec, "cgroup", cgroup ? cgroup : "");
		cJSON_AddStringToObject(rec, "backend", "bpf-lsm");
		cJSON_AddNumberToObject(rec, "pid", getpid());
		bk_audit_add(b, rec);
	}
	policy_record(b);
	settle_orphans(b);
	reconcile(b);
	bk_check_requests(b);
	take_on_decided(b);
	bk_progress(b);
	if (b->nh)
		bk_log(b, "adopted", NULL, "%zu held task%s taken on", b->nh, b->nh == 1 ? "" : "s");
	return 0;
}

int sb_broker_event(struct sb_broker *b, const struct sb_kevent *ev)
{
	if (ev->sandbox != b->o.sandbox_id)
		return 0;
	if (ev->action == SB_ACT_ESCALATED && (ev->flags & SB_EVF_HELD))
		return bk_on_held(b, ev, false);
	bk_record_kernel_event(b, ev);
	return 0;
}

int sb_broker_queue_fd(const struct sb_broker *b)
{
	return sb_queue_notify_fd(b->qn);
}

int sb_broker_queue_changed(struct sb_broker *b)
{
	sb_queue_notify_drain(b->qn);
	bk_check_requests(b);
	return bk_progress(b);
}

int sb_broker_tick(struct sb_broker *b)
{
	bk_check_requests(b);	/* also covers a lost or missing inotify */
	bk_deadlines(b);
	reconcile(b);
	bk_unfiled_prune(b);
	bk_audit_counters(b);
	return bk_progress(b);
}

int sb_broker_flush(struct sb_broker *b)
{
	return bk_progress(b);
}

void sb_broker_set_policy(struct sb_broker *b, const struct sb_policy *p, const char *source)
{
	b->policy = p;
	if (source)
		snprintf(b->source, sizeof(b->source), "%s", source);
	policy_record(b);
}

int sb_broker_reload_memory(struct sb_broker *b, struct sb_err *err)
{
	struct sb_bmem m;
	int rc = sb_bmem_load(b->folder, &m, err);

	if (rc)
		return rc;
	sb_bmem_free(&b->mem);
	b->mem = m;
	rc = bk_memory_rebuild(b);
	b->rules_changed = true;
	return rc;
}

bool sb_broker_take_rules_changed(struct sb_broker *b)
{
	bool c = b->rules_changed;

	b->rules_changed = false;
	return c;
}

int sb_broker_kernel_rules(const struct sb_broker *b, const struct sb_policy *p, const struct sb_compiled *c,
			   struct sb_kpolicy_extra **out, size_t *n)
{
	struct sb_krules k;
	int rc = sb_krules_compute(p, c, &b->mem, &k);

	*out = rc ? NULL : k.r;
	*n = rc ? 0 : k.n;
	return rc;
}

void sb_broker_kernel_rules_free(struct sb_kpolicy_extra *r, size_t n)
{
	struct sb_krules k = { .r = r, .n = n };

	sb_krules_free(&k);
}

void sb_broker_stats(const struct sb_broker *b, struct sb_broker_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < b->nh; i++)
		if (b->h[i].state != BH_DONE)
			st->holds++;
	for (i = 0; i < b->nr; i++)
		if (!b->r[i].decided)
			st->requests++;
	st->resolved = b->resolved;
	st->audit_backlog = b->nrec;
	st->audit_dropped = b->audit_dropped;
	st->remembered = b->mem.n;
}

void sb_broker_close(struct sb_broker *b, bool detach)
{
	if (!b)
		return;
	if (detach && !(b->o.flags & SB_BROKER_NO_AUDIT)) {
		cJSON *rec = bk_record(b, "detach", "broker");

		if (rec) {
			cJSON_AddStringToObject(rec, "backend", "bpf-lsm");
			bk_audit_add(b, rec);
		}
	}
	bk_audit_close(b);
	sb_queue_notify_close(b->qn);
	sb_queue_close(b->q);
	sb_bmem_free(&b->mem);
	sb_memory_free(&b->cmem);
	free(b->h);
	free(b->r);
	free(b->uf);
	free(b);
}
