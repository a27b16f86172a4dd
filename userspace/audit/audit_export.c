/* Export: the chain as JSON Lines that verify offline. A filtered export
 * is still one contiguous slice of the chain (first selected record to
 * the first seal at or after the last one), so every hash in it links;
 * records the filter does not select are reduced to their envelope (see
 * audit_record.c), which proves they exist, where, and that they are not
 * selected, without showing their content. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "audit_internal.h"

struct out {
	int fd;
	gzFile gz;
	int err;
};

static void out_write(struct out *o, const char *s, size_t n)
{
	if (o->err)
		return;
	if (o->gz) {
		if (n && gzwrite(o->gz, s, (unsigned)n) != (int)n)
			o->err = -EIO;
		return;
	}
	while (n > 0) {
		ssize_t w = write(o->fd, s, n);

		if (w < 0) {
			o->err = -errno;
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void out_line(struct out *o, cJSON *j)
{
	char *s = j ? cJSON_PrintUnformatted(j) : NULL;

	if (!s) {
		o->err = o->err ? o->err : -ENOMEM;
		return;
	}
	out_write(o, s, strlen(s));
	out_write(o, "\n", 1);
	free(s);
}

/* (?1 IS NULL OR ...) lets one statement serve every combination of
 * bounds; json_extract compares with the same byte order as strcmp. */
#define MATCH_SQL                                                             \
	"((?1 IS NULL OR json_extract(record, '$.time') >= ?1) AND"           \
	" (?2 IS NULL OR json_extract(record, '$.time') <= ?2) AND"           \
	" (?3 IS NULL OR json_extract(record, '$.sandbox') = ?3))"

static void bind_filter(sqlite3_stmt *st, const struct sb_audit_filter *f)
{
	if (f && f->since)
		sqlite3_bind_text(st, 1, f->since, -1, SQLITE_STATIC);
	if (f && f->until)
		sqlite3_bind_text(st, 2, f->until, -1, SQLITE_STATIC);
	if (f && f->sandbox)
		sqlite3_bind_text(st, 3, f->sandbox, -1, SQLITE_STATIC);
}

static cJSON *header(const struct sb_audit *a, const struct sb_audit_filter *f, uint64_t first, uint64_t last)
{
	char now[SB_AUDIT_TIME_LEN];
	cJSON *h = cJSON_CreateObject(), *filt;

	sb_audit_time_now(now);
	cJSON_AddStringToObject(h, "kind", "audit_export");
	cJSON_AddNumberToObject(h, "format", SB_AUDIT_EXPORT_FORMAT);
	cJSON_AddStringToObject(h, "hash", "sha256");
	cJSON_AddStringToObject(h, "canonical", "jcs-integers");
	cJSON_AddStringToObject(h, "created", now);
	cJSON_AddStringToObject(h, "source", a->path);
	filt = cJSON_AddObjectToObject(h, "filter");
	if (filt && f && f->since)
		cJSON_AddStringToObject(filt, "since", f->since);
	if (filt && f && f->until)
		cJSON_AddStringToObject(filt, "until", f->until);
	if (filt && f && f->sandbox)
		cJSON_AddStringToObject(filt, "sandbox", f->sandbox);
	cJSON_AddNumberToObject(h, "first_seq", (double)first);
	cJSON_AddNumberToObject(h, "last_seq", (double)last);
	return h;
}

/* The slice: first..last selected record, then on to the first seal that
 * covers the last one (when there is one), so the slice ends in a signed
 * head. */
