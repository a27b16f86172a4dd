/* The escalation loop's latency and throughput, measured in the VM by
 * `make vmbench-escalation` (tests/bench/vmbench_escalation runs it as
 * root with a broker attached). Not a test: prints Markdown tables for
 * docs/performance.md ("Escalation loop").
 *
 *   bench_escalation approve FOLDER CGROUP DIR N
 *       a child in CGROUP (uid 1000) creates DIR/f0..f(N-1) one after the
 *       other, each held for the broker; this process is the scripted
 *       approver: it sees each request arrive in pending/ (inotify) and
 *       approves it through the queue library. Per request:
 *         event -> request file   the child's syscall start to the file in pending/
 *         decision -> running     the done file written to the child's syscall return
 *   bench_escalation rules LABEL CGROUP DIR N
 *       the child creates N files in DIR as fast as it can and one table
 *       row says how many per second (and p50/p99 per create): DIR is
 *       chosen by the caller so a remembered decision answers every hold
 *       in the broker, or a rule decides in the kernel (for comparison).
 *
 * Times are CLOCK_MONOTONIC in the guest (TCG: see docs/performance.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "queue/queue.h"

#define MAXN 100000

struct shared {
	int64_t t0[MAXN];	/* child: before the syscall */
	int64_t t3[MAXN];	/* child: after it returned */
	int ok[MAXN];
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void stats(const char *what, int64_t *v, int n)
{
	double sum = 0;
	int i;

	qsort(v, (size_t)n, sizeof(*v), cmp64);
	for (i = 0; i < n; i++)
		sum += (double)v[i];
	printf("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", what, n, (double)v[n / 2] / 1e6,
	       (double)v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e6, sum / n / 1e6, (double)v[0] / 1e6,
	       (double)v[n - 1] / 1e6);
}

/* The child: into the sandbox cgroup as the agent, then N creates; one
 * byte on the pipe after each (the approver waits for it). */
static void child(const char *cgroup, const char *dir, int n, struct shared *sh, int wfd)
{
	char path[PATH_MAX];
	int fd, i;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, "0", 1) != 1)
		_exit(3);
	close(fd);
	if (setgid(1000) || setuid(1000))
		_exit(4);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		sh->t0[i] = mono_ns();
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		sh->t3[i] = mono_ns();
		sh->ok[i] = fd >= 0;
		if (fd >= 0)
			close(fd);
		if (wfd >= 0 && write(wfd, "x", 1) != 1)
			_exit(5);
	}
	_exit(0);
}

static pid_t spawn(const char *cgroup, const char *dir, int n, struct shared *sh, int *rfd)
{
	int p[2] = { -1, -1 };
	pid_t pid;

	if (rfd && pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (rfd)
			close(p[0]);
		child(cgroup, dir, n, sh, rfd ? p[1] : -1);
	}
	if (rfd) {
		close(p[1]);
		*rfd = p[0];
	}
	return pid;
}

/* inotify on pending/, one event at a time (none is dropped). */
struct watcher {
	int fd;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len, off;
	int64_t read_ns;	/* when the buffered events were read */
};

/* Waits for the next request file in pending/; its id into id. */
static int next_request(struct watcher *w, char id[SB_QUEUE_ID_MAX + 1], int64_t *when)
{
	for (;;) {
		while (w->off < w->len) {
			const struct inotify_event *e = (const void *)(w->buf + w->off);
			size_t l = e->len ? strlen(e->name) : 0;

			w->off += (ssize_t)(sizeof(*e) + e->len);
			if (l > 5 && !strcmp(e->name + l - 5, ".json") && l - 5 <= SB_QUEUE_ID_MAX) {
				memcpy(id, e->name, l - 5);
				id[l - 5] = '\0';
				*when = w->read_ns;
				return 0;
			}
		}
		w->len = read(w->fd, w->buf, sizeof(w->buf));
		w->off = 0;
		if (w->len <= 0)
			return -errno;
		w->read_ns = mono_ns();
	}
}

/* Whether an event is waiting (without blocking). */
static bool pending_event(const struct watcher *w)
{
	return w->off < w->len;
}

