/* Policy JSON -> struct sb_policy, validating everything. Any problem is
 * an error naming where it is and what was expected; nothing is skipped
 * or defaulted silently, and unknown keys are errors. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netpat.h"
#include "pathpat.h"
#include "policy.h"
#include "policy_internal.h"
#include "shellpat.h"

#define SB_POLICY_MAX_BYTES (4u << 20)
#define SB_POLICY_MAX_RULES 100000

const char *const sb_protected_patterns[] = {
	".sandbox/**",
	".git/hooks/**",
	".claude/settings*.json",
	".mcp.json",
	".cursor/mcp.json",
	NULL,
};

static const char *const top_keys[] = {
	"version", "mode", "root", "escalation_timeout_seconds", "triggers",
	"shell", "write", "network", "read", "user_namespaces", NULL,
};

static bool key_known(const char *k, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(k, *list))
			return true;
	return false;
}

static void offset_to_line_col(const char *text, size_t off, int *line, int *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* cJSON keeps duplicate keys; a second "write" block would silently
 * shadow or be shadowed by the first, so duplicates are errors. */
static int check_duplicates(const cJSON *node, char *path, size_t path_len, struct sb_err *err)
{
	const cJSON *a, *b;
	size_t base = strlen(path);
	int idx = 0, rc;

	if (cJSON_IsObject(node)) {
		for (a = node->child; a; a = a->next) {
			for (b = a->next; b; b = b->next) {
				if (a->string && b->string && !strcmp(a->string, b->string))
					return sb_errf(err, -EINVAL, "%s: duplicate key \"%s\"", path, a->string);
			}
		}
	}
	if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
		return 0;
	for (a = node->child; a; a = a->next, idx++) {
		if (cJSON_IsObject(node))
			snprintf(path + base, path_len - base, ".%s", a->string ? a->string : "?");
		else
			snprintf(path + base, path_len - base, "[%d]", idx);
		rc = check_duplicates(a, path, path_len, err);
		path[base] = '\0';
		if (rc)
			return rc;
	}
	return 0;
}

static int resolve_dir(const char *in, char **out)
{
	char real[PATH_MAX];
	char norm[SB_PATH_MAX + 1];
	int rc;

	/* Agents' paths are resolved through symlinks before classification,
	 * so root and home must be too, when they exist. */
	if (realpath(in, real))
		in = real;
	rc = sb_path_normalize(in, NULL, norm, sizeof(norm));
	if (rc)
		return rc;
	*out = strdup(norm);
	return *out ? 0 : -ENOMEM;
}

static int set_root(struct sb_policy *p, const cJSON *root, const struct sb_policy_opts *opts,
		    struct sb_err *err)
{
	char cwd[PATH_MAX], joined[SB_PATH_MAX * 2 + 2];
	const char *spec = ".";
	const char *base = opts ? opts->base_dir : NULL;
	int rc;

	if (root) {
		if (!cJSON_IsString(root) || !root->valuestring[0])
			return sb_errf(err, -EINVAL, "$.root: expected a non-empty string (a directory)");
		spec = root->valuestring;
		/* Validated even when --root overrides it: the file must be valid
		 * on its own, wherever it is used next. */
		if (spec[0] == '~' && spec[1] && spec[1] != '/')
			return sb_errf(err, -EINVAL, "$.root: '%s' cannot be resolved (only ~ and ~/... are supported)",
				       spec);
	}
	if (opts && opts->root_override) {
		spec = opts->root_override;
		base = NULL;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return sb_errf(err, -errno, "cannot read the current directory");
	if (!base)
		base = cwd;
	if (spec[0] == '/') {
		snprintf(joined, sizeof(joined), "%s", spec);
	} else if (spec[0] == '~') {
		if (!p->home || (spec[1] && spec[1] != '/'))
			return sb_errf(err, -EINVAL, "$.root: '%s' cannot be resolved (only ~ and ~/... are supported)",
				       spec);
		snprintf(joined, sizeof(joined), "%s%s", p->home, spec + 1);
	} else {
		if (snprintf(joined, sizeof(joined), "%s/%s", base, spec) >= (int)sizeof(joined))
			return sb_errf(err, -ENAMETOOLONG, "$.root: path too long");
	}
	rc = resolve_dir(joined, &p->root);
	if (rc)
		return sb_errf(err, rc, "$.root: '%s' is not a valid path", spec);
	return 0;
}

static int set_home(struct sb_policy *p, const struct sb_policy_opts *opts, struct sb_err *err)
{
	const char *home = opts ? opts->home_override : NULL;
	int rc;

	if (!home)
		home = getenv("HOME");
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(getuid());

		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || home[0] != '/')
		return sb_errf(err, -EINVAL, "cannot tell the agent user's home directory: pass --home DIR");
	rc = resolve_dir(home, &p->home);
	if (rc)
		return sb_errf(err, rc, "home directory '%s' is not a valid path", home);
	return 0;
}

