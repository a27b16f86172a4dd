/* The queue's file formats: request, decision, done (request + decision)
 * and lease, as JSON (docs/queue.md). Parsers take untrusted bytes and
 * check everything; serialisers are what the parsers accept, and writers
 * re-parse what they are about to write, so nothing unreadable is filed. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netpat.h"
#include "queue.h"

#define SBQ_VERSION 1
#define SBQ_VALUE_SHOW 48	/* how much of a bad value an error message quotes */

struct sb_queue_own {
	cJSON *doc;
	const char **argv;
	struct sb_queue_proc *chain;
};

static const char *const origin_names[] = { "kernel", "hook", "mcp" };
static const char *const state_names[] = { "none", "pending", "claimed", "done", "applied" };

const char *sb_queue_origin_name(enum sb_queue_origin o)
{
	return (unsigned)o < sizeof(origin_names) / sizeof(origin_names[0]) ? origin_names[o] : "?";
}

int sb_queue_origin_parse(const char *s, enum sb_queue_origin *out)
{
	size_t i;

	for (i = 0; i < sizeof(origin_names) / sizeof(origin_names[0]); i++) {
		if (!strcmp(s, origin_names[i])) {
			*out = (enum sb_queue_origin)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sb_queue_state_name(enum sb_queue_state s)
{
	return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

static const char *kind_name(enum sb_event_kind k)
{
	switch (k) {
	case SB_EV_EXEC:
		return "exec";
	case SB_EV_WRITE:
		return "write";
	case SB_EV_READ:
		return "read";
	case SB_EV_CONNECT:
		return "connect";
	}
	return "?";
}

static int kind_parse(const char *s, enum sb_event_kind *k)
{
	static const enum sb_event_kind all[] = { SB_EV_EXEC, SB_EV_WRITE, SB_EV_READ, SB_EV_CONNECT };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(s, kind_name(all[i]))) {
			*k = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

static enum sb_trigger kind_trigger(enum sb_event_kind k)
{
	switch (k) {
	case SB_EV_WRITE:
		return SB_TRIG_WRITE;
	case SB_EV_READ:
		return SB_TRIG_READ;
	case SB_EV_CONNECT:
		return SB_TRIG_NETWORK;
	case SB_EV_EXEC:
	default:
		return SB_TRIG_SHELL;
	}
}

/* ---- time ---------------------------------------------------------------- */

int64_t sb_queue_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sb_queue_time_format(int64_t ms, char out[SB_QUEUE_TIME_LEN])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&t, &tm)) {
		snprintf(out, SB_QUEUE_TIME_LEN, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(out, SB_QUEUE_TIME_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static int digits(const char *s, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Exactly YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z: one spelling per instant, so two
 * files cannot disagree about what a timestamp means. */
int sb_queue_time_parse(const char *s, int64_t *ms)
{
	struct tm tm = { 0 }, back;
	int y, mo, d, h, mi, se, frac = 0, nf = 0;
	time_t t;
	const char *p;

	if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
		return -EINVAL;
	if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) || digits(s + 11, 2, &h) ||
	    digits(s + 14, 2, &mi) || digits(s + 17, 2, &se))
		return -EINVAL;
	p = s + 19;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nf++) {
			if (nf < 3)
				frac = frac * 10 + (*p - '0');
		}
		if (nf == 0 || nf > 9)
			return -EINVAL;
		for (; nf < 3; nf++)
			frac *= 10;
	}
	if (p[0] != 'Z' || p[1])
		return -EINVAL;
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	t = timegm(&tm);
	/* timegm normalises Feb 30 into March; a real date survives the trip. */
	if (t == (time_t)-1 || !gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1)
		return -EINVAL;
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

/* ---- strict JSON helpers ------------------------------------------------- */

/* cJSON turns "\u0000" into a NUL that silently ends the C string, so
 * "git status\u0000; rm -rf ~" would show as "git status". Refuse it. */
static bool has_nul_escape(const char *s, size_t len)
{
	bool in_str = false;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!in_str) {
			if (s[i] == '"')
				in_str = true;
			continue;
		}
		if (s[i] == '"') {
			in_str = false;
		} else if (s[i] == '\\' && i + 1 < len) {
			if (s[i + 1] == 'u' && i + 5 < len && !strncmp(s + i + 2, "0000", 4))
				return true;
			i++;
		}
	}
	return false;
}

static void quote_value(const char *v, char out[SBQ_VALUE_SHOW + 8])
{
	size_t i, n = 0;

	for (i = 0; v[i] && n < SBQ_VALUE_SHOW; i++)
		out[n++] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	out[n] = '\0';
	if (v[i])
		strcpy(out + n, "...");
}

static int parse_doc(const char *text, size_t len, cJSON **doc, struct sb_err *err)
{
	const char *end = NULL;

	*doc = NULL;
	if (len > SB_QUEUE_FILE_MAX)
		return sb_errf(err, -EFBIG, "file larger than %u bytes", SB_QUEUE_FILE_MAX);
	if (len == 0)
		return sb_errf(err, -EINVAL, "empty file");
	if (memchr(text, '\0', len))
		return sb_errf(err, -EINVAL, "file contains a NUL byte");
	if (has_nul_escape(text, len))
		return sb_errf(err, -EINVAL, "a string contains \\u0000");
	*doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!*doc)
		return sb_errf(err, -EINVAL, "not valid JSON (truncated or corrupt)");
	while (end && end < text + len && isspace((unsigned char)*end))
		end++;
	if (!end || end != text + len) {
		cJSON_Delete(*doc);
		*doc = NULL;
		return sb_errf(err, -EINVAL, "trailing data after the JSON value");
	}
	if (!cJSON_IsObject(*doc)) {
		cJSON_Delete(*doc);
		*doc = NULL;
		return sb_errf(err, -EINVAL, "expected a JSON object");
	}
	return 0;
}

static int check_keys(const cJSON *o, const char *what, const char *const *allowed, struct sb_err *err)
{
	const cJSON *it, *other;
	const char *const *k;
	char q[SBQ_VALUE_SHOW + 8];

	cJSON_ArrayForEach(it, o) {
		for (k = allowed; *k && strcmp(*k, it->string); k++)
			;
		if (!*k) {
			quote_value(it->string, q);
			return sb_errf(err, -EINVAL, "%s: unknown field \"%s\"", what, q);
		}
		for (other = it->next; other; other = other->next) {
			if (!strcmp(other->string, it->string))
				return sb_errf(err, -EINVAL, "%s: duplicate field \"%s\"", what, it->string);
		}
	}
	return 0;
}

#define STR_REQUIRED 0x1u
#define STR_NONEMPTY 0x2u
#define STR_NOCTRL 0x4u		/* identifiers: no control characters */
#define STR_ABSPATH 0x8u

static int get_str(const cJSON *o, const char *what, const char *key, unsigned flags, size_t max,
		   const char **out, struct sb_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	const char *s;
	size_t i, n;

	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (flags & STR_REQUIRED)
			return sb_errf(err, -EINVAL, "%s: missing \"%s\"", what, key);
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return sb_errf(err, -EINVAL, "%s: \"%s\" must be a string", what, key);
	s = v->valuestring;
	n = strlen(s);
	if (n > max)
		return sb_errf(err, -EINVAL, "%s: \"%s\" is longer than %zu bytes", what, key, max);
	if ((flags & STR_NONEMPTY) && n == 0)
		return sb_errf(err, -EINVAL, "%s: \"%s\" must not be empty", what, key);
	if (flags & STR_NOCTRL) {
		for (i = 0; i < n; i++) {
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				return sb_errf(err, -EINVAL, "%s: \"%s\" contains a control character", what, key);
		}
	}
	if ((flags & STR_ABSPATH) && s[0] != '/')
		return sb_errf(err, -EINVAL, "%s: \"%s\" must be an absolute path", what, key);
	*out = s;
	return 0;
}

static int get_int(const cJSON *o, const char *what, const char *key, bool required, int64_t min,
		   int64_t max, int64_t *out, struct sb_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double d;

	if (!v) {
		if (required)
			return sb_errf(err, -EINVAL, "%s: missing \"%s\"", what, key);
		return 0;
	}
	d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
	if (!isfinite(d) || d < (double)min || d > (double)max || d != (double)(int64_t)d)
		return sb_errf(err, -EINVAL, "%s: \"%s\" must be a whole number from %lld to %lld", what, key,
			       (long long)min, (long long)max);
	*out = (int64_t)d;
	return 0;
}

static int get_time(const cJSON *o, const char *what, const char *key, bool required, int64_t *ms,
		    struct sb_err *err)
{
	const char *s;
	char q[SBQ_VALUE_SHOW + 8];
	int rc;

	*ms = 0;
	rc = get_str(o, what, key, required ? STR_REQUIRED : 0, SB_QUEUE_TIME_LEN, &s, err);
	if (rc || !s)
		return rc;
	if (sb_queue_time_parse(s, ms)) {
		quote_value(s, q);
		return sb_errf(err, -EINVAL, "%s: \"%s\" '%s' is not a UTC time like 2025-03-14T15:30:12.123Z",
			       what, key, q);
	}
	return 0;
}

static int get_version(const cJSON *o, const char *what, struct sb_err *err)
{
	int64_t v;
	int rc = get_int(o, what, "version", true, 0, 1000, &v, err);

	if (rc)
		return rc;
	if (v != SBQ_VERSION)
		return sb_errf(err, -EINVAL, "%s: unsupported version %lld (this build reads version %d)", what,
			       (long long)v, SBQ_VERSION);
	return 0;
}

/* ---- request ------------------------------------------------------------- */

static const char *const request_keys[] = {
	"version", "id", "created_at", "deadline", "origin", "trigger", "kind", "key", "event",
	"cwd", "pid", "chain", "rule", "reason", NULL,
};
static const char *const exec_keys[] = { "path", "argv", "command", NULL };
static const char *const write_keys[] = { "path", "op", NULL };
static const char *const read_keys[] = { "path", NULL };
static const char *const connect_keys[] = { "addr", "host", "port", "proto", NULL };
static const char *const proc_keys[] = { "pid", "comm", "cmdline", NULL };

static int parse_event(const cJSON *ev, struct sb_queue_request *r, struct sb_queue_own *own,
		       struct sb_err *err)
{
	const char *what = "event";
	const char *s;
	int64_t v;
	int rc;

	if (!cJSON_IsObject(ev))
		return sb_errf(err, -EINVAL, "\"event\" must be an object");
	switch (r->kind) {
	case SB_EV_EXEC: {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(ev, "argv"), *it;
		size_t i = 0;

		if ((rc = check_keys(ev, what, exec_keys, err)) ||
		    (rc = get_str(ev, what, "path", STR_NONEMPTY | STR_ABSPATH, SB_PATH_MAX, &r->path, err)) ||
		    (rc = get_str(ev, what, "command", 0, SB_QUEUE_TEXT_MAX, &r->command, err)))
			return rc;
		if (a && !cJSON_IsNull(a)) {
			int n = cJSON_GetArraySize(a);

			if (!cJSON_IsArray(a) || n > SB_QUEUE_ARGV_MAX)
				return sb_errf(err, -EINVAL, "event: \"argv\" must be an array of at most %d strings",
					       SB_QUEUE_ARGV_MAX);
			own->argv = calloc((size_t)n + 1, sizeof(*own->argv));
			if (!own->argv)
				return -ENOMEM;
			cJSON_ArrayForEach(it, a) {
				if (!cJSON_IsString(it) || !it->valuestring)
					return sb_errf(err, -EINVAL, "event: \"argv\"[%zu] must be a string", i);
				own->argv[i++] = it->valuestring;
			}
			r->argv = own->argv;
			r->argc = i;
		}
		if (r->argc == 0 && (!r->command || !r->command[0]))
			return sb_errf(err, -EINVAL, "event: an exec request needs a non-empty \"argv\" or \"command\"");
		return 0;
	}
	case SB_EV_WRITE:
	case SB_EV_READ:
		if ((rc = check_keys(ev, what, r->kind == SB_EV_WRITE ? write_keys : read_keys, err)) ||
		    (rc = get_str(ev, what, "path", STR_REQUIRED | STR_ABSPATH, SB_PATH_MAX, &r->path, err)))
			return rc;
		if (r->kind == SB_EV_WRITE) {
			if ((rc = get_str(ev, what, "op", STR_REQUIRED, 32, &s, err)))
				return rc;
			if (sb_write_op_parse(s, &r->op))
				return sb_errf(err, -EINVAL, "event: unknown write op \"%s\"", s);
		}
		return 0;
	case SB_EV_CONNECT: {
		struct sb_netdst d = { 0 };
		char host[256];

		if ((rc = check_keys(ev, what, connect_keys, err)) ||
		    (rc = get_str(ev, what, "addr", STR_NONEMPTY, 64, &r->addr, err)) ||
		    (rc = get_str(ev, what, "host", STR_NONEMPTY, 255, &r->host, err)) ||
		    (rc = get_int(ev, what, "port", true, 0, 65535, &v, err)) ||
		    (rc = get_str(ev, what, "proto", 0, 8, &s, err)))
			return rc;
		r->port = (int)v;
		if (r->addr && sb_netaddr_parse(r->addr, &d))
			return sb_errf(err, -EINVAL, "event: \"addr\" is not an IPv4 or IPv6 address");
		if (r->host && sb_hostname_canon(r->host, host, sizeof(host)))
			return sb_errf(err, -EINVAL, "event: \"host\" is not a valid host name");
		if (!r->addr && !r->host)
			return sb_errf(err, -EINVAL, "event: a connect request needs \"addr\" or \"host\"");
		r->proto = SB_PROTO_TCP;
		if (s && !strcmp(s, "udp"))
			r->proto = SB_PROTO_UDP;
		else if (s && strcmp(s, "tcp"))
			return sb_errf(err, -EINVAL, "event: \"proto\" must be \"tcp\" or \"udp\"");
		return 0;
	}
	}
	return sb_errf(err, -EINVAL, "unknown kind");
}

static int parse_chain(const cJSON *c, struct sb_queue_request *r, struct sb_queue_own *own,
		       struct sb_err *err)
{
	const cJSON *it;
	int n;
	size_t i = 0;

	if (!c)
		return sb_errf(err, -EINVAL, "missing \"chain\"");
	n = cJSON_GetArraySize(c);
	if (!cJSON_IsArray(c) || n > SB_QUEUE_CHAIN_MAX)
		return sb_errf(err, -EINVAL, "\"chain\" must be an array of at most %d processes",
			       SB_QUEUE_CHAIN_MAX);
	own->chain = calloc((size_t)n + 1, sizeof(*own->chain));
	if (!own->chain)
		return -ENOMEM;
	cJSON_ArrayForEach(it, c) {
		struct sb_queue_proc *p = &own->chain[i];
		int64_t pid;
		int rc;

		if (!cJSON_IsObject(it))
			return sb_errf(err, -EINVAL, "\"chain\"[%zu] must be an object", i);
		if ((rc = check_keys(it, "chain entry", proc_keys, err)) ||
		    (rc = get_int(it, "chain entry", "pid", true, 0, INT32_MAX, &pid, err)) ||
		    (rc = get_str(it, "chain entry", "comm", 0, SB_QUEUE_NAME_MAX, &p->comm, err)) ||
		    (rc = get_str(it, "chain entry", "cmdline", 0, SB_QUEUE_TEXT_MAX, &p->cmdline, err)))
			return rc;
		p->pid = (int)pid;
		i++;
	}
	r->chain = own->chain;
	r->nchain = i;
	return 0;
}

/* Fills r from a request object whose strings stay owned by own->doc. */
static int request_from_json(const cJSON *o, struct sb_queue_request *r, struct sb_queue_own *own,
			     struct sb_err *err)
{
	const char *what = "request";
	const char *s;
	int64_t v;
	int rc;

	if (!cJSON_IsObject(o))
		return sb_errf(err, -EINVAL, "\"request\" must be an object");
	if ((rc = check_keys(o, what, request_keys, err)) || (rc = get_version(o, what, err)))
		return rc;
	if ((rc = get_str(o, what, "id", STR_REQUIRED, 1024, &s, err)))
		return rc;
	if ((rc = sb_queue_id_check(s, err)))
		return rc;
	strcpy(r->id, s);
	if ((rc = get_time(o, what, "created_at", true, &r->created_ms, err)) ||
	    (rc = get_time(o, what, "deadline", false, &r->deadline_ms, err)))
		return rc;
	if ((rc = get_str(o, what, "origin", STR_REQUIRED, 16, &s, err)))
		return rc;
	if (sb_queue_origin_parse(s, &r->origin))
		return sb_errf(err, -EINVAL, "request: \"origin\" must be kernel, hook or mcp");
	if ((rc = get_str(o, what, "kind", STR_REQUIRED, 16, &s, err)))
		return rc;
	if (kind_parse(s, &r->kind))
		return sb_errf(err, -EINVAL, "request: \"kind\" must be exec, write, read or connect");
	if ((rc = get_str(o, what, "trigger", STR_REQUIRED, 16, &s, err)))
		return rc;
	if (sb_trigger_parse(s, &r->trigger))
		return sb_errf(err, -EINVAL, "request: \"trigger\" must be shell, write, network or read");
	if (r->trigger != kind_trigger(r->kind))
		return sb_errf(err, -EINVAL, "request: trigger \"%s\" does not match kind \"%s\"",
			       sb_trigger_name(r->trigger), kind_name(r->kind));
	if ((rc = get_str(o, what, "key", STR_REQUIRED | STR_NONEMPTY, SB_EVENT_KEY_MAX, &r->key, err)) ||
	    (rc = get_str(o, what, "cwd", STR_ABSPATH, SB_PATH_MAX, &r->cwd, err)) ||
	    (rc = get_int(o, what, "pid", true, 0, INT32_MAX, &v, err)))
		return rc;
	r->pid = (int)v;
	if ((rc = get_str(o, what, "rule", STR_REQUIRED, SB_RULE_NAME_MAX - 1, &r->rule, err)) ||
	    (rc = get_str(o, what, "reason", STR_REQUIRED, SB_REASON_MAX - 1, &r->reason, err)))
		return rc;
	if ((rc = parse_chain(cJSON_GetObjectItemCaseSensitive(o, "chain"), r, own, err)))
		return rc;
	o = cJSON_GetObjectItemCaseSensitive(o, "event");
	if (!o)
		return sb_errf(err, -EINVAL, "request: missing \"event\"");
	return parse_event(o, r, own, err);
}

void sb_queue_request_free(struct sb_queue_request *r)
{
	if (!r)
		return;
	if (r->own) {
		cJSON_Delete(r->own->doc);
		free(r->own->argv);
		free(r->own->chain);
		free(r->own);
	}
	memset(r, 0, sizeof(*r));
}

static int begin_parse(const char *text, size_t len, struct sb_queue_request *r, struct sb_err *err)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->own = calloc(1, sizeof(*r->own));
	if (!r->own)
		return -ENOMEM;
	rc = parse_doc(text, len, &r->own->doc, err);
	if (rc)
		sb_queue_request_free(r);
	return rc;
}

