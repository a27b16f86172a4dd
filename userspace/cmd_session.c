#include "cmd_session.h"

#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/broker_kops.h"
#include "cli.h"
#include "kernel/events.h"

static const char *hooks_label(uint32_t features)
{
	return features & SB_META_PATH_HOOKS ? "path_* hooks" : "inode_* fallback hooks (no CONFIG_SECURITY_PATH)";
}

static void print_line(struct sb_session *s, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Lines from the broker: held requests, decisions, errors. --quiet keeps
 * only errors (a failing audit chain is never quiet). */
static void broker_log(void *arg, const char *kind, const char *text, const cJSON *detail)
{
	struct sb_session *s = arg;

	if (s->o.quiet && strcmp(kind, "error") && strcmp(kind, "audit-error"))
		return;
	if (s->o.json) {
		cJSON *o = detail ? cJSON_Duplicate(detail, 1) : cJSON_CreateObject();

		if (!o)
			return;
		cJSON_AddStringToObject(o, "event", kind);
		cJSON_AddNumberToObject(o, "sandbox", s->id);
		cJSON_AddStringToObject(o, "message", text);
		sb_print_json_line(s->o.out, o);
	} else {
		fprintf(s->o.out, "sandbox-bpf %s: %s\n", s->cmd ? s->cmd : "attach", text);
	}
	fflush(s->o.out);
}

/* The policy source the sandbox was attached with (reloads re-read it). */
static struct sb_kpolicy_opts session_kp_opts(const struct sb_session *s)
{
	struct sb_kpolicy_opts o = s->o.kp;

	if (strcmp(s->kp.source, "<default>"))
		o.policy_file = s->kp.source;
	o.folder = s->kp.folder;
	o.extra = NULL;
	o.nextra = 0;
	return o;
}

/* Re-reads the policy and adds the remembered decisions the kernel can
 * enforce (broker/broker_krules.h proves which), then switches the sandbox
 * to it atomically. The proof is made on the policy as read: if the file
 * changes between the two reads, nothing is switched this time. */
static int session_apply_rules(struct sb_session *s, struct sb_err *err)
{
	struct sb_kpolicy_opts o = session_kp_opts(s);
	struct sb_kpolicy base, kp;
	struct sb_kpolicy_extra *x = NULL;
	size_t n = 0;
	int rc;

	rc = sb_kpolicy_load(&o, &base, err);
	if (rc)
		return rc;
	if (s->broker) {
		rc = sb_broker_kernel_rules(s->broker, base.policy, base.compiled, &x, &n);
		if (rc) {
			sb_kpolicy_free(&base);
			return sb_errf(err, rc, "cannot compute the kernel rules for remembered decisions");
		}
	}
	if (n == 0) {
		kp = base;
	} else {
		o.extra = x;
		o.nextra = n;
		rc = sb_kpolicy_load(&o, &kp, err);
		if (!rc && strcmp(kp.policy->hash, base.policy->hash)) {
			sb_kpolicy_free(&kp);
			rc = sb_errf(err, -EAGAIN, "the policy file changed while it was read; try again");
		}
		sb_kpolicy_free(&base);
		sb_broker_kernel_rules_free(x, n);
		if (rc)
			return rc;
	}
	rc = sb_kernel_reload(&s->k, s->id, kp.entries, kp.policy->hash, kp.source, err);
	if (rc) {
		sb_kpolicy_free(&kp);
		return rc;
	}
	sb_kpolicy_free(&s->kp);
	s->kp = kp;
	s->nextra = n;
	snprintf(s->hash, sizeof(s->hash), "%s", kp.policy->hash);
	if (s->broker)
		sb_broker_set_policy(s->broker, s->kp.policy, s->kp.source);
	return 0;
}

static int start_broker(struct sb_session *s, struct sb_err *err)
{
	struct sb_broker_opts bo = {
		.folder = s->kp.folder,
		.sandbox = s->scope.path,
		.cgroup_rel = s->scope.rel,
		.sandbox_id = s->id,
		.policy = s->kp.policy,
		.policy_source = s->kp.source,
		.kops = &s->kops,
		.log = broker_log,
		.log_arg = s,
	};
	int rc;

	sb_broker_kops_init(&s->kops, &s->k);
	rc = sb_broker_open(&s->broker, &bo, err);
	if (rc)
		return rc;
	if (sb_broker_take_rules_changed(s->broker)) {
		struct sb_err e2 = { { 0 } };

		/* Remembered decisions from earlier sessions. */
		if (session_apply_rules(s, &e2))
			broker_log(s, "error", e2.msg, NULL);
	}
	return sb_broker_start(s->broker, s->scope.path, err);
}

/* What pid runs, for naming it: "sandbox-bpf" when it is this program
 * (the same executable, or that name), else its comm ("" if unknown).
 * The owner pid outlives a broker that was killed and can be reused. */
static void owner_comm(pid_t pid, char *out, size_t len)
{
	char path[64], exe[PATH_MAX], self[PATH_MAX];
	ssize_t n, m;
	FILE *f;

	snprintf(out, len, "%s", "");
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe));
	m = readlink("/proc/self/exe", self, sizeof(self));
	if (n > 0 && n == m && !memcmp(exe, self, (size_t)n)) {
		snprintf(out, len, "sandbox-bpf");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* An existing sandbox on this cgroup whose broker is gone (killed, or
 * attached with --no-stream): take it over with the policy given. */
static int adopt_sandbox(struct sb_session *s, const struct sb_info *info, uint32_t id, struct sb_err *err)
{
	pid_t owner = (pid_t)info->owner_pid;
	int rc;

	if (owner > 0 && owner != getpid() && (kill(owner, 0) == 0 || errno == EPERM)) {
		char comm[32];

		owner_comm(owner, comm, sizeof(comm));
		if (!strcmp(comm, "sandbox-bpf"))
			return sb_errf(err, -EBUSY,
				       "cgroup %s is sandbox %u and its broker (pid %d, sandbox-bpf) is running; stop it first (SIGTERM) or let it be",
				       s->scope.path, id, (int)owner);
		return sb_errf(err, -EBUSY,
			       "cgroup %s is sandbox %u and its broker was pid %d, which is alive but runs '%s', not sandbox-bpf: "
			       "the pid may have been reused by another program after the broker died. Check with 'ps -o pid,args -p %d' "
			       "before signalling it; if it is no broker, 'sandbox-bpf detach --cgroup %s' removes the sandbox",
			       s->scope.path, id, (int)owner, comm[0] ? comm : "?", (int)owner, s->scope.path);
	}
	rc = sb_kernel_reload(&s->k, id, s->kp.entries, s->kp.policy->hash, s->kp.source, err);
	if (rc)
		return rc;
	s->id = id;
	s->adopted = true;
	return sb_kernel_set_owner(&s->k, id, (uint32_t)getpid());
}

int sb_session_start(struct sb_session *s, const struct sb_session_opts *o, struct sb_err *err)
{
	struct sb_info info, existing;
	uint32_t eid;
	int rc;

	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->ring_fd = -1;
	s->k.lock_fd = -1;
	for (int i = 0; i < SB_KM__COUNT; i++)
		s->k.fd[i] = -1;
	rc = sb_cgroup_resolve(o->cgroup, &s->scope, err);
	if (rc)
		return rc;
	/* Everything that can fail on the policy fails before the kernel is
	 * touched. */
	rc = sb_kpolicy_load(&o->kp, &s->kp, err);
	if (rc)
		return rc;
	snprintf(s->hash, sizeof(s->hash), "%s", s->kp.policy->hash);
	rc = sb_kernel_open(&s->k, SB_KOPEN_LOAD, err);
	if (rc)
		goto fail;
	memset(&info, 0, sizeof(info));
	info.owner_pid = (uint32_t)getpid();
	info.flags = o->anon_exec;
	info.attached_ns = (uint64_t)time(NULL);
	snprintf(info.policy_source, sizeof(info.policy_source), "%s", s->kp.source);
	snprintf(info.folder, sizeof(info.folder), "%s", s->kp.folder);
	snprintf(info.hash, sizeof(info.hash), "%s", s->hash);
	if (o->adopt && sb_kernel_find(&s->k, s->scope.id, &eid, &existing) == 0) {
		rc = adopt_sandbox(s, &existing, eid, err);
		if (rc)
			goto fail;
	} else {
		rc = sb_kernel_add(&s->k, &s->scope, s->kp.entries, &info, &s->id, err);
		if (rc) {
			if (rc == -EEXIST && !o->adopt && sb_kernel_find(&s->k, s->scope.id, &eid, NULL) == 0) {
				char msg[sizeof(err->msg)];

				snprintf(msg, sizeof(msg), "%s; if its broker died, 'attach --adopt' takes it over", err->msg);
				snprintf(err->msg, sizeof(err->msg), "%s", msg);
			}
			sb_kernel_unpin_if_empty(&s->k, NULL);
			goto fail;
		}
	}
	/* This process is the broker: tasks of the sandbox may not signal or
	 * ptrace it. */
	sb_kernel_protect(&s->k, (uint32_t)getpid(), s->id, true);
	s->ring_fd = sb_kernel_ring_fd(&s->k, s->id, err);
	if (s->ring_fd < 0) {
		rc = s->ring_fd;
		s->ring_fd = -1;
		if (!s->adopted)
			sb_kernel_remove(&s->k, s->id, true, NULL, NULL);
		goto fail;
	}
	/* The broker: without it escalations stay held (fail closed), so a
	 * broker that cannot start is an attach that fails. */
	rc = start_broker(s, err);
	if (rc) {
		sb_err_prefix(err, "%s", "the broker cannot start: ");
		sb_broker_close(s->broker, false);
		s->broker = NULL;
		close(s->ring_fd);
		s->ring_fd = -1;
		if (!s->adopted)
			sb_kernel_remove(&s->k, s->id, true, NULL, NULL);
		else
			sb_kernel_set_owner(&s->k, s->id, 0);
		goto fail;
	}
	return 0;
fail:
	sb_kernel_close(&s->k);
	sb_kpolicy_free(&s->kp);
	return rc;
}

void sb_session_print_attached(struct sb_session *s, const char *cmd)
{
	const struct sb_kentries *e = s->kp.entries;
	size_t i;

	s->cmd = cmd;
	if (s->o.json) {
		cJSON *o = cJSON_CreateObject(), *notes;

		cJSON_AddStringToObject(o, "event", "attached");
		cJSON_AddNumberToObject(o, "sandbox", s->id);
		cJSON_AddStringToObject(o, "cgroup", s->scope.path);
		cJSON_AddNumberToObject(o, "cgroup_id", (double)s->scope.id);
		cJSON_AddStringToObject(o, "policy", s->kp.source);
		cJSON_AddStringToObject(o, "hash", s->hash);
		cJSON_AddStringToObject(o, "mode", s->kp.policy->mode == SB_MODE_AUDIT ? "audit" : "enforce");
		cJSON_AddBoolToObject(o, "loaded", s->k.loaded);
		cJSON_AddBoolToObject(o, "adopted", s->adopted);
		if (s->broker) {
			struct sb_broker_stats st;

			sb_broker_stats(s->broker, &st);
			cJSON_AddNumberToObject(o, "held", (double)st.holds);
			cJSON_AddNumberToObject(o, "remembered", (double)st.remembered);
			cJSON_AddNumberToObject(o, "remembered_in_kernel_rules", (double)s->nextra);
		}
		cJSON_AddStringToObject(o, "hooks", s->k.features & SB_META_PATH_HOOKS ? "path" : "inode");
		notes = cJSON_AddArrayToObject(o, "notes");
		for (i = 0; i < e->nnotes; i++)
			cJSON_AddItemToArray(notes, cJSON_CreateString(e->notes[i]));
		sb_print_json_line(s->o.out, o);
		fflush(s->o.out);
		return;
	}
	fprintf(s->o.out, "sandbox-bpf %s: sandbox %u enforcing on %s (cgroup id %llu)\n", cmd, s->id, s->scope.path,
		(unsigned long long)s->scope.id);
	fprintf(s->o.out, "  policy %s, hash %.16s, mode %s\n", s->kp.source, s->hash,
		s->kp.policy->mode == SB_MODE_AUDIT ? "audit (nothing is denied, everything is reported)" : "enforce");
	if (s->k.loaded)
		fprintf(s->o.out, "  loaded %d BPF-LSM programs (%s), pinned under %s\n", s->k.nprogs,
			hooks_label(s->k.features), SB_PIN_DIR);
	else
		fprintf(s->o.out, "  adopted the programs pinned under %s (%s)\n", SB_PIN_DIR, hooks_label(s->k.features));
	fprintf(s->o.out,
		"  entries: %zu inode, %zu named-child, %zu chain, %zu name, %zu glob, %zu shell, %zu executable, %zu+%zu network\n",
		sb_kv_count(e->inodes), sb_kv_count(e->children), sb_kv_count(e->chains), sb_kv_count(e->names),
		e->nglobs, sb_kv_count(e->shell), sb_kv_count(e->xinodes), sb_kv_count(e->net4), sb_kv_count(e->net6));
	if (s->adopted)
		fprintf(s->o.out, "  took over sandbox %u, whose broker was gone\n", s->id);
	if (s->broker) {
		struct sb_broker_stats st;

		sb_broker_stats(s->broker, &st);
		fprintf(s->o.out,
			"  broker: requests in %s/.sandbox/escalations, audit chain %s/.sandbox/audit.db; %zu remembered decisions (%zu kernel rules); %zu tasks held\n",
			s->kp.folder, s->kp.folder, st.remembered, s->nextra, st.holds);
	}
	for (i = 0; i < e->nnotes; i++)
		fprintf(s->o.out, "  note: %s\n", e->notes[i]);
	fflush(s->o.out);
}

static void print_line(struct sb_session *s, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void print_line(struct sb_session *s, const char *event, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->o.json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "event", event);
		cJSON_AddNumberToObject(o, "sandbox", s->id);
		cJSON_AddStringToObject(o, "message", msg);
		cJSON_AddStringToObject(o, "hash", s->hash);
		sb_print_json_line(s->o.out, o);
	} else {
		fprintf(s->o.out, "sandbox-bpf %s: %s\n", s->cmd ? s->cmd : "attach", msg);
	}
	fflush(s->o.out);
}

