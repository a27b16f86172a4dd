/* The approver commands as a human and a script use them: pending,
 * approve, deny (exit codes, messages, JSON), and watch driven through a
 * pipe (all answers up front, or one at a time while watching the queue)
 * and through a pseudo-terminal, as over SSH. */
#include <cjson/cJSON.h>
#include <poll.h>

#include "queue_test_util.h"

#define SKIP_WITHOUT_BIN()                                                  \
	do {                                                                \
		if (!qt_bin()) {                                            \
			print_message("SB_BIN is not set (run via make test)\n"); \
			skip();                                             \
		}                                                           \
	} while (0)

static void run_cmd(struct qt_run *r, const char *stdin_text, ...)
{
	char *argv[32];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)qt_bin();
	va_start(ap, stdin_text);
	while (n < 31 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	qt_run(r, stdin_text, argv);
}

static void load_done(struct qt *t, const char *id, struct sb_queue_decision *d)
{
	struct sb_err err = { { 0 } };

	if (sb_queue_wait(t->q, id, 0, d, NULL, &err))
		fail_msg("no decision for %s: %s", id, err.msg);
}

/* ---- pending ---- */

static void test_pending(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req(NULL, 11), r2 = qt_write_req("/etc/hosts", 12);
	struct qt_run r;
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1], p[PATH_MAX];
	struct sb_err err = { { 0 } };

	SKIP_WITHOUT_BIN();
	run_cmd(&r, NULL, "pending", "--folder", t->dir, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "no pending requests"));
	run_cmd(&r, NULL, "pending", "--folder", t->dir, "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");

	qt_submit(t, &r1, a);
	qt_submit(t, &r2, b);
	assert_int_equal(sb_queue_claim(t->q, b, "watch:x", 0, &err), 0);
	qt_write(qt_path(t, p, "pending/junk.json"), "{", 1);
	run_cmd(&r, NULL, "pending", "--folder", t->dir, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "ID"));
	assert_non_null(strstr(r.out, "TRIGGER"));
	assert_non_null(strstr(r.out, a));
	assert_non_null(strstr(r.out, b));
	assert_non_null(strstr(r.out, "git push origin main"));
	assert_non_null(strstr(r.out, "write (create) /etc/hosts"));
	assert_non_null(strstr(r.out, "claimed"));
	assert_non_null(strstr(r.out, "kernel"));
	assert_non_null(strstr(r.err, "moved 1 malformed file"));
	assert_true(strstr(r.out, a) < strstr(r.out, b));	/* oldest first */

	run_cmd(&r, NULL, "pending", "--folder", t->dir, "--json", NULL);
	assert_int_equal(r.status, 0);
	{
		char *line, *save;
		int n = 0;

		for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
			cJSON *o = cJSON_Parse(line), *req;

			assert_non_null(o);
			req = cJSON_GetObjectItem(o, "request");
			assert_non_null(req);
			assert_string_equal(cJSON_GetObjectItem(req, "id")->valuestring, n == 0 ? a : b);
			assert_string_equal(cJSON_GetObjectItem(o, "state")->valuestring, n == 0 ? "pending" : "claimed");
			if (n == 1)
				assert_non_null(cJSON_GetObjectItem(o, "lease"));
			cJSON_Delete(o);
		}
		assert_int_equal(n, 2);
	}
}

static void test_pending_usage(void **state)
{
	struct qt *t = *state;
	struct qt_run r;
	char dir[] = "/tmp/sbq-noqueue-XXXXXX";

	SKIP_WITHOUT_BIN();
	run_cmd(&r, NULL, "pending", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "usage: sandbox-bpf pending"));
	run_cmd(&r, NULL, "pending", "--bogus", NULL);
	assert_int_equal(r.status, 2);
	run_cmd(&r, NULL, "pending", "--folder", t->dir, "extra", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(mkdtemp(dir));
	run_cmd(&r, NULL, "pending", "--folder", dir, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "sandbox-bpf pending: no escalation queue"));
	rmdir(dir);
}

/* ---- approve / deny ---- */