int sb_queue_request_parse(const char *text, size_t len, struct sb_queue_request *r, struct sb_err *err)
{
	int rc = begin_parse(text, len, r, err);

	if (rc)
		return rc;
	rc = request_from_json(r->own->doc, r, r->own, err);
	if (rc)
		sb_queue_request_free(r);
	return rc;
}

static void add_str(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
}

static void add_time(cJSON *o, const char *k, int64_t ms)
{
	char t[SB_QUEUE_TIME_LEN];

	sb_queue_time_format(ms, t);
	cJSON_AddStringToObject(o, k, t);
}

cJSON *sb_queue_request_to_json(const struct sb_queue_request *r)
{
	cJSON *o = cJSON_CreateObject(), *ev, *a, *c;
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "version", SBQ_VERSION);
	cJSON_AddStringToObject(o, "id", r->id);
	add_time(o, "created_at", r->created_ms);
	if (r->deadline_ms)
		add_time(o, "deadline", r->deadline_ms);
	cJSON_AddStringToObject(o, "origin", sb_queue_origin_name(r->origin));
	cJSON_AddStringToObject(o, "trigger", sb_trigger_name(r->trigger));
	cJSON_AddStringToObject(o, "kind", kind_name(r->kind));
	add_str(o, "key", r->key);
	ev = cJSON_AddObjectToObject(o, "event");
	if (ev) {
		switch (r->kind) {
		case SB_EV_EXEC:
			add_str(ev, "path", r->path);
			if (r->argc) {
				a = cJSON_AddArrayToObject(ev, "argv");
				for (i = 0; a && i < r->argc; i++)
					cJSON_AddItemToArray(a, cJSON_CreateString(r->argv[i] ? r->argv[i] : ""));
			}
			add_str(ev, "command", r->command);
			break;
		case SB_EV_WRITE:
			add_str(ev, "path", r->path);
			cJSON_AddStringToObject(ev, "op", sb_write_op_name(r->op));
			break;
		case SB_EV_READ:
			add_str(ev, "path", r->path);
			break;
		case SB_EV_CONNECT:
			add_str(ev, "addr", r->addr);
			add_str(ev, "host", r->host);
			cJSON_AddNumberToObject(ev, "port", r->port);
			cJSON_AddStringToObject(ev, "proto", r->proto == SB_PROTO_UDP ? "udp" : "tcp");
			break;
		}
	}
	add_str(o, "cwd", r->cwd);
	cJSON_AddNumberToObject(o, "pid", r->pid);
	c = cJSON_AddArrayToObject(o, "chain");
	for (i = 0; c && i < r->nchain; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p)
			break;
		cJSON_AddNumberToObject(p, "pid", r->chain[i].pid);
		add_str(p, "comm", r->chain[i].comm);
		add_str(p, "cmdline", r->chain[i].cmdline);
		cJSON_AddItemToArray(c, p);
	}
	add_str(o, "rule", r->rule ? r->rule : "");
	add_str(o, "reason", r->reason ? r->reason : "");
	return o;
}

