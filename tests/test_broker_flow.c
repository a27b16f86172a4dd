/* The broker's state machine against a fake kernel (holds, verdicts,
 * tasks, signals) and a real folder queue: filing, approval, denial,
 * exec after its point of no return, the same request from two threads,
 * timeouts, a recycled pid, remembered decisions (saved, used, once used
 * up), lost events found by reconciliation, and a restart that adopts
 * holds and applies decisions made meanwhile, exactly once; exec held
 * before its point of no return under an argument rule, cut command
 * lines, a decision applied but not acknowledged before a crash, a request
 * that cannot be filed, two brokers sharing one folder's memories. */
#include "broker_test_util.h"

#include <signal.h>

#include <cjson/cJSON.h>

#include "audit/audit.h"
#include "shellpat.h"
#include "broker/broker.h"
#include "queue/queue.h"

#define MAXH 128

struct fk {
	struct sb_khold h[MAXH];
	size_t n;
	uint32_t gone[16];	/* tids that died */
	size_t ngone;
	struct {
		uint32_t tgid;
		int sig;
	} sig[256];
	size_t nsig;
	size_t nset;		/* set_verdict calls */
	uint64_t mono;
};

static struct sb_khold *fk_find(struct fk *k, uint32_t tid, uint64_t seq)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (k->h[i].key.tid == tid && k->h[i].h.ev.seq == seq)
			return &k->h[i];
	return NULL;
}

static bool fk_gone(struct fk *k, uint32_t tid)
{
	size_t i;

	for (i = 0; i < k->ngone; i++)
		if (k->gone[i] == tid)
			return true;
	return false;
}

static int fk_list(void *arg, uint32_t sandbox, struct sb_khold **out, size_t *n)
{
	struct fk *k = arg;

	(void)sandbox;
	*out = malloc((k->n + 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, k->h, k->n * sizeof(**out));
	*n = k->n;
	return 0;
}

static int fk_get(void *arg, const struct sb_hold_key *key, struct sb_khold *out)
{
	struct fk *k = arg;
	size_t i;

	for (i = 0; i < k->n; i++) {
		if (k->h[i].key.tid == key->tid && k->h[i].key.ident == key->ident) {
			*out = k->h[i];
			return 0;
		}
	}
	return -ENOENT;
}

static int fk_set_verdict(void *arg, uint32_t tid, uint64_t seq, uint8_t verdict)
{
	struct fk *k = arg;
	struct sb_khold *h = fk_find(k, tid, seq);

	k->nset++;
	if (h) {
		h->has_verdict = true;
		h->v.verdict = verdict;
		h->v.set_ns = k->mono;
	}
	return 0;
}

static int fk_forget(void *arg, const struct sb_hold_key *key, uint64_t seq)
{
	struct fk *k = arg;
	size_t i;

	for (i = 0; i < k->n; i++) {
		if (k->h[i].key.tid == key->tid && k->h[i].key.ident == key->ident && k->h[i].h.ev.seq == seq) {
			k->h[i] = k->h[--k->n];
			return 0;
		}
	}
	return 0;
}

static int fk_task(void *arg, uint32_t tgid, uint32_t tid, uint64_t start, bool *stopped)
{
	struct fk *k = arg;

	(void)tgid;
	(void)start;
	if (fk_gone(k, tid))
		return -ESRCH;
	if (stopped)
		*stopped = true;
	return 0;
}

static int fk_signal(void *arg, uint32_t tgid, uint32_t tid, uint64_t start, int sig)
{
	struct fk *k = arg;

	(void)start;
	if (fk_gone(k, tid))
		return -ESRCH;
	k->sig[k->nsig].tgid = tgid;
	k->sig[k->nsig].sig = sig;
	k->nsig++;
	return 0;
}

static uint64_t fk_mono(void *arg)
{
	return ((struct fk *)arg)->mono;
}

struct ft {
	char dir[PATH_MAX];
	char proc[PATH_MAX + 8];	/* a fake /proc: a directory per live pid */
	struct fk k;
	struct sb_broker_kops ops;
	struct sb_policy *p;
	struct sb_broker *b;
	int64_t now;
	uint64_t seq;
	char log[64][512];
	size_t nlog;
	const char *sandbox;	/* NULL: "/box" */
};

static int64_t ft_now(void *arg)
{
	return ((struct ft *)arg)->now;
}

static void ft_log(void *arg, const char *kind, const char *text, const struct cJSON *detail)
{
	struct ft *t = arg;

	(void)detail;
	if (t->nlog < 64)
		snprintf(t->log[t->nlog++], sizeof(t->log[0]), "%s: %s", kind, text);
}

static const char *policy_json =
	"{\"version\": 1, \"root\": \"/p\", \"escalation_timeout_seconds\": 60,"
	" \"triggers\": {\"shell\": \"allow\", \"write\": \"allow\", \"network\": \"allow\", \"read\": \"allow\"},"
	" \"shell\": {\"escalate\": [\"gitx push*\", \"held-tool*\", \"npmx*publish*\"], \"allow\": [\"gitx*\"]},"
	" \"write\": {\"escalate\": [\"/p/held/**\"]},"
	" \"network\": {\"escalate\": [\"127.0.0.1:8005\"]}}";

static uint32_t rule_of(const struct sb_policy *p, const char *text)
{
	size_t i;

	for (i = 0; i < p->nrules; i++)
		if (!strcmp(p->rules[i].text, text))
			return (uint32_t)i;
	fail_msg("no rule %s", text);
	return 0;
}

static void ft_open(struct ft *t, unsigned flags)
{
	struct sb_broker_opts o = {
		.folder = t->dir,
		.sandbox = t->sandbox ? t->sandbox : "/box",
		.cgroup_rel = "/box",
		.sandbox_id = 1,
		.policy = t->p,
		.policy_source = "test",
		.kops = &t->ops,
		.proc_root = t->proc,
		.flags = flags,
		.log = ft_log,
		.log_arg = t,
		.now_ms = ft_now,
		.clock_arg = t,
	};
	struct sb_err err = { { 0 } };

	if (sb_broker_open(&t->b, &o, &err))
		fail_msg("broker open: %s", err.msg);
	if (sb_broker_start(t->b, "/sys/fs/cgroup/box", &err))
		fail_msg("broker start: %s", err.msg);
}

static int setup(void **state)
{
	struct ft *t = calloc(1, sizeof(*t));

	bt_tmpdir(t->dir, sizeof(t->dir));
	snprintf(t->proc, sizeof(t->proc), "%s/proc", t->dir);
	mkdir(t->proc, 0755);
	t->ops = (struct sb_broker_kops){ .list = fk_list, .get = fk_get, .set_verdict = fk_set_verdict, .forget = fk_forget,
					  .task = fk_task, .signal = fk_signal, .mono_ns = fk_mono, .arg = &t->k };
	t->p = bt_policy(policy_json);
	t->now = 1700000000000;
	t->seq = 100;
	ft_open(t, SB_BROKER_NO_AUDIT);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct ft *t = *state;

	sb_broker_close(t->b, false);
	sb_policy_free(t->p);
	bt_rm_rf(t->dir);
	free(t);
	return 0;
}

/* A hold as the kernel makes it: in the map, and (unless lost) an event. */
static void proc_live(struct ft *t, uint32_t pid)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%u", t->proc, pid);
	mkdir(path, 0755);
}

