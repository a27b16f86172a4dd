/* The folder queue's API one call at a time: ids, file formats, submit
 * with dedup, claims and leases, decide exactly once, wait, ack, restart,
 * outputs, display escaping. */
#include <arpa/inet.h>
#include <poll.h>

#include "queue_test_util.h"

/* ---- ids ---- */

static void test_id_new_is_valid_and_sorted(void **state)
{
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1];

	(void)state;
	assert_int_equal(sb_queue_id_new(a, 1700000000123456LL), 0);
	assert_true(sb_queue_id_valid(a));
	assert_int_equal(strncmp(a, "20231114-221320-123456-", 23), 0);
	assert_int_equal(strlen(a), 31);
	assert_int_equal(sb_queue_id_new(b, 1700000000123457LL), 0);
	assert_true(strcmp(a, b) < 0);
	assert_int_equal(sb_queue_id_new(b, 0), 0);
	assert_true(strcmp(a, b) < 0);
}

static void test_id_validation(void **state)
{
	static const char *const bad[] = {
		"", "../../etc/x", "..", ".", "a/b", "/etc/passwd", "-rf", "_x", "a b", "a\nb", "a.json",
		"a..b", "\xc3\xa9t\xc3\xa9", "x\\y", "a:b", "0123456789012345678901234567890123456789012345678901234567890123X",
	};
	struct sb_err err = { { 0 } };
	char max[SB_QUEUE_ID_MAX + 1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(sb_queue_id_valid(bad[i]));
		assert_int_equal(sb_queue_id_check(bad[i], &err), -EINVAL);
		assert_non_null(strstr(err.msg, "invalid request id"));
	}
	assert_false(sb_queue_id_valid(NULL));
	memset(max, 'a', SB_QUEUE_ID_MAX);
	max[SB_QUEUE_ID_MAX] = '\0';
	assert_true(sb_queue_id_valid(max));
	assert_true(sb_queue_id_valid("req-1_A"));
}

static void test_traversal_ids_rejected_by_every_call(void **state)
{
	struct qt *t = *state;
	struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "alice");
	struct sb_err err = { { 0 } };
	struct sb_queue_item it;
	enum sb_queue_state st;
	char *data;
	size_t len;
	static const char *const ids[] = { "../../etc/x", "../pending/x", "x/../../y", "..", "" };
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const char *id = ids[i];

		assert_int_equal(sb_queue_decide(t->q, id, &d, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "invalid request id"));
		assert_int_equal(sb_queue_claim(t->q, id, "me", 0, &err), -EINVAL);
		assert_int_equal(sb_queue_release(t->q, id, "me", &err), -EINVAL);
		assert_int_equal(sb_queue_renew(t->q, id, "me", 0, &err), -EINVAL);
		assert_int_equal(sb_queue_ack(t->q, id, &err), -EINVAL);
		assert_int_equal(sb_queue_get(t->q, id, &it, &err), -EINVAL);
		assert_int_equal(sb_queue_locate(t->q, id, &st, &err), -EINVAL);
		assert_int_equal(sb_queue_wait(t->q, id, 0, &d, NULL, &err), -EINVAL);
		assert_int_equal(sb_queue_write_output(t->q, id, "x", 1, &err), -EINVAL);
		assert_int_equal(sb_queue_read_output(t->q, id, &data, &len, &err), -EINVAL);
	}
}

/* ---- formats ---- */

static void test_time_format_and_parse(void **state)
{
	static const char *const bad[] = {
		"2025-02-30T00:00:00Z", "2025-13-01T00:00:00Z", "2025-01-01 00:00:00Z", "2025-01-01T00:00:00",
		"2025-01-01T00:00:00+01:00", "2025-01-01T24:00:00Z", "2025-01-01T00:00:00.Z", "1969-12-31T23:59:59Z",
		"2025-01-01T00:00:00.1234567890Z", "", "x",
	};
	char buf[SB_QUEUE_TIME_LEN];
	int64_t ms;
	size_t i;

	(void)state;
	sb_queue_time_format(1700000000123LL, buf);
	assert_string_equal(buf, "2023-11-14T22:13:20.123Z");
	assert_int_equal(sb_queue_time_parse(buf, &ms), 0);
	assert_int_equal(ms, 1700000000123LL);
	assert_int_equal(sb_queue_time_parse("2024-02-29T12:00:00Z", &ms), 0);
	assert_int_equal(sb_queue_time_parse("2024-02-29T12:00:00.5Z", &ms), 0);
	assert_int_equal(ms % 1000, 500);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sb_queue_time_parse(bad[i], &ms), -EINVAL);
}

