/* Policy generations (userspace/kernel/generation.c) over fake in-memory
 * maps. After every single map operation a "reader" looks at the sandbox
 * the way the BPF side does (active counter -> generation -> entries) and
 * must see one complete policy: the old one or the new one, never a mix
 * and never a gap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "compile.h"
#include "kernel/generation.h"
#include "kernel/maps_policy.h"
#include "policy.h"

#define MAX_ENTRIES 4096

struct fmap {
	size_t ksz, vsz;
	unsigned char *keys, *vals;
	size_t n;
};

struct fake {
	struct fmap m[SB_GM__COUNT];
	int ops;		/* map operations so far */
	int fail_at;		/* fail this update (0: never) */
	int settles;
	/* the reader's expectations */
	uint32_t id;
	const struct sb_kentries *old_e, *new_e;
	int checks;
};

static void fmap_init(struct fmap *m, size_t ksz, size_t vsz)
{
	m->ksz = ksz;
	m->vsz = vsz;
	m->keys = calloc(MAX_ENTRIES, ksz);
	m->vals = calloc(MAX_ENTRIES, vsz);
	m->n = 0;
}

static long fmap_find(struct fmap *m, const void *key)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!memcmp(m->keys + i * m->ksz, key, m->ksz))
			return (long)i;
	return -1;
}

static void reader_check(struct fake *f);

static int f_update(void *arg, enum sb_gmap mi, const void *key, const void *val)
{
	struct fake *f = arg;
	struct fmap *m = &f->m[mi];
	long i;

	if (++f->ops == f->fail_at)
		return -ENOSPC;
	i = fmap_find(m, key);
	if (i < 0) {
		assert_true(m->n < MAX_ENTRIES);
		i = (long)m->n++;
		memcpy(m->keys + (size_t)i * m->ksz, key, m->ksz);
	}
	memcpy(m->vals + (size_t)i * m->vsz, val, m->vsz);
	reader_check(f);
	return 0;
}

static int f_lookup(void *arg, enum sb_gmap mi, const void *key, void *val)
{
	struct fake *f = arg;
	struct fmap *m = &f->m[mi];
	long i = fmap_find(m, key);

	if (i < 0)
		return -ENOENT;
	memcpy(val, m->vals + (size_t)i * m->vsz, m->vsz);
	return 0;
}

static int f_del(void *arg, enum sb_gmap mi, const void *key)
{
	struct fake *f = arg;
	struct fmap *m = &f->m[mi];
	long i = fmap_find(m, key);

	f->ops++;
	if (i < 0)
		return -ENOENT;
	m->n--;
	memmove(m->keys + (size_t)i * m->ksz, m->keys + (size_t)(i + 1) * m->ksz, (m->n - (size_t)i) * m->ksz);
	memmove(m->vals + (size_t)i * m->vsz, m->vals + (size_t)(i + 1) * m->vsz, (m->n - (size_t)i) * m->vsz);
	reader_check(f);
	return 0;
}

static int f_next(void *arg, enum sb_gmap mi, const void *key, void *next)
{
	struct fake *f = arg;
	struct fmap *m = &f->m[mi];
	long i = key ? fmap_find(m, key) : -1;

	if ((size_t)(i + 1) >= m->n)
		return -ENOENT;
	memcpy(next, m->keys + (size_t)(i + 1) * m->ksz, m->ksz);
	return 0;
}

static void f_settle(void *arg)
{
	((struct fake *)arg)->settles++;
}

static struct sb_gops fake_ops(struct fake *f)
{
	struct sb_gops o = { f_update, f_lookup, f_del, f_next, f_settle, f };
	int i;

	for (i = 0; i < SB_GM__COUNT; i++)
		if (!f->m[i].keys)
			fmap_init(&f->m[i], sb_gmap_key_size((enum sb_gmap)i), sb_gmap_val_size((enum sb_gmap)i));
	return o;
}

static void fake_free(struct fake *f)
{
	int i;

	for (i = 0; i < SB_GM__COUNT; i++) {
		free(f->m[i].keys);
		free(f->m[i].vals);
	}
}

/* Does generation sbgen in the fake hold exactly the shell and path
 * entries of e (and its cfg)? */
