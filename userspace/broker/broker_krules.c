#include "broker_krules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netpat.h"
#include "pathpat.h"

int sb_krule_escape(const char *in, char *out, size_t out_len)
{
	size_t n = 0;

	for (; *in; in++) {
		bool esc = *in == '*' || *in == '?' || *in == '[' || *in == '\\';

		if (n + (esc ? 2 : 1) >= out_len)
			return -ENAMETOOLONG;
		if (esc)
			out[n++] = '\\';
		out[n++] = *in;
	}
	out[n] = '\0';
	return 0;
}

static bool tier_ok(enum sb_tier t)
{
	return t == SB_TIER_ESCALATE || t == SB_TIER_ALLOW;
}

/* Shell: the new rule's literal is lit (len L): "P " for a prefix memory
 * (non-exact), "C" for a command memory (exact). */
static int check_shell(const struct sb_compiled *c, const char *lit, bool exact, char *why, size_t why_len)
{
	size_t L = strlen(lit), i;
	bool covered = false;

	if (L == 0 || L > SB_CMD_KEY - 2)
		return snprintf(why, why_len, "longer than the kernel's %d-byte command keys", SB_CMD_KEY - 1), 0;
	for (i = 0; i < c->nshell; i++) {
		const struct sb_cshell *e = &c->shell[i];
		size_t l = strlen(e->prefix);

		if (e->fullpath) {
			/* Full-path rules are matched on the executable's path,
			 * which the memory does not fix: any shorter one may be
			 * beaten (a tie goes to the stricter, which is safe). */
			if (l < L && !tier_ok(e->tier))
				return snprintf(why, why_len, "it would beat the %s rule on '%s'", sb_tier_name(e->tier),
						e->prefix),
				       0;
			continue;
		}
		if (e->exact) {
			/* Same text: merged into one entry, the stricter wins.
			 * Any other exact line is longer (not beaten) or outside. */
			continue;
		}
		if (l > L || strncmp(lit, e->prefix, l))
			continue;	/* longer (it wins) or another command */
		if (l == L && !exact)
			continue;	/* the same key: merged, the stricter wins */
		if (l == L && exact)
			continue;	/* "C*" next to exact "C": the exact entry carries the stricter */
		if (!tier_ok(e->tier))
			return snprintf(why, why_len, "it would beat the %s rule '%s*'", sb_tier_name(e->tier), e->prefix), 0;
		if (!e->refine)
			covered = true;
	}
	if (!covered && !tier_ok(c->defaults[SB_TRIG_SHELL]))
		return snprintf(why, why_len, "it would beat the shell default (%s)", sb_tier_name(c->defaults[SB_TRIG_SHELL])),
		       0;
	return 1;
}

static int shell_rules(const struct sb_compiled *c, const struct sb_bmem_entry *e, char *why, size_t why_len)
{
	char lit[SB_CMD_KEY + 2];
	size_t w = strcspn(e->value, " ");

	if (memchr(e->value, '/', w))
		return snprintf(why, why_len, "its program is a path"), 0;
	if (snprintf(lit, sizeof(lit), "%s%s", e->value, e->scope == SB_REM_PREFIX ? " " : "") >= (int)sizeof(lit))
		return snprintf(why, why_len, "longer than the kernel's %d-byte command keys", SB_CMD_KEY - 1), 0;
	return check_shell(c, lit, e->scope == SB_REM_COMMAND, why, why_len);
}

/* "1.2.3.4", "1.2.3.4:443", "::1", "[::1]:22" -> address and port (-1 any). */
static int parse_host(const char *v, struct sb_netdst *d, int *port)
{
	char buf[128];
	const char *colon;

	*port = -1;
	snprintf(buf, sizeof(buf), "%s", v);
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (!close)
			return -EINVAL;
		*close = '\0';
		if (close[1] == ':')
			*port = atoi(close + 2);
		memmove(buf, buf + 1, strlen(buf));
	} else if ((colon = strchr(buf, ':')) && !strchr(colon + 1, ':')) {
		*port = atoi(colon + 1);
		buf[colon - buf] = '\0';
	}
	memset(d, 0, sizeof(*d));
	return sb_netaddr_parse(buf, d);
}

static int check_host(const struct sb_compiled *c, const struct sb_bmem_entry *e, char *why, size_t why_len)
{
	struct sb_netdst d;
	int port, p, lo, hi;
	size_t i;

	if (parse_host(e->value, &d, &port))
		return snprintf(why, why_len, "a host name (the kernel sees addresses only)"), 0;
	for (i = 0; i < c->nhosts; i++) {
		if (!c->hosts[i].subdomains && !tier_ok(c->hosts[i].tier))
			return snprintf(why, why_len, "the %s host rule '%s' resolves to addresses at load",
					sb_tier_name(c->hosts[i].tier), c->hosts[i].host),
			       0;
	}
	lo = port >= 0 ? port : 0;
	hi = port >= 0 ? port : 65535;
	for (p = lo; p <= hi; p++) {
		long rule;
		enum sb_tier t = sb_compiled_net_decide(c, d.family, d.addr, (uint16_t)p, &rule);

		if (!tier_ok(t))
			return snprintf(why, why_len, "port %d of it is %s by the policy", p, sb_tier_name(t)), 0;
	}
	return 1;
}

static bool has_literal(const struct sb_pathpat *pp, size_t i)
{
	const char *comp = pp->comps[i];

	if (!strcmp(comp, "**"))
		return false;
	return pp->literal[i] || strspn(comp, "*?") != strlen(comp);
}

/* Whether rule r (a path pattern) may match something at or below the
 * directory whose components are dc[0..nd-1] with a specificity below
 * the new rule's (2 * nd + 1). Conservative: "no" only when provable. */
