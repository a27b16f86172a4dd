#include "classify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include "pathpat.h"
#include "shellpat.h"

#define CMD_MAX (SB_PATH_MAX * 2)

/* The strings an exec event is matched as. Several candidates exist when
 * argv[0] and the executable disagree (argv[0] is chosen by the caller and
 * can lie); every candidate must pass, so the stricter result wins. */
struct exec_subject {
	char cmd[2][CMD_MAX];	/* basename(argv[0]) + args, basename(path) + args */
	int ncmd;
	char full[CMD_MAX];	/* normalised executable path + args */
	bool has_full;
	char exe[SB_PATH_MAX + 1];
};

struct best {
	const struct sb_rule *rule;
	int spec;
};

static void consider(struct best *b, const struct sb_rule *r, int spec)
{
	if (spec < 0)
		return;
	if (!b->rule || spec > b->spec || (spec == b->spec && r->tier > b->rule->tier)) {
		b->rule = r;
		b->spec = spec;
	}
}

static int build_exec_subject(const struct sb_event *ev, struct exec_subject *s, struct sb_err *err)
{
	const char *argv0 = ev->argc > 0 ? ev->argv[0] : NULL;
	const char *const *argv = ev->argv;
	size_t argc = ev->argc;
	const char *exe_src = NULL;
	const char *names[2];
	int n = 0, i, rc;

	memset(s, 0, sizeof(*s));
	if (!argv0 && !ev->path)
		return sb_errf(err, -EINVAL, "an exec event needs \"argv\" or \"path\"");
	if (argv0 && !argv0[0] && !ev->path)
		return sb_errf(err, -EINVAL, "argv[0] is empty and no \"path\" was given");
	if (ev->path && ev->path[0])
		exe_src = ev->path;
	else if (argv0 && strchr(argv0, '/'))
		exe_src = argv0;
	if (exe_src) {
		if (exe_src[0] != '/' && !ev->cwd)
			return sb_errf(err, -EINVAL, "executable '%s' is relative and no \"cwd\" was given", exe_src);
		rc = sb_path_normalize(exe_src, ev->cwd, s->exe, sizeof(s->exe));
		if (rc)
			return sb_errf(err, rc, "executable path '%s' is invalid or too long", exe_src);
		rc = sb_cmdline_build(s->exe, argv, argc, s->full, sizeof(s->full));
		if (rc)
			return sb_errf(err, rc, "command line longer than %d bytes", CMD_MAX);
		s->has_full = true;
	}
	if (argv0 && argv0[0])
		names[n++] = sb_basename(argv0);
	if (exe_src && (n == 0 || strcmp(names[0], sb_basename(s->exe))))
		names[n++] = sb_basename(s->exe);
	for (i = 0; i < n; i++) {
		rc = sb_cmdline_build(names[i], argv, argc, s->cmd[i], sizeof(s->cmd[i]));
		if (rc)
			return sb_errf(err, rc, "command line longer than %d bytes", CMD_MAX);
	}
	s->ncmd = n;
	return 0;
}

static void set_rule_decision(struct sb_decision *d, const struct sb_rule *r)
{
	d->matched = r;
	d->tier = r->tier;
	d->is_default = false;
	snprintf(d->rule, sizeof(d->rule), "%s", r->text);
}

static void set_default(struct sb_decision *d, const struct sb_policy *p, enum sb_trigger t)
{
	d->matched = NULL;
	d->tier = p->defaults[t];
	d->is_default = true;
	snprintf(d->rule, sizeof(d->rule), "default");
}

static void classify_exec(const struct sb_policy *p, const struct exec_subject *s, struct sb_decision *d)
{
	int c;
	bool have = false;

	for (c = 0; c < s->ncmd; c++) {
		struct best b = { 0 };
		size_t i;
		enum sb_tier tier;

		for (i = 0; i < p->nrules; i++) {
			const struct sb_rule *r = &p->rules[i];

			if (r->trigger == SB_TRIG_SHELL)
				consider(&b, r, sb_shellpat_match(&r->shell, s->cmd[c], s->has_full ? s->full : NULL));
		}
		tier = b.rule ? b.rule->tier : p->defaults[SB_TRIG_SHELL];
		if (!have || tier > d->tier) {
			if (b.rule)
				set_rule_decision(d, b.rule);
			else
				set_default(d, p, SB_TRIG_SHELL);
			snprintf(d->subject, sizeof(d->subject), "%s", s->cmd[c]);
			have = true;
		}
	}
	if (!have) {
		/* Only a full path (no argv): match full-path rules alone. */
		struct best b = { 0 };
		size_t i;

		for (i = 0; i < p->nrules; i++) {
			const struct sb_rule *r = &p->rules[i];

			if (r->trigger == SB_TRIG_SHELL && r->shell.fullpath)
				consider(&b, r, sb_shellpat_match(&r->shell, NULL, s->full));
		}
		if (b.rule)
			set_rule_decision(d, b.rule);
		else
			set_default(d, p, SB_TRIG_SHELL);
		snprintf(d->subject, sizeof(d->subject), "%s", s->full);
	}
}