static void test_request_roundtrip_all_kinds(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request reqs[3];
	char id[SB_QUEUE_ID_MAX + 1];
	size_t i;

	reqs[0] = qt_exec_req(NULL, 10);
	reqs[0].deadline_ms = sb_queue_now_ms() + 300000;
	reqs[1] = qt_write_req("/etc/hosts", 11);
	reqs[2] = qt_connect_req(12);
	for (i = 0; i < 3; i++) {
		struct sb_queue_item it;
		struct sb_err err = { { 0 } };
		const struct sb_queue_request *a = &reqs[i], *b;

		qt_submit(t, a, id);
		assert_true(sb_queue_id_valid(id));
		assert_int_equal(sb_queue_get(t->q, id, &it, &err), 0);
		b = &it.req;
		assert_int_equal(it.state, SB_QS_PENDING);
		assert_string_equal(b->id, id);
		assert_int_equal(b->kind, a->kind);
		assert_int_equal(b->trigger, a->trigger);
		assert_int_equal(b->origin, a->origin);
		assert_string_equal(b->key, a->key);
		assert_int_equal(b->pid, a->pid);
		assert_int_equal(b->nchain, a->nchain);
		assert_string_equal(b->rule, a->rule);
		assert_string_equal(b->reason, a->reason);
		assert_true(b->created_ms > 0);
		assert_int_equal(b->deadline_ms / 1000, a->deadline_ms / 1000);
		if (a->kind == SB_EV_EXEC) {
			assert_int_equal(b->argc, 4);
			assert_string_equal(b->argv[3], "main");
			assert_string_equal(b->path, "/usr/bin/git");
			assert_string_equal(b->chain[0].cmdline, "git push origin main");
			assert_null(b->chain[2].cmdline);
			assert_string_equal(b->cwd, "/home/u/proj");
		} else if (a->kind == SB_EV_WRITE) {
			assert_int_equal(b->op, SB_WOP_CREATE);
			assert_string_equal(b->path, "/etc/hosts");
		} else {
			assert_string_equal(b->host, "example.com");
			assert_string_equal(b->addr, "93.184.216.34");
			assert_int_equal(b->port, 443);
			assert_null(b->cwd);
		}
		sb_queue_item_free(&it);
	}
}

static void test_request_from_classifier_event(void **state)
{
	struct qt *t = *state;
	struct sb_event ev;
	struct sb_queue_request r;
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	char addr[48], key[SB_EVENT_KEY_MAX], id[SB_QUEUE_ID_MAX + 1];

	memset(&ev, 0, sizeof(ev));
	ev.kind = SB_EV_CONNECT;
	ev.dst.has_addr = true;
	ev.dst.family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", ev.dst.addr);
	ev.dst.port = 22;
	ev.proto = SB_PROTO_TCP;
	assert_int_equal(sb_event_key(NULL, &ev, key, sizeof(key), &err), 0);
	memset(&r, 0, sizeof(r));
	sb_queue_request_set_event(&r, &ev, addr);
	r.key = key;
	r.pid = 7;
	r.rule = "default";
	r.reason = "r";
	assert_int_equal(r.trigger, SB_TRIG_NETWORK);
	qt_submit(t, &r, id);
	assert_int_equal(sb_queue_get(t->q, id, &it, &err), 0);
	assert_string_equal(it.req.addr, "2001:db8::1");
	assert_null(it.req.host);
	{
		char what[256];

		sb_queue_request_what(&it.req, what, sizeof(what));
		assert_string_equal(what, "connect [2001:db8::1]:22 (tcp)");
	}
	sb_queue_item_free(&it);
}

static void test_invalid_requests_are_refused(void **state)
{
	struct qt *t = *state;
	struct sb_queue_submit_result res;
	struct sb_err err = { { 0 } };
	struct sb_queue_request r;
	static const char *const empty_argv[] = { NULL };

	r = qt_exec_req(NULL, 1);
	r.key = NULL;
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "key"));
	r = qt_exec_req(NULL, 1);
	r.trigger = SB_TRIG_NETWORK;
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not match"));
	r = qt_exec_req(NULL, 1);
	r.argv = empty_argv;
	r.argc = 0;
	r.command = NULL;
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	r = qt_write_req("relative/path", 1);
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "absolute"));
	r = qt_connect_req(1);
	r.addr = "not-an-address";
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	r = qt_connect_req(1);
	r.port = 70000;
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	r = qt_connect_req(1);
	r.addr = NULL;
	r.host = NULL;
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	r = qt_exec_req(NULL, -5);
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), -EINVAL);
	assert_int_equal(qt_count(t, "pending"), 0);
	assert_int_equal(qt_count(t, "tmp"), 0);
}