void sb_queue_request_set_event(struct sb_queue_request *r, const struct sb_event *ev, char addr_buf[48])
{
	r->kind = ev->kind;
	r->trigger = kind_trigger(ev->kind);
	r->path = ev->path;
	r->argv = ev->argv;
	r->argc = ev->argc;
	r->cwd = ev->cwd;
	r->op = ev->op;
	r->addr = NULL;
	addr_buf[0] = '\0';
	if (ev->kind == SB_EV_CONNECT && ev->dst.has_addr &&
	    inet_ntop(ev->dst.family, ev->dst.addr, addr_buf, 48))
		r->addr = addr_buf;
	r->host = ev->kind == SB_EV_CONNECT ? ev->dst.host : NULL;
	r->port = ev->dst.port;
	r->proto = ev->proto;
}

/* ---- decision ------------------------------------------------------------ */

static const char *const decision_keys[] = {
	"decision", "reviewer", "reason", "remember", "decided_at", "timed_out", NULL,
};
static const char *const remember_keys[] = { "scope", "value", NULL };

static int decision_from_json(const cJSON *o, struct sb_queue_decision *d, struct sb_err *err)
{
	const char *what = "decision";
	const cJSON *rem, *to;
	const char *s;
	int rc;

	memset(d, 0, sizeof(*d));
	if (!cJSON_IsObject(o))
		return sb_errf(err, -EINVAL, "\"decision\" must be an object");
	if ((rc = check_keys(o, what, decision_keys, err)) ||
	    (rc = get_str(o, what, "decision", STR_REQUIRED, 16, &s, err)))
		return rc;
	if (!strcmp(s, "allow"))
		d->verdict = SB_QV_ALLOW;
	else if (!strcmp(s, "deny"))
		d->verdict = SB_QV_DENY;
	else
		return sb_errf(err, -EINVAL, "decision: \"decision\" must be \"allow\" or \"deny\"");
	if ((rc = get_str(o, what, "reviewer", STR_REQUIRED | STR_NONEMPTY | STR_NOCTRL, SB_QUEUE_NAME_MAX,
			  &s, err)))
		return rc;
	strcpy(d->reviewer, s);
	if ((rc = get_str(o, what, "reason", STR_REQUIRED, SB_REASON_MAX - 1, &s, err)))
		return rc;
	strcpy(d->reason, s);
	if ((rc = get_time(o, what, "decided_at", true, &d->decided_ms, err)))
		return rc;
	to = cJSON_GetObjectItemCaseSensitive(o, "timed_out");
	if (to && !cJSON_IsBool(to))
		return sb_errf(err, -EINVAL, "decision: \"timed_out\" must be true or false");
	d->timed_out = to && cJSON_IsTrue(to);
	rem = cJSON_GetObjectItemCaseSensitive(o, "remember");
	if (!rem)
		return sb_errf(err, -EINVAL, "decision: missing \"remember\" (null or {\"scope\", \"value\"})");
	if (cJSON_IsNull(rem))
		return 0;
	if (!cJSON_IsObject(rem))
		return sb_errf(err, -EINVAL, "decision: \"remember\" must be null or an object");
	if ((rc = check_keys(rem, "remember", remember_keys, err)) ||
	    (rc = get_str(rem, "remember", "scope", STR_REQUIRED, 16, &s, err)))
		return rc;
	if (sb_remember_scope_parse(s, &d->scope))
		return sb_errf(err, -EINVAL, "remember: \"scope\" must be once, command, prefix, dir or host");
	if ((rc = get_str(rem, "remember", "value", STR_REQUIRED | STR_NONEMPTY, SB_PATH_MAX, &s, err)))
		return rc;
	strcpy(d->remember_value, s);
	d->remember = true;
	return 0;
}

