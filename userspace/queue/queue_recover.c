/* Startup recovery: bring the folder back to a consistent state after any
 * process died at any point. Every step is safe to run while other
 * processes use the queue, and running it twice changes nothing more. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "queue_internal.h"

/* A lease-less claim younger than this may be a claimer between its
 * rename and its lease write right now. */
#define SBQ_RECOVER_GRACE_MS 1000

static bool writer_dead(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);

	/* kill(pid, 0): ESRCH means no such process; EPERM means it exists. */
	return end != name && *end == '-' && pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) &&
	       errno == ESRCH;
}

static size_t clean_tmp(struct sb_queue *q, int64_t now)
{
	int fd = openat(q->dfd[SBQ_TMP], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int64_t mtime;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(q->dfd[SBQ_TMP], de->d_name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
			continue;
		mtime = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
		/* Files of live writers are left alone unless they are far
		 * older than any write takes (pid reuse, other pid namespaces). */
		if (!writer_dead(de->d_name) && mtime + SB_QUEUE_TMP_MAX_AGE_MS > now)
			continue;
		if (unlinkat(q->dfd[SBQ_TMP], de->d_name, 0) == 0) {
			n++;
			sbq_log(q, "removed crash leftover .sandbox/tmp/%s", de->d_name);
		}
	}
	closedir(d);
	return n;
}

/* Validates every file of a state (quarantining malformed ones) and, for
 * pending and claimed, removes copies of decided requests. */
static int check_state(struct sb_queue *q, enum sb_queue_state state, int64_t now,
		       struct sb_queue_recover_stats *st, struct sb_err *err)
{
	struct sbq_ids ids;
	size_t i;
	int rc = sbq_list_ids(q, sbq_state_dir(state), ".json", true, &ids, &st->quarantined, err);

	if (rc)
		return rc;
	for (i = 0; i < ids.n; i++) {
		const char *id = ids.ids[i];
		struct sb_queue_item it;

		if ((state == SB_QS_PENDING || state == SB_QS_CLAIMED) && sbq_decided(q, id)) {
			sbq_remove_undecided(q, id);
			st->stale_removed++;
			sbq_log(q, "removed the %s copy of decided request %s", sb_queue_state_name(state), id);
			continue;
		}
		if (state == SB_QS_PENDING && sbq_exists(q, SBQ_CLAIMED, id, ".json")) {
			/* Both names: a crash inside the link+unlink fallback of
			 * sbq_rename_noreplace (filesystems without
			 * RENAME_NOREPLACE). Unless that is happening right now,
			 * undo the claim; both names are the same file. */
			char name[SBQ_NAME_LEN], lease[SBQ_NAME_LEN];
			int64_t t;

			sbq_name(id, ".json", name);
			sbq_name(id, ".lease", lease);
			if (sbq_file_time(q, SBQ_CLAIMED, name, &t) == 0 && t + SBQ_RECOVER_GRACE_MS <= now) {
				unlinkat(q->dfd[SBQ_CLAIMED], lease, 0);
				unlinkat(q->dfd[SBQ_CLAIMED], name, 0);
				st->stale_removed++;
			}
		}
		rc = sbq_load(q, state, id, &it, NULL);
		if (rc == 0)
			sb_queue_item_free(&it);
		else if (rc == -EBADMSG)
			st->quarantined++;
		else if (rc == -ENOMEM)
			break;
		rc = 0;
	}
	sbq_ids_free(&ids);
	return rc;
}

static size_t count(struct sb_queue *q, enum sbq_dir dir)
{
	struct sbq_ids ids;
	size_t n;

	if (sbq_list_ids(q, dir, ".json", false, &ids, NULL, NULL))
		return 0;
	n = ids.n;
	if (dir == SBQ_DONE) {
		size_t i;

		for (i = 0; i < ids.n; i++)
			n -= sbq_exists(q, SBQ_APPLIED, ids.ids[i], ".json");
	}
	sbq_ids_free(&ids);
	return n;
}

int sb_queue_recover(struct sb_queue *q, struct sb_queue_recover_stats *st, struct sb_err *err)
{
	static const enum sb_queue_state order[] = { SB_QS_DONE, SB_QS_APPLIED, SB_QS_PENDING, SB_QS_CLAIMED };
	struct sb_queue_recover_stats local;
	int64_t now = sb_queue_now_ms();
	size_t i;
	int rc;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	st->tmp_removed = clean_tmp(q, now);
	/* Decisions first: a malformed done file must be gone before pending
	 * copies are judged against it. */
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		rc = check_state(q, order[i], now, st, err);
		if (rc)
			return rc;
	}
	rc = sbq_reclaim(q, now, SBQ_RECOVER_GRACE_MS, &st->reclaimed, &st->leases_removed, err);
	if (rc)
		return rc;
	for (i = 0; i < SBQ_TMP; i++)
		sbq_fsync_dir(q, (enum sbq_dir)i);
	st->pending = count(q, SBQ_PENDING);
	st->claimed = count(q, SBQ_CLAIMED);
	st->done = count(q, SBQ_DONE);
	return 0;
}