static struct sb_kevent *hold_path(struct ft *t, uint32_t tgid, uint32_t tid, const char *path, bool deliver)
{
	struct sb_khold *h = &t->k.h[t->k.n++];
	struct sb_kevent *ev = &h->h.ev;

	proc_live(t, tgid);
	memset(h, 0, sizeof(*h));
	ev->seq = t->seq++;
	ev->pid = tid;
	ev->tgid = tgid;
	ev->start_ns = 1000 + tid;
	ev->ident = 0x1000 + ev->seq;
	ev->sandbox = 1;
	ev->rule = rule_of(t->p, "/p/held/**");
	ev->hook = SB_HOOK_PATH_MKNOD;
	ev->kind = SB_EVK_PATH;
	ev->action = SB_ACT_ESCALATED;
	ev->tier = SB_K_ESCALATE;
	ev->trigger = SB_K_WRITE;
	ev->op = SB_KOP_CREATE;
	ev->flags = SB_EVF_HELD;
	ev->ret = -513;
	snprintf(ev->comm, sizeof(ev->comm), "sbk");
	snprintf(ev->path.path, sizeof(ev->path.path), "%s", path);
	ev->path.len = (uint16_t)strlen(path);
	h->key.tid = tid;
	h->key.ident = ev->ident;
	if (deliver)
		assert_int_equal(sb_broker_event(t->b, ev), 0);
	return ev;
}

/* An exec hold: after the point of no return (SB_EVF_HELD_EXEC in flags,
 * with the kernel's command line) or before it (binary only). */
static struct sb_kevent *hold_exec_ev(struct ft *t, uint32_t pid, const char *exe, const char *cmd, const char *rule,
				      uint8_t flags)
{
	struct sb_khold *h = &t->k.h[t->k.n++];
	struct sb_kevent *ev = &h->h.ev;
	bool committed = (flags & SB_EVF_HELD_EXEC) != 0;

	proc_live(t, pid);
	memset(h, 0, sizeof(*h));
	ev->seq = t->seq++;
	ev->pid = ev->tgid = pid;
	ev->start_ns = 1000 + pid;
	ev->ident = 0x2000 + ev->seq;
	ev->sandbox = 1;
	ev->rule = rule_of(t->p, rule);
	ev->hook = committed ? SB_HOOK_BPRM_COMMITTED : SB_HOOK_BPRM_CHECK;
	ev->kind = SB_EVK_EXEC;
	ev->action = SB_ACT_ESCALATED;
	ev->tier = SB_K_ESCALATE;
	ev->trigger = SB_K_SHELL;
	ev->flags = SB_EVF_HELD | flags;
	ev->ret = committed ? SIGSTOP : -513;
	snprintf(ev->comm, sizeof(ev->comm), "%.15s", sb_basename(exe));
	snprintf(ev->exec.path, sizeof(ev->exec.path), "%s", exe);
	snprintf(ev->exec.argv, sizeof(ev->exec.argv), "%s", cmd);
	ev->exec.len = (uint16_t)strlen(exe);
	ev->exec.argv_len = (uint16_t)strlen(ev->exec.argv);
	h->h.committed = committed;
	h->key.tid = pid;
	h->key.ident = ev->ident;
	assert_int_equal(sb_broker_event(t->b, ev), 0);
	return ev;
}

static struct sb_kevent *hold_exec(struct ft *t, uint32_t pid, const char *cmd)
{
	return hold_exec_ev(t, pid, "/p/bin/gitx", cmd, "gitx push*", SB_EVF_HELD_EXEC);
}

static size_t count_state(struct ft *t, unsigned states)
{
	struct sb_queue *q;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	size_t n;

	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_list(q, states, &l, &err), 0);
	n = l.n;
	sb_queue_list_free(&l);
	sb_queue_close(q);
	return n;
}

