#include "compile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pathpat.h"

static const char *const cpath_kind_names[] = {
	"exact", "subtree", "name", "name-subtree", "name-glob", "child-glob", "glob",
};

const char *sb_cpath_kind_name(enum sb_cpath_kind k)
{
	return (unsigned)k < sizeof(cpath_kind_names) / sizeof(cpath_kind_names[0]) ? cpath_kind_names[k] : "?";
}

void sb_compiled_free(struct sb_compiled *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->npaths; i++) {
		free(c->paths[i].path);
		free(c->paths[i].name);
		free(c->paths[i].glob_prefix);
		free(c->paths[i].glob_suffix);
	}
	free(c->paths);
	for (i = 0; i < c->nshell; i++)
		free(c->shell[i].prefix);
	free(c->shell);
	free(c->net);
	free(c->hosts);
	free(c);
}

/* A glob the kernel can match: exactly one '*', no '?', '[' or escapes. */
static bool single_star(const char *g)
{
	const char *star = strchr(g, '*');

	return star && !strchr(star + 1, '*') && !strpbrk(g, "?[\\");
}

static char *join_comps(char *const *comps, size_t n)
{
	size_t len = 1, i;
	char *out;

	for (i = 0; i < n; i++)
		len += strlen(comps[i]) + 1;
	out = malloc(len + 1);
	if (!out)
		return NULL;
	if (n == 0) {
		strcpy(out, "/");
		return out;
	}
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		strcat(out, "/");
		strcat(out, comps[i]);
	}
	return out;
}

static int split_star(struct sb_cpath *e, const char *glob)
{
	const char *star = strchr(glob, '*');

	e->glob_prefix = strndup(glob, (size_t)(star - glob));
	e->glob_suffix = strdup(star + 1);
	return e->glob_prefix && e->glob_suffix ? 0 : -ENOMEM;
}

static int compile_path(const struct sb_rule *r, size_t idx, struct sb_cpath *e)
{
	const struct sb_pathpat *pp = &r->path;
	size_t n = pp->ncomps, i, nlit = 0;
	bool last_globstar = n > 0 && !strcmp(pp->comps[n - 1], "**");

	memset(e, 0, sizeof(*e));
	e->trigger = r->trigger;
	e->tier = r->tier;
	e->pattern = pp->text;
	e->is_protected = r->is_protected;
	e->rule_index = idx;
	while (nlit < n && pp->literal[nlit])
		nlit++;

	if (nlit == n) {
		e->kind = SB_CPATH_EXACT;
		e->path = join_comps(pp->comps, n);
		return e->path ? 0 : -ENOMEM;
	}
	if (nlit == n - 1 && last_globstar) {
		e->kind = SB_CPATH_SUBTREE;
		e->path = join_comps(pp->comps, n - 1);
		return e->path ? 0 : -ENOMEM;
	}
	if (nlit == n - 1 && single_star(pp->comps[n - 1])) {
		e->kind = SB_CPATH_CHILD_GLOB;
		e->path = join_comps(pp->comps, n - 1);
		e->name = strdup(pp->comps[n - 1]);
		if (!e->path || !e->name)
			return -ENOMEM;
		return split_star(e, e->name);
	}
	if (n >= 2 && !strcmp(pp->comps[0], "**")) {
		if (n == 2 && pp->literal[1]) {
			e->kind = SB_CPATH_NAME;
			e->name = strdup(pp->comps[1]);
			return e->name ? 0 : -ENOMEM;
		}
		if (n == 3 && pp->literal[1] && !strcmp(pp->comps[2], "**")) {
			e->kind = SB_CPATH_NAME_SUBTREE;
			e->name = strdup(pp->comps[1]);
			return e->name ? 0 : -ENOMEM;
		}
		if (n == 2 && single_star(pp->comps[1])) {
			e->kind = SB_CPATH_NAME_GLOB;
			e->name = strdup(pp->comps[1]);
			if (!e->name)
				return -ENOMEM;
			return split_star(e, e->name);
		}
	}
	/* Anything else is expanded against the filesystem by the loader,
	 * starting from the literal directory before the first wildcard. */
	e->kind = SB_CPATH_GLOB;
	for (i = 0; i < n && pp->literal[i]; i++)
		;
	e->path = join_comps(pp->comps, i);
	return e->path ? 0 : -ENOMEM;
}

