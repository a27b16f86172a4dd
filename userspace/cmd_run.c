/* sandbox-bpf run: make a cgroup, confine it, run CMD in it, clean up. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_session.h"
#include "commands.h"
#include "kernel/events.h"

/* Exit statuses of run itself, out of the way of CMD's (as timeout(1)). */
#define RUN_EXIT_FAIL 125
#define RUN_EXIT_NOEXEC 126
#define RUN_EXIT_NOTFOUND 127

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

struct clone_args_k {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		cgroup;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf run [--policy FILE] [--folder DIR] [--home DIR] [--anon-exec TIER]\n"
		"                       [--cgroup-parent DIR] [--json] [--quiet] -- CMD [ARG...]\n"
		"\n"
		"Creates a cgroup, confines it with the policy (BPF-LSM), runs CMD in it and\n"
		"passes CMD's exit status through (a signal N as 128+N). Denials and\n"
		"escalations are printed on stderr while CMD runs. On every exit path the\n"
		"cgroup's remaining processes are killed, the sandbox is removed and the\n"
		"cgroup deleted; if run itself is killed with SIGKILL, the sandbox stays\n"
		"enforced (fail closed) until 'sandbox-bpf detach --cgroup PATH'.\n"
		"\n"
		"The cgroup is created under --cgroup-parent, else $SANDBOX_BPF_CGROUP_PARENT,\n"
		"else run's own cgroup, else the cgroup v2 root; it must be writable (root,\n"
		"or a delegated cgroup such as 'systemd-run --user --scope -p Delegate=yes').\n"
		"\n"
		"  --policy FILE       policy file (default: FOLDER/.sandbox/policy.json, else\n"
		"                      the embedded default)\n"
		"  --folder DIR        project folder (default: current directory)\n"
		"  --home DIR          home for ~ in rules (default: $HOME)\n"
		"  --anon-exec TIER    exec of nameless files (memfd...): default deny\n"
		"  --cgroup-parent DIR where to create the cgroup\n"
		"  --json              events as JSON lines (on stderr)\n"
		"  --quiet             no event lines\n"
		"\n"
		"Exit status: CMD's, or 125 when run itself failed (nothing was run\n"
		"unconfined), 126 when CMD could not be executed, 127 when it was not found.\n");
}

struct run {
	struct sb_session s;
	char cgdir[PATH_MAX];
	int cgfd;
	pid_t child;
	int status;
	bool reaped;
	int terms;
	int errfd;		/* CMD's exec error pipe until exec succeeds or fails */
	int exec_errno;		/* > 0: CMD could not be executed */
};

static bool writable_cgroup(const char *dir)
{
	char procs[PATH_MAX + 16];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	return access(dir, W_OK) == 0 && access(procs, W_OK) == 0;
}

/* Where the new cgroup goes; fails with what is needed. */
static int pick_parent(const char *opt, char *out, size_t len, struct sb_err *err)
{
	char root[PATH_MAX], own[PATH_MAX], dir[PATH_MAX * 2];
	const char *env = getenv("SANDBOX_BPF_CGROUP_PARENT");
	int rc;

	rc = sb_cgroup2_root(root, sizeof(root), err);
	if (rc)
		return rc;
	if (opt || (env && env[0])) {
		const char *p = opt ? opt : env;

		if (!realpath(p, dir))
			return sb_errf(err, -errno, "cgroup parent '%s': %s", p, strerror(errno));
		if (!writable_cgroup(dir))
			return sb_errf(err, -EACCES, "cgroup parent '%s' is not writable (need write access to it and its cgroup.procs)",
				       dir);
		snprintf(out, len, "%s", dir);
		return 0;
	}
	if (sb_cgroup_of_pid(getpid(), own, sizeof(own), NULL) == 0) {
		snprintf(dir, sizeof(dir), "%s%s", root, strcmp(own, "/") ? own : "");
		if (writable_cgroup(dir)) {
			snprintf(out, len, "%s", dir);
			return 0;
		}
	} else {
		own[0] = '\0';
	}
	if (writable_cgroup(root)) {
		snprintf(out, len, "%s", root);
		return 0;
	}
	return sb_errf(err, -EACCES,
		       "no writable cgroup to create the sandbox in: neither this process's cgroup (%s%s) nor %s is writable. Run as root, from a delegated cgroup (systemd-run --user --scope -p Delegate=yes sandbox-bpf run ...), or set --cgroup-parent / SANDBOX_BPF_CGROUP_PARENT to a writable cgroup directory",
		       root, own, root);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static bool cgroup_populated(const char *dir)
{
	char path[PATH_MAX + 16], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, "populated 1") != NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Kills whatever is left in the cgroup (cgroup.kill since 5.14, else
 * SIGKILL to each member until it is empty). */
static void kill_cgroup(const char *dir)
{
	char path[PATH_MAX + 16];
	int i;

	snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
	if (write_str(path, "1") != 0) {
		for (i = 0; i < 100 && cgroup_populated(dir); i++) {
			FILE *f;
			int pid;

			snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
			f = fopen(path, "re");
			if (!f)
				break;
			while (fscanf(f, "%d", &pid) == 1)
				kill(pid, SIGKILL);
			fclose(f);
			sleep_ms(20);
		}
	}
	for (i = 0; i < 250 && cgroup_populated(dir); i++)
		sleep_ms(20);
}

static pid_t spawn(struct run *r, char **argv, const sigset_t *mask, int errfd)
{
	struct clone_args_k ca = { 0 };
	pid_t pid;

	ca.flags = CLONE_INTO_CGROUP;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (uint64_t)r->cgfd;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
		/* Before 5.7: fork and move the child in before it execs. */
		pid = fork();
		if (pid == 0) {
			char procs[PATH_MAX + 16];

			snprintf(procs, sizeof(procs), "%s/cgroup.procs", r->cgdir);
			if (write_str(procs, "0")) {
				int e = errno;

				if (write(errfd, &e, sizeof(e)) < 0)
					_exit(RUN_EXIT_FAIL);
				_exit(RUN_EXIT_FAIL);
			}
		}
	}
	if (pid == 0) {
		int e;

		sigprocmask(SIG_SETMASK, mask, NULL);
		execvp(argv[0], argv);
		e = errno;
		if (write(errfd, &e, sizeof(e)) < 0)
			_exit(RUN_EXIT_NOEXEC);
		_exit(e == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC);
	}
	return pid;
}