/* The id of the only request in the given states. */
static void the_id(struct ft *t, unsigned states, char id[SB_QUEUE_ID_MAX + 1], struct sb_queue_item *copy)
{
	struct sb_queue *q;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };

	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_list(q, states, &l, &err), 0);
	assert_int_equal(l.n, 1);
	snprintf(id, SB_QUEUE_ID_MAX + 1, "%s", l.items[0].req.id);
	if (copy) {
		copy->req.origin = l.items[0].req.origin;
		copy->req.deadline_ms = l.items[0].req.deadline_ms;
		copy->req.pid = l.items[0].req.pid;
		copy->req.kind = l.items[0].req.kind;
	}
	sb_queue_list_free(&l);
	sb_queue_close(q);
}

static void decide(struct ft *t, const char *id, bool allow, const char *remember)
{
	struct sb_queue *q;
	struct sb_queue_decision d = { .verdict = allow ? SB_QV_ALLOW : SB_QV_DENY };
	struct sb_err err = { { 0 } };

	snprintf(d.reviewer, sizeof(d.reviewer), "alice");
	if (remember) {
		struct sb_queue_item it;

		d.remember = true;
		assert_int_equal(sb_remember_scope_parse(remember, &d.scope), 0);
		assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
		assert_int_equal(sb_queue_get(q, id, &it, &err), 0);
		assert_int_equal(sb_queue_remember_default(&it.req, d.scope, d.remember_value, sizeof(d.remember_value), &err),
				 0);
		sb_queue_item_free(&it);
		sb_queue_close(q);
	}
	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	if (sb_queue_decide(q, id, &d, &err))
		fail_msg("decide: %s", err.msg);
	sb_queue_close(q);
}

static int sigs(struct ft *t, uint32_t tgid, int sig)
{
	size_t i;
	int n = 0;

	for (i = 0; i < t->k.nsig; i++)
		if (t->k.sig[i].tgid == tgid && t->k.sig[i].sig == sig)
			n++;
	return n;
}

static void test_file_approve(void **state)
{
	struct ft *t = *state;
	struct sb_queue_item it = { 0 };
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *ev = hold_path(t, 300, 300, "/p/held/a", true);
	uint64_t seq = ev->seq;

	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, &it);
	assert_int_equal(it.req.origin, SB_ORIGIN_KERNEL);
	assert_int_equal(it.req.pid, 300);
	assert_int_equal(it.req.kind, SB_EV_WRITE);
	assert_true(it.req.deadline_ms == t->now + 60000);
	assert_int_equal(t->k.nsig, 0);
	decide(t, id, true, NULL);
	sb_broker_queue_changed(t->b);
	assert_true(fk_find(&t->k, 300, seq)->has_verdict);
	assert_int_equal(fk_find(&t->k, 300, seq)->v.verdict, SB_VERDICT_ALLOW);
	assert_int_equal(sigs(t, 300, SIGCONT), 1);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_APPLIED)), 1);
	/* Applied once: more passes change nothing. */
	sb_broker_queue_changed(t->b);
	sb_broker_tick(t->b);
	assert_int_equal(sigs(t, 300, SIGCONT), 1);
	assert_int_equal(t->k.nset, 1);
	/* Still stopped, verdict unused after 2 s: the continue was lost. */
	t->k.mono += 3000000000ULL;
	sb_broker_tick(t->b);
	assert_int_equal(sigs(t, 300, SIGCONT), 2);
	/* Used by its syscall, then 10 s later: cleaned up. */
	fk_find(&t->k, 300, seq)->h.used = 1;
	fk_find(&t->k, 300, seq)->h.used_ns = t->k.mono;
	t->k.mono += 11000000000ULL;
	sb_broker_tick(t->b);
	assert_int_equal(t->k.n, 0);
}

static void test_file_deny_and_exec(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];

	hold_path(t, 301, 301, "/p/held/b", true);
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, false, NULL);
	sb_broker_queue_changed(t->b);
	/* Before the point of no return a denial is a verdict + SIGCONT
	 * (the syscall restarts and gets EPERM). */
	assert_int_equal(sigs(t, 301, SIGCONT), 1);
	assert_int_equal(sigs(t, 301, SIGKILL), 0);

	hold_exec(t, 302, "gitx push origin");
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, false, NULL);
	sb_broker_queue_changed(t->b);
	/* After it: killed, and the hold is gone from the kernel. */
	assert_int_equal(sigs(t, 302, SIGKILL), 1);
	assert_int_equal(sigs(t, 302, SIGCONT), 0);
	assert_int_equal(t->k.n, 1);	/* only 301's (used by its syscall) */
}

static void test_same_request_two_threads(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];

	hold_path(t, 400, 400, "/p/held/c", true);
	hold_path(t, 400, 401, "/p/held/c", true);	/* another thread, same process and file */
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 1);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, NULL);
	sb_broker_queue_changed(t->b);
	assert_int_equal(t->k.nset, 2);		/* each hold gets its verdict */
	assert_int_equal(sigs(t, 400, SIGCONT), 2);
}

static void test_timeout(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_queue *q;
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	struct sb_kevent *ev = hold_path(t, 500, 500, "/p/held/d", true);

	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	t->now += 59000;
	sb_broker_tick(t->b);
	assert_int_equal(t->k.nset, 0);
	t->now += 1001;
	sb_broker_tick(t->b);
	assert_int_equal(fk_find(&t->k, 500, ev->seq)->v.verdict, SB_VERDICT_DENY);
	assert_int_equal(sigs(t, 500, SIGCONT), 1);
	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_get(q, id, &it, &err), 0);
	assert_true(it.dec.timed_out);
	assert_string_equal(it.dec.reviewer, "sandbox-bpf");
	assert_int_equal(it.state, SB_QS_APPLIED);
	sb_queue_item_free(&it);
	sb_queue_close(q);
}

