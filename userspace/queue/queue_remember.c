/* What a decision may say about its request: remember scopes, their
 * default values and validation. The scopes and their rules are the
 * classifier's (policy/classify.h, sb_memory_add); this file only derives
 * values from a request and refuses what the classifier would refuse, so a
 * decision in done/ can always be loaded by the broker. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "queue.h"
#include "shellpat.h"

static int copy_out(char *out, size_t out_len, const char *s, struct sb_err *err)
{
	if (snprintf(out, out_len, "%s", s) >= (int)out_len)
		return sb_errf(err, -ENAMETOOLONG, "remembered value is longer than %zu bytes", out_len - 1);
	return 0;
}

/* The command line the classifier matches "command" memories against:
 * basename(argv[0]) and the arguments, or the hook's shell command. */
static int exec_cmdline(const struct sb_queue_request *r, char *out, size_t out_len, struct sb_err *err)
{
	const char *first = NULL;

	if (r->command && r->command[0])
		return copy_out(out, out_len, r->command, err);
	if (r->argc > 0 && r->argv[0] && r->argv[0][0])
		first = sb_basename(r->argv[0]);
	else if (r->path)
		first = sb_basename(r->path);
	if (!first || !first[0])
		return sb_errf(err, -EINVAL, "the request has no command line");
	if (sb_cmdline_build(first, r->argv, r->argc, out, out_len))
		return sb_errf(err, -ENAMETOOLONG, "the command line is too long to remember");
	return 0;
}

static int first_words(const char *s, int n, char *out, size_t out_len, struct sb_err *err)
{
	size_t o = 0;
	int words = 0;

	while (*s) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || words == n)
			break;
		if (words && o + 1 < out_len)
			out[o++] = ' ';
		for (; *s && !isspace((unsigned char)*s); s++) {
			if (o + 1 >= out_len)
				return sb_errf(err, -ENAMETOOLONG, "the command is too long to remember");
			out[o++] = *s;
		}
		words++;
	}
	out[o] = '\0';
	if (words < n)
		return sb_errf(err, -EINVAL,
			       "scope 'prefix' needs a command of at least two words; '%s' has one (use 'command')",
			       out);
	return 0;
}

static int dir_of(const char *path, char *out, size_t out_len, struct sb_err *err)
{
	size_t l;
	char *slash;

	if (!path || path[0] != '/')
		return sb_errf(err, -EINVAL, "scope 'dir' needs a request with an absolute path");
	if (copy_out(out, out_len, path, err))
		return -ENAMETOOLONG;
	l = strlen(out);
	while (l > 1 && out[l - 1] == '/')
		out[--l] = '\0';
	slash = strrchr(out, '/');
	if (slash == out)
		out[1] = '\0';
	else if (slash)
		*slash = '\0';
	return 0;
}

int sb_queue_remember_default(const struct sb_queue_request *r, enum sb_remember_scope s, char *out,
			      size_t out_len, struct sb_err *err)
{
	char cmd[SB_PATH_MAX + 1];
	int rc;

	out[0] = '\0';
	switch (s) {
	case SB_REM_ONCE:
		if (!r->key || !r->key[0])
			return sb_errf(err, -EINVAL, "the request has no key");
		return copy_out(out, out_len, r->key, err);
	case SB_REM_COMMAND:
	case SB_REM_PREFIX:
		if (r->trigger != SB_TRIG_SHELL)
			return sb_errf(err, -EINVAL, "scope '%s' applies to shell commands only",
				       sb_remember_scope_name(s));
		if (s == SB_REM_COMMAND)
			return exec_cmdline(r, out, out_len, err);
		rc = exec_cmdline(r, cmd, sizeof(cmd), err);
		return rc ? rc : first_words(cmd, 2, out, out_len, err);
	case SB_REM_DIR:
		if (r->trigger == SB_TRIG_NETWORK)
			return sb_errf(err, -EINVAL, "scope 'dir' applies to writes, reads and executables");
		if (r->trigger == SB_TRIG_SHELL && !r->path && r->argc > 0 && r->argv[0] && r->argv[0][0] == '/')
			return dir_of(r->argv[0], out, out_len, err);
		return dir_of(r->path, out, out_len, err);
	case SB_REM_HOST:
		if (r->trigger != SB_TRIG_NETWORK)
			return sb_errf(err, -EINVAL, "scope 'host' applies to network connections only");
		if (r->host && r->host[0])
			return copy_out(out, out_len, r->host, err);
		if (r->addr && r->addr[0])
			return copy_out(out, out_len, r->addr, err);
		return sb_errf(err, -EINVAL, "the request has no host or address");
	}
	return sb_errf(err, -EINVAL, "unknown remember scope");
}

