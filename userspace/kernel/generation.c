#include "generation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	size_t ksz, vsz, sbgen_off;
} gmaps[SB_GM__COUNT] = {
	[SB_GM_ACTIVE] = { "sb_active", sizeof(__u32), sizeof(__u32), 0 },
	[SB_GM_CFG] = { "sb_cfg", sizeof(__u32), sizeof(struct sb_cfg), 0 },
	[SB_GM_PINODE] = { "sb_pinode", sizeof(struct sb_inode_key), sizeof(struct sb_pval), 0 },
	[SB_GM_PCHILD] = { "sb_pchild", sizeof(struct sb_child_key), sizeof(struct sb_pval), 0 },
	[SB_GM_PCHAIN] = { "sb_pchain", sizeof(struct sb_child_key), sizeof(struct sb_chain), 0 },
	[SB_GM_PNAME] = { "sb_pname", sizeof(struct sb_name_key), sizeof(struct sb_pval), 0 },
	[SB_GM_LONGNAME] = { "sb_longname", sizeof(struct sb_child_key), sizeof(struct sb_longname), 0 },
	[SB_GM_PGLOB] = { "sb_pglob", sizeof(__u32), sizeof(struct sb_glob), 0 },
	[SB_GM_SHELL] = { "sb_shell", sizeof(struct sb_shell_key), sizeof(struct sb_shell_val), 0 },
	[SB_GM_XINODE] = { "sb_xinode", sizeof(struct sb_inode_key), sizeof(struct sb_xinode_val), 0 },
	[SB_GM_NET4] = { "sb_net4", sizeof(struct sb_net4_key), sizeof(struct sb_net_val),
			 offsetof(struct sb_net4_key, sbgen) },
	[SB_GM_NET6] = { "sb_net6", sizeof(struct sb_net6_key), sizeof(struct sb_net_val),
			 offsetof(struct sb_net6_key, sbgen) },
};

size_t sb_gmap_key_size(enum sb_gmap m)
{
	return gmaps[m].ksz;
}

size_t sb_gmap_val_size(enum sb_gmap m)
{
	return gmaps[m].vsz;
}

size_t sb_gmap_sbgen_off(enum sb_gmap m)
{
	return gmaps[m].sbgen_off;
}

const char *sb_gmap_name(enum sb_gmap m)
{
	return gmaps[m].name;
}

uint32_t sb_gen_next(uint32_t c)
{
	return c + 1 ? c + 1 : 2;	/* skip 0; keep parity alternating */
}

/* Writes every entry of kv into map m with sbgen in its key. */
static int put_all(const struct sb_gops *o, enum sb_gmap m, const struct sb_kv *kv, uint32_t sbgen,
		   struct sb_err *err)
{
	unsigned char key[512];
	size_t i, ksz = gmaps[m].ksz;
	int rc;

	for (i = 0; i < sb_kv_count(kv); i++) {
		memcpy(key, sb_kv_key(kv, i), ksz);
		memcpy(key + gmaps[m].sbgen_off, &sbgen, sizeof(sbgen));
		rc = o->update(o->arg, m, key, sb_kv_val(kv, i));
		if (rc)
			return sb_errf(err, rc,
				       "cannot write the policy into %s (%zu entries): %s; a policy this large needs fewer path or shell rules",
				       gmaps[m].name, sb_kv_count(kv), strerror(-rc));
	}
	return 0;
}

int sb_gen_write(const struct sb_gops *o, uint32_t sbgen, const struct sb_kentries *e, struct sb_err *err)
{
	static const struct {
		enum sb_gmap m;
		size_t off;
	} tables[] = {
		{ SB_GM_LONGNAME, offsetof(struct sb_kentries, longnames) },
		{ SB_GM_PCHAIN, offsetof(struct sb_kentries, chains) },
		{ SB_GM_PINODE, offsetof(struct sb_kentries, inodes) },
		{ SB_GM_PCHILD, offsetof(struct sb_kentries, children) },
		{ SB_GM_PNAME, offsetof(struct sb_kentries, names) },
		{ SB_GM_SHELL, offsetof(struct sb_kentries, shell) },
		{ SB_GM_XINODE, offsetof(struct sb_kentries, xinodes) },
		{ SB_GM_NET4, offsetof(struct sb_kentries, net4) },
		{ SB_GM_NET6, offsetof(struct sb_kentries, net6) },
	};
	size_t i;
	int rc;

	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		const struct sb_kv *kv = *(struct sb_kv *const *)((const char *)e + tables[i].off);

		rc = put_all(o, tables[i].m, kv, sbgen, err);
		if (rc)
			return rc;
	}
	for (i = 0; i < SB_GLOBS_MAX; i++) {
		__u32 idx = sbgen * SB_GLOBS_MAX + (__u32)i;
		struct sb_glob zero = { 0 };

		rc = o->update(o->arg, SB_GM_PGLOB, &idx, i < e->nglobs ? &e->globs[i] : &zero);
		if (rc)
			return sb_errf(err, rc, "cannot write sb_pglob: %s", strerror(-rc));
	}
	/* cfg last: it says how many globs and which prefix lengths exist. */
	rc = o->update(o->arg, SB_GM_CFG, &sbgen, &e->cfg);
	if (rc)
		return sb_errf(err, rc, "cannot write sb_cfg: %s", strerror(-rc));
	return 0;
}

/* Deletes every key of map m whose sbgen matches (collected first: a
 * deletion during iteration would restart it). */