static void test_hook_command_request(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r;
	struct sb_queue_item it;
	struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "alice");
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];

	memset(&r, 0, sizeof(r));
	r.origin = SB_ORIGIN_HOOK;
	r.kind = SB_EV_EXEC;
	r.trigger = SB_TRIG_SHELL;
	r.command = "npm   publish --tag next";
	r.key = "exec:npm publish --tag next";
	r.rule = "npm publish*";
	r.reason = "publishing";
	qt_submit(t, &r, id);
	assert_int_equal(sb_queue_get(t->q, id, &it, &err), 0);
	assert_int_equal(it.req.argc, 0);
	d.remember = true;
	d.scope = SB_REM_PREFIX;
	assert_int_equal(sb_queue_decision_check(&it.req, &d, &err), 0);
	assert_string_equal(d.remember_value, "npm publish");
	sb_queue_item_free(&it);
}

/* ---- remember ---- */

static void test_remember_defaults(void **state)
{
	struct sb_queue_request ex = qt_exec_req(NULL, 1), wr = qt_write_req("/etc/app/conf.d/x.conf", 1),
				net = qt_connect_req(1);
	static const char *const one_word[] = { "/usr/bin/ls" };
	struct sb_err err = { { 0 } };
	char v[SB_PATH_MAX + 1];

	(void)state;
	assert_int_equal(sb_queue_remember_default(&ex, SB_REM_ONCE, v, sizeof(v), &err), 0);
	assert_string_equal(v, ex.key);
	assert_int_equal(sb_queue_remember_default(&ex, SB_REM_COMMAND, v, sizeof(v), &err), 0);
	assert_string_equal(v, "git push origin main");
	assert_int_equal(sb_queue_remember_default(&ex, SB_REM_PREFIX, v, sizeof(v), &err), 0);
	assert_string_equal(v, "git push");
	assert_int_equal(sb_queue_remember_default(&ex, SB_REM_DIR, v, sizeof(v), &err), 0);
	assert_string_equal(v, "/usr/bin");
	assert_int_equal(sb_queue_remember_default(&ex, SB_REM_HOST, v, sizeof(v), &err), -EINVAL);
	assert_int_equal(sb_queue_remember_default(&wr, SB_REM_DIR, v, sizeof(v), &err), 0);
	assert_string_equal(v, "/etc/app/conf.d");
	assert_int_equal(sb_queue_remember_default(&wr, SB_REM_PREFIX, v, sizeof(v), &err), -EINVAL);
	assert_int_equal(sb_queue_remember_default(&net, SB_REM_HOST, v, sizeof(v), &err), 0);
	assert_string_equal(v, "example.com");
	net.host = NULL;
	assert_int_equal(sb_queue_remember_default(&net, SB_REM_HOST, v, sizeof(v), &err), 0);
	assert_string_equal(v, "93.184.216.34");
	assert_int_equal(sb_queue_remember_default(&net, SB_REM_DIR, v, sizeof(v), &err), -EINVAL);
	ex.argv = one_word;
	ex.argc = 1;
	assert_int_equal(sb_queue_remember_default(&ex, SB_REM_PREFIX, v, sizeof(v), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "two words"));
}

static void test_decision_check(void **state)
{
	struct sb_queue_request ex = qt_exec_req(NULL, 1), net = qt_connect_req(1),
				wr = qt_write_req("/x", 1);
	struct sb_queue_decision d;
	struct sb_err err = { { 0 } };

	(void)state;
	d = qt_decision(SB_QV_DENY, "alice");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), 0);
	d.remember = true;
	d.scope = SB_REM_PREFIX;
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "only an approval"));
	d = qt_decision(SB_QV_ALLOW, "");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	d = qt_decision(SB_QV_ALLOW, "bad\nname");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	d = qt_decision(SB_QV_ALLOW, "alice");
	d.timed_out = true;
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	/* prefix of one word, dir '/', host on a shell command, once with another key */
	d = qt_decision(SB_QV_ALLOW, "alice");
	d.remember = true;
	d.scope = SB_REM_PREFIX;
	strcpy(d.remember_value, "git");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	d.scope = SB_REM_DIR;
	strcpy(d.remember_value, "/");
	assert_int_equal(sb_queue_decision_check(&wr, &d, &err), -EINVAL);
	d.scope = SB_REM_HOST;
	strcpy(d.remember_value, "example.com");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	d.scope = SB_REM_ONCE;
	strcpy(d.remember_value, "exec:something else");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), -EINVAL);
	/* canonical forms */
	d.scope = SB_REM_PREFIX;
	strcpy(d.remember_value, "  git   push  ");
	assert_int_equal(sb_queue_decision_check(&ex, &d, &err), 0);
	assert_string_equal(d.remember_value, "git push");
	d.scope = SB_REM_HOST;
	strcpy(d.remember_value, "Example.COM.:443");
	assert_int_equal(sb_queue_decision_check(&net, &d, &err), 0);
	assert_string_equal(d.remember_value, "example.com:443");
	strcpy(d.remember_value, "[2001:DB8::1]:22");
	assert_int_equal(sb_queue_decision_check(&net, &d, &err), 0);
	assert_string_equal(d.remember_value, "[2001:db8::1]:22");
	d.scope = SB_REM_DIR;
	strcpy(d.remember_value, "/etc//app/");
	assert_int_equal(sb_queue_decision_check(&wr, &d, &err), 0);
	assert_string_equal(d.remember_value, "/etc/app");
}

