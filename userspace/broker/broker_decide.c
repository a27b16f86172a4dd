/* Decisions: picked up from the queue (an approver decided), made by the
 * deadline (deny, exactly once: the queue's link(2) decides who wins
 * between a human and the timeout), applied to every hold of the request
 * after checking each held task is still the same task, acknowledged in
 * the queue, and remembered when the approver asked. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_internal.h"

struct breq *bk_find_req(struct sb_broker *b, const char *id)
{
	size_t i;

	for (i = 0; i < b->nr; i++)
		if (!strcmp(b->r[i].id, id))
			return &b->r[i];
	return NULL;
}

struct breq *bk_add_req(struct sb_broker *b, const char *id)
{
	struct breq *q;

	if (b->nr == b->capr) {
		size_t ncap = b->capr ? b->capr * 2 : 32;
		struct breq *nr = realloc(b->r, ncap * sizeof(*nr));

		if (!nr)
			return NULL;
		b->r = nr;
		b->capr = ncap;
	}
	q = &b->r[b->nr++];
	memset(q, 0, sizeof(*q));
	snprintf(q->id, sizeof(q->id), "%s", id);
	return q;
}

void bk_hold_decide(struct sb_broker *b, struct bhold *h, uint8_t verdict)
{
	(void)b;
	h->verdict = verdict;
	h->state = BH_DECIDED;
}

static void local_deny(struct breq *q, const char *reason)
{
	memset(&q->dec, 0, sizeof(q->dec));
	q->dec.verdict = SB_QV_DENY;
	snprintf(q->dec.reviewer, sizeof(q->dec.reviewer), "sandbox-bpf");
	snprintf(q->dec.reason, sizeof(q->dec.reason), "%s", reason);
	q->decided = true;
}

int bk_check_requests(struct sb_broker *b)
{
	struct sb_err err = { { 0 } };
	size_t i;

	for (i = 0; i < b->nr; i++) {
		struct breq *q = &b->r[i];
		enum sb_queue_state st;
		struct sb_queue_item it;

		if (q->decided)
			continue;
		if (sb_queue_locate(b->q, q->id, &st, &err))
			continue;
		if (st == SB_QS_PENDING || st == SB_QS_CLAIMED)
			continue;
		if (st == SB_QS_NONE) {
			/* Quarantined or removed by hand: nobody can decide it
			 * any more. */
			local_deny(q, "the request left the queue without a decision");
			bk_log(b, "error", NULL, "request %s left the queue without a decision: denied", q->id);
			continue;
		}
		if (sb_queue_get(b->q, q->id, &it, &err))
			continue;
		if (it.has_decision) {
			q->dec = it.dec;
			q->decided = true;
		}
		sb_queue_item_free(&it);
	}
	return 0;
}

int bk_deadlines(struct sb_broker *b)
{
	int64_t now = bk_now(b);
	size_t i;

	for (i = 0; i < b->nr; i++) {
		struct breq *q = &b->r[i];
		struct sb_queue_decision t;
		struct sb_queue_item it;
		struct sb_err err = { { 0 } };
		int rc;

		if (q->decided || !q->deadline_ms || now < q->deadline_ms)
			continue;
		memset(&t, 0, sizeof(t));
		t.verdict = SB_QV_DENY;
		t.timed_out = true;
		snprintf(t.reviewer, sizeof(t.reviewer), "sandbox-bpf");
		snprintf(t.reason, sizeof(t.reason), "nobody decided within %u s (escalation_timeout_seconds)",
			 b->policy->escalation_timeout);
		rc = sb_queue_decide(b->q, q->id, &t, &err);
		if (rc == 0) {
			q->dec = t;
			q->decided = true;
			bk_log(b, "timeout", NULL, "TIMEOUT request %s (%s): nobody decided within %u s, denied", q->id, q->what,
			       b->policy->escalation_timeout);
		} else if (rc == -EALREADY && sb_queue_get(b->q, q->id, &it, &err) == 0) {
			/* A human was quicker: theirs stands. */
			if (it.has_decision) {
				q->dec = it.dec;
				q->decided = true;
			}
			sb_queue_item_free(&it);
		} else if (rc == -ENOENT) {
			local_deny(q, "the request left the queue without a decision");
		} else {
			bk_log(b, "error", NULL, "cannot deny request %s by timeout (retried): %s", q->id, err.msg);
		}
	}
	return 0;
}