static int reap(struct run *r, bool block)
{
	int st;
	pid_t p;

	if (r->reaped || r->child <= 0)
		return 1;
	p = waitpid(r->child, &st, block ? 0 : WNOHANG);
	if (p == r->child) {
		r->status = st;
		r->reaped = true;
		return 1;
	}
	return 0;
}

/* CMD's exec can be held by the broker (an escalated command), so the
 * pipe is read from the event loop, never before it: data is exec's errno,
 * end of file means CMD runs (or died before exec). Closing the pipe on
 * end of file also takes it out of the loop's epoll set: the child's
 * copies closed with it, so no stale readiness remains. */
static int on_exec_pipe(void *arg)
{
	struct run *r = arg;
	ssize_t n;
	int e = 0;

	if (r->errfd < 0)
		return 0;
	n = read(r->errfd, &e, sizeof(e));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	close(r->errfd);
	r->errfd = -1;
	if (n == (ssize_t)sizeof(e)) {
		r->exec_errno = e > 0 ? e : EIO;
		return 1;
	}
	return 0;
}

static int on_signal(int sig, int code, void *arg)
{
	struct run *r = arg;

	if (sig == SIGCHLD)
		return reap(r, false);
	if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT)
		return 0;
	/* A terminal's signal reached CMD's process group already. */
	if (code != SI_KERNEL && r->child > 0 && !r->reaped)
		kill(r->child, sig);
	if (sig != SIGHUP && ++r->terms >= 2)
		kill_cgroup(r->cgdir);	/* asked twice: stop everything */
	return 0;
}

static void cleanup(struct run *r, bool session)
{
	int i;

	if (r->child > 0 && !r->reaped) {
		kill(r->child, SIGKILL);
		reap(r, true);
	}
	if (r->cgdir[0])
		kill_cgroup(r->cgdir);
	if (session)
		sb_session_end(&r->s, true);
	if (r->cgfd >= 0)
		close(r->cgfd);
	for (i = 0; r->cgdir[0] && i < 100; i++) {
		if (rmdir(r->cgdir) == 0 || errno == ENOENT)
			break;
		sleep_ms(20);
	}
}

