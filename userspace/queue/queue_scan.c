/* Reading the queue. Every file is untrusted: stat before open (no
 * symlinks, FIFOs or devices are ever opened), bounded reads, strict
 * parsing, and a file that fails any of it is moved to quarantine/ with a
 * note instead of stopping the reader. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "queue_internal.h"

int sbq_read_file(int dfd, const char *name, size_t max, char **out, size_t *len, struct sb_err *err)
{
	struct stat st, st2;
	size_t n = 0, size;
	char *buf;
	int fd;

	*out = NULL;
	*len = 0;
	/* lstat first: opening a FIFO would block and opening a device can
	 * have side effects, so only regular files are ever opened. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return sb_errf(err, -errno, "%s", strerror(errno));
	if (S_ISLNK(st.st_mode))
		return sb_errf(err, -ELOOP, "is a symlink");
	if (!S_ISREG(st.st_mode))
		return sb_errf(err, -EINVAL, "is not a regular file");
	if ((uint64_t)st.st_size > max)
		return sb_errf(err, -EFBIG, "is larger than %zu bytes", max);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return sb_errf(err, -errno, "%s", errno == ELOOP ? "is a symlink" : strerror(errno));
	/* Replaced between the stat and the open? Then it is not what we checked. */
	if (fstat(fd, &st2) || !S_ISREG(st2.st_mode) || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		close(fd);
		return sb_errf(err, -EINVAL, "is not a regular file");
	}
	/* Queue files never change once they have a name (writers replace
	 * them whole), so the size is known: read one byte more to notice a
	 * file that grows under us. */
	size = (size_t)st2.st_size;
	if (size > max) {
		close(fd);
		return sb_errf(err, -EFBIG, "is larger than %zu bytes", max);
	}
	buf = malloc(size + 2);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (n <= size) {
		ssize_t r = read(fd, buf + n, size + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return sb_errf(err, -e, "%s", strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > size) {
		free(buf);
		return sb_errf(err, -EINVAL, "changed while it was read");
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int sbq_quarantine(struct sb_queue *q, enum sbq_dir dir, const char *name, const char *why)
{
	char qname[96], note[128], shown[512], when[SB_QUEUE_TIME_LEN], text[2048];
	struct sb_err err = { { 0 } };
	uint32_t rnd = 0;
	time_t t = time(NULL);
	struct tm tm;
	int rc;

	/* The original name may be anything (that is often why it is here):
	 * the quarantine name is ours, the original goes into the note. */
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)getpid();
	gmtime_r(&t, &tm);
	snprintf(qname, sizeof(qname), "%s-%04d%02d%02d-%02d%02d%02d-%08x", sbq_dir_name(dir), tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd);
	rc = sbq_rename_noreplace(q->dfd[dir], name, q->dfd[SBQ_QUARANTINE], qname);
	if (rc) {
		if (rc == -ENOENT)
			return 0;	/* someone else moved it first */
		sb_queue_escape(name, shown, sizeof(shown));
		sbq_log(q, "cannot quarantine %s/%s (%s): %s", sbq_dir_name(dir), shown, why, strerror(-rc));
		return rc;
	}
	sb_queue_escape(name, shown, sizeof(shown));
	sb_queue_time_format(sb_queue_now_ms(), when);
	snprintf(note, sizeof(note), "%s.error", qname);
	snprintf(text, sizeof(text), "file: %s/%s\nerror: %s\nquarantined_at: %s\n", sbq_dir_name(dir), shown, why,
		 when);
	sbq_write_file(q, SBQ_QUARANTINE, note, text, strlen(text), false, &err);
	sbq_fsync_dir(q, dir);
	sbq_log(q, "moved malformed %s/%s to quarantine/%s: %s", sbq_dir_name(dir), shown, qname, why);
	return 0;
}

bool sbq_exists(struct sb_queue *q, enum sbq_dir dir, const char *id, const char *ext)
{
	char name[SBQ_NAME_LEN];

	sbq_name(id, ext, name);
	return faccessat(q->dfd[dir], name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

bool sbq_decided(struct sb_queue *q, const char *id)
{
	return sbq_exists(q, SBQ_DONE, id, ".json") || sbq_exists(q, SBQ_APPLIED, id, ".json");
}

enum sb_queue_state sbq_locate(struct sb_queue *q, const char *id)
{
	int attempt;

	/* Files move while we look (claim, release, decide); a second round
	 * catches a request that moved behind our back. Decisions first: a
	 * pending copy next to a decision is a leftover. */
	for (attempt = 0; attempt < 2; attempt++) {
		if (sbq_exists(q, SBQ_APPLIED, id, ".json"))
			return SB_QS_APPLIED;
		if (sbq_exists(q, SBQ_DONE, id, ".json"))
			return SB_QS_DONE;
		if (sbq_exists(q, SBQ_CLAIMED, id, ".json"))
			return SB_QS_CLAIMED;
		if (sbq_exists(q, SBQ_PENDING, id, ".json"))
			return SB_QS_PENDING;
		if (sbq_exists(q, SBQ_CLAIMED, id, ".json"))
			return SB_QS_CLAIMED;
	}
	return SB_QS_NONE;
}

void sbq_remove_undecided(struct sb_queue *q, const char *id)
{
	char json[SBQ_NAME_LEN], lease[SBQ_NAME_LEN];
	int round;

	sbq_name(id, ".json", json);
	sbq_name(id, ".lease", lease);
	/* A concurrent claim or release may move the copy between the two
	 * directories while we unlink; two rounds catch one such move, and
	 * readers remove whatever is left next to a decision. */
	for (round = 0; round < 2; round++) {
		unlinkat(q->dfd[SBQ_CLAIMED], json, 0);
		unlinkat(q->dfd[SBQ_PENDING], json, 0);
	}
	unlinkat(q->dfd[SBQ_CLAIMED], lease, 0);
	sbq_fsync_dir(q, SBQ_PENDING);
	sbq_fsync_dir(q, SBQ_CLAIMED);
}

int sbq_file_time(struct sb_queue *q, enum sbq_dir dir, const char *name, int64_t *ms)
{
	struct stat st;
	int64_t m, c;

	if (fstatat(q->dfd[dir], name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	m = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	c = (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
	*ms = m > c ? m : c;
	return 0;
}

static bool has_ext(const char *name, const char *ext)
{
	char id[SB_QUEUE_ID_MAX + 1];

	return sbq_name_id(name, ext, id);
}

/* Does name have a place in dir? */
static bool name_allowed(enum sbq_dir dir, const char *name)
{
	switch (dir) {
	case SBQ_CLAIMED:
		return has_ext(name, ".json") || has_ext(name, ".lease");
	case SBQ_OUT:
		return has_ext(name, ".txt");
	case SBQ_PENDING:
	case SBQ_DONE:
	case SBQ_APPLIED:
		return has_ext(name, ".json");
	default:
		return true;
	}
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int sbq_list_ids(struct sb_queue *q, enum sbq_dir dir, const char *ext, bool quarantine_bad,
		 struct sbq_ids *out, size_t *bad, struct sb_err *err)
{
	struct dirent *de;
	DIR *d;
	int fd;

	memset(out, 0, sizeof(*out));
	/* fdopendir takes the descriptor: give it a fresh one. */
	fd = openat(q->dfd[dir], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return sb_errf(err, -e, "cannot read %s/%s: %s", q->path, sbq_dir_name(dir), strerror(e));
	}
	while ((errno = 0, de = readdir(d))) {
		char id[SB_QUEUE_ID_MAX + 1];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!name_allowed(dir, de->d_name)) {
			char why[160];

			snprintf(why, sizeof(why),
				 "the name has no place in %s/ (expected <id>%s%s; an id is letters, digits, '-' and '_')",
				 sbq_dir_name(dir), dir == SBQ_OUT ? ".txt" : ".json",
				 dir == SBQ_CLAIMED ? " or <id>.lease" : "");
			if (quarantine_bad && sbq_quarantine(q, dir, de->d_name, why) == 0 && bad)
				(*bad)++;
			continue;
		}
		if (!sbq_name_id(de->d_name, ext, id))
			continue;
		if (out->n == out->cap) {
			size_t ncap = out->cap ? out->cap * 2 : 32;
			void *ni = realloc(out->ids, ncap * sizeof(*out->ids));

			if (!ni) {
				closedir(d);
				sbq_ids_free(out);
				return -ENOMEM;
			}
			out->ids = ni;
			out->cap = ncap;
		}
		memcpy(out->ids[out->n++], id, sizeof(id));
	}
	closedir(d);
	if (out->n)
		qsort(out->ids, out->n, sizeof(*out->ids), id_cmp);
	return 0;
}

void sbq_ids_free(struct sbq_ids *ids)
{
	free(ids->ids);
	memset(ids, 0, sizeof(*ids));
}

int sbq_load_lease(struct sb_queue *q, const char *id, struct sb_queue_lease *l, struct sb_err *err)
{
	char name[SBQ_NAME_LEN], fid[SB_QUEUE_ID_MAX + 1], why[SB_ERR_MSG_MAX];
	struct sb_err e2 = { { 0 } };
	size_t len;
	char *text;
	int rc;

	sbq_name(id, ".lease", name);
	rc = sbq_read_file(q->dfd[SBQ_CLAIMED], name, SB_QUEUE_FILE_MAX, &text, &len, &e2);
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc == -ELOOP || rc == -EINVAL || rc == -EFBIG) {
		snprintf(why, sizeof(why), "%s", e2.msg);
		goto bad;
	}
	if (rc)
		return sb_errf(err, rc, "cannot read claimed/%s: %s", name, e2.msg);
	rc = sb_queue_lease_parse(text, len, fid, l, &e2);
	free(text);
	if (!rc && strcmp(fid, id))
		rc = sb_errf(&e2, -EINVAL, "the lease is for '%s', not '%s'", fid, id);
	if (!rc)
		return 0;
	if (rc == -ENOMEM)
		return rc;
	snprintf(why, sizeof(why), "%s", e2.msg);
bad:
	sbq_quarantine(q, SBQ_CLAIMED, name, why);
	return sb_errf(err, -EBADMSG, "claimed/%s was malformed and moved to quarantine: %s", name, why);
}

int sbq_load(struct sb_queue *q, enum sb_queue_state state, const char *id, struct sb_queue_item *it,
	     struct sb_err *err)
{
	enum sbq_dir dir = sbq_state_dir(state);
	char name[SBQ_NAME_LEN], why[SB_ERR_MSG_MAX];
	struct sb_err e2 = { { 0 } };
	size_t len;
	char *text;
	int rc;

	memset(it, 0, sizeof(*it));
	sbq_name(id, ".json", name);
	rc = sbq_read_file(q->dfd[dir], name, SB_QUEUE_FILE_MAX, &text, &len, &e2);
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc == -ELOOP || rc == -EINVAL || rc == -EFBIG) {
		snprintf(why, sizeof(why), "%s", e2.msg);
		goto bad;
	}
	if (rc)
		return sb_errf(err, rc, "cannot read %s/%s: %s", sbq_dir_name(dir), name, e2.msg);
	if (state == SB_QS_DONE || state == SB_QS_APPLIED) {
		rc = sb_queue_done_parse(text, len, &it->req, &it->dec, &e2);
		it->has_decision = rc == 0;
	} else {
		rc = sb_queue_request_parse(text, len, &it->req, &e2);
	}
	free(text);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		snprintf(why, sizeof(why), "%s", e2.msg);
		goto bad;
	}
	if (strcmp(it->req.id, id)) {
		snprintf(why, sizeof(why), "the file says it is request '%s'", it->req.id);
		sb_queue_item_free(it);
		goto bad;
	}
	it->state = state;
	if (state == SB_QS_CLAIMED)
		it->has_lease = sbq_load_lease(q, id, &it->lease, NULL) == 0;
	return 0;
bad:
	sbq_quarantine(q, dir, name, why);
	return sb_errf(err, -EBADMSG, "%s/%s was malformed and moved to quarantine: %s", sbq_dir_name(dir), name,
		       why);
}

void sb_queue_item_free(struct sb_queue_item *it)
{
	if (!it)
		return;
	sb_queue_request_free(&it->req);
	memset(it, 0, sizeof(*it));
}

void sb_queue_list_free(struct sb_queue_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		sb_queue_item_free(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

static int item_cmp(const void *a, const void *b)
{
	const struct sb_queue_item *x = a, *y = b;
	int c = strcmp(x->req.id, y->req.id);

	return c ? c : (int)x->state - (int)y->state;
}

static int list_state(struct sb_queue *q, enum sb_queue_state state, struct sb_queue_list *out,
		      size_t *cap, struct sb_err *err)
{
	enum sbq_dir dir = sbq_state_dir(state);
	struct sbq_ids ids;
	size_t i;
	int rc;

	rc = sbq_list_ids(q, dir, ".json", true, &ids, &out->quarantined, err);
	if (rc)
		return rc;
	for (i = 0; i < ids.n; i++) {
		const char *id = ids.ids[i];

		if (state == SB_QS_DONE && sbq_exists(q, SBQ_APPLIED, id, ".json"))
			continue;	/* applied: not the broker's business any more */
		if ((state == SB_QS_PENDING || state == SB_QS_CLAIMED) && sbq_decided(q, id)) {
			sbq_remove_undecided(q, id);
			continue;
		}
		if (out->n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			void *ni = realloc(out->items, ncap * sizeof(*out->items));

			if (!ni) {
				rc = -ENOMEM;
				break;
			}
			out->items = ni;
			*cap = ncap;
		}
		rc = sbq_load(q, state, id, &out->items[out->n], err);
		if (rc == 0) {
			out->n++;
		} else if (rc == -EBADMSG) {
			out->quarantined++;
			rc = 0;
		} else if (rc == -ENOENT) {
			rc = 0;		/* moved on while we listed */
		} else {
			break;
		}
	}
	sbq_ids_free(&ids);
	return rc;
}

int sb_queue_list(struct sb_queue *q, unsigned states, struct sb_queue_list *out, struct sb_err *err)
{
	static const enum sb_queue_state order[] = { SB_QS_PENDING, SB_QS_CLAIMED, SB_QS_DONE, SB_QS_APPLIED };
	size_t cap = 0, i, w;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < sizeof(order) / sizeof(order[0]) && !rc; i++) {
		if (states & SB_QSM(order[i]))
			rc = list_state(q, order[i], out, &cap, err);
	}
	if (rc) {
		sb_queue_list_free(out);
		return rc;
	}
	if (out->n > 1)
		qsort(out->items, out->n, sizeof(*out->items), item_cmp);
	/* A request that moved while we listed shows up once, in its later state. */
	for (i = 0, w = 0; i < out->n; i++) {
		if (w > 0 && !strcmp(out->items[w - 1].req.id, out->items[i].req.id)) {
			sb_queue_item_free(&out->items[w - 1]);
			out->items[w - 1] = out->items[i];
			continue;
		}
		out->items[w++] = out->items[i];
	}
	out->n = w;
	return 0;
}

int sb_queue_locate(struct sb_queue *q, const char *id, enum sb_queue_state *state, struct sb_err *err)
{
	int rc;

	*state = SB_QS_NONE;
	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	*state = sbq_locate(q, id);
	return 0;
}

int sb_queue_get(struct sb_queue *q, const char *id, struct sb_queue_item *out, struct sb_err *err)
{
	int attempt, rc = -ENOENT;

	memset(out, 0, sizeof(*out));
	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	for (attempt = 0; attempt < 4; attempt++) {
		enum sb_queue_state st = sbq_locate(q, id);

		if (st == SB_QS_NONE)
			break;
		rc = sbq_load(q, st, id, out, err);
		if (rc != -ENOENT)
			return rc;
	}
	return sb_errf(err, -ENOENT, "no request '%s' in %s", id, q->path);
}