cJSON *sb_queue_decision_to_json(const struct sb_queue_decision *d)
{
	cJSON *o = cJSON_CreateObject(), *rem;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "decision", d->verdict == SB_QV_ALLOW ? "allow" : "deny");
	cJSON_AddStringToObject(o, "reviewer", d->reviewer);
	cJSON_AddStringToObject(o, "reason", d->reason);
	if (d->remember) {
		rem = cJSON_AddObjectToObject(o, "remember");
		if (rem) {
			cJSON_AddStringToObject(rem, "scope", sb_remember_scope_name(d->scope));
			cJSON_AddStringToObject(rem, "value", d->remember_value);
		}
	} else {
		cJSON_AddNullToObject(o, "remember");
	}
	add_time(o, "decided_at", d->decided_ms);
	if (d->timed_out)
		cJSON_AddBoolToObject(o, "timed_out", 1);
	return o;
}

/* ---- done ---------------------------------------------------------------- */

static const char *const done_keys[] = { "version", "request", "decision", NULL };

int sb_queue_done_parse(const char *text, size_t len, struct sb_queue_request *r, struct sb_queue_decision *d,
			struct sb_err *err)
{
	const cJSON *doc;
	struct sb_queue_decision tmp;
	int rc = begin_parse(text, len, r, err);

