/* Helpers for the queue tests: a throw-away project folder, sample
 * requests of every kind, raw file access, and running the CLI. */
#ifndef SB_QUEUE_TEST_UTIL_H
#define SB_QUEUE_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "queue/queue.h"

#define QT_UNUSED __attribute__((unused))

struct qt {
	char dir[PATH_MAX];	/* the project folder */
	struct sb_queue *q;
};

static int qt_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static QT_UNUSED void qt_rm_rf(const char *dir)
{
	nftw(dir, qt_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static QT_UNUSED int qt_setup(void **state)
{
	struct qt *t = calloc(1, sizeof(*t));
	struct sb_err err = { { 0 } };

	if (!t)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/sbq-test-XXXXXX");
	if (!mkdtemp(t->dir)) {
		free(t);
		return -1;
	}
	if (sb_queue_open(t->dir, SB_QUEUE_CREATE, &t->q, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		qt_rm_rf(t->dir);
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static QT_UNUSED int qt_teardown(void **state)
{
	struct qt *t = *state;

	sb_queue_close(t->q);
	qt_rm_rf(t->dir);
	free(t);
	return 0;
}

/* Path of a file inside the queue: qt_path(t, buf, "pending/%s.json", id). */
static QT_UNUSED const char *qt_path(const struct qt *t, char *buf, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static QT_UNUSED const char *qt_path(const struct qt *t, char *buf, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(buf, PATH_MAX, "%s/.sandbox/%s%s", t->dir, strncmp(rel, "tmp", 3) ? "escalations/" : "", rel);
	return buf;
}

static QT_UNUSED bool qt_exists(const struct qt *t, const char *fmt, const char *id)
{
	char rel[PATH_MAX], p[PATH_MAX];
	struct stat st;

	snprintf(rel, sizeof(rel), fmt, id);
	qt_path(t, p, "%s", rel);
	return lstat(p, &st) == 0;
}

/* Number of entries in a queue directory ("pending", "quarantine", "tmp"). */
static QT_UNUSED int qt_count(const struct qt *t, const char *sub)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	qt_path(t, p, "%s", sub);
	d = opendir(p);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static QT_UNUSED void qt_write(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static QT_UNUSED char *qt_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		if (len)
			*len = (size_t)n;
	}
	return buf;
}

/* ---- sample requests ---- */

static const char *const qt_git_argv[] = { "git", "push", "origin", "main" };
static const struct sb_queue_proc qt_chain[] = {
	{ 4242, "git", "git push origin main" },
	{ 4200, "bash", "bash" },
	{ 4100, "claude", NULL },
};

static QT_UNUSED struct sb_queue_request qt_exec_req(const char *key, int pid)
{
	struct sb_queue_request r;

	memset(&r, 0, sizeof(r));
	r.origin = SB_ORIGIN_KERNEL;
	r.kind = SB_EV_EXEC;
	r.trigger = SB_TRIG_SHELL;
	r.key = key ? key : "exec:/usr/bin/git push origin main";
	r.path = "/usr/bin/git";
	r.argv = qt_git_argv;
	r.argc = 4;
	r.cwd = "/home/u/proj";
	r.pid = pid;
	r.chain = qt_chain;
	r.nchain = 3;
	r.rule = "git push*";
	r.reason = "pushing changes remote state";
	return r;
}

static QT_UNUSED struct sb_queue_request qt_write_req(const char *path, int pid)
{
	struct sb_queue_request r;
	static char key[PATH_MAX + 32];

	memset(&r, 0, sizeof(r));
	snprintf(key, sizeof(key), "write:create:%s", path);
	r.origin = SB_ORIGIN_HOOK;
	r.kind = SB_EV_WRITE;
	r.trigger = SB_TRIG_WRITE;
	r.key = key;
	r.path = path;
	r.op = SB_WOP_CREATE;
	r.cwd = "/home/u/proj";
	r.pid = pid;
	r.rule = "/etc/**";
	r.reason = "writes outside the project";
	return r;
}

static QT_UNUSED struct sb_queue_request qt_connect_req(int pid)
{
	struct sb_queue_request r;

	memset(&r, 0, sizeof(r));
	r.origin = SB_ORIGIN_MCP;
	r.kind = SB_EV_CONNECT;
	r.trigger = SB_TRIG_NETWORK;
	r.key = "connect:tcp:example.com/93.184.216.34:443";
	r.addr = "93.184.216.34";
	r.host = "example.com";
	r.port = 443;
	r.proto = SB_PROTO_TCP;
	r.pid = pid;
	r.rule = "default";
	r.reason = "network default is escalate";
	return r;
}

/* Files a request and returns its id in out. */
static QT_UNUSED void qt_submit(struct qt *t, const struct sb_queue_request *r, char out[SB_QUEUE_ID_MAX + 1])
{
	struct sb_queue_submit_result res;
	struct sb_err err = { { 0 } };
	int rc = sb_queue_submit(t->q, r, &res, &err);

	if (rc)
		fail_msg("submit: %d %s", rc, err.msg);
	assert_false(res.existing);
	memcpy(out, res.id, SB_QUEUE_ID_MAX + 1);
}

static QT_UNUSED struct sb_queue_decision qt_decision(enum sb_queue_verdict v, const char *reviewer)
{
	struct sb_queue_decision d;

	memset(&d, 0, sizeof(d));
	d.verdict = v;
	snprintf(d.reviewer, sizeof(d.reviewer), "%s", reviewer);
	return d;
}

/* ---- running the CLI ---- */

struct qt_run {
	int status;	/* exit status, or 128 + signal */
	char out[65536];
	char err[16384];
};

static QT_UNUSED const char *qt_bin(void)
{
	const char *b = getenv("SB_BIN");

	return b && b[0] ? b : NULL;
}

/* Runs the binary with argv (NULL-terminated), feeding stdin_text. Output
 * beyond the buffers is dropped. */
static QT_UNUSED void qt_run(struct qt_run *res, const char *stdin_text, char *const argv[])
{
	int in[2], out[2], errp[2], st;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	/* O_CLOEXEC: a later child must not hold this child's stdin open. */
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(errp, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(errp[1], 2);
		close(in[1]);
		close(out[0]);
		close(errp[0]);
		execv(qt_bin(), argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	if (stdin_text && write(in[1], stdin_text, strlen(stdin_text)) < 0)
		fail_msg("write stdin: %s", strerror(errno));
	close(in[1]);
	/* Read both outputs until they end; a command that hangs is killed
	 * after 30 s so it cannot stall the test run. */
	{
		struct pollfd pf[2] = { { .fd = out[0], .events = POLLIN }, { .fd = errp[0], .events = POLLIN } };
		size_t n[2] = { 0, 0 }, cap[2] = { sizeof(res->out) - 1, sizeof(res->err) - 1 };
		char *buf[2] = { res->out, res->err }, junk[4096];
		time_t end = time(NULL) + 30;

		while ((pf[0].fd >= 0 || pf[1].fd >= 0) && time(NULL) < end) {
			int k;

			if (poll(pf, 2, 500) <= 0)
				continue;
			for (k = 0; k < 2; k++) {
				ssize_t r;

				if (pf[k].fd < 0 || !pf[k].revents)
					continue;
				r = n[k] < cap[k] ? read(pf[k].fd, buf[k] + n[k], cap[k] - n[k])
						  : read(pf[k].fd, junk, sizeof(junk));
				if (r <= 0)
					pf[k].fd = -1;
				else if (n[k] < cap[k])
					n[k] += (size_t)r;
			}
		}
		res->out[n[0]] = '\0';
		res->err[n[1]] = '\0';
		if (pf[0].fd >= 0 || pf[1].fd >= 0)
			kill(pid, SIGKILL);
	}
	close(out[0]);
	close(errp[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