static void test_approve_and_deny(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req("exec:1", 1), r2 = qt_exec_req("exec:2", 1),
				r3 = qt_connect_req(3), r4 = qt_write_req("/srv/data/x.db", 4);
	struct sb_queue_decision d;
	struct qt_run r;
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1], c[SB_QUEUE_ID_MAX + 1], e[SB_QUEUE_ID_MAX + 1];

	SKIP_WITHOUT_BIN();
	qt_submit(t, &r1, a);
	qt_submit(t, &r2, b);
	qt_submit(t, &r3, c);
	qt_submit(t, &r4, e);

	setenv("SUDO_USER", "alice", 1);
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, "--remember", "prefix", "--reason", "release", NULL);
	unsetenv("SUDO_USER");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "approved"));
	assert_non_null(strstr(r.out, a));
	assert_non_null(strstr(r.out, "prefix 'git push'"));
	load_done(t, a, &d);
	assert_int_equal(d.verdict, SB_QV_ALLOW);
	assert_string_equal(d.reviewer, "alice");
	assert_string_equal(d.reason, "release");
	assert_true(d.remember);
	assert_int_equal(d.scope, SB_REM_PREFIX);
	assert_string_equal(d.remember_value, "git push");

	run_cmd(&r, NULL, "deny", b, "--folder", t->dir, "--reason", "not on friday", "--reviewer", "bob", "--json",
		NULL);
	assert_int_equal(r.status, 0);
	{
		cJSON *o = cJSON_Parse(r.out), *dec;

		assert_non_null(o);
		assert_string_equal(cJSON_GetObjectItem(o, "id")->valuestring, b);
		dec = cJSON_GetObjectItem(o, "decision");
		assert_string_equal(cJSON_GetObjectItem(dec, "decision")->valuestring, "deny");
		assert_string_equal(cJSON_GetObjectItem(dec, "reviewer")->valuestring, "bob");
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(dec, "remember")));
		cJSON_Delete(o);
	}
	load_done(t, b, &d);
	assert_int_equal(d.verdict, SB_QV_DENY);
	assert_string_equal(d.reason, "not on friday");

	run_cmd(&r, NULL, "approve", "--folder", t->dir, "--remember", "host", c, NULL);
	assert_int_equal(r.status, 0);
	load_done(t, c, &d);
	assert_int_equal(d.scope, SB_REM_HOST);
	assert_string_equal(d.remember_value, "example.com");

	run_cmd(&r, NULL, "approve", "--folder", t->dir, "--remember", "dir", "--value", "/srv/data/", e, NULL);
	assert_int_equal(r.status, 0);
	load_done(t, e, &d);
	assert_int_equal(d.scope, SB_REM_DIR);
	assert_string_equal(d.remember_value, "/srv/data");
}

static void test_approve_errors(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req(NULL, 1);
	struct sb_err err = { { 0 } };
	struct qt_run r;
	char a[SB_QUEUE_ID_MAX + 1];
	struct sb_queue_decision d = qt_decision(SB_QV_DENY, "carol");

	SKIP_WITHOUT_BIN();
	qt_submit(t, &r1, a);
	run_cmd(&r, NULL, "approve", "--folder", t->dir, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "which request"));
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, a, NULL);
	assert_int_equal(r.status, 2);
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, "--value", "git push", NULL);
	assert_int_equal(r.status, 2);
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, "--remember", "forever", NULL);
	assert_int_equal(r.status, 2);
	run_cmd(&r, NULL, "deny", "--folder", t->dir, a, "--remember", "prefix", NULL);
	assert_int_equal(r.status, 2);
	run_cmd(&r, NULL, "approve", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "--remember"));
	run_cmd(&r, NULL, "deny", "--help", NULL);
	assert_int_equal(r.status, 0);

	run_cmd(&r, NULL, "approve", "--folder", t->dir, "../../etc/x", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "sandbox-bpf approve: invalid request id '../../etc/x'"));
	run_cmd(&r, NULL, "deny", "--folder", t->dir, "..", NULL);
	assert_int_equal(r.status, 1);
	run_cmd(&r, NULL, "approve", "--folder", t->dir, "20250101-000000-000000-deadbeef", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "no request '20250101-000000-000000-deadbeef'"));
	/* scope that does not fit, value the classifier refuses */
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, "--remember", "host", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "network"));
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, "--remember", "prefix", "--value", "git", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "two words"));
	assert_true(qt_exists(t, "pending/%s.json", a));	/* nothing decided */

	assert_int_equal(sb_queue_decide(t->q, a, &d, &err), 0);
	run_cmd(&r, NULL, "approve", "--folder", t->dir, a, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "already decided: denied by carol"));
	assert_non_null(strstr(r.err, "state: done"));
	assert_int_equal(sb_queue_ack(t->q, a, &err), 0);
	run_cmd(&r, NULL, "deny", "--folder", t->dir, a, NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "state: applied"));
}

/* ---- watch through a pipe, all answers up front ---- */