static void test_human_beats_timeout(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *ev = hold_path(t, 510, 510, "/p/held/e", true);

	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, NULL);	/* decided, but the broker has not looked yet */
	t->now += 61000;
	sb_broker_tick(t->b);		/* the timeout finds it decided: the human's stands */
	assert_int_equal(fk_find(&t->k, 510, ev->seq)->v.verdict, SB_VERDICT_ALLOW);
}

static void test_recycled_pid(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];

	hold_path(t, 600, 600, "/p/held/f", true);
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	t->k.gone[t->k.ngone++] = 600;	/* died; its pid may now be someone else */
	decide(t, id, true, NULL);
	sb_broker_queue_changed(t->b);
	assert_int_equal(t->k.nsig, 0);
	assert_int_equal(t->k.nset, 0);
	assert_int_equal(t->k.n, 0);		/* its hold is cleaned up */
	assert_int_equal(count_state(t, SB_QSM(SB_QS_APPLIED)), 1);
}

static void test_remember_prefix(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1], *text;

	hold_exec(t, 700, "gitx push origin");
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, "prefix");
	sb_broker_queue_changed(t->b);
	assert_int_equal(sigs(t, 700, SIGCONT), 1);
	text = bt_read(t->dir, ".sandbox/remembered.json");
	assert_non_null(text);
	assert_non_null(strstr(text, "\"gitx push\""));
	free(text);
	assert_true(sb_broker_take_rules_changed(t->b));
	/* Same prefix: decided by the memory, nothing filed. */
	hold_exec(t, 701, "gitx push other");
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 701, SIGCONT), 1);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 0);
	/* Another word is not covered. */
	hold_exec(t, 702, "gitx pushy");
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 1);
	assert_int_equal(sigs(t, 702, SIGCONT), 0);
}

static void test_remember_once_used_up(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1], *text;

	hold_path(t, 800, 800, "/p/held/g", true);
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, "once");
	sb_broker_queue_changed(t->b);
	text = bt_read(t->dir, ".sandbox/remembered.json");
	assert_non_null(strstr(text, "write:create:/p/held/g"));
	free(text);
	hold_path(t, 801, 801, "/p/held/g", true);	/* once more: allowed, used up */
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 801, SIGCONT), 1);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 0);
	text = bt_read(t->dir, ".sandbox/remembered.json");
	assert_null(strstr(text, "/p/held/g"));
	free(text);
	hold_path(t, 802, 802, "/p/held/g", true);	/* and then asked again */
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 1);
}

static void test_lost_event_reconciled(void **state)
{
	struct ft *t = *state;

	hold_path(t, 900, 900, "/p/held/h", false);	/* the ring buffer was full */
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 0);
	sb_broker_tick(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 1);
	/* Seen twice (the event arrives late): still one request. */
	sb_broker_event(t->b, &t->k.h[0].h.ev);
	sb_broker_tick(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 1);
}

/* The hold was taken on from the map (its event late), resolved, and
 * then its event arrives: nothing new is filed. */
static void test_late_event(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *ev = hold_path(t, 950, 950, "/p/held/late", false);

	sb_broker_tick(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, NULL);
	sb_broker_queue_changed(t->b);
	assert_int_equal(sigs(t, 950, SIGCONT), 1);
	sb_broker_event(t->b, ev);
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 0);
	assert_int_equal(sigs(t, 950, SIGCONT), 1);
}

static void test_restart_adopts(void **state)
{
	struct ft *t = *state;
	char id1[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *a, *b, *c;
	struct sb_broker *dead;
	struct sb_queue *q;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	size_t i;

	a = hold_path(t, 1000, 1000, "/p/held/x1", true);
	b = hold_path(t, 1001, 1001, "/p/held/x2", true);
	c = hold_exec(t, 1002, "gitx push origin");
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 3);
	/* kill -9: nothing more from this broker (closed at the end only to
	 * free its memory; close writes nothing without an audit chain). */
	dead = t->b;
	t->b = NULL;
	/* Meanwhile: two decisions, one more hold nobody sees. */
	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_list(q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
	for (i = 0; i < l.n; i++) {
		if (l.items[i].req.pid == 1000)
			snprintf(id1, sizeof(id1), "%s", l.items[i].req.id);
		if (l.items[i].req.pid == 1001)
			decide(t, l.items[i].req.id, false, NULL);
	}
	sb_queue_list_free(&l);
	sb_queue_close(q);
	decide(t, id1, true, NULL);
	hold_path(t, 1003, 1003, "/p/held/x4", false);
	/* Restart. */
	ft_open(t, SB_BROKER_NO_AUDIT);
	assert_int_equal(fk_find(&t->k, 1000, a->seq)->v.verdict, SB_VERDICT_ALLOW);
	assert_int_equal(fk_find(&t->k, 1001, b->seq)->v.verdict, SB_VERDICT_DENY);
	assert_int_equal(sigs(t, 1000, SIGCONT), 1);
	assert_int_equal(sigs(t, 1001, SIGCONT), 1);
	assert_int_equal(sigs(t, 1002, SIGCONT) + sigs(t, 1002, SIGKILL), 0);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 2);	/* gitx, and x4 filed now */
	assert_int_equal(count_state(t, SB_QSM(SB_QS_APPLIED)), 2);
	(void)c;
	/* A second restart applies nothing twice. */
	sb_broker_close(t->b, false);
	ft_open(t, SB_BROKER_NO_AUDIT);
	assert_int_equal(sigs(t, 1000, SIGCONT), 1);
	assert_int_equal(sigs(t, 1001, SIGCONT), 1);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 2);
	sb_broker_close(dead, false);
}

/* With the audit chain: the records the loop leaves behind. */
struct kinds {
	int escalation, verdict, timeout, attach, policy_load, decision;
};

