/* The canonical encoding and the chain hash, against values computed by
 * an independent implementation (a few lines of Python: JCS key order by
 * UTF-16 code units, SHA-256), so the format in docs/audit.md is pinned
 * and a third party's verifier agrees with ours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "audit_testutil.h"

static char *canon_of(const char *json, int *rc)
{
	struct sb_err err = { { 0 } };
	cJSON *v = cJSON_Parse(json);
	char *out = NULL;

	assert_non_null(v);
	*rc = sb_audit_canon(v, &out, NULL, &err);
	cJSON_Delete(v);
	return out;
}

static const char vector_in[] =
	"{ \"kind\": \"decision\", \"origin\": \"kernel\", \"sandbox\": \"proj\", \"seq\": 1,\n"
	"  \"time\": \"2025-06-01T12:00:00.000000000Z\", \"trigger\": \"shell\", \"decision\": \"deny\",\n"
	"  \"command\": \"git push\", \"pid\": 4242.0, \"argv\": [\"git\", \"push\"],\n"
	"  \"note\": \"\\u00e9\\n\\u0001\\\"\\\\\\/\", \"z\": {\"b\": 1, \"a\": [true, false, null]},\n"
	"  \"\\ue000\": 1, \"\\ud83d\\ude00\": 2, \"neg\": -9007199254740991 }";

static const char vector_canon[] =
	"{\"argv\":[\"git\",\"push\"],\"command\":\"git push\",\"decision\":\"deny\",\"kind\":\"decision\","
	"\"neg\":-9007199254740991,\"note\":\"\xc3\xa9\\n\\u0001\\\"\\\\/\",\"origin\":\"kernel\",\"pid\":4242,"
	"\"sandbox\":\"proj\",\"seq\":1,\"time\":\"2025-06-01T12:00:00.000000000Z\",\"trigger\":\"shell\","
	"\"z\":{\"a\":[true,false,null],\"b\":1},\"\xf0\x9f\x98\x80\":2,\"\xee\x80\x80\":1}";

static void test_canonical_vector(void **state)
{
	int rc;
	char *out = canon_of(vector_in, &rc);

	(void)state;
	assert_int_equal(rc, 0);
	assert_string_equal(out, vector_canon);
	free(out);
}

static void test_hash_vector(void **state)
{
	static const uint8_t zero[SB_AUDIT_HASH_LEN];
	struct sb_err err = { { 0 } };
	uint8_t h[SB_AUDIT_HASH_LEN];
	char hex[SB_AUDIT_HEX_LEN];
	cJSON *v = cJSON_Parse(vector_in);

	(void)state;
	assert_int_equal(sb_audit_body_digest(v, hex, &err), 0);
	assert_string_equal(hex, "59fbfa67f5c611818a923978ccb2dd1a84668d10dbe14983b5dc20fbad6286f1");
	assert_int_equal(sb_audit_chain_hash(zero, v, false, h, &err), 0);
	sb_audit_hex(h, sizeof(h), hex);
	assert_string_equal(hex, "885386ac278f6042664192571b08f4de637110c892f12d03964b468483491774");
	cJSON_Delete(v);
}

/* An elided record (envelope + body_digest) hashes the same as the full one. */
static void test_elided_hash_equal(void **state)
{
	static const uint8_t prev[SB_AUDIT_HASH_LEN] = { 1, 2, 3 };
	struct sb_err err = { { 0 } };
	uint8_t h1[SB_AUDIT_HASH_LEN], h2[SB_AUDIT_HASH_LEN];
	cJSON *v = cJSON_Parse(vector_in), *env;

	(void)state;
	env = sb_audit_envelope(v, &err);
	assert_non_null(env);
	assert_int_equal(sb_audit_chain_hash(prev, v, false, h1, &err), 0);
	assert_int_equal(sb_audit_chain_hash(prev, env, true, h2, &err), 0);
	assert_memory_equal(h1, h2, sizeof(h1));
	cJSON_Delete(v);
	cJSON_Delete(env);
}

static void test_canonical_rejects(void **state)
{
	static const char *const bad[] = {
		"{\"a\":1.5}",			/* not an integer */
		"{\"a\":9007199254740992}",	/* beyond 2^53-1 */
		"{\"a\":-9007199254740993}",
		"{\"a\":1e400}",		/* infinity */
		"{\"a\":1,\"a\":2}",		/* duplicate key */
		"{\"a\":\"\xff\"}",		/* invalid UTF-8 */
		"{\"a\":\"\xc0\xaf\"}",		/* overlong */
		"{\"a\":\"\xed\xa0\x80\"}",	/* UTF-8-encoded surrogate */
		"{\"\xf5\x80\x80\x80\":1}",	/* beyond U+10FFFF, in a key */
	};
	char deep[2 * (SB_AUDIT_DEPTH_MAX + 2) + 2];
	size_t i;
	int rc;
	char *out;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = canon_of(bad[i], &rc);
		if (rc != -EINVAL)
			fail_msg("accepted %s as %s", bad[i], out ? out : "?");
		free(out);
	}
	/* Nesting: the limit is accepted, one more level is not. */
	for (i = 0; i <= SB_AUDIT_DEPTH_MAX; i++)
		deep[i] = '[';
	deep[i] = '\0';
	for (i = 0; i <= SB_AUDIT_DEPTH_MAX; i++)
		strcat(deep, "]");
	out = canon_of(deep, &rc);
	assert_int_equal(rc, 0);
	free(out);
	memmove(deep + 1, deep, strlen(deep) + 1);
	strcat(deep, "]");
	out = canon_of(deep, &rc);
	assert_int_equal(rc, -EINVAL);
	free(out);
}

