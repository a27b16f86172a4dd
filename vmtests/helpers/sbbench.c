/* sbbench: the kernel benchmark behind `make vmbench` (vmtests/bench/vmbench
 * sets up the sandbox and calls it). Prints numbers, never asserts.
 *
 *   sbbench --box CGROUP --work DIR --reload10k CMD [--rounds N] [--scale X]
 *   sbbench --noop            (the program the fork+exec workload runs)
 *
 * Needs a sandbox already attached to CGROUP with the 10-rule policy and
 * its programs pinned under /sys/fs/bpf/sandbox-bpf/links (attach
 * --no-stream). It takes the pinned links over (it holds their fds and
 * removes the pins) so it can detach and re-attach the same programs, with
 * the same maps, between measurements.
 *
 * Part 1, whole-syscall ratios: rounds of A/B/C (no program attached; our
 * programs attached and the task confined with the 10-rule policy; a
 * Landlock ruleset of the same shape and no BPF), each workload timed in
 * a fresh child; ratios to A of the same round, median and min-max.
 * Part 2, per-program cost from the kernel's accounting (BPF_ENABLE_STATS,
 * run_time_ns / run_cnt): (a) a task outside every sandbox, (b) confined,
 * 10 rules, (c) confined, 10,000 rules (CMD reloads that policy), next to
 * a count-and-allow program on the same hook (vmtests/bpf/bench_floor). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_floor.skel.h"

#define LINKS "/sys/fs/bpf/sandbox-bpf/links"
#define MAXP 96
#define PORT 8109

enum { W_FORKEXEC, W_OPENW, W_CREATE, W_CONNECT, W_N };
static const char *const wname[W_N] = { "fork+exec", "open/close (write)", "create+unlink", "connect (loopback)" };
enum { S_NONE, S_SANDBOX, S_LANDLOCK, S_N };

struct prog {
	char name[NAME_MAX + 1];
	char hook[NAME_MAX + 1];
	int pfd, lfd;
	__u64 t0, c0;
	double ns[3];
	__u64 calls[3];
};

static struct prog progs[MAXP];
static int nprogs;
static struct prog floors[16];
static int nfloors;
static char self_exe[PATH_MAX], box[PATH_MAX], work[PATH_MAX / 2];
static int abi;
static double scale = 1.0;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "sbbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- workloads ---------------------------------------------------------- */

static void *listener(void *arg)
{
	int s = *(int *)arg;

	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c >= 0)
			close(c);
	}
	return NULL;
}

static int iters(int w, bool cost)
{
	static const int n_ratio[W_N] = { 150, 3000, 1500, 400 };
	static const int n_cost[W_N] = { 40, 400, 300, 100 };
	int n = (int)((cost ? n_cost[w] : n_ratio[w]) * scale);

	return n < 1 ? 1 : n;
}

/* ns per operation of workload w, n times, in the calling process. */
static double run(int w, int n)
{
	char path[PATH_MAX];
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct linger lg = { 1, 0 };
	double t;
	int i, fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	snprintf(path, sizeof(path), "%s/target", work);
	t = now_ns();
	for (i = 0; i < n; i++) {
		switch (w) {
		case W_FORKEXEC: {
			pid_t p = fork();

			if (p == 0) {
				execl(self_exe, "sbbench", "--noop", (char *)NULL);
				_exit(127);
			}
			waitpid(p, NULL, 0);
			break;
		}
		case W_OPENW:
			fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0)
				die("open for write");
			close(fd);
			break;
		case W_CREATE:
			snprintf(path, sizeof(path), "%s/c%d", work, i);
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0)
				die("create");
			close(fd);
			if (unlink(path))
				die("unlink");
			break;
		case W_CONNECT:
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
				die("connect");
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(fd);
			break;
		}
	}
	return (now_ns() - t) / n;
}

static void join_box(void)
{
	char p[PATH_MAX + 32];
	FILE *f;

	snprintf(p, sizeof(p), "%s/cgroup.procs", box);
	f = fopen(p, "w");
	if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f))
		die("join the sandbox cgroup");
}

/* ---- Landlock: a ruleset of the same shape (10 rules) -------------------- */

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#define LL_RULE_NET_PORT 2
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)

struct ll_ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
};