static int bench_approve(const char *folder, const char *cgroup, const char *dir, int n)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int64_t *ev_to_file = calloc((size_t)n, sizeof(int64_t)), *dec_to_run = calloc((size_t)n, sizeof(int64_t));
	int64_t *approver = calloc((size_t)n, sizeof(int64_t)), *decide_ns = calloc((size_t)n, sizeof(int64_t));
	int64_t t1 = 0, t2, start;
	struct sb_queue *q;
	struct sb_err err = { { 0 } };
	char pending[PATH_MAX];
	static struct watcher w;
	int ino, rfd, i, st, okn = 0, extra = 0;
	pid_t pid;

	if (sh == MAP_FAILED || !ev_to_file || !dec_to_run || !approver || !decide_ns)
		return 1;
	if (sb_queue_open(folder, 0, &q, &err)) {
		fprintf(stderr, "bench_escalation: %s\n", err.msg);
		return 1;
	}
	snprintf(pending, sizeof(pending), "%s/.sandbox/escalations/pending", folder);
	ino = inotify_init1(IN_CLOEXEC);
	if (ino < 0 || inotify_add_watch(ino, pending, IN_CREATE | IN_MOVED_TO) < 0) {
		perror("inotify");
		return 1;
	}
	w.fd = ino;
	start = mono_ns();
	pid = spawn(cgroup, dir, n, sh, &rfd);
	if (pid < 0)
		return 1;
	for (i = 0; i < n; i++) {
		struct sb_queue_decision d = { .verdict = SB_QV_ALLOW };
		char id[SB_QUEUE_ID_MAX + 1], first[SB_QUEUE_ID_MAX + 1], c;

		if (next_request(&w, id, &t1)) {
			fprintf(stderr, "bench_escalation: inotify failed at %d\n", i);
			kill(pid, SIGKILL);
			return 1;
		}
		snprintf(d.reviewer, sizeof(d.reviewer), "bench");
		snprintf(first, sizeof(first), "%s", id);
		t2 = mono_ns();	/* the decision is being written from here */
		approver[i] = t2 - t1;
		if (sb_queue_decide(q, id, &d, &err)) {
			fprintf(stderr, "bench_escalation: decide %s: %s\n", id, err.msg);
			kill(pid, SIGKILL);
			return 1;
		}
		decide_ns[i] = mono_ns() - t2;
		/* Until the create returns: a second request for the same
		 * syscall (there should be none) is approved and counted. */
		for (;;) {
			struct pollfd pf[2] = { { .fd = rfd, .events = POLLIN }, { .fd = ino, .events = POLLIN } };
			int64_t tx;

			if (pending_event(&w)) {
				pf[1].revents = POLLIN;
				pf[0].revents = 0;
			} else if (poll(pf, 2, -1) < 0 && errno != EINTR) {
				return 1;
			}
			if (pf[0].revents) {
				if (read(rfd, &c, 1) != 1) {
					fprintf(stderr, "bench_escalation: the child stopped at %d\n", i);
					return 1;
				}
				break;
			}
			if (pf[1].revents && next_request(&w, id, &tx) == 0) {
				struct sb_queue_item it;

				if (extra < 3 && sb_queue_get(q, id, &it, &err) == 0) {
					struct sb_queue_item f;

					printf("extra request during create %d: %s (pid %d, id %s, state %s%s)\n", i, it.req.key,
					       it.req.pid, id, sb_queue_state_name(it.state), strcmp(id, first) ? "" : ", the same id again");
					sb_queue_item_free(&it);
					if (sb_queue_get(q, first, &f, &err) == 0) {
						printf("  the request decided for it: %s %s (state %s)\n", first, f.req.key,
						       sb_queue_state_name(f.state));
						sb_queue_item_free(&f);
					}
				}
				t2 = mono_ns();
				if (sb_queue_decide(q, id, &d, &err))
					fprintf(stderr, "bench_escalation: decide %s: %s\n", id, err.msg);
				extra++;
			}
		}
		ev_to_file[i] = t1 - sh->t0[i];
		dec_to_run[i] = sh->t3[i] - t2;
		okn += sh->ok[i];
	}
	waitpid(pid, &st, 0);
	printf("| measurement (%d requests, one at a time) | n | p50 ms | p99 ms | mean ms | min ms | max ms |\n", n);
	printf("|---|---:|---:|---:|---:|---:|---:|\n");
	stats("event -> request file in pending/", ev_to_file, n);
	stats("decision (written from) -> task running again", dec_to_run, n);
	stats("(of which writing the decision: sb_queue_decide)", decide_ns, n);
	stats("(scripted approver: file seen -> deciding)", approver, n);
	printf("\n%d of %d creates succeeded after approval, %d extra requests; %.1f s in all\n", okn, n, extra,
	       (double)(mono_ns() - start) / 1e9);
	sb_queue_close(q);
	return okn == n ? 0 : 1;
}

/* One row: label, n, creates per second, p50 and p99 per create. */
static int bench_rules(const char *label, const char *cgroup, const char *dir, int n)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int64_t start, *lat = calloc((size_t)n, sizeof(int64_t));
	int st, i, okn = 0;
	pid_t pid;
	double secs;

	if (sh == MAP_FAILED || !lat)
		return 1;
	start = mono_ns();
	pid = spawn(cgroup, dir, n, sh, NULL);
	if (pid < 0)
		return 1;
	waitpid(pid, &st, 0);
	secs = (double)(mono_ns() - start) / 1e9;
	for (i = 0; i < n; i++) {
		lat[i] = sh->t3[i] - sh->t0[i];
		okn += sh->ok[i];
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp64);
	printf("| %s | %d | %.1f | %.2f | %.2f |\n", label, okn, okn / secs, (double)lat[n / 2] / 1e6,
	       (double)lat[(n * 99) / 100] / 1e6);
	return okn == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "approve")) {
		int n = atoi(argv[5]);

		return n > 0 && n <= MAXN ? bench_approve(argv[2], argv[3], argv[4], n) : 2;
	}
	if (argc == 6 && !strcmp(argv[1], "rules")) {
		int n = atoi(argv[5]);

		return n > 0 && n <= MAXN ? bench_rules(argv[2], argv[3], argv[4], n) : 2;
	}
	fprintf(stderr, "usage: bench_escalation approve FOLDER CGROUP DIR N | rules LABEL CGROUP DIR N\n");
	return 2;
}
