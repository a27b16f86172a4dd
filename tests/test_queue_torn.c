/* Torn and malformed files of every shape a crash, a bug or an attacker
 * could leave in the queue: each is moved to quarantine/ with an .error
 * note, never returned as a request, and never crashes a reader. */
#include <cjson/cJSON.h>

#include "queue_test_util.h"

#define ID "20250314-153012-123456-9f3ab2c1"

static cJSON *valid_request_json(void)
{
	struct sb_queue_request r = qt_exec_req(NULL, 4242);

	snprintf(r.id, sizeof(r.id), "%s", ID);
	r.created_ms = 1741966212123LL;
	return sb_queue_request_to_json(&r);
}

static char *valid_request_text(void)
{
	cJSON *j = valid_request_json();
	char *s = cJSON_Print(j);

	cJSON_Delete(j);
	return s;
}

static char *valid_done_text(const char *decision_json)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	cJSON_AddNumberToObject(o, "version", 1);
	cJSON_AddItemToObject(o, "request", valid_request_json());
	cJSON_AddItemToObject(o, "decision", cJSON_Parse(decision_json));
	s = cJSON_Print(o);
	cJSON_Delete(o);
	return s;
}

static void clear_quarantine(struct qt *t)
{
	char p[PATH_MAX], e[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(qt_path(t, p, "quarantine"));

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(e, sizeof(e), "%s/%s", p, de->d_name);
		assert_int_equal(remove(e), 0);
	}
	closedir(d);
}

/* Lists the given states: the one bad file there must go to quarantine/
 * with a note that mentions why_part. */
static void expect_quarantined(struct qt *t, unsigned states, const char *why_part)
{
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int notes = 0;

	clear_quarantine(t);
	assert_int_equal(sb_queue_list(t->q, states, &l, &err), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(l.quarantined, 1);
	sb_queue_list_free(&l);
	assert_int_equal(qt_count(t, "quarantine"), 2);
	d = opendir(qt_path(t, p, "quarantine"));
	assert_non_null(d);
	while ((de = readdir(d))) {
		char np[PATH_MAX + 256], *text;

		if (!strstr(de->d_name, ".error"))
			continue;
		snprintf(np, sizeof(np), "%s/%s", p, de->d_name);
		text = qt_read(np, NULL);
		assert_non_null(text);
		assert_non_null(strstr(text, "error: "));
		if (why_part && !strstr(text, why_part))
			fail_msg("quarantine note does not mention '%s':\n%s", why_part, text);
		free(text);
		notes++;
	}
	closedir(d);
	assert_int_equal(notes, 1);
	/* a second look finds nothing more */
	assert_int_equal(sb_queue_list(t->q, states, &l, &err), 0);
	assert_int_equal(l.quarantined, 0);
	sb_queue_list_free(&l);
}

static void put_pending(struct qt *t, const char *text, size_t len)
{
	char p[PATH_MAX];

	qt_write(qt_path(t, p, "pending/%s.json", ID), text, len);
}

static void test_valid_file_is_accepted(void **state)
{
	struct qt *t = *state;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	char *text = valid_request_text();

	put_pending(t, text, strlen(text));
	free(text);
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_PENDING), &l, &err), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.quarantined, 0);
	sb_queue_list_free(&l);
}

static void test_truncated_at_every_length(void **state)
{
	struct qt *t = *state;
	char *text = valid_request_text();
	size_t len = strlen(text), cut;
	int n = 0;

	/* Cutting anywhere (a write torn by a crash) never yields a request. */
	for (cut = 0; cut < len - 2; cut += 5) {
		put_pending(t, text, cut);
		expect_quarantined(t, SB_QSM(SB_QS_PENDING), NULL);
		n++;
	}
	free(text);
	assert_int_equal(qt_count(t, "pending"), 0);
	print_message("%d truncations quarantined\n", n);
}

struct mutation {
	const char *path;	/* "key" or "event.key" or "chain.0.key" */
	const char *json;	/* new value as JSON, or NULL to delete */
	const char *why;	/* part of the expected error */
};

static cJSON *find_parent(cJSON *root, const char *path, const char **leaf)
{
	char buf[128], *dot, *p = buf;
	cJSON *o = root;

	snprintf(buf, sizeof(buf), "%s", path);
	while ((dot = strchr(p, '.'))) {
		*dot = '\0';
		o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(p)) : cJSON_GetObjectItemCaseSensitive(o, p);
		assert_non_null(o);
		p = dot + 1;
	}
	*leaf = path + (p - buf);
	return o;
}

