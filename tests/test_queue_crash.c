/* Crashes between steps: what a process killed at any point leaves behind,
 * and that sb_queue_recover (a restarted broker) restores consistency:
 * leftover temp files, claims without or with expired leases, decisions
 * not yet applied, decided requests with a pending copy, and writers and
 * deciders SIGKILLed mid-operation in a loop. */
#include <sys/time.h>

#include "queue_test_util.h"

static pid_t dead_pid(void)
{
	pid_t p = fork();
	int st;

	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	assert_int_equal(waitpid(p, &st, 0), p);
	return p;
}

static void test_tmp_leftovers(void **state)
{
	struct qt *t = *state;
	struct sb_queue_recover_stats st;
	struct sb_err err = { { 0 } };
	char p[PATH_MAX], name[64];
	struct timeval old[2] = { { 1000, 0 }, { 1000, 0 } };
	pid_t sleeper;

	/* a dead writer's file */
	snprintf(name, sizeof(name), "tmp/%d-0123456789abcdef.tmp", (int)dead_pid());
	qt_write(qt_path(t, p, "%s", name), "{\"version\":1,", 13);
	/* a live writer's fresh file: left alone */
	sleeper = fork();
	assert_true(sleeper >= 0);
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	snprintf(name, sizeof(name), "tmp/%d-fedcba9876543210.tmp", (int)sleeper);
	qt_write(qt_path(t, p, "%s", name), "x", 1);
	/* a live (or unknown) writer's ancient file */
	qt_write(qt_path(t, p, "tmp/1-aaaaaaaaaaaaaaaa.tmp"), "x", 1);
	assert_int_equal(utimes(p, old), 0);
	/* a name we never make, but old */
	qt_write(qt_path(t, p, "tmp/junk"), "x", 1);
	assert_int_equal(utimes(p, old), 0);

	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.tmp_removed, 3);
	assert_int_equal(qt_count(t, "tmp"), 1);
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.tmp_removed, 1);
	assert_int_equal(qt_count(t, "tmp"), 0);
	assert_int_equal(qt_count(t, "pending"), 0);
}

static void test_claims_after_crash(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req("exec:1", 1), r2 = qt_exec_req("exec:2", 1),
				r3 = qt_exec_req("exec:3", 1), r4 = qt_exec_req("exec:4", 1);
	struct sb_queue_recover_stats st;
	struct sb_err err = { { 0 } };
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1], c[SB_QUEUE_ID_MAX + 1], d[SB_QUEUE_ID_MAX + 1];
	char from[PATH_MAX], to[PATH_MAX];

	qt_submit(t, &r1, a);
	qt_submit(t, &r2, b);
	qt_submit(t, &r3, c);
	qt_submit(t, &r4, d);
	/* a: claimer died after its rename, before writing the lease */
	assert_int_equal(rename(qt_path(t, from, "pending/%s.json", a), qt_path(t, to, "claimed/%s.json", a)), 0);
	/* b: claimer died holding a lease that has now expired */
	assert_int_equal(sb_queue_claim(t->q, b, "dead-watcher", 3000, &err), 0);
	/* c: a live watcher's claim */
	assert_int_equal(sb_queue_claim(t->q, c, "live-watcher", 600000, &err), 0);
	/* d: a lease left behind by a release that died halfway */
	qt_write(qt_path(t, to, "claimed/%s.lease", d), "{}", 2);
	{
		struct timeval old[2] = { { 1000, 0 }, { 1000, 0 } };

		assert_int_equal(utimes(to, old), 0);
	}
	sleep(4);	/* past b's lease and the recovery grace for a */
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.reclaimed, 2);
	assert_int_equal(st.leases_removed, 1);
	assert_int_equal(st.pending, 3);
	assert_int_equal(st.claimed, 1);
	assert_true(qt_exists(t, "pending/%s.json", a));
	assert_true(qt_exists(t, "pending/%s.json", b));
	assert_false(qt_exists(t, "claimed/%s.lease", b));
	assert_true(qt_exists(t, "claimed/%s.json", c));
	assert_true(qt_exists(t, "claimed/%s.lease", c));
	assert_false(qt_exists(t, "claimed/%s.lease", d));
	assert_true(qt_exists(t, "pending/%s.json", d));
}