static bool has_ctrl(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	}
	return false;
}

int sb_queue_decision_check(const struct sb_queue_request *r, struct sb_queue_decision *d, struct sb_err *err)
{
	struct sb_memory m;
	int rc;

	if (d->verdict != SB_QV_ALLOW && d->verdict != SB_QV_DENY)
		return sb_errf(err, -EINVAL, "a decision is allow or deny");
	if (strnlen(d->reviewer, sizeof(d->reviewer)) == sizeof(d->reviewer) || !d->reviewer[0] ||
	    has_ctrl(d->reviewer))
		return sb_errf(err, -EINVAL, "a decision needs a reviewer: 1 to %d printable characters",
			       SB_QUEUE_NAME_MAX);
	if (strnlen(d->reason, sizeof(d->reason)) == sizeof(d->reason))
		return sb_errf(err, -EINVAL, "the reason is longer than %zu bytes", sizeof(d->reason) - 1);
	if (d->timed_out && d->verdict != SB_QV_DENY)
		return sb_errf(err, -EINVAL, "a timeout can only deny");
	if (!d->remember)
		return 0;
	if (d->verdict != SB_QV_ALLOW)
		return sb_errf(err, -EINVAL,
			       "only an approval can be remembered (remembered decisions turn an escalation into an allow)");
	if ((unsigned)d->scope > SB_REM_HOST)
		return sb_errf(err, -EINVAL, "unknown remember scope");
	if (strnlen(d->remember_value, sizeof(d->remember_value)) == sizeof(d->remember_value))
		return sb_errf(err, -ENAMETOOLONG, "the remembered value is too long");
	if (!d->remember_value[0]) {
		rc = sb_queue_remember_default(r, d->scope, d->remember_value, sizeof(d->remember_value), err);
		if (rc)
			return rc;
	}
	/* "once" is this request and no other: its value is the request's key. */
	if (d->scope == SB_REM_ONCE && (!r->key || strcmp(d->remember_value, r->key)))
		return sb_errf(err, -EINVAL, "scope 'once' remembers exactly this request; its value must be the request's key");
	sb_memory_init(&m);
	rc = sb_memory_add(&m, d->scope, r->trigger, d->remember_value, err);
	if (!rc && m.n == 1) {
		const struct sb_remembered *it = &m.items[0];
		char v[sizeof(d->remember_value)];

		/* Store the canonical form; a host memory keeps its port. */
		if (it->scope == SB_REM_HOST && it->port >= 0)
			snprintf(v, sizeof(v), strchr(it->value, ':') ? "[%s]:%d" : "%s:%d", it->value, it->port);
		else
			snprintf(v, sizeof(v), "%s", it->value);
		rc = copy_out(d->remember_value, sizeof(d->remember_value), v, err);
	}
	/* sb_memory_add checks for emptiness before it canonicalises, so a
	 * command of blanks comes back empty: that remembers nothing sane. */
	if (!rc && !d->remember_value[0])
		rc = sb_errf(err, -EINVAL, "nothing to remember: the value is blank");
	sb_memory_free(&m);
	return rc;
}
