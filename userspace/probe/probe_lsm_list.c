/* The active LSM list (/sys/kernel/security/lsm) and the lockdown mode.
 * When securityfs is not mounted, it is mounted in a private mount namespace
 * of a short-lived child, so no other process ever sees the mount and it
 * disappears with the child even if doctor is killed. */
#include "probe.h"
#include "probe_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECURITYFS "/sys/kernel/security"

static bool word_in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0' || p[n] == '\n'))
			return true;
		p += n;
	}
	return false;
}

void sb_probe_lsm_suggest(const char *list, char *out, size_t out_len)
{
	if (!list || !list[0])
		snprintf(out, out_len, "lsm=landlock,lockdown,yama,integrity,apparmor,bpf");
	else if (word_in_list(list, "bpf"))
		snprintf(out, out_len, "lsm=%s", list);
	else
		snprintf(out, out_len, "lsm=%s,bpf", list);
}

void sb_probe_lsm_list_classify(const char *list_text, int read_err, const char *lockdown_text,
				bool private_mount, struct sb_probe_lsm_list *out)
{
	char lsm_arg[300], remedy[SB_PROBE_TEXT_MAX], extra[160] = "";
	const char *how = private_mount ? "securityfs not mounted, read in a private mount namespace" : "";
	const char *lb, *rb;
	size_t n;

	memset(out, 0, sizeof(*out));
	out->private_mount = private_mount;
	if (lockdown_text && (lb = strchr(lockdown_text, '[')) && (rb = strchr(lb, ']')) &&
	    (size_t)(rb - lb - 1) < sizeof(out->lockdown)) {
		memcpy(out->lockdown, lb + 1, (size_t)(rb - lb - 1));
		out->lockdown[rb - lb - 1] = '\0';
	}
	if (!list_text) {
		if (read_err == EPERM || read_err == EACCES)
			sb_probe_set(&out->res, SB_PROBE_MISSING, read_err,
				     "run as root, or mount it: mount -t securityfs securityfs " SECURITYFS,
				     "cannot read the active LSM list: securityfs is not mounted at " SECURITYFS
				     " and mounting it needs CAP_SYS_ADMIN");
		else if (read_err == ENOENT || read_err == ENODEV)
			sb_probe_set(&out->res, SB_PROBE_MISSING, read_err,
				     "use a kernel built with CONFIG_SECURITYFS=y",
				     "no securityfs in this kernel (%s)", sb_probe_errno_name(read_err));
		else
			sb_probe_set(&out->res, SB_PROBE_ERROR, read_err, NULL,
				     "cannot read " SECURITYFS "/lsm: %s", strerror(read_err));
		return;
	}
	snprintf(out->list, sizeof(out->list), "%s", list_text);
	n = strlen(out->list);
	while (n && (out->list[n - 1] == '\n' || out->list[n - 1] == ' '))
		out->list[--n] = '\0';
	out->known = true;
	out->has_bpf = word_in_list(out->list, "bpf");
	out->has_landlock = word_in_list(out->list, "landlock");
	if (out->lockdown[0] || how[0])
		snprintf(extra, sizeof(extra), " (%s%s%s%s)", out->lockdown[0] ? "lockdown: " : "", out->lockdown,
			 out->lockdown[0] && how[0] ? "; " : "", how);
	if (out->has_bpf) {
		sb_probe_set(&out->res, SB_PROBE_OK, 0, NULL, "%s%s", out->list, extra);
		return;
	}
	sb_probe_lsm_suggest(out->list, lsm_arg, sizeof(lsm_arg));
	snprintf(remedy, sizeof(remedy),
		 "add bpf to the active LSMs: boot with %s (Debian: append it to GRUB_CMDLINE_LINUX in "
		 "/etc/default/grub, run update-grub, reboot)", lsm_arg);
	sb_probe_set(&out->res, SB_PROBE_MISSING, 0, remedy, "%s: bpf is not an active LSM%s", out->list, extra);
}

/* What the securityfs reader passes back (one write on a pipe). */
struct lsm_msg {
	int err;		/* errno of the first failing step, 0 = ok */
	char list[256];
	char lockdown[128];	/* "" when unreadable */
};

static void read_both(struct lsm_msg *m)
{
	long n = sb_probe_read_file(SECURITYFS "/lsm", m->list, sizeof(m->list));

	if (n < 0 && n != -E2BIG)
		m->err = (int)-n;
	if (sb_probe_read_file(SECURITYFS "/lockdown", m->lockdown, sizeof(m->lockdown)) < 0)
		m->lockdown[0] = '\0';
}

/* Child: private mount namespace, mount securityfs, read, unmount, report. */
static void __attribute__((noreturn)) private_reader(int wfd)
{
	struct lsm_msg m;
	ssize_t w;

	memset(&m, 0, sizeof(m));
	if (unshare(CLONE_NEWNS) != 0)
		m.err = errno;
	/* Without this the mount would propagate to the parent's namespace. */
	else if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
		m.err = errno;
	else if (mount("securityfs", SECURITYFS, "securityfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		m.err = errno;
	else {
		read_both(&m);
		umount2(SECURITYFS, MNT_DETACH);
	}
	w = write(wfd, &m, sizeof(m));
	_exit(w == (ssize_t)sizeof(m) ? 0 : 1);
}

static int read_private(struct lsm_msg *m)
{
	int pfd[2], status = 0;
	ssize_t n = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		close(pfd[0]);
		private_reader(pfd[1]);
	}
	close(pfd[1]);
	do
		n = read(pfd[0], m, sizeof(*m));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(*m))
		return -EIO;
	m->list[sizeof(m->list) - 1] = '\0';
	m->lockdown[sizeof(m->lockdown) - 1] = '\0';
	return 0;
}

int sb_probe_lsm_list(struct sb_probe_lsm_list *out)
{
	struct lsm_msg m;
	char *mountinfo = NULL;
	bool mounted, priv = false;
	int e;

	if (!out)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	e = sb_probe_slurp("/proc/self/mountinfo", &mountinfo);
	mounted = e == 0 && sb_mountinfo_has(mountinfo, SECURITYFS, "securityfs");
	free(mountinfo);
	if (mounted) {
		read_both(&m);
	} else {
		priv = true;
		e = read_private(&m);
		if (e)
			m.err = -e;
	}
	sb_probe_lsm_list_classify(m.err ? NULL : m.list, m.err, m.lockdown[0] ? m.lockdown : NULL, priv, out);
	return 0;
}