static int del_matching(const struct sb_gops *o, enum sb_gmap m, uint32_t sbgen, struct sb_err *err)
{
	size_t ksz = gmaps[m].ksz, n = 0, cap = 0, i;
	unsigned char cur[512], next[512], *keys = NULL;
	bool first = true;
	int rc = 0;

	for (;;) {
		uint32_t g;

		rc = o->next_key(o->arg, m, first ? NULL : cur, next);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (rc)
			break;
		first = false;
		memcpy(cur, next, ksz);
		memcpy(&g, next + gmaps[m].sbgen_off, sizeof(g));
		if (g != sbgen)
			continue;
		if (n == cap) {
			unsigned char *nk = realloc(keys, (cap ? cap * 2 : 64) * ksz);

			if (!nk) {
				rc = -ENOMEM;
				break;
			}
			keys = nk;
			cap = cap ? cap * 2 : 64;
		}
		memcpy(keys + n * ksz, next, ksz);
		n++;
	}
	for (i = 0; !rc && i < n; i++) {
		rc = o->del(o->arg, m, keys + i * ksz);
		if (rc == -ENOENT)
			rc = 0;
	}
	free(keys);
	if (rc)
		return sb_errf(err, rc, "cannot clear %s: %s", gmaps[m].name, strerror(-rc));
	return 0;
}

int sb_gen_delete(const struct sb_gops *o, uint32_t sbgen, struct sb_err *err)
{
	static const enum sb_gmap hashes[] = { SB_GM_PINODE, SB_GM_PCHILD, SB_GM_PCHAIN,  SB_GM_PNAME, SB_GM_LONGNAME,
					       SB_GM_SHELL,  SB_GM_XINODE, SB_GM_NET4, SB_GM_NET6 };
	struct sb_cfg zcfg = { 0 };
	struct sb_glob zglob = { 0 };
	size_t i;
	int rc;

	/* cfg first: a stale reader then sees no globs and no shell rules. */
	rc = o->update(o->arg, SB_GM_CFG, &sbgen, &zcfg);
	if (rc)
		return sb_errf(err, rc, "cannot clear sb_cfg: %s", strerror(-rc));
	for (i = 0; i < SB_GLOBS_MAX; i++) {
		__u32 idx = sbgen * SB_GLOBS_MAX + (__u32)i;

		rc = o->update(o->arg, SB_GM_PGLOB, &idx, &zglob);
		if (rc)
			return sb_errf(err, rc, "cannot clear sb_pglob: %s", strerror(-rc));
	}
	for (i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
		rc = del_matching(o, hashes[i], sbgen, err);
		if (rc)
			return rc;
	}
	return 0;
}

int sb_gen_install(const struct sb_gops *o, uint32_t id, const struct sb_kentries *e, struct sb_err *err)
{
	uint32_t counter = 1;
	int rc;

	rc = sb_gen_delete(o, SB_SBGEN(id, 0), err);
	if (!rc)
		rc = sb_gen_delete(o, SB_SBGEN(id, 1), err);
	if (!rc)
		rc = sb_gen_write(o, SB_SBGEN(id, counter), e, err);
	if (rc)
		return rc;
	rc = o->update(o->arg, SB_GM_ACTIVE, &id, &counter);
	if (rc)
		return sb_errf(err, rc, "cannot activate sandbox %u: %s", id, strerror(-rc));
	return 0;
}

int sb_gen_reload(const struct sb_gops *o, uint32_t id, const struct sb_kentries *e, uint32_t *counter,
		  struct sb_err *err)
{
	uint32_t cur = 0, next;
	int rc;

	rc = o->lookup(o->arg, SB_GM_ACTIVE, &id, &cur);
	if (rc || cur == 0)
		return sb_errf(err, rc ? rc : -ENOENT, "sandbox %u is not active", id);
	next = sb_gen_next(cur);
	/* Leftovers of an interrupted reload in the target generation. */
	rc = sb_gen_delete(o, SB_SBGEN(id, next), err);
	if (!rc)
		rc = sb_gen_write(o, SB_SBGEN(id, next), e, err);
	if (rc) {
		sb_err_prefix(err, "policy reload of sandbox %u failed before the switch (the old policy stays in force): ",
			      id);
		return rc;
	}
	/* The switch: one map update. */
	rc = o->update(o->arg, SB_GM_ACTIVE, &id, &next);
	if (rc)
		return sb_errf(err, rc, "cannot switch sandbox %u to the new policy (the old policy stays in force): %s",
			       id, strerror(-rc));
	if (o->settle)
		o->settle(o->arg);
	rc = sb_gen_delete(o, SB_SBGEN(id, cur), err);
	if (rc)
		sb_err_prefix(err, "the new policy is in force, but removing the old one failed: ");
	*counter = next;
	return rc;
}

int sb_gen_remove(const struct sb_gops *o, uint32_t id, struct sb_err *err)
{
	uint32_t zero = 0;
	int rc;

	rc = o->update(o->arg, SB_GM_ACTIVE, &id, &zero);
	if (rc)
		return sb_errf(err, rc, "cannot deactivate sandbox %u: %s", id, strerror(-rc));
	if (o->settle)
		o->settle(o->arg);
	rc = sb_gen_delete(o, SB_SBGEN(id, 0), err);
	if (!rc)
		rc = sb_gen_delete(o, SB_SBGEN(id, 1), err);
	return rc;
}
