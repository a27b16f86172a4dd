#include "broker_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define CMDLINE_MAX (64 * 1024)

static int read_file(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return -errno;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			close(fd);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return 0;
}

int sb_proc_stat(const char *proc, int tgid, int tid, struct sb_pstat *st)
{
	char path[PATH_MAX], buf[1024];
	const char *open_p, *close_p, *p;
	size_t len;
	unsigned long long start = 0;
	int field, rc;

	memset(st, 0, sizeof(*st));
	if (tid > 0)
		snprintf(path, sizeof(path), "%s/%d/task/%d/stat", proc, tgid, tid);
	else
		snprintf(path, sizeof(path), "%s/%d/stat", proc, tgid);
	rc = read_file(path, buf, sizeof(buf) - 1, &len);
	if (rc)
		return rc == -ENOENT || rc == -ESRCH ? -ENOENT : rc;
	buf[len] = '\0';
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses,
	 * so the fields start after the last ')'. */
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p || close_p[1] != ' ')
		return -EINVAL;
	snprintf(st->comm, sizeof(st->comm), "%.*s", (int)(close_p - open_p - 1), open_p + 1);
	p = close_p + 2;
	st->state = *p;
	if (sscanf(p + 1, " %d", &st->ppid) != 1)
		return -EINVAL;
	/* state is field 3; starttime is field 22. */
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &start) != 1)
		return -EINVAL;
	st->start_ticks = start;
	return 0;
}

bool sb_proc_same_start(uint64_t start_ticks, uint64_t start_ns, long hz)
{
	uint64_t per_tick;

	if (hz <= 0)
		hz = 100;
	per_tick = 1000000000ULL / (uint64_t)hz;
	return start_ns / per_tick == start_ticks;
}

int sb_proc_task_check(const char *proc, int tgid, int tid, uint64_t start_ns, long hz, bool *stopped)
{
	struct sb_pstat st;
	int rc = sb_proc_stat(proc, tgid, tid, &st);

	if (stopped)
		*stopped = false;
	/* Only a task that is surely gone is -ESRCH: the callers forget its
	 * hold. Anything else (EMFILE, ENOMEM, ...) is retried by them. */
	if (rc)
		return rc == -ENOENT ? -ESRCH : rc;
	if (!sb_proc_same_start(st.start_ticks, start_ns, hz) || st.state == 'Z' || st.state == 'X')
		return -ESRCH;
	if (stopped)
		*stopped = st.state == 'T';
	return 0;
}

void sb_proc_argv_free(char **argv, size_t argc)
{
	size_t i;

	for (i = 0; argv && i < argc; i++)
		free(argv[i]);
	free(argv);
}

int sb_proc_split_cmdline(const char *buf, size_t len, char ***argv, size_t *argc)
{
	size_t n = 0, i, start = 0;
	char **v;

	*argv = NULL;
	*argc = 0;
	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if (buf[i] == '\0')
			n++;
	if (buf[len - 1] != '\0')
		n++;	/* the last string was cut (or the process rewrote its args) */
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (i = 0; i <= len; i++) {
		if (i == len || buf[i] == '\0') {
			if (i == len && start == len)
				break;
			v[n] = strndup(buf + start, i - start);
			if (!v[n]) {
				sb_proc_argv_free(v, n);
				return -ENOMEM;
			}
			n++;
			start = i + 1;
		}
	}
	*argv = v;
	*argc = n;
	return 0;
}

/* argv joined by single spaces, for display. */
static char *join_argv(char **argv, size_t argc)
{
	size_t i, len = 0;
	char *s, *w;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	w = s;
	for (i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]);

		if (i)
			*w++ = ' ';
		memcpy(w, argv[i], l);
		w += l;
	}
	*w = '\0';
	return s;
}

static int read_cmdline(const char *proc, int pid, char ***argv, size_t *argc)
{
	char path[PATH_MAX], *buf = malloc(CMDLINE_MAX);
	size_t len = 0;
	int rc;

	*argv = NULL;
	*argc = 0;
	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%d/cmdline", proc, pid);
	rc = read_file(path, buf, CMDLINE_MAX, &len);
	if (!rc)
		rc = sb_proc_split_cmdline(buf, len, argv, argc);
	free(buf);
	return rc;
}