static int count_kind(const struct cJSON *rec, void *arg)
{
	struct kinds *k = arg;
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(rec, "kind");

	if (!cJSON_IsString(kind))
		return 0;
	if (!strcmp(kind->valuestring, "escalation"))
		k->escalation++;
	else if (!strcmp(kind->valuestring, "verdict"))
		k->verdict++;
	else if (!strcmp(kind->valuestring, "timeout"))
		k->timeout++;
	else if (!strcmp(kind->valuestring, "attach"))
		k->attach++;
	else if (!strcmp(kind->valuestring, "policy_load"))
		k->policy_load++;
	else if (!strcmp(kind->valuestring, "decision"))
		k->decision++;
	return 0;
}

static void test_audit_records(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_audit *a;
	struct sb_audit_query qy = { 0 };
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct kinds k = { 0 };
	struct sb_kevent deny;

	sb_broker_close(t->b, false);
	setenv("SANDBOX_BPF_KEY_DIR", t->dir, 1);
	ft_open(t, 0);
	hold_path(t, 1100, 1100, "/p/held/y", true);
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, "once");
	sb_broker_queue_changed(t->b);
	hold_path(t, 1101, 1101, "/p/held/z", true);
	sb_broker_flush(t->b);
	t->now += 61000;
	sb_broker_tick(t->b);
	memset(&deny, 0, sizeof(deny));
	deny.sandbox = 1;
	deny.kind = SB_EVK_PATH;
	deny.action = SB_ACT_DENIED;
	deny.tier = SB_K_DENY;
	deny.trigger = SB_K_WRITE;
	deny.rule = SB_RULE_DEFAULT;
	snprintf(deny.path.path, sizeof(deny.path.path), "/etc/passwd");
	sb_broker_event(t->b, &deny);
	sb_broker_flush(t->b);
	sb_broker_close(t->b, true);
	t->b = NULL;
	assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err), 0);
	assert_int_equal(sb_audit_query_run(a, &qy, count_kind, &k, &err), 0);
	assert_int_equal(k.escalation, 2);
	assert_int_equal(k.verdict, 1);
	assert_int_equal(k.timeout, 1);
	assert_int_equal(k.attach, 1);
	assert_int_equal(k.policy_load, 1);
	assert_int_equal(k.decision, 1);
	assert_int_equal(sb_audit_verify_store(a, &(struct sb_audit_verify_opts){ 0 }, &r, &err), 0);
	assert_int_equal(r.problem, SB_AUDIT_INTACT);
	sb_audit_close(a, &err);
	ft_open(t, SB_BROKER_NO_AUDIT);	/* for teardown */
	unsetenv("SANDBOX_BPF_KEY_DIR");
}

/* The audit chain cannot be written: denials are applied, approvals wait
 * for their record; once the store works the records are written and the
 * approvals applied. */
static void test_audit_failing(void **state)
{
	struct ft *t = *state;
	char path[PATH_MAX + 32], id[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *ev;
	struct sb_queue *q;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	size_t i, nlog;
	bool loud = false;

	sb_broker_close(t->b, false);
	setenv("SANDBOX_BPF_KEY_DIR", t->dir, 1);
	snprintf(path, sizeof(path), "%s/.sandbox/audit.db", t->dir);
	assert_int_equal(mkdir(path, 0700), 0);	/* not a database */
	nlog = t->nlog;
	ft_open(t, SB_BROKER_AUDIT_OPTIONAL);
	ev = hold_path(t, 1200, 1200, "/p/held/allow", true);
	hold_path(t, 1201, 1201, "/p/held/deny", true);
	sb_broker_flush(t->b);
	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_list(q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
	assert_int_equal(l.n, 2);
	for (i = 0; i < l.n; i++)
		decide(t, l.items[i].req.id, l.items[i].req.pid == 1200, NULL);
	sb_queue_list_free(&l);
	sb_queue_close(q);
	sb_broker_queue_changed(t->b);
	sb_broker_tick(t->b);
	assert_int_equal(sigs(t, 1201, SIGCONT), 1);	/* the denial is applied */
	assert_int_equal(sigs(t, 1200, SIGCONT), 0);	/* the approval waits */
	assert_false(fk_find(&t->k, 1200, ev->seq)->has_verdict);
	for (i = nlog; i < t->nlog; i++)
		if (strstr(t->log[i], "AUDIT CHAIN NOT"))
			loud = true;
	assert_true(loud);
	assert_int_equal(rmdir(path), 0);	/* the store can be created now */
	sb_broker_tick(t->b);
	assert_int_equal(sigs(t, 1200, SIGCONT), 1);
	assert_int_equal(fk_find(&t->k, 1200, ev->seq)->v.verdict, SB_VERDICT_ALLOW);
	(void)id;
	sb_broker_close(t->b, false);
	t->b = NULL;
	{
		struct sb_audit *a;
		struct sb_audit_query qy = { 0 };
		struct kinds k = { 0 };

		assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err), 0);
		assert_int_equal(sb_audit_query_run(a, &qy, count_kind, &k, &err), 0);
		assert_int_equal(k.escalation, 2);
		assert_int_equal(k.verdict, 2);
		assert_int_equal(k.attach, 1);
		sb_audit_close(a, &err);
	}
	ft_open(t, SB_BROKER_NO_AUDIT);
	unsetenv("SANDBOX_BPF_KEY_DIR");
}

/* Paths and argv that are not UTF-8 (the agent names its files) are
 * escaped into the records, not dropped from the chain. */
struct texts {
	int bad_path, bad_cmd, backslash, esc_path;
};