static void test_watch_script(void **state)
{
	struct qt *t = *state;
	char ids[5][SB_QUEUE_ID_MAX + 1], keys[5][32];
	struct sb_queue_decision d;
	struct qt_run r;
	int i;

	SKIP_WITHOUT_BIN();
	for (i = 0; i < 5; i++) {
		struct sb_queue_request req;

		snprintf(keys[i], sizeof(keys[i]), "exec:%d", i);
		req = qt_exec_req(keys[i], 100 + i);
		qt_submit(t, &req, ids[i]);
	}
	/* approve with a reason, an unknown answer, deny with a reason,
	 * always with the menu's 3rd choice (prefix), always with an inline
	 * scope and value, skip */
	run_cmd(&r, "a looks fine\nwhat?\nd not today\nl\n3\nl command git push origin\ns\n", "watch", "--folder",
		t->dir, "--reviewer", "scripted", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "unknown answer 'what?'"));
	assert_non_null(strstr(r.out, "git push origin main"));
	assert_non_null(strstr(r.out, "skipped"));
	load_done(t, ids[0], &d);
	assert_int_equal(d.verdict, SB_QV_ALLOW);
	assert_string_equal(d.reason, "looks fine");
	assert_string_equal(d.reviewer, "scripted");
	assert_false(d.remember);
	load_done(t, ids[1], &d);
	assert_int_equal(d.verdict, SB_QV_DENY);
	assert_string_equal(d.reason, "not today");
	load_done(t, ids[2], &d);
	assert_int_equal(d.verdict, SB_QV_ALLOW);
	assert_true(d.remember);
	assert_int_equal(d.scope, SB_REM_PREFIX);
	assert_string_equal(d.remember_value, "git push");
	load_done(t, ids[3], &d);
	assert_int_equal(d.scope, SB_REM_COMMAND);
	assert_string_equal(d.remember_value, "git push origin");
	/* skipped: back in pending and unclaimed */
	assert_true(qt_exists(t, "pending/%s.json", ids[4]));
	assert_int_equal(qt_count(t, "claimed"), 0);
}

static void test_watch_eof_releases_claim(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request req = qt_exec_req(NULL, 1);
	char id[SB_QUEUE_ID_MAX + 1];
	struct qt_run r;

	SKIP_WITHOUT_BIN();
	qt_submit(t, &req, id);
	run_cmd(&r, "", "watch", "--folder", t->dir, "--json", NULL);
	assert_int_equal(r.status, 0);
	{
		cJSON *o = cJSON_Parse(r.out);

		assert_non_null(o);
		assert_string_equal(cJSON_GetObjectItem(o, "event")->valuestring, "request");
		assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "request"), "id")->valuestring, id);
		cJSON_Delete(o);
	}
	assert_true(qt_exists(t, "pending/%s.json", id));
	assert_int_equal(qt_count(t, "claimed"), 0);
}

/* ---- watch, interactively through pipes ---- */

struct proc {
	pid_t pid;
	int in, out;
	char buf[65536];
	size_t len, seen;	/* seen: where the last expect() matched */
};

static void proc_start(struct proc *p, char *const argv[], bool pty)
{
	int in[2], out[2];

	memset(p, 0, sizeof(*p));
	if (pty) {
		int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

		assert_true(m >= 0);
		assert_int_equal(grantpt(m), 0);
		assert_int_equal(unlockpt(m), 0);
		p->pid = fork();
		assert_true(p->pid >= 0);
		if (p->pid == 0) {
			int s;

			setsid();
			s = open(ptsname(m), O_RDWR);
			if (s < 0)
				_exit(126);
			dup2(s, 0);
			dup2(s, 1);
			dup2(s, 2);
			close(m);
			execv(qt_bin(), argv);
			_exit(127);
		}
		p->in = m;
		p->out = m;
		return;
	}
	/* O_CLOEXEC: a second watcher must not inherit the first one's
	 * stdin, or closing it would never reach the first as EOF. */
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		close(in[1]);
		close(out[0]);
		execv(qt_bin(), argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
}

/* Reads until needle appears after the last match, or fails after 15 s. */
static void expect(struct proc *p, const char *needle)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pf = { .fd = p->out, .events = POLLIN };
		char *hit;
		ssize_t r;

		p->buf[p->len] = '\0';
		hit = strstr(p->buf + p->seen, needle);
		if (hit) {
			p->seen = (size_t)(hit - p->buf) + strlen(needle);
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 15)
			fail_msg("timed out waiting for '%s'; output so far:\n%s", needle, p->buf);
		if (poll(&pf, 1, 200) <= 0)
			continue;
		r = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (r <= 0)
			fail_msg("output ended before '%s'; output:\n%s", needle, p->buf);
		p->len += (size_t)r;
	}
}

