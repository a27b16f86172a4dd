/* A held task (an escalate event, or a hold found in the kernel's map):
 * what it asks for, who asks, and who decides: a remembered decision or a
 * rule the kernel could not evaluate decide at once; everything else is
 * filed in the queue for a human. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "broker_internal.h"
#include "broker_proc.h"
#include "compile.h"
#include "kernel/events.h"
#include "shellpat.h"

struct bhold *bk_find_hold(struct sb_broker *b, uint32_t tid, uint64_t seq)
{
	size_t i;

	for (i = 0; i < b->nh; i++)
		if (b->h[i].key.tid == tid && b->h[i].seq == seq)
			return &b->h[i];
	return NULL;
}

static struct bhold *add_hold(struct sb_broker *b, const struct sb_kevent *ev)
{
	struct bhold *h;

	if (b->nh == b->caph) {
		size_t ncap = b->caph ? b->caph * 2 : 32;
		struct bhold *nh = realloc(b->h, ncap * sizeof(*nh));

		if (!nh)
			return NULL;
		b->h = nh;
		b->caph = ncap;
	}
	h = &b->h[b->nh++];
	memset(h, 0, sizeof(*h));
	h->key.tid = ev->pid;
	h->key.ident = ev->ident;
	h->seq = ev->seq;
	h->start_ns = ev->start_ns;
	h->tgid = ev->tgid;
	h->committed = (ev->flags & SB_EVF_HELD_EXEC) != 0;
	h->since_ms = bk_now(b);
	return h;
}

/* What a held event asks for, as the classifier and the queue see it. */
struct hinfo {
	struct sb_event ev;
	char path[SB_EV_PATH + 1];
	char cmd[SB_EV_ARGV + 1];
	char wbuf[SB_EV_ARGV + 1];
	char *words[SB_EV_ARGV / 2 + 1];	/* the kernel's command line, split */
	char **dargv;				/* arguments to show */
	size_t dargc;
	bool own_dargv;
	char *basev[1];
	char addr[48];
	struct sb_penrich en;
	char key[SB_EVENT_KEY_MAX];
	char what[512];
	char comm[17];
	bool exact;		/* the event names its object completely */
	bool cut;		/* the kernel's command line is incomplete */
	bool from_proc;		/* dargv was read from /proc/PID/cmdline */
};

static void split_words(char *s, char **w, size_t *n, size_t max)
{
	char *save = NULL, *t;

	*n = 0;
	for (t = strtok_r(s, " ", &save); t && *n < max; t = strtok_r(NULL, " ", &save))
		w[(*n)++] = t;
}