static bool op_moves_entry(enum sb_write_op op)
{
	return op == SB_WOP_UNLINK || op == SB_WOP_RMDIR || op == SB_WOP_RENAME_FROM || op == SB_WOP_RENAME_TO;
}

/* True when path is the literal directory part of a protected pattern or
 * one of its ancestors: moving or removing it would take the protected
 * files along (renaming .claude/ away empties .claude/settings*.json). */
static bool is_protected_ancestor(const struct sb_rule *r, const char *path)
{
	char lit[SB_PATH_MAX + 1] = "";
	size_t i, n = 0, plen = strlen(path);

	for (i = 0; i < r->path.ncomps && r->path.literal[i]; i++) {
		size_t l = strlen(r->path.comps[i]);

		if (n + 1 + l >= sizeof(lit))
			return false;
		lit[n++] = '/';
		memcpy(lit + n, r->path.comps[i], l);
		n += l;
		lit[n] = '\0';
	}
	if (n == 0)
		return false;
	if (plen == 1 && path[0] == '/')
		return true;
	return n >= plen && !strncmp(lit, path, plen) && (lit[plen] == '/' || lit[plen] == '\0');
}

static void classify_path(const struct sb_policy *p, enum sb_trigger trig, const char *path,
			  enum sb_write_op op, struct sb_decision *d)
{
	struct best b = { 0 };
	size_t i;

	snprintf(d->subject, sizeof(d->subject), "%s", path);
	if (trig == SB_TRIG_WRITE) {
		for (i = 0; i < p->nrules; i++) {
			const struct sb_rule *r = &p->rules[i];

			if (!r->is_protected)
				continue;
			if (sb_pathpat_match(&r->path, path) >= 0 ||
			    (op_moves_entry(op) && is_protected_ancestor(r, path))) {
				set_rule_decision(d, r);
				d->is_protected = true;
				snprintf(d->rule, sizeof(d->rule), "protected");
				return;
			}
		}
	}
	for (i = 0; i < p->nrules; i++) {
		const struct sb_rule *r = &p->rules[i];

		if (r->trigger == trig && !r->is_protected)
			consider(&b, r, sb_pathpat_match(&r->path, path));
	}
	if (b.rule)
		set_rule_decision(d, b.rule);
	else
		set_default(d, p, trig);
}

static void format_dst(const struct sb_netdst *dst, char *out, size_t len)
{
	char addr[INET6_ADDRSTRLEN] = "";

	if (dst->has_addr)
		inet_ntop(dst->family, dst->addr, addr, sizeof(addr));
	if (dst->host && dst->has_addr)
		snprintf(out, len, "%s (%s%s%s):%u", dst->host, dst->family == AF_INET6 ? "[" : "", addr,
			 dst->family == AF_INET6 ? "]" : "", dst->port);
	else if (dst->host)
		snprintf(out, len, "%s:%u", dst->host, dst->port);
	else
		snprintf(out, len, "%s%s%s:%u", dst->family == AF_INET6 ? "[" : "", addr,
			 dst->family == AF_INET6 ? "]" : "", dst->port);
}

static void classify_net(const struct sb_policy *p, const struct sb_netdst *dst, struct sb_decision *d)
{
	const struct sb_rule *best[2] = { NULL, NULL };
	struct sb_netrank rank[2], r;
	const struct sb_rule *win = NULL;
	size_t i;

	format_dst(dst, d->subject, sizeof(d->subject));
	/* Best address rule and best name rule are chosen separately (each is a
	 * total order), then compared: an address range and a domain wildcard
	 * are not comparable by size, so the port and then the stricter tier
	 * decide between them. */
	for (i = 0; i < p->nrules; i++) {
		const struct sb_rule *rule = &p->rules[i];
		int k, c;

		if (rule->trigger != SB_TRIG_NETWORK || !sb_netpat_match(&rule->net, dst, &r))
			continue;
		k = r.kind;
		if (!best[k]) {
			best[k] = rule;
			rank[k] = r;
			continue;
		}
		c = sb_netrank_cmp(&r, &rank[k]);
		if (c > 0 || (c == 0 && rule->tier > best[k]->tier)) {
			best[k] = rule;
			rank[k] = r;
		}
	}
	if (best[0] && best[1]) {
		int c = sb_netrank_cmp(&rank[0], &rank[1]);

		win = c > 0 ? best[0] : c < 0 ? best[1] : (best[1]->tier > best[0]->tier ? best[1] : best[0]);
	} else {
		win = best[0] ? best[0] : best[1];
	}
	if (win)
		set_rule_decision(d, win);
	else
		set_default(d, p, SB_TRIG_NETWORK);
}

