/* Claims: an approver takes a request while a human looks at it, so two
 * approvers do not show (and decide) the same one. A claim is a rename
 * pending -> claimed, which exactly one of several claimers wins; its lease
 * file says who holds it until when. Claims are advisory: the guarantee
 * that a request is decided once comes from sb_queue_decide, so a claim
 * that is reclaimed under a slow human costs a duplicate prompt, never a
 * second decision. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "queue_internal.h"

static int check_owner(const char *owner, struct sb_err *err)
{
	size_t i, n = owner ? strlen(owner) : 0;

	if (n == 0 || n > SB_QUEUE_OWNER_MAX)
		return sb_errf(err, -EINVAL, "a claim needs an owner of 1 to %d characters", SB_QUEUE_OWNER_MAX);
	for (i = 0; i < n; i++) {
		if ((unsigned char)owner[i] < 0x20 || owner[i] == 0x7f)
			return sb_errf(err, -EINVAL, "the claim owner contains a control character");
	}
	return 0;
}

static int write_lease(struct sb_queue *q, const char *id, const char *owner, int lease_ms, int64_t claimed_ms,
		       struct sb_err *err)
{
	struct sb_queue_lease l;
	char name[SBQ_NAME_LEN];
	int64_t now = sb_queue_now_ms();

	memset(&l, 0, sizeof(l));
	snprintf(l.owner, sizeof(l.owner), "%s", owner);
	l.claimed_ms = claimed_ms ? claimed_ms : now;
	l.expires_ms = now + (lease_ms > 0 ? lease_ms : SB_QUEUE_DEFAULT_LEASE_MS);
	sbq_name(id, ".lease", name);
	return sbq_write_json(q, SBQ_CLAIMED, name, sb_queue_lease_to_json(id, &l), false, NULL, err);
}

/* Why a request cannot be claimed, as an error. */
static int not_claimable(struct sb_queue *q, const char *id, struct sb_err *err)
{
	struct sb_queue_lease l;
	char until[SB_QUEUE_TIME_LEN];

	switch (sbq_locate(q, id)) {
	case SB_QS_CLAIMED:
		if (sbq_load_lease(q, id, &l, NULL) == 0) {
			sb_queue_time_format(l.expires_ms, until);
			return sb_errf(err, -EBUSY, "request %s is claimed by %s (lease until %s)", id, l.owner, until);
		}
		return sb_errf(err, -EBUSY, "request %s is claimed by another approver", id);
	case SB_QS_DONE:
	case SB_QS_APPLIED:
		return sb_errf(err, -EALREADY, "request %s is already decided", id);
	case SB_QS_PENDING:
		return sb_errf(err, -EAGAIN, "request %s moved while claiming it; try again", id);
	case SB_QS_NONE:
	default:
		return sb_errf(err, -ENOENT, "no request '%s' in %s", id, q->path);
	}
}

int sb_queue_claim(struct sb_queue *q, const char *id, const char *owner, int lease_ms, struct sb_err *err)
{
	char name[SBQ_NAME_LEN];
	int rc;

	if ((rc = sb_queue_id_check(id, err)) || (rc = check_owner(owner, err)))
		return rc;
	sbq_name(id, ".json", name);
	rc = sbq_rename_noreplace(q->dfd[SBQ_PENDING], name, q->dfd[SBQ_CLAIMED], name);
	if (rc == -ENOENT || rc == -EEXIST)
		return not_claimable(q, id, err);
	if (rc)
		return sb_errf(err, rc, "cannot claim %s: %s", id, strerror(-rc));
	/* A pending copy can outlive its decision by a moment (see
	 * sbq_remove_undecided); the decision wins. */
	if (sbq_decided(q, id)) {
		sbq_remove_undecided(q, id);
		return sb_errf(err, -EALREADY, "request %s is already decided", id);
	}
	rc = write_lease(q, id, owner, lease_ms, 0, err);
	if (rc) {
		sbq_rename_noreplace(q->dfd[SBQ_CLAIMED], name, q->dfd[SBQ_PENDING], name);
		return rc;
	}
	sbq_fsync_dir(q, SBQ_PENDING);
	return 0;
}

int sb_queue_claim_next(struct sb_queue *q, const char *owner, int lease_ms, struct sb_queue_item *out,
			struct sb_err *err)
{
	struct sb_queue_list l;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_owner(owner, err)))
		return rc;
	rc = sb_queue_list(q, SB_QSM(SB_QS_PENDING), &l, err);
	if (rc)
		return rc;
	rc = -ENOENT;
	for (i = 0; i < l.n && rc; i++) {
		const char *id = l.items[i].req.id;

		if (sb_queue_claim(q, id, owner, lease_ms, NULL))
			continue;	/* another approver won it, or it was decided */
		rc = sbq_load(q, SB_QS_CLAIMED, id, out, NULL);
		if (rc == -ENOMEM)
			break;
	}
	sb_queue_list_free(&l);
	if (rc == -ENOENT)
		return sb_errf(err, -ENOENT, "nothing is pending");
	return rc;
}

