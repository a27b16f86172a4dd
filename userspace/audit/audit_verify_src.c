/* What the verifier reads: the store (records and seals merged by seq, in
 * one read transaction so concurrent writers cannot shift the view) or an
 * export (JSON Lines, plain or gzip). Exports are untrusted input: every
 * line is bounded and checked, nothing in one is believed before it is
 * verified, and its header only narrows what is expected. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "audit_internal.h"

#define LINE_MAX_BYTES (1024 * 1024)
/* A gzip export in memory (the fuzz target) inflates to at most this. */
#define INFLATE_MAX (64u * 1024 * 1024)

static const char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? (const char *)t : "";
}

static int seal_from_row(sqlite3_stmt *st, struct sb_audit_seal_rec *s)
{
	memset(s, 0, sizeof(*s));
	s->seq = (uint64_t)sqlite3_column_int64(st, 0);
	snprintf(s->head_hash, sizeof(s->head_hash), "%s", col_text(st, 1));
	snprintf(s->time, sizeof(s->time), "%s", col_text(st, 2));
	snprintf(s->pubkey, sizeof(s->pubkey), "%s", col_text(st, 3));
	snprintf(s->sig, sizeof(s->sig), "%s", col_text(st, 4));
	return 0;
}

int sb_audit_verify_store(struct sb_audit *a, const struct sb_audit_verify_opts *o, struct sb_audit_report *r,
			  struct sb_err *err)
{
	sqlite3_stmt *rows = NULL, *seals = NULL;
	struct sb_audit_seal_rec s;
	struct sb_av *v = sb_av_new(o, r);
	int rc, src = SQLITE_DONE, srow = SQLITE_DONE;
	char where[64];

	if (!v)
		return sb_errf(err, -ENOMEM, "out of memory");
	sb_av_expect_first(v, 1);
	rc = sb_audit_begin(a, false, err);
	if (rc)
		goto out;
	rc = sqlite3_prepare_v2(a->db, "SELECT seq, record, prev_hash, hash FROM records ORDER BY seq", -1, &rows, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(a->db, "SELECT seq, head_hash, time, pubkey, sig FROM seals ORDER BY seq, id", -1,
					&seals, NULL);
	if (rc != SQLITE_OK) {
		rc = sb_audit_db_err(a, err, rc, "reading");
		goto out;
	}
	src = sqlite3_step(seals);
	while (!sb_av_settled(v) && (srow = sqlite3_step(rows)) == SQLITE_ROW) {
		uint64_t rowseq = (uint64_t)sqlite3_column_int64(rows, 0);
		cJSON *rec = cJSON_Parse(col_text(rows, 1));

		snprintf(where, sizeof(where), "row %llu", (unsigned long long)rowseq);
		if (!cJSON_IsObject(rec))
			sb_av_malformed(v, where, "the stored record is not a JSON object");
		else
			sb_av_record(v, rec, false, col_text(rows, 2), col_text(rows, 3), where);
		cJSON_Delete(rec);
		for (; src == SQLITE_ROW && (uint64_t)sqlite3_column_int64(seals, 0) <= rowseq; src = sqlite3_step(seals)) {
			seal_from_row(seals, &s);
			sb_av_seal(v, &s, "seals table");
		}
	}
	for (; src == SQLITE_ROW && !sb_av_settled(v); src = sqlite3_step(seals)) {
		seal_from_row(seals, &s);
		sb_av_seal(v, &s, "seals table");
	}
	if ((srow != SQLITE_ROW && srow != SQLITE_DONE) || (src != SQLITE_ROW && src != SQLITE_DONE)) {
		rc = sb_audit_db_err(a, err, srow != SQLITE_ROW && srow != SQLITE_DONE ? srow : src, "reading");
		goto out;
	}
	sb_av_finish(v);
	rc = 0;
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(seals);
	sb_audit_rollback(a);
	sb_av_free(v);
	return rc;
}

/* --- exports ------------------------------------------------------------ */

struct reader {
	struct sb_av *v;
	uint64_t lineno;
	bool have_header;
	uint64_t header_last;
	char *buf;
	size_t len, cap;
	bool overflow, oom;
};

static const char *opt_str(const cJSON *o, const char *key, bool *ok)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v)) {
		*ok = false;
		return NULL;
	}
	return v->valuestring;
}

