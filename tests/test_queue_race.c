/* Races between processes: claimers (each request claimed exactly once),
 * deciders (exactly one decision wins), and a decision racing a watcher
 * that claims and releases the same request. Children are released
 * together from a pipe barrier and report through exit codes and a pipe. */
#include "queue_test_util.h"

#define N_PROCS 6

struct barrier {
	int fd[2];
};

static void barrier_init(struct barrier *b)
{
	assert_int_equal(pipe(b->fd), 0);
}

/* In a child: block until the parent opens the gate. */
static void barrier_wait(struct barrier *b)
{
	char c;

	close(b->fd[1]);
	while (read(b->fd[0], &c, 1) < 0 && errno == EINTR)
		;
	close(b->fd[0]);
}

static void barrier_open(struct barrier *b)
{
	close(b->fd[0]);
	close(b->fd[1]);
}

static int wait_child(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void test_claim_race_many_processes(void **state)
{
	struct qt *t = *state;
	enum { M = 40 };
	char ids[M][SB_QUEUE_ID_MAX + 1], keys[M][32], buf[M * 64 + 1];
	int seen[M] = { 0 };
	struct barrier b;
	pid_t kids[N_PROCS];
	int res[2], i, j, total = 0;
	size_t len = 0;
	ssize_t r;
	char *line, *save;

	for (i = 0; i < M; i++) {
		struct sb_queue_request req;

		snprintf(keys[i], sizeof(keys[i]), "exec:job %d", i);
		req = qt_exec_req(keys[i], 1000 + i);
		qt_submit(t, &req, ids[i]);
	}
	assert_int_equal(pipe(res), 0);
	barrier_init(&b);
	for (i = 0; i < N_PROCS; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			struct sb_queue *q;
			struct sb_queue_item it;
			char owner[32], out[SB_QUEUE_ID_MAX + 2];
			int rc;

			close(res[0]);
			barrier_wait(&b);
			snprintf(owner, sizeof(owner), "claimer-%d", i);
			if (sb_queue_open(t->dir, 0, &q, NULL))
				_exit(2);
			while ((rc = sb_queue_claim_next(q, owner, 0, &it, NULL)) == 0) {
				int n = snprintf(out, sizeof(out), "%s\n", it.req.id);

				sb_queue_item_free(&it);
				if (write(res[1], out, (size_t)n) != n)
					_exit(3);
			}
			sb_queue_close(q);
			_exit(rc == -ENOENT ? 0 : 4);
		}
	}
	close(res[1]);
	barrier_open(&b);
	while ((r = read(res[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(res[0]);
	for (i = 0; i < N_PROCS; i++)
		assert_int_equal(wait_child(kids[i]), 0);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		for (j = 0; j < M && strcmp(ids[j], line); j++)
			;
		assert_true(j < M);
		seen[j]++;
		total++;
	}
	for (i = 0; i < M; i++) {
		if (seen[i] != 1)
			fail_msg("request %s claimed %d times", ids[i], seen[i]);
		assert_true(qt_exists(t, "claimed/%s.json", ids[i]));
		assert_true(qt_exists(t, "claimed/%s.lease", ids[i]));
	}
	assert_int_equal(total, M);
	assert_int_equal(qt_count(t, "pending"), 0);
	assert_int_equal(qt_count(t, "claimed"), 2 * M);
	assert_int_equal(qt_count(t, "quarantine"), 0);
}

static void test_claim_same_id_one_winner(void **state)
{
	struct qt *t = *state;
	int round;

	for (round = 0; round < 10; round++) {
		struct sb_queue_request req = qt_exec_req(NULL, 50 + round);
		char id[SB_QUEUE_ID_MAX + 1];
		struct barrier b;
		pid_t kids[N_PROCS];
		int i, wins = 0, busy = 0;

		qt_submit(t, &req, id);
		barrier_init(&b);
		for (i = 0; i < N_PROCS; i++) {
			kids[i] = fork();
			assert_true(kids[i] >= 0);
			if (kids[i] == 0) {
				struct sb_queue *q;
				char owner[32];
				int rc;

				barrier_wait(&b);
				snprintf(owner, sizeof(owner), "w%d", i);
				if (sb_queue_open(t->dir, 0, &q, NULL))
					_exit(2);
				rc = sb_queue_claim(q, id, owner, 0, NULL);
				sb_queue_close(q);
				_exit(rc == 0 ? 0 : rc == -EBUSY || rc == -EAGAIN ? 1 : 3);
			}
		}
		barrier_open(&b);
		for (i = 0; i < N_PROCS; i++) {
			int rc = wait_child(kids[i]);

			wins += rc == 0;
			busy += rc == 1;
		}
		assert_int_equal(wins, 1);
		assert_int_equal(busy, N_PROCS - 1);
		assert_true(qt_exists(t, "claimed/%s.json", id));
	}
}

static void test_decide_race_exactly_one(void **state)
{
	struct qt *t = *state;
	int round;

	for (round = 0; round < 10; round++) {
		struct sb_queue_request req = qt_exec_req(NULL, 70 + round);
		struct sb_queue_decision got;
		struct sb_err err = { { 0 } };
		char id[SB_QUEUE_ID_MAX + 1], winner[32] = "";
		struct barrier b;
		pid_t kids[N_PROCS];
		int i, wins = 0, lost = 0, w = -1;

		qt_submit(t, &req, id);
		if (round % 2)
			assert_int_equal(sb_queue_claim(t->q, id, "watcher", 0, &err), 0);
		barrier_init(&b);
		for (i = 0; i < N_PROCS; i++) {
			kids[i] = fork();
			assert_true(kids[i] >= 0);
			if (kids[i] == 0) {
				struct sb_queue *q;
				struct sb_queue_decision d;
				char who[32];
				int rc;

				/* child 0 is the broker's timeout, the others humans */
				snprintf(who, sizeof(who), "decider-%d", i);
				d = qt_decision(i % 2 ? SB_QV_ALLOW : SB_QV_DENY, who);
				d.timed_out = i == 0;
				if (sb_queue_open(t->dir, 0, &q, NULL))
					_exit(2);
				barrier_wait(&b);
				rc = sb_queue_decide(q, id, &d, NULL);
				sb_queue_close(q);
				_exit(rc == 0 ? 0 : rc == -EALREADY ? 1 : 3);
			}
		}
		barrier_open(&b);
		for (i = 0; i < N_PROCS; i++) {
			int rc = wait_child(kids[i]);

			if (rc == 0) {
				wins++;
				w = i;
				snprintf(winner, sizeof(winner), "decider-%d", i);
			}
			lost += rc == 1;
		}
		assert_int_equal(wins, 1);
		assert_int_equal(lost, N_PROCS - 1);
		assert_int_equal(sb_queue_wait(t->q, id, 0, &got, NULL, &err), 0);
		assert_string_equal(got.reviewer, winner);
		assert_int_equal(got.verdict, w % 2 ? SB_QV_ALLOW : SB_QV_DENY);
		assert_int_equal(got.timed_out, w == 0);
		assert_false(qt_exists(t, "pending/%s.json", id));
		assert_false(qt_exists(t, "claimed/%s.json", id));
		assert_false(qt_exists(t, "claimed/%s.lease", id));
	}
	assert_int_equal(qt_count(t, "tmp"), 0);
}

/* A watcher claims and releases in a loop while a decider decides: the
 * decision lands once and no undecided copy survives a reader. */
static void test_decide_while_claim_churn(void **state)
{
	struct qt *t = *state;
	int round;

	for (round = 0; round < 5; round++) {
		struct sb_queue_request req = qt_exec_req(NULL, 90 + round);
		struct sb_queue_list l;
		struct sb_err err = { { 0 } };
		char id[SB_QUEUE_ID_MAX + 1];
		struct barrier b;
		pid_t churn[2], decider;
		int i;

		qt_submit(t, &req, id);
		barrier_init(&b);
		for (i = 0; i < 2; i++) {
			churn[i] = fork();
			assert_true(churn[i] >= 0);
			if (churn[i] == 0) {
				struct sb_queue *q;
				char owner[16];
				int k;

				snprintf(owner, sizeof(owner), "churn%d", i);
				if (sb_queue_open(t->dir, 0, &q, NULL))
					_exit(2);
				barrier_wait(&b);
				for (k = 0; k < 200; k++) {
					if (sb_queue_claim(q, id, owner, 0, NULL) == 0)
						sb_queue_release(q, id, owner, NULL);
				}
				sb_queue_close(q);
				_exit(0);
			}
		}
		decider = fork();
		assert_true(decider >= 0);
		if (decider == 0) {
			struct sb_queue *q;
			struct sb_queue_decision d = qt_decision(SB_QV_ALLOW, "human");
			int rc;

			if (sb_queue_open(t->dir, 0, &q, NULL))
				_exit(2);
			barrier_wait(&b);
			usleep(2000);
			/* The request may be between pending and claimed: retry
			 * the lookup like a human retyping the command would. */
			do
				rc = sb_queue_decide(q, id, &d, NULL);
			while (rc == -ENOENT);
			sb_queue_close(q);
			_exit(rc == 0 ? 0 : 3);
		}
		barrier_open(&b);
		assert_int_equal(wait_child(decider), 0);
		assert_int_equal(wait_child(churn[0]), 0);
		assert_int_equal(wait_child(churn[1]), 0);
		assert_true(qt_exists(t, "done/%s.json", id));
		assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED), &l, &err), 0);
		assert_int_equal(l.n, 0);
		sb_queue_list_free(&l);
		assert_false(qt_exists(t, "pending/%s.json", id));
		assert_false(qt_exists(t, "claimed/%s.json", id));
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, qt_setup, qt_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_claim_race_many_processes),
		T(test_claim_same_id_one_winner),
		T(test_decide_race_exactly_one),
		T(test_decide_while_claim_churn),
	};

	return cmocka_run_group_tests_name("queue_race", tests, NULL, NULL);
}
