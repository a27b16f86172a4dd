#include "events.h"

#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "classify.h"

static const char *const hook_names[SB_HOOK__COUNT] = {
	[SB_HOOK_FILE_OPEN] = "file_open",
	[SB_HOOK_FILE_TRUNCATE] = "file_truncate",
	[SB_HOOK_PATH_TRUNCATE] = "path_truncate",
	[SB_HOOK_PATH_UNLINK] = "path_unlink",
	[SB_HOOK_PATH_RENAME] = "path_rename",
	[SB_HOOK_PATH_LINK] = "path_link",
	[SB_HOOK_PATH_SYMLINK] = "path_symlink",
	[SB_HOOK_PATH_MKDIR] = "path_mkdir",
	[SB_HOOK_PATH_RMDIR] = "path_rmdir",
	[SB_HOOK_PATH_MKNOD] = "path_mknod",
	[SB_HOOK_PATH_CHMOD] = "path_chmod",
	[SB_HOOK_PATH_CHOWN] = "path_chown",
	[SB_HOOK_INODE_SETXATTR] = "inode_setxattr",
	[SB_HOOK_INODE_REMOVEXATTR] = "inode_removexattr",
	[SB_HOOK_INODE_SETATTR] = "inode_setattr",
	[SB_HOOK_INODE_SET_ACL] = "inode_set_acl",
	[SB_HOOK_INODE_REMOVE_ACL] = "inode_remove_acl",
	[SB_HOOK_INODE_CREATE] = "inode_create",
	[SB_HOOK_INODE_UNLINK] = "inode_unlink",
	[SB_HOOK_INODE_RENAME] = "inode_rename",
	[SB_HOOK_INODE_LINK] = "inode_link",
	[SB_HOOK_INODE_SYMLINK] = "inode_symlink",
	[SB_HOOK_INODE_MKDIR] = "inode_mkdir",
	[SB_HOOK_INODE_RMDIR] = "inode_rmdir",
	[SB_HOOK_INODE_MKNOD] = "inode_mknod",
	[SB_HOOK_BPRM_CHECK] = "bprm_check_security",
	[SB_HOOK_BPRM_COMMITTED] = "bprm_committed_creds",
	[SB_HOOK_MMAP_FILE] = "mmap_file",
	[SB_HOOK_SOCKET_CONNECT] = "socket_connect",
	[SB_HOOK_SOCKET_SENDMSG] = "socket_sendmsg",
	[SB_HOOK_UNIX_CONNECT] = "unix_stream_connect",
	[SB_HOOK_UNIX_SEND] = "unix_may_send",
	[SB_HOOK_BPF] = "bpf",
	[SB_HOOK_PTRACE] = "ptrace_access_check",
	[SB_HOOK_PTRACE_TRACEME] = "ptrace_traceme",
	[SB_HOOK_TASK_KILL] = "task_kill",
	[SB_HOOK_SB_MOUNT] = "sb_mount",
	[SB_HOOK_SB_UMOUNT] = "sb_umount",
	[SB_HOOK_SB_PIVOTROOT] = "sb_pivotroot",
	[SB_HOOK_MOVE_MOUNT] = "move_mount",
	[SB_HOOK_KERNEL_READ_FILE] = "kernel_read_file",
	[SB_HOOK_KERNEL_LOAD_DATA] = "kernel_load_data",
	[SB_HOOK_MODULE_REQUEST] = "kernel_module_request",
	[SB_HOOK_USERNS_CREATE] = "userns_create",
	[SB_HOOK_TASK_ALLOC] = "task_alloc",
	[SB_HOOK_PATH_CHROOT] = "path_chroot",
	[SB_HOOK_SB_KERN_MOUNT] = "sb_kern_mount",
	[SB_HOOK_FILE_IOCTL] = "file_ioctl",
	[SB_HOOK_FILE_FCNTL] = "file_fcntl",
	[SB_HOOK_CAPABLE] = "capable",
};