static void test_schema_violations(void **state)
{
	static const struct mutation muts[] = {
		{ "version", NULL, "missing \"version\"" },
		{ "version", "2", "unsupported version" },
		{ "version", "\"1\"", "version" },
		{ "id", NULL, "missing \"id\"" },
		{ "id", "\"../../etc/passwd\"", "invalid request id" },
		{ "id", "\"20250314-153012-123456-00000000\"", "says it is request" },
		{ "id", "42", "must be a string" },
		{ "created_at", NULL, "created_at" },
		{ "created_at", "1741966212", "must be a string" },
		{ "created_at", "\"yesterday\"", "UTC time" },
		{ "deadline", "\"2025-02-30T00:00:00Z\"", "UTC time" },
		{ "origin", "\"browser\"", "origin" },
		{ "trigger", "\"network\"", "does not match" },
		{ "trigger", NULL, "missing \"trigger\"" },
		{ "kind", "\"spawn\"", "kind" },
		{ "key", "\"\"", "must not be empty" },
		{ "key", NULL, "missing \"key\"" },
		{ "key", "[]", "must be a string" },
		{ "event", NULL, "missing \"event\"" },
		{ "event", "\"git push\"", "must be an object" },
		{ "event.argv", "\"git push\"", "argv" },
		{ "event.argv", "[\"git\", 7]", "argv" },
		{ "event.argv", "[]", "needs a non-empty" },
		{ "event.path", "\"bin/git\"", "absolute" },
		{ "event.op", "\"open\"", "unknown field" },
		{ "event.port", "22", "unknown field" },
		{ "cwd", "\"relative\"", "absolute" },
		{ "cwd", "false", "must be a string" },
		{ "pid", "\"4242\"", "whole number" },
		{ "pid", "-1", "whole number" },
		{ "pid", "1.5", "whole number" },
		{ "pid", "1e300", "whole number" },
		{ "pid", "4294967296", "whole number" },
		{ "pid", NULL, "missing \"pid\"" },
		{ "chain", NULL, "missing \"chain\"" },
		{ "chain", "{}", "chain" },
		{ "chain.0.pid", "\"x\"", "whole number" },
		{ "chain.0.comm", "{}", "must be a string" },
		{ "chain.0.extra", "1", "unknown field" },
		{ "rule", NULL, "missing \"rule\"" },
		{ "reason", "null", "missing \"reason\"" },
		{ "surprise", "true", "unknown field" },
	};
	struct qt *t = *state;
	size_t i;

	for (i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		cJSON *root = valid_request_json(), *parent;
		const char *leaf;
		char *text;

		parent = find_parent(root, muts[i].path, &leaf);
		if (cJSON_IsArray(parent))
			fail_msg("bad mutation path");
		cJSON_DeleteItemFromObjectCaseSensitive(parent, leaf);
		if (muts[i].json)
			cJSON_AddItemToObject(parent, leaf, cJSON_Parse(muts[i].json));
		text = cJSON_PrintUnformatted(root);
		cJSON_Delete(root);
		put_pending(t, text, strlen(text));
		free(text);
		expect_quarantined(t, SB_QSM(SB_QS_PENDING), muts[i].why);
	}
}