static int compile_shell(const struct sb_rule *r, size_t idx, struct sb_cshell *e)
{
	const char *t = r->shell.text;
	size_t i, n = 0, len = strlen(t);
	char *pfx = malloc(len + 1);
	bool wild = false;

	if (!pfx)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	for (i = 0; t[i]; i++) {
		if (t[i] == '\\' && t[i + 1]) {
			pfx[n++] = t[++i];
			continue;
		}
		if (t[i] == '*' || t[i] == '?' || t[i] == '[') {
			wild = true;
			break;
		}
		pfx[n++] = t[i];
	}
	pfx[n] = '\0';
	e->tier = r->tier;
	e->prefix = pfx;
	e->rule_index = idx;
	e->fullpath = r->shell.fullpath;
	e->exact = !wild;
	/* "X*" is an exact prefix rule; any other wildcard needs userspace. */
	e->refine = wild && !(t[i] == '*' && t[i + 1] == '\0');
	e->argv_level = e->exact || strchr(pfx, ' ') != NULL;
	return 0;
}

/* ---- network flattening ------------------------------------------------ */

struct net_rule {
	int family;
	const uint8_t *addr;
	uint8_t prefix;
	bool any_port;
	uint16_t lo, hi;
	enum sb_tier tier;
	size_t rule_index;
};

static bool covers(const struct net_rule *outer, int family, const uint8_t *addr, uint8_t prefix)
{
	int full, rem;

	if (outer->family != family || outer->prefix > prefix)
		return false;
	full = outer->prefix / 8;
	rem = outer->prefix % 8;
	if (memcmp(outer->addr, addr, (size_t)full))
		return false;
	if (rem) {
		uint8_t m = (uint8_t)(0xff << (8 - rem));

		if ((outer->addr[full] & m) != (addr[full] & m))
			return false;
	}
	return true;
}

static int port_class(const struct net_rule *r)
{
	return r->any_port ? 0 : (r->lo == r->hi ? 2 : 1);
}

/* Decision at one (prefix, port) among the rules covering the prefix:
 * longest prefix, then the most specific port, then the stricter tier. */
static const struct net_rule *decide_port(const struct net_rule *rules, const size_t *cand, size_t ncand,
					  uint16_t port)
{
	const struct net_rule *best = NULL;
	size_t i;

	for (i = 0; i < ncand; i++) {
		const struct net_rule *r = &rules[cand[i]];

		if (!r->any_port && (port < r->lo || port > r->hi))
			continue;
		if (!best || r->prefix > best->prefix ||
		    (r->prefix == best->prefix &&
		     (port_class(r) > port_class(best) ||
		      (port_class(r) == port_class(best) && r->tier > best->tier))))
			best = r;
	}
	return best;
}

static int cmp_u32(const void *a, const void *b)
{
	return (int)*(const uint32_t *)a - (int)*(const uint32_t *)b;
}

static int flatten_prefix(const struct net_rule *rules, size_t nrules, const struct net_rule *self,
			  struct sb_cnet *out, struct sb_err *err)
{
	size_t *cand = malloc(nrules * sizeof(*cand)), ncand = 0, i, nb = 0;
	uint32_t *bounds = malloc((2 * nrules + 2) * sizeof(*bounds));
	int rc = 0;