const char *sb_hook_name(unsigned hook)
{
	return hook < SB_HOOK__COUNT && hook_names[hook] ? hook_names[hook] : "?";
}

const char *sb_kop_name(unsigned op)
{
	if (op < SB_WOP__COUNT)
		return sb_write_op_name((enum sb_write_op)op);
	if (op == SB_KOP_READ)
		return "read";
	if (op == SB_KOP_LINK_SOURCE)
		return "link-source";
	return "?";
}

const char *sb_action_name(unsigned action)
{
	switch (action) {
	case SB_ACT_DENIED:
		return "denied";
	case SB_ACT_ESCALATED:
		return "escalated";
	case SB_ACT_OBSERVED:
		return "observed";
	case SB_ACT_AUDIT:
		return "audit";
	case SB_ACT_KILLED:
		return "killed";
	case SB_ACT_ALLOWED:
		return "allowed";
	}
	return "?";
}

const char *sb_rule_label(const struct sb_policy *p, __u32 rule, char *buf, size_t len)
{
	switch (rule) {
	case SB_RULE_DEFAULT:
		return "default";
	case SB_RULE_WALK_LIMIT:
		return "path-too-deep";
	case SB_RULE_ANON_EXEC:
		return "anonymous-exec";
	case SB_RULE_SELF:
		return "self-protection";
	case SB_RULE_USERNS:
		return "user_namespaces";
	case SB_RULE_SYS_FS:
		return "kernel-filesystem";
	case SB_RULE_NO_SCRATCH:
		return "fail-closed";
	case SB_RULE_RELOAD_RACE:
		return "reload-race";
	case SB_RULE_EXEC_LOADER:
		return "exec-via-loader";
	case SB_RULE_HELD:
		return "held-task";
	case SB_RULE_RAW_DEVICE:
		return "raw-block-device";
	case SB_RULE_CAPABILITY:
		return "capability";
	case SB_RULE_ARGV_UNREADABLE:
		return "argv-unreadable";
	}
	if (p && rule < p->nrules) {
		const struct sb_rule *r = &p->rules[rule];

		if (r->is_protected)
			snprintf(buf, len, "protected %s", r->text);
		else
			snprintf(buf, len, "%s", r->text);
		return buf;
	}
	snprintf(buf, len, "rule #%u", rule);
	return buf;
}

static const char *where_of(const struct sb_policy *p, __u32 rule)
{
	if (p && rule < p->nrules)
		return p->rules[rule].where;
	return NULL;
}

static void net_addr(const struct sb_kevent *ev, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ev->net.family == AF_INET || ev->net.family == AF_INET6)
		inet_ntop(ev->net.family, ev->net.addr, a, sizeof(a));
	if (ev->net.family == AF_INET6)
		snprintf(out, len, "[%s]:%u", a, ev->net.port);
	else if (ev->net.family == AF_INET)
		snprintf(out, len, "%s:%u", a, ev->net.port);
	else
		snprintf(out, len, "unix (abstract or unnamed)");
}

const char *sb_kev_proto_name(unsigned proto)
{
	return proto == 1 ? "tcp" : proto == 2 ? "udp" : proto == 3 ? "raw" : "other";
}

void sb_kev_field(char *out, size_t outlen, const char *in, size_t inlen)
{
	size_t n = strnlen(in, inlen);

	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, in, n);
	out[n] = '\0';
}

