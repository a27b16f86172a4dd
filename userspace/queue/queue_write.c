/* Atomic writes. A file becomes visible in the queue only as a whole:
 * it is written to .sandbox/tmp/, fsynced, then linked (never overwrites:
 * the exactly-once primitive) or renamed (replaces) into place, and the
 * directory is fsynced so the new name survives a power cut. A writer
 * killed half-way leaves only a tmp file, which recovery removes. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "queue_internal.h"

int sbq_fsync_dir(struct sb_queue *q, enum sbq_dir dir)
{
	return fsync(q->dfd[dir]) ? -errno : 0;
}

int sbq_tmp_write(struct sb_queue *q, const void *data, size_t len, char name[SBQ_TMP_NAME_LEN],
		  struct sb_err *err)
{
	const char *p = data;
	int fd = -1, attempt, e;
	uint64_t rnd;

	/* The writer's pid in the name lets recovery tell a dead writer's
	 * leftover from a file being written right now. */
	for (attempt = 0; attempt < 8 && fd < 0; attempt++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return sb_errf(err, -EIO, "getrandom failed");
		snprintf(name, SBQ_TMP_NAME_LEN, "%d-%016llx.tmp", (int)getpid(), (unsigned long long)rnd);
		fd = openat(q->dfd[SBQ_TMP], name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return sb_errf(err, -errno, "cannot create a temp file in .sandbox/tmp: %s", strerror(errno));
	}
	if (fd < 0)
		return sb_errf(err, -EEXIST, "cannot pick a temp file name in .sandbox/tmp");
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd)) {
		e = errno;
		goto fail;
	}
	if (close(fd)) {
		fd = -1;
		e = errno;
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(q->dfd[SBQ_TMP], name, 0);
	return sb_errf(err, -e, "cannot write a temp file in .sandbox/tmp: %s", strerror(e));
}

int sbq_publish(struct sb_queue *q, const char *tmp, enum sbq_dir dir, const char *dst, bool noreplace,
		struct sb_err *err)
{
	int rc = 0;

	if (noreplace) {
		/* link(2) fails with EEXIST when dst exists, so of two writers
		 * of the same name exactly one succeeds; rename(2) would let
		 * the second silently replace the first. */
		if (linkat(q->dfd[SBQ_TMP], tmp, q->dfd[dir], dst, 0))
			rc = -errno;
		unlinkat(q->dfd[SBQ_TMP], tmp, 0);
		if (rc == -EEXIST)
			return sb_errf(err, rc, "%s/%s already exists", sbq_dir_name(dir), dst);
		if (rc == -EPERM || rc == -EOPNOTSUPP)
			return sb_errf(err, rc, "cannot link into %s/%s: the filesystem must support hard links",
				       sbq_dir_name(dir), dst);
	} else if (renameat(q->dfd[SBQ_TMP], tmp, q->dfd[dir], dst)) {
		rc = -errno;
		unlinkat(q->dfd[SBQ_TMP], tmp, 0);
	}
	if (rc)
		return sb_errf(err, rc, "cannot write %s/%s: %s", sbq_dir_name(dir), dst, strerror(-rc));
	rc = sbq_fsync_dir(q, dir);
	if (rc)
		return sb_errf(err, rc, "cannot fsync %s/: %s", sbq_dir_name(dir), strerror(-rc));
	return 0;
}

int sbq_write_file(struct sb_queue *q, enum sbq_dir dir, const char *dst, const void *data, size_t len,
		   bool noreplace, struct sb_err *err)
{
	char tmp[SBQ_TMP_NAME_LEN];
	int rc = sbq_tmp_write(q, data, len, tmp, err);

	return rc ? rc : sbq_publish(q, tmp, dir, dst, noreplace, err);
}

int sbq_write_json(struct sb_queue *q, enum sbq_dir dir, const char *dst, cJSON *j, bool noreplace,
		   sbq_check_fn check, struct sb_err *err)
{
	char *text;
	size_t len;
	int rc;

	if (!j)
		return -ENOMEM;
	text = cJSON_Print(j);
	cJSON_Delete(j);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	/* Text files end with a newline. */
	{
		char *t = realloc(text, len + 2);

		if (!t) {
			free(text);
			return -ENOMEM;
		}
		text = t;
		text[len++] = '\n';
		text[len] = '\0';
	}
	rc = check ? check(text, len, err) : 0;
	if (!rc)
		rc = sbq_write_file(q, dir, dst, text, len, noreplace, err);
	free(text);
	return rc;
}

int sbq_rename_noreplace(int from_dfd, const char *from, int to_dfd, const char *to)
{
	if (renameat2(from_dfd, from, to_dfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* Filesystems without RENAME_NOREPLACE: link then unlink gives the
	 * same single winner (link fails for all but one, and a source that
	 * is already gone fails with ENOENT). */
	if (linkat(from_dfd, from, to_dfd, to, 0))
		return -errno;
	unlinkat(from_dfd, from, 0);
	return 0;
}