static void fill_info(struct sb_broker *b, const struct sb_kevent *ev, struct hinfo *hi)
{
	size_t n;

	memset(&hi->ev, 0, sizeof(hi->ev));
	hi->exact = !(ev->flags & (SB_EVF_PATH_TRUNC | SB_EVF_PATH_PARTIAL | SB_EVF_ARGV_TRUNC));
	sb_proc_enrich(b->proc, (int)ev->tgid, b->cgroup_rel, &hi->en);
	hi->ev.cwd = hi->en.cwd[0] ? hi->en.cwd : NULL;
	switch (ev->kind) {
	case SB_EVK_PATH:
		n = strnlen(ev->path.path, sizeof(ev->path.path));
		memcpy(hi->path, ev->path.path, n);
		hi->path[n] = '\0';
		hi->ev.path = hi->path;
		if (ev->trigger == SB_K_READ) {
			hi->ev.kind = SB_EV_READ;
		} else {
			hi->ev.kind = SB_EV_WRITE;
			hi->ev.op = ev->op < SB_WOP__COUNT ? (enum sb_write_op)ev->op : SB_WOP_LINK;
		}
		break;
	case SB_EVK_EXEC:
		n = strnlen(ev->exec.path, sizeof(ev->exec.path));
		memcpy(hi->path, ev->exec.path, n);
		hi->path[n] = '\0';
		hi->ev.kind = SB_EV_EXEC;
		hi->ev.path = hi->path;
		if (ev->flags & SB_EVF_HELD_EXEC) {
			/* After the point of no return: the kernel read argv from
			 * the new, private image; that line is what was decided. */
			n = strnlen(ev->exec.argv, sizeof(ev->exec.argv));
			memcpy(hi->cmd, ev->exec.argv, n);
			hi->cmd[n] = '\0';
			/* The kernel says when it cut the line; a line that fills
			 * the event is taken as cut too (a kernel that does not). */
			hi->cut = (ev->flags & SB_EVF_ARGV_TRUNC) || n >= SB_EV_ARGV - 10;
			if (hi->cut)
				hi->exact = false;
			memcpy(hi->wbuf, hi->cmd, n + 1);
			split_words(hi->wbuf, hi->words, &hi->ev.argc, sizeof(hi->words) / sizeof(hi->words[0]) - 1);
			hi->ev.argv = (const char *const *)hi->words;
			/* Shown as decided. The new image's own argv (/proc) is only
			 * complete once it reached its stop, which may be later than
			 * this read; it is shown (marked) when the kernel's line was
			 * cut, and never decides anything. */
			if (!hi->cut || !hi->en.argc) {
				hi->dargv = hi->words;
				hi->dargc = hi->ev.argc;
			} else {
				hi->dargv = hi->en.argv;
				hi->dargc = hi->en.argc;
				hi->from_proc = true;
			}
		} else {
			/* Before it (binary-level): the rule does not depend on the
			 * arguments, and the restarted execve may pass others, so
			 * they are shown but never decide anything. */
			if (sb_proc_execve_argv(b->proc, (int)ev->tgid, (int)ev->pid, &hi->dargv, &hi->dargc) == 0)
				hi->own_dargv = true;
		}
		if (!hi->dargc) {
			hi->basev[0] = (char *)sb_basename(hi->path);
			hi->dargv = hi->basev;
			hi->dargc = 1;
			hi->own_dargv = false;
			hi->from_proc = false;
		}
		break;
	case SB_EVK_NET:
		hi->ev.kind = SB_EV_CONNECT;
		hi->ev.dst.has_addr = true;
		hi->ev.dst.family = ev->net.family;
		memcpy(hi->ev.dst.addr, ev->net.addr, 16);
		hi->ev.dst.port = ev->net.port;
		hi->ev.proto = ev->net.proto == 2 ? SB_PROTO_UDP : SB_PROTO_TCP;
		break;
	}
	if (sb_event_key(b->policy, &hi->ev, hi->key, sizeof(hi->key), NULL))
		snprintf(hi->key, sizeof(hi->key), "%s:seq-%llu", sb_trigger_name((enum sb_trigger)ev->trigger),
			 (unsigned long long)ev->seq);
}

static void free_info(struct hinfo *hi)
{
	if (hi->own_dargv)
		sb_proc_argv_free(hi->dargv, hi->dargc);
	sb_proc_enrich_free(&hi->en);
}

/* The policy rule index a decision rests on (SB_RULE_DEFAULT for the default). */
static uint32_t rule_index(const struct sb_broker *b, const struct sb_decision *d)
{
	if (d->is_default || !d->matched)
		return SB_RULE_DEFAULT;
	return (uint32_t)(d->matched - b->policy->rules);
}

/* A shell escalate rule the kernel checks only by its literal prefix (a
 * wildcard inside): the classifier is the one that knows. A rule of
 * another tier at that index is not the rule the kernel escalated on. */
static bool kernel_refined(const struct sb_broker *b, uint32_t rule)
{
	const struct sb_rule *r;
	const char *t;

	if (rule >= b->policy->nrules)
		return false;
	r = &b->policy->rules[rule];
	if (r->trigger != SB_TRIG_SHELL || r->tier != SB_TIER_ESCALATE)
		return false;
	t = strpbrk(r->shell.text, "*?[");
	return t && !(t[0] == '*' && t[1] == '\0');
}

/* Memories the event may use: before exec's point of no return the
 * arguments are not known for sure, so command and prefix memories (which
 * are about arguments) do not apply there. idx maps back to b->mem. */
static void usable_memory(const struct sb_broker *b, bool args_known, struct sb_memory *m, size_t *idx)
{
	size_t i;

	m->items = malloc((b->cmem.n ? b->cmem.n : 1) * sizeof(*m->items));
	m->n = m->cap = 0;
	if (!m->items)
		return;
	m->cap = b->cmem.n;
	for (i = 0; i < b->cmem.n; i++) {
		enum sb_remember_scope s = b->cmem.items[i].scope;

		if (!args_known && (s == SB_REM_COMMAND || s == SB_REM_PREFIX))
			continue;
		idx[m->n] = i;
		m->items[m->n++] = b->cmem.items[i];
	}
}

