#include "approver.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int sb_approver_open(const char *cmd, const char *folder_opt, unsigned flags, struct sb_queue **q)
{
	char folder[PATH_MAX];
	struct sb_err err = { { 0 } };
	int rc = sb_resolve_folder(folder_opt, folder, sizeof(folder));

	*q = NULL;
	if (rc)
		return sb_fail(cmd, "folder '%s': %s", folder_opt ? folder_opt : ".", strerror(-rc));
	if (sb_queue_open(folder, flags, q, &err))
		return sb_fail(cmd, "%s", err.msg);
	return 0;
}

static bool printable_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > SB_QUEUE_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	}
	return true;
}

void sb_approver_reviewer(char out[SB_QUEUE_NAME_MAX + 1])
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (sudo && printable_name(sudo)) {
		snprintf(out, SB_QUEUE_NAME_MAX + 1, "%s", sudo);
		return;
	}
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res && printable_name(res->pw_name)) {
		snprintf(out, SB_QUEUE_NAME_MAX + 1, "%s", res->pw_name);
		return;
	}
	snprintf(out, SB_QUEUE_NAME_MAX + 1, "uid:%u", (unsigned)getuid());
}

static void line(FILE *f, const char *label, const char *raw)
{
	char esc[1024];

	sb_queue_escape(raw, esc, sizeof(esc));
	fprintf(f, "  %-9s %s\n", label, esc);
}

void sb_approver_show(FILE *f, const struct sb_queue_item *it, int64_t now)
{
	const struct sb_queue_request *r = &it->req;
	char what[4096], age[32], left[32];
	size_t i;

	fprintf(f, "\nRequest %s  (%s, from %s)\n", r->id, sb_trigger_name(r->trigger), sb_queue_origin_name(r->origin));
	sb_queue_request_what(r, what, sizeof(what));
	line(f, "what:", what);
	if (r->kind == SB_EV_EXEC && r->path && (r->argc == 0 || strcmp(r->path, r->argv[0])))
		line(f, "program:", r->path);
	line(f, "where:", r->cwd ? r->cwd : "(unknown)");
	for (i = 0; i < r->nchain; i++) {
		const struct sb_queue_proc *p = &r->chain[i];
		char who[4096];

		snprintf(who, sizeof(who), "%s%d %s", i ? "<- " : "", p->pid,
			 p->cmdline && p->cmdline[0] ? p->cmdline : p->comm ? p->comm : "?");
		line(f, i ? "" : "process:", who);
	}
	if (r->nchain == 0) {
		snprintf(what, sizeof(what), "%d", r->pid);
		line(f, "process:", what);
	}
	line(f, "rule:", r->rule);
	line(f, "why:", r->reason);
	sb_queue_format_age(now - r->created_ms, age, sizeof(age));
	if (r->deadline_ms) {
		if (r->deadline_ms > now)
			sb_queue_format_age(r->deadline_ms - now, left, sizeof(left));
		else
			snprintf(left, sizeof(left), "none (past its deadline)");
		fprintf(f, "  %-9s %s, time left before it is denied: %s\n", "age:", age, left);
	} else {
		fprintf(f, "  %-9s %s\n", "age:", age);
	}
}

cJSON *sb_approver_item_json(const struct sb_queue_item *it, int64_t now)
{
	cJSON *o = cJSON_CreateObject();
	char t[SB_QUEUE_TIME_LEN];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "state", sb_queue_state_name(it->state));
	cJSON_AddNumberToObject(o, "age_seconds", (double)((now - it->req.created_ms) / 1000));
	cJSON_AddItemToObject(o, "request", sb_queue_request_to_json(&it->req));
	if (it->has_lease) {
		cJSON *l = cJSON_AddObjectToObject(o, "lease");

		if (l) {
			cJSON_AddStringToObject(l, "owner", it->lease.owner);
			sb_queue_time_format(it->lease.expires_ms, t);
			cJSON_AddStringToObject(l, "expires_at", t);
		}
	}
	if (it->has_decision)
		cJSON_AddItemToObject(o, "decision", sb_queue_decision_to_json(&it->dec));
	return o;
}

void sb_approver_print_decided(FILE *f, const struct sb_queue_request *r, const struct sb_queue_decision *d)
{
	char what[4096], esc[512], val[SB_PATH_MAX * 4 + 8];

	sb_queue_request_what(r, what, sizeof(what));
	sb_queue_escape(what, esc, sizeof(esc));
	fprintf(f, "%s %s: %s", d->verdict == SB_QV_ALLOW ? "approved" : "denied", r->id, esc);
	if (d->remember) {
		sb_queue_escape(d->remember_value, val, sizeof(val));
		fprintf(f, " (remembered: %s '%s')", sb_remember_scope_name(d->scope), val);
	}
	fputc('\n', f);
}