static int add_warning(struct sb_policy *p, const char *fmt, const char *a, const char *b, const char *c)
{
	char buf[1024];
	char **nw;

	snprintf(buf, sizeof(buf), fmt, a, b, c);
	nw = realloc(p->warnings, (p->nwarnings + 1) * sizeof(*nw));
	if (!nw)
		return -ENOMEM;
	p->warnings = nw;
	p->warnings[p->nwarnings] = strdup(buf);
	if (!p->warnings[p->nwarnings])
		return -ENOMEM;
	p->nwarnings++;
	return 0;
}

static struct sb_rule *new_rule(struct sb_policy *p, size_t *cap)
{
	if (p->nrules == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct sb_rule *nr = realloc(p->rules, ncap * sizeof(*nr));

		if (!nr)
			return NULL;
		p->rules = nr;
		*cap = ncap;
	}
	memset(&p->rules[p->nrules], 0, sizeof(p->rules[0]));
	return &p->rules[p->nrules];
}

static int rule_compile(struct sb_policy *p, struct sb_rule *r, const char *text, struct sb_err *err)
{
	switch (r->trigger) {
	case SB_TRIG_SHELL:
		return sb_shellpat_compile(text, p->root, p->home, &r->shell, err);
	case SB_TRIG_WRITE:
	case SB_TRIG_READ:
		return sb_pathpat_compile(text, p->root, p->home, &r->path, err);
	case SB_TRIG_NETWORK:
		return sb_netpat_compile(text, &r->net, err);
	}
	return -EINVAL;
}

int sb_rule_set(struct sb_policy *p, struct sb_rule *r, enum sb_trigger trigger, enum sb_tier tier,
		const char *text, const char *where, struct sb_err *err)
{
	int rc;

	r->trigger = trigger;
	r->tier = tier;
	r->text = strdup(text);
	r->where = strdup(where);
	if (!r->text || !r->where) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = rule_compile(p, r, text, err);
	if (rc == 0)
		return 0;
fail:
	free(r->text);
	free(r->where);
	r->text = r->where = NULL;
	return rc;
}

static int add_protections(struct sb_policy *p, size_t *cap, struct sb_err *err)
{
	const char *const *pp;
	int rc;

	for (pp = sb_protected_patterns; *pp; pp++) {
		struct sb_rule *r = new_rule(p, cap);

		if (!r)
			return -ENOMEM;
		r->is_protected = true;
		rc = sb_rule_set(p, r, SB_TRIG_WRITE, SB_TIER_DENY, *pp, "protected", err);
		if (rc)
			return rc;
		p->nrules++;
	}
	return 0;
}

static int parse_trigger_rules(struct sb_policy *p, enum sb_trigger trig, const cJSON *obj, size_t *cap,
			       struct sb_err *err)
{
	static const char *const tier_keys[] = { "allow", "observe", "escalate", "deny", NULL };
	const char *tname = sb_trigger_name(trig);
	const cJSON *tierobj;
	int rc;