static void say_line(struct proc *p, const char *s)
{
	assert_int_equal(write(p->in, s, strlen(s)), (ssize_t)strlen(s));
}

/* Waits for the process to exit (15 s at most, then kills it and fails,
 * so a hang can never stall the test run). */
static int proc_end(struct proc *p, bool close_input)
{
	int st = 0, i;
	pid_t r = 0;

	if (close_input && p->in != p->out) {
		close(p->in);
		p->in = -1;
	}
	for (i = 0; i < 1500 && (r = waitpid(p->pid, &st, WNOHANG)) == 0; i++)
		usleep(10000);
	if (r == 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &st, 0);
		fail_msg("watch did not exit; output:\n%s", p->buf);
	}
	if (p->in != p->out && p->in >= 0)
		close(p->in);
	close(p->out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_watch_two_watchers(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request req = qt_exec_req(NULL, 1);
	struct sb_queue_item it;
	struct sb_queue_decision d;
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];
	struct proc *w1 = malloc(sizeof(*w1)), *w2 = malloc(sizeof(*w2));
	char *argv1[] = { (char *)qt_bin(), "watch", "--folder", t->dir, "--reviewer", "one", NULL };
	char *argv2[] = { (char *)qt_bin(), "watch", "--folder", t->dir, "--reviewer", "two", NULL };

	SKIP_WITHOUT_BIN();
	assert_non_null(w1);
	assert_non_null(w2);
	qt_submit(t, &req, id);
	proc_start(w1, argv1, false);
	expect(w1, "[a]pprove / [d]eny / a[l]ways (choose scope) / [s]kip >");
	/* while the human looks, the request is claimed by this watch */
	assert_int_equal(sb_queue_get(t->q, id, &it, &err), 0);
	assert_int_equal(it.state, SB_QS_CLAIMED);
	assert_true(it.has_lease);
	assert_non_null(strstr(it.lease.owner, "watch:one@"));
	sb_queue_item_free(&it);
	/* a second watcher does not show it */
	proc_start(w2, argv2, false);
	expect(w2, "waiting for requests");
	/* the first skips it: released, and the second one gets it */
	say_line(w1, "s\n");
	expect(w1, "skipped");
	expect(w2, "[s]kip >");
	say_line(w2, "d\n");
	expect(w2, "denied");
	expect(w2, "waiting for requests");
	assert_int_equal(proc_end(w1, true), 0);
	assert_int_equal(proc_end(w2, true), 0);
	load_done(t, id, &d);
	assert_string_equal(d.reviewer, "two");
	free(w1);
	free(w2);
}

static void test_watch_new_arrivals_and_decided_elsewhere(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request r1 = qt_exec_req("exec:1", 1), r2 = qt_write_req("/etc/x", 2);
	struct sb_queue_decision d = qt_decision(SB_QV_DENY, "sandbox-bpf");
	struct sb_err err = { { 0 } };
	char a[SB_QUEUE_ID_MAX + 1], b[SB_QUEUE_ID_MAX + 1];
	struct proc *w = malloc(sizeof(*w));
	char *argv[] = { (char *)qt_bin(), "watch", "--folder", t->dir, NULL };

	SKIP_WITHOUT_BIN();
	assert_non_null(w);
	proc_start(w, argv, false);
	expect(w, "waiting for requests");
	/* a request arrives while watching */
	r1.deadline_ms = sb_queue_now_ms() + 120000;
	qt_submit(t, &r1, a);
	expect(w, a);
	expect(w, "time left before it is denied: 1m5");
	expect(w, "[s]kip >");
	/* the broker's timeout decides it while the human looks */
	d.timed_out = true;
	assert_int_equal(sb_queue_decide(t->q, a, &d, &err), 0);
	expect(w, "decided elsewhere: denied by sandbox-bpf (timeout)");
	expect(w, "waiting for requests");
	qt_submit(t, &r2, b);
	expect(w, "write (create) /etc/x");
	say_line(w, "a\n");
	expect(w, "approved");
	assert_int_equal(proc_end(w, true), 0);
	free(w);
}