struct ll_net_port_attr {
	__u64 allowed_access;
	__u64 port;
};

static int ll_add_path(int rs, const char *path, __u64 access)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = access };
	int rc;

	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0)
		return -1;
	rc = (int)syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	close(pb.parent_fd);
	return rc;
}

static void landlock_apply(void)
{
	__u64 fs = (1ULL << 13) - 1, rx, all;
	struct ll_ruleset_attr ra = { 0 };
	size_t sz = sizeof(__u64);
	int rs, nrules = 0, i;
	static const char *const dirs[] = { "/tmp", "/dev", "/run", "/var/tmp", "/home", "/root", "/opt", "/usr" };

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	ra.handled_access_fs = fs;
	if (abi >= 4) {
		ra.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		sz = sizeof(ra);
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sz, 0);
	if (rs < 0)
		die("landlock_create_ruleset");
	rx = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	all = fs;
	if (ll_add_path(rs, "/", rx) || ll_add_path(rs, work, all))
		die("landlock_add_rule");
	nrules = 2;
	if (abi >= 4) {
		struct ll_net_port_attr np = { .allowed_access = LL_NET_CONNECT_TCP, .port = PORT };

		if (syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &np, 0))
			die("landlock net rule");
		np.port = 443;
		syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &np, 0);
		nrules += 2;
	}
	for (i = 0; nrules < 10 && i < (int)(sizeof(dirs) / sizeof(dirs[0])); i++)
		if (ll_add_path(rs, dirs[i], all) == 0)
			nrules++;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_landlock_restrict_self, rs, 0))
		die("landlock_restrict_self");
	close(rs);
}

/* ---- programs ------------------------------------------------------------ */

static const char *hook_of(const char *prog)
{
	static const char *const map[][2] = {
		{ "sb_bprm_check", "bprm_check_security" },
		{ "sb_bprm_committed", "bprm_committed_creds" },
		{ "sb_inode_setattr_idmap", "inode_setattr" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(prog, map[i][0]))
			return map[i][1];
	return strncmp(prog, "sb_", 3) ? prog : prog + 3;
}

static void take_links(void)
{
	DIR *d = opendir(LINKS);
	struct dirent *de;

	if (!d)
		die("open " LINKS " (attach --no-stream first)");
	while ((de = readdir(d)) && nprogs < MAXP) {
		char path[PATH_MAX];
		struct bpf_link_info li;
		__u32 len = sizeof(li);
		struct prog *p = &progs[nprogs];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", LINKS, de->d_name);
		p->lfd = bpf_obj_get(path);
		if (p->lfd < 0)
			die(path);
		memset(&li, 0, sizeof(li));
		if (bpf_obj_get_info_by_fd(p->lfd, &li, &len))
			die("link info");
		p->pfd = bpf_prog_get_fd_by_id(li.prog_id);
		if (p->pfd < 0)
			die("prog fd");
		snprintf(p->name, sizeof(p->name), "%s", de->d_name);
		snprintf(p->hook, sizeof(p->hook), "%s", hook_of(de->d_name));
		unlink(path);	/* ours now: closing lfd detaches */
		nprogs++;
	}
	closedir(d);
}

static void attach_ours(bool on)
{
	int i;

	for (i = 0; i < nprogs; i++) {
		if (on && progs[i].lfd < 0) {
			progs[i].lfd = bpf_raw_tracepoint_open(NULL, progs[i].pfd);
			if (progs[i].lfd < 0)
				die("re-attach");
		} else if (!on && progs[i].lfd >= 0) {
			close(progs[i].lfd);
			progs[i].lfd = -1;
		}
	}
}

static void stats_snap(struct prog *v, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct bpf_prog_info pi;
		__u32 len = sizeof(pi);

		memset(&pi, 0, sizeof(pi));
		if (bpf_obj_get_info_by_fd(v[i].pfd, &pi, &len))
			die("prog info");
		v[i].t0 = pi.run_time_ns;
		v[i].c0 = pi.run_cnt;
	}
}

