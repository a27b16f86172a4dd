/* The broker's audit records (docs/audit.md): every kernel denial,
 * escalation, verdict, timeout, remembered allow, policy load,
 * attach/detach and lost-event count, appended in batches (one durable
 * commit per event-loop pass). Allowed fast-path calls are counted from
 * the kernel's counters; in audit mode the kernel reports them one by one
 * and they are stored one by one.
 *
 * When the store cannot be written the records wait in memory (up to
 * BACKLOG_MAX, then the oldest are dropped and counted), the failure is
 * reported every 10 s, and the broker applies no allow until its record
 * is written (bk_progress): a failing audit store never lets anything
 * through unrecorded. Enforcement in the kernel never depends on it. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "broker_internal.h"
#include "kernel/events.h"

#define BACKLOG_MAX 10000
#define REPORT_EVERY_MS 10000

int bk_audit_open(struct sb_broker *b, struct sb_err *err)
{
	if (b->o.flags & SB_BROKER_NO_AUDIT)
		return 0;
	return sb_audit_open(b->folder, SB_AUDIT_CREATE, &b->a, err);
}

struct cJSON *bk_record(const struct sb_broker *b, const char *kind, const char *origin)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", kind);
	cJSON_AddStringToObject(o, "origin", origin);
	cJSON_AddStringToObject(o, "sandbox", b->sandbox);
	return o;
}

void bk_record_subject(cJSON *rec, const struct sb_kevent *ev)
{
	char buf[SB_EV_PATH + 1];

	switch (ev->kind) {
	case SB_EVK_PATH:
		sb_kev_field(buf, sizeof(buf), ev->path.path, sizeof(ev->path.path));
		cJSON_AddStringToObject(rec, "path", buf);
		cJSON_AddStringToObject(rec, "op", sb_kop_name(ev->op));
		break;
	case SB_EVK_EXEC:
		sb_kev_field(buf, sizeof(buf), ev->exec.path, sizeof(ev->exec.path));
		cJSON_AddStringToObject(rec, "path", buf);
		sb_kev_field(buf, sizeof(buf), ev->exec.argv, sizeof(ev->exec.argv));
		if (buf[0])
			cJSON_AddStringToObject(rec, "command", buf);
		break;
	case SB_EVK_NET:
		if (ev->net.family == AF_INET || ev->net.family == AF_INET6) {
			char a[INET6_ADDRSTRLEN] = "";

			inet_ntop(ev->net.family, ev->net.addr, a, sizeof(a));
			cJSON_AddStringToObject(rec, "addr", a);
			cJSON_AddNumberToObject(rec, "port", ev->net.port);
			cJSON_AddStringToObject(rec, "proto", sb_kev_proto_name(ev->net.proto));
		} else {
			cJSON_AddStringToObject(rec, "addr", "unix (abstract)");
		}
		break;
	case SB_EVK_TASK:
		cJSON_AddNumberToObject(rec, "target_pid", ev->task.target_pid);
		cJSON_AddNumberToObject(rec, "arg", ev->task.arg);
		break;
	}
}

static const char *decision_of(const struct sb_kevent *ev)
{
	switch (ev->action) {
	case SB_ACT_OBSERVED:
		return "observe";
	case SB_ACT_ALLOWED:
		return "allow";
	case SB_ACT_AUDIT:
		return sb_tier_name((enum sb_tier)ev->tier);
	default:
		return "deny";
	}
}

/* A kernel decision that needed no broker: denied, killed, escalated but
 * not holdable (denied), observed, and in audit mode everything. */