int sb_session_reload(struct sb_session *s, struct sb_err *err)
{
	int rc;

	/* The same source as at attach (the file given, else the folder's),
	 * and the remembered decisions as they are on disk now. */
	if (s->broker) {
		rc = sb_broker_reload_memory(s->broker, err);
		if (rc)
			return rc;
	}
	return session_apply_rules(s, err);
}

struct stream_ctx {
	struct sb_session *s;
	const struct sb_session_hooks *h;
};

static int on_event(const struct sb_kevent *ev, void *arg)
{
	struct sb_session *s = ((struct stream_ctx *)arg)->s;

	if (s->broker)
		sb_broker_event(s->broker, ev);
	/* Audit mode's allows go to the audit chain, not the terminal. */
	if (s->o.quiet || ev->action == SB_ACT_ALLOWED)
		return 0;
	if (s->o.json) {
		sb_print_json_line(s->o.out, sb_event_to_json(ev, s->kp.policy));
	} else {
		char line[2048];

		sb_event_format(ev, s->kp.policy, line, sizeof(line));
		fprintf(s->o.out, "%s\n", line);
	}
	fflush(s->o.out);
	return 0;
}

static int drain_sample(void *arg, void *data, size_t size)
{
	struct sb_kevent ev;

	if (size < sizeof(ev))
		return 0;
	memcpy(&ev, data, sizeof(ev));
	return on_event(&ev, arg);
}