static bool get_count(const cJSON *o, const char *key, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v) {
		*out = 0;
		return true;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740991.0 ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble)
		return false;
	*out = (uint64_t)v->valuedouble;
	return true;
}

static void header_line(struct reader *rd, const cJSON *j, const char *where)
{
	const cJSON *format = cJSON_GetObjectItemCaseSensitive(j, "format");
	const cJSON *filter = cJSON_GetObjectItemCaseSensitive(j, "filter");
	const char *since = NULL, *until = NULL, *sandbox = NULL;
	uint64_t first;
	bool ok = true;

	if (!cJSON_IsNumber(format) || format->valuedouble != SB_AUDIT_EXPORT_FORMAT) {
		sb_av_malformed(rd->v, where, "unsupported export format (this program reads format 1)");
		return;
	}
	if (filter && !cJSON_IsNull(filter)) {
		if (!cJSON_IsObject(filter))
			ok = false;
		since = opt_str(filter, "since", &ok);
		until = opt_str(filter, "until", &ok);
		sandbox = opt_str(filter, "sandbox", &ok);
		if ((since && !sb_audit_time_valid(since)) || (until && !sb_audit_time_valid(until)))
			ok = false;
	}
	if (!ok || !get_count(j, "first_seq", &first) || !get_count(j, "last_seq", &rd->header_last)) {
		sb_av_malformed(rd->v, where, "malformed export header (filter, first_seq, last_seq)");
		return;
	}
	sb_av_expect_first(rd->v, first);
	sb_av_set_filter(rd->v, since, until, sandbox);
	rd->have_header = true;
}

static void export_line(struct reader *rd, const char *line, size_t len)
{
	char where[48];
	const char *kind;
	cJSON *j;

	snprintf(where, sizeof(where), "line %llu", (unsigned long long)rd->lineno);
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return;
	j = cJSON_ParseWithLength(line, len);
	if (!cJSON_IsObject(j)) {
		sb_av_malformed(rd->v, where, "not a JSON object");
		cJSON_Delete(j);
		return;
	}
	kind = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "kind"))
		       ? cJSON_GetObjectItemCaseSensitive(j, "kind")->valuestring
		       : "";
	if (!rd->have_header) {
		if (strcmp(kind, "audit_export"))
			sb_av_malformed(rd->v, where, "an export starts with its header line (kind audit_export)");
		else
			header_line(rd, j, where);
	} else if (!strcmp(kind, "audit_export")) {
		sb_av_malformed(rd->v, where, "a second export header");
	} else if (!strcmp(kind, "seal")) {
		struct sb_audit_seal_rec s;
		struct sb_err e = { { 0 } };

		if (sb_audit_seal_from_json(j, &s, &e))
			sb_av_malformed(rd->v, where, e.msg);
		else
			sb_av_seal(rd->v, &s, where);
	} else {
		cJSON *prev = cJSON_DetachItemFromObjectCaseSensitive(j, "prev_hash");
		cJSON *hash = cJSON_DetachItemFromObjectCaseSensitive(j, "hash");
		bool elided = cJSON_GetObjectItemCaseSensitive(j, "body_digest") != NULL;

		if (!cJSON_IsString(prev) || !cJSON_IsString(hash))
			sb_av_malformed(rd->v, where, "a record line needs \"prev_hash\" and \"hash\" strings");
		else
			sb_av_record(rd->v, j, elided, prev->valuestring, hash->valuestring, where);
		cJSON_Delete(prev);
		cJSON_Delete(hash);
	}
	cJSON_Delete(j);
}

static void end_line(struct reader *rd)
{
	rd->lineno++;
	if (rd->overflow) {
		char where[48];

		snprintf(where, sizeof(where), "line %llu", (unsigned long long)rd->lineno);
		sb_av_malformed(rd->v, where, "longer than 1 MiB");
	} else if (!sb_av_settled(rd->v)) {
		export_line(rd, rd->buf, rd->len);
	}
	rd->len = 0;
	rd->overflow = false;
}

