/* Waiting for changes: inotify on the state directories, with polling
 * when inotify is unavailable (no instances left, some network or FUSE
 * filesystems). Callers always rescan after a wake-up and also on a
 * timer, so a lost event (queue overflow) costs latency, never a request. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "queue_internal.h"

#define SBQ_WAIT_RESCAN_MS 1000

struct sb_queue_notify {
	int fd;
};

int sb_queue_notify_open(struct sb_queue *q, unsigned states, struct sb_queue_notify **out, struct sb_err *err)
{
	static const enum sb_queue_state all[] = { SB_QS_PENDING, SB_QS_CLAIMED, SB_QS_DONE, SB_QS_APPLIED };
	struct sb_queue_notify *n = calloc(1, sizeof(*n));
	size_t i;

	(void)err;
	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	for (i = 0; n->fd >= 0 && i < sizeof(all) / sizeof(all[0]); i++) {
		char path[64];

		if (!(states & SB_QSM(all[i])))
			continue;
		/* Watch the directory we hold open, not a path that could
		 * have been replaced since. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", q->dfd[sbq_state_dir(all[i])]);
		if (inotify_add_watch(n->fd, path,
				      IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR) < 0) {
			close(n->fd);
			n->fd = -1;
		}
	}
	*out = n;
	return 0;
}

int sb_queue_notify_fd(const struct sb_queue_notify *n)
{
	return n ? n->fd : -1;
}

void sb_queue_notify_drain(struct sb_queue_notify *n)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (!n || n->fd < 0)
		return;
	while (read(n->fd, buf, sizeof(buf)) > 0)
		;
}

int sb_queue_notify_wait(struct sb_queue_notify *n, int timeout_ms)
{
	struct pollfd p;
	int rc;

	if (!n || n->fd < 0) {
		struct timespec ts;
		int ms = timeout_ms < 0 || timeout_ms > SB_QUEUE_POLL_MS ? SB_QUEUE_POLL_MS : timeout_ms;

		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long)(ms % 1000) * 1000000;
		nanosleep(&ts, NULL);
		return 1;
	}
	p.fd = n->fd;
	p.events = POLLIN;
	rc = poll(&p, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 1 : -errno;
	if (rc == 0)
		return 0;
	sb_queue_notify_drain(n);
	return 1;
}

void sb_queue_notify_close(struct sb_queue_notify *n)
{
	if (!n)
		return;
	if (n->fd >= 0)
		close(n->fd);
	free(n);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 0 and the decision, -ENOENT when not decided, -EBADMSG when malformed. */
static int load_decision(struct sb_queue *q, const char *id, struct sb_queue_decision *dec,
			 struct sb_queue_request *req, struct sb_err *err)
{
	struct sb_queue_item it;
	int rc = sbq_load(q, SB_QS_DONE, id, &it, err);

	if (rc == -ENOENT)
		rc = sbq_load(q, SB_QS_APPLIED, id, &it, err);
	if (rc)
		return rc;
	*dec = it.dec;
	if (req) {
		*req = it.req;
		memset(&it.req, 0, sizeof(it.req));
	}
	sb_queue_item_free(&it);
	return 0;
}

int sb_queue_wait(struct sb_queue *q, const char *id, int timeout_ms, struct sb_queue_decision *dec,
		  struct sb_queue_request *req, struct sb_err *err)
{
	struct sb_queue_notify *n = NULL;
	int64_t deadline = timeout_ms >= 0 ? mono_ms() + timeout_ms : -1;
	int rc;

	memset(dec, 0, sizeof(*dec));
	if (req)
		memset(req, 0, sizeof(*req));
	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	/* Watch before the first look, so a decision landing in between
	 * still wakes us. */
	rc = sb_queue_notify_open(q, SB_QSM(SB_QS_DONE), &n, err);
	if (rc)
		return rc;
	for (;;) {
		int64_t left;

		rc = load_decision(q, id, dec, req, err);
		if (rc != -ENOENT)
			break;
		/* Neither waiting nor decided: it was quarantined. Look at
		 * done/ once more, since deciding moves it there meanwhile. */
		if (sbq_locate(q, id) == SB_QS_NONE) {
			rc = load_decision(q, id, dec, req, err);
			if (rc == -ENOENT)
				rc = sb_errf(err, -ENOENT, "request %s is not in the queue (unknown or quarantined)", id);
			break;
		}
		left = deadline < 0 ? SBQ_WAIT_RESCAN_MS : deadline - mono_ms();
		if (left <= 0) {
			rc = sb_errf(err, -ETIMEDOUT, "no decision for %s yet", id);
			break;
		}
		rc = sb_queue_notify_wait(n, left > SBQ_WAIT_RESCAN_MS ? SBQ_WAIT_RESCAN_MS : (int)left);
		if (rc < 0) {
			rc = sb_errf(err, rc, "waiting for %s: %s", id, strerror(-rc));
			break;
		}
	}
	sb_queue_notify_close(n);
	return rc;
}