	memset(d, 0, sizeof(*d));
	if (rc)
		return rc;
	doc = r->own->doc;
	if ((rc = check_keys(doc, "done", done_keys, err)) || (rc = get_version(doc, "done", err)))
		goto fail;
	if (!cJSON_GetObjectItemCaseSensitive(doc, "request") || !cJSON_GetObjectItemCaseSensitive(doc, "decision")) {
		rc = sb_errf(err, -EINVAL, "done: needs \"request\" and \"decision\"");
		goto fail;
	}
	if ((rc = request_from_json(cJSON_GetObjectItemCaseSensitive(doc, "request"), r, r->own, err)) ||
	    (rc = decision_from_json(cJSON_GetObjectItemCaseSensitive(doc, "decision"), d, err)))
		goto fail;
	/* The decision must make sense for its request (remember scope and
	 * value), exactly as when it was made. */
	tmp = *d;
	if ((rc = sb_queue_decision_check(r, &tmp, err)))
		goto fail;
	return 0;
fail:
	sb_queue_request_free(r);
	memset(d, 0, sizeof(*d));
	return rc;
}

cJSON *sb_queue_done_to_json(const struct sb_queue_request *r, const struct sb_queue_decision *d)
{
	cJSON *o = cJSON_CreateObject(), *req, *dec;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "version", SBQ_VERSION);
	req = sb_queue_request_to_json(r);
	dec = sb_queue_decision_to_json(d);
	if (!req || !dec) {
		cJSON_Delete(req);
		cJSON_Delete(dec);
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddItemToObject(o, "request", req);
	cJSON_AddItemToObject(o, "decision", dec);
	return o;
}