	if (!cJSON_IsObject(obj))
		return sb_errf(err, -EINVAL,
			       "$.%s: expected an object like {\"allow\": [...], \"escalate\": [...], \"deny\": [...]}",
			       tname);
	cJSON_ArrayForEach(tierobj, obj) {
		enum sb_tier tier;
		const cJSON *item;
		int idx = 0;

		if (sb_tier_parse(tierobj->string, &tier) || !key_known(tierobj->string, tier_keys))
			return sb_errf(err, -EINVAL, "$.%s.%s: unknown key; expected one of allow, observe, escalate, deny",
				       tname, tierobj->string);
		if (!cJSON_IsArray(tierobj))
			return sb_errf(err, -EINVAL, "$.%s.%s: expected an array of strings", tname, tierobj->string);
		cJSON_ArrayForEach(item, tierobj) {
			char where[128];
			struct sb_rule *r;

			snprintf(where, sizeof(where), "$.%s.%s[%d]", tname, tierobj->string, idx++);
			if (!cJSON_IsString(item))
				return sb_errf(err, -EINVAL, "%s: expected a string", where);
			if (p->nrules >= SB_POLICY_MAX_RULES)
				return sb_errf(err, -E2BIG, "%s: more than %d rules", where, SB_POLICY_MAX_RULES);
			r = new_rule(p, cap);
			if (!r)
				return -ENOMEM;
			rc = sb_rule_set(p, r, trig, tier, item->valuestring, where, err);
			if (rc) {
				if (err && err->msg[0])
					sb_err_prefix(err, "%s: ", where);
				return rc;
			}
			p->nrules++;
		}
	}
	return 0;
}

static int parse_triggers(struct sb_policy *p, const cJSON *obj, struct sb_err *err)
{
	const cJSON *it;

	/* Without a "triggers" block: ask about commands, writes and network,
	 * allow reads (protected reads are listed as rules). */
	p->defaults[SB_TRIG_SHELL] = SB_TIER_ESCALATE;
	p->defaults[SB_TRIG_WRITE] = SB_TIER_ESCALATE;
	p->defaults[SB_TRIG_NETWORK] = SB_TIER_ESCALATE;
	p->defaults[SB_TRIG_READ] = SB_TIER_ALLOW;
	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj))
		return sb_errf(err, -EINVAL, "$.triggers: expected an object like {\"shell\": \"escalate\", ...}");
	cJSON_ArrayForEach(it, obj) {
		enum sb_trigger t;
		enum sb_tier tier;

		if (sb_trigger_parse(it->string, &t))
			return sb_errf(err, -EINVAL,
				       "$.triggers.%s: unknown trigger; expected shell, write, network or read",
				       it->string);
		if (!cJSON_IsString(it) || sb_tier_parse(it->valuestring, &tier))
			return sb_errf(err, -EINVAL,
				       "$.triggers.%s: expected \"allow\", \"observe\", \"escalate\" or \"deny\"",
				       it->string);
		p->defaults[t] = tier;
	}
	return 0;
}

