/* Remembered decisions: what a human already approved, in a scope. They
 * can only turn an escalate into an allow (enforced in sb_classify). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "pathpat.h"

static const char *const scope_names[] = { "once", "command", "prefix", "dir", "host" };
static const char *const wop_names[SB_WOP__COUNT] = {
	"open", "create", "truncate", "unlink", "rename-from", "rename-to", "link", "symlink",
	"mkdir", "rmdir", "mknod", "chmod", "chown", "setxattr", "utimes", "connect-unix",
};

const char *sb_remember_scope_name(enum sb_remember_scope s)
{
	return (unsigned)s < sizeof(scope_names) / sizeof(scope_names[0]) ? scope_names[s] : "?";
}

int sb_remember_scope_parse(const char *s, enum sb_remember_scope *out)
{
	size_t i;

	for (i = 0; i < sizeof(scope_names) / sizeof(scope_names[0]); i++) {
		if (!strcmp(s, scope_names[i])) {
			*out = (enum sb_remember_scope)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sb_write_op_name(enum sb_write_op op)
{
	return (unsigned)op < SB_WOP__COUNT ? wop_names[op] : "?";
}

int sb_write_op_parse(const char *s, enum sb_write_op *out)
{
	int i;

	for (i = 0; i < SB_WOP__COUNT; i++) {
		if (!strcmp(s, wop_names[i])) {
			*out = (enum sb_write_op)i;
			return 0;
		}
	}
	return -EINVAL;
}

void sb_memory_init(struct sb_memory *m)
{
	memset(m, 0, sizeof(*m));
}

void sb_memory_free(struct sb_memory *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->items[i].value);
	free(m->items);
	memset(m, 0, sizeof(*m));
}

void sb_memory_remove(struct sb_memory *m, size_t i)
{
	if (i >= m->n)
		return;
	free(m->items[i].value);
	memmove(&m->items[i], &m->items[i + 1], (m->n - i - 1) * sizeof(m->items[0]));
	m->n--;
}

static int count_words(const char *s)
{
	int n = 0;
	bool in = false;

	for (; *s; s++) {
		if (isspace((unsigned char)*s)) {
			in = false;
		} else if (!in) {
			in = true;
			n++;
		}
	}
	return n;
}

int sb_memory_add(struct sb_memory *m, enum sb_remember_scope scope, enum sb_trigger trigger,
		  const char *value, struct sb_err *err)
{
	struct sb_remembered it = { .scope = scope, .trigger = trigger, .port = -1 };
	char buf[SB_PATH_MAX + 1];

	if (!value || !value[0])
		return sb_errf(err, -EINVAL, "a remembered decision needs a value");
	switch (scope) {
	case SB_REM_ONCE:
		snprintf(buf, sizeof(buf), "%s", value);
		break;
	case SB_REM_COMMAND:
	case SB_REM_PREFIX:
		if (trigger != SB_TRIG_SHELL)
			return sb_errf(err, -EINVAL, "scope '%s' applies to shell commands only",
				       sb_remember_scope_name(scope));
		if (scope == SB_REM_PREFIX && count_words(value) < 2)
			return sb_errf(err, -EINVAL,
				       "prefix '%s' is too broad: a remembered prefix needs at least two words (e.g. 'git push')",
				       value);
		/* Canonical spacing, like command lines. */
		if (snprintf(buf, sizeof(buf), "%s", value) >= (int)sizeof(buf))
			return sb_errf(err, -ENAMETOOLONG, "value too long");
		{
			char *w = buf, *r = buf;
			bool sp = false;

			while (*r && isspace((unsigned char)*r))
				r++;
			for (; *r; r++) {
				if (isspace((unsigned char)*r)) {
					sp = true;
					continue;
				}
				if (sp && w != buf)
					*w++ = ' ';
				sp = false;
				*w++ = *r;
			}
			*w = '\0';
		}
		if (!buf[0])
			return sb_errf(err, -EINVAL, "a remembered %s cannot be blank", sb_remember_scope_name(scope));
		break;
	case SB_REM_DIR:
		if (trigger == SB_TRIG_NETWORK)
			return sb_errf(err, -EINVAL, "scope 'dir' applies to writes, reads and executables");
		if (value[0] != '/' || sb_path_normalize(value, NULL, buf, sizeof(buf)))
			return sb_errf(err, -EINVAL, "dir '%s' must be an absolute path", value);
		if (!strcmp(buf, "/"))
			return sb_errf(err, -EINVAL, "dir '/' is too broad to remember");
		break;
	case SB_REM_HOST: {
		struct sb_netdst d = { 0 };
		char host[256];
		const char *colon;

		if (trigger != SB_TRIG_NETWORK)
			return sb_errf(err, -EINVAL, "scope 'host' applies to network connections only");
		snprintf(buf, sizeof(buf), "%s", value);
		/* host:port, [v6]:port, or a bare host/address */
		if (buf[0] == '[') {
			char *close = strchr(buf, ']');

			if (!close)
				return sb_errf(err, -EINVAL, "host '%s': missing ']'", value);
			*close = '\0';
			if (close[1] == ':')
				it.port = atoi(close + 2);
			else if (close[1])
				return sb_errf(err, -EINVAL, "host '%s': expected ':port' after ']'", value);
			memmove(buf, buf + 1, strlen(buf));
		} else if ((colon = strchr(buf, ':')) && !strchr(colon + 1, ':')) {
			it.port = atoi(colon + 1);
			buf[colon - buf] = '\0';
		}
		if (it.port == 0 || it.port > 65535)
			return sb_errf(err, -EINVAL, "host '%s': invalid port", value);
		if (sb_netaddr_parse(buf, &d) == 0) {
			char a[INET6_ADDRSTRLEN];

			inet_ntop(d.family, d.addr, a, sizeof(a));
			snprintf(buf, sizeof(buf), "%s", a);
		} else if (sb_hostname_canon(buf, host, sizeof(host)) == 0) {
			snprintf(buf, sizeof(buf), "%s", host);
		} else {
			return sb_errf(err, -EINVAL, "host '%s' is not a host name or address", value);
		}
		break;
	}
	default:
		return sb_errf(err, -EINVAL, "unknown scope");
	}
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 8;
		struct sb_remembered *ni = realloc(m->items, ncap * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		m->items = ni;
		m->cap = ncap;
	}
	it.value = strdup(buf);
	if (!it.value)
		return -ENOMEM;
	m->items[m->n++] = it;
	return 0;
}