static bool holds(struct fake *f, uint32_t sbgen, const struct sb_kentries *e)
{
	static const struct {
		enum sb_gmap m;
		size_t off;
	} t[] = {
		{ SB_GM_PCHILD, offsetof(struct sb_kentries, children) },
		{ SB_GM_PINODE, offsetof(struct sb_kentries, inodes) },
		{ SB_GM_SHELL, offsetof(struct sb_kentries, shell) },
	};
	struct sb_cfg cfg;
	size_t i, j, n;

	if (f_lookup(f, SB_GM_CFG, &sbgen, &cfg) || memcmp(&cfg, &e->cfg, sizeof(cfg)))
		return false;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const struct sb_kv *kv = *(struct sb_kv *const *)((const char *)e + t[i].off);
		struct fmap *m = &f->m[t[i].m];

		n = 0;
		for (j = 0; j < m->n; j++) {
			uint32_t g;

			memcpy(&g, m->keys + j * m->ksz + sb_gmap_sbgen_off(t[i].m), sizeof(g));
			n += g == sbgen;
		}
		if (n != sb_kv_count(kv))
			return false;
		for (j = 0; j < sb_kv_count(kv); j++) {
			unsigned char key[512], val[1024];

			memcpy(key, sb_kv_key(kv, j), m->ksz);
			memcpy(key + sb_gmap_sbgen_off(t[i].m), &sbgen, sizeof(sbgen));
			if (f_lookup(f, t[i].m, key, val) || memcmp(val, sb_kv_val(kv, j), m->vsz))
				return false;
		}
	}
	return true;
}

static size_t count_gen(struct fake *f, uint32_t sbgen)
{
	size_t n = 0, j;
	int m;

	for (m = SB_GM_PINODE; m < SB_GM__COUNT; m++) {
		if (m == SB_GM_PGLOB)
			continue;
		for (j = 0; j < f->m[m].n; j++) {
			uint32_t g;

			memcpy(&g, f->m[m].keys + j * f->m[m].ksz + sb_gmap_sbgen_off((enum sb_gmap)m), sizeof(g));
			n += g == sbgen;
		}
	}
	return n;
}

/* What a BPF decision would see right now. */
static void reader_check(struct fake *f)
{
	uint32_t c = 0, sbgen;

	if (!f->old_e)
		return;
	if (f_lookup(f, SB_GM_ACTIVE, &f->id, &c) || c == 0)
		fail_msg("op %d: sandbox %u has no active generation", f->ops, f->id);
	sbgen = SB_SBGEN(f->id, c);
	if (!holds(f, sbgen, f->old_e) && !(f->new_e && holds(f, sbgen, f->new_e)))
		fail_msg("op %d: active generation %u holds neither the old nor the new policy", f->ops, c);
	f->checks++;
}

static struct sb_kentries *entries_for(const char *body, struct sb_policy **pp, struct sb_compiled **cp)
{
	char json[4096];
	struct sb_policy_opts o = { .home_override = "/nonexistent/h", .root_override = "/nonexistent/p" };
	struct sb_kresolver r = { 0 };
	struct sb_kopts ko = { .anon_exec = SB_K_DENY };
	struct sb_kentries *e = NULL;
	struct sb_err err = { { 0 } };

	snprintf(json, sizeof(json), "{\"version\":1,%s}", body);
	if (sb_policy_parse(json, strlen(json), &o, pp, &err))
		fail_msg("parse: %s", err.msg);
	assert_int_equal(sb_policy_compile(*pp, cp, &err), 0);
	{
		/* Nothing exists under /nonexistent: children only. */
		struct sb_err e2 = { { 0 } };
		int rc;

		assert_int_equal(sb_kresolver_default(&r, &e2), 0);
		r.exec_dirs = NULL;
		r.sysfs = NULL;
		rc = sb_kentries_compute(*pp, *cp, &r, &ko, &e, &e2);
		sb_kresolver_cleanup(&r);
		if (rc)
			fail_msg("compute: %s", e2.msg);
	}
	return e;
}

struct two {
	struct sb_policy *p1, *p2;
	struct sb_compiled *c1, *c2;
	struct sb_kentries *e1, *e2;
};

static void two_load(struct two *t)
{
	t->e1 = entries_for("\"shell\":{\"deny\":[\"sudo*\",\"curl*\"]},\"write\":{\"deny\":[\"/etc/**\"]}", &t->p1,
			    &t->c1);
	t->e2 = entries_for("\"shell\":{\"deny\":[\"sudo*\",\"wget*\",\"git push*\"]},\"write\":{\"deny\":[\"/usr/**\"]}",
			    &t->p2, &t->c2);
}

static void two_free(struct two *t)
{
	sb_kentries_free(t->e1);
	sb_kentries_free(t->e2);
	sb_compiled_free(t->c1);
	sb_compiled_free(t->c2);
	sb_policy_free(t->p1);
	sb_policy_free(t->p2);
}