static void record_decision(struct sb_broker *b, struct breq *q)
{
	const struct sb_queue_decision *d = &q->dec;
	cJSON *rec;

	if (d->timed_out) {
		rec = bk_record(b, "timeout", "broker");
		if (rec) {
			cJSON_AddStringToObject(rec, "id", q->id);
			cJSON_AddStringToObject(rec, "decision", "deny");
			cJSON_AddNumberToObject(rec, "waited_ms", (double)(bk_now(b) - q->created_ms));
		}
	} else {
		rec = bk_record(b, "verdict", "broker");
		if (rec) {
			cJSON_AddStringToObject(rec, "id", q->id);
			cJSON_AddStringToObject(rec, "decision", d->verdict == SB_QV_ALLOW ? "allow" : "deny");
			cJSON_AddStringToObject(rec, "reviewer", d->reviewer);
			cJSON_AddStringToObject(rec, "reason", d->reason);
			if (d->remember) {
				cJSON *m = cJSON_AddObjectToObject(rec, "remember");

				if (m) {
					cJSON_AddStringToObject(m, "scope", sb_remember_scope_name(d->scope));
					cJSON_AddStringToObject(m, "value", d->remember_value);
				}
			}
		}
	}
	bk_audit_add(b, rec);
	q->recorded = true;
}

static const char *sig_name(int sig)
{
	return sig == SIGKILL ? "killed" : "continued";
}

int bk_apply_hold(struct sb_broker *b, struct bhold *h)
{
	const struct sb_broker_kops *k = b->o.kops;
	bool stopped = false, allow = h->verdict == SB_VERDICT_ALLOW;
	int sig, rc;

	rc = k->task(k->arg, h->tgid, h->key.tid, h->start_ns, &stopped);
	if (rc && rc != -ESRCH) {
		/* /proc unreadable for now (EMFILE, ENOMEM): not a verdict on the task. */
		bk_log(b, "error", NULL, "cannot check pid %u (retried): %s", h->tgid, strerror(-rc));
		return rc;
	}
	if (rc) {
		/* Gone (or its pid now names another task): nothing to do. */
		k->forget(k->arg, &h->key, h->seq);
		h->state = BH_DONE;
		bk_log(b, "gone", NULL, "pid %u is gone; its %s was not needed", h->tgid, allow ? "approval" : "denial");
		return 0;
	}
	rc = k->set_verdict(k->arg, h->key.tid, h->seq, h->verdict);
	if (rc) {
		bk_log(b, "error", NULL, "cannot write the verdict for pid %u (retried): %s", h->tgid, strerror(-rc));
		return rc;
	}
	/* Before exec's point of no return the syscall restarts and reads the
	 * verdict; after it there is nothing to restart: continue or kill. */
	sig = h->committed && !allow ? SIGKILL : SIGCONT;
	rc = k->signal(k->arg, h->tgid, h->key.tid, h->start_ns, sig);
	if (rc == -ESRCH) {
		k->forget(k->arg, &h->key, h->seq);
	} else if (rc) {
		bk_log(b, "error", NULL, "cannot signal pid %u (retried): %s", h->tgid, strerror(-rc));
		return rc;
	}
	/* An allowed exec held after its point of no return keeps its verdict
	 * until the task's first hook has seen it (the kernel kills a task
	 * that runs on without one: bpf/sandbox.bpf.c, sb_xpend_g); reconcile
	 * forgets it once used or once the task is gone. */
	if (h->committed && !allow)
		k->forget(k->arg, &h->key, h->seq);
	h->state = BH_DONE;
	b->resolved++;
	{
		cJSON *d = cJSON_CreateObject();

		if (d) {
			if (h->req[0])
				cJSON_AddStringToObject(d, "id", h->req);
			cJSON_AddNumberToObject(d, "seq", (double)h->seq);
			cJSON_AddNumberToObject(d, "pid", h->tgid);
			cJSON_AddNumberToObject(d, "tid", h->key.tid);
			cJSON_AddStringToObject(d, "verdict", allow ? "allow" : "deny");
			cJSON_AddStringToObject(d, "signal", sig == SIGKILL ? "SIGKILL" : "SIGCONT");
			cJSON_AddNumberToObject(d, "held_ms", (double)(bk_now(b) - h->since_ms));
		}
		bk_log(b, "applied", d, "%s %s%s: pid %u %s", allow ? "ALLOWED" : "DENIED", h->req[0] ? "request " : "hold",
		       h->req[0] ? h->req : "", h->tgid, sig_name(sig));
	}
	return 0;
}