static void test_raw_shapes(void **state)
{
	struct qt *t = *state;
	char *valid = valid_request_text(), *big, *deep;
	size_t vl = strlen(valid), i;
	static const struct {
		const char *text;
		const char *why;
	} raw[] = {
		{ "", "empty" },
		{ "null", "object" },
		{ "[1,2,3]", "object" },
		{ "\"just a string\"", "object" },
		{ "{\"version\":1,\"version\":1}", "duplicate" },
		{ "{}", "missing" },
		{ "\xef\xbb\xbf{}", "missing" },	/* cJSON skips a BOM */
		{ "{\"version\":1} garbage", "trailing" },
		{ "{\"version\":1}{\"version\":1}", "trailing" },
		{ "{\"id\":\"a\\u0000b\"}", "\\u0000" },
	};

	for (i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
		put_pending(t, raw[i].text, strlen(raw[i].text));
		expect_quarantined(t, SB_QSM(SB_QS_PENDING), raw[i].why);
	}
	/* a NUL byte inside an otherwise valid file */
	{
		char *copy = strdup(valid);

		copy[vl / 2] = '\0';
		put_pending(t, copy, vl);
		free(copy);
		expect_quarantined(t, SB_QSM(SB_QS_PENDING), "NUL");
	}
	/* \u0000 hidden in an argument */
	{
		char *p = strstr(valid, "\"main\"");
		char *copy = malloc(vl + 16);

		assert_non_null(p);
		snprintf(copy, vl + 16, "%.*s\"main\\u0000; rm -rf ~\"%s", (int)(p - valid), valid, p + 6);
		put_pending(t, copy, strlen(copy));
		free(copy);
		expect_quarantined(t, SB_QSM(SB_QS_PENDING), "\\u0000");
	}
	/* a huge file: valid JSON, too big */
	big = malloc(SB_QUEUE_FILE_MAX + 64);
	assert_non_null(big);
	memset(big, ' ', SB_QUEUE_FILE_MAX + 63);
	memcpy(big, valid, vl);
	put_pending(t, big, SB_QUEUE_FILE_MAX + 63);
	free(big);
	expect_quarantined(t, SB_QSM(SB_QS_PENDING), "larger than");
	/* deeply nested JSON must not overflow the parser's stack */
	deep = malloc(200001);
	assert_non_null(deep);
	memset(deep, '[', 100000);
	memset(deep + 100000, ']', 100000);
	deep[200000] = '\0';
	put_pending(t, deep, 200000);
	free(deep);
	expect_quarantined(t, SB_QSM(SB_QS_PENDING), "JSON");
	free(valid);
}

static void test_non_regular_files_and_names(void **state)
{
	struct qt *t = *state;
	char p[PATH_MAX], target[PATH_MAX];
	char *valid = valid_request_text();
	static const char *const bad_names[] = {
		"pending/no-extension", "pending/.hidden.json", "pending/-rf.json", "pending/a b.json",
		"pending/x.json.tmp", "pending/\x1b[2J.json", "done/what.txt", "claimed/x.lock",
	};
	size_t i;

	/* a symlink to a valid request elsewhere is not followed */
	snprintf(target, sizeof(target), "%s/elsewhere.json", t->dir);
	qt_write(target, valid, strlen(valid));
	assert_int_equal(symlink(target, qt_path(t, p, "pending/%s.json", ID)), 0);
	expect_quarantined(t, SB_QSM(SB_QS_PENDING), "symlink");
	assert_int_equal(access(target, F_OK), 0);	/* the target is untouched */
	/* a symlink to /dev/zero or a FIFO would block or never end */
	assert_int_equal(symlink("/dev/zero", qt_path(t, p, "pending/%s.json", ID)), 0);
	expect_quarantined(t, SB_QSM(SB_QS_PENDING), "symlink");
	assert_int_equal(mkfifo(qt_path(t, p, "pending/%s.json", ID), 0644), 0);
	expect_quarantined(t, SB_QSM(SB_QS_PENDING), "not a regular file");
	assert_int_equal(mkdir(qt_path(t, p, "pending/%s.json", ID), 0755), 0);
	expect_quarantined(t, SB_QSM(SB_QS_PENDING), "not a regular file");
	/* a hard link to a file elsewhere is read as untrusted JSON */
	{
		char secret[PATH_MAX];

		snprintf(secret, sizeof(secret), "%s/secret", t->dir);
		qt_write(secret, "root:x:0:0", 10);
		assert_int_equal(link(secret, qt_path(t, p, "pending/%s.json", ID)), 0);
		expect_quarantined(t, SB_QSM(SB_QS_PENDING), "JSON");
		assert_int_equal(access(secret, F_OK), 0);
	}
	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		qt_write(qt_path(t, p, "%s", bad_names[i]), valid, strlen(valid));
		expect_quarantined(t, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_DONE) | SB_QSM(SB_QS_CLAIMED),
				   "has no place");
	}
	free(valid);
}