static void stats_delta(struct prog *v, int n, int col)
{
	int i;

	for (i = 0; i < n; i++) {
		struct bpf_prog_info pi;
		__u32 len = sizeof(pi);

		memset(&pi, 0, sizeof(pi));
		if (bpf_obj_get_info_by_fd(v[i].pfd, &pi, &len))
			die("prog info");
		v[i].calls[col] = pi.run_cnt - v[i].c0;
		v[i].ns[col] = v[i].calls[col] ? (double)(pi.run_time_ns - v[i].t0) / v[i].calls[col] : -1;
	}
}

/* ---- one measurement in a fresh child ---------------------------------- */

static void child_measure(int state, bool cost, double out[W_N])
{
	int pfd[2], w;
	pid_t p;

	if (pipe(pfd))
		die("pipe");
	p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		double r[W_N];

		close(pfd[0]);
		if (state == S_SANDBOX)
			join_box();
		else if (state == S_LANDLOCK)
			landlock_apply();
		for (w = 0; w < W_N; w++) {
			if (state == S_LANDLOCK && w == W_CONNECT && abi < 4) {
				r[w] = -1;	/* no TCP rules before ABI 4 */
				continue;
			}
			run(w, iters(w, true) > 4 ? 2 : 1);	/* warm up */
			r[w] = run(w, iters(w, cost));
		}
		if (write(pfd[1], r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], out, sizeof(double) * W_N) != (ssize_t)(sizeof(double) * W_N))
		die("child measurement");
	close(pfd[0]);
	waitpid(p, NULL, 0);
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of COST_REPS measurements per program: under TCG a single
 * one moves with whatever else the host runs. */
#define COST_REPS 5
static void cost_phase(int col, bool confined)
{
	static double pv[MAXP][COST_REPS], fv[16][COST_REPS];
	double r[W_N];
	int k, i;

	for (k = 0; k < COST_REPS; k++) {
		stats_snap(progs, nprogs);
		stats_snap(floors, nfloors);
		child_measure(confined ? S_SANDBOX : S_NONE, true, r);
		stats_delta(progs, nprogs, col);
		stats_delta(floors, nfloors, col);
		for (i = 0; i < nprogs; i++)
			pv[i][k] = progs[i].ns[col];
		for (i = 0; i < nfloors; i++)
			fv[i][k] = floors[i].ns[col];
	}
	for (i = 0; i < nprogs; i++) {
		qsort(pv[i], COST_REPS, sizeof(double), cmpd);
		progs[i].ns[col] = pv[i][COST_REPS / 2];
	}
	for (i = 0; i < nfloors; i++) {
		qsort(fv[i], COST_REPS, sizeof(double), cmpd);
		floors[i].ns[col] = fv[i][COST_REPS / 2];
	}
}

static const struct prog *floor_for(const char *hook)
{
	int i;

	for (i = 0; i < nfloors; i++)
		if (!strcmp(floors[i].hook, hook))
			return &floors[i];
	return NULL;
}

static void cell(char *b, size_t n, double ns, __u64 calls)
{
	if (ns < 0)
		snprintf(b, n, "-");
	else
		snprintf(b, n, "%.0f (%llu)", ns, (unsigned long long)calls);
}