/* What the event was about, as text. */
static void subject(const struct sb_kevent *ev, char *out, size_t len)
{
	char path[SB_EV_PATH + 1], argv[SB_EV_ARGV + 1];

	switch (ev->kind) {
	case SB_EVK_PATH:
		sb_kev_field(path, sizeof(path), ev->path.path, sizeof(ev->path.path));
		snprintf(out, len, "%s%s%s", path, ev->flags & SB_EVF_PATH_TRUNC ? "..." : "",
			 ev->flags & SB_EVF_PATH_PARTIAL ? " (path within its filesystem)" : "");
		break;
	case SB_EVK_EXEC:
		sb_kev_field(path, sizeof(path), ev->exec.path, sizeof(ev->exec.path));
		sb_kev_field(argv, sizeof(argv), ev->exec.argv, sizeof(ev->exec.argv));
		if (argv[0])
			snprintf(out, len, "%s \"%s%s\"", path, argv, ev->flags & SB_EVF_ARGV_TRUNC ? "..." : "");
		else
			snprintf(out, len, "%s", path);
		break;
	case SB_EVK_NET: {
		char a[80];

		net_addr(ev, a, sizeof(a));
		snprintf(out, len, "%s %s", a, ev->net.family == AF_UNIX ? "" : sb_kev_proto_name(ev->net.proto));
		break;
	}
	case SB_EVK_TASK:
		if (ev->hook == SB_HOOK_TASK_KILL)
			snprintf(out, len, "signal %u to pid %u", ev->task.arg, ev->task.target_pid);
		else if (ev->hook == SB_HOOK_PTRACE || ev->hook == SB_HOOK_PTRACE_TRACEME)
			snprintf(out, len, "ptrace of pid %u", ev->task.target_pid);
		else if (ev->hook == SB_HOOK_BPF)
			snprintf(out, len, "bpf() command %u", ev->task.arg);
		else
			snprintf(out, len, "%s", sb_hook_name(ev->hook));
		break;
	default:
		snprintf(out, len, "%s", sb_hook_name(ev->hook));
	}
}

void sb_event_subject(const struct sb_kevent *ev, char *out, size_t len)
{
	subject(ev, out, len);
}

static const char *trigger_label(const struct sb_kevent *ev)
{
	if (ev->kind == SB_EVK_TASK)
		return "self-protection";
	return sb_trigger_name((enum sb_trigger)ev->trigger);
}

void sb_event_format(const struct sb_kevent *ev, const struct sb_policy *p, char *out, size_t len)
{
	char subj[SB_EV_PATH + SB_EV_ARGV + 64], rbuf[SB_RULE_NAME_MAX], comm[17], op[48] = "";
	const char *where = where_of(p, ev->rule);
	const char *action = sb_action_name(ev->action);
	char act[16];
	size_t i;

	for (i = 0; action[i] && i < sizeof(act) - 1; i++)
		act[i] = (char)(action[i] >= 'a' && action[i] <= 'z' ? action[i] - 32 : action[i]);
	act[i] = '\0';
	subject(ev, subj, sizeof(subj));
	sb_kev_field(comm, sizeof(comm), ev->comm, sizeof(ev->comm));
	if (ev->kind == SB_EVK_PATH)
		snprintf(op, sizeof(op), " %s", sb_kop_name(ev->op));
	snprintf(out, len, "%s %s%s %s: %s '%s'%s%s%s (%s) %s[%u] uid %u, sandbox %u, seq %llu", act,
		 trigger_label(ev), op, subj, ev->rule == SB_RULE_DEFAULT ? "default" : "rule",
		 sb_rule_label(p, ev->rule, rbuf, sizeof(rbuf)), where ? " at " : "", where ? where : "",
		 ev->action == SB_ACT_AUDIT		  ? " [audit mode: not enforced]" :
		 (ev->flags & SB_EVF_HELD_EXEC) ? " [held after exec for the broker]" :
		 (ev->flags & SB_EVF_HELD)	  ? " [held for the broker]" :
						    "",
		 sb_tier_name((enum sb_tier)ev->tier),
		 comm, ev->pid, ev->uid, ev->sandbox, (unsigned long long)ev->seq);
}