void bk_record_kernel_event(struct sb_broker *b, const struct sb_kevent *ev)
{
	cJSON *rec = bk_record(b, "decision", "kernel"), *chain, *c;
	char rbuf[SB_RULE_NAME_MAX], comm[17], reason[SB_RULE_NAME_MAX + 128];
	const char *rule;

	if (!rec)
		return;
	rule = sb_rule_label(b->policy, ev->rule, rbuf, sizeof(rbuf));
	cJSON_AddStringToObject(rec, "trigger",
				ev->kind == SB_EVK_TASK ? "self-protection" : sb_trigger_name((enum sb_trigger)ev->trigger));
	cJSON_AddStringToObject(rec, "decision", decision_of(ev));
	cJSON_AddStringToObject(rec, "rule", rule);
	if (ev->action == SB_ACT_ESCALATED)
		snprintf(reason, sizeof(reason), "%s '%s' escalates, but the task could not be held (io_uring, traced, or no room): denied",
			 ev->rule == SB_RULE_DEFAULT ? "the default" : "rule", rule);
	else if (ev->action == SB_ACT_KILLED)
		snprintf(reason, sizeof(reason), "rule '%s' (%s): killed after exec", rule, sb_tier_name((enum sb_tier)ev->tier));
	else
		snprintf(reason, sizeof(reason), "%s '%s' (%s)", ev->rule == SB_RULE_DEFAULT ? "default" : "rule", rule,
			 sb_tier_name((enum sb_tier)ev->tier));
	cJSON_AddStringToObject(rec, "reason", reason);
	cJSON_AddStringToObject(rec, "hook", sb_hook_name(ev->hook));
	bk_record_subject(rec, ev);
	cJSON_AddNumberToObject(rec, "pid", ev->tgid);
	cJSON_AddNumberToObject(rec, "tid", ev->pid);
	cJSON_AddNumberToObject(rec, "event_seq", (double)ev->seq);
	chain = cJSON_AddArrayToObject(rec, "chain");
	c = cJSON_CreateObject();
	if (chain && c) {
		sb_kev_field(comm, sizeof(comm), ev->comm, sizeof(ev->comm));
		cJSON_AddNumberToObject(c, "pid", ev->tgid);
		cJSON_AddStringToObject(c, "comm", comm);
		cJSON_AddItemToArray(chain, c);
		c = cJSON_CreateObject();
		if (c) {
			cJSON_AddNumberToObject(c, "pid", ev->ppid);
			cJSON_AddItemToArray(chain, c);
		}
	} else {
		cJSON_Delete(c);
	}
	if (ev->action == SB_ACT_AUDIT || ev->action == SB_ACT_ALLOWED || ev->action == SB_ACT_OBSERVED)
		cJSON_AddBoolToObject(rec, "enforced", 0);
	bk_audit_add(b, rec);
}

/* Text from events, /proc, the queue and memories is the agent's to
 * choose: a byte that is not UTF-8 would make the record invalid, and a
 * dropped record would keep the agent's action out of the chain. Every
 * string but the envelope (the broker's own kind, origin and sandbox) is
 * escaped (docs/audit.md, "Text escaping"). */