static int on_signal(int sig, int code, void *arg)
{
	struct stream_ctx *c = arg;
	struct sb_session *s = c->s;
	struct sb_err err = { { 0 } };

	if (c->h && c->h->on_signal) {
		int r = c->h->on_signal(sig, code, c->h->arg);

		if (r >= 0)
			return r;
	}
	if (sig == SIGCHLD)
		return 0;
	if (sig == SIGHUP) {
		if (sb_session_reload(s, &err))
			print_line(s, "reload-failed", "policy reload failed, the previous policy stays in force: %s",
				   err.msg);
		else
			print_line(s, "reloaded", "policy reloaded from %s (hash %.16s)", s->kp.source, s->hash);
		return 0;
	}
	return 1;
}

static int on_tick(void *arg)
{
	struct sb_session *s = ((struct stream_ctx *)arg)->s;
	struct sb_info info;

	if (sb_kernel_info(&s->k, s->id, &info) || info.cgroup_id != s->scope.id) {
		print_line(s, "detached", "sandbox %u was removed by another process (detach); stopping", s->id);
		s->id = 0;
		return 1;
	}
	if (strcmp(info.hash, s->hash) || strcmp(info.policy_source, s->kp.source)) {
		/* Reloaded by 'policy reload': take the new policy (rule names)
		 * and put the remembered decisions back into the kernel. The
		 * source is switched for session_apply_rules to read it and
		 * switched back if that fails: the broker keeps the policy it
		 * has, and the next tick tries again. */
		struct sb_err err = { { 0 } };
		char old[sizeof(s->kp.source)];

		snprintf(old, sizeof(old), "%s", s->kp.source);
		snprintf(s->kp.source, sizeof(s->kp.source), "%s", info.policy_source);
		if (session_apply_rules(s, &err)) {
			snprintf(s->kp.source, sizeof(s->kp.source), "%s", old);
			if (strcmp(s->reload_failed, info.hash))
				print_line(s, "error",
					   "policy reloaded by another process (hash %.16s), but this broker cannot take it (retried every second; it keeps the previous policy's rules meanwhile): %s",
					   info.hash, err.msg);
			snprintf(s->reload_failed, sizeof(s->reload_failed), "%s", info.hash);
		} else {
			s->reload_failed[0] = '\0';
			print_line(s, "reloaded", "policy reloaded by another process (hash %.16s)", info.hash);
		}
	}
	if (s->broker)
		sb_broker_tick(s->broker);
	return 0;
}

