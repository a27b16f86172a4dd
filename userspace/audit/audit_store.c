/* The store: one sqlite file per project folder, in WAL mode with
 * synchronous=FULL, so a commit that returned is on disk (WAL fsync'd)
 * and survives kill -9 and power loss alike. Writers serialise on
 * BEGIN IMMEDIATE: the head is read and the next record inserted under
 * one write lock, so two processes can never both chain after the same
 * head. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit_internal.h"

#define SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 30000

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS records ("
	" seq INTEGER PRIMARY KEY,"	/* 1, 2, 3 ... with no gaps */
	" record TEXT NOT NULL,"	/* canonical JSON, including seq and time */
	" prev_hash TEXT NOT NULL,"
	" hash TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS seals ("
	" id INTEGER PRIMARY KEY,"
	" seq INTEGER NOT NULL,"
	" head_hash TEXT NOT NULL,"
	" time TEXT NOT NULL,"
	" pubkey TEXT NOT NULL,"
	" sig TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS seals_seq ON seals(seq);"
	"PRAGMA user_version = 1;";

int sb_audit_db_err(struct sb_audit *a, struct sb_err *err, int rc, const char *what)
{
	int code = -EIO;

	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		code = -EBUSY;
	else if (rc == SQLITE_NOMEM)
		code = -ENOMEM;
	else if (rc == SQLITE_READONLY || rc == SQLITE_PERM || rc == SQLITE_AUTH)
		code = -EACCES;
	else if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		code = -EBADMSG;
	return sb_errf(err, code, "%s: %s: %s", a->path, what, a->db ? sqlite3_errmsg(a->db) : sqlite3_errstr(rc));
}

double sb_audit_elapsed(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - since->tv_sec) + (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

/* The busy handler covers lock waits, but a few WAL start-up paths
 * (recovery, switching the journal mode) report SQLITE_BUSY without it. */
static int exec_retry(struct sb_audit *a, const char *sql, struct sb_err *err)
{
	struct timespec start;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		rc = sqlite3_exec(a->db, sql, NULL, NULL, NULL);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || sb_audit_elapsed(&start) * 1000 > BUSY_TIMEOUT_MS)
			break;
		usleep(2000);
	}
	return rc == SQLITE_OK ? 0 : sb_audit_db_err(a, err, rc, sql);
}