static void info_what(const struct hinfo *hi, const struct sb_kevent *ev, char *out, size_t len)
{
	switch (ev->kind) {
	case SB_EVK_PATH:
		if (hi->ev.kind == SB_EV_READ)
			snprintf(out, len, "read %s", hi->path);
		else
			snprintf(out, len, "write (%s) %s", sb_write_op_name(hi->ev.op), hi->path);
		break;
	case SB_EVK_EXEC:
		if (hi->cmd[0])
			snprintf(out, len, hi->cut ? "%s ... (command line cut)" : "%s", hi->cmd);
		else
			snprintf(out, len, "exec %s", hi->path);
		break;
	case SB_EVK_NET: {
		char a[INET6_ADDRSTRLEN] = "";

		inet_ntop(ev->net.family, ev->net.addr, a, sizeof(a));
		snprintf(out, len, ev->net.family == AF_INET6 ? "connect [%s]:%u (%s)" : "connect %s:%u (%s)", a,
			 ev->net.port, ev->net.proto == 2 ? "udp" : "tcp");
		break;
	}
	default:
		snprintf(out, len, "?");
	}
}

static cJSON *hold_detail(const struct bhold *h, const struct sb_kevent *ev, const char *what, const char *id)
{
	cJSON *d = cJSON_CreateObject();

	if (!d)
		return NULL;
	if (id && id[0])
		cJSON_AddStringToObject(d, "id", id);
	cJSON_AddNumberToObject(d, "seq", (double)h->seq);
	cJSON_AddNumberToObject(d, "pid", h->tgid);
	cJSON_AddNumberToObject(d, "tid", h->key.tid);
	cJSON_AddStringToObject(d, "trigger", sb_trigger_name((enum sb_trigger)ev->trigger));
	cJSON_AddStringToObject(d, "what", what);
	cJSON_AddBoolToObject(d, "after_exec", h->committed);
	return d;
}

/* A rule or a memory decided: the record, then the verdict (applied by
 * bk_progress once the record is written). */
static void decide_now(struct sb_broker *b, struct bhold *h, const struct sb_kevent *ev, const struct hinfo *hi,
		       const struct sb_decision *d, const struct sb_bmem_entry *me, uint8_t verdict)
{
	cJSON *rec = bk_record(b, d->remembered ? "remembered_allow" : "decision", "broker");
	char what[512];

	if (rec) {
		cJSON_AddStringToObject(rec, "trigger", sb_trigger_name(d->trigger));
		if (!d->remembered) {
			cJSON_AddStringToObject(rec, "decision", verdict == SB_VERDICT_ALLOW ? "allow" : "deny");
			cJSON_AddStringToObject(rec, "rule", d->rule);
			cJSON_AddStringToObject(rec, "reason", d->reason);
		} else if (me) {
			cJSON_AddStringToObject(rec, "scope", sb_remember_scope_name(me->scope));
			cJSON_AddStringToObject(rec, "value", me->value);
			if (me->request[0])
				cJSON_AddStringToObject(rec, "id", me->request);
		}
		bk_record_subject(rec, ev);
		cJSON_AddNumberToObject(rec, "pid", h->tgid);
		cJSON_AddNumberToObject(rec, "event_seq", (double)h->seq);
		bk_audit_add(b, rec);
	}
	info_what(hi, ev, what, sizeof(what));
	bk_hold_decide(b, h, verdict);
	bk_log(b, "decided", hold_detail(h, ev, what, NULL), "%s %s by %.16s[%u]: %s", verdict == SB_VERDICT_ALLOW ? "ALLOWED" : "DENIED",
	       what, ev->comm, h->tgid, d->reason);
}

/* What the human reads as "why": a cut command line says so first, and
 * where the arguments shown come from. */
static const char *request_reason(const struct hinfo *hi, const struct sb_decision *d, uint32_t tgid, char *out,
				  size_t len)
{
	if (!hi->cut)
		return d->reason;
	if (hi->from_proc)
		snprintf(out, len,
			 "THE KERNEL'S COPY OF THE COMMAND LINE WAS CUT; the arguments shown were read from the process "
			 "(/proc/%u/cmdline). %s", tgid, d->reason);
	else
		snprintf(out, len, "THE COMMAND LINE WAS CUT by the kernel: only its beginning is shown. %s", d->reason);
	return out;
}