static void test_decided_copies_and_unapplied(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req("exec:1", 1), r2 = qt_exec_req("exec:2", 1);
	struct sb_queue_decision dec = qt_decision(SB_QV_ALLOW, "alice"), got;
	struct sb_queue_recover_stats st;
	struct sb_queue_list l;
	struct sb_queue_item it;
	struct sb_err err = { { 0 } };
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1], p[PATH_MAX], *saved;
	size_t len = 0;

	qt_submit(t, &r1, a);
	qt_submit(t, &r2, b);
	/* A decider that died between link(done) and unlink(pending): put the
	 * pending copy back after a real decision. */
	saved = qt_read(qt_path(t, p, "pending/%s.json", a), &len);
	assert_non_null(saved);
	assert_int_equal(sb_queue_decide(t->q, a, &dec, &err), 0);
	qt_write(qt_path(t, p, "pending/%s.json", a), saved, len);
	qt_write(qt_path(t, p, "claimed/%s.json", a), saved, len);
	free(saved);
	/* Readers already ignore it, and claiming it says it is decided. */
	assert_int_equal(sb_queue_get(t->q, a, &it, &err), 0);
	assert_int_equal(it.state, SB_QS_DONE);
	sb_queue_item_free(&it);
	assert_int_equal(sb_queue_claim(t->q, a, "w", 0, &err), -EALREADY);
	qt_write(qt_path(t, p, "pending/%s.json", a), "{}", 2);	/* even a torn one */
	/* b: decided, broker died before applying */
	assert_int_equal(sb_queue_decide(t->q, b, &dec, &err), 0);

	sb_queue_close(t->q);
	assert_int_equal(sb_queue_open(t->dir, 0, &t->q, &err), 0);
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.stale_removed, 1);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.claimed, 0);
	assert_int_equal(st.done, 2);
	assert_false(qt_exists(t, "pending/%s.json", a));
	/* the restarted broker finds both decisions, applies, acks */
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_DONE), &l, &err), 0);
	assert_int_equal(l.n, 2);
	assert_true(l.items[0].has_decision && l.items[1].has_decision);
	sb_queue_list_free(&l);
	assert_int_equal(sb_queue_ack(t->q, a, &err), 0);
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_DONE), &l, &err), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.items[0].req.id, b);
	sb_queue_list_free(&l);
	assert_int_equal(sb_queue_wait(t->q, b, 0, &got, NULL, &err), 0);
	assert_int_equal(sb_queue_ack(t->q, b, &err), 0);
	/* restart again: nothing left to apply, nothing applied twice */
	sb_queue_close(t->q);
	assert_int_equal(sb_queue_open(t->dir, 0, &t->q, &err), 0);
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.done, 0);
	assert_int_equal(sb_queue_ack(t->q, a, &err), -EALREADY);
}

/* Every pending file parses and nothing but <id>.json is in pending/. */
static void assert_no_torn_pending(struct qt *t)
{
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	int files = qt_count(t, "pending");

	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
	if (l.quarantined)
		fail_msg("a torn or malformed file was visible in pending/");
	assert_int_equal((int)l.n, files);
	sb_queue_list_free(&l);
}

static void random_sleep_us(unsigned *seed, int max)
{
	usleep((useconds_t)(rand_r(seed) % max));
}

/* Forks fn(t, arg) in a child that says when it is running, kills it after
 * a random moment of its work and reaps it. */
static void run_and_kill(struct qt *t, unsigned *seed, int max_us, void (*fn)(struct qt *, void *, int),
			 void *ctx)
{
	int ready[2];
	char c;
	pid_t kid;

	assert_int_equal(pipe(ready), 0);
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		close(ready[0]);
		fn(t, ctx, ready[1]);
		_exit(0);
	}
	close(ready[1]);
	/* Process start-up (slow under ASan or valgrind) is not the point:
	 * wait until the child is at work, then kill it at a random moment. */
	if (read(ready[0], &c, 1) != 1)
		fail_msg("child died before it started");
	close(ready[0]);
	random_sleep_us(seed, max_us);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
}

static void writer(struct qt *t, void *ctx, int ready)
{
	struct sb_queue *q;
	char key[64];
	int i;

	(void)ctx;
	if (sb_queue_open(t->dir, 0, &q, NULL))
		_exit(2);
	for (i = 0;; i++) {
		struct sb_queue_request r;
		struct sb_queue_submit_result res;

		snprintf(key, sizeof(key), "exec:pid %d item %d", (int)getpid(), i);
		r = qt_exec_req(key, getpid());
		sb_queue_submit(q, &r, &res, NULL);
		if (i == 0 && write(ready, "r", 1) != 1)
			_exit(3);
	}
}

