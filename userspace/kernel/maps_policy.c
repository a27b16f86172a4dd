#include "maps_policy.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathpat.h"
#include "scope.h"
#include "shellpat.h"

#define GLOB_BUDGET_DEFAULT 20000
#define XINODE_MAX 65536

/* ---- keyed vector: dedup by key bytes, values merged in place ---------- */

struct sb_kv {
	size_t ksz, vsz;
	unsigned char *keys, *vals;
	size_t n, cap;
	size_t *ht;		/* open addressing: index + 1, 0 = empty */
	size_t htcap;
};

static struct sb_kv *kv_new(size_t ksz, size_t vsz)
{
	struct sb_kv *kv = calloc(1, sizeof(*kv));

	if (kv) {
		kv->ksz = ksz;
		kv->vsz = vsz;
	}
	return kv;
}

static void kv_free(struct sb_kv *kv)
{
	if (!kv)
		return;
	free(kv->keys);
	free(kv->vals);
	free(kv->ht);
	free(kv);
}

static uint64_t kv_hash(const void *k, size_t n)
{
	const unsigned char *p = k;
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static int kv_rehash(struct sb_kv *kv, size_t cap)
{
	size_t *ht = calloc(cap, sizeof(*ht)), i;

	if (!ht)
		return -ENOMEM;
	for (i = 0; i < kv->n; i++) {
		size_t h = kv_hash(kv->keys + i * kv->ksz, kv->ksz) & (cap - 1);

		while (ht[h])
			h = (h + 1) & (cap - 1);
		ht[h] = i + 1;
	}
	free(kv->ht);
	kv->ht = ht;
	kv->htcap = cap;
	return 0;
}

/* The value for key, created (and *created set) when absent. The pointer
 * is valid until the next insertion. */
static void *kv_get(struct sb_kv *kv, const void *key, bool *created)
{
	size_t h;

	*created = false;
	if ((kv->n + 1) * 2 > kv->htcap && kv_rehash(kv, kv->htcap ? kv->htcap * 2 : 64))
		return NULL;
	h = kv_hash(key, kv->ksz) & (kv->htcap - 1);
	while (kv->ht[h]) {
		size_t i = kv->ht[h] - 1;

		if (!memcmp(kv->keys + i * kv->ksz, key, kv->ksz))
			return kv->vals + i * kv->vsz;
		h = (h + 1) & (kv->htcap - 1);
	}
	if (kv->n == kv->cap) {
		size_t nc = kv->cap ? kv->cap * 2 : 16;
		unsigned char *nk = realloc(kv->keys, nc * kv->ksz), *nv;

		if (!nk)
			return NULL;
		kv->keys = nk;
		nv = realloc(kv->vals, nc * kv->vsz);
		if (!nv)
			return NULL;
		kv->vals = nv;
		kv->cap = nc;
	}
	memcpy(kv->keys + kv->n * kv->ksz, key, kv->ksz);
	memset(kv->vals + kv->n * kv->vsz, 0, kv->vsz);
	kv->ht[h] = kv->n + 1;
	kv->n++;
	*created = true;
	return kv->vals + (kv->n - 1) * kv->vsz;
}

size_t sb_kv_count(const struct sb_kv *kv)
{
	return kv ? kv->n : 0;
}

const void *sb_kv_key(const struct sb_kv *kv, size_t i)
{
	return kv->keys + i * kv->ksz;
}

const void *sb_kv_val(const struct sb_kv *kv, size_t i)
{
	return kv->vals + i * kv->vsz;
}

const void *sb_kv_find(const struct sb_kv *kv, const void *key)
{
	size_t h;

	if (!kv || !kv->htcap)
		return NULL;
	h = kv_hash(key, kv->ksz) & (kv->htcap - 1);
	while (kv->ht[h]) {
		size_t i = kv->ht[h] - 1;

		if (!memcmp(kv->keys + i * kv->ksz, key, kv->ksz))
			return kv->vals + i * kv->vsz;
		h = (h + 1) & (kv->htcap - 1);
	}
	return NULL;
}

/* ---- keys -------------------------------------------------------------- */

void sb_kname_key(struct sb_name_key *k, const char *name)
{
	size_t l = strlen(name);

	memset(k, 0, sizeof(*k));
	k->len = (uint16_t)l;
	memcpy(k->name, name, l < SB_NAME_KEY ? l : SB_NAME_KEY);
}

void sb_kchild_key(struct sb_child_key *k, uint32_t dev, uint64_t ino, const char *name, uint8_t kind)
{
	size_t l = strlen(name);

	memset(k, 0, sizeof(*k));
	k->dev = dev;
	k->ino = ino;
	k->len = (uint16_t)l;
	k->kind = kind;
	memcpy(k->name, name, l < SB_NAME_KEY ? l : SB_NAME_KEY);
}

void sb_kshell_key(struct sb_shell_key *k, uint8_t kind, const char *text, size_t len)
{
	memset(k, 0, sizeof(*k));
	k->kind = kind;
	k->len = (uint16_t)len;
	memcpy(k->text, text, len < SB_CMD_KEY ? len : SB_CMD_KEY);
}

/* ---- building state ---------------------------------------------------- */

struct build {
	const struct sb_policy *p;
	const struct sb_compiled *c;
	const struct sb_kresolver *r;
	struct sb_kentries *e;
	struct sb_err *err;
};

static int note(struct build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note(struct build *b, const char *fmt, ...)
{
	struct sb_kentries *e = b->e;
	char **nn, *s;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	nn = realloc(e->notes, (e->nnotes + 1) * sizeof(*nn));
	if (!nn) {
		free(s);
		return -ENOMEM;
	}
	e->notes = nn;
	e->notes[e->nnotes++] = s;
	return 0;
}

static void pval_init(struct sb_pval *v)
{
	int t, pl;

	memset(v, 0, sizeof(*v));
	for (t = 0; t < 2; t++)
		for (pl = 0; pl < SB_PL_COUNT; pl++)
			v->slot[t][pl].tier = SB_K_NONE;
}

/* More specific wins; equal specificity goes to the stricter tier. */
static void slot_merge(struct sb_slot *s, uint16_t spec, uint8_t tier, uint32_t rule)
{
	if (s->tier == SB_K_NONE || spec > s->spec || (spec == s->spec && tier > s->tier)) {
		s->spec = spec;
		s->tier = tier;
		s->rule = rule;
	}
}

/* What one rule contributes to an entry. */
struct contrib {
	int trig;		/* SB_PT_WRITE, SB_PT_READ, or -1 for none */
	int pl;			/* SB_PL_* */
	uint16_t spec;
	uint8_t tier;
	uint32_t rule;
	bool prot_anc;		/* SB_PV_PROT_ANCESTOR with rule */
};

static void pval_apply(struct sb_pval *v, const struct contrib *c)
{
	if (c->trig >= 0)
		slot_merge(&v->slot[c->trig][c->pl], c->spec, c->tier, c->rule);
	if (c->prot_anc && !(v->flags & SB_PV_PROT_ANCESTOR)) {
		v->flags |= SB_PV_PROT_ANCESTOR;
		v->prot_rule = c->rule;
	}
}

static int add_longname(struct build *b, const struct sb_child_key *k, const char *name)
{
	struct sb_longname *ln;
	bool created;

	ln = kv_get(b->e->longnames, k, &created);
	if (!ln)
		return -ENOMEM;
	snprintf(ln->name, sizeof(ln->name), "%s", name);
	return 0;
}

static int add_inode(struct build *b, const struct sb_kstat *st, const struct contrib *c)
{
	struct sb_inode_key k = { .dev = st->kdev, .ino = st->ino };
	struct sb_pval *v;
	bool created;

	v = kv_get(b->e->inodes, &k, &created);
	if (!v)
		return -ENOMEM;
	if (created)
		pval_init(v);
	pval_apply(v, c);
	return 0;
}

static int add_child(struct build *b, const struct sb_kstat *parent, const char *name, const struct contrib *c)
{
	struct sb_child_key k;
	struct sb_pval *v;
	bool created;

	sb_kchild_key(&k, parent->kdev, parent->ino, name, 0);
	v = kv_get(b->e->children, &k, &created);
	if (!v)
		return -ENOMEM;
	if (created)
		pval_init(v);
	pval_apply(v, c);
	if (strlen(name) > SB_NAME_KEY) {
		v->flags |= SB_PV_LONGNAME;
		return add_longname(b, &k, name);
	}
	return 0;
}

/* A chain: key (ancestor, first missing name), the other missing names
 * in order. Identical chains share an entry; at most SB_CHAINS_PER_KEY
 * per key (-ENOSPC otherwise, the caller over-approximates). */
static int add_chain(struct build *b, const struct sb_kstat *anc, const char *first, char *const *rest, size_t nrest,
		     const struct contrib *c)
{
	struct sb_child_key base, k;
	struct sb_pval *pv;
	struct sb_chain *ch = NULL;
	bool created;
	int kind, i;

	sb_kchild_key(&base, anc->kdev, anc->ino, first, 0);
	pv = kv_get(b->e->children, &base, &created);
	if (!pv)
		return -ENOMEM;
	if (created)
		pval_init(pv);
	if (strlen(first) > SB_NAME_KEY) {
		pv->flags |= SB_PV_LONGNAME;
		if (add_longname(b, &base, first))
			return -ENOMEM;
		pv = (struct sb_pval *)sb_kv_find(b->e->children, &base);
	}
	for (kind = 1; kind <= pv->nchains; kind++) {
		struct sb_chain *x;

		k = base;
		k.kind = (uint8_t)kind;
		x = (struct sb_chain *)sb_kv_find(b->e->chains, &k);
		if (!x || x->ncomps != nrest)
			continue;
		for (i = 0; i < (int)nrest; i++)
			if (x->lens[i] != strlen(rest[i]) || strncmp(x->names[i], rest[i], SB_NAME_KEY))
				break;
		if (i == (int)nrest) {
			ch = x;
			break;
		}
	}
	if (!ch) {
		if (pv->nchains >= SB_CHAINS_PER_KEY)
			return -ENOSPC;
		pv->nchains++;
		k = base;
		k.kind = pv->nchains;
		ch = kv_get(b->e->chains, &k, &created);
		if (!ch)
			return -ENOMEM;
		memset(ch, 0, sizeof(*ch));
		pval_init(&ch->val);
		ch->ncomps = (uint8_t)nrest;
		for (i = 0; i < (int)nrest; i++) {
			ch->lens[i] = (uint16_t)strlen(rest[i]);
			memcpy(ch->names[i], rest[i], ch->lens[i]);
		}
	}
	pval_apply(&ch->val, c);
	return 0;
}

/* Splits an absolute normalised path into components (in place copy). */
static size_t split_path(const char *path, char *buf, size_t buflen, char **comps, size_t max)
{
	size_t n = 0;
	char *p, *save;

	snprintf(buf, buflen, "%s", path);
	for (p = strtok_r(buf, "/", &save); p && n < max; p = strtok_r(NULL, "/", &save))
		comps[n++] = p;
	return n;
}

static void join_path(char *out, size_t len, char *const *comps, size_t n)
{
	size_t i, o = 0;

	out[0] = '/';
	out[1] = '\0';
	for (i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "/%s", comps[i]);
	if (n == 0)
		snprintf(out, len, "/");
}

/* Entries for one absolute path (existing or not). A rule that cannot be
 * represented exactly is over-approximated when it denies or escalates
 * (never under-denied) and dropped with a note when it allows. */
static int add_path(struct build *b, const char *path, const struct contrib *c, const char *pattern)
{
	char buf[SB_PATH_MAX + 1], dir[SB_PATH_MAX + 1];
	char *comps[SB_PATH_MAX / 2];
	struct sb_kstat st, anc;
	size_t n, a, nrest;
	int rc;

	rc = b->r->stat(b->r->arg, path, &st);
	if (rc == 0) {
		rc = add_inode(b, &st, c);
		if (rc)
			return rc;
	}
	n = split_path(path, buf, sizeof(buf), comps, sizeof(comps) / sizeof(comps[0]));
	if (n == 0)
		return 0;
	/* Nearest existing ancestor: comps[0..a). */
	for (a = n - 1;; a--) {
		join_path(dir, sizeof(dir), comps, a);
		if (b->r->stat(b->r->arg, dir, &anc) == 0 && S_ISDIR(anc.mode))
			break;
		if (a == 0)
			return note(b, "'%s': no ancestor directory of %s exists; the rule is not enforced", pattern, path);
	}
	if (a == n - 1)
		return add_child(b, &anc, comps[n - 1], c);

	nrest = n - a - 1;
	{
		size_t ok = 0;

		while (ok < nrest && ok < SB_CHAIN_MAX && strlen(comps[a + 1 + ok]) <= SB_NAME_KEY)
			ok++;
		if (ok == nrest) {
			rc = add_chain(b, &anc, comps[a], &comps[a + 1], nrest, c);
			if (rc != -ENOSPC)
				return rc;
			ok = 0;	/* too many chains on one key: fall through */
		}
		if (c->trig < 0 || c->tier < SB_K_ESCALATE) {
			if (c->trig < 0)
				return 0;
			return note(b,
				    "'%s': %s does not exist and is too deep to track until it does; this %s rule applies after 'policy reload'",
				    pattern, path, sb_tier_name(c->tier));
		}
		/* Over-approximation: everything strictly below the last
		 * component the kernel can follow gets the rule's tier. */
		{
			struct contrib below = *c;

			below.pl = SB_PL_BELOW;
			rc = note(b, "'%s': %s does not exist; until it does, %s applies to everything under %s/%s%s%s",
				  pattern, path, sb_tier_name(c->tier), a ? dir : "", comps[a], ok ? "/" : "",
				  ok ? "..." : "");
			if (rc)
				return rc;
			if (ok == 0)
				return add_child(b, &anc, comps[a], &below);
			return add_chain(b, &anc, comps[a], &comps[a + 1], ok, &below) == -ENOSPC ?
				       add_child(b, &anc, comps[a], &below) :
				       0;
		}
	}
}

/* ---- paths ------------------------------------------------------------- */

static int depth_of(const char *path)
{
	int d = 0;

	for (; *path; path++)
		if (*path == '/' && path[1] && path[1] != '/')
			d++;
	return d;
}

static int add_name(struct build *b, const char *name, int trig, int pl, uint8_t tier, uint32_t rule)
{
	struct sb_name_key k;
	struct sb_pval *v;
	bool created;

	sb_kname_key(&k, name);
	v = kv_get(b->e->names, &k, &created);
	if (!v)
		return -ENOMEM;
	if (created)
		pval_init(v);
	slot_merge(&v->slot[trig][pl], SB_SPEC_RELATIVE, tier, rule);
	if (strlen(name) > SB_NAME_KEY) {
		struct sb_child_key ck;

		v->flags |= SB_PV_LONGNAME;
		sb_kchild_key(&ck, 0, 0, name, 0xff);
		return add_longname(b, &ck, name);
	}
	return 0;
}

static int add_glob(struct build *b, const struct sb_cpath *cp, int trig, const struct sb_kstat *dir,
		    uint16_t spec_plain)
{
	struct sb_glob *g;
	size_t pl = strlen(cp->glob_prefix), sl = strlen(cp->glob_suffix);

	if (b->e->nglobs == SB_GLOBS_MAX)
		return -ENOSPC;
	g = &b->e->globs[b->e->nglobs++];
	memset(g, 0, sizeof(*g));
	g->trig = (uint8_t)trig;
	g->tier = cp->is_protected ? SB_K_DENY : (uint8_t)cp->tier;
	g->rule = (uint32_t)cp->rule_index;
	g->plen = (uint8_t)pl;
	g->slen = (uint8_t)sl;
	memcpy(g->prefix, cp->glob_prefix, pl);
	memcpy(g->suffix, cp->glob_suffix, sl);
	if (pl + sl > 0)
		g->flags |= SB_GLOB_ANCHORED;
	if (dir) {
		g->flags |= SB_GLOB_CHILD;
		g->dev = dir->kdev;
		g->ino = dir->ino;
	}
	g->spec = cp->is_protected ? SB_SPEC_PROTECTED : spec_plain;
	return 0;
}

/* Expansion of a pattern the kernel cannot match: every existing path
 * under the literal prefix that the classifier would match. Patterns
 * ending in "/ **" become subtree entries on the matching directories. */
struct expand {
	struct build *b;
	const struct sb_rule *rule;
	const struct sb_cpath *cp;
	bool subtree;
	size_t budget;
	size_t visited, matched;
	int max_depth;
	int rc;
};

static void expand_dir(struct expand *x, const char *dir, int depth)
{
	DIR *d;
	struct dirent *de;

	if (x->rc || depth > x->max_depth)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while (!x->rc && (de = readdir(d))) {
		char path[SB_PATH_MAX + 1];
		struct stat st;
		int spec;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++x->visited > x->budget)
			break;
		if (snprintf(path, sizeof(path), "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", de->d_name) >=
		    (int)sizeof(path))
			continue;
		if (!strcmp(path, "/proc") || !strcmp(path, "/sys") || !strcmp(path, "/dev"))
			continue;
		spec = sb_pathpat_match(&x->rule->path, path);
		if (lstat(path, &st))
			continue;
		if (spec >= 0 && (!x->subtree || S_ISDIR(st.st_mode))) {
			struct contrib c = { .trig = x->cp->trigger == SB_TRIG_WRITE ? SB_PT_WRITE : SB_PT_READ,
					     .pl = x->subtree ? SB_PL_SUBTREE : SB_PL_EXACT,
					     .spec = x->cp->is_protected ? SB_SPEC_PROTECTED : (uint16_t)spec,
					     .tier = x->cp->is_protected ? SB_K_DENY : (uint8_t)x->cp->tier,
					     .rule = (uint32_t)x->cp->rule_index };

			x->matched++;
			x->rc = add_path(x->b, path, &c, x->cp->pattern);
			if (x->subtree)
				continue;	/* everything below is covered */
		}
		if (S_ISDIR(st.st_mode))
			expand_dir(x, path, depth + 1);
	}
	closedir(d);
}

static int expand_glob(struct build *b, const struct sb_rule *rule, const struct sb_cpath *cp)
{
	const struct sb_pathpat *pp = &rule->path;
	struct expand x = { .b = b, .rule = rule, .cp = cp };
	size_t i;
	bool globstar = false;
	int lit = 0;

	x.budget = b->r->glob_budget ? b->r->glob_budget : GLOB_BUDGET_DEFAULT;
	x.subtree = pp->ncomps > 0 && !strcmp(pp->comps[pp->ncomps - 1], "**");
	for (i = 0; i < pp->ncomps; i++) {
		if (!strcmp(pp->comps[i], "**"))
			globstar = true;
		if (pp->literal[i] && lit == (int)i)
			lit++;
	}
	x.max_depth = globstar ? 64 : (int)pp->ncomps - lit;
	expand_dir(&x, cp->path, 1);
	if (x.rc)
		return x.rc;
	if (x.visited > x.budget)
		return note(b,
			    "'%s' (%s): expansion stopped after %zu directory entries (%zu matches); paths beyond are not covered by this %s rule in the kernel: narrow the pattern",
			    cp->pattern, rule->where, x.budget, x.matched, sb_tier_name(cp->tier));
	return note(b,
		    "'%s' (%s): expanded at load to %zu existing path%s; paths created later match only after 'policy reload'",
		    cp->pattern, rule->where, x.matched, x.matched == 1 ? "" : "s");
}

/* Ancestors of a protected pattern's literal directory: removing or
 * moving them would take the protected files along (classifier:
 * is_protected_ancestor). The literal directory itself is included for
 * patterns with a wildcard in the last component (.claude/settings*.json):
 * stricter than the classifier, which lets .claude be renamed away. */
static int add_protected_ancestors(struct build *b, const struct sb_rule *rule, size_t idx)
{
	const struct sb_pathpat *pp = &rule->path;
	struct contrib c = { .trig = -1, .rule = (uint32_t)idx, .prot_anc = true };
	size_t nlit = 0, i, upto;
	int rc;

	while (nlit < pp->ncomps && pp->literal[nlit])
		nlit++;
	upto = nlit;	/* strict ancestors: comps[0..i) for i < nlit */
	if (nlit < pp->ncomps && strcmp(pp->comps[nlit], "**"))
		upto = nlit + 1;	/* and the literal directory itself */
	for (i = 0; i < upto; i++) {
		char path[SB_PATH_MAX + 1];

		join_path(path, sizeof(path), pp->comps, i);
		rc = add_path(b, path, &c, rule->text);
		if (rc)
			return rc;
	}
	return 0;
}

static int compile_paths(struct build *b)
{
	const struct sb_compiled *c = b->c;
	size_t i;
	int rc;

	for (i = 0; i < c->npaths; i++) {
		const struct sb_cpath *cp = &c->paths[i];
		const struct sb_rule *rule = &b->p->rules[cp->rule_index];
		int trig = cp->trigger == SB_TRIG_WRITE ? SB_PT_WRITE : SB_PT_READ;
		uint8_t tier = cp->is_protected ? SB_K_DENY : (uint8_t)cp->tier;
		struct contrib con = { .trig = trig, .tier = tier, .rule = (uint32_t)cp->rule_index };
		struct sb_kstat dir;
		int spec;

		switch (cp->kind) {
		case SB_CPATH_EXACT:
		case SB_CPATH_SUBTREE:
			spec = sb_pathpat_match(&rule->path, cp->path);
			con.pl = cp->kind == SB_CPATH_EXACT ? SB_PL_EXACT : SB_PL_SUBTREE;
			con.spec = cp->is_protected ? SB_SPEC_PROTECTED : (uint16_t)(spec < 0 ? 0 : spec);
			rc = add_path(b, cp->path, &con, cp->pattern);
			break;
		case SB_CPATH_NAME:
		case SB_CPATH_NAME_SUBTREE:
			rc = add_name(b, cp->name, trig, cp->kind == SB_CPATH_NAME ? SB_PL_EXACT : SB_PL_SUBTREE, tier,
				      (uint32_t)cp->rule_index);
			break;
		case SB_CPATH_NAME_GLOB:
		case SB_CPATH_CHILD_GLOB:
			if (strlen(cp->glob_prefix) >= SB_GLOB_PART || strlen(cp->glob_suffix) >= SB_GLOB_PART) {
				rc = cp->kind == SB_CPATH_CHILD_GLOB ? expand_glob(b, rule, cp) :
								       note(b, "'%s' (%s): glob parts longer than %d bytes are not enforced in the kernel",
									    cp->pattern, rule->where, SB_GLOB_PART - 1);
				break;
			}
			if (cp->kind == SB_CPATH_NAME_GLOB) {
				rc = add_glob(b, cp, trig, NULL, 0);
			} else if (b->r->stat(b->r->arg, cp->path, &dir) == 0) {
				rc = add_glob(b, cp, trig, &dir, (uint16_t)(2 * depth_of(cp->path) + 1));
			} else if (tier >= SB_K_ESCALATE) {
				/* The directory does not exist yet: everything that
				 * appears below it gets the rule's tier. */
				con.pl = SB_PL_BELOW;
				con.spec = cp->is_protected ? SB_SPEC_PROTECTED : (uint16_t)(2 * depth_of(cp->path) + 2);
				rc = add_path(b, cp->path, &con, cp->pattern);
			} else {
				rc = 0;
			}
			if (rc == -ENOSPC)
				rc = sb_errf(b->err, -E2BIG,
					     "more than %d single-star name globs ('%s' is one too many): merge them or use directory rules",
					     SB_GLOBS_MAX, cp->pattern);
			break;
		case SB_CPATH_GLOB:
		default:
			rc = expand_glob(b, rule, cp);
			break;
		}
		if (rc)
			return rc;
		if (cp->is_protected) {
			rc = add_protected_ancestors(b, rule, cp->rule_index);
			if (rc)
				return rc;
		}
	}
	/* Kernel control filesystems: cgroup migration (cgroup.procs), bpffs
	 * pins, securityfs, tracefs... are never writable from a sandbox. */
	for (i = 0; b->r->sysfs && b->r->sysfs[i]; i++) {
		struct contrib con = { .trig = SB_PT_WRITE, .pl = SB_PL_SUBTREE, .spec = SB_SPEC_PROTECTED,
				       .tier = SB_K_DENY, .rule = SB_RULE_SYS_FS };

		rc = add_path(b, b->r->sysfs[i], &con, b->r->sysfs[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- shell ------------------------------------------------------------- */

static int add_shell(struct build *b, uint8_t kind, const char *text, size_t len, uint8_t tier, bool refine,
		     uint16_t spec, uint32_t rule)
{
	struct sb_shell_key k;
	struct sb_shell_val *v;
	bool created;

	sb_kshell_key(&k, kind, text, len);
	v = kv_get(b->e->shell, &k, &created);
	if (!v)
		return -ENOMEM;
	if (created || tier > v->tier || (v->refine && !refine)) {
		/* Same literal text twice: the stricter tier wins; an exact
		 * rule beats a wildcard refinement of the same text. */
		if (created || !(v->refine == 0 && refine)) {
			v->tier = created ? tier : (tier > v->tier ? tier : v->tier);
			v->refine = created ? refine : (v->refine && refine);
			v->spec = spec;
			v->rule = rule;
		}
	}
	if (kind == SB_SHK_NAME || kind == SB_SHK_FULL)
		b->e->cfg.shell_lens[kind == SB_SHK_FULL][(len >> 6) & 3] |= 1ULL << (len & 63);
	return 0;
}

static int compile_shell(struct build *b)
{
	const struct sb_compiled *c = b->c;
	size_t i;
	int rc;

	for (i = 0; i < c->nshell; i++) {
		const struct sb_cshell *s = &c->shell[i];
		const struct sb_rule *rule = &b->p->rules[s->rule_index];
		uint8_t kind = s->fullpath ? SB_SHK_FULL : SB_SHK_NAME;
		size_t len = strlen(s->prefix), w;
		bool refine = s->refine;

		if (len == 0) {
			/* "*": every command. It beats only the default. */
			if (s->tier > b->e->cfg.defaults[SB_K_SHELL] || !refine)
				b->e->cfg.defaults[SB_K_SHELL] = (uint8_t)s->tier;
			rc = note(b, "'%s' (%s) matches every command: it replaces the shell default (%s)", rule->text,
				  rule->where, sb_tier_name(s->tier));
			if (rc)
				return rc;
			continue;
		}
		if (len > SB_CMD_KEY - 1) {
			if (s->tier < SB_K_ESCALATE) {
				rc = note(b, "'%s' (%s): longer than %d bytes, not enforced in the kernel", rule->text,
					  rule->where, SB_CMD_KEY - 1);
				if (rc)
					return rc;
				continue;
			}
			len = SB_CMD_KEY - 1;
			refine = true;
		}
		if (s->exact && !refine)
			rc = add_shell(b, kind + 1, s->prefix, len, (uint8_t)s->tier, false, (uint16_t)len,
				       (uint32_t)s->rule_index);
		else
			rc = add_shell(b, kind, s->prefix, len, (uint8_t)s->tier, refine, (uint16_t)len,
				       (uint32_t)s->rule_index);
		if (rc)
			return rc;
		if (s->argv_level || s->exact) {
			/* The first word gets a marker: bprm_check leaves such
			 * names to bprm_committed_creds, which sees argv. */
			w = strcspn(s->prefix, " ");
			if (w > SB_CMD_KEY - 1)
				w = SB_CMD_KEY - 1;
			rc = add_shell(b, SB_SHK_ARGVNAME, s->prefix, w, SB_K_ALLOW, false, 0, (uint32_t)s->rule_index);
			if (rc)
				return rc;
		}
		if (refine && s->tier >= SB_K_ESCALATE) {
			rc = note(b,
				  "'%s' (%s): wildcards inside the command are checked in the kernel as the prefix '%.*s' (stricter: commands with that prefix get %s unless a longer rule matches)",
				  rule->text, rule->where, (int)len, s->prefix, sb_tier_name(s->tier));
			if (rc)
				return rc;
		}
	}
	/* An exact rule and a prefix rule with the same text tie in the
	 * classifier (same literal length): the exact entry, which the kernel
	 * looks up first, carries the stricter of the two. */
	for (i = 0; i < sb_kv_count(b->e->shell); i++) {
		const struct sb_shell_key *k = sb_kv_key(b->e->shell, i);
		struct sb_shell_val *v = (struct sb_shell_val *)sb_kv_val(b->e->shell, i);
		const struct sb_shell_val *pv;
		struct sb_shell_key pk;

		if (k->kind != SB_SHK_NAME_EXACT && k->kind != SB_SHK_FULL_EXACT)
			continue;
		pk = *k;
		pk.kind = k->kind - 1;
		pv = sb_kv_find(b->e->shell, &pk);
		if (pv && !pv->refine && pv->tier > v->tier) {
			v->tier = pv->tier;
			v->rule = pv->rule;
		}
	}
	return 0;
}

/* The binary-level decision for an executable known by name (and its
 * resolved path), computed from the entries exactly as bprm_check does. */
struct bindec {
	uint8_t tier;
	bool argv;
	uint32_t rule;
};

static void lpm(const struct sb_kentries *e, uint8_t kind, const char *text, uint8_t dflt, bool *found,
		uint8_t *tier, uint16_t *spec, uint32_t *rule)
{
	size_t n = strlen(text), l;
	bool seen_refine = false;
	uint8_t rtier = 0;
	uint32_t rrule = 0;
	uint16_t rspec = 0;

	*found = false;
	if (n > SB_CMD_KEY - 1)
		n = SB_CMD_KEY - 1;
	for (l = n; l >= 1; l--) {
		struct sb_shell_key k;
		const struct sb_shell_val *v;

		if (!((e->cfg.shell_lens[kind == SB_SHK_FULL][(l >> 6) & 3] >> (l & 63)) & 1))
			continue;
		sb_kshell_key(&k, kind, text, l);
		v = sb_kv_find(e->shell, &k);
		if (!v)
			continue;
		if (v->refine) {
			if (!seen_refine) {
				rrule = v->rule;
				rspec = v->spec;
			}
			seen_refine = true;
			if (v->tier > rtier)
				rtier = v->tier;
			continue;
		}
		*found = true;
		*tier = v->tier;
		*spec = v->spec;
		*rule = v->rule;
		break;
	}
	if (seen_refine) {
		uint8_t base = *found ? *tier : dflt;

		*found = true;
		*spec = rspec;
		if (rtier >= base) {
			*tier = rtier;
			*rule = rrule;
		} else {
			*tier = base;
		}
	}
}

static bool has_marker(const struct sb_kentries *e, const char *text)
{
	struct sb_shell_key k;

	sb_kshell_key(&k, SB_SHK_ARGVNAME, text, strlen(text));
	return sb_kv_find(e->shell, &k) != NULL;
}

static struct bindec bin_decide(const struct sb_kentries *e, const char *name, const char *full)
{
	struct bindec d = { .tier = e->cfg.defaults[SB_K_SHELL], .rule = SB_RULE_DEFAULT };
	uint8_t dflt = e->cfg.defaults[SB_K_SHELL], tn = 0, tf = 0;
	uint16_t sn = 0, sf = 0;
	uint32_t rn = 0, rf = 0;
	bool fn, ff;

	d.argv = has_marker(e, name) || has_marker(e, full);
	lpm(e, SB_SHK_NAME, name, dflt, &fn, &tn, &sn, &rn);
	lpm(e, SB_SHK_FULL, full, dflt, &ff, &tf, &sf, &rf);
	if (ff && (!fn || sf > sn || (sf == sn && tf > tn))) {
		d.tier = tf;
		d.rule = rf;
	} else if (fn) {
		d.tier = tn;
		d.rule = rn;
	}
	return d;
}

struct xcand {
	struct sb_inode_key key;
	struct bindec d;
	char name[SB_NAME_KEY + 1];
	bool conflict;
	char first[64];
	char other[64];
};

static int xscan_one(struct build *b, struct sb_kv *tmp, const char *name, const char *path)
{
	char real[PATH_MAX];
	struct sb_kstat st;
	struct xcand *x;
	struct bindec d, d2;
	bool created;
	struct sb_inode_key k;
	const char *base;

	if (b->r->stat(b->r->arg, path, &st) || !S_ISREG(st.mode) || !(st.mode & 0111))
		return 0;
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	d = bin_decide(b->e, name, real);
	/* The file's own name (symlinks resolved) is a name too. */
	base = sb_basename(real);
	if (strcmp(base, name)) {
		d2 = bin_decide(b->e, base, real);
		if (d2.tier > d.tier)
			d = d2;
		d.argv = d.argv || d2.argv;
	}
	memset(&k, 0, sizeof(k));
	k.dev = st.kdev;
	k.ino = st.ino;
	x = kv_get(tmp, &k, &created);
	if (!x)
		return -ENOMEM;
	if (created) {
		x->key = k;
		x->d = d;
		snprintf(x->first, sizeof(x->first), "%s", name);
		if (strlen(name) <= SB_NAME_KEY)
			snprintf(x->name, sizeof(x->name), "%s", name);
		return 0;
	}
	if (x->d.tier != d.tier || x->d.argv != d.argv) {
		if (!x->conflict)
			snprintf(x->other, sizeof(x->other), "%s", name);
		x->conflict = true;
	}
	if (d.argv && !x->d.argv && strlen(name) <= SB_NAME_KEY)
		snprintf(x->name, sizeof(x->name), "%s", name);
	return 0;
}

/* Executables reachable through PATH: their binary-level decision keyed
 * by inode, so a hard link, a symlink, an fd or ld.so cannot rename them. */
static int compile_xinodes(struct build *b)
{
	struct sb_kv *tmp = kv_new(sizeof(struct sb_inode_key), sizeof(struct xcand));
	size_t i, nconf = 0;
	int rc = 0;
	char conf[512] = "";

	if (!tmp)
		return -ENOMEM;
	for (i = 0; b->r->exec_dirs && b->r->exec_dirs[i] && !rc; i++) {
		DIR *d = opendir(b->r->exec_dirs[i]);
		struct dirent *de;

		if (!d)
			continue;
		while (!rc && (de = readdir(d))) {
			char path[PATH_MAX];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", b->r->exec_dirs[i], de->d_name);
			rc = xscan_one(b, tmp, de->d_name, path);
		}
		closedir(d);
	}
	/* The executables full-path rules name (/opt/x/tool*): by inode too,
	 * so another path to the same file (a bind mount, a detached mount
	 * in a user namespace, ld.so) cannot get around the rule (red team). */
	for (i = 0; !rc && i < b->c->nshell; i++) {
		const struct sb_cshell *cs = &b->c->shell[i];
		char path[PATH_MAX];
		size_t l;

		if (!cs->fullpath || !cs->prefix || cs->prefix[0] != '/')
			continue;
		l = strcspn(cs->prefix, " \t");
		if (l == 0 || l >= sizeof(path))
			continue;
		memcpy(path, cs->prefix, l);
		path[l] = 0;
		rc = xscan_one(b, tmp, sb_basename(path), path);
	}
	for (i = 0; !rc && i < sb_kv_count(tmp); i++) {
		const struct xcand *x = sb_kv_val(tmp, i);
		struct sb_xinode_val *v;
		bool created;

		if (x->conflict) {
			if (nconf++ < 4) {
				size_t l = strlen(conf);

				snprintf(conf + l, sizeof(conf) - l, "%s%s (%s, %s)", l ? ", " : "", x->first, x->first,
					 x->other);
			}
			continue;
		}
		if (x->d.tier == SB_K_ALLOW && !x->d.argv)
			continue;
		if (sb_kv_count(b->e->xinodes) >= XINODE_MAX)
			break;
		v = kv_get(b->e->xinodes, &x->key, &created);
		if (!v) {
			rc = -ENOMEM;
			break;
		}
		v->tier = x->d.tier;
		v->flags = x->d.argv ? SB_XI_ARGV : 0;
		v->rule = x->d.rule;
		v->namelen = (uint16_t)strlen(x->name);
		memcpy(v->name, x->name, v->namelen);
	}
	if (!rc && nconf)
		rc = note(b,
			  "%zu executable%s in PATH %s several names with different shell rules (multi-call binaries such as busybox: %s%s); they are judged by the name they are run as only",
			  nconf, nconf == 1 ? " has" : "s have", nconf == 1 ? "under" : "under", conf,
			  nconf > 4 ? ", ..." : "");
	kv_free(tmp);
	return rc;
}

/* ---- network ----------------------------------------------------------- */

static void net_val_from(struct sb_net_val *v, const struct sb_cnet *n)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->nseg = (uint32_t)n->nseg;
	for (i = 0; i < n->nseg && i < SB_NET_SEGS; i++) {
		v->seg[i].lo = n->seg[i].lo;
		v->seg[i].hi = n->seg[i].hi;
		v->seg[i].tier = (uint8_t)n->seg[i].tier;
		v->seg[i].rule = (uint32_t)n->seg[i].rule_index;
	}
}

static int net_put(struct build *b, int family, const uint8_t *addr, uint8_t prefix, const struct sb_net_val *val)
{
	bool created;
	struct sb_net_val *v;

	if (family == AF_INET) {
		struct sb_net4_key k = { .prefixlen = 32u + prefix };

		memcpy(k.addr, addr, 4);
		v = kv_get(b->e->net4, &k, &created);
	} else {
		struct sb_net6_key k = { .prefixlen = 32u + prefix };

		memcpy(k.addr, addr, 16);
		v = kv_get(b->e->net6, &k, &created);
	}
	if (!v)
		return -ENOMEM;
	*v = *val;
	return 0;
}

static int port_class(bool any, uint16_t lo, uint16_t hi)
{
	return any ? 0 : (lo == hi ? 2 : 1);
}

static bool cnet_covers(const struct sb_cnet *n, int family, const uint8_t *addr)
{
	int full = n->prefix / 8, rem = n->prefix % 8;

	if (n->family != family)
		return false;
	if (memcmp(n->addr, addr, (size_t)full))
		return false;
	if (rem) {
		uint8_t m = (uint8_t)(0xff << (8 - rem));

		if ((n->addr[full] & m) != (addr[full] & m))
			return false;
	}
	return true;
}

/* Decision at (address A, port) when host-name rules resolved to A: a name
 * is an exact host (class 2), so it beats CIDRs and "*"; against an exact
 * IP rule the port class and then the stricter tier decide. */
static void host_decide(const struct build *b, const struct sb_chost *const *hs, size_t nh, int family,
			const uint8_t *addr, uint16_t port, uint8_t *tier, uint32_t *rule)
{
	const struct sb_compiled *c = b->c;
	const struct sb_cnet *best = NULL;
	const struct sb_chost *h = NULL;
	int nclass = -1, hclass = -1;
	size_t i;

	*tier = (uint8_t)c->defaults[SB_TRIG_NETWORK];
	*rule = SB_RULE_DEFAULT;
	for (i = 0; i < c->nnet; i++)
		if (cnet_covers(&c->net[i], family, addr) && (!best || c->net[i].prefix > best->prefix))
			best = &c->net[i];
	if (best) {
		for (i = 0; i < best->nseg; i++) {
			if (port >= best->seg[i].lo && port <= best->seg[i].hi) {
				const struct sb_netpat *np = &b->p->rules[best->seg[i].rule_index].net;

				*tier = (uint8_t)best->seg[i].tier;
				*rule = (uint32_t)best->seg[i].rule_index;
				nclass = port_class(np->any_port, np->port_lo, np->port_hi);
				break;
			}
		}
	}
	for (i = 0; i < nh; i++) {
		int pc;

		if (!hs[i]->any_port && (port < hs[i]->port_lo || port > hs[i]->port_hi))
			continue;
		pc = port_class(hs[i]->any_port, hs[i]->port_lo, hs[i]->port_hi);
		if (!h || pc > hclass || (pc == hclass && hs[i]->tier > h->tier)) {
			h = hs[i];
			hclass = pc;
		}
	}
	if (!h)
		return;
	if (nclass >= 0 && best && best->prefix == (family == AF_INET ? 32 : 128) &&
	    (nclass > hclass || (nclass == hclass && *tier >= h->tier)))
		return;
	*tier = (uint8_t)h->tier;
	*rule = (uint32_t)h->rule_index;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int host_entry(struct build *b, const struct sb_kaddr *a, const struct sb_chost *const *hs, size_t nh)
{
	const struct sb_compiled *c = b->c;
	uint32_t bounds[4 * SB_NET_SEGS + 64];
	size_t nb = 0, i, j;
	struct sb_net_val v;

	bounds[nb++] = 0;
	bounds[nb++] = 65536;
	for (i = 0; i < nh && nb + 2 < sizeof(bounds) / sizeof(bounds[0]); i++) {
		if (hs[i]->any_port)
			continue;
		bounds[nb++] = hs[i]->port_lo;
		bounds[nb++] = (uint32_t)hs[i]->port_hi + 1;
	}
	for (i = 0; i < c->nnet; i++) {
		if (!cnet_covers(&c->net[i], a->family, a->addr))
			continue;
		for (j = 0; j < c->net[i].nseg && nb + 2 < sizeof(bounds) / sizeof(bounds[0]); j++) {
			bounds[nb++] = c->net[i].seg[j].lo;
			bounds[nb++] = (uint32_t)c->net[i].seg[j].hi + 1;
		}
	}
	qsort(bounds, nb, sizeof(bounds[0]), cmp_u32);
	memset(&v, 0, sizeof(v));
	for (i = 0; i + 1 < nb; i++) {
		uint8_t tier;
		uint32_t rule;

		if (bounds[i] == bounds[i + 1])
			continue;
		host_decide(b, hs, nh, a->family, a->addr, (uint16_t)bounds[i], &tier, &rule);
		if (rule == SB_RULE_DEFAULT)
			continue;
		if (v.nseg && v.seg[v.nseg - 1].hi + 1u == bounds[i] && v.seg[v.nseg - 1].tier == tier &&
		    v.seg[v.nseg - 1].rule == rule) {
			v.seg[v.nseg - 1].hi = (uint16_t)(bounds[i + 1] - 1);
			continue;
		}
		if (v.nseg == SB_NET_SEGS)
			return sb_errf(b->err, -E2BIG, "network rules for one address use more than %d port ranges",
				       SB_NET_SEGS);
		v.seg[v.nseg].lo = (uint16_t)bounds[i];
		v.seg[v.nseg].hi = (uint16_t)(bounds[i + 1] - 1);
		v.seg[v.nseg].tier = tier;
		v.seg[v.nseg].rule = rule;
		v.nseg++;
	}
	return net_put(b, a->family, a->addr, a->family == AF_INET ? 32 : 128, &v);
}

static int compile_net(struct build *b)
{
	const struct sb_compiled *c = b->c;
	struct sb_kaddr *all = NULL;
	const struct sb_chost **owner = NULL;
	size_t nall = 0, i, j;
	int rc = 0;

	for (i = 0; i < c->nnet; i++) {
		struct sb_net_val v;

		net_val_from(&v, &c->net[i]);
		rc = net_put(b, c->net[i].family, c->net[i].addr, c->net[i].prefix, &v);
		if (rc)
			return rc;
	}
	/* Host names: the kernel sees addresses, so names are resolved now. */
	for (i = 0; i < c->nhosts && !rc; i++) {
		const struct sb_chost *h = &c->hosts[i];
		struct sb_kaddr *addrs = NULL;
		size_t n = 0;

		if (h->subdomains) {
			rc = note(b,
				  "'%s' (%s): subdomain wildcards cannot be resolved; the kernel applies the network default (%s) to their addresses",
				  b->p->rules[h->rule_index].text, b->p->rules[h->rule_index].where,
				  sb_tier_name(c->defaults[SB_TRIG_NETWORK]));
			continue;
		}
		if (!b->r->resolve || b->r->resolve(b->r->arg, h->host, &addrs, &n) || n == 0) {
			free(addrs);
			rc = note(b, "'%s' (%s): host name did not resolve; its connections get the network default (%s)",
				  b->p->rules[h->rule_index].text, b->p->rules[h->rule_index].where,
				  sb_tier_name(c->defaults[SB_TRIG_NETWORK]));
			continue;
		}
		{
			struct sb_kaddr *na = realloc(all, (nall + n) * sizeof(*na));
			const struct sb_chost **no = realloc(owner, (nall + n) * sizeof(*no));

			if (na)
				all = na;
			if (no)
				owner = no;
			if (!na || !no) {
				free(addrs);
				rc = -ENOMEM;
				break;
			}
		}
		for (j = 0; j < n; j++) {
			all[nall] = addrs[j];
			owner[nall] = h;
			nall++;
		}
		free(addrs);
	}
	for (i = 0; i < nall && !rc; i++) {
		const struct sb_chost *hs[64];
		size_t nh = 0, k;
		bool done = false;

		for (k = 0; k < i; k++)
			if (all[k].family == all[i].family && !memcmp(all[k].addr, all[i].addr, 16))
				done = true;
		if (done)
			continue;
		for (k = i; k < nall && nh < 64; k++)
			if (all[k].family == all[i].family && !memcmp(all[k].addr, all[i].addr, 16))
				hs[nh++] = owner[k];
		rc = host_entry(b, &all[i], hs, nh);
	}
	free(all);
	free(owner);
	return rc;
}

/* ---- config ------------------------------------------------------------ */

/* A trigger whose every rule has the default's tier is decided without a
 * walk (reads with no read rules, the common case). */
static void compute_uniform(struct build *b)
{
	const struct sb_policy *p = b->p;
	int t;

	for (t = 0; t < SB_TRIG_COUNT; t++)
		b->e->cfg.uniform[t] = b->e->cfg.defaults[t];
	for (size_t i = 0; i < p->nrules; i++) {
		const struct sb_rule *r = &p->rules[i];
		uint8_t tier = r->is_protected ? SB_K_DENY : (uint8_t)r->tier;

		if (b->e->cfg.uniform[r->trigger] != tier)
			b->e->cfg.uniform[r->trigger] = SB_K_NONE;
	}
	if (b->r->sysfs && b->r->sysfs[0] && b->e->cfg.uniform[SB_K_WRITE] != SB_K_DENY)
		b->e->cfg.uniform[SB_K_WRITE] = SB_K_NONE;
	/* Only path triggers use it. */
	b->e->cfg.uniform[SB_K_SHELL] = SB_K_NONE;
	b->e->cfg.uniform[SB_K_NETWORK] = SB_K_NONE;
}

int sb_kentries_compute(const struct sb_policy *p, const struct sb_compiled *c, const struct sb_kresolver *r,
			const struct sb_kopts *o, struct sb_kentries **out, struct sb_err *err)
{
	struct sb_kentries *e = calloc(1, sizeof(*e));
	struct build b = { .p = p, .c = c, .r = r, .e = e, .err = err };
	int rc, t;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->inodes = kv_new(sizeof(struct sb_inode_key), sizeof(struct sb_pval));
	e->children = kv_new(sizeof(struct sb_child_key), sizeof(struct sb_pval));
	e->chains = kv_new(sizeof(struct sb_child_key), sizeof(struct sb_chain));
	e->names = kv_new(sizeof(struct sb_name_key), sizeof(struct sb_pval));
	e->longnames = kv_new(sizeof(struct sb_child_key), sizeof(struct sb_longname));
	e->shell = kv_new(sizeof(struct sb_shell_key), sizeof(struct sb_shell_val));
	e->xinodes = kv_new(sizeof(struct sb_inode_key), sizeof(struct sb_xinode_val));
	e->net4 = kv_new(sizeof(struct sb_net4_key), sizeof(struct sb_net_val));
	e->net6 = kv_new(sizeof(struct sb_net6_key), sizeof(struct sb_net_val));
	if (!e->inodes || !e->children || !e->chains || !e->names || !e->longnames || !e->shell || !e->xinodes ||
	    !e->net4 || !e->net6) {
		rc = -ENOMEM;
		goto fail;
	}
	for (t = 0; t < SB_TRIG_COUNT; t++)
		e->cfg.defaults[t] = (uint8_t)c->defaults[t];
	e->cfg.anon_exec = o ? o->anon_exec : SB_K_DENY;
	if (c->mode == SB_MODE_AUDIT)
		e->cfg.flags |= SB_CFG_AUDIT;
	if (c->deny_user_namespaces)
		e->cfg.flags |= SB_CFG_DENY_USERNS;
	if (o && o->hold)
		e->cfg.flags |= SB_CFG_HOLD;

	rc = compile_paths(&b);
	if (!rc)
		rc = compile_shell(&b);
	if (!rc)
		rc = compile_xinodes(&b);
	if (!rc)
		rc = compile_net(&b);
	if (rc)
		goto fail;
	e->cfg.has_names = sb_kv_count(e->names) > 0;
	e->cfg.nglobs = (uint8_t)e->nglobs;
	e->cfg.has_shell = sb_kv_count(e->shell) > 0;
	compute_uniform(&b);
	*out = e;
	return 0;
fail:
	if (rc == -ENOMEM)
		sb_errf(err, rc, "out of memory computing the kernel entries");
	else if (!err || !err->msg[0])
		sb_errf(err, rc, "cannot compute the kernel entries: %s", strerror(-rc));
	sb_kentries_free(e);
	return rc;
}

void sb_kentries_free(struct sb_kentries *e)
{
	size_t i;

	if (!e)
		return;
	kv_free(e->inodes);
	kv_free(e->children);
	kv_free(e->chains);
	kv_free(e->names);
	kv_free(e->longnames);
	kv_free(e->shell);
	kv_free(e->xinodes);
	kv_free(e->net4);
	kv_free(e->net6);
	for (i = 0; i < e->nnotes; i++)
		free(e->notes[i]);
	free(e->notes);
	free(e);
}

/* ---- default resolver -------------------------------------------------- */

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

struct defres {
	struct sb_mountdevs *devs;
	char **exec_dirs;
	char **sysfs;
};

static int def_stat(void *arg, const char *path, struct sb_kstat *st)
{
	struct defres *d = arg;
	struct statx sx;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS | STATX_MNT_ID, &sx))
		return -errno;
	st->ino = sx.stx_ino;
	st->mode = sx.stx_mode;
	/* The kernel keys inodes by their superblock's s_dev, which is what
	 * mountinfo shows; stat(2)'s st_dev differs on btrfs subvolumes. */
	if (!(sx.stx_mask & STATX_MNT_ID) || sb_mountdevs_lookup(d->devs, sx.stx_mnt_id, &st->kdev))
		st->kdev = (sx.stx_dev_major << 20) | (sx.stx_dev_minor & 0xfffff);
	return 0;
}

static int def_resolve(void *arg, const char *host, struct sb_kaddr **out, size_t *n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	struct sb_kaddr *v = NULL;
	size_t k = 0;

	(void)arg;
	*out = NULL;
	*n = 0;
	if (getaddrinfo(host, NULL, &hints, &res))
		return -ENOENT;
	for (ai = res; ai; ai = ai->ai_next) {
		struct sb_kaddr a = { 0 };
		struct sb_kaddr *nv;
		size_t i;

		if (ai->ai_family == AF_INET) {
			a.family = AF_INET;
			memcpy(a.addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		} else if (ai->ai_family == AF_INET6) {
			a.family = AF_INET6;
			memcpy(a.addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		for (i = 0; i < k; i++)
			if (v[i].family == a.family && !memcmp(v[i].addr, a.addr, 16))
				break;
		if (i < k)
			continue;
		nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[k++] = a;
	}
	freeaddrinfo(res);
	*out = v;
	*n = k;
	return k ? 0 : -ENOENT;
}

static int strv_add_unique(char ***v, size_t *n, const char *s)
{
	char real[PATH_MAX], **nv;
	size_t i;

	if (!realpath(s, real))
		return 0;
	for (i = 0; i < *n; i++)
		if (!strcmp((*v)[i], real))
			return 0;
	nv = realloc(*v, (*n + 2) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(real);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	nv[*n] = NULL;
	return 0;
}

int sb_kresolver_default(struct sb_kresolver *r, struct sb_err *err)
{
	static const char *const std_dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
						"/sbin", "/bin", NULL };
	struct defres *d = calloc(1, sizeof(*d));
	const char *path = getenv("PATH");
	size_t n = 0, i;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!d)
		return -ENOMEM;
	rc = sb_mountdevs_load(&d->devs, err);
	if (!rc)
		rc = sb_sysfs_mounts(&d->sysfs, err);
	if (!rc && path) {
		char *copy = strdup(path), *p, *save;

		if (!copy)
			rc = -ENOMEM;
		for (p = copy ? strtok_r(copy, ":", &save) : NULL; p && !rc; p = strtok_r(NULL, ":", &save))
			if (p[0] == '/')
				rc = strv_add_unique(&d->exec_dirs, &n, p);
		free(copy);
	}
	for (i = 0; std_dirs[i] && !rc; i++)
		rc = strv_add_unique(&d->exec_dirs, &n, std_dirs[i]);
	if (rc) {
		r->arg = d;
		sb_kresolver_cleanup(r);
		return rc == -ENOMEM ? sb_errf(err, rc, "out of memory") : rc;
	}
	r->stat = def_stat;
	r->resolve = def_resolve;
	r->exec_dirs = (const char *const *)d->exec_dirs;
	r->sysfs = (const char *const *)d->sysfs;
	r->arg = d;
	return 0;
}

void sb_kresolver_cleanup(struct sb_kresolver *r)
{
	struct defres *d = r->arg;

	if (!d)
		return;
	sb_mountdevs_free(d->devs);
	sb_strv_free(d->exec_dirs);
	sb_strv_free(d->sysfs);
	free(d);
	memset(r, 0, sizeof(*r));
}