	if (!cand || !bounds) {
		free(cand);
		free(bounds);
		return -ENOMEM;
	}
	memset(out, 0, sizeof(*out));
	out->family = self->family;
	memcpy(out->addr, self->addr, 16);
	out->prefix = self->prefix;
	for (i = 0; i < nrules; i++) {
		if (covers(&rules[i], self->family, self->addr, self->prefix)) {
			cand[ncand++] = i;
			if (!rules[i].any_port) {
				bounds[nb++] = rules[i].lo;
				bounds[nb++] = (uint32_t)rules[i].hi + 1;
			}
		}
	}
	bounds[nb++] = 0;
	bounds[nb++] = 65536;
	qsort(bounds, nb, sizeof(*bounds), cmp_u32);
	/* Each interval between consecutive boundaries has one decision;
	 * merge neighbours with the same decision. */
	for (i = 0; i + 1 < nb; i++) {
		const struct net_rule *d;
		uint32_t lo = bounds[i], hi = bounds[i + 1];

		if (lo == hi)
			continue;
		d = decide_port(rules, cand, ncand, (uint16_t)lo);
		if (!d)
			continue;
		if (out->nseg > 0 && out->seg[out->nseg - 1].hi + 1u == lo &&
		    out->seg[out->nseg - 1].tier == d->tier && out->seg[out->nseg - 1].rule_index == d->rule_index) {
			out->seg[out->nseg - 1].hi = (uint16_t)(hi - 1);
			continue;
		}
		if (out->nseg == SB_NET_MAX_SEGS) {
			rc = sb_errf(err, -E2BIG,
				     "network rules for one address range use more than %d distinct port ranges; merge ports into ranges (8000-8999)",
				     SB_NET_MAX_SEGS);
			break;
		}
		out->seg[out->nseg].lo = (uint16_t)lo;
		out->seg[out->nseg].hi = (uint16_t)(hi - 1);
		out->seg[out->nseg].tier = d->tier;
		out->seg[out->nseg].rule_index = d->rule_index;
		out->nseg++;
	}
	free(cand);
	free(bounds);
	return rc;
}