static int find_texts(const struct cJSON *rec, void *arg)
{
	struct texts *x = arg;
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(rec, "path");
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(rec, "command");

	if (cJSON_IsString(path) && !strcmp(path->valuestring, "/etc/\\xff\\xfe"))
		x->bad_path++;
	if (cJSON_IsString(path) && !strcmp(path->valuestring, "/p/held/a\\\\xff"))
		x->backslash++;
	if (cJSON_IsString(path) && !strcmp(path->valuestring, "/p/held/\\xc0\\xafb"))
		x->esc_path++;
	if (cJSON_IsString(cmd) && !strcmp(cmd->valuestring, "gitx push \\xff\\x80 \xc3\xa9"))
		x->bad_cmd++;
	return 0;
}

static void test_audit_not_utf8(void **state)
{
	struct ft *t = *state;
	struct sb_audit *a;
	struct sb_audit_query qy = { 0 };
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct texts x = { 0 };
	struct sb_kevent deny;
	size_t i;

	sb_broker_close(t->b, false);
	setenv("SANDBOX_BPF_KEY_DIR", t->dir, 1);
	ft_open(t, 0);
	memset(&deny, 0, sizeof(deny));
	deny.sandbox = 1;
	deny.kind = SB_EVK_PATH;
	deny.action = SB_ACT_DENIED;
	deny.tier = SB_K_DENY;
	deny.trigger = SB_K_WRITE;
	deny.rule = SB_RULE_DEFAULT;
	snprintf(deny.path.path, sizeof(deny.path.path), "/etc/\xff\xfe");
	snprintf(deny.comm, sizeof(deny.comm), "x\xff");
	sb_broker_event(t->b, &deny);
	hold_path(t, 1300, 1300, "/p/held/a\\xff", true);	/* a real backslash */
	hold_path(t, 1301, 1301, "/p/held/\xc0\xaf" "b", true);	/* an overlong '/' */
	hold_exec(t, 1302, "gitx push \xff\x80 \xc3\xa9");
	sb_broker_flush(t->b);
	for (i = 0; i < t->nlog; i++)
		assert_null(strstr(t->log[i], "dropped"));
	sb_broker_close(t->b, true);
	t->b = NULL;
	assert_int_equal(sb_audit_open(t->dir, SB_AUDIT_READONLY, &a, &err), 0);
	assert_int_equal(sb_audit_query_run(a, &qy, find_texts, &x, &err), 0);
	assert_int_equal(x.bad_path, 1);	/* the kernel's denial */
	assert_int_equal(x.backslash, 1);	/* escalation */
	assert_int_equal(x.esc_path, 1);
	assert_int_equal(x.bad_cmd, 1);
	assert_int_equal(sb_audit_verify_store(a, &(struct sb_audit_verify_opts){ 0 }, &r, &err), 0);
	assert_int_equal(r.problem, SB_AUDIT_INTACT);
	sb_audit_close(a, &err);
	ft_open(t, SB_BROKER_NO_AUDIT);
	unsetenv("SANDBOX_BPF_KEY_DIR");
}

/* A record that still cannot be written (here the sandbox name, which is
 * not escaped, is not UTF-8): the approval it records is applied as a
 * denial, never unrecorded. */
static void test_audit_unrecordable_allow(void **state)
{
	struct ft *t = *state;
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *ev;
	size_t i, nlog;
	bool loud = false;

	sb_broker_close(t->b, false);
	setenv("SANDBOX_BPF_KEY_DIR", t->dir, 1);
	t->sandbox = "/box\xff";
	nlog = t->nlog;
	ft_open(t, 0);
	ev = hold_path(t, 1400, 1400, "/p/held/a", true);
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, "once");
	sb_broker_queue_changed(t->b);
	assert_true(fk_find(&t->k, 1400, ev->seq)->has_verdict);
	assert_int_equal(fk_find(&t->k, 1400, ev->seq)->v.verdict, SB_VERDICT_DENY);
	assert_int_equal(sigs(t, 1400, SIGCONT), 1);
	for (i = nlog; i < t->nlog; i++)
		if (strstr(t->log[i], "could not be recorded: denied instead"))
			loud = true;
	assert_true(loud);
	/* Not remembered either. */
	assert_null(bt_read(t->dir, ".sandbox/remembered.json"));
	sb_broker_close(t->b, false);
	t->sandbox = NULL;
	ft_open(t, SB_BROKER_NO_AUDIT);
	unsetenv("SANDBOX_BPF_KEY_DIR");
}

/* The request of the given process in the given states. */
static void id_of(struct ft *t, unsigned states, int pid, char id[SB_QUEUE_ID_MAX + 1])
{
	struct sb_queue *q;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	size_t i, n = 0;

	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_list(q, states, &l, &err), 0);
	for (i = 0; i < l.n; i++) {
		if (l.items[i].req.pid == pid) {
			snprintf(id, SB_QUEUE_ID_MAX + 1, "%s", l.items[i].req.id);
			n++;
		}
	}
	assert_int_equal(n, 1);
	sb_queue_list_free(&l);
	sb_queue_close(q);
}

/* Before exec's point of no return the broker sees the binary, not the
 * arguments: a rule with a wildcard in its first word (npmx*publish*)
 * matches nothing it sees, which must not become an allow (the kernel
 * would take the grant for the committed check of "npmx publish"). */