cJSON *sb_event_to_json(const struct sb_kevent *ev, const struct sb_policy *p)
{
	cJSON *o = cJSON_CreateObject();
	char buf[SB_EV_PATH + SB_EV_ARGV + 64], rbuf[SB_RULE_NAME_MAX];
	const char *where = where_of(p, ev->rule);

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "event", sb_action_name(ev->action));
	cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
	cJSON_AddNumberToObject(o, "ts_ns", (double)ev->ts_ns);
	cJSON_AddNumberToObject(o, "sandbox", ev->sandbox);
	cJSON_AddStringToObject(o, "trigger", trigger_label(ev));
	cJSON_AddStringToObject(o, "tier", sb_tier_name((enum sb_tier)ev->tier));
	cJSON_AddStringToObject(o, "hook", sb_hook_name(ev->hook));
	cJSON_AddStringToObject(o, "rule", sb_rule_label(p, ev->rule, rbuf, sizeof(rbuf)));
	if (ev->rule < SB_RULE_FIRST_SPECIAL)
		cJSON_AddNumberToObject(o, "rule_index", ev->rule);
	if (where)
		cJSON_AddStringToObject(o, "rule_where", where);
	cJSON_AddBoolToObject(o, "enforced", ev->action != SB_ACT_AUDIT && ev->action != SB_ACT_OBSERVED);
	switch (ev->kind) {
	case SB_EVK_PATH:
		sb_kev_field(buf, sizeof(buf), ev->path.path, sizeof(ev->path.path));
		cJSON_AddStringToObject(o, "op", sb_kop_name(ev->op));
		cJSON_AddStringToObject(o, "path", buf);
		if (ev->flags & SB_EVF_PATH_TRUNC)
			cJSON_AddBoolToObject(o, "path_truncated", 1);
		if (ev->flags & SB_EVF_PATH_PARTIAL)
			cJSON_AddBoolToObject(o, "path_partial", 1);
		break;
	case SB_EVK_EXEC:
		sb_kev_field(buf, sizeof(buf), ev->exec.path, sizeof(ev->exec.path));
		cJSON_AddStringToObject(o, "path", buf);
		sb_kev_field(buf, sizeof(buf), ev->exec.argv, sizeof(ev->exec.argv));
		cJSON_AddStringToObject(o, "command", buf);
		if (ev->flags & SB_EVF_ARGV_TRUNC)
			cJSON_AddBoolToObject(o, "command_truncated", 1);
		break;
	case SB_EVK_NET:
		if (ev->net.family == AF_UNIX) {
			cJSON_AddStringToObject(o, "family", "unix");
		} else {
			char a[INET6_ADDRSTRLEN] = "";

			inet_ntop(ev->net.family, ev->net.addr, a, sizeof(a));
			cJSON_AddStringToObject(o, "family", ev->net.family == AF_INET ? "ipv4" : "ipv6");
			cJSON_AddStringToObject(o, "addr", a);
			cJSON_AddNumberToObject(o, "port", ev->net.port);
			cJSON_AddStringToObject(o, "proto", sb_kev_proto_name(ev->net.proto));
		}
		break;
	case SB_EVK_TASK:
		cJSON_AddNumberToObject(o, "target_pid", ev->task.target_pid);
		cJSON_AddNumberToObject(o, "target_tgid", ev->task.target_tgid);
		cJSON_AddNumberToObject(o, "arg", ev->task.arg);
		break;
	}
	if (ev->flags & SB_EVF_HELD) {
		/* Held for the broker: the syscall waits (or, after exec, the
		 * new image is stopped) until the verdict. */
		cJSON_AddBoolToObject(o, "held", 1);
		cJSON_AddNumberToObject(o, "request_seq", (double)ev->seq);
		if (ev->flags & SB_EVF_HELD_EXEC)
			cJSON_AddBoolToObject(o, "after_exec", 1);
	} else if (ev->ret < 0) {
		cJSON_AddStringToObject(o, "errno", ev->ret == -1 ? "EPERM" : strerrorname_np(-ev->ret));
	} else if (ev->action == SB_ACT_KILLED) {
		cJSON_AddStringToObject(o, "signal", "SIGKILL");
	}
	cJSON_AddNumberToObject(o, "pid", ev->pid);
	cJSON_AddNumberToObject(o, "tgid", ev->tgid);
	cJSON_AddNumberToObject(o, "ppid", ev->ppid);
	cJSON_AddNumberToObject(o, "uid", ev->uid);
	sb_kev_field(buf, sizeof(buf), ev->comm, sizeof(ev->comm));
	cJSON_AddStringToObject(o, "comm", buf);
	cJSON_AddNumberToObject(o, "cgroup_id", (double)ev->cgroup_id);
	return o;
}