/* ---- lifecycle ---- */

static void test_submit_claim_decide_ack(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r = qt_exec_req(NULL, 100);
	struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "alice"), got;
	struct sb_queue_list l;
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];
	enum sb_queue_state st;

	qt_submit(t, &r, id);
	assert_true(qt_exists(t, "pending/%s.json", id));
	assert_int_equal(sb_queue_claim(t->q, id, "watch:alice", 0, &err), 0);
	assert_true(qt_exists(t, "claimed/%s.json", id));
	assert_true(qt_exists(t, "claimed/%s.lease", id));
	assert_false(qt_exists(t, "pending/%s.json", id));
	assert_int_equal(sb_queue_claim(t->q, id, "watch:bob", 0, &err), -EBUSY);
	assert_non_null(strstr(err.msg, "watch:alice"));
	assert_int_equal(sb_queue_get(t->q, id, &it, &err), 0);
	assert_int_equal(it.state, SB_QS_CLAIMED);
	assert_true(it.has_lease);
	assert_string_equal(it.lease.owner, "watch:alice");
	assert_true(it.lease.expires_ms > sb_queue_now_ms() + SB_QUEUE_DEFAULT_LEASE_MS - 5000);
	sb_queue_item_free(&it);

	d.remember = true;
	d.scope = SB_REM_PREFIX;
	strcpy(d.reason, "release day");
	assert_int_equal(sb_queue_decide(t->q, id, &d, &err), 0);
	assert_true(qt_exists(t, "done/%s.json", id));
	assert_false(qt_exists(t, "claimed/%s.json", id));
	assert_false(qt_exists(t, "claimed/%s.lease", id));
	assert_false(qt_exists(t, "pending/%s.json", id));
	assert_int_equal(qt_count(t, "tmp"), 0);

	/* the broker's view */
	assert_int_equal(sb_queue_wait(t->q, id, 0, &got, NULL, &err), 0);
	assert_int_equal(got.verdict, SB_QV_ALLOW);
	assert_string_equal(got.reviewer, "alice");
	assert_string_equal(got.reason, "release day");
	assert_true(got.remember);
	assert_int_equal(got.scope, SB_REM_PREFIX);
	assert_string_equal(got.remember_value, "git push");
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_DONE), &l, &err), 0);
	assert_int_equal(l.n, 1);
	assert_true(l.items[0].has_decision);
	sb_queue_list_free(&l);

	/* decided once */
	d = qt_decision(SB_QV_DENY, "bob");
	assert_int_equal(sb_queue_decide(t->q, id, &d, &err), -EALREADY);
	assert_non_null(strstr(err.msg, "allowed by alice"));
	assert_int_equal(sb_queue_claim(t->q, id, "watch:bob", 0, &err), -EALREADY);

	assert_int_equal(sb_queue_ack(t->q, id, &err), 0);
	assert_int_equal(sb_queue_ack(t->q, id, &err), -EALREADY);
	assert_true(qt_exists(t, "applied/%s.json", id));
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_DONE), &l, &err), 0);
	assert_int_equal(l.n, 0);
	sb_queue_list_free(&l);
	assert_int_equal(sb_queue_locate(t->q, id, &st, &err), 0);
	assert_int_equal(st, SB_QS_APPLIED);
	assert_int_equal(sb_queue_decide(t->q, id, &d, &err), -EALREADY);
	assert_non_null(strstr(err.msg, "applied by the broker"));
	/* still answers a late waiter */
	assert_int_equal(sb_queue_wait(t->q, id, 0, &got, NULL, &err), 0);
	assert_int_equal(got.verdict, SB_QV_ALLOW);
}