static int file_request(struct sb_broker *b, struct bhold *h, const struct sb_kevent *ev, struct hinfo *hi,
			const struct sb_decision *d)
{
	char reason[SB_REASON_MAX];
	struct sb_queue_proc chain[SB_QUEUE_CHAIN_MAX];
	struct sb_queue_request r = { 0 };
	struct sb_queue_submit_result res;
	struct sb_err err = { { 0 } };
	struct breq *q;
	char addr[48], what[512];
	int64_t now = bk_now(b);
	size_t i;
	int rc;

	sb_queue_request_set_event(&r, &hi->ev, addr);
	if (r.kind == SB_EV_EXEC) {
		r.argv = (const char *const *)hi->dargv;
		r.argc = hi->dargc;
	}
	r.origin = SB_ORIGIN_KERNEL;
	r.created_ms = now;
	r.deadline_ms = now + (int64_t)b->policy->escalation_timeout * 1000;
	r.key = hi->key;
	r.pid = (int)h->tgid;
	for (i = 0; i < hi->en.nchain; i++) {
		chain[i].pid = hi->en.chain[i].pid;
		chain[i].comm = hi->en.chain[i].comm;
		chain[i].cmdline = hi->en.chain[i].cmdline;
	}
	if (hi->en.nchain == 0) {
		snprintf(hi->comm, sizeof(hi->comm), "%.16s", ev->comm);
		chain[0].pid = (int)h->tgid;
		chain[0].comm = hi->comm;
		chain[0].cmdline = NULL;
		i = 1;
	}
	r.chain = chain;
	r.nchain = i;
	r.rule = d->rule;
	r.reason = request_reason(hi, d, h->tgid, reason, sizeof(reason));
	rc = sb_queue_submit(b->q, &r, &res, &err);
	if (rc) {
		bk_log(b, "error", NULL, "cannot file the request of %.16s[%u] (it stays held; retried): %s", ev->comm,
		       h->tgid, err.msg);
		return rc;
	}
	snprintf(h->req, sizeof(h->req), "%s", res.id);
	info_what(hi, ev, what, sizeof(what));
	q = bk_find_req(b, res.id);
	if (!q) {
		q = bk_add_req(b, res.id);
		if (!q)
			return -ENOMEM;
		q->pid = (int)h->tgid;
		q->trigger = d->trigger;
		q->created_ms = now;
		q->deadline_ms = r.deadline_ms;
		snprintf(q->what, sizeof(q->what), "%s", what);
		if (res.existing) {
			struct sb_queue_item it;

			/* Filed before (by this broker before a restart, or for
			 * another thread of the process): its deadline stands. */
			if (sb_queue_get(b->q, res.id, &it, &err) == 0) {
				q->created_ms = it.req.created_ms;
				q->deadline_ms = it.req.deadline_ms;
				if (it.has_decision) {
					q->decided = true;
					q->dec = it.dec;
				}
				sb_queue_item_free(&it);
			}
		}
	}
	if (!res.existing) {
		cJSON *rec = bk_record(b, "escalation", "broker");

		if (rec) {
			cJSON_AddStringToObject(rec, "id", res.id);
			cJSON_AddStringToObject(rec, "trigger", sb_trigger_name(d->trigger));
			bk_record_subject(rec, ev);
			cJSON_AddNumberToObject(rec, "pid", h->tgid);
			cJSON_AddStringToObject(rec, "rule", d->rule);
			cJSON_AddStringToObject(rec, "reason", d->reason);
			bk_audit_add(b, rec);
		}
	}
	bk_log(b, "held", hold_detail(h, ev, what, res.id), "HELD %s by %.16s[%u] (rule '%s'): request %s%s, denied in %llds unless approved",
	       what, ev->comm, h->tgid, d->rule, res.id, res.existing ? " (filed before)" : "",
	       (long long)((q->deadline_ms - now + 999) / 1000));
	return 0;
}

/* A remembered decision that applies. A once is used up in the file first,
 * under the lock every broker of the folder takes: if another broker used
 * it meanwhile, or the file cannot be changed, it is not used. */