static void feed(struct reader *rd, const char *p, size_t n)
{
	while (n > 0 && !rd->oom) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (!rd->overflow && rd->len + take > LINE_MAX_BYTES) {
			rd->overflow = true;
		} else if (!rd->overflow && take > 0) {
			if (rd->len + take > rd->cap) {
				size_t cap = rd->cap ? rd->cap : 4096;
				char *b;

				while (cap < rd->len + take)
					cap *= 2;
				b = realloc(rd->buf, cap);
				if (!b) {
					rd->oom = true;
					return;
				}
				rd->buf = b;
				rd->cap = cap;
			}
			memcpy(rd->buf + rd->len, p, take);
			rd->len += take;
		}
		p += take;
		n -= take;
		if (nl) {
			end_line(rd);
			p++;
			n--;
		}
	}
}

static int finish(struct reader *rd, struct sb_err *err)
{
	int rc = 0;

	if (rd->len > 0 || rd->overflow)
		end_line(rd);
	if (rd->oom) {
		rc = sb_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (!rd->have_header)
		sb_av_malformed(rd->v, "line 1", "no export header: not an audit export");
	if (!sb_av_failed(rd->v) && rd->header_last > sb_av_last_seq(rd->v))
		sb_av_fail(rd->v, SB_AUDIT_TRUNCATED, sb_av_last_seq(rd->v) + 1,
			   "truncated: the export's header says it ends at seq %llu but its last record is seq %llu",
			   (unsigned long long)rd->header_last, (unsigned long long)sb_av_last_seq(rd->v));
	sb_av_finish(rd->v);
out:
	free(rd->buf);
	sb_av_free(rd->v);
	return rc;
}

int sb_audit_verify_file(const char *path, const struct sb_audit_verify_opts *o, struct sb_audit_report *r,
			 struct sb_err *err)
{
	struct reader rd = { 0 };
	char chunk[65536];
	gzFile gz;
	int n, errnum;

	gz = gzopen(path, "rb");
	if (!gz)
		return sb_errf(err, -(errno ? errno : ENOMEM), "cannot open %s: %s", path, strerror(errno ? errno : ENOMEM));
	rd.v = sb_av_new(o, r);
	if (!rd.v) {
		gzclose(gz);
		return sb_errf(err, -ENOMEM, "out of memory");
	}
	while (!sb_av_settled(rd.v) && (n = gzread(gz, chunk, sizeof(chunk))) > 0)
		feed(&rd, chunk, (size_t)n);
	if (!sb_av_settled(rd.v)) {
		const char *msg = gzerror(gz, &errnum);

		if (errnum != Z_OK && errnum != Z_BUF_ERROR) {
			gzclose(gz);
			free(rd.buf);
			sb_av_free(rd.v);
			return sb_errf(err, -EIO, "%s: %s", path, errnum == Z_ERRNO ? strerror(errno) : msg);
		}
		/* A gzip stream cut short reads as a clean end: say so. */
		if (errnum == Z_BUF_ERROR)
			sb_av_malformed(rd.v, path, "the gzip stream ends early (file truncated)");
	}
	gzclose(gz);
	return finish(&rd, err);
}

int sb_audit_verify_buffer(const void *data, size_t len, const struct sb_audit_verify_opts *o,
			   struct sb_audit_report *r, struct sb_err *err)
{
	struct reader rd = { 0 };
	const unsigned char *p = data;

	rd.v = sb_av_new(o, r);
	if (!rd.v)
		return sb_errf(err, -ENOMEM, "out of memory");
	if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
		unsigned char out[65536];
		size_t total = 0;
		z_stream zs = { 0 };
		int zrc;

		if (inflateInit2(&zs, 15 + 16) != Z_OK) {
			free(rd.buf);
			sb_av_free(rd.v);
			return sb_errf(err, -ENOMEM, "out of memory");
		}
		zs.next_in = (unsigned char *)p;
		zs.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
		do {
			zs.next_out = out;
			zs.avail_out = sizeof(out);
			zrc = inflate(&zs, Z_NO_FLUSH);
			total += sizeof(out) - zs.avail_out;
			feed(&rd, (const char *)out, sizeof(out) - zs.avail_out);
		} while (zrc == Z_OK && total < INFLATE_MAX && !sb_av_settled(rd.v) && !rd.oom);
		inflateEnd(&zs);
		if (zrc != Z_STREAM_END && !sb_av_settled(rd.v))
			sb_av_malformed(rd.v, "gzip", total >= INFLATE_MAX ? "inflates to more than 64 MiB"
									 : "corrupt or truncated gzip stream");
	} else {
		feed(&rd, data, len);
	}
	return finish(&rd, err);
}