static void test_canonical_numbers(void **state)
{
	int rc;
	char *out = canon_of("[-0, 0.0, 1E2, 9007199254740991, -1, 100.0]", &rc);

	(void)state;
	assert_int_equal(rc, 0);
	assert_string_equal(out, "[0,0,100,9007199254740991,-1,100]");
	free(out);
}

static void test_record_check(void **state)
{
	static const char *const bad[] = {
		"[]",
		"{\"origin\":\"kernel\",\"sandbox\":\"p\"}",				/* no kind */
		"{\"kind\":\"decision\",\"sandbox\":\"p\"}",				/* no origin */
		"{\"kind\":\"decision\",\"origin\":\"nobody\",\"sandbox\":\"p\"}",	/* unknown origin */
		"{\"kind\":\"decision\",\"origin\":\"kernel\"}",			/* no sandbox */
		"{\"kind\":\"made_up\",\"origin\":\"kernel\",\"sandbox\":\"p\"}",	/* unknown kind */
		"{\"kind\":\"seal\",\"origin\":\"external\",\"sandbox\":\"p\"}",	/* reserved kind */
		"{\"kind\":\"Bad Kind\",\"origin\":\"external\",\"sandbox\":\"p\"}",
		"{\"kind\":\"decision\",\"origin\":\"kernel\",\"sandbox\":\"p\",\"seq\":3}",
		"{\"kind\":\"decision\",\"origin\":\"kernel\",\"sandbox\":\"p\",\"time\":\"x\"}",
		"{\"kind\":\"decision\",\"origin\":\"kernel\",\"sandbox\":\"p\",\"hash\":\"x\"}",
		"{\"kind\":\"decision\",\"origin\":\"kernel\",\"sandbox\":\"p\",\"body_digest\":\"x\"}",
		"{\"kind\":\"decision\",\"origin\":\"kernel\",\"sandbox\":\"p\",\"x\":0.5}",
	};
	struct sb_err err = { { 0 } };
	cJSON *v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = cJSON_Parse(bad[i]);
		assert_non_null(v);
		if (sb_audit_record_check(v, &err) == 0)
			fail_msg("accepted %s", bad[i]);
		cJSON_Delete(v);
	}
	v = cJSON_Parse("{\"kind\":\"ci_step\",\"origin\":\"external\",\"sandbox\":\"\",\"step\":\"deploy\"}");
	assert_int_equal(sb_audit_record_check(v, &err), 0);
	cJSON_Delete(v);
}

/* Text escaping: bytes that are not UTF-8 as \xNN, backslash doubled, so
 * the result is valid UTF-8 and unambiguous. */
static void test_escape(void **state)
{
	static const char *const cases[][2] = {
		{ "/tmp/\xff", "/tmp/\\xff" },
		{ "/tmp/\\xff", "/tmp/\\\\xff" },			/* a real backslash */
		{ "\xc0\xaf", "\\xc0\\xaf" },				/* overlong */
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },			/* surrogate */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" },		/* above U+10FFFF */
		{ "a\xe2\x82", "a\\xe2\\x82" },				/* cut at the end */
		{ "\xe2\x82\xac \xc3\xa9\x80", "\xe2\x82\xac \xc3\xa9\\x80" },
	};
	struct sb_err err = { { 0 } };
	char *out, *canon;
	size_t i, len;
	cJSON *v;

	(void)state;
	assert_int_equal(sb_audit_escape("plain /p \xc3\xa9", &out), 0);
	assert_null(out);	/* unchanged */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(sb_audit_escape(cases[i][0], &out), 0);
		assert_non_null(out);
		assert_string_equal(out, cases[i][1]);
		v = cJSON_CreateString(out);
		assert_int_equal(sb_audit_canon(v, &canon, &len, &err), 0);
		free(canon);
		cJSON_Delete(v);
		free(out);
	}
}

static void test_time_parse(void **state)
{
	struct sb_err err = { { 0 } };
	char out[SB_AUDIT_TIME_LEN], now[SB_AUDIT_TIME_LEN];

	(void)state;
	assert_int_equal(sb_audit_time_parse("2025-06-01T12:00:00Z", out, &err), 0);
	assert_string_equal(out, "2025-06-01T12:00:00.000000000Z");
	assert_int_equal(sb_audit_time_parse("2025-06-01T14:30:00.5+02:30", out, &err), 0);
	assert_string_equal(out, "2025-06-01T12:00:00.500000000Z");
	assert_int_equal(sb_audit_time_parse("2025-06-01", out, &err), 0);
	assert_string_equal(out, "2025-06-01T00:00:00.000000000Z");
	assert_int_equal(sb_audit_time_parse("2h", out, &err), 0);
	sb_audit_time_now(now);
	assert_true(strcmp(out, now) < 0);
	assert_true(sb_audit_time_valid(out));
	assert_int_not_equal(sb_audit_time_parse("yesterday", out, &err), 0);
	assert_int_not_equal(sb_audit_time_parse("2025-13-01", out, &err), 0);
	assert_int_not_equal(sb_audit_time_parse("2025-06-01T12:00:00", out, &err), 0);	/* no zone */
	assert_int_not_equal(sb_audit_time_parse("5x", out, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical_vector),  cmocka_unit_test(test_hash_vector),
		cmocka_unit_test(test_elided_hash_equal), cmocka_unit_test(test_canonical_rejects),
		cmocka_unit_test(test_canonical_numbers), cmocka_unit_test(test_record_check),
		cmocka_unit_test(test_time_parse),	  cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests_name("audit_canon", tests, NULL, NULL);
}
