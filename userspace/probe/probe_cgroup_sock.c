/* cgroup socket programs (network enforcement without BPF-LSM): load a
 * cgroup/connect4 program that allows everything (bpf/doctor_sock.bpf.c),
 * attach it to a freshly created, empty child cgroup, detach, remove the
 * child. Never attached to a cgroup with processes in it. */
#include "probe.h"
#include "probe_internal.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor_sock.skel.h"

static bool cgroup_empty(const char *dir)
{
	char path[PATH_MAX + 16], buf[64];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	return sb_probe_read_file(path, buf, sizeof(buf)) == 0;
}

/* With signals blocked: mkdir, check empty, attach, detach, rmdir. */
static void attach_to_child(struct doctor_sock_bpf *skel, const char *child, struct sb_probe_cgroup_sock *out)
{
	struct bpf_link *link;
	int fd, e;

	if (mkdir(child, 0755) != 0) {
		e = errno;
		sb_probe_set(&out->res, e == EACCES || e == EPERM ? SB_PROBE_MISSING : SB_PROBE_ERROR, e,
			     "run as root", "cannot create the probe cgroup %s: %s", child, strerror(e));
		return;
	}
	fd = open(child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		sb_probe_set(&out->res, SB_PROBE_ERROR, e, NULL, "cannot open the probe cgroup %s: %s", child,
			     strerror(e));
	} else if (!cgroup_empty(child)) {
		sb_probe_set(&out->res, SB_PROBE_ERROR, EBUSY, NULL,
			     "the new probe cgroup %s is not empty: not attaching", child);
	} else if (!(link = bpf_program__attach_cgroup(skel->progs.doctor_connect4, fd))) {
		e = errno ? errno : EINVAL;
		sb_probe_set(&out->res, e == EPERM ? SB_PROBE_MISSING : SB_PROBE_ERROR, e,
			     "run as root (attaching needs CAP_NET_ADMIN or CAP_SYS_ADMIN); without it network "
			     "rules cannot be enforced by the fallback",
			     "cgroup/connect4 loaded but attaching it to an empty child cgroup failed: %s",
			     strerror(e));
	} else {
		e = bpf_link__destroy(link);
		if (e)
			sb_probe_set(&out->res, SB_PROBE_ERROR, -e, NULL, "detaching cgroup/connect4 failed: %s",
				     strerror(-e));
		else
			sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "attached and detached");
	}
	if (fd >= 0)
		close(fd);
	if (rmdir(child) != 0) {
		char remedy[SB_PROBE_TEXT_MAX];

		e = errno;
		snprintf(remedy, sizeof(remedy), "remove it: rmdir %s", child);
		sb_probe_set(&out->res, SB_PROBE_ERROR, e, remedy, "cannot remove the probe cgroup %s: %s", child,
			     strerror(e));
	}
}

int sb_probe_cgroup_sock(const struct sb_probe_cgroup *cg, struct sb_probe_cgroup_sock *out)
{
	static unsigned seq;
	struct doctor_sock_bpf *skel;
	char child[PATH_MAX];
	sigset_t old;
	int err;

	if (!cg || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!cg->delegate[0]) {
		sb_probe_set(&out->res, SB_PROBE_MISSING, cg->delegate_err ? cg->delegate_err : ENOENT,
			     "see cgroup2", "not tried: no cgroup v2 directory where a child can be created");
		return 0;
	}
	if (snprintf(child, sizeof(child), "%s/" SB_PROBE_CGROUP_PREFIX "%d.sock%u", cg->delegate, (int)getpid(),
		     __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) >= (int)sizeof(child)) {
		sb_probe_set(&out->res, SB_PROBE_ERROR, ENAMETOOLONG, NULL, "cgroup path too long: %s", cg->delegate);
		return 0;
	}
	sb_probe_libbpf_quiet();
	skel = doctor_sock_bpf__open_and_load();
	if (!skel) {
		err = errno ? errno : EINVAL;
		sb_probe_set(&out->res, err == EPERM || err == EACCES ? SB_PROBE_MISSING : SB_PROBE_ERROR, err,
			     err == EPERM ? "run as root (loading BPF programs needs CAP_BPF or CAP_SYS_ADMIN)"
					  : "report this with the output of sandbox-bpf doctor --json",
			     "loading a cgroup/connect4 program failed: %s%s%s", strerror(err),
			     sb_probe_libbpf_last()[0] ? "; libbpf: " : "", sb_probe_libbpf_last());
		sb_probe_libbpf_loud();
		return 0;
	}
	sb_probe_signals_block(&old);
	attach_to_child(skel, child, out);
	sb_probe_signals_restore(&old);
	doctor_sock_bpf__destroy(skel);
	sb_probe_libbpf_loud();
	if (out->res.status == SB_PROBE_OK)
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL,
			     "cgroup/connect4 attached to a new empty child cgroup of %s and detached; child removed",
			     cg->delegate);
	return 0;
}