static void test_unknown_ids(void **state)
{
	struct qt *t = *state;
	struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "alice");
	struct sb_err err = { { 0 } };
	struct sb_queue_item it;

	assert_int_equal(sb_queue_decide(t->q, "20250101-000000-000000-deadbeef", &d, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no request"));
	assert_int_equal(sb_queue_get(t->q, "nope", &it, &err), -ENOENT);
	assert_int_equal(sb_queue_claim(t->q, "nope", "me", 0, &err), -ENOENT);
	assert_int_equal(sb_queue_ack(t->q, "nope", &err), -ENOENT);
	assert_int_equal(sb_queue_wait(t->q, "nope", 100, &d, NULL, &err), -ENOENT);
	assert_int_equal(sb_queue_release(t->q, "nope", "me", &err), 0);
	assert_int_equal(sb_queue_renew(t->q, "nope", "me", 0, &err), -ENOENT);
}

static void test_claim_release_renew_owners(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r = qt_exec_req(NULL, 1);
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];

	qt_submit(t, &r, id);
	assert_int_equal(sb_queue_claim(t->q, id, "", 0, &err), -EINVAL);
	assert_int_equal(sb_queue_claim(t->q, id, "a\x1b[2Jb", 0, &err), -EINVAL);
	assert_int_equal(sb_queue_claim(t->q, id, "alice", 5000, &err), 0);
	assert_int_equal(sb_queue_renew(t->q, id, "bob", 0, &err), -EPERM);
	assert_int_equal(sb_queue_release(t->q, id, "bob", &err), -EPERM);
	assert_true(qt_exists(t, "claimed/%s.json", id));
	assert_int_equal(sb_queue_renew(t->q, id, "alice", 60000, &err), 0);
	assert_int_equal(sb_queue_get(t->q, id, &it, &err), 0);
	assert_true(it.lease.expires_ms > sb_queue_now_ms() + 50000);
	sb_queue_item_free(&it);
	assert_int_equal(sb_queue_release(t->q, id, "alice", &err), 0);
	assert_true(qt_exists(t, "pending/%s.json", id));
	assert_false(qt_exists(t, "claimed/%s.json", id));
	assert_false(qt_exists(t, "claimed/%s.lease", id));
	assert_int_equal(sb_queue_renew(t->q, id, "alice", 0, &err), -ENOENT);
	/* a pending request can be decided without a claim */
	{
		struct sb_queue_decision d = qt_decision(SB_QV_DENY, "carol");

		assert_int_equal(sb_queue_decide(t->q, id, &d, &err), 0);
	}
}

static void test_claim_next_oldest_first(void **state)
{
	struct qt *t = *state;
	char ids[3][SB_QUEUE_ID_MAX + 1];
	char keys[3][32];
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	int i;

	for (i = 0; i < 3; i++) {
		struct sb_queue_request r;

		snprintf(keys[i], sizeof(keys[i]), "exec:k%d", i);
		r = qt_exec_req(keys[i], 1);
		qt_submit(t, &r, ids[i]);
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(sb_queue_claim_next(t->q, "w", 0, &it, &err), 0);
		assert_string_equal(it.req.id, ids[i]);
		assert_int_equal(it.state, SB_QS_CLAIMED);
		sb_queue_item_free(&it);
	}
	assert_int_equal(sb_queue_claim_next(t->q, "w", 0, &it, &err), -ENOENT);
}