int sb_queue_renew(struct sb_queue *q, const char *id, const char *owner, int lease_ms, struct sb_err *err)
{
	struct sb_queue_lease l;
	int rc;

	if ((rc = sb_queue_id_check(id, err)) || (rc = check_owner(owner, err)))
		return rc;
	if (!sbq_exists(q, SBQ_CLAIMED, id, ".json") || sbq_decided(q, id))
		return sb_errf(err, -ENOENT, "request %s is no longer claimed", id);
	rc = sbq_load_lease(q, id, &l, NULL);
	if (rc == 0 && strcmp(l.owner, owner))
		return sb_errf(err, -EPERM, "request %s is claimed by %s", id, l.owner);
	return write_lease(q, id, owner, lease_ms, rc == 0 ? l.claimed_ms : 0, err);
}

int sb_queue_release(struct sb_queue *q, const char *id, const char *owner, struct sb_err *err)
{
	struct sb_queue_lease l;
	char name[SBQ_NAME_LEN], lease[SBQ_NAME_LEN];
	int rc;

	if ((rc = sb_queue_id_check(id, err)) || (rc = check_owner(owner, err)))
		return rc;
	if (sbq_load_lease(q, id, &l, NULL) == 0 && strcmp(l.owner, owner))
		return sb_errf(err, -EPERM, "request %s is claimed by %s, not %s", id, l.owner, owner);
	sbq_name(id, ".json", name);
	sbq_name(id, ".lease", lease);
	/* Lease first: removing it after the rename could delete the lease
	 * of the next claimer of the same request. */
	unlinkat(q->dfd[SBQ_CLAIMED], lease, 0);
	rc = sbq_rename_noreplace(q->dfd[SBQ_CLAIMED], name, q->dfd[SBQ_PENDING], name);
	if (rc && rc != -ENOENT)
		return sb_errf(err, rc, "cannot release %s: %s", id, strerror(-rc));
	if (sbq_decided(q, id))
		sbq_remove_undecided(q, id);
	sbq_fsync_dir(q, SBQ_CLAIMED);
	sbq_fsync_dir(q, SBQ_PENDING);
	return 0;
}

int sbq_reclaim(struct sb_queue *q, int64_t now, int64_t grace_ms, size_t *reclaimed, size_t *leases_removed,
		struct sb_err *err)
{
	struct sbq_ids ids;
	size_t i;
	int rc;

	rc = sbq_list_ids(q, SBQ_CLAIMED, ".json", true, &ids, NULL, err);
	if (rc)
		return rc;
	for (i = 0; i < ids.n; i++) {
		const char *id = ids.ids[i];
		char name[SBQ_NAME_LEN], lease[SBQ_NAME_LEN];
		struct sb_queue_lease l;
		int64_t t;

		if (sbq_decided(q, id)) {
			sbq_remove_undecided(q, id);
			continue;
		}
		sbq_name(id, ".json", name);
		sbq_name(id, ".lease", lease);
		rc = sbq_load_lease(q, id, &l, NULL);
		if (rc == 0 && l.expires_ms > now)
			continue;
		/* No lease: the claimer died between its rename and its lease
		 * write, or is in between right now (hence the grace). The
		 * rename set the file's ctime. */
		if (rc != 0 && (sbq_file_time(q, SBQ_CLAIMED, name, &t) || t + grace_ms > now))
			continue;
		unlinkat(q->dfd[SBQ_CLAIMED], lease, 0);
		if (sbq_rename_noreplace(q->dfd[SBQ_CLAIMED], name, q->dfd[SBQ_PENDING], name) == 0 && reclaimed)
			(*reclaimed)++;
	}
	sbq_ids_free(&ids);

	/* Leases whose claim is gone (a crash between release's two steps). */
	rc = sbq_list_ids(q, SBQ_CLAIMED, ".lease", false, &ids, NULL, err);
	if (rc)
		return rc;
	for (i = 0; i < ids.n; i++) {
		char lease[SBQ_NAME_LEN];
		int64_t t;

		if (sbq_exists(q, SBQ_CLAIMED, ids.ids[i], ".json"))
			continue;
		sbq_name(ids.ids[i], ".lease", lease);
		if (sbq_file_time(q, SBQ_CLAIMED, lease, &t) == 0 && t + grace_ms <= now &&
		    unlinkat(q->dfd[SBQ_CLAIMED], lease, 0) == 0 && leases_removed)
			(*leases_removed)++;
	}
	sbq_ids_free(&ids);
	sbq_fsync_dir(q, SBQ_CLAIMED);
	sbq_fsync_dir(q, SBQ_PENDING);
	return 0;
}

int sb_queue_reclaim_stale(struct sb_queue *q, int64_t now_ms, size_t *reclaimed, struct sb_err *err)
{
	if (reclaimed)
		*reclaimed = 0;
	return sbq_reclaim(q, now_ms ? now_ms : sb_queue_now_ms(), SB_QUEUE_CLAIM_GRACE_MS, reclaimed, NULL, err);
}