static void test_next_counter(void **state)
{
	(void)state;
	assert_int_equal(sb_gen_next(1), 2);
	assert_int_equal(sb_gen_next(2), 3);
	/* never 0 ("not active"), and the parity still alternates */
	assert_int_equal(sb_gen_next(0xffffffffu), 2);
	assert_int_equal(SB_SBGEN(5, 3), 11);
	assert_int_equal(SB_SBGEN(5, 4), 10);
}

static void test_install_then_reloads(void **state)
{
	struct fake f = { .id = 3 };
	struct sb_gops o = fake_ops(&f);
	struct two t = { 0 };
	struct sb_err err = { { 0 } };
	uint32_t counter = 0, c;
	int i;

	(void)state;
	two_load(&t);
	assert_int_equal(sb_gen_install(&o, 3, t.e1, &err), 0);
	assert_int_equal(f_lookup(&f, SB_GM_ACTIVE, &f.id, &c), 0);
	assert_int_equal(c, 1);
	assert_true(holds(&f, SB_SBGEN(3, 1), t.e1));
	/* Flip back and forth; the reader checks after every operation. */
	for (i = 0; i < 4; i++) {
		const struct sb_kentries *from = i % 2 ? t.e2 : t.e1, *to = i % 2 ? t.e1 : t.e2;

		f.old_e = from;
		f.new_e = to;
		assert_int_equal(sb_gen_reload(&o, 3, to, &counter, &err), 0);
		assert_int_equal(counter, (uint32_t)i + 2);
		assert_true(holds(&f, SB_SBGEN(3, counter), to));
		f.old_e = NULL;
		/* The old generation is gone entirely. */
		{
			struct sb_cfg cfg, zero = { 0 };
			uint32_t old = SB_SBGEN(3, counter - 1);

			assert_int_equal(f_lookup(&f, SB_GM_CFG, &old, &cfg), 0);
			assert_memory_equal(&cfg, &zero, sizeof(cfg));
			assert_int_equal(count_gen(&f, old), 0);
		}
	}
	assert_true(f.checks > 20);
	assert_int_equal(f.settles, 4);
	fake_free(&f);
	two_free(&t);
}

static void test_failed_reload_keeps_old(void **state)
{
	struct fake f = { .id = 1 };
	struct sb_gops o = fake_ops(&f);
	struct two t = { 0 };
	struct sb_err err = { { 0 } };
	uint32_t counter = 0, c;

	(void)state;
	two_load(&t);
	assert_int_equal(sb_gen_install(&o, 1, t.e1, &err), 0);
	f.old_e = t.e1;
	f.new_e = NULL;		/* the new policy must never become visible */
	f.fail_at = f.ops + 5;	/* in the middle of writing the new generation */
	assert_int_not_equal(sb_gen_reload(&o, 1, t.e2, &counter, &err), 0);
	assert_non_null(strstr(err.msg, "the old policy stays in force"));
	assert_int_equal(f_lookup(&f, SB_GM_ACTIVE, &f.id, &c), 0);
	assert_int_equal(c, 1);
	assert_true(holds(&f, SB_SBGEN(1, 1), t.e1));
	/* A later reload cleans the leftovers of the failed one. */
	f.fail_at = 0;
	f.new_e = t.e2;
	assert_int_equal(sb_gen_reload(&o, 1, t.e2, &counter, &err), 0);
	assert_true(holds(&f, SB_SBGEN(1, counter), t.e2));
	fake_free(&f);
	two_free(&t);
}

static void test_remove(void **state)
{
	struct fake f = { .id = 2 };
	struct sb_gops o = fake_ops(&f);
	struct two t = { 0 };
	struct sb_err err = { { 0 } };
	uint32_t c;
	int i;

	(void)state;
	two_load(&t);
	assert_int_equal(sb_gen_install(&o, 2, t.e1, &err), 0);
	assert_int_equal(sb_gen_remove(&o, 2, &err), 0);
	assert_int_equal(f_lookup(&f, SB_GM_ACTIVE, &f.id, &c), 0);
	assert_int_equal(c, 0);
	for (i = SB_GM_PINODE; i < SB_GM__COUNT; i++)
		if (i != SB_GM_PGLOB)
			assert_int_equal(f.m[i].n, 0);
	fake_free(&f);
	two_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_counter),
		cmocka_unit_test(test_install_then_reloads),
		cmocka_unit_test(test_failed_reload_keeps_old),
		cmocka_unit_test(test_remove),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
