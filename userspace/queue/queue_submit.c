/* Filing requests (the broker, the hook and the MCP server). The same
 * request from the same process is filed once: the dedup scan and the
 * write happen under an exclusive flock(2) on escalations/.lock, which the
 * kernel drops if the holder dies, so a crash cannot wedge the queue. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "queue_internal.h"

static int lock_queue(struct sb_queue *q, struct sb_err *err)
{
	int fd = openat(q->dfd[SBQ_ROOT], ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0)
		return sb_errf(err, -errno, "cannot open %s/.lock: %s", q->path, strerror(errno));
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			int e = errno;

			close(fd);
			return sb_errf(err, -e, "cannot lock %s/.lock: %s", q->path, strerror(e));
		}
	}
	return fd;
}

/* An identical request (same key, same pid) still waiting for a decision
 * or for the broker to apply one. */
static int find_existing(struct sb_queue *q, const struct sb_queue_request *req,
			 struct sb_queue_submit_result *res, struct sb_err *err)
{
	struct sb_queue_list l;
	size_t i;
	int rc = sb_queue_list(q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED) | SB_QSM(SB_QS_DONE), &l, err);

	if (rc)
		return rc;
	for (i = 0; i < l.n; i++) {
		const struct sb_queue_request *r = &l.items[i].req;

		if (r->pid == req->pid && !strcmp(r->key, req->key)) {
			memcpy(res->id, r->id, sizeof(res->id));
			res->existing = true;
			res->state = l.items[i].state;
			break;
		}
	}
	sb_queue_list_free(&l);
	return 0;
}

static int check_request(const char *text, size_t len, struct sb_err *err)
{
	struct sb_queue_request r;
	int rc = sb_queue_request_parse(text, len, &r, err);

	sb_queue_request_free(&r);
	return rc;
}

/* Producers build requests by hand: parse what would be written, with a
 * stand-in id, so an invalid request is refused before it is filed. */
static int validate(const struct sb_queue_request *r, struct sb_err *err)
{
	struct sb_queue_request v = *r;
	char *text;
	int rc;

	v.own = NULL;
	snprintf(v.id, sizeof(v.id), "00000000-000000-000000-00000000");
	{
		cJSON *j = sb_queue_request_to_json(&v);

		text = j ? cJSON_Print(j) : NULL;
		cJSON_Delete(j);
	}
	if (!text)
		return -ENOMEM;
	rc = check_request(text, strlen(text), err);
	free(text);
	if (rc)
		sb_err_prefix(err, "invalid request: ");
	return rc;
}

int sb_queue_submit(struct sb_queue *q, const struct sb_queue_request *req, struct sb_queue_submit_result *res,
		    struct sb_err *err)
{
	struct sb_queue_request r;
	char name[SBQ_NAME_LEN];
	int lock, rc, attempt;

	memset(res, 0, sizeof(*res));
	r = *req;
	r.own = NULL;
	if (!r.created_ms)
		r.created_ms = sb_queue_now_ms();
	if ((rc = validate(&r, err)))
		return rc;
	lock = lock_queue(q, err);
	if (lock < 0)
		return lock;
	rc = find_existing(q, &r, res, err);
	if (rc || res->existing)
		goto out;
	rc = -EEXIST;
	for (attempt = 0; attempt < 8 && rc == -EEXIST; attempt++) {
		rc = sb_queue_id_new(r.id, 0);
		if (rc) {
			sb_errf(err, rc, "cannot make a request id");
			break;
		}
		if (sbq_locate(q, r.id) != SB_QS_NONE) {
			rc = -EEXIST;
			continue;
		}
		sbq_name(r.id, ".json", name);
		/* link(2): never replaces, so an id is filed at most once. */
		rc = sbq_write_json(q, SBQ_PENDING, name, sb_queue_request_to_json(&r), true, NULL, err);
	}
	if (rc == 0) {
		memcpy(res->id, r.id, sizeof(res->id));
		res->state = SB_QS_PENDING;
	}
out:
	close(lock);
	return rc;
}