int sb_audit_begin(struct sb_audit *a, bool write, struct sb_err *err)
{
	return exec_retry(a, write ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

int sb_audit_commit(struct sb_audit *a, struct sb_err *err)
{
	int rc = exec_retry(a, "COMMIT", err);

	if (rc)
		sb_audit_rollback(a);
	return rc;
}

void sb_audit_rollback(struct sb_audit *a)
{
	if (!sqlite3_get_autocommit(a->db))
		sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
}

int sb_audit_head_locked(struct sb_audit *a, uint64_t *seq, uint8_t hash[SB_AUDIT_HASH_LEN], struct sb_err *err)
{
	int rc;

	sqlite3_reset(a->st_head);
	rc = sqlite3_step(a->st_head);
	if (rc == SQLITE_DONE) {
		*seq = 0;
		memset(hash, 0, SB_AUDIT_HASH_LEN);
		sqlite3_reset(a->st_head);
		return 0;
	}
	if (rc != SQLITE_ROW)
		return sb_audit_db_err(a, err, rc, "reading the head");
	*seq = (uint64_t)sqlite3_column_int64(a->st_head, 0);
	if (sb_audit_unhex((const char *)sqlite3_column_text(a->st_head, 1), hash, SB_AUDIT_HASH_LEN)) {
		sqlite3_reset(a->st_head);
		return sb_errf(err, -EBADMSG, "%s: the head record (seq %llu) has a malformed hash; run audit verify",
			       a->path, (unsigned long long)*seq);
	}
	sqlite3_reset(a->st_head);
	return 0;
}

int sb_audit_head(struct sb_audit *a, uint64_t *seq, char hash[SB_AUDIT_HEX_LEN], struct sb_err *err)
{
	uint8_t h[SB_AUDIT_HASH_LEN];
	int rc = sb_audit_begin(a, false, err);

	if (rc)
		return rc;
	rc = sb_audit_head_locked(a, seq, h, err);
	sb_audit_rollback(a);
	if (!rc && hash)
		sb_audit_hex(h, sizeof(h), hash);
	return rc;
}

/* .sandbox/ and audit.db live in the agent's project folder: refuse
 * symlinks there, so nobody can point the store somewhere else. */
static int prepare_paths(const char *folder, unsigned flags, char *path, size_t cap, struct sb_err *err)
{
	char dir[4096];
	struct stat st;
	int fd;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/.sandbox", folder) >= sizeof(dir) ||
	    (size_t)snprintf(path, cap, "%s/.sandbox/audit.db", folder) >= cap)
		return sb_errf(err, -ENAMETOOLONG, "folder path is too long");
	if (lstat(dir, &st)) {
		if (errno != ENOENT || !(flags & SB_AUDIT_CREATE))
			return sb_errf(err, -errno, "no audit store in %s (%s: %s)", folder, dir, strerror(errno));
		if (mkdir(dir, 0700) && errno != EEXIST)
			return sb_errf(err, -errno, "cannot create %s: %s", dir, strerror(errno));
		if (lstat(dir, &st))
			return sb_errf(err, -errno, "%s: %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return sb_errf(err, -ENOTDIR, "%s is not a directory (symlinks are refused)", dir);
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return sb_errf(err, -EINVAL, "%s is not a regular file (symlinks are refused)", path);
		return 0;
	}
	if (errno != ENOENT || !(flags & SB_AUDIT_CREATE))
		return sb_errf(err, -errno, "no audit store in %s (%s: %s)", folder, path, strerror(errno));
	/* Created here so its mode is 0600 whatever the umask; sqlite gives
	 * the -wal and -shm files the same mode. */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno != EEXIST)
		return sb_errf(err, -errno, "cannot create %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return 0;
}

static int prepare(struct sb_audit *a, sqlite3_stmt **st, const char *sql, struct sb_err *err)
{
	int rc = sqlite3_prepare_v3(a->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);

	return rc == SQLITE_OK ? 0 : sb_audit_db_err(a, err, rc, "preparing a statement");
}

static int schema_version(struct sb_audit *a, int *v, struct sb_err *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(a->db, "PRAGMA user_version", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return sb_audit_db_err(a, err, rc, "reading the schema version");
	rc = sqlite3_step(st);
	*v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sb_audit_db_err(a, err, rc, "reading the schema version");
}

static int setup_schema(struct sb_audit *a, struct sb_err *err)
{
	int v, rc;

	if (!(a->flags & SB_AUDIT_READONLY)) {
		rc = exec_retry(a, "PRAGMA journal_mode=WAL", err);
		if (!rc)
			rc = exec_retry(a, "PRAGMA synchronous=FULL", err);
		if (!rc)
			rc = sb_audit_begin(a, true, err);
		if (rc)
			return rc;
		rc = schema_version(a, &v, err);
		if (!rc && v == 0)
			rc = exec_retry(a, schema_sql, err);
		if (rc) {
			sb_audit_rollback(a);
			return rc;
		}
		rc = sb_audit_commit(a, err);
		if (rc)
			return rc;
	}
	rc = schema_version(a, &v, err);
	if (rc)
		return rc;
	if (v != SCHEMA_VERSION)
		return sb_errf(err, -EPROTO, "%s: schema version %d, this program reads version %d", a->path, v,
			       SCHEMA_VERSION);
	return 0;
}

int sb_audit_open(const char *folder, unsigned flags, struct sb_audit **out, struct sb_err *err)
{
	struct sb_audit *a;
	int rc, oflags;

	*out = NULL;
	if (sodium_init() < 0)
		return sb_errf(err, -EIO, "libsodium failed to initialise");
	if (flags & SB_AUDIT_READONLY)
		flags &= ~SB_AUDIT_CREATE;
	a = calloc(1, sizeof(*a));
	if (!a)
		return sb_errf(err, -ENOMEM, "out of memory");
	a->flags = flags;
	a->seal_records = 1000;
	a->seal_seconds = 300;
	a->counter_seconds = 60;
	clock_gettime(CLOCK_MONOTONIC, &a->last_seal);
	a->last_counter_flush = a->last_seal;
	rc = prepare_paths(folder, flags, a->path, sizeof(a->path), err);
	if (rc)
		goto fail;
	oflags = SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX |
		 ((flags & SB_AUDIT_READONLY) ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
	rc = sqlite3_open_v2(a->path, &a->db, oflags, NULL);
	if (rc != SQLITE_OK) {
		rc = sb_audit_db_err(a, err, rc, "opening");
		goto fail;
	}
	sqlite3_busy_timeout(a->db, BUSY_TIMEOUT_MS);
	rc = setup_schema(a, err);
	if (!rc)
		rc = prepare(a, &a->st_head, "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1", err);
	if (!rc)
		rc = prepare(a, &a->st_last_seal,
			     "SELECT seq, head_hash, time, pubkey FROM seals ORDER BY seq DESC, id DESC LIMIT 1", err);
	if (!rc && !(flags & SB_AUDIT_READONLY))
		rc = prepare(a, &a->st_insert, "INSERT INTO records (seq, record, prev_hash, hash) VALUES (?, ?, ?, ?)",
			     err);
	if (!rc && !(flags & SB_AUDIT_READONLY))
		rc = prepare(a, &a->st_insert_seal,
			     "INSERT INTO seals (seq, head_hash, time, pubkey, sig) VALUES (?, ?, ?, ?, ?)", err);
	if (rc)
		goto fail;
	*out = a;
	return 0;
fail:
	sqlite3_finalize(a->st_head);
	sqlite3_finalize(a->st_last_seal);
	sqlite3_finalize(a->st_insert);
	sqlite3_finalize(a->st_insert_seal);
	sqlite3_close(a->db);
	free(a);
	return rc;
}

void sb_audit_set_intervals(struct sb_audit *a, uint64_t seal_records, unsigned seal_seconds, unsigned counter_seconds)
{
	a->seal_records = seal_records;
	a->seal_seconds = seal_seconds;
	a->counter_seconds = counter_seconds;
}

const char *sb_audit_seal_error(const struct sb_audit *a)
{
	return a->seal_error[0] ? a->seal_error : NULL;
}

int sb_audit_close(struct sb_audit *a, struct sb_err *err)
{
	int rc = 0;

	if (!a)
		return 0;
	if (!(a->flags & SB_AUDIT_READONLY)) {
		rc = sb_audit_flush_counters(a, err);
		if (!(a->flags & SB_AUDIT_NO_SEAL)) {
			struct sb_err serr = { { 0 } };
			int src = sb_audit_seal(a, NULL, &serr);

			/* Without the key this writer cannot seal; that is the
			 * documented case, not a failure of close. */
			if (src && src != -ENOKEY && !rc)
				rc = sb_errf(err, src, "%s", serr.msg);
		}
	}
	sqlite3_finalize(a->st_head);
	sqlite3_finalize(a->st_last_seal);
	sqlite3_finalize(a->st_insert);
	sqlite3_finalize(a->st_insert_seal);
	if (sqlite3_close(a->db) != SQLITE_OK && !rc)
		rc = sb_errf(err, -EIO, "%s: close: %s", a->path, sqlite3_errmsg(a->db));
	free(a);
	return rc;
}
