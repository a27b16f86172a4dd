/* Lexical normalisation and path-pattern matching with specificity. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pathpat.h"

static void test_normalize(void **state)
{
	static const struct {
		const char *in, *base, *out;
	} t[] = {
		{ "/a/b/../c", NULL, "/a/c" },   { "/../../x", NULL, "/x" },	 { "//a///b//", NULL, "/a/b" },
		{ "/./a/./b/.", NULL, "/a/b" },  { "/", NULL, "/" },		 { "/..", NULL, "/" },
		{ "x/y", "/p", "/p/x/y" },	 { "../x", "/p/q", "/p/x" },	 { "..", "/", "/" },
		{ ".", "/p", "/p" },		 { "a/../../..", "/p/q", "/" },	 { "/a/b/...", NULL, "/a/b/..." },
		{ "/a/..b/c", NULL, "/a/..b/c" },
	};
	char out[SB_PATH_MAX + 1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(sb_path_normalize(t[i].in, t[i].base, out, sizeof(out)), 0);
		if (strcmp(out, t[i].out))
			fail_msg("normalize(%s, %s) = %s, expected %s", t[i].in, t[i].base ? t[i].base : "-", out, t[i].out);
	}
	assert_int_equal(sb_path_normalize("rel", NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(sb_path_normalize("", "/p", out, sizeof(out)), -EINVAL);
	{
		char *big = malloc(SB_PATH_MAX + 10);

		memset(big, 'a', SB_PATH_MAX + 8);
		big[0] = '/';
		big[SB_PATH_MAX + 8] = '\0';
		assert_int_equal(sb_path_normalize(big, NULL, out, sizeof(out)), -ENAMETOOLONG);
		free(big);
	}
}

static int match(const char *pattern, const char *path)
{
	struct sb_pathpat p;
	struct sb_err err;
	int r;

	if (sb_pathpat_compile(pattern, "/p", "/home/u", &p, &err))
		fail_msg("compile %s: %s", pattern, err.msg);
	r = sb_pathpat_match(&p, path);
	sb_pathpat_free(&p);
	return r;
}

static void test_match(void **state)
{
	(void)state;
	assert_true(match("./**", "/p") >= 0);
	assert_true(match("./**", "/p/a/b") >= 0);
	assert_true(match("./**", "/pq") < 0);
	assert_true(match("~/.ssh/*", "/home/u/.ssh/id_rsa") >= 0);
	assert_true(match("~/.ssh/*", "/home/u/.ssh/a/b") < 0);
	assert_true(match("**/.env", "/.env") >= 0);
	assert_true(match("**/.env", "/x/.env.local") < 0);
	assert_true(match("**/*.pem", "/a/.x.pem") >= 0); /* '*' matches a leading dot */
	assert_true(match("./*.[ch]", "/p/a.c") >= 0);
	assert_true(match("./*.[ch]", "/p/a.o") < 0);
	assert_true(match("./a\\*b", "/p/a*b") >= 0);
	assert_true(match("./a\\*b", "/p/axb") < 0);
	assert_true(match("./**/**/**/x", "/p/x") >= 0);
	assert_true(match("./src/", "/p/src/deep/f") >= 0);
	assert_true(match("./a/../b", "/p/b") >= 0);
	assert_true(match("/a/**/b/**/c", "/a/b/c") >= 0);
	assert_true(match("/a/**/b/**/c", "/a/x/b/y/z/c") >= 0);
	assert_true(match("/a/**/b/**/c", "/a/x/y/z/c") < 0);
	/* specificity: deeper literal wins; full literal beats partial */
	assert_true(match("./secrets/**", "/p/secrets/k") > match("./**", "/p/secrets/k"));
	assert_true(match("~/.ssh/known_hosts", "/home/u/.ssh/known_hosts") >
		    match("~/.ssh/**", "/home/u/.ssh/known_hosts"));
	assert_true(match("**/.env", "/p/sub/.env") > match("./**", "/p/sub/.env"));
	assert_true(match("./a.txt", "/p/a.txt") > match("./*.txt", "/p/a.txt"));
	assert_true(match("./*.txt", "/p/a.txt") > match("./**", "/p/a.txt"));
	assert_int_equal(match("/**", "/x/y"), 0);
	assert_int_equal(match("**", "/x/y"), 0);
}

static void test_compile_errors(void **state)
{
	static const char *const bad[] = { "", "~bob", "/a**", "/a/**b", "/a/*/../b", "/a/*/./b" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sb_pathpat p;
		struct sb_err err = { { 0 } };

		if (sb_pathpat_compile(bad[i], "/p", "/home/u", &p, &err) == 0)
			fail_msg("'%s' was accepted", bad[i]);
		assert_true(err.msg[0] != '\0');
	}
}

/* A hostile path with thousands of components and a pattern full of '**'
 * must still match in bounded time and memory. */
static void test_hostile_sizes(void **state)
{
	char *path = malloc(SB_PATH_MAX);
	size_t i;

	(void)state;
	for (i = 0; i + 2 < SB_PATH_MAX - 1; i += 2) {
		path[i] = '/';
		path[i + 1] = 'a';
	}
	path[i] = '\0';
	assert_true(match("/**/a/**/a/**/a/**/a/**/b", path) < 0);
	assert_true(match("/**/a/**/a/**/a/**/a/**/a", path) >= 0);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_hostile_sizes),
	};

	return cmocka_run_group_tests_name("pathpat", tests, NULL, NULL);
}