static int exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return RUN_EXIT_FAIL;
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },    { "folder", required_argument, NULL, 'f' },
		{ "home", required_argument, NULL, 'H' },      { "anon-exec", required_argument, NULL, 'a' },
		{ "cgroup-parent", required_argument, NULL, 'P' }, { "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },	       { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const int blocked[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, 0 };
	struct sb_session_opts so = { .anon_exec = SB_K_DENY, .out = stderr };
	struct sb_session_hooks hooks;
	struct run r = { .cgfd = -1, .errfd = -1 };
	struct sb_err err = { { 0 } };
	char folder[PATH_MAX], parent[PATH_MAX];
	const char *cgparent = NULL;
	sigset_t set, old;
	int c, rc, errp[2], e = 0, i;

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			so.kp.policy_file = optarg;
			break;
		case 'f':
			so.kp.folder = optarg;
			break;
		case 'H':
			so.kp.home = optarg;
			break;
		case 'a':
			if (sb_kpolicy_parse_tier(optarg, &so.anon_exec)) {
				sb_usage_error("run", "--anon-exec: expected allow, observe, escalate or deny");
				return RUN_EXIT_FAIL;
			}
			break;
		case 'P':
			cgparent = optarg;
			break;
		case 'j':
			so.json = true;
			break;
		case 'q':
			so.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			sb_usage_error("run", "invalid option");
			return RUN_EXIT_FAIL;
		}
	}
	if (optind >= argc) {
		sb_usage_error("run", "missing CMD (sandbox-bpf run [OPTIONS] -- CMD [ARG...])");
		return RUN_EXIT_FAIL;
	}
	if (so.kp.folder) {
		if (sb_resolve_folder(so.kp.folder, folder, sizeof(folder))) {
			sb_fail("run", "folder '%s' does not exist", so.kp.folder);
			return RUN_EXIT_FAIL;
		}
		so.kp.folder = folder;
	}
	so.kp.anon_exec = so.anon_exec;

	if (pick_parent(cgparent, parent, sizeof(parent), &err)) {
		sb_fail("run", "%s", err.msg);
		return RUN_EXIT_FAIL;
	}
	snprintf(r.cgdir, sizeof(r.cgdir), "%s/sandbox-bpf-run.%d", parent, (int)getpid());
	if (mkdir(r.cgdir, 0755)) {
		sb_fail("run", "cannot create the cgroup %s: %s", r.cgdir, strerror(errno));
		return RUN_EXIT_FAIL;
	}
	r.cgfd = open(r.cgdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	so.cgroup = r.cgdir;
	/* Signals are taken through the event loop from here on. */
	sigemptyset(&set);
	for (i = 0; blocked[i]; i++)
		sigaddset(&set, blocked[i]);
	sigprocmask(SIG_BLOCK, &set, &old);

	rc = r.cgfd < 0 ? -errno : sb_session_start(&r.s, &so, &err);
	if (rc) {
		if (!err.msg[0])
			sb_errf(&err, rc, "cannot open %s: %s", r.cgdir, strerror(-rc));
		cleanup(&r, false);
		sb_fail("run", "%s", err.msg);
		return RUN_EXIT_FAIL;
	}
	if (!so.quiet)
		sb_session_print_attached(&r.s, "run");
	r.s.cmd = "run";
	if (pipe2(errp, O_CLOEXEC)) {
		cleanup(&r, true);
		sb_fail("run", "pipe: %s", strerror(errno));
		return RUN_EXIT_FAIL;
	}
	r.child = spawn(&r, &argv[optind], &old, errp[1]);
	close(errp[1]);
	if (r.child < 0) {
		e = errno;
		close(errp[0]);
		cleanup(&r, true);
		sb_fail("run", "cannot start %s: %s", argv[optind], strerror(e));
		return RUN_EXIT_FAIL;
	}
	r.errfd = errp[0];
	if (fcntl(r.errfd, F_SETFL, O_NONBLOCK)) {
		e = errno;
		close(r.errfd);
		cleanup(&r, true);
		sb_fail("run", "pipe: %s", strerror(e));
		return RUN_EXIT_FAIL;
	}
	/* The child's exit arrives as SIGCHLD through the loop (also when it
	 * exited before the loop started: the signal stays pending). */
	hooks = (struct sb_session_hooks){ .extra_fd = r.errfd, .on_extra = on_exec_pipe, .on_signal = on_signal, .arg = &r };
	rc = sb_session_stream(&r.s, &hooks, &err);
	if (rc)
		sb_fail("run", "%s", err.msg);
	/* The loop can stop on SIGCHLD before it read the pipe: a dead
	 * child's pipe is complete, a live one's is not read (non-blocking). */
	on_exec_pipe(&r);
	if (r.errfd >= 0)
		close(r.errfd);
	r.errfd = -1;
	if (r.exec_errno) {
		e = r.exec_errno;
		reap(&r, true);
		cleanup(&r, true);
		sb_fail("run", "cannot execute '%s': %s%s", argv[optind], strerror(e),
			e == EPERM ? " (denied by the sandbox policy)" : "");
		return e == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC;
	}
	reap(&r, true);
	cleanup(&r, true);
	return r.reaped ? exit_code(r.status) : RUN_EXIT_FAIL;
}