static void test_writer_killed_mid_write(void **state)
{
	struct qt *t = *state;
	struct sb_queue_recover_stats st;
	struct sb_err err = { { 0 } };
	unsigned seed = 12345;
	int round, filed = 0;

	/* Until several kills landed inside a write (a temp file is left),
	 * at least 20 rounds. */
	for (round = 0; round < 300 && (round < 20 || qt_count(t, "tmp") < 3); round++) {
		run_and_kill(t, &seed, 20000, writer, NULL);
		assert_no_torn_pending(t);
		/* Keep pending/ small, so the writer's time goes to writing
		 * rather than to submit's duplicate scan. */
		if (qt_count(t, "pending") > 10) {
			struct sb_queue_list l;
			size_t i;

			assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
			for (i = 0; i < l.n; i++) {
				char p[PATH_MAX];

				assert_int_equal(unlink(qt_path(t, p, "pending/%s.json", l.items[i].req.id)), 0);
			}
			filed += (int)l.n;
			sb_queue_list_free(&l);
		}
	}
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	filed += (int)st.pending;
	print_message("%d kills, %d requests filed, %zu temp files of killed writers removed\n", round, filed,
		      st.tmp_removed);
	assert_true(st.tmp_removed > 0);
	assert_true(filed > 0);
	assert_int_equal(st.quarantined, 0);
	assert_int_equal(qt_count(t, "tmp"), 0);
	assert_int_equal(qt_count(t, "quarantine"), 0);
	assert_int_equal((int)st.pending, qt_count(t, "pending"));
}

static void decider(struct qt *t, void *ctx, int ready)
{
	char (*ids)[SB_QUEUE_ID_MAX + 1] = ctx;
	struct sb_queue *q;
	int i;

	if (sb_queue_open(t->dir, 0, &q, NULL))
		_exit(2);
	if (write(ready, "r", 1) != 1)
		_exit(3);
	for (i = 0; i < 40; i++) {
		struct sb_queue_decision d = qt_decision(SB_QV_DENY, "killed");

		if (sb_queue_claim(q, ids[i], "w", 0, NULL) == 0 && i % 3 == 0)
			sb_queue_release(q, ids[i], "w", NULL);
		sb_queue_decide(q, ids[i], &d, NULL);
	}
	sb_queue_close(q);
}

/* Deciders and claimers killed mid-way: afterwards every request is in
 * exactly one state, and recover leaves no undecided copy of a decision. */
static void test_decider_killed_mid_decide(void **state)
{
	struct qt *t = *state;
	struct sb_queue_recover_stats st;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	char ids[40][SB_QUEUE_ID_MAX + 1], keys[40][32];
	unsigned seed = 777;
	int i, round;

	for (i = 0; i < 40; i++) {
		struct sb_queue_request r;

		snprintf(keys[i], sizeof(keys[i]), "exec:k %d", i);
		r = qt_exec_req(keys[i], 1);
		qt_submit(t, &r, ids[i]);
	}
	for (round = 0; round < 20; round++)
		run_and_kill(t, &seed, 30000, decider, ids);
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	print_message("recovery: %zu temp files, %zu undecided copies removed, %zu claims reclaimed\n",
		      st.tmp_removed, st.stale_removed, st.reclaimed);
	assert_int_equal(st.quarantined, 0);
	assert_int_equal(qt_count(t, "tmp"), 0);
	for (i = 0; i < 40; i++) {
		int where = qt_exists(t, "pending/%s.json", ids[i]) + qt_exists(t, "claimed/%s.json", ids[i]) +
			    qt_exists(t, "done/%s.json", ids[i]);

		if (where != 1)
			fail_msg("request %d is in %d states after recovery", i, where);
	}
	/* every request still gets resolved */
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED), &l, &err), 0);
	for (i = 0; i < (int)l.n; i++) {
		struct sb_queue_decision d = qt_decision(SB_QV_DENY, "after");

		assert_int_equal(sb_queue_decide(t->q, l.items[i].req.id, &d, &err), 0);
	}
	sb_queue_list_free(&l);
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_DONE), &l, &err), 0);
	assert_int_equal(l.n, 40);
	sb_queue_list_free(&l);
}

#define T(f) cmocka_unit_test_setup_teardown(f, qt_setup, qt_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_tmp_leftovers),
		T(test_claims_after_crash),
		T(test_decided_copies_and_unapplied),
		T(test_writer_killed_mid_write),
		T(test_decider_killed_mid_decide),
	};

	return cmocka_run_group_tests_name("queue_crash", tests, NULL, NULL);
}