static int cmp_rule_idx(const void *a, const void *b, void *arg)
{
	const struct sb_policy *p = arg;
	const struct sb_rule *ra = &p->rules[*(const size_t *)a];
	const struct sb_rule *rb = &p->rules[*(const size_t *)b];
	int c;

	if (ra->trigger != rb->trigger)
		return (int)ra->trigger - (int)rb->trigger;
	c = strcmp(ra->text, rb->text);
	if (c)
		return c;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The same pattern in two tiers is legal (the stricter wins) but almost
 * always a mistake worth telling; sorting keeps this O(n log n) for large
 * generated policies. */
static int find_repeats(struct sb_policy *p)
{
	size_t *idx, i, n = 0;
	int rc = 0;

	idx = malloc((p->nrules + 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < p->nrules; i++)
		if (!p->rules[i].is_protected)
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_rule_idx, p);
	for (i = 1; i < n && !rc; i++) {
		const struct sb_rule *a = &p->rules[idx[i - 1]], *b = &p->rules[idx[i]];

		if (a->trigger != b->trigger || strcmp(a->text, b->text))
			continue;
		if (a->tier != b->tier)
			rc = add_warning(p, "%s: '%s' also appears at %s; the stricter tier wins", b->where,
					 b->text, a->where);
		else
			rc = add_warning(p, "%s: '%s' repeats %s", b->where, b->text, a->where);
	}
	free(idx);
	return rc;
}

static int parse_object(struct sb_policy *p, const cJSON *doc, const struct sb_policy_opts *opts,
			struct sb_err *err)
{
	const cJSON *it, *v;
	size_t cap = 0;
	int rc, t;
	char path[512] = "$";

	if (!cJSON_IsObject(doc))
		return sb_errf(err, -EINVAL, "$: expected a JSON object at the top level");
	rc = check_duplicates(doc, path, sizeof(path), err);
	if (rc)
		return rc;
	cJSON_ArrayForEach(it, doc) {
		if (!key_known(it->string, top_keys))
			return sb_errf(err, -EINVAL,
				       "$.%s: unknown key; expected version, mode, root, escalation_timeout_seconds, triggers, shell, write, network, read or user_namespaces",
				       it->string);
	}

	v = cJSON_GetObjectItemCaseSensitive(doc, "version");
	if (!v)
		return sb_errf(err, -EINVAL, "$.version: missing; expected \"version\": 1");
	if (!cJSON_IsNumber(v) || v->valuedouble != 1)
		return sb_errf(err, -EINVAL, "$.version: expected 1 (the only version this program reads)");
	p->version = 1;

	v = cJSON_GetObjectItemCaseSensitive(doc, "mode");
	p->mode = SB_MODE_ENFORCE;
	if (v) {
		if (cJSON_IsString(v) && !strcmp(v->valuestring, "enforce"))
			p->mode = SB_MODE_ENFORCE;
		else if (cJSON_IsString(v) && !strcmp(v->valuestring, "audit"))
			p->mode = SB_MODE_AUDIT;
		else
			return sb_errf(err, -EINVAL, "$.mode: expected \"enforce\" or \"audit\"");
	}

	v = cJSON_GetObjectItemCaseSensitive(doc, "escalation_timeout_seconds");
	p->escalation_timeout = 300;
	if (v) {
		/* Range first: converting an out-of-range double to int is undefined. */
		if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= 86400) ||
		    v->valuedouble != (double)(int)v->valuedouble)
			return sb_errf(err, -EINVAL, "$.escalation_timeout_seconds: expected a whole number of seconds from 1 to 86400");
		p->escalation_timeout = (unsigned)v->valuedouble;
	}

	v = cJSON_GetObjectItemCaseSensitive(doc, "user_namespaces");
	p->deny_user_namespaces = false;
	if (v) {
		if (cJSON_IsString(v) && !strcmp(v->valuestring, "deny"))
			p->deny_user_namespaces = true;
		else if (!(cJSON_IsString(v) && !strcmp(v->valuestring, "allow")))
			return sb_errf(err, -EINVAL, "$.user_namespaces: expected \"allow\" or \"deny\"");
	}

	rc = set_home(p, opts, err);
	if (rc)
		return rc;
	rc = set_root(p, cJSON_GetObjectItemCaseSensitive(doc, "root"), opts, err);
	if (rc)
		return rc;
	rc = parse_triggers(p, cJSON_GetObjectItemCaseSensitive(doc, "triggers"), err);
	if (rc)
		return rc;
	rc = add_protections(p, &cap, err);
	if (rc)
		return rc;
	for (t = 0; t < SB_TRIG_COUNT; t++) {
		v = cJSON_GetObjectItemCaseSensitive(doc, sb_trigger_name((enum sb_trigger)t));
		if (!v)
			continue;
		rc = parse_trigger_rules(p, (enum sb_trigger)t, v, &cap, err);
		if (rc)
			return rc;
	}
	return find_repeats(p);
}

int sb_policy_parse(const char *json, size_t len, const struct sb_policy_opts *opts,
		    struct sb_policy **out, struct sb_err *err)
{
	const char *src = opts && opts->source_name ? opts->source_name : "policy";
	const char *end = NULL;
	struct sb_policy *p;
	cJSON *doc;
	char *copy;
	int rc;