int main(int argc, char **argv)
{
	const char *reload10k = NULL;
	struct bench_floor_bpf *fl;
	struct utsname un;
	int rounds = 7, i, w, s, r, stats_fd, ls, one = 1;
	double res[S_N][W_N][32];
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	pthread_t th;

	if (argc == 2 && !strcmp(argv[1], "--noop"))
		return 0;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--box"))
			snprintf(box, sizeof(box), "%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--work"))
			snprintf(work, sizeof(work), "%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--reload10k"))
			reload10k = argv[i + 1];
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--scale"))
			scale = atof(argv[i + 1]);
	}
	if (!box[0] || !work[0] || !reload10k || rounds < 1 || rounds > 32) {
		fprintf(stderr, "usage: sbbench --box CGROUP --work DIR --reload10k CMD [--rounds N<=32] [--scale X]\n");
		return 2;
	}
	if (!realpath("/proc/self/exe", self_exe))
		die("/proc/self/exe");
	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	uname(&un);
	{
		char t[PATH_MAX + 16];
		int fd;

		snprintf(t, sizeof(t), "%s/target", work);
		fd = open(t, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die("target file");
		close(fd);
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 512))
		die("listen");
	pthread_create(&th, NULL, listener, &ls);

	take_links();
	printf("# sandbox-bpf vmbench: kernel %s, %d programs attached, Landlock ABI %d, %d rounds\n", un.release,
	       nprogs, abi, rounds);

	/* ---- part 1: whole-syscall ratios, interleaved ---- */
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < S_N; i++) {
			/* rotate the order each round: A B C, B C A, C A B */
			s = (i + r) % S_N;
			attach_ours(s == S_SANDBOX);
			{
				double out[W_N];

				child_measure(s, false, out);
				for (w = 0; w < W_N; w++)
					res[s][w][r] = out[w];
			}
		}
		fprintf(stderr, "sbbench: round %d/%d done\n", r + 1, rounds);
	}
	attach_ours(true);
	printf("\n## Whole syscalls (TCG: runs differ by 10-25 %%; ratios are within one round)\n\n");
	printf("| workload | no program: median µs/op | sandbox-bpf, 10 rules: ratio median (min-max) | Landlock, 10 rules: ratio median (min-max) |\n");
	printf("|---|---:|---:|---:|\n");
	for (w = 0; w < W_N; w++) {
		double base[32], ratio[S_N][32];

		for (r = 0; r < rounds; r++) {
			base[r] = res[S_NONE][w][r];
			for (s = 1; s < S_N; s++)
				ratio[s][r] = res[s][w][r] < 0 ? -1 : res[s][w][r] / res[S_NONE][w][r];
		}
		qsort(base, (size_t)rounds, sizeof(double), cmpd);
		printf("| %s | %.1f |", wname[w], base[rounds / 2] / 1000);
		for (s = 1; s < S_N; s++) {
			qsort(ratio[s], (size_t)rounds, sizeof(double), cmpd);
			if (ratio[s][0] < 0)
				printf(" n/a (Landlock ABI %d: no TCP rules before ABI 4) |", abi);
			else
				printf(" %.3f (%.3f-%.3f) |", ratio[s][rounds / 2], ratio[s][0], ratio[s][rounds - 1]);
		}
		printf("\n");
	}

	/* ---- part 2: per-program cost from the kernel's accounting ---- */
	fl = bench_floor_bpf__open_and_load();
	if (!fl || bench_floor_bpf__attach(fl))
		die("load the floor programs");
	{
		struct bpf_program *bp;

		bpf_object__for_each_program(bp, fl->obj)
		{
			struct prog *f = &floors[nfloors++];

			f->pfd = bpf_program__fd(bp);
			snprintf(f->name, sizeof(f->name), "%s", bpf_program__name(bp));
			snprintf(f->hook, sizeof(f->hook), "%s", bpf_program__name(bp) + strlen("floor_"));
		}
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		die("BPF_ENABLE_STATS");
	cost_phase(0, false);
	cost_phase(1, true);
	if (system(reload10k) != 0)
		fprintf(stderr, "sbbench: the 10,000-rule reload failed: column (c) is the 10-rule policy\n");
	cost_phase(2, true);
	close(stats_fd);

	printf("\n## Cost per call of each program, ns (run_time_ns / run_cnt, median of %d runs; calls per run in parentheses)\n\n", COST_REPS);
	printf("(a) a task outside every sandbox, (b) confined, 10-rule policy, (c) confined, 10,000-rule policy;\n");
	printf("floor: a count-and-allow program on the same hook in the same run.\n\n");
	printf("| program | (a) outside | (b) 10 rules | (c) 10,000 rules | floor (a) / (b) / (c) |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (i = 0; i < nprogs; i++) {
		const struct prog *p = &progs[i], *f = floor_for(p->hook);
		char c[3][48], fb[96] = "";

		if (!p->calls[0] && !p->calls[1] && !p->calls[2])
			continue;
		for (s = 0; s < 3; s++)
			cell(c[s], sizeof(c[s]), p->ns[s], p->calls[s]);
		if (f)
			snprintf(fb, sizeof(fb), "%.0f / %.0f / %.0f", f->ns[0], f->ns[1], f->ns[2]);
		printf("| %s | %s | %s | %s | %s |\n", p->name, c[0], c[1], c[2], fb);
	}
	bench_floor_bpf__destroy(fl);
	return 0;
}