/* After each batch of events: records written, verdicts applied, kernel
 * rules for newly remembered decisions installed. */
static int on_wake(void *arg)
{
	struct sb_session *s = ((struct stream_ctx *)arg)->s;

	if (!s->broker)
		return 0;
	sb_broker_flush(s->broker);
	if (sb_broker_take_rules_changed(s->broker)) {
		struct sb_err err = { { 0 } };

		if (session_apply_rules(s, &err))
			print_line(s, "error", "remembered decisions stay with the broker (not in the kernel): %s", err.msg);
	}
	return 0;
}

static int on_queue(void *arg)
{
	struct sb_session *s = ((struct stream_ctx *)arg)->s;

	if (s->broker)
		sb_broker_queue_changed(s->broker);
	return 0;
}

static int on_extra(void *arg)
{
	struct stream_ctx *c = arg;

	return c->h->on_extra(c->h->arg);
}

int sb_session_stream(struct sb_session *s, const struct sb_session_hooks *h, struct sb_err *err)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, 0 };
	struct stream_ctx c = { .s = s, .h = h };
	struct sb_evloop_ops ops = {
		.on_event = on_event,
		.on_signal = on_signal,
		.on_tick = on_tick,
		.extra_fd = h ? h->extra_fd : -1,
		.on_extra = h && h->on_extra ? on_extra : NULL,
		.extra2_fd = s->broker ? sb_broker_queue_fd(s->broker) : -1,
		.on_extra2 = on_queue,
		.on_wake = on_wake,
		.arg = &c,
	};

	if (!s->cmd)
		s->cmd = "attach";
	return sb_evloop_run(s->ring_fd, sigs, &ops, err);
}