static int slice_bounds(struct sb_audit *a, const struct sb_audit_filter *f, uint64_t *lo, uint64_t *hi,
			struct sb_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*lo = *hi = 0;
	rc = sqlite3_prepare_v2(a->db, "SELECT min(seq), max(seq) FROM records WHERE " MATCH_SQL, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sb_audit_db_err(a, err, rc, "export");
	bind_filter(st, f);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*lo = (uint64_t)sqlite3_column_int64(st, 0);
		*hi = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return sb_audit_db_err(a, err, rc, "export");
	if (*lo == 0)
		return 0;
	rc = sqlite3_prepare_v2(a->db, "SELECT min(seq) FROM seals WHERE seq >= ?", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sb_audit_db_err(a, err, rc, "export");
	sqlite3_bind_int64(st, 1, (sqlite3_int64)*hi);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*hi = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sb_audit_db_err(a, err, rc, "export");
}

/* A full record line: the stored canonical text with the chain fields
 * spliced in before its closing brace. */
static void record_line(struct out *o, const char *rec, const char *prev, const char *hash)
{
	size_t n = strlen(rec);

	if (n < 2 || rec[n - 1] != '}') {
		o->err = o->err ? o->err : -EBADMSG;
		return;
	}
	out_write(o, rec, n - 1);
	out_write(o, ",\"prev_hash\":\"", 14);
	out_write(o, prev, strlen(prev));
	out_write(o, "\",\"hash\":\"", 10);
	out_write(o, hash, strlen(hash));
	out_write(o, "\"}\n", 3);
}

static int write_slice(struct sb_audit *a, const struct sb_audit_filter *f, uint64_t lo, uint64_t hi, struct out *o,
		       struct sb_audit_export_stats *st, struct sb_err *err)
{
	sqlite3_stmt *rows = NULL, *seals = NULL;
	struct sb_audit_seal_rec s;
	int rc, src;

	rc = sqlite3_prepare_v2(a->db,
				"SELECT seq, record, prev_hash, hash, " MATCH_SQL
				" FROM records WHERE seq BETWEEN ?4 AND ?5 ORDER BY seq",
				-1, &rows, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(a->db,
					"SELECT seq, head_hash, time, pubkey, sig FROM seals WHERE seq BETWEEN ? AND ? "
					"ORDER BY seq, id",
					-1, &seals, NULL);
	if (rc != SQLITE_OK) {
		rc = sb_audit_db_err(a, err, rc, "export");
		goto out;
	}
	bind_filter(rows, f);
	sqlite3_bind_int64(rows, 4, (sqlite3_int64)lo);
	sqlite3_bind_int64(rows, 5, (sqlite3_int64)hi);
	sqlite3_bind_int64(seals, 1, (sqlite3_int64)lo);
	sqlite3_bind_int64(seals, 2, (sqlite3_int64)hi);
	src = sqlite3_step(seals);
	while (!o->err && (rc = sqlite3_step(rows)) == SQLITE_ROW) {
		uint64_t seq = (uint64_t)sqlite3_column_int64(rows, 0);
		const char *rec = (const char *)sqlite3_column_text(rows, 1);
		const char *prev = (const char *)sqlite3_column_text(rows, 2);
		const char *hash = (const char *)sqlite3_column_text(rows, 3);

		if (!rec || !prev || !hash) {
			rc = sb_errf(err, -EBADMSG, "%s: row %llu has NULL fields; run audit verify", a->path,
				     (unsigned long long)seq);
			goto out;
		}
		if (sqlite3_column_int(rows, 4)) {
			record_line(o, rec, prev, hash);
			st->records++;
		} else {
			cJSON *full = cJSON_Parse(rec), *env = full ? sb_audit_envelope(full, err) : NULL;

			cJSON_Delete(full);
			if (!env) {
				rc = sb_errf(err, -EBADMSG, "%s: row %llu cannot be reduced to its envelope; run audit verify",
					     a->path, (unsigned long long)seq);
				goto out;
			}
			cJSON_AddStringToObject(env, "prev_hash", prev);
			cJSON_AddStringToObject(env, "hash", hash);
			out_line(o, env);
			cJSON_Delete(env);
			st->elided++;
		}
		for (; src == SQLITE_ROW && (uint64_t)sqlite3_column_int64(seals, 0) <= seq; src = sqlite3_step(seals)) {
			cJSON *j;

			memset(&s, 0, sizeof(s));
			s.seq = (uint64_t)sqlite3_column_int64(seals, 0);
			snprintf(s.head_hash, sizeof(s.head_hash), "%s", (const char *)sqlite3_column_text(seals, 1));
			snprintf(s.time, sizeof(s.time), "%s", (const char *)sqlite3_column_text(seals, 2));
			snprintf(s.pubkey, sizeof(s.pubkey), "%s", (const char *)sqlite3_column_text(seals, 3));
			snprintf(s.sig, sizeof(s.sig), "%s", (const char *)sqlite3_column_text(seals, 4));
			j = sb_audit_seal_json(&s);
			out_line(o, j);
			cJSON_Delete(j);
			st->seals++;
		}
	}
	if (o->err) {
		rc = sb_errf(err, o->err, "writing the export: %s", strerror(-o->err));
		goto out;
	}
	rc = rc == SQLITE_DONE ? 0 : sb_audit_db_err(a, err, rc, "export");
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(seals);
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int sb_audit_export(struct sb_audit *a, const struct sb_audit_filter *f, const char *path,
		    struct sb_audit_export_stats *st, struct sb_err *err)
{
	struct sb_audit_export_stats dummy;
	struct out o = { .fd = -1 };
	char tmp[4200];
	uint64_t lo, hi;
	cJSON *h;
	int rc;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (!(a->flags & (SB_AUDIT_READONLY | SB_AUDIT_NO_SEAL))) {
		struct sb_audit_seal_info info;
		struct sb_err serr = { { 0 } };

		if (sb_audit_seal(a, &info, &serr))
			snprintf(st->seal_error, sizeof(st->seal_error), "%s", serr.msg);
		else
			st->sealed_now = info.created;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp))
		return sb_errf(err, -ENAMETOOLONG, "output path is too long");
	o.fd = mkstemp(tmp);
	if (o.fd < 0)
		return sb_errf(err, -errno, "cannot create %s: %s", tmp, strerror(errno));
	if (ends_with(path, ".gz")) {
		int dfd = dup(o.fd);

		o.gz = dfd >= 0 ? gzdopen(dfd, "wb") : NULL;
		if (!o.gz) {
			if (dfd >= 0)
				close(dfd);
			rc = sb_errf(err, -ENOMEM, "cannot start gzip output");
			goto fail;
		}
	}
	/* One read transaction: the bounds and the rows come from the same
	 * snapshot while other writers go on appending. */
	rc = sb_audit_begin(a, false, err);
	if (rc)
		goto fail;
	rc = slice_bounds(a, f, &lo, &hi, err);
	if (!rc) {
		h = header(a, f, lo, hi);
		out_line(&o, h);
		cJSON_Delete(h);
		if (lo)
			rc = write_slice(a, f, lo, hi, &o, st, err);
	}
	sb_audit_rollback(a);
	if (rc)
		goto fail;
	if (o.gz) {
		int zrc = gzclose(o.gz);

		o.gz = NULL;
		if (zrc != Z_OK)
			o.err = -EIO;
	}
	if (o.err || fsync(o.fd)) {
		rc = sb_errf(err, o.err ? o.err : -errno, "writing %s failed", tmp);
		goto fail;
	}
	close(o.fd);
	o.fd = -1;
	if (rename(tmp, path)) {
		rc = sb_errf(err, -errno, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto fail;
	}
	st->first_seq = lo;
	st->last_seq = hi;
	return 0;
fail:
	if (o.gz)
		gzclose(o.gz);
	if (o.fd >= 0)
		close(o.fd);
	unlink(tmp);
	return rc;
}