static bool use_memory(struct sb_broker *b, const struct sb_bmem_entry *me)
{
	struct sb_err err = { { 0 } };
	bool changed = false;
	int rc;

	if (me->scope != SB_REM_ONCE)
		return true;
	rc = sb_bmem_take_once(b->folder, &b->mem, me->trigger, me->value, &changed, &err);
	if (changed) {
		bk_memory_rebuild(b);
		b->rules_changed = true;
	}
	if (rc == -ENOENT)
		bk_log(b, "remembered", NULL, "%s: asking a human", err.msg);
	else if (rc)
		bk_log(b, "error", NULL, "cannot use up remembered once '%s' (asking a human): %s", me->value, err.msg);
	return rc == 0;
}

/* The kernel escalated on a rule it checks only by its literal prefix, and
 * the classifier, seeing exactly the line the kernel decided on, finds
 * nothing to escalate: the broker may allow by itself. Only after exec's
 * point of no return: before it the kernel knows the binary, not the
 * arguments a wildcard inside is about (npm*publish* sees "npm", which
 * matches nothing, and the grant would let "npm publish" through later). */
static bool refined_allow(const struct sb_broker *b, const struct sb_kevent *ev, const struct hinfo *hi, uint32_t krule,
			  const struct sb_decision *base)
{
	return hi->exact && (ev->flags & SB_EVF_HELD_EXEC) && hi->ev.argc > 0 && kernel_refined(b, krule) &&
	       base->tier < SB_TIER_ESCALATE;
}

/* Who decides. The kernel escalated for rule krule; userspace may only
 * agree, be stricter, or know better where the kernel cannot see. */
static int decide_hold(struct sb_broker *b, struct bhold *h, const struct sb_kevent *ev, struct hinfo *hi, size_t *idx)
{
	struct sb_decision base, d;
	struct sb_err err = { { 0 } };
	struct sb_memory m;
	uint32_t krule = ev->rule, brule;
	int rc;

	rc = sb_classify(b->policy, NULL, &hi->ev, &base, &err);
	if (rc) {
		/* An event the classifier cannot use is a human's call. */
		memset(&base, 0, sizeof(base));
		base.tier = SB_TIER_ESCALATE;
		base.trigger = (enum sb_trigger)ev->trigger;
		sb_rule_label(b->policy, krule, base.rule, sizeof(base.rule));
		snprintf(base.reason, sizeof(base.reason), "escalated by the kernel (%s)", err.msg);
		return file_request(b, h, ev, hi, &base);
	}
	brule = rule_index(b, &base);
	usable_memory(b, ev->kind != SB_EVK_EXEC || (ev->flags & SB_EVF_HELD_EXEC), &m, idx);
	d = base;
	if (base.tier == SB_TIER_ESCALATE && m.n)
		sb_classify(b->policy, &m, &hi->ev, &d, NULL);
	if (d.remembered && d.memory_index >= 0)
		d.memory_index = (long)idx[d.memory_index];
	free(m.items);

	if (base.tier == SB_TIER_DENY) {
		decide_now(b, h, ev, hi, &base, NULL, SB_VERDICT_DENY);
		return 0;
	}
	if (hi->exact && brule == krule && d.remembered && d.memory_index >= 0 && (size_t)d.memory_index < b->mem.n) {
		struct sb_bmem_entry me = b->mem.e[d.memory_index];
		bool used;

		me.value = strdup(me.value);
		if (!me.value)
			return -ENOMEM;
		used = use_memory(b, &me);
		if (used)
			decide_now(b, h, ev, hi, &d, &me, SB_VERDICT_ALLOW);
		free(me.value);
		if (used)
			return 0;
	} else if (refined_allow(b, ev, hi, krule, &base)) {
		decide_now(b, h, ev, hi, &base, NULL, SB_VERDICT_ALLOW);
		return 0;
	}
	if (brule != krule || base.tier != SB_TIER_ESCALATE) {
		/* The kernel saw more than the event shows (a hard link, an
		 * inode known by another name, arguments not yet known): name
		 * the kernel's rule. */
		sb_rule_label(b->policy, krule, base.rule, sizeof(base.rule));
		base.tier = SB_TIER_ESCALATE;
	}
	return file_request(b, h, ev, hi, &base);
}

static struct bunfiled *find_unfiled(struct sb_broker *b, const struct bhold *h)
{
	size_t i;

