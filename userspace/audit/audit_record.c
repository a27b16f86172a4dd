/* Record rules and the chain hash. The hash commits to a record in two
 * levels (envelope, then the rest as a digest) so that an export filtered
 * by sandbox or time can show the other records as their envelope only:
 * their hashes still verify, and a reader can see that none of them
 * matches the filter, without seeing what they were about. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_internal.h"

const char *const sb_audit_envelope_keys[5] = { "seq", "time", "kind", "origin", "sandbox" };

/* Kinds the system itself writes (docs/audit.md lists their fields).
 * "external" records (audit append) may use any well-formed kind. */
static const char *const known_kinds[] = {
	"decision", "escalation", "verdict", "remembered_allow", "timeout", "policy_load",
	"attach", "detach", "lost_events", "counters", "external", "note", NULL,
};
static const char *const origins[] = {
	"kernel", "broker", "hook", "mcp", "approver", "cli", "external", NULL,
};
/* Export line types share the "kind" key with records. */
static const char *const reserved_kinds[] = { "seal", "audit_export", NULL };

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

void sb_audit_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int sb_audit_unhex(const char *hex, uint8_t *out, size_t n)
{
	size_t i;

	if (!hex || strlen(hex) != 2 * n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

bool sb_audit_kind_valid(const char *kind)
{
	size_t i, n = strlen(kind);

	if (n == 0 || n > 32 || !islower((unsigned char)kind[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!islower((unsigned char)kind[i]) && !isdigit((unsigned char)kind[i]) && kind[i] != '_')
			return false;
	return !in_list(reserved_kinds, kind);
}

bool sb_audit_origin_valid(const char *origin)
{
	return in_list(origins, origin);
}

bool sb_audit_time_valid(const char *t)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddddddddZ";
	size_t i;

	if (strlen(t) != sizeof(shape) - 1)
		return false;
	for (i = 0; shape[i]; i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)t[i]) : t[i] != shape[i])
			return false;
	}
	return true;
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The input rules shared by append (no seq/time yet) and stored records. */
static int check_common(const cJSON *rec, struct sb_err *err)
{
	const char *kind, *origin, *sandbox;

	if (!cJSON_IsObject(rec))
		return sb_errf(err, -EINVAL, "a record must be a JSON object");
	kind = get_str(rec, "kind");
	origin = get_str(rec, "origin");
	sandbox = get_str(rec, "sandbox");
	if (!kind)
		return sb_errf(err, -EINVAL, "\"kind\" (a string) is required");
	if (!sb_audit_kind_valid(kind))
		return sb_errf(err, -EINVAL, "\"kind\" \"%.40s\" is not a valid kind ([a-z][a-z0-9_]*, not seal)", kind);
	if (!origin || !sb_audit_origin_valid(origin))
		return sb_errf(err, -EINVAL,
			       "\"origin\" must be one of kernel, broker, hook, mcp, approver, cli, external");
	if (!sandbox)
		return sb_errf(err, -EINVAL, "\"sandbox\" (a string, may be empty) is required");
	if (strlen(sandbox) > 255)
		return sb_errf(err, -EINVAL, "\"sandbox\" is longer than 255 bytes");
	if (cJSON_GetObjectItemCaseSensitive(rec, "prev_hash") || cJSON_GetObjectItemCaseSensitive(rec, "hash"))
		return sb_errf(err, -EINVAL, "\"prev_hash\" and \"hash\" are chain fields, not record fields");
	return 0;
}

int sb_audit_record_check(const cJSON *rec, struct sb_err *err)
{
	const char *origin;
	char *canon = NULL;
	size_t len;
	int rc = check_common(rec, err);

	if (rc)
		return rc;
	origin = get_str(rec, "origin");
	if (strcmp(origin, "external") && !in_list(known_kinds, get_str(rec, "kind")))
		return sb_errf(err, -EINVAL, "unknown kind \"%s\" (only origin external may use its own kinds)",
			       get_str(rec, "kind"));
	if (cJSON_GetObjectItemCaseSensitive(rec, "seq") || cJSON_GetObjectItemCaseSensitive(rec, "time") ||
	    cJSON_GetObjectItemCaseSensitive(rec, "body_digest"))
		return sb_errf(err, -EINVAL,
			       "\"seq\", \"time\" and \"body_digest\" are assigned by the chain (use another name, "
			       "e.g. \"event_time\")");
	rc = sb_audit_canon(rec, &canon, &len, err);
	if (rc)
		return rc;
	free(canon);
	/* seq and time add under 64 bytes. */
	if (len + 64 > SB_AUDIT_RECORD_MAX)
		return sb_errf(err, -E2BIG, "record is larger than %d bytes", SB_AUDIT_RECORD_MAX);
	return 0;
}

int sb_audit_record_validate(const cJSON *rec, bool elided, uint64_t *seq, struct sb_err *err)
{
	const cJSON *s, *c;
	const char *t, *d;
	int rc = check_common(rec, err);

	if (rc)
		return rc;
	s = cJSON_GetObjectItemCaseSensitive(rec, "seq");
	if (!cJSON_IsNumber(s) || s->valuedouble < 1 || s->valuedouble > 9007199254740991.0 ||
	    s->valuedouble != (double)(uint64_t)s->valuedouble)
		return sb_errf(err, -EINVAL, "\"seq\" must be a positive integer");
	t = get_str(rec, "time");
	if (!t || !sb_audit_time_valid(t))
		return sb_errf(err, -EINVAL, "\"time\" must be UTC RFC 3339 with nanoseconds");
	d = get_str(rec, "body_digest");
	if (elided) {
		uint8_t raw[SB_AUDIT_HASH_LEN];

		if (!d || sb_audit_unhex(d, raw, sizeof(raw)))
			return sb_errf(err, -EINVAL, "an elided record needs \"body_digest\" (64 hex digits)");
		for (c = rec->child; c; c = c->next) {
			size_t i;
			bool ok = !strcmp(c->string, "body_digest");

			for (i = 0; i < 5 && !ok; i++)
				ok = !strcmp(c->string, sb_audit_envelope_keys[i]);
			if (!ok)
				return sb_errf(err, -EINVAL, "an elided record carries only its envelope, not \"%.40s\"",
					       c->string);
		}
	} else if (cJSON_GetObjectItemCaseSensitive(rec, "body_digest")) {
		return sb_errf(err, -EINVAL, "\"body_digest\" is reserved for elided records");
	}
	*seq = (uint64_t)s->valuedouble;
	return 0;
}

static bool is_envelope_key(const char *k)
{
	size_t i;

	for (i = 0; i < 5; i++)
		if (!strcmp(k, sb_audit_envelope_keys[i]))
			return true;
	return false;
}

int sb_audit_body_digest(const cJSON *rec, char hex[SB_AUDIT_HEX_LEN], struct sb_err *err)
{
	uint8_t h[SB_AUDIT_HASH_LEN];
	cJSON *body = cJSON_CreateObject();
	const cJSON *c;
	char *canon = NULL;
	size_t len;
	int rc = 0;

	if (!body)
		return sb_errf(err, -ENOMEM, "out of memory");
	/* References, not copies: the body is only read. */
	for (c = rec->child; c && !rc; c = c->next) {
		if (is_envelope_key(c->string))
			continue;
		if (!cJSON_AddItemReferenceToObject(body, c->string, (cJSON *)c))
			rc = sb_errf(err, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = sb_audit_canon(body, &canon, &len, err);
	cJSON_Delete(body);
	if (rc)
		return rc;
	crypto_hash_sha256(h, (const unsigned char *)canon, len);
	free(canon);
	sb_audit_hex(h, sizeof(h), hex);
	return 0;
}

struct cJSON *sb_audit_envelope(const cJSON *rec, struct sb_err *err)
{
	char digest[SB_AUDIT_HEX_LEN];
	cJSON *env;
	size_t i;

	if (sb_audit_body_digest(rec, digest, err))
		return NULL;
	env = cJSON_CreateObject();
	if (!env || !cJSON_AddStringToObject(env, "body_digest", digest))
		goto oom;
	for (i = 0; i < 5; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, sb_audit_envelope_keys[i]);
		cJSON *dup = v ? cJSON_Duplicate(v, 1) : NULL;

		if (!dup || !cJSON_AddItemToObject(env, sb_audit_envelope_keys[i], dup)) {
			cJSON_Delete(dup);
			goto oom;
		}
	}
	return env;
oom:
	cJSON_Delete(env);
	sb_errf(err, -ENOMEM, "out of memory");
	return NULL;
}

int sb_audit_chain_hash(const uint8_t prev[SB_AUDIT_HASH_LEN], const cJSON *rec, bool elided,
			uint8_t out[SB_AUDIT_HASH_LEN], struct sb_err *err)
{
	crypto_hash_sha256_state st;
	char *canon = NULL;
	size_t len;
	cJSON *env;
	int rc;

	if (elided) {
		env = cJSON_Duplicate(rec, 1);
		if (!env)
			return sb_errf(err, -ENOMEM, "out of memory");
	} else {
		env = sb_audit_envelope(rec, err);
		if (!env)
			return -EINVAL;
	}
	rc = sb_audit_canon(env, &canon, &len, err);
	cJSON_Delete(env);
	if (rc)
		return rc;
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, prev, SB_AUDIT_HASH_LEN);
	crypto_hash_sha256_update(&st, (const unsigned char *)canon, len);
	crypto_hash_sha256_final(&st, out);
	free(canon);
	return 0;
}