static bool under_dir(const char *path, const char *dir)
{
	size_t l = strlen(dir);

	if (!strcmp(dir, "/"))
		return path[0] == '/';
	return !strncmp(path, dir, l) && (path[l] == '\0' || path[l] == '/');
}

static bool prefix_words(const char *cmd, const char *prefix)
{
	size_t l = strlen(prefix);

	return !strncmp(cmd, prefix, l) && (cmd[l] == '\0' || cmd[l] == ' ');
}

static bool memory_matches(const struct sb_remembered *m, enum sb_trigger trig, const struct sb_event *ev,
			   const struct exec_subject *xs, const char *path, const char *key)
{
	int c;

	switch (m->scope) {
	case SB_REM_ONCE:
		return key && !strcmp(m->value, key);
	case SB_REM_COMMAND:
	case SB_REM_PREFIX:
		if (trig != SB_TRIG_SHELL || m->trigger != SB_TRIG_SHELL || xs->ncmd == 0)
			return false;
		/* Every name the command goes by must be covered. */
		for (c = 0; c < xs->ncmd; c++) {
			if (m->scope == SB_REM_COMMAND ? strcmp(xs->cmd[c], m->value) :
							 !prefix_words(xs->cmd[c], m->value))
				return false;
		}
		return true;
	case SB_REM_DIR:
		if (m->trigger != trig)
			return false;
		if (trig == SB_TRIG_SHELL)
			return xs->has_full && under_dir(xs->exe, m->value);
		return path && under_dir(path, m->value);
	case SB_REM_HOST: {
		struct sb_netdst a = { 0 };

		if (trig != SB_TRIG_NETWORK || m->trigger != SB_TRIG_NETWORK)
			return false;
		if (m->port >= 0 && ev->dst.port != m->port)
			return false;
		if (!sb_netaddr_parse(m->value, &a))
			return ev->dst.has_addr && a.family == ev->dst.family &&
			       !memcmp(a.addr, ev->dst.addr, a.family == AF_INET ? 4 : 16);
		return ev->dst.host && !strcmp(ev->dst.host, m->value);
	}
	}
	return false;
}

static void write_reason(struct sb_decision *d)
{
	const char *tname = sb_trigger_name(d->trigger);
	const char *tier = sb_tier_name(d->tier);

	if (d->is_protected)
		snprintf(d->reason, sizeof(d->reason),
			 "'%s' is protected (%s): writes there are always denied and no policy rule can allow them",
			 d->subject, d->matched->path.text);
	else if (d->is_default)
		snprintf(d->reason, sizeof(d->reason), "no %s rule matches '%s'; the %s default is %s", tname,
			 d->subject, tname, tier);
	else
		snprintf(d->reason, sizeof(d->reason), "%s rule '%s' (%s) matches '%s': %s", tname, d->rule,
			 d->matched->where, d->subject, tier);
}

int sb_classify(const struct sb_policy *p, const struct sb_memory *mem, const struct sb_event *ev,
		struct sb_decision *d, struct sb_err *err)
{
	struct exec_subject *xs = NULL;
	char path[SB_PATH_MAX + 1];
	char key[SB_EVENT_KEY_MAX];
	bool has_path = false, has_key = false;
	struct sb_netdst dst;
	char host[256];
	int rc = 0;

	memset(d, 0, sizeof(*d));
	d->memory_index = -1;
	d->enforced = p->mode == SB_MODE_ENFORCE;

