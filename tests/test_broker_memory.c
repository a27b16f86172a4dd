/* Remembered decisions on disk (.sandbox/remembered.json): validation by
 * the classifier's rules, canonical values, no duplicates, atomic
 * save/load round trip, strict parsing. */
#include "broker_test_util.h"

#include <dirent.h>

#include "broker/broker_memory.h"

static void test_add_canonical_dedup(void **state)
{
	struct sb_bmem m;
	struct sb_err err = { { 0 } };
	bool added;

	(void)state;
	sb_bmem_init(&m);
	assert_int_equal(sb_bmem_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "  git   push ", "alice", "", 1, &added, &err), 0);
	assert_true(added);
	assert_string_equal(m.e[0].value, "git push");
	assert_int_equal(sb_bmem_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "bob", "", 2, &added, &err), 0);
	assert_false(added);
	assert_int_equal(m.n, 1);
	/* host keeps its port, canonical. */
	assert_int_equal(sb_bmem_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "Example.COM.:443", "a", "", 3, &added, &err), 0);
	assert_string_equal(m.e[1].value, "example.com:443");
	assert_int_equal(sb_bmem_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "::1", "a", "", 3, &added, &err), 0);
	assert_string_equal(m.e[2].value, "::1");
	assert_int_equal(sb_bmem_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "[::1]:22", "a", "", 3, &added, &err), 0);
	assert_string_equal(m.e[3].value, "[::1]:22");
	/* The classifier's own rules. */
	assert_int_equal(sb_bmem_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "git", "a", "", 3, &added, &err), -EINVAL);
	assert_int_equal(sb_bmem_add(&m, SB_REM_DIR, SB_TRIG_WRITE, "/", "a", "", 3, &added, &err), -EINVAL);
	assert_int_equal(sb_bmem_add(&m, SB_REM_HOST, SB_TRIG_SHELL, "x.com", "a", "", 3, &added, &err), -EINVAL);
	assert_int_equal(m.n, 4);
	sb_bmem_remove(&m, 0);
	assert_int_equal(m.n, 3);
	assert_string_equal(m.e[0].value, "example.com:443");
	sb_bmem_free(&m);
}

static void test_save_load(void **state)
{
	char dir[PATH_MAX], *text;
	struct sb_bmem m, l;
	struct sb_memory cm;
	struct sb_err err = { { 0 } };

	(void)state;
	bt_tmpdir(dir, sizeof(dir));
	assert_int_equal(sb_bmem_load(dir, &l, &err), 0);	/* no file: empty */
	assert_int_equal(l.n, 0);
	sb_bmem_free(&l);
	sb_bmem_init(&m);
	assert_int_equal(sb_bmem_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "git push", "alice", "20250314-153012-123456-9f3ab2c1",
				     1710430272123, NULL, &err),
			 0);
	assert_int_equal(sb_bmem_add(&m, SB_REM_DIR, SB_TRIG_WRITE, "/p/build", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_bmem_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "10.0.0.1:8080", "", "", 0, NULL, &err), 0);
	assert_int_equal(sb_bmem_save(dir, &m, &err), 0);
	text = bt_read(dir, ".sandbox/remembered.json");
	assert_non_null(text);
	assert_non_null(strstr(text, "\"created_at\":\t\"2024-03-14T15:31:12.123Z\""));
	free(text);
	assert_int_equal(sb_bmem_load(dir, &l, &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.e[0].value, "git push");
	assert_string_equal(l.e[0].reviewer, "alice");
	assert_string_equal(l.e[0].request, "20250314-153012-123456-9f3ab2c1");
	assert_true(l.e[0].created_ms == 1710430272123);
	assert_int_equal(l.e[2].scope, SB_REM_HOST);
	assert_string_equal(l.e[2].value, "10.0.0.1:8080");
	assert_int_equal(sb_bmem_to_memory(&l, &cm, &err), 0);
	assert_int_equal(cm.n, 3);
	assert_int_equal(cm.items[2].port, 8080);
	assert_string_equal(cm.items[2].value, "10.0.0.1");
	sb_memory_free(&cm);
	sb_bmem_free(&l);
	/* Saving again replaces the file: no temp file left behind. */
	sb_bmem_remove(&m, 1);
	assert_int_equal(sb_bmem_save(dir, &m, &err), 0);
	assert_int_equal(sb_bmem_load(dir, &l, &err), 0);
	assert_int_equal(l.n, 2);
	sb_bmem_free(&l);
	{
		char tmpdir[PATH_MAX + 16];
		int n = 0;
		DIR *d;
		struct dirent *de;

		snprintf(tmpdir, sizeof(tmpdir), "%s/.sandbox/tmp", dir);
		d = opendir(tmpdir);
		assert_non_null(d);
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				n++;
		closedir(d);
		assert_int_equal(n, 0);
	}
	sb_bmem_free(&m);
	bt_rm_rf(dir);
}

static void test_parse_strict(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"version\": 2, \"remembered\": []}",
		"{\"version\": 1}",
		"{\"version\": 1, \"remembered\": [], \"extra\": 1}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"prefix\", \"trigger\": \"shell\"}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"always\", \"trigger\": \"shell\", \"value\": \"a b\"}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"prefix\", \"trigger\": \"disk\", \"value\": \"a b\"}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"prefix\", \"trigger\": \"shell\", \"value\": \"a\"}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"prefix\", \"trigger\": \"shell\", \"value\": \"a b\", \"x\": 1}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"dir\", \"trigger\": \"write\", \"value\": \"rel/dir\"}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"prefix\", \"trigger\": \"shell\", \"value\": \"a b\", \"request\": \"../x\"}]}",
		"{\"version\": 1, \"remembered\": [{\"scope\": \"prefix\", \"trigger\": \"shell\", \"value\": \"a b\", \"created_at\": \"yesterday\"}]}",
		"{\"version\": 1, \"remembered\": [1]}",
	};
	struct sb_bmem m;
	struct sb_err err = { { 0 } };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = sb_bmem_parse(bad[i], strlen(bad[i]), &m, &err);

		if (rc != -EINVAL)
			fail_msg("case %zu accepted (rc %d): %s", i, rc, bad[i]);
		assert_true(err.msg[0] != '\0');
		assert_int_equal(m.n, 0);
	}
	assert_int_equal(sb_bmem_parse("{\"version\": 1, \"remembered\": [{\"scope\": \"once\", \"trigger\": \"read\", \"value\": \"read:/p/.env\"}]}",
				       93, &m, &err),
			 0);
	assert_int_equal(m.n, 1);
	sb_bmem_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_canonical_dedup),
		cmocka_unit_test(test_save_load),
		cmocka_unit_test(test_parse_strict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