static void test_reclaim_stale(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req("exec:a", 1), r2 = qt_exec_req("exec:b", 1);
	struct sb_err err = { { 0 } };
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1];
	size_t n = 0;

	qt_submit(t, &r1, a);
	qt_submit(t, &r2, b);
	assert_int_equal(sb_queue_claim(t->q, a, "w1", 3000, &err), 0);
	assert_int_equal(sb_queue_claim(t->q, b, "w2", 600000, &err), 0);
	assert_int_equal(sb_queue_reclaim_stale(t->q, 0, &n, &err), 0);
	assert_int_equal(n, 0);
	/* ten seconds later: a's lease expired, b's did not */
	assert_int_equal(sb_queue_reclaim_stale(t->q, sb_queue_now_ms() + 10000, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_true(qt_exists(t, "pending/%s.json", a));
	assert_false(qt_exists(t, "claimed/%s.lease", a));
	assert_true(qt_exists(t, "claimed/%s.json", b));
	/* without any lease: kept for the grace period, then reclaimed */
	{
		char p[PATH_MAX];

		assert_int_equal(unlink(qt_path(t, p, "claimed/%s.lease", b)), 0);
	}
	assert_int_equal(sb_queue_reclaim_stale(t->q, 0, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sb_queue_reclaim_stale(t->q, sb_queue_now_ms() + SB_QUEUE_CLAIM_GRACE_MS + 1000, &n, &err),
			 0);
	assert_int_equal(n, 1);
	assert_true(qt_exists(t, "pending/%s.json", b));
}

static void test_dedup(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r = qt_exec_req(NULL, 77);
	struct sb_queue_submit_result res;
	struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "alice");
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1], other[SB_QUEUE_ID_MAX + 1];

	qt_submit(t, &r, id);
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), 0);
	assert_true(res.existing);
	assert_string_equal(res.id, id);
	assert_int_equal(res.state, SB_QS_PENDING);
	/* another process, same request: filed separately */
	r.pid = 78;
	qt_submit(t, &r, other);
	assert_string_not_equal(other, id);
	r.pid = 77;
	assert_int_equal(sb_queue_claim(t->q, id, "w", 0, &err), 0);
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), 0);
	assert_true(res.existing);
	assert_int_equal(res.state, SB_QS_CLAIMED);
	assert_int_equal(sb_queue_decide(t->q, id, &d, &err), 0);
	/* decided but not applied: still the same request */
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), 0);
	assert_true(res.existing);
	assert_int_equal(res.state, SB_QS_DONE);
	assert_string_equal(res.id, id);
	/* applied: a new hold of the same request is a new request */
	assert_int_equal(sb_queue_ack(t->q, id, &err), 0);
	assert_int_equal(sb_queue_submit(t->q, &r, &res, &err), 0);
	assert_false(res.existing);
	assert_string_not_equal(res.id, id);
}

static void test_dedup_concurrent_submitters(void **state)
{
	struct qt *t = *state;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	int i, n = 8, st;
	pid_t kids[8];

	for (i = 0; i < n; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			struct sb_queue *q;
			struct sb_queue_request r = qt_exec_req("exec:same", 999);
			struct sb_queue_submit_result res;
			int rc = sb_queue_open(t->dir, 0, &q, NULL);

			if (!rc) {
				rc = sb_queue_submit(q, &r, &res, NULL);
				sb_queue_close(q);
			}
			_exit(rc ? 1 : 0);
		}
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
	assert_int_equal(l.n, 1);
	sb_queue_list_free(&l);
}

static void test_wait_for_decision(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r = qt_write_req("/etc/x", 5), got_req;
	struct sb_queue_decision d;
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];
	struct timespec a, b;
	pid_t kid;
	int st;

	qt_submit(t, &r, id);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(sb_queue_wait(t->q, id, 150, &d, NULL, &err), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 140);
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		struct sb_queue *q;
		struct sb_queue_decision dd = qt_decision(SB_QV_DENY, "approver");
		int rc;

		usleep(200000);
		rc = sb_queue_open(t->dir, 0, &q, NULL);
		if (!rc) {
			rc = sb_queue_decide(q, id, &dd, NULL);
			sb_queue_close(q);
		}
		_exit(rc ? 1 : 0);
	}
	assert_int_equal(sb_queue_wait(t->q, id, 10000, &d, &got_req, &err), 0);
	assert_int_equal(d.verdict, SB_QV_DENY);
	assert_string_equal(d.reviewer, "approver");
	assert_string_equal(got_req.path, "/etc/x");
	sb_queue_request_free(&got_req);
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_notify(void **state)
{
	struct qt *t = *state;
	struct sb_queue_notify *n;
	struct sb_queue_request r = qt_exec_req(NULL, 1);
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];

	assert_int_equal(sb_queue_notify_open(t->q, SB_QSM(SB_QS_PENDING), &n, &err), 0);
	assert_true(sb_queue_notify_fd(n) >= 0);
	assert_int_equal(sb_queue_notify_wait(n, 0), 0);
	qt_submit(t, &r, id);
	assert_int_equal(sb_queue_notify_wait(n, 1000), 1);
	assert_int_equal(sb_queue_notify_wait(n, 0), 0);
	sb_queue_notify_close(n);
}

