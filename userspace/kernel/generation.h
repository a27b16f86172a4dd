/* Policy generations of one sandbox, over an abstract set of maps so the
 * ordering can be tested without a kernel (tests/test_generation.c):
 *
 *   write(new gen) -> cfg(new gen) -> flip active counter -> delete(old gen)
 *
 * Keys carry sbgen = id << 1 | gen; the BPF side reads the counter once
 * per decision and re-checks it at the end, so a decision never mixes
 * generations and no moment exists where an old rule is gone and the new
 * one is not in place. */
#ifndef SB_GENERATION_H
#define SB_GENERATION_H

#include <linux/types.h>
#include <stdint.h>

#include "maps_policy.h"
#include "sandbox.h"
#include "sb_err.h"

/* The maps a generation lives in (plus the control maps). */
enum sb_gmap {
	SB_GM_ACTIVE = 0,	/* u32 id -> u32 counter */
	SB_GM_CFG,		/* u32 sbgen -> sb_cfg */
	SB_GM_PINODE,
	SB_GM_PCHILD,
	SB_GM_PCHAIN,
	SB_GM_PNAME,
	SB_GM_LONGNAME,
	SB_GM_PGLOB,		/* u32 sbgen * SB_GLOBS_MAX + i -> sb_glob */
	SB_GM_SHELL,
	SB_GM_XINODE,
	SB_GM_NET4,
	SB_GM_NET6,
	SB_GM__COUNT
};

struct sb_gops {
	int (*update)(void *arg, enum sb_gmap m, const void *key, const void *val);
	int (*lookup)(void *arg, enum sb_gmap m, const void *key, void *val);
	int (*del)(void *arg, enum sb_gmap m, const void *key);
	/* next key after key (NULL: first); -ENOENT at the end */
	int (*next_key)(void *arg, enum sb_gmap m, const void *key, void *next);
	/* called between the flip and the deletion of the old generation */
	void (*settle)(void *arg);
	void *arg;
};

size_t sb_gmap_key_size(enum sb_gmap m);
size_t sb_gmap_val_size(enum sb_gmap m);
/* Offset of the sbgen field in the map's key (hash and LPM maps). */
size_t sb_gmap_sbgen_off(enum sb_gmap m);
const char *sb_gmap_name(enum sb_gmap m);

/* Counter after c: never 0 (0 means "not active"). */
uint32_t sb_gen_next(uint32_t c);

int sb_gen_write(const struct sb_gops *o, uint32_t sbgen, const struct sb_kentries *e, struct sb_err *err);
int sb_gen_delete(const struct sb_gops *o, uint32_t sbgen, struct sb_err *err);

/* First policy of a sandbox: generation of counter 1, then active = 1. */
int sb_gen_install(const struct sb_gops *o, uint32_t id, const struct sb_kentries *e, struct sb_err *err);
/* Reload: the sequence above; *counter gets the new counter. */
int sb_gen_reload(const struct sb_gops *o, uint32_t id, const struct sb_kentries *e, uint32_t *counter,
		  struct sb_err *err);
/* Removal: active = 0, then both generations deleted. */
int sb_gen_remove(const struct sb_gops *o, uint32_t id, struct sb_err *err);

#endif