static void remember(struct sb_broker *b, const struct breq *q)
{
	struct sb_err err = { { 0 } };
	int64_t at = q->dec.decided_ms ? q->dec.decided_ms : bk_now(b);
	bool changed = false, added = false;
	int rc;

	/* Merged into the file under its lock: another broker of the folder
	 * may have remembered or used up something since this one read it. */
	rc = sb_bmem_add_saved(b->folder, &b->mem, q->dec.scope, q->trigger, q->dec.remember_value, q->dec.reviewer,
			       q->id, at, &changed, &err);
	if (rc) {
		struct sb_err e2 = { { 0 } };

		rc = sb_bmem_add(&b->mem, q->dec.scope, q->trigger, q->dec.remember_value, q->dec.reviewer, q->id, at,
				 &added, &e2);
		if (rc) {
			bk_log(b, "error", NULL, "cannot remember %s '%s' of request %s: %s",
			       sb_remember_scope_name(q->dec.scope), q->dec.remember_value, q->id, e2.msg);
			return;
		}
		if (!added)
			return;
		bk_log(b, "error", NULL, "REMEMBERED DECISION NOT SAVED (kept until this broker stops): %s", err.msg);
		changed = true;
	}
	if (!changed)
		return;
	bk_memory_rebuild(b);
	b->rules_changed = true;
	bk_log(b, "remembered", NULL, "remembered %s '%s' (%s, approved by %s in request %s)",
	       sb_remember_scope_name(q->dec.scope), q->dec.remember_value, sb_trigger_name(q->trigger),
	       q->dec.reviewer, q->id);
}

int bk_progress(struct sb_broker *b)
{
	struct sb_err err = { { 0 } };
	bool written;
	size_t i, w;

	/* Decided requests: their record, and a verdict for each hold. */
	for (i = 0; i < b->nh; i++) {
		struct bhold *h = &b->h[i];
		struct breq *q;

		if (h->state != BH_WAIT || !h->req[0])
			continue;
		q = bk_find_req(b, h->req);
		if (!q || !q->decided)
			continue;
		bk_hold_decide(b, h, q->dec.verdict == SB_QV_ALLOW ? SB_VERDICT_ALLOW : SB_VERDICT_DENY);
	}
	for (i = 0; i < b->nr; i++)
		if (b->r[i].decided && !b->r[i].recorded)
			record_decision(b, &b->r[i]);
	/* Records first: an allow is applied only once it is on record. */
	written = bk_audit_flush(b) == 0;
	for (i = 0; i < b->nh; i++) {
		struct bhold *h = &b->h[i];

		if (h->state != BH_DECIDED)
			continue;
		if (h->verdict == SB_VERDICT_ALLOW && !written)
			continue;
		bk_apply_hold(b, h);
	}
	/* Requests whose holds are all resolved: remembered, acknowledged. */
	for (i = 0, w = 0; i < b->nr; i++) {
		struct breq *q = &b->r[i];
		bool open = !q->decided || !q->recorded;
		size_t j;

		for (j = 0; j < b->nh && !open; j++)
			if (b->h[j].state != BH_DONE && !strcmp(b->h[j].req, q->id))
				open = true;
		if (!open && q->dec.verdict == SB_QV_ALLOW && !written)
			open = true;
		if (!open) {
			int rc;

			if (q->dec.verdict == SB_QV_ALLOW && q->dec.remember)
				remember(b, q);
			rc = sb_queue_ack(b->q, q->id, &err);
			if (rc && rc != -EALREADY && rc != -ENOENT) {
				bk_log(b, "error", NULL, "cannot acknowledge request %s (retried): %s", q->id, err.msg);
				open = true;
			}
		}
		if (open)
			b->r[w++] = *q;
	}
	b->nr = w;
	for (i = 0, w = 0; i < b->nh; i++)
		if (b->h[i].state != BH_DONE)
			b->h[w++] = b->h[i];
	b->nh = w;
	return 0;
}