static int compile_net(struct sb_compiled *c, const struct sb_policy *p, struct sb_err *err)
{
	struct net_rule *rules;
	size_t n = 0, i, j;
	int rc = 0;

	rules = calloc(2 * p->nrules + 2, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	for (i = 0; i < p->nrules; i++) {
		const struct sb_rule *r = &p->rules[i];
		const struct sb_netpat *np = &r->net;

		if (r->trigger != SB_TRIG_NETWORK)
			continue;
		if (np->kind == SB_NET_HOST || np->kind == SB_NET_DOMAIN) {
			struct sb_chost *h = &c->hosts[c->nhosts++];

			h->tier = r->tier;
			h->host = np->host;
			h->subdomains = np->kind == SB_NET_DOMAIN;
			h->any_port = np->any_port;
			h->port_lo = np->port_lo;
			h->port_hi = np->port_hi;
			h->rule_index = i;
			continue;
		}
		if (np->kind == SB_NET_ANY) {
			/* "*" is 0.0.0.0/0 and ::/0 at the lowest host specificity. */
			static const uint8_t zero[16];
			int f;

			for (f = 0; f < 2; f++) {
				rules[n] = (struct net_rule){ .family = f ? AF_INET6 : AF_INET, .addr = zero, .prefix = 0,
							      .any_port = np->any_port, .lo = np->port_lo,
							      .hi = np->port_hi, .tier = r->tier, .rule_index = i };
				n++;
			}
			continue;
		}
		rules[n++] = (struct net_rule){ .family = np->family, .addr = np->addr, .prefix = np->prefix,
						.any_port = np->any_port, .lo = np->port_lo, .hi = np->port_hi,
						.tier = r->tier, .rule_index = i };
	}
	/* One LPM entry per distinct (family, prefix, address). */
	c->net = calloc(n ? n : 1, sizeof(*c->net));
	if (!c->net) {
		free(rules);
		return -ENOMEM;
	}
	for (i = 0; i < n && !rc; i++) {
		bool dup = false;

		for (j = 0; j < i; j++) {
			if (rules[j].family == rules[i].family && rules[j].prefix == rules[i].prefix &&
			    !memcmp(rules[j].addr, rules[i].addr, 16)) {
				dup = true;
				break;
			}
		}
		if (dup)
			continue;
		rc = flatten_prefix(rules, n, &rules[i], &c->net[c->nnet], err);
		if (!rc)
			c->nnet++;
	}
	free(rules);
	return rc;
}

int sb_policy_compile(const struct sb_policy *p, struct sb_compiled **out, struct sb_err *err)
{
	struct sb_compiled *c;
	size_t i;
	int rc = 0;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->mode = p->mode;
	memcpy(c->defaults, p->defaults, sizeof(c->defaults));
	c->deny_user_namespaces = p->deny_user_namespaces;
	memcpy(c->hash, p->hash, sizeof(c->hash));
	c->paths = calloc(p->nrules + 1, sizeof(*c->paths));
	c->shell = calloc(p->nrules + 1, sizeof(*c->shell));
	c->hosts = calloc(p->nrules + 1, sizeof(*c->hosts));
	if (!c->paths || !c->shell || !c->hosts) {
		rc = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < p->nrules && !rc; i++) {
		const struct sb_rule *r = &p->rules[i];

		switch (r->trigger) {
		case SB_TRIG_WRITE:
		case SB_TRIG_READ:
			rc = compile_path(r, i, &c->paths[c->npaths]);
			c->npaths++;
			break;
		case SB_TRIG_SHELL:
			rc = compile_shell(r, i, &c->shell[c->nshell]);
			c->nshell++;
			break;
		case SB_TRIG_NETWORK:
			break;
		}
	}
	if (!rc)
		rc = compile_net(c, p, err);
	if (rc)
		goto fail;
	*out = c;
	return 0;
fail:
	if (rc == -ENOMEM)
		sb_errf(err, rc, "out of memory compiling the policy");
	sb_compiled_free(c);
	return rc;
}

static bool prefix_covers_addr(const struct sb_cnet *e, int family, const uint8_t *addr)
{
	struct net_rule r = { .family = e->family, .addr = e->addr, .prefix = e->prefix };

	return covers(&r, family, addr, family == AF_INET ? 32 : 128);
}

enum sb_tier sb_compiled_net_decide(const struct sb_compiled *c, int family, const uint8_t *addr, uint16_t port,
				    long *rule_index)
{
	const struct sb_cnet *best = NULL;
	size_t i;

	*rule_index = -1;
	for (i = 0; i < c->nnet; i++) {
		const struct sb_cnet *e = &c->net[i];

		if (prefix_covers_addr(e, family, addr) && (!best || e->prefix > best->prefix))
			best = e;
	}
	if (best) {
		for (i = 0; i < best->nseg; i++) {
			if (port >= best->seg[i].lo && port <= best->seg[i].hi) {
				*rule_index = (long)best->seg[i].rule_index;
				return best->seg[i].tier;
			}
		}
	}
	return c->defaults[SB_TRIG_NETWORK];
}

enum sb_tier sb_compiled_shell_decide(const struct sb_compiled *c, const char *cmdline, bool *refine,
				      long *rule_index)
{
	const struct sb_cshell *best = NULL;
	size_t i;

	*refine = false;
	*rule_index = -1;
	for (i = 0; i < c->nshell; i++) {
		const struct sb_cshell *e = &c->shell[i];
		size_t l = strlen(e->prefix);
		bool m = e->exact ? !strcmp(cmdline, e->prefix) : !strncmp(cmdline, e->prefix, l);

		if (!m || e->fullpath)
			continue;
		if (!best || l > strlen(best->prefix) || (l == strlen(best->prefix) && e->tier > best->tier))
			best = e;
	}
	if (!best)
		return c->defaults[SB_TRIG_SHELL];
	*refine = best->refine;
	*rule_index = (long)best->rule_index;
	return best->tier;
}
