/* Helpers for the broker tests: a throw-away folder, files in it, a
 * policy from JSON. */
#ifndef SB_BROKER_TEST_UTIL_H
#define SB_BROKER_TEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "policy.h"

#define BT_UNUSED __attribute__((unused))

static int bt_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static BT_UNUSED void bt_rm_rf(const char *dir)
{
	nftw(dir, bt_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static BT_UNUSED void bt_tmpdir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/sbb-test-XXXXXX");
	assert_non_null(mkdtemp(out));
}

/* bt_write(dir, "rel/path", "fmt", ...): creates parents too. */
static BT_UNUSED void bt_write(const char *dir, const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX], *slash;
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static BT_UNUSED char *bt_read(const char *dir, const char *rel)
{
	char path[PATH_MAX], *buf = malloc(1 << 20);
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	if (!f) {
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static BT_UNUSED struct sb_policy *bt_policy(const char *json)
{
	struct sb_policy_opts o = { .home_override = "/home/u", .source_name = "test" };
	struct sb_err err = { { 0 } };
	struct sb_policy *p = NULL;

	if (sb_policy_parse(json, strlen(json), &o, &p, &err))
		fail_msg("policy: %s", err.msg);
	return p;
}

#endif