/* ---- loop ---------------------------------------------------------------- */

struct loop_ctx {
	const struct sb_evloop_ops *ops;
	int rc;
};

static int on_sample(void *arg, void *data, size_t size)
{
	struct loop_ctx *lc = arg;
	struct sb_kevent ev;

	if (size < sizeof(ev))
		return 0;	/* not ours: ignore rather than misread */
	memcpy(&ev, data, sizeof(ev));
	if (lc->ops->on_event) {
		int rc = lc->ops->on_event(&ev, lc->ops->arg);

		if (rc < 0) {
			lc->rc = rc;
			return rc;
		}
	}
	return 0;
}

int sb_evloop_run(int ring_fd, const int *signals, const struct sb_evloop_ops *ops, struct sb_err *err)
{
	struct loop_ctx lc = { .ops = ops };
	struct ring_buffer *rb = NULL;
	struct itimerspec its = { { 1, 0 }, { 1, 0 } };
	sigset_t set;
	int sfd = -1, tfd = -1, ep = -1, rc = 0, i;
	bool stop = false;

	sigemptyset(&set);
	for (i = 0; signals && signals[i]; i++)
		sigaddset(&set, signals[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return sb_errf(err, -errno, "sigprocmask: %s", strerror(errno));
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || tfd < 0 || ep < 0 || timerfd_settime(tfd, 0, &its, NULL)) {
		rc = sb_errf(err, -errno, "cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	if (ring_fd >= 0) {
		rb = ring_buffer__new(ring_fd, on_sample, &lc, NULL);
		if (!rb) {
			rc = sb_errf(err, -errno, "cannot map the event ring buffer: %s", strerror(errno));
			goto out;
		}
	}
	{
		struct epoll_event e = { .events = EPOLLIN };

		e.data.u32 = 0;
		if (rb) {
			int rfd = ring_buffer__epoll_fd(rb);

			if (epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &e))
				goto ep_fail;
		}
		e.data.u32 = 1;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &e))
			goto ep_fail;
		e.data.u32 = 2;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e))
			goto ep_fail;
		if (ops->extra_fd >= 0 && ops->on_extra) {
			e.data.u32 = 3;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, ops->extra_fd, &e))
				goto ep_fail;
		}
		if (ops->extra2_fd >= 0 && ops->on_extra2) {
			e.data.u32 = 4;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, ops->extra2_fd, &e))
				goto ep_fail;
		}
	}
	while (!stop) {
		struct epoll_event evs[5];
		int n = epoll_wait(ep, evs, 5, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = sb_errf(err, -errno, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n && !stop; i++) {
			switch (evs[i].data.u32) {
			case 0:
				ring_buffer__consume(rb);
				if (lc.rc) {
					rc = lc.rc;
					stop = true;
				}
				break;
			case 1: {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					if (ops->on_signal && ops->on_signal((int)si.ssi_signo, si.ssi_code, ops->arg) == 1)
						stop = true;
				break;
			}
			case 2: {
				uint64_t ticks;

				if (read(tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					break;
				if (ops->on_tick && ops->on_tick(ops->arg) == 1)
					stop = true;
				break;
			}
			case 3:
				if (ops->on_extra(ops->arg) == 1)
					stop = true;
				break;
			case 4:
				if (ops->on_extra2(ops->arg) == 1)
					stop = true;
				break;
			}
		}
		if (!stop && ops->on_wake && ops->on_wake(ops->arg) == 1)
			stop = true;
	}
	if (rb)
		ring_buffer__consume(rb);
	goto out;
ep_fail:
	rc = sb_errf(err, -errno, "epoll_ctl: %s", strerror(errno));
out:
	ring_buffer__free(rb);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	if (ep >= 0)
		close(ep);
	return rc;
}