	for (i = 0; i < b->nuf; i++)
		if (b->uf[i].tid == h->key.tid && b->uf[i].seq == h->seq)
			return &b->uf[i];
	return NULL;
}

static void drop_unfiled(struct sb_broker *b, const struct bhold *h)
{
	struct bunfiled *u = find_unfiled(b, h);

	if (u)
		*u = b->uf[--b->nuf];
}

/* A request that cannot be filed (full disk, permissions, no descriptors)
 * is retried every second; the hold waits no longer than a filed one
 * would. Returns how long it has been failing (ms), -1 when unknown. */
static int64_t unfiled_for(struct sb_broker *b, const struct bhold *h)
{
	struct bunfiled *u = find_unfiled(b, h);
	int64_t now = bk_now(b);

	if (!u) {
		if (b->nuf == b->capuf) {
			size_t ncap = b->capuf ? b->capuf * 2 : 16;
			struct bunfiled *nu = realloc(b->uf, ncap * sizeof(*nu));

			if (!nu)
				return -1;
			b->uf = nu;
			b->capuf = ncap;
		}
		u = &b->uf[b->nuf++];
		u->tid = h->key.tid;
		u->seq = h->seq;
		u->first_ms = now;
	}
	u->last_ms = now;
	return now - u->first_ms;
}

void bk_unfiled_prune(struct sb_broker *b)
{
	int64_t now = bk_now(b);
	size_t i = 0;

	/* Not retried for a while: filed, resolved, or the task is gone. */
	while (i < b->nuf) {
		if (now - b->uf[i].last_ms > 10000)
			b->uf[i] = b->uf[--b->nuf];
		else
			i++;
	}
}

static void deny_unfiled(struct sb_broker *b, struct bhold *h, const struct sb_kevent *ev, const struct hinfo *hi,
			 int rc)
{
	struct sb_decision d;

	memset(&d, 0, sizeof(d));
	d.tier = SB_TIER_DENY;
	d.trigger = (enum sb_trigger)ev->trigger;
	sb_rule_label(b->policy, ev->rule, d.rule, sizeof(d.rule));
	snprintf(d.reason, sizeof(d.reason), "its request could not be filed within %u s (escalation_timeout_seconds): %s",
		 b->policy->escalation_timeout, strerror(-rc));
	decide_now(b, h, ev, hi, &d, NULL, SB_VERDICT_DENY);
}

int bk_on_held(struct sb_broker *b, const struct sb_kevent *ev, bool adopted)
{
	struct hinfo *hi;
	struct bhold *h;
	size_t *idx;
	int64_t failing;
	int rc;

	if (bk_find_hold(b, ev->pid, ev->seq))
		return 0;
	if (!adopted && b->o.kops->get) {
		/* An event can arrive after the broker took the hold on from the
		 * kernel's map and resolved it: only a hold that is still there,
		 * as this request, without a verdict, is news. */
		struct sb_hold_key key = { .tid = ev->pid, .ident = ev->ident };
		struct sb_khold cur;

		if (b->o.kops->get(b->o.kops->arg, &key, &cur) || cur.h.ev.seq != ev->seq || cur.has_verdict)
			return 0;
	}
	h = add_hold(b, ev);
	if (!h)
		return -ENOMEM;
	hi = calloc(1, sizeof(*hi));
	idx = calloc(b->cmem.n + 1, sizeof(*idx));
	if (!hi || !idx) {
		/* Forgotten here (it was added last); the next reconciliation
		 * takes it on again. */
		b->nh--;
		free(hi);
		free(idx);
		return -ENOMEM;
	}
	fill_info(b, ev, hi);
	rc = decide_hold(b, h, ev, hi, idx);
	if (rc) {
		failing = unfiled_for(b, h);
		if (failing >= (int64_t)b->policy->escalation_timeout * 1000) {
			bk_log(b, "error", NULL, "the request of %.16s[%u] could not be filed for %lld s: denied", ev->comm,
			       h->tgid, (long long)(failing / 1000));
			deny_unfiled(b, h, ev, hi, rc);
			rc = 0;
		} else {
			/* Not filed: forget it here; the hold stays in the kernel
			 * and the next reconciliation takes it on again. */
			b->nh--;
		}
	}
	if (rc == 0)
		drop_unfiled(b, h);
	free_info(hi);
	free(hi);
	free(idx);
	return rc;
}