	*out = NULL;
	if (len > SB_POLICY_MAX_BYTES)
		return sb_errf(err, -EFBIG, "%s: larger than %u bytes", src, SB_POLICY_MAX_BYTES);
	if (memchr(json, '\0', len))
		return sb_errf(err, -EINVAL, "%s: contains a NUL byte at offset %zu; a policy is JSON text", src,
			       (size_t)((const char *)memchr(json, '\0', len) - json));
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, json, len);
	copy[len] = '\0';
	doc = cJSON_ParseWithOpts(copy, &end, 1);
	if (!doc) {
		int line, col;
		size_t off = end ? (size_t)(end - copy) : 0;

		if (!end && cJSON_GetErrorPtr())
			off = (size_t)(cJSON_GetErrorPtr() - copy);
		if (off > len)
			off = len;
		offset_to_line_col(copy, off, &line, &col);
		{
			int snip = (int)strcspn(copy + off, "\r\n");

			rc = sb_errf(err, -EINVAL,
				     "%s:%d:%d: invalid JSON near '%.*s'; expected a JSON object (see docs/policy.md)",
				     src, line, col, snip > 20 ? 20 : snip, copy + off);
		}
		free(copy);
		return rc;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		cJSON_Delete(doc);
		free(copy);
		return -ENOMEM;
	}
	p->source = strdup(src);
	if (!p->source) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = parse_object(p, doc, opts, err);
	if (rc) {
		sb_err_prefix(err, "%s: ", src);
		goto fail;
	}
	rc = sb_policy_compute_hash(p);
	if (rc)
		goto fail;
	cJSON_Delete(doc);
	free(copy);
	*out = p;
	return 0;
fail:
	if (rc == -ENOMEM && err)
		sb_errf(err, rc, "%s: out of memory", src);
	cJSON_Delete(doc);
	free(copy);
	sb_policy_free(p);
	return rc;
}

int sb_read_file(const char *path, size_t max, char **out, size_t *out_len, struct sb_err *err)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sb_errf(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return sb_errf(err, -EINVAL, "%s: not a regular file", path);
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		return sb_errf(err, -EFBIG, "%s: larger than %zu bytes", path, max);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return sb_errf(err, -e, "%s: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*out = buf;
	*out_len = got;
	return 0;
}

/* The project folder a policy file belongs to: its directory, or the
 * parent when it sits in .sandbox/ (the default location). */
static void project_dir_of(const char *path, char *out, size_t out_len)
{
	char abs[PATH_MAX];
	char *slash;

	if (!realpath(path, abs))
		snprintf(abs, sizeof(abs), "%s", path);
	slash = strrchr(abs, '/');
	if (slash && slash != abs)
		*slash = '\0';
	else
		strcpy(abs, "/");
	slash = strrchr(abs, '/');
	if (slash && !strcmp(slash, "/.sandbox")) {
		if (slash == abs)
			abs[1] = '\0';
		else
			*slash = '\0';
	}
	snprintf(out, out_len, "%s", abs);
}

int sb_policy_load_file(const char *path, const struct sb_policy_opts *opts, struct sb_policy **out,
			struct sb_err *err)
{
	struct sb_policy_opts o = { 0 };
	char base[PATH_MAX];
	char *buf;
	size_t len;
	int rc;

	*out = NULL;
	rc = sb_read_file(path, SB_POLICY_MAX_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	if (opts)
		o = *opts;
	if (!o.base_dir) {
		project_dir_of(path, base, sizeof(base));
		o.base_dir = base;
	}
	if (!o.source_name)
		o.source_name = path;
	rc = sb_policy_parse(buf, len, &o, out, err);
	free(buf);
	return rc;
}

int sb_policy_load_default(const struct sb_policy_opts *opts, struct sb_policy **out, struct sb_err *err)
{
	struct sb_policy_opts o = { 0 };

	if (opts)
		o = *opts;
	if (!o.source_name)
		o.source_name = "<default>";
	return sb_policy_parse(sb_default_policy_json, strlen(sb_default_policy_json), &o, out, err);
}

void sb_policy_free(struct sb_policy *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nrules; i++)
		sb_rule_free(&p->rules[i]);
	free(p->rules);
	for (i = 0; i < p->nwarnings; i++)
		free(p->warnings[i]);
	free(p->warnings);
	free(p->root);
	free(p->home);
	free(p->source);
	free(p);
}

void sb_rule_free(struct sb_rule *r)
{
	switch (r->trigger) {
	case SB_TRIG_SHELL:
		sb_shellpat_free(&r->shell);
		break;
	case SB_TRIG_WRITE:
	case SB_TRIG_READ:
		sb_pathpat_free(&r->path);
		break;
	case SB_TRIG_NETWORK:
		sb_netpat_free(&r->net);
		break;
	}
	free(r->text);
	free(r->where);
}