void sb_session_drain(struct sb_session *s)
{
	struct stream_ctx c = { .s = s };
	struct ring_buffer *rb;

	if (s->ring_fd < 0)
		return;
	rb = ring_buffer__new(s->ring_fd, drain_sample, &c, NULL);
	if (!rb)
		return;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
}

void sb_session_end(struct sb_session *s, bool remove)
{
	struct sb_err err = { { 0 } };
	size_t held = 0;

	if (s->ring_fd >= 0)
		close(s->ring_fd);
	s->ring_fd = -1;
	if (s->broker) {
		/* Held tasks stay held for the next broker (attach --adopt);
		 * removing the sandbox (run) lets them go with the cgroup. */
		struct sb_broker_stats st;

		sb_broker_flush(s->broker);
		sb_broker_stats(s->broker, &st);
		held = st.holds;
		sb_broker_close(s->broker, remove);
		s->broker = NULL;
	}
	if (s->id) {
		sb_kernel_protect(&s->k, (uint32_t)getpid(), s->id, false);
		if (remove) {
			if (sb_kernel_remove(&s->k, s->id, true, NULL, &err))
				print_line(s, "error", "removing sandbox %u failed: %s", s->id, err.msg);
		} else {
			sb_kernel_set_owner(&s->k, s->id, 0);
			print_line(s, "stopped",
				   "stopped streaming events; sandbox %u stays enforced on %s ('sandbox-bpf detach --cgroup %s' removes it)",
				   s->id, s->scope.path, s->scope.path);
			if (held)
				print_line(s, "held",
					   "%zu task%s stay held, their requests in the queue, until a broker takes the sandbox over: 'sandbox-bpf attach --cgroup %s --adopt'",
					   held, held == 1 ? "" : "s", s->scope.path);
		}
	}
	sb_kernel_close(&s->k);
	sb_kpolicy_free(&s->kp);
}