static void test_restart_keeps_state(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req("exec:1", 1), r2 = qt_exec_req("exec:2", 1),
				r3 = qt_exec_req("exec:3", 1);
	struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "alice"), got;
	struct sb_queue_recover_stats st;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1], c[SB_QUEUE_ID_MAX + 1];

	qt_submit(t, &r1, a);
	qt_submit(t, &r2, b);
	qt_submit(t, &r3, c);
	assert_int_equal(sb_queue_claim(t->q, b, "w", 600000, &err), 0);
	assert_int_equal(sb_queue_decide(t->q, c, &d, &err), 0);
	sb_queue_close(t->q);
	t->q = NULL;
	/* reopen without CREATE, as a restarted broker would */
	assert_int_equal(sb_queue_open(t->dir, 0, &t->q, &err), 0);
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.pending, 1);
	assert_int_equal(st.claimed, 1);
	assert_int_equal(st.done, 1);
	assert_int_equal(st.quarantined, 0);
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED) | SB_QSM(SB_QS_DONE), &l,
				       &err),
			 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[0].req.id, a);
	assert_int_equal(l.items[0].state, SB_QS_PENDING);
	assert_int_equal(l.items[1].state, SB_QS_CLAIMED);
	assert_int_equal(l.items[2].state, SB_QS_DONE);
	sb_queue_list_free(&l);
	assert_int_equal(sb_queue_wait(t->q, c, 0, &got, NULL, &err), 0);
	assert_int_equal(got.verdict, SB_QV_ALLOW);
}