static void test_early_exec_argument_rule(void **state)
{
	struct ft *t = *state;
	struct sb_queue *q;
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];
	struct sb_kevent *ev;

	ev = hold_exec_ev(t, 1600, "/p/bin/npmx", "", "npmx*publish*", 0);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1600, SIGCONT), 0);
	assert_false(fk_find(&t->k, 1600, ev->seq)->has_verdict);
	id_of(t, SB_QSM(SB_QS_PENDING), 1600, id);
	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_get(q, id, &it, &err), 0);
	assert_string_equal(it.req.rule, "npmx*publish*");	/* the kernel's rule */
	sb_queue_item_free(&it);
	sb_queue_close(q);
	/* After it, with the whole line: the classifier decides. */
	hold_exec_ev(t, 1601, "/p/bin/npmx", "npmx install left-pad", "npmx*publish*", SB_EVF_HELD_EXEC);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1601, SIGCONT), 1);
	hold_exec_ev(t, 1602, "/p/bin/npmx", "npmx publish", "npmx*publish*", SB_EVF_HELD_EXEC);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1602, SIGCONT) + sigs(t, 1602, SIGKILL), 0);
	id_of(t, SB_QSM(SB_QS_PENDING), 1602, id);
	/* Cut: the classifier does not see what the kernel decided on. */
	hold_exec_ev(t, 1603, "/p/bin/npmx", "npmx install left-pad", "npmx*publish*",
		     SB_EVF_HELD_EXEC | SB_EVF_ARGV_TRUNC);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1603, SIGCONT), 0);
	id_of(t, SB_QSM(SB_QS_PENDING), 1603, id);
}

static void write_cmdline(struct ft *t, uint32_t pid, const char *const *argv)
{
	char path[PATH_MAX + 64];
	FILE *f;

	proc_live(t, pid);
	snprintf(path, sizeof(path), "%s/%u/cmdline", t->proc, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	for (; *argv; argv++)
		fwrite(*argv, 1, strlen(*argv) + 1, f);
	fclose(f);
}

static void get_req(struct ft *t, int pid, struct sb_queue_item *it)
{
	struct sb_queue *q;
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];

	id_of(t, SB_QSM(SB_QS_PENDING), pid, id);
	assert_int_equal(sb_queue_open(t->dir, 0, &q, &err), 0);
	assert_int_equal(sb_queue_get(q, id, it, &err), 0);
	sb_queue_close(q);
}

/* A command line the kernel cut (SB_EVF_ARGV_TRUNC, or one that fills the
 * event) matches no remembered decision, and the human is told. */
static void test_exec_argv_cut(void **state)
{
	struct ft *t = *state;
	static const char *const full[] = { "gitx", "push", "origin", "main", "--force", NULL };
	char id[SB_QUEUE_ID_MAX + 1], reason[64], longcmd[SB_EV_ARGV];
	struct sb_queue_item it;

	hold_exec(t, 1700, "gitx push origin");
	sb_broker_flush(t->b);
	the_id(t, SB_QSM(SB_QS_PENDING), id, NULL);
	decide(t, id, true, "prefix");
	sb_broker_queue_changed(t->b);
	assert_int_equal(sigs(t, 1700, SIGCONT), 1);
	/* "gitx push" is remembered, but the line was cut: a human decides,
	 * and sees the process's own command line, marked as such. */
	write_cmdline(t, 1701, full);
	hold_exec_ev(t, 1701, "/p/bin/gitx", "gitx push origin", "gitx push*", SB_EVF_HELD_EXEC | SB_EVF_ARGV_TRUNC);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1701, SIGCONT), 0);
	get_req(t, 1701, &it);
	assert_int_equal(it.req.argc, 5);
	assert_string_equal(it.req.argv[4], "--force");
	snprintf(reason, sizeof(reason), "/proc/1701/cmdline");
	assert_non_null(strstr(it.req.reason, "CUT"));
	assert_non_null(strstr(it.req.reason, reason));
	sb_queue_item_free(&it);
	/* No /proc to read: the kernel's beginning, said to be one. */
	hold_exec_ev(t, 1702, "/p/bin/gitx", "gitx push origin", "gitx push*", SB_EVF_HELD_EXEC | SB_EVF_ARGV_TRUNC);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1702, SIGCONT), 0);
	get_req(t, 1702, &it);
	assert_int_equal(it.req.argc, 3);
	assert_non_null(strstr(it.req.reason, "only its beginning"));
	sb_queue_item_free(&it);
	/* A line that fills the event is taken as cut without the flag. */
	memset(longcmd, 'a', sizeof(longcmd) - 1);
	longcmd[sizeof(longcmd) - 1] = '\0';
	memcpy(longcmd, "gitx push ", 10);
	hold_exec_ev(t, 1703, "/p/bin/gitx", longcmd, "gitx push*", SB_EVF_HELD_EXEC);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1703, SIGCONT), 0);
	get_req(t, 1703, &it);
	assert_non_null(strstr(it.req.reason, "CUT"));
	sb_queue_item_free(&it);
	/* Complete: the memory decides, the line is not marked. */
	hold_exec(t, 1704, "gitx push origin");
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 1704, SIGCONT), 1);
}

/* Applied, then the broker died before acknowledging: the next broker
 * takes the decision on (remembered, acknowledged), so the same process
 * asking the same thing again is a new request, not the old approval. */