static void test_watch_sigint_releases(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request req = qt_exec_req(NULL, 1);
	char id[SB_QUEUE_ID_MAX + 1];
	struct proc *w = malloc(sizeof(*w));
	char *argv[] = { (char *)qt_bin(), "watch", "--folder", t->dir, NULL };

	SKIP_WITHOUT_BIN();
	assert_non_null(w);
	qt_submit(t, &req, id);
	proc_start(w, argv, false);
	expect(w, "[s]kip >");
	assert_true(qt_exists(t, "claimed/%s.json", id));
	kill(w->pid, SIGINT);
	assert_int_equal(proc_end(w, false), 0);
	assert_true(qt_exists(t, "pending/%s.json", id));
	assert_false(qt_exists(t, "claimed/%s.lease", id));
	free(w);
}

static void test_watch_reclaims_stale_claim(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request req = qt_exec_req(NULL, 1);
	struct sb_err err = { { 0 } };
	char id[SB_QUEUE_ID_MAX + 1];
	struct qt_run r;

	SKIP_WITHOUT_BIN();
	qt_submit(t, &req, id);
	/* a watcher that died three seconds into a 3 s lease */
	assert_int_equal(sb_queue_claim(t->q, id, "watch:dead@host:1", 3000, &err), 0);
	sleep(4);
	run_cmd(&r, "a\n", "watch", "--folder", t->dir, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "approved"));
	assert_true(qt_exists(t, "done/%s.json", id));
}

static void test_watch_pty(void **state)
{
	struct qt *t = *state;
	struct sb_queue_request req = qt_exec_req(NULL, 1);
	struct sb_queue_decision d;
	char id[SB_QUEUE_ID_MAX + 1];
	struct proc *w = malloc(sizeof(*w));
	char *argv[] = { (char *)qt_bin(), "watch", "--folder", t->dir, "--ask-reason", NULL };

	SKIP_WITHOUT_BIN();
	assert_non_null(w);
	req.argv = (const char *const[]){ "git", "push", "--force", "\x1b[2Jinnocent" };
	qt_submit(t, &req, id);
	proc_start(w, argv, true);
	expect(w, "[s]kip >");
	/* the escape sequence in the argument arrives escaped */
	assert_null(strstr(w->buf, "\x1b[2J"));
	assert_non_null(strstr(w->buf, "\\x1b[2Jinnocent"));
	say_line(w, "l\n");
	expect(w, "3) prefix   git push");
	expect(w, "scope [");
	say_line(w, "3\n");
	expect(w, "reason (optional) >");
	say_line(w, "ok for today\n");
	expect(w, "remembered: prefix 'git push'");
	expect(w, "waiting for requests");
	/* a stray answer typed while nothing is shown approves nothing */
	say_line(w, "a\n");
	expect(w, "nothing is pending; input ignored");
	{
		struct sb_queue_request r2 = qt_write_req("/etc/passwd", 2);
		char id2[SB_QUEUE_ID_MAX + 1];

		qt_submit(t, &r2, id2);
		expect(w, "write (create) /etc/passwd");
		expect(w, "[s]kip >");
		say_line(w, "\x04");	/* Ctrl-D at the prompt: quit, claim released */
		assert_int_equal(proc_end(w, false), 0);
		assert_true(qt_exists(t, "pending/%s.json", id2));
		assert_int_equal(qt_count(t, "claimed"), 0);
	}
	load_done(t, id, &d);
	assert_int_equal(d.scope, SB_REM_PREFIX);
	assert_string_equal(d.reason, "ok for today");
	free(w);
}

static void test_watch_usage(void **state)
{
	struct qt *t = *state;
	struct qt_run r;

	SKIP_WITHOUT_BIN();
	run_cmd(&r, NULL, "watch", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "[a]pprove / [d]eny / a[l]ways (choose scope) / [s]kip"));
	assert_non_null(strstr(r.out, "Scripts"));
	run_cmd(&r, NULL, "watch", "--folder", t->dir, "--lease", "1", NULL);
	assert_int_equal(r.status, 2);
	run_cmd(&r, NULL, "watch", "--nope", NULL);
	assert_int_equal(r.status, 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, qt_setup, qt_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_pending),
		T(test_pending_usage),
		T(test_approve_and_deny),
		T(test_approve_errors),
		T(test_watch_script),
		T(test_watch_eof_releases_claim),
		T(test_watch_two_watchers),
		T(test_watch_new_arrivals_and_decided_elsewhere),
		T(test_watch_sigint_releases),
		T(test_watch_reclaims_stale_claim),
		T(test_watch_pty),
		T(test_watch_usage),
	};

	return cmocka_run_group_tests_name("queue_cli", tests, NULL, NULL);
}