static void test_malformed_decisions(void **state)
{
	static const char *const decisions[] = {
		"{\"decision\":\"maybe\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":null,\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"\",\"reason\":\"\",\"remember\":null,\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\\u001b[2J\",\"reason\":\"\",\"remember\":null,\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"deny\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":{\"scope\":\"prefix\",\"value\":\"git push\"},\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":{\"scope\":\"prefix\",\"value\":\"git\"},\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":{\"scope\":\"host\",\"value\":\"x.com\"},\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":{\"scope\":\"forever\",\"value\":\"x\"},\"decided_at\":\"2025-03-14T15:30:12.123Z\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":null,\"decided_at\":\"2025-03-14T15:30:12.123Z\",\"timed_out\":true}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":null,\"decided_at\":\"2025-03-14T15:30:12.123Z\",\"timed_out\":\"no\"}",
		"{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"\",\"remember\":null}",
		"[]",
	};
	struct qt *t = *state;
	struct sb_queue_decision d;
	struct sb_err err = { { 0 } };
	char p[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(decisions) / sizeof(decisions[0]); i++) {
		char *text = valid_done_text(decisions[i]);

		qt_write(qt_path(t, p, "done/%s.json", ID), text, strlen(text));
		free(text);
		expect_quarantined(t, SB_QSM(SB_QS_DONE), NULL);
	}
	/* the broker waiting on it learns the decision was malformed */
	{
		char *text = valid_done_text(decisions[0]);

		qt_write(qt_path(t, p, "done/%s.json", ID), text, strlen(text));
		free(text);
	}
	assert_int_equal(sb_queue_wait(t->q, ID, 1000, &d, NULL, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "quarantine"));
	/* and a well-formed one is accepted */
	{
		char *text = valid_done_text("{\"decision\":\"allow\",\"reviewer\":\"a\",\"reason\":\"ok\",\"remember\":"
					     "{\"scope\":\"prefix\",\"value\":\"git push\"},\"decided_at\":\"2025-03-14T15:30:12.123Z\"}");

		qt_write(qt_path(t, p, "done/%s.json", ID), text, strlen(text));
		free(text);
	}
	assert_int_equal(sb_queue_wait(t->q, ID, 0, &d, NULL, &err), 0);
	assert_string_equal(d.remember_value, "git push");
}

static void test_malformed_lease(void **state)
{
	struct qt *t = *state;
	struct sb_queue_list l;
	struct sb_err err = { { 0 } };
	char p[PATH_MAX], *valid = valid_request_text();

	qt_write(qt_path(t, p, "claimed/%s.json", ID), valid, strlen(valid));
	free(valid);
	qt_write(qt_path(t, p, "claimed/%s.lease", ID), "{\"version\":1,\"id\":\"other\"", 26);
	clear_quarantine(t);
	assert_int_equal(sb_queue_list(t->q, SB_QSM(SB_QS_CLAIMED), &l, &err), 0);
	assert_int_equal(l.n, 1);		/* the request itself is fine */
	assert_false(l.items[0].has_lease);
	sb_queue_list_free(&l);
	assert_false(qt_exists(t, "claimed/%s.lease", ID));
	assert_int_equal(qt_count(t, "quarantine"), 2);
}

static void test_recover_quarantines_everywhere(void **state)
{
	struct qt *t = *state;
	struct sb_queue_recover_stats st;
	struct sb_err err = { { 0 } };
	char p[PATH_MAX];

	qt_write(qt_path(t, p, "pending/a.json"), "{", 1);
	qt_write(qt_path(t, p, "claimed/b.json"), "[]", 2);
	qt_write(qt_path(t, p, "done/c.json"), "{}", 2);
	qt_write(qt_path(t, p, "applied/d.json"), "", 0);
	qt_write(qt_path(t, p, "pending/weird name"), "", 0);
	assert_int_equal(sb_queue_recover(t->q, &st, &err), 0);
	assert_int_equal(st.quarantined, 5);
	assert_int_equal(qt_count(t, "quarantine"), 10);
	assert_int_equal(qt_count(t, "pending") + qt_count(t, "claimed") + qt_count(t, "done") +
				 qt_count(t, "applied"),
			 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, qt_setup, qt_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_valid_file_is_accepted),
		T(test_truncated_at_every_length),
		T(test_schema_violations),
		T(test_raw_shapes),
		T(test_non_regular_files_and_names),
		T(test_malformed_decisions),
		T(test_malformed_lease),
		T(test_recover_quarantines_everywhere),
	};

	return cmocka_run_group_tests_name("queue_torn", tests, NULL, NULL);
}