static void test_open_errors(void **state)
{
	struct qt *t = *state;
	struct sb_queue *q = NULL;
	struct sb_err err = { { 0 } };
	char dir[] = "/tmp/sbq-open-XXXXXX", p[PATH_MAX], target[PATH_MAX];

	(void)t;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sb_queue_open(dir, 0, &q, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no escalation queue"));
	assert_null(q);
	/* a symlinked .sandbox is refused */
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	assert_int_equal(mkdir(target, 0755), 0);
	snprintf(p, sizeof(p), "%s/.sandbox", dir);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(sb_queue_open(dir, SB_QUEUE_CREATE, &q, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "symlink"));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(sb_queue_open(dir, SB_QUEUE_CREATE, &q, &err), 0);
	assert_non_null(strstr(sb_queue_path(q), "/.sandbox/escalations"));
	sb_queue_close(q);
	/* a symlinked state directory is refused too */
	snprintf(p, sizeof(p), "%s/.sandbox/escalations/done", dir);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(sb_queue_open(dir, 0, &q, &err), -ELOOP);
	qt_rm_rf(dir);
}

static void test_outputs(void **state)
{
	struct qt *t = *state;
	struct sb_err err = { { 0 } };
	char *data, p[PATH_MAX];
	size_t len;

	assert_int_equal(sb_queue_read_output(t->q, "abc", &data, &len, &err), -ENOENT);
	assert_int_equal(sb_queue_write_output(t->q, "abc", "hello\n\0bin", 10, &err), 0);
	assert_int_equal(sb_queue_read_output(t->q, "abc", &data, &len, &err), 0);
	assert_int_equal(len, 10);
	assert_memory_equal(data, "hello\n\0bin", 10);
	free(data);
	assert_int_equal(sb_queue_write_output(t->q, "abc", "v2", 2, &err), 0);
	assert_int_equal(sb_queue_read_output(t->q, "abc", &data, &len, &err), 0);
	assert_string_equal(data, "v2");
	free(data);
	/* a symlink planted as an output is never followed */
	assert_int_equal(symlink("/etc/passwd", qt_path(t, p, "out/evil.txt")), 0);
	assert_int_equal(sb_queue_read_output(t->q, "evil", &data, &len, &err), -EBADMSG);
	assert_null(data);
	assert_false(qt_exists(t, "out/%s.txt", "evil"));
	assert_int_equal(qt_count(t, "quarantine"), 2);
	assert_int_equal(qt_count(t, "tmp"), 0);
}

static void test_prune(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r = qt_exec_req(NULL, 1);
	struct sb_queue_decision d = qt_decision(SB_QV_DENY, "alice");
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1], other[SB_QUEUE_ID_MAX + 1];
	size_t n;

	qt_submit(t, &r, id);
	assert_int_equal(sb_queue_decide(t->q, id, &d, &err), 0);
	r.pid = 2;
	qt_submit(t, &r, other);
	assert_int_equal(sb_queue_decide(t->q, other, &d, &err), 0);
	assert_int_equal(sb_queue_write_output(t->q, id, "x", 1, &err), 0);
	assert_int_equal(sb_queue_prune(t->q, 0, &n, &err), 0);
	assert_int_equal(n, 0);		/* nothing applied yet */
	assert_int_equal(sb_queue_ack(t->q, id, &err), 0);
	usleep(20000);
	assert_int_equal(sb_queue_prune(t->q, 3600 * 1000, &n, &err), 0);
	assert_int_equal(n, 0);		/* too young */
	assert_int_equal(sb_queue_prune(t->q, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_false(qt_exists(t, "done/%s.json", id));
	assert_false(qt_exists(t, "applied/%s.json", id));
	assert_false(qt_exists(t, "out/%s.txt", id));
	assert_true(qt_exists(t, "done/%s.json", other));	/* unapplied decisions stay */
}

/* ---- display ---- */

static void test_escape(void **state)
{
	char out[256];

	(void)state;
	sb_queue_escape("git push", out, sizeof(out));
	assert_string_equal(out, "git push");
	sb_queue_escape("a\x1b[2Jb\n\t\r\x7f", out, sizeof(out));
	assert_string_equal(out, "a\\x1b[2Jb\\n\\t\\r\\x7f");
	sb_queue_escape("caf\xc3\xa9 \xe2\x9c\x93", out, sizeof(out));
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x9c\x93");
	/* bidi override, C1 CSI, zero width space, invalid and overlong UTF-8 */
	sb_queue_escape("x\xe2\x80\xae y\xc2\x9b z\xe2\x80\x8b \xff \xc0\xaf", out, sizeof(out));
	assert_string_equal(out, "x\\u{202e} y\\u{009b} z\\u{200b} \\xff \\xc0\\xaf");
	sb_queue_escape("back\\slash", out, sizeof(out));
	assert_string_equal(out, "back\\\\slash");
	sb_queue_escape("0123456789abcdef", out, 10);
	assert_string_equal(out, "012345...");
	sb_queue_escape("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", out, 8);
	assert_string_equal(out, "\xc3\xa9\xc3\xa9...");
	sb_queue_escape(NULL, out, sizeof(out));
	assert_string_equal(out, "");
}

static void test_what_and_age(void **state)
{
	struct sb_queue_request ex = qt_exec_req(NULL, 1), wr = qt_write_req("/etc/hosts", 1),
				net = qt_connect_req(1);
	char buf[256];

	(void)state;
	sb_queue_request_what(&ex, buf, sizeof(buf));
	assert_string_equal(buf, "git push origin main");
	sb_queue_request_what(&wr, buf, sizeof(buf));
	assert_string_equal(buf, "write (create) /etc/hosts");
	sb_queue_request_what(&net, buf, sizeof(buf));
	assert_string_equal(buf, "connect example.com:443 (tcp, 93.184.216.34)");
	sb_queue_format_age(12500, buf, sizeof(buf));
	assert_string_equal(buf, "12s");
	sb_queue_format_age(184000, buf, sizeof(buf));
	assert_string_equal(buf, "3m04s");
	sb_queue_format_age(7500000, buf, sizeof(buf));
	assert_string_equal(buf, "2h05m");
	sb_queue_format_age(3LL * 86400000 + 4 * 3600000, buf, sizeof(buf));
	assert_string_equal(buf, "3d04h");
	sb_queue_format_age(-5, buf, sizeof(buf));
	assert_string_equal(buf, "0s");
}

static void log_cb(void *ctx, const char *msg)
{
	int *n = ctx;

	(void)msg;
	(*n)++;
}

static void test_logger(void **state)
{
	struct qt *t = *state;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	char p[PATH_MAX];
	int n = 0;

	sb_queue_set_logger(t->q, log_cb, &n);
	qt_write(qt_path(t, p, "pending/x.json"), "{", 1);
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
	assert_int_equal(l.quarantined, 1);
	sb_queue_list_free(&l);
	assert_int_equal(n, 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, qt_setup, qt_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_new_is_valid_and_sorted),
		cmocka_unit_test(test_id_validation),
		T(test_traversal_ids_rejected_by_every_call),
		cmocka_unit_test(test_time_format_and_parse),
		T(test_request_roundtrip_all_kinds),
		T(test_request_from_classifier_event),
		T(test_invalid_requests_are_refused),
		T(test_hook_command_request),
		cmocka_unit_test(test_remember_defaults),
		cmocka_unit_test(test_decision_check),
		T(test_submit_claim_decide_ack),
		T(test_unknown_ids),
		T(test_claim_release_renew_owners),
		T(test_claim_next_oldest_first),
		T(test_reclaim_stale),
		T(test_dedup),
		T(test_dedup_concurrent_submitters),
		T(test_wait_for_decision),
		T(test_notify),
		T(test_restart_keeps_state),
		T(test_open_errors),
		T(test_outputs),
		T(test_prune),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_what_and_age),
		T(test_logger),
	};

	return cmocka_run_group_tests_name("queue_basic", tests, NULL, NULL);
}
