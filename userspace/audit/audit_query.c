/* Query and tail: records in seq order through simple filters. This reads
 * what is stored and does not verify it; `audit verify` does that. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_internal.h"

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool eq(const cJSON *rec, const char *key, const char *want)
{
	const char *s;

	if (!want)
		return true;
	s = str_of(rec, key);
	return s && !strcmp(s, want);
}

static bool contains(const cJSON *rec, const char *key, const char *needle)
{
	const cJSON *v;

	if (!needle)
		return true;
	v = cJSON_GetObjectItemCaseSensitive(rec, key);
	if (cJSON_IsString(v))
		return strstr(v->valuestring, needle) != NULL;
	if (cJSON_IsArray(v)) {
		/* argv-style arrays match on their words joined by spaces. */
		size_t cap = 1, len = 0;
		const cJSON *c;
		char *joined;
		bool hit;

		cJSON_ArrayForEach(c, v)
			if (cJSON_IsString(c))
				cap += strlen(c->valuestring) + 1;
		joined = malloc(cap);
		if (!joined)
			return false;
		joined[0] = '\0';
		cJSON_ArrayForEach(c, v) {
			if (!cJSON_IsString(c))
				continue;
			len += (size_t)sprintf(joined + len, "%s%s", len ? " " : "", c->valuestring);
		}
		hit = strstr(joined, needle) != NULL;
		free(joined);
		return hit;
	}
	return false;
}

static bool matches(const struct sb_audit_query *q, const cJSON *rec)
{
	const char *t = str_of(rec, "time");

	if (q->f.since && (!t || strcmp(t, q->f.since) < 0))
		return false;
	if (q->f.until && (!t || strcmp(t, q->f.until) > 0))
		return false;
	if (!eq(rec, "sandbox", q->f.sandbox) || !eq(rec, "kind", q->kind) || !eq(rec, "trigger", q->trigger) ||
	    !eq(rec, "decision", q->decision))
		return false;
	if (q->has_pid) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec, "pid");

		if (!cJSON_IsNumber(p) || p->valuedouble != (double)q->pid)
			return false;
	}
	return contains(rec, "path", q->path) &&
	       (contains(rec, "command", q->command) || (q->command && contains(rec, "argv", q->command)));
}

int sb_audit_query_run(struct sb_audit *a, const struct sb_audit_query *q, int (*cb)(const cJSON *, void *),
		       void *arg, struct sb_err *err)
{
	cJSON **ring = NULL;
	sqlite3_stmt *st = NULL;
	size_t head = 0, n = 0, i;
	int rc;

	if (q->last) {
		if (q->last > 1000000)
			return sb_errf(err, -EINVAL, "at most 1000000 records at a time");
		ring = calloc(q->last, sizeof(*ring));
		if (!ring)
			return sb_errf(err, -ENOMEM, "out of memory");
	}
	rc = sb_audit_begin(a, false, err);
	if (rc)
		goto out;
	rc = sqlite3_prepare_v2(a->db, "SELECT record, hash FROM records WHERE seq > ? ORDER BY seq", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		rc = sb_audit_db_err(a, err, rc, "query");
		goto out;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)q->after_seq);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *rec = cJSON_Parse((const char *)sqlite3_column_text(st, 0));

		if (!cJSON_IsObject(rec) || !matches(q, rec)) {
			cJSON_Delete(rec);
			continue;
		}
		cJSON_AddStringToObject(rec, "hash", (const char *)sqlite3_column_text(st, 1));
		if (!ring) {
			int r = cb(rec, arg);

			cJSON_Delete(rec);
			if (r) {
				rc = r;
				goto out;
			}
			continue;
		}
		cJSON_Delete(ring[head]);
		ring[head] = rec;
		head = (head + 1) % q->last;
		if (n < q->last)
			n++;
	}
	if (rc != SQLITE_DONE) {
		rc = sb_audit_db_err(a, err, rc, "query");
		goto out;
	}
	rc = 0;
	for (i = 0; i < n && !rc; i++)
		rc = cb(ring[(head + q->last - n + i) % q->last], arg);
out:
	sqlite3_finalize(st);
	sb_audit_rollback(a);
	if (ring) {
		for (i = 0; i < q->last; i++)
			cJSON_Delete(ring[i]);
		free(ring);
	}
	return rc;
}