static bool path_may_be_beaten(const struct sb_pathpat *pp, char **dc, size_t nd)
{
	size_t i, first_star = pp->ncomps;

	for (i = 0; i < pp->ncomps; i++) {
		if (!strcmp(pp->comps[i], "**")) {
			first_star = i;
			break;
		}
	}
	/* Disjoint: a fixed leading component that cannot match D's. */
	for (i = 0; i < first_star && i < nd; i++) {
		if (pp->literal[i] ? strcmp(pp->comps[i], dc[i]) : !sb_glob_match(pp->comps[i], dc[i], true))
			return false;
	}
	if (first_star == pp->ncomps && pp->ncomps < nd)
		return false;	/* only matches paths above D */
	/* A literal component at a fixed depth below D: every match is more
	 * specific than the new rule. */
	for (i = nd; i < first_star; i++)
		if (has_literal(pp, i))
			return false;
	return true;
}

static int check_dir(const struct sb_policy *p, const struct sb_bmem_entry *e, char *why, size_t why_len)
{
	char buf[SB_PATH_MAX + 1], *dc[SB_PATH_MAX / 2], *s, *save = NULL;
	size_t nd = 0, i;

	if (e->trigger != SB_TRIG_WRITE && e->trigger != SB_TRIG_READ)
		return snprintf(why, why_len, "program directories are answered by the broker"), 0;
	snprintf(buf, sizeof(buf), "%s", e->value);
	for (s = strtok_r(buf, "/", &save); s && nd < sizeof(dc) / sizeof(dc[0]); s = strtok_r(NULL, "/", &save))
		dc[nd++] = s;
	if (nd == 0 || nd >= SB_WALK_MAX)
		return snprintf(why, why_len, "not a usable directory"), 0;
	if (!tier_ok(p->defaults[e->trigger]))
		return snprintf(why, why_len, "the %s default is %s", sb_trigger_name(e->trigger),
				sb_tier_name(p->defaults[e->trigger])),
		       0;
	for (i = 0; i < p->nrules; i++) {
		const struct sb_rule *r = &p->rules[i];

		if (r->trigger != e->trigger || r->is_protected || tier_ok(r->tier))
			continue;
		if (path_may_be_beaten(&r->path, dc, nd))
			return snprintf(why, why_len, "it could beat the %s rule '%s'", sb_tier_name(r->tier), r->text), 0;
	}
	return 1;
}

int sb_krule_check(const struct sb_policy *p, const struct sb_compiled *c, const struct sb_bmem_entry *e, char *why,
		   size_t why_len)
{
	why[0] = '\0';
	if (p->mode == SB_MODE_AUDIT)
		return snprintf(why, why_len, "audit mode holds nothing"), 0;
	switch (e->scope) {
	case SB_REM_PREFIX:
	case SB_REM_COMMAND:
		return shell_rules(c, e, why, why_len);
	case SB_REM_HOST:
		return check_host(c, e, why, why_len);
	case SB_REM_DIR:
		return check_dir(p, e, why, why_len);
	case SB_REM_ONCE:
		return snprintf(why, why_len, "'once' is used up by the next request"), 0;
	}
	return snprintf(why, why_len, "unknown scope"), 0;
}

void sb_krules_free(struct sb_krules *k)
{
	size_t i;

	for (i = 0; i < k->n; i++) {
		free((char *)k->r[i].text);
		free((char *)k->r[i].where);
	}
	free(k->r);
	k->r = NULL;
	k->n = 0;
}

static int add_rule(struct sb_krules *k, enum sb_trigger trig, const char *text, const struct sb_bmem_entry *e)
{
	struct sb_kpolicy_extra *nr = realloc(k->r, (k->n + 1) * sizeof(*nr));
	char where[SB_PATH_MAX + 64];

	if (!nr)
		return -ENOMEM;
	k->r = nr;
	snprintf(where, sizeof(where), "remembered %s '%s'", sb_remember_scope_name(e->scope), e->value);
	nr[k->n].trigger = trig;
	nr[k->n].tier = SB_TIER_ALLOW;
	nr[k->n].text = strdup(text);
	nr[k->n].where = strdup(where);
	if (!nr[k->n].text || !nr[k->n].where) {
		free((char *)nr[k->n].text);
		free((char *)nr[k->n].where);
		return -ENOMEM;
	}
	k->n++;
	return 0;
}

int sb_krules_compute(const struct sb_policy *p, const struct sb_compiled *c, const struct sb_bmem *m,
		      struct sb_krules *out)
{
	char esc[2 * SB_PATH_MAX + 8], text[2 * SB_PATH_MAX + 16], why[256];
	size_t i;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < m->n && !rc; i++) {
		const struct sb_bmem_entry *e = &m->e[i];

		if (sb_krule_check(p, c, e, why, sizeof(why)) != 1)
			continue;
		if (e->scope == SB_REM_HOST) {
			rc = add_rule(out, SB_TRIG_NETWORK, e->value, e);
			continue;
		}
		if (sb_krule_escape(e->value, esc, sizeof(esc)))
			continue;
		switch (e->scope) {
		case SB_REM_PREFIX:
			rc = add_rule(out, SB_TRIG_SHELL, esc, e);
			if (!rc) {
				snprintf(text, sizeof(text), "%s *", esc);
				rc = add_rule(out, SB_TRIG_SHELL, text, e);
			}
			break;
		case SB_REM_COMMAND:
			rc = add_rule(out, SB_TRIG_SHELL, esc, e);
			break;
		case SB_REM_DIR:
			snprintf(text, sizeof(text), "%s/**", esc);
			rc = add_rule(out, e->trigger, text, e);
			break;
		default:
			break;
		}
	}
	if (rc)
		sb_krules_free(out);
	return rc;
}