/* ---- lease --------------------------------------------------------------- */

static const char *const lease_keys[] = { "version", "id", "owner", "claimed_at", "expires_at", NULL };

int sb_queue_lease_parse(const char *text, size_t len, char id[SB_QUEUE_ID_MAX + 1], struct sb_queue_lease *l,
			 struct sb_err *err)
{
	cJSON *doc;
	const char *s;
	int rc;

	memset(l, 0, sizeof(*l));
	id[0] = '\0';
	rc = parse_doc(text, len, &doc, err);
	if (rc)
		return rc;
	if ((rc = check_keys(doc, "lease", lease_keys, err)) || (rc = get_version(doc, "lease", err)) ||
	    (rc = get_str(doc, "lease", "id", STR_REQUIRED, 1024, &s, err)) || (rc = sb_queue_id_check(s, err)))
		goto out;
	strcpy(id, s);
	if ((rc = get_str(doc, "lease", "owner", STR_REQUIRED | STR_NONEMPTY | STR_NOCTRL, SB_QUEUE_OWNER_MAX, &s,
			  err)))
		goto out;
	strcpy(l->owner, s);
	if ((rc = get_time(doc, "lease", "claimed_at", true, &l->claimed_ms, err)) ||
	    (rc = get_time(doc, "lease", "expires_at", true, &l->expires_ms, err)))
		goto out;
	if (l->expires_ms < l->claimed_ms)
		rc = sb_errf(err, -EINVAL, "lease: expires before it was claimed");
out:
	cJSON_Delete(doc);
	return rc;
}

cJSON *sb_queue_lease_to_json(const char *id, const struct sb_queue_lease *l)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "version", SBQ_VERSION);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "owner", l->owner);
	add_time(o, "claimed_at", l->claimed_ms);
	add_time(o, "expires_at", l->expires_ms);
	return o;
}
