/* Audit chain throughput: records/s appended (hashing + durable commit,
 * default seal policy) by one writer and by four concurrent writer
 * processes, batched appends, and verification speed of the store and of
 * an export. Not a test: prints a Markdown table for docs/performance.md.
 *
 *   bench_audit [RECORDS]     (default 2000 per single-writer run)
 *
 * The store lives in $BENCH_DIR (default /var/tmp) so that it is on a
 * real disk, not tmpfs: the commit cost is the fsync. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The floor under a durable commit on this disk. */
static double fdatasync_ms(const char *dir)
{
	char path[600];
	double t;
	int fd, i;

	snprintf(path, sizeof(path), "%s/fsync-probe", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	t = now();
	for (i = 0; i < 100; i++)
		if (write(fd, "x", 1) != 1 || fdatasync(fd))
			break;
	t = (now() - t) * 1000 / 100;
	close(fd);
	unlink(path);
	return t;
}

static cJSON *record(int writer, int i)
{
	char cmd[96];
	cJSON *r = cJSON_CreateObject();

	snprintf(cmd, sizeof(cmd), "git push origin feature/branch-%d --force-with-lease", i);
	cJSON_AddStringToObject(r, "kind", "decision");
	cJSON_AddStringToObject(r, "origin", "kernel");
	cJSON_AddStringToObject(r, "sandbox", "bench");
	cJSON_AddStringToObject(r, "trigger", "shell");
	cJSON_AddStringToObject(r, "decision", "escalate");
	cJSON_AddStringToObject(r, "rule", "git push*");
	cJSON_AddStringToObject(r, "reason", "pushing needs a human");
	cJSON_AddStringToObject(r, "command", cmd);
	cJSON_AddNumberToObject(r, "pid", 10000 + i);
	cJSON_AddNumberToObject(r, "writer", writer);
	return r;
}

static void die(const char *what, const struct sb_err *err)
{
	fprintf(stderr, "bench_audit: %s: %s\n", what, err->msg);
	exit(1);
}

static void append_n(const char *dir, int writer, int n)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	int i;

	if (sb_audit_open(dir, SB_AUDIT_CREATE, &a, &err))
		die("open", &err);
	for (i = 0; i < n; i++) {
		cJSON *r = record(writer, i);

		if (sb_audit_append(a, r, NULL, &err))
			die("append", &err);
		cJSON_Delete(r);
	}
	if (sb_audit_close(a, &err))
		die("close", &err);
}

static void append_batched(const char *dir, int n, int batch)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	cJSON **recs = calloc((size_t)batch, sizeof(*recs));
	int i, j;

	if (sb_audit_open(dir, SB_AUDIT_CREATE, &a, &err))
		die("open", &err);
	for (i = 0; i < n; i += batch) {
		for (j = 0; j < batch; j++)
			recs[j] = record(0, i + j);
		if (sb_audit_append_batch(a, (const cJSON *const *)recs, (size_t)batch, NULL, &err))
			die("append", &err);
		for (j = 0; j < batch; j++)
			cJSON_Delete(recs[j]);
	}
	free(recs);
	if (sb_audit_close(a, &err))
		die("close", &err);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void fresh(char *dir, size_t cap, const char *base)
{
	snprintf(dir, cap, "%s/sb-bench-audit.XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *base = getenv("BENCH_DIR") ? getenv("BENCH_DIR") : "/var/tmp";
	int n = argc > 1 ? atoi(argv[1]) : 2000, w = 4, i, status;
	struct sb_audit_verify_opts vo = { 0 };
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	char dir[512], keys[600], out[600];
	double t, single, multi, batched, vstore, vfile;
	int big;

	if (n <= 0)
		n = 2000;
	big = 50 * n;
	fresh(dir, sizeof(dir), base);
	snprintf(keys, sizeof(keys), "%s/keys", dir);
	setenv("SANDBOX_BPF_KEY_DIR", keys, 1);

	t = now();
	append_n(dir, 0, n);
	single = n / (now() - t);

	t = now();
	for (i = 0; i < w; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			append_n(dir, i + 1, n / w);
			_exit(0);
		}
	}
	for (i = 0; i < w; i++) {
		wait(&status);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "bench_audit: a writer failed\n");
			return 1;
		}
	}
	multi = (n / w) * w / (now() - t);

	t = now();
	append_batched(dir, big, 100);
	batched = big / (now() - t);

	if (sb_audit_open(dir, SB_AUDIT_READONLY, &a, &err))
		die("open", &err);
	t = now();
	if (sb_audit_verify_store(a, &vo, &r, &err) || r.problem)
		die("verify", &err);
	vstore = r.records / (now() - t);
	sb_audit_close(a, &err);
	if (sb_audit_open(dir, 0, &a, &err))
		die("open", &err);
	snprintf(out, sizeof(out), "%s/export.jsonl.gz", dir);
	if (sb_audit_export(a, NULL, out, NULL, &err))
		die("export", &err);
	sb_audit_close(a, &err);
	t = now();
	if (sb_audit_verify_file(out, &vo, &r, &err) || r.problem)
		die("verify --file", &err);
	vfile = r.records / (now() - t);

	printf("disk under %s: %.2f ms per write+fdatasync\n\n", base, fdatasync_ms(dir));
	printf("| measurement | records | records/s |\n|---|---:|---:|\n");
	printf("| append, 1 writer, one durable commit per record | %d | %.0f |\n", n, single);
	printf("| append, %d writer processes at once (total) | %d | %.0f |\n", w, (n / w) * w, multi);
	printf("| append_batch, 100 records per commit | %d | %.0f |\n", big, batched);
	printf("| verify store (hashes + seals) | %llu | %.0f |\n", (unsigned long long)r.records, vstore);
	printf("| verify --file export.jsonl.gz | %llu | %.0f |\n", (unsigned long long)r.records, vfile);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