static int escape_strings(cJSON *node, bool top)
{
	cJSON *c;
	int rc;

	for (c = node->child; c; c = c->next) {
		if (top && c->string &&
		    (!strcmp(c->string, "kind") || !strcmp(c->string, "origin") || !strcmp(c->string, "sandbox")))
			continue;
		if (cJSON_IsString(c) && c->valuestring) {
			char *esc, *v;

			rc = sb_audit_escape(c->valuestring, &esc);
			if (rc)
				return rc;
			if (!esc)
				continue;
			v = cJSON_malloc(strlen(esc) + 1);
			if (!v) {
				free(esc);
				return -ENOMEM;
			}
			strcpy(v, esc);
			free(esc);
			if (!(c->type & cJSON_IsReference))
				cJSON_free(c->valuestring);
			c->type &= ~cJSON_IsReference;
			c->valuestring = v;
		} else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
			rc = escape_strings(c, false);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static const char *rec_str(const cJSON *rec, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* A record that will not be written: counted, and when it is the record
 * of an allow the broker has yet to apply, that allow must not happen
 * unrecorded. Its holds are marked (bk_audit_flush turns their allow into
 * a deny before bk_progress applies verdicts) and its request, if any, is
 * denied and not remembered. */
static void lost_record(struct sb_broker *b, const cJSON *rec)
{
	const char *kind = rec_str(rec, "kind"), *id = rec_str(rec, "id");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(rec, "pid");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(rec, "event_seq");
	bool verdict = !strcmp(kind, "verdict");
	size_t i;

	b->audit_dropped++;
	if (strcmp(rec_str(rec, "origin"), "broker") ||
	    (strcmp(kind, "remembered_allow") && strcmp(rec_str(rec, "decision"), "allow")))
		return;
	if (verdict) {
		struct breq *q = id[0] ? bk_find_req(b, id) : NULL;

		if (q) {
			q->dec.verdict = SB_QV_DENY;
			q->dec.remember = false;
		}
	}
	for (i = 0; i < b->nh; i++) {
		struct bhold *h = &b->h[i];

		if (h->state == BH_DONE)
			continue;
		if (verdict ? id[0] && !strcmp(h->req, id)
			    : cJSON_IsNumber(pid) && cJSON_IsNumber(seq) && h->tgid == (uint32_t)pid->valuedouble &&
				      h->seq == (uint64_t)seq->valuedouble)
			h->unrecorded = true;
	}
}

/* Fail closed: an allow whose record was lost is applied as a deny. */
static void deny_unrecorded(struct sb_broker *b)
{
	size_t i;

	for (i = 0; i < b->nh; i++) {
		struct bhold *h = &b->h[i];

		if (!h->unrecorded || h->state != BH_DECIDED || h->verdict != SB_VERDICT_ALLOW)
			continue;
		h->verdict = SB_VERDICT_DENY;
		bk_log(b, "audit-error", NULL, "the allow of pid %u (event %llu%s%s) could not be recorded: denied instead",
		       h->tgid, (unsigned long long)h->seq, h->req[0] ? ", request " : "", h->req);
	}
}

void bk_audit_add(struct sb_broker *b, cJSON *rec)
{
	struct sb_err err = { { 0 } };
	int rc;

	if (!rec)
		return;
	if (b->o.flags & SB_BROKER_NO_AUDIT) {
		cJSON_Delete(rec);
		return;
	}
	rc = escape_strings(rec, true);
	if (rc)
		sb_errf(&err, rc, "cannot escape its text: %s", strerror(-rc));
	/* One bad record must not poison a batch; after escaping only a bug
	 * (or no memory) gets here. */
	if (rc || sb_audit_record_check(rec, &err)) {
		bool note = !strcmp(rec_str(rec, "kind"), "note");

		bk_log(b, "audit-error", NULL, "audit record dropped (invalid): %s", err.msg);
		lost_record(b, rec);
		cJSON_Delete(rec);
		if (!note) {
			/* The chain says a record is missing, not only the log. */
			cJSON *n = bk_record(b, "note", "broker");
			char text[sizeof(err.msg) + 64];

			if (n) {
				snprintf(text, sizeof(text), "a record was not written (invalid: %s)", err.msg);
				cJSON_AddStringToObject(n, "text", text);
				bk_audit_add(b, n);
			}
		}
		return;
	}
	if (b->nrec >= BACKLOG_MAX) {
		lost_record(b, b->rec[0]);
		cJSON_Delete(b->rec[0]);
		memmove(&b->rec[0], &b->rec[1], (b->nrec - 1) * sizeof(b->rec[0]));
		b->nrec--;
	}
	if (b->nrec == b->caprec) {
		size_t ncap = b->caprec ? b->caprec * 2 : 64;
		cJSON **nr = realloc(b->rec, ncap * sizeof(*nr));

		if (!nr) {
			lost_record(b, rec);
			cJSON_Delete(rec);
			return;
		}
		b->rec = nr;
		b->caprec = ncap;
	}
	b->rec[b->nrec++] = rec;
}

int bk_audit_flush(struct sb_broker *b)
{
	struct sb_err err = { { 0 } };
	int64_t now = bk_now(b);
	size_t i;
	int rc;

	deny_unrecorded(b);
	if (b->o.flags & SB_BROKER_NO_AUDIT)
		return 0;
	if (!b->a) {
		rc = sb_audit_open(b->folder, SB_AUDIT_CREATE, &b->a, &err);
		if (rc)
			goto failed;
	}
	if (b->nrec == 0)
		return 0;
	rc = sb_audit_append_batch(b->a, (const cJSON *const *)b->rec, b->nrec, NULL, &err);
	if (rc)
		goto failed;
	for (i = 0; i < b->nrec; i++)
		cJSON_Delete(b->rec[i]);
	b->nrec = 0;
	if (b->audit_failing) {
		b->audit_failing = false;
		bk_log(b, "audit", NULL, "the audit chain in %s/.sandbox/audit.db is written again", b->folder);
		if (b->audit_dropped) {
			cJSON *rec = bk_record(b, "note", "broker");

			if (rec) {
				char text[160];

				snprintf(text, sizeof(text),
					 "%llu audit records were lost while the store could not be written",
					 (unsigned long long)b->audit_dropped);
				cJSON_AddStringToObject(rec, "text", text);
				bk_audit_add(b, rec);
			}
		}
	}
	return 0;
failed:
	if (!b->audit_failing || now - b->audit_err_ms >= REPORT_EVERY_MS) {
		bk_log(b, "audit-error", NULL,
		       "AUDIT CHAIN NOT WRITTEN: %s; %zu records wait in memory (%llu dropped); no allow is applied until they are written, denials still are",
		       err.msg, b->nrec, (unsigned long long)b->audit_dropped);
		b->audit_err_ms = now;
	}
	b->audit_failing = true;
	return rc;
}

/* Which trigger a hook's allowed calls count under. */
static const char *hook_trigger(unsigned hook)
{
	if (hook == SB_HOOK_FILE_OPEN)
		return "file";	/* opens for reading and for writing */
	if (hook == SB_HOOK_BPRM_CHECK || hook == SB_HOOK_BPRM_COMMITTED || hook == SB_HOOK_MMAP_FILE)
		return "shell";
	if (hook == SB_HOOK_SOCKET_CONNECT || hook == SB_HOOK_SOCKET_SENDMSG)
		return "network";
	if (hook <= SB_HOOK_INODE_MKNOD || hook == SB_HOOK_UNIX_CONNECT || hook == SB_HOOK_UNIX_SEND)
		return "write";
	return "self-protection";
}

/* Counter deltas since the last call: allowed calls into the audit
 * counters, lost events as a lost_events record. */
void bk_audit_counters(struct sb_broker *b)
{
	struct sb_counters now[SB_HOOK__COUNT];
	struct sb_err err = { { 0 } };
	uint64_t lost = 0;
	int h;

	if (!b->o.kops->counters || b->o.kops->counters(b->o.kops->arg, b->o.sandbox_id, now))
		return;
	for (h = 0; h < SB_HOOK__COUNT; h++) {
		uint64_t da = now[h].allowed - (b->have_last ? b->last[h].allowed : 0);
		uint64_t dl = now[h].lost - (b->have_last ? b->last[h].lost : 0);

		if (now[h].allowed < b->last[h].allowed || now[h].lost < b->last[h].lost)
			da = dl = 0;	/* counters were reset (another attach of this id) */
		if (da && b->a && b->policy->mode != SB_MODE_AUDIT)
			sb_audit_count(b->a, "kernel", b->sandbox, "allowed", hook_trigger((unsigned)h), da, &err);
		lost += dl;
	}
	memcpy(b->last, now, sizeof(now));
	b->have_last = true;
	if (lost) {
		cJSON *rec = bk_record(b, "lost_events", "broker");

		if (rec) {
			cJSON_AddNumberToObject(rec, "count", (double)lost);
			bk_audit_add(b, rec);
		}
		bk_log(b, "lost", NULL,
		       "%llu kernel events did not fit the ring buffer (the kernel decided them anyway; held tasks are found in the hold map)",
		       (unsigned long long)lost);
	}
	if (b->a)
		sb_audit_tick(b->a, &err);
}

void bk_audit_close(struct sb_broker *b)
{
	struct sb_err err = { { 0 } };
	size_t i;

	if (b->nrec)
		bk_audit_flush(b);
	if (b->nrec)
		bk_log(b, "audit-error", NULL, "AUDIT CHAIN: %zu records could not be written and are lost", b->nrec);
	for (i = 0; i < b->nrec; i++)
		cJSON_Delete(b->rec[i]);
	free(b->rec);
	b->rec = NULL;
	b->nrec = 0;
	if (b->a && sb_audit_close(b->a, &err))
		bk_log(b, "audit-error", NULL, "closing the audit chain: %s", err.msg);
	b->a = NULL;
}
