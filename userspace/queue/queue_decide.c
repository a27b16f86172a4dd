/* Decisions: exactly once per request, then acknowledged by the broker.
 *
 * decide: the request + decision is written to tmp/ and link(2)ed to
 * done/<id>.json. link fails with EEXIST when the name exists, so when a
 * human and the broker's timeout decide at the same moment one link wins
 * and the other decider learns it lost (-EALREADY); rename(2) would have
 * let the second silently replace the first. Only then are the pending or
 * claimed copies removed; a crash in between leaves copies that every
 * reader removes because a decision exists (the decision wins).
 *
 * ack: done/<id>.json is linked to applied/<id>.json. done/ keeps its
 * name, so the decision slot stays taken and a late decider still gets
 * -EALREADY; a restarted broker applies what is in done/ and not in
 * applied/. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "queue_internal.h"

static int already_decided(struct sb_queue *q, const char *id, struct sb_err *err)
{
	struct sb_queue_item it;
	char when[SB_QUEUE_TIME_LEN];
	int rc = -ENOENT, attempt;

	for (attempt = 0; attempt < 2 && rc == -ENOENT; attempt++) {
		rc = sbq_load(q, SB_QS_APPLIED, id, &it, NULL);
		if (rc == -ENOENT)
			rc = sbq_load(q, SB_QS_DONE, id, &it, NULL);
	}
	if (rc)
		return sb_errf(err, -EALREADY, "request %s is already decided", id);
	sb_queue_time_format(it.dec.decided_ms, when);
	sb_errf(err, -EALREADY, "request %s is already decided: %s by %s at %s%s (%s)", id,
		it.dec.verdict == SB_QV_ALLOW ? "allowed" : "denied", it.dec.reviewer, when,
		it.dec.timed_out ? " (timeout)" : "",
		it.state == SB_QS_APPLIED ? "applied by the broker" : "waiting for the broker to apply it");
	sb_queue_item_free(&it);
	return -EALREADY;
}

static int check_done(const char *text, size_t len, struct sb_err *err)
{
	struct sb_queue_request r;
	struct sb_queue_decision d;
	int rc = sb_queue_done_parse(text, len, &r, &d, err);

	sb_queue_request_free(&r);
	return rc;
}

int sb_queue_decide(struct sb_queue *q, const char *id, const struct sb_queue_decision *d, struct sb_err *err)
{
	struct sb_queue_decision dec = *d;
	struct sb_queue_item it;
	char name[SBQ_NAME_LEN];
	int rc = -ENOENT, attempt;

	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	/* Find the request; it may be moving between pending and claimed. */
	for (attempt = 0; attempt < 4; attempt++) {
		enum sb_queue_state st = sbq_locate(q, id);

		if (st == SB_QS_DONE || st == SB_QS_APPLIED)
			return already_decided(q, id, err);
		if (st == SB_QS_NONE)
			return sb_errf(err, -ENOENT, "no request '%s' in %s", id, q->path);
		rc = sbq_load(q, st, id, &it, err);
		if (rc != -ENOENT)
			break;
	}
	if (rc == -EBADMSG)
		return sb_errf(err, -ENOENT, "request %s was malformed and has been moved to quarantine", id);
	if (rc == -ENOENT)
		return sb_errf(err, -ENOENT, "no request '%s' in %s", id, q->path);
	if (rc)
		return rc;
	if (!dec.decided_ms)
		dec.decided_ms = sb_queue_now_ms();
	rc = sb_queue_decision_check(&it.req, &dec, err);
	if (rc == 0) {
		sbq_name(id, ".json", name);
		rc = sbq_write_json(q, SBQ_DONE, name, sb_queue_done_to_json(&it.req, &dec), true, check_done, err);
	}
	sb_queue_item_free(&it);
	if (rc == -EEXIST)
		return already_decided(q, id, err);
	if (rc)
		return rc;
	sbq_remove_undecided(q, id);
	return 0;
}

int sb_queue_ack(struct sb_queue *q, const char *id, struct sb_err *err)
{
	char name[SBQ_NAME_LEN];
	int rc;

	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	sbq_name(id, ".json", name);
	if (linkat(q->dfd[SBQ_DONE], name, q->dfd[SBQ_APPLIED], name, 0)) {
		rc = -errno;
		if (rc == -EEXIST)
			return sb_errf(err, -EALREADY, "request %s was already acknowledged", id);
		if (rc == -ENOENT)
			return sb_errf(err, -ENOENT, "request %s has no decision to acknowledge", id);
		return sb_errf(err, rc, "cannot acknowledge %s: %s", id, strerror(-rc));
	}
	rc = sbq_fsync_dir(q, SBQ_APPLIED);
	return rc ? sb_errf(err, rc, "cannot fsync applied/: %s", strerror(-rc)) : 0;
}

static bool older(struct sb_queue *q, enum sbq_dir dir, const char *name, int64_t cutoff)
{
	int64_t t;

	return sbq_file_time(q, dir, name, &t) == 0 && t < cutoff;
}

int sb_queue_prune(struct sb_queue *q, int64_t max_age_ms, size_t *removed, struct sb_err *err)
{
	int64_t cutoff = sb_queue_now_ms() - max_age_ms;
	struct sbq_ids ids;
	size_t i, n = 0;
	int rc;

	if (removed)
		*removed = 0;
	rc = sbq_list_ids(q, SBQ_APPLIED, ".json", true, &ids, NULL, err);
	if (rc)
		return rc;
	for (i = 0; i < ids.n; i++) {
		char name[SBQ_NAME_LEN], out[SBQ_NAME_LEN];

		sbq_name(ids.ids[i], ".json", name);
		sbq_name(ids.ids[i], ".txt", out);
		if (!older(q, SBQ_APPLIED, name, cutoff))
			continue;
		/* done/ first: an applied/ name alone is still "applied", while
		 * a done/ name alone would look unapplied and be applied again. */
		unlinkat(q->dfd[SBQ_DONE], name, 0);
		unlinkat(q->dfd[SBQ_OUT], out, 0);
		if (unlinkat(q->dfd[SBQ_APPLIED], name, 0) == 0)
			n++;
	}
	sbq_ids_free(&ids);
	{
		/* quarantine/ names are ours ("<dir>-<time>-<rand>[.error]"). */
		int fd = openat(q->dfd[SBQ_QUARANTINE], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;

		if (!d && fd >= 0)
			close(fd);
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.' || !older(q, SBQ_QUARANTINE, de->d_name, cutoff))
				continue;
			if (unlinkat(q->dfd[SBQ_QUARANTINE], de->d_name, 0) == 0 ||
			    unlinkat(q->dfd[SBQ_QUARANTINE], de->d_name, AT_REMOVEDIR) == 0)
				n++;
		}
		if (d)
			closedir(d);
	}
	sbq_fsync_dir(q, SBQ_DONE);
	sbq_fsync_dir(q, SBQ_APPLIED);
	if (removed)
		*removed = n;
	return 0;
}
