/* The queue handle: one directory descriptor per state directory, opened
 * without following symlinks, so every later operation is an *at() call
 * relative to a directory that cannot be swapped underneath us. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "queue_internal.h"

static const char *const dir_names[SBQ__COUNT] = {
	"pending", "claimed", "done", "applied", "out", "quarantine", "tmp", "escalations",
};

const char *sbq_dir_name(enum sbq_dir d)
{
	return (unsigned)d < SBQ__COUNT ? dir_names[d] : "?";
}

enum sbq_dir sbq_state_dir(enum sb_queue_state s)
{
	switch (s) {
	case SB_QS_CLAIMED:
		return SBQ_CLAIMED;
	case SB_QS_DONE:
		return SBQ_DONE;
	case SB_QS_APPLIED:
		return SBQ_APPLIED;
	case SB_QS_PENDING:
	default:
		return SBQ_PENDING;
	}
}

void sbq_name(const char *id, const char *ext, char out[SBQ_NAME_LEN])
{
	snprintf(out, SBQ_NAME_LEN, "%s%s", id, ext);
}

bool sbq_name_id(const char *name, const char *ext, char id[SB_QUEUE_ID_MAX + 1])
{
	size_t n = strlen(name), e = strlen(ext);

	if (n <= e || n - e > SB_QUEUE_ID_MAX || strcmp(name + n - e, ext))
		return false;
	memcpy(id, name, n - e);
	id[n - e] = '\0';
	return sb_queue_id_valid(id);
}

void sbq_log(struct sb_queue *q, const char *fmt, ...)
{
	char msg[SB_ERR_MSG_MAX];
	va_list ap;

	if (!q->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	q->log(q->log_ctx, msg);
}

void sb_queue_set_logger(struct sb_queue *q, sb_queue_log_fn fn, void *ctx)
{
	q->log = fn;
	q->log_ctx = ctx;
}

const char *sb_queue_path(const struct sb_queue *q)
{
	return q->path;
}

static int open_dir(int parent, const char *name, bool create, const char *shown, int *out,
		    struct sb_err *err)
{
	int fd, e;

	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(parent, name, 0775) && errno != EEXIST)
			return sb_errf(err, -errno, "cannot create %s: %s", shown, strerror(errno));
		fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		e = errno;
		if (e == ELOOP || e == ENOTDIR)
			return sb_errf(err, -ELOOP, "%s is a symlink or not a directory; refusing to use it", shown);
		return sb_errf(err, -e, "cannot open %s: %s", shown, strerror(e));
	}
	*out = fd;
	return 0;
}

int sb_queue_open(const char *folder, unsigned flags, struct sb_queue **out, struct sb_err *err)
{
	bool create = flags & SB_QUEUE_CREATE;
	struct sb_queue *q;
	struct stat root_st, st;
	char shown[PATH_MAX + 32];
	int base = -1, sandbox = -1, rc, i;

	*out = NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (i = 0; i < SBQ__COUNT; i++)
		q->dfd[i] = -1;
	if (snprintf(q->path, sizeof(q->path), "%s/.sandbox/escalations", folder) >= (int)sizeof(q->path)) {
		rc = sb_errf(err, -ENAMETOOLONG, "folder path too long");
		goto fail;
	}
	base = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base < 0) {
		rc = sb_errf(err, -errno, "cannot open folder %s: %s", folder, strerror(errno));
		goto fail;
	}
	snprintf(shown, sizeof(shown), "%s/.sandbox", folder);
	if (!create && faccessat(base, ".sandbox/escalations", F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT) {
		rc = sb_errf(err, -ENOENT,
			     "no escalation queue at %s (nothing was escalated in this folder yet; wrong --folder?)",
			     q->path);
		goto fail;
	}
	if ((rc = open_dir(base, ".sandbox", create, shown, &sandbox, err)) ||
	    (rc = open_dir(sandbox, "escalations", create, q->path, &q->dfd[SBQ_ROOT], err)))
		goto fail;
	snprintf(shown, sizeof(shown), "%s/.sandbox/tmp", folder);
	if ((rc = open_dir(sandbox, "tmp", true, shown, &q->dfd[SBQ_TMP], err)))
		goto fail;
	/* Subdirectories are ours once the queue exists: create what is missing. */
	for (i = 0; i < SBQ_TMP; i++) {
		snprintf(shown, sizeof(shown), "%s/%s", q->path, dir_names[i]);
		if ((rc = open_dir(q->dfd[SBQ_ROOT], dir_names[i], true, shown, &q->dfd[i], err)))
			goto fail;
	}
	/* rename(2) and link(2) are atomic only within one filesystem. */
	if (fstat(q->dfd[SBQ_ROOT], &root_st)) {
		rc = sb_errf(err, -errno, "cannot stat %s: %s", q->path, strerror(errno));
		goto fail;
	}
	for (i = 0; i < SBQ_ROOT; i++) {
		if (fstat(q->dfd[i], &st) || st.st_dev != root_st.st_dev) {
			if (i == SBQ_TMP)
				snprintf(shown, sizeof(shown), "%s/.sandbox/tmp", folder);
			else
				snprintf(shown, sizeof(shown), "%s/%s", q->path, dir_names[i]);
			rc = sb_errf(err, -EXDEV, "%s is on another filesystem than %s; the queue needs one filesystem",
				     shown, q->path);
			goto fail;
		}
	}
	close(sandbox);
	close(base);
	*out = q;
	return 0;
fail:
	if (sandbox >= 0)
		close(sandbox);
	if (base >= 0)
		close(base);
	sb_queue_close(q);
	return rc;
}

void sb_queue_close(struct sb_queue *q)
{
	int i;

	if (!q)
		return;
	for (i = 0; i < SBQ__COUNT; i++) {
		if (q->dfd[i] >= 0)
			close(q->dfd[i]);
	}
	free(q);
}