static void read_link(const char *proc, int pid, const char *what, char *out, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/%s", proc, pid, what);
	n = readlink(path, out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	/* A deleted cwd or executable reads "/x (deleted)": not a path (and
	 * a file really named so is not worth the ambiguity). */
	if (n > 0 && (out[0] != '/' || (n >= 10 && !strcmp(out + n - 10, " (deleted)"))))
		out[0] = '\0';
}

/* Whether pid's cgroup is cg_rel or below it. */
static bool in_cgroup(const char *proc, int pid, const char *cg_rel)
{
	char path[PATH_MAX], buf[4096], *line;
	size_t len, l = strlen(cg_rel);

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc, pid);
	if (read_file(path, buf, sizeof(buf) - 1, &len))
		return false;
	buf[len] = '\0';
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char *cg;

		if (strncmp(line, "0::", 3))
			continue;
		cg = line + 3;
		cg[strcspn(cg, "\n")] = '\0';
		if (!strcmp(cg_rel, "/"))
			return true;
		return !strncmp(cg, cg_rel, l) && (cg[l] == '\0' || cg[l] == '/');
	}
	return false;
}

int sb_proc_enrich(const char *proc, int tgid, const char *cg_rel, struct sb_penrich *e)
{
	int pid = tgid, rc;

	memset(e, 0, sizeof(*e));
	read_link(proc, tgid, "cwd", e->cwd, sizeof(e->cwd));
	read_link(proc, tgid, "exe", e->exe, sizeof(e->exe));
	rc = read_cmdline(proc, tgid, &e->argv, &e->argc);
	if (rc == -ENOMEM)
		return rc;
	while (pid > 0 && e->nchain < SB_QUEUE_CHAIN_MAX) {
		struct sb_pchain_ent *c = &e->chain[e->nchain];
		struct sb_pstat st;
		char **argv = NULL;
		size_t argc = 0;

		if (sb_proc_stat(proc, pid, 0, &st))
			break;
		/* The chain ends at the sandbox root: its parent is outside
		 * (attach's caller, run, the user's shell). */
		if (cg_rel && pid != tgid && !in_cgroup(proc, pid, cg_rel))
			break;
		c->pid = pid;
		snprintf(c->comm, sizeof(c->comm), "%s", st.comm);
		if (read_cmdline(proc, pid, &argv, &argc) == 0 && argc) {
			c->cmdline = join_argv(argv, argc);
			if (!c->cmdline) {
				sb_proc_argv_free(argv, argc);
				return -ENOMEM;
			}
		}
		sb_proc_argv_free(argv, argc);
		e->nchain++;
		if (st.ppid == pid)
			break;
		pid = st.ppid;
	}
	return 0;
}

void sb_proc_enrich_free(struct sb_penrich *e)
{
	size_t i;

	sb_proc_argv_free(e->argv, e->argc);
	for (i = 0; i < e->nchain; i++)
		free(e->chain[i].cmdline);
	memset(e, 0, sizeof(*e));
}

/* One string of the stopped task's memory. */
static char *peek_string(int pid, unsigned long addr)
{
	char buf[4096];
	struct iovec local = { buf, sizeof(buf) - 1 }, remote = { (void *)addr, sizeof(buf) - 1 };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n <= 0) {
		/* Crossing into an unmapped page: retry to the page end (at
		 * most the buffer, which keeps a byte for the NUL). */
		remote.iov_len = local.iov_len = 4096 - (addr & 4095);
		if (local.iov_len > sizeof(buf) - 1)
			remote.iov_len = local.iov_len = sizeof(buf) - 1;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			return NULL;
	}
	buf[n] = '\0';
	return strndup(buf, strnlen(buf, (size_t)n));
}

int sb_proc_execve_argv(const char *proc, int tgid, int tid, char ***argv, size_t *argc)
{
	char path[PATH_MAX], buf[512];
	unsigned long nr, a0, a1, a2, a3, ptrs[64];
	struct iovec local = { ptrs, sizeof(ptrs) }, remote;
	size_t len, n, i;
	ssize_t got;
	char **v;
	int rc;

	*argv = NULL;
	*argc = 0;
	snprintf(path, sizeof(path), "%s/%d/task/%d/syscall", proc, tgid, tid);
	rc = read_file(path, buf, sizeof(buf) - 1, &len);
	if (rc)
		return rc;
	buf[len] = '\0';
	if (sscanf(buf, "%lu 0x%lx 0x%lx 0x%lx 0x%lx", &nr, &a0, &a1, &a2, &a3) != 5)
		return -EINVAL;
	/* execve(filename, argv, envp) = 59; execveat(dirfd, name, argv, ...) = 322 (x86-64). */
	if (nr == 59)
		remote.iov_base = (void *)a1;
	else if (nr == 322)
		remote.iov_base = (void *)a2;
	else
		return -EINVAL;
	remote.iov_len = sizeof(ptrs);
	got = process_vm_readv(tgid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return got < 0 ? -errno : -EIO;
	n = (size_t)got / sizeof(ptrs[0]);
	for (i = 0; i < n && ptrs[i]; i++)
		;
	n = i;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i] = peek_string(tgid, ptrs[i]);
		if (!v[i]) {
			sb_proc_argv_free(v, i);
			return -EIO;
		}
	}
	*argv = v;
	*argc = n;
	return 0;
}