	switch (ev->kind) {
	case SB_EV_EXEC:
		d->trigger = SB_TRIG_SHELL;
		xs = malloc(sizeof(*xs));
		if (!xs)
			return -ENOMEM;
		rc = build_exec_subject(ev, xs, err);
		if (rc)
			goto out;
		classify_exec(p, xs, d);
		break;
	case SB_EV_WRITE:
	case SB_EV_READ:
		d->trigger = ev->kind == SB_EV_WRITE ? SB_TRIG_WRITE : SB_TRIG_READ;
		if (!ev->path || !ev->path[0])
			return sb_errf(err, -EINVAL, "a %s event needs \"path\"", sb_trigger_name(d->trigger));
		if (ev->path[0] != '/' && !ev->cwd)
			return sb_errf(err, -EINVAL, "path '%s' is relative and no \"cwd\" was given", ev->path);
		rc = sb_path_normalize(ev->path, ev->cwd, path, sizeof(path));
		if (rc)
			return sb_errf(err, rc, "path '%s' is invalid or too long", ev->path);
		has_path = true;
		classify_path(p, d->trigger, path, ev->kind == SB_EV_WRITE ? ev->op : SB_WOP_OPEN, d);
		break;
	case SB_EV_CONNECT:
		d->trigger = SB_TRIG_NETWORK;
		dst = ev->dst;
		if (dst.host) {
			if (sb_hostname_canon(dst.host, host, sizeof(host)))
				return sb_errf(err, -EINVAL, "host '%s' is not a valid host name", dst.host);
			dst.host = host;
		}
		if (!dst.has_addr && !dst.host)
			return sb_errf(err, -EINVAL, "a connect event needs \"addr\" or \"host\"");
		classify_net(p, &dst, d);
		break;
	default:
		return sb_errf(err, -EINVAL, "unknown event kind %d", (int)ev->kind);
	}

	if (d->tier == SB_TIER_ESCALATE && !d->is_protected && mem && mem->n) {
		size_t i;
		struct sb_event canon = *ev;

		if (ev->kind == SB_EV_CONNECT)
			canon.dst = dst;
		if (sb_event_key(p, ev, key, sizeof(key), NULL) == 0)
			has_key = true;
		for (i = 0; i < mem->n; i++) {
			if (memory_matches(&mem->items[i], d->trigger, &canon, xs, has_path ? path : NULL,
					   has_key ? key : NULL)) {
				d->tier = SB_TIER_ALLOW;
				d->remembered = true;
				d->memory_index = (long)i;
				snprintf(d->rule, sizeof(d->rule), "remembered");
				snprintf(d->reason, sizeof(d->reason),
					 "%s '%s' allowed by a remembered decision (%s '%s'); the policy alone would escalate it",
					 sb_trigger_name(d->trigger), d->subject,
					 sb_remember_scope_name(mem->items[i].scope), mem->items[i].value);
				goto out;
			}
		}
	}
	write_reason(d);
out:
	free(xs);
	return rc;
}

int sb_event_key(const struct sb_policy *p, const struct sb_event *ev, char *out, size_t out_len,
		 struct sb_err *err)
{
	char path[SB_PATH_MAX + 1];
	char addr[INET6_ADDRSTRLEN] = "";
	struct exec_subject *xs;
	int rc, n;

	(void)p;
	switch (ev->kind) {
	case SB_EV_EXEC:
		xs = malloc(sizeof(*xs));
		if (!xs)
			return -ENOMEM;
		rc = build_exec_subject(ev, xs, err);
		if (!rc)
			n = snprintf(out, out_len, "exec:%s", xs->has_full ? xs->full : xs->cmd[0]);
		free(xs);
		if (rc)
			return rc;
		break;
	case SB_EV_WRITE:
	case SB_EV_READ:
		if (!ev->path || (ev->path[0] != '/' && !ev->cwd))
			return sb_errf(err, -EINVAL, "event has no usable path");
		rc = sb_path_normalize(ev->path, ev->cwd, path, sizeof(path));
		if (rc)
			return sb_errf(err, rc, "path '%s' is invalid or too long", ev->path);
		if (ev->kind == SB_EV_WRITE)
			n = snprintf(out, out_len, "write:%s:%s", sb_write_op_name(ev->op), path);
		else
			n = snprintf(out, out_len, "read:%s", path);
		break;
	case SB_EV_CONNECT:
		if (ev->dst.has_addr)
			inet_ntop(ev->dst.family, ev->dst.addr, addr, sizeof(addr));
		n = snprintf(out, out_len, "connect:%s:%s%s%s:%u", ev->proto == SB_PROTO_UDP ? "udp" : "tcp",
			     ev->dst.host ? ev->dst.host : "", ev->dst.host && addr[0] ? "/" : "", addr,
			     ev->dst.port);
		break;
	default:
		return sb_errf(err, -EINVAL, "unknown event kind");
	}
	if (n < 0 || (size_t)n >= out_len)
		return sb_errf(err, -ENAMETOOLONG, "event key too long");
	return 0;
}