static void test_restart_applied_not_acked(void **state)
{
	struct ft *t = *state;
	char id1[SB_QUEUE_ID_MAX + 1], id2[SB_QUEUE_ID_MAX + 1], path[PATH_MAX + 64], *text;
	struct sb_broker *dead;

	hold_path(t, 1800, 1800, "/p/held/r1", true);
	hold_path(t, 1801, 1801, "/p/held/r2", true);
	sb_broker_flush(t->b);
	id_of(t, SB_QSM(SB_QS_PENDING), 1800, id1);
	id_of(t, SB_QSM(SB_QS_PENDING), 1801, id2);
	decide(t, id1, true, NULL);
	decide(t, id2, true, "once");
	sb_broker_queue_changed(t->b);
	assert_int_equal(sigs(t, 1800, SIGCONT), 1);
	assert_int_equal(sigs(t, 1801, SIGCONT), 1);
	/* The crash came before sb_queue_ack and before remembering. */
	snprintf(path, sizeof(path), "%s/.sandbox/escalations/applied/%s.json", t->dir, id1);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/.sandbox/escalations/applied/%s.json", t->dir, id2);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/.sandbox/remembered.json", t->dir);
	unlink(path);
	dead = t->b;
	t->b = NULL;
	ft_open(t, SB_BROKER_NO_AUDIT);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_DONE)), 0);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_APPLIED)), 2);
	text = bt_read(t->dir, ".sandbox/remembered.json");
	assert_non_null(text);
	assert_non_null(strstr(text, "write:create:/p/held/r2"));
	free(text);
	/* Same process, same file: asked again. */
	hold_path(t, 1800, 1800, "/p/held/r1", true);
	sb_broker_flush(t->b);
	assert_int_equal(count_state(t, SB_QSM(SB_QS_PENDING)), 1);
	assert_int_equal(sigs(t, 1800, SIGCONT), 1);
	sb_broker_close(dead, false);
}

/* A request that cannot be filed (here the queue's lock cannot be opened)
 * keeps its task held and is retried, and denied at the escalation
 * timeout like a filed one. */
static void test_unfiled_denied_at_timeout(void **state)
{
	struct ft *t = *state;
	char path[PATH_MAX + 64];
	struct sb_kevent *ev;
	int i;

	snprintf(path, sizeof(path), "%s/.sandbox/escalations/.lock", t->dir);
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	ev = hold_path(t, 1900, 1900, "/p/held/nospace", false);
	assert_int_equal(sb_broker_event(t->b, ev), -EISDIR);
	sb_broker_flush(t->b);
	assert_false(fk_find(&t->k, 1900, ev->seq)->has_verdict);
	for (i = 0; i < 59; i++) {
		t->now += 1000;
		sb_broker_tick(t->b);
	}
	assert_false(fk_find(&t->k, 1900, ev->seq)->has_verdict);
	assert_int_equal(sigs(t, 1900, SIGCONT), 0);
	t->now += 1000;
	sb_broker_tick(t->b);
	assert_true(fk_find(&t->k, 1900, ev->seq)->has_verdict);
	assert_int_equal(fk_find(&t->k, 1900, ev->seq)->v.verdict, SB_VERDICT_DENY);
	assert_int_equal(sigs(t, 1900, SIGCONT), 1);
	assert_int_equal(rmdir(path), 0);
}

/* Two brokers on one folder (two `run` in the same project): neither
 * loses the other's memories, and a once is used once. */
static void test_two_brokers_memory(void **state)
{
	struct ft *t = *state;
	struct ft *u = calloc(1, sizeof(*u));
	char id[SB_QUEUE_ID_MAX + 1], *text;
	struct sb_err err = { { 0 } };

	assert_non_null(u);
	bt_write(t->dir, ".sandbox/remembered.json",
		 "{\"version\": 1, \"remembered\": [{\"scope\": \"once\", \"trigger\": \"write\","
		 " \"value\": \"write:create:/p/held/o\"}]}");
	assert_int_equal(sb_broker_reload_memory(t->b, &err), 0);
	memcpy(u->dir, t->dir, sizeof(u->dir));
	memcpy(u->proc, t->proc, sizeof(u->proc));
	u->ops = t->ops;
	u->ops.arg = &u->k;
	u->p = t->p;
	u->now = t->now;
	u->seq = 5000;
	ft_open(u, SB_BROKER_NO_AUDIT);
	/* Both loaded the once: the first to use it has it. */
	hold_path(t, 2000, 2000, "/p/held/o", true);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 2000, SIGCONT), 1);
	hold_path(u, 2001, 2001, "/p/held/o", true);
	sb_broker_flush(u->b);
	assert_int_equal(sigs(u, 2001, SIGCONT), 0);
	id_of(t, SB_QSM(SB_QS_PENDING), 2001, id);
	/* Each remembers something: both stay. */
	hold_exec(t, 2002, "gitx push origin");
	sb_broker_flush(t->b);
	id_of(t, SB_QSM(SB_QS_PENDING), 2002, id);
	decide(t, id, true, "prefix");
	sb_broker_queue_changed(t->b);
	assert_int_equal(sigs(t, 2002, SIGCONT), 1);
	hold_path(u, 2003, 2003, "/p/held/q", true);
	sb_broker_flush(u->b);
	id_of(t, SB_QSM(SB_QS_PENDING), 2003, id);
	decide(t, id, true, "once");
	sb_broker_queue_changed(u->b);
	assert_int_equal(sigs(u, 2003, SIGCONT), 1);
	text = bt_read(t->dir, ".sandbox/remembered.json");
	assert_non_null(text);
	assert_non_null(strstr(text, "\"gitx push\""));
	assert_non_null(strstr(text, "write:create:/p/held/q"));
	assert_null(strstr(text, "/p/held/o"));
	free(text);
	/* The first broker sees the second's memory once it changes the file. */
	hold_path(t, 2004, 2004, "/p/held/q", true);
	sb_broker_flush(t->b);
	assert_int_equal(sigs(t, 2004, SIGCONT), 0);	/* not loaded here yet: asked */
	sb_broker_close(u->b, false);
	free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_file_approve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_deny_and_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_request_two_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_human_beats_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recycled_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remember_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remember_once_used_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_event_reconciled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_adopts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_failing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_early_exec_argument_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_argv_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_applied_not_acked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unfiled_denied_at_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_brokers_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_not_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_unrecordable_allow, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
