#include "status.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "holds.h"
#include "loader.h"

static int count_links(void)
{
	DIR *d = opendir(SB_PIN_DIR "/links");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int held_cmp(const void *a, const void *b)
{
	const struct sb_kstatus_held *x = a, *y = b;

	return x->age_ms < y->age_ms ? 1 : x->age_ms > y->age_ms ? -1 : 0;
}

/* Holds still waiting (no verdict yet, or a verdict not yet used). */
static void read_held(struct sb_kernel *k, struct sb_kstatus_box *b)
{
	struct sb_khold *l = NULL;
	struct timespec ts;
	__u64 now;
	size_t n = 0, i;

	if (sb_kernel_holds(k, b->id, &l, &n) || n == 0) {
		free(l);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
	b->held = calloc(n, sizeof(*b->held));
	for (i = 0; b->held && i < n; i++) {
		const struct sb_kevent *ev = &l[i].h.ev;
		struct sb_kstatus_held *h;

		if (l[i].h.used)
			continue;	/* resolved: kept only for the rest of its syscall */
		if (ev->tgid && kill((pid_t)ev->tgid, 0) && errno == ESRCH)
			continue;	/* dead, not yet cleaned up by a broker */
		h = &b->held[b->nheld++];
		h->pid = ev->tgid;
		h->tid = ev->pid;
		snprintf(h->comm, sizeof(h->comm), "%.16s", ev->comm);
		snprintf(h->trigger, sizeof(h->trigger), "%s", sb_trigger_name((enum sb_trigger)ev->trigger));
		sb_event_subject(ev, h->what, sizeof(h->what));
		h->age_ms = now > ev->ts_ns ? (now - ev->ts_ns) / 1000000 : 0;
		h->after_exec = l[i].h.committed;
		h->verdict = l[i].has_verdict;
	}
	if (b->held)
		qsort(b->held, b->nheld, sizeof(*b->held), held_cmp);
	free(l);
}

void sb_kstatus_free(struct sb_kstatus *st)
{
	size_t i;

	for (i = 0; i < st->nbox; i++) {
		free(st->box[i].held);
		st->box[i].held = NULL;
		st->box[i].nheld = 0;
	}
}

int sb_kstatus_read(struct sb_kstatus *st, struct sb_err *err)
{
	struct sb_kernel k;
	__u32 id;
	int rc;

	memset(st, 0, sizeof(*st));
	if (!sb_kernel_pinned())
		return 0;
	rc = sb_kernel_open(&k, 0, err);
	if (rc)
		return rc;
	st->pinned = true;
	sb_kernel_meta(&k, &st->meta);
	st->nlinks = count_links();
	for (id = 1; id < SB_MAX_SANDBOXES; id++) {
		struct sb_kstatus_box *b = &st->box[st->nbox];
		int h;

		if (sb_kernel_info(&k, id, &b->info))
			continue;
		b->id = id;
		b->owner_alive = b->info.owner_pid && (kill((pid_t)b->info.owner_pid, 0) == 0 || errno == EPERM);
		sb_kernel_counters(&k, id, b->counters);
		for (h = 0; h < SB_HOOK__COUNT; h++) {
			b->total.allowed += b->counters[h].allowed;
			b->total.denied += b->counters[h].denied;
			b->total.escalated += b->counters[h].escalated;
			b->total.lost += b->counters[h].lost;
		}
		read_held(&k, b);
		st->nbox++;
	}
	sb_kernel_close(&k);
	return 0;
}

static cJSON *counters_json(const struct sb_counters *c)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "allowed", (double)c->allowed);
	cJSON_AddNumberToObject(o, "denied", (double)c->denied);
	cJSON_AddNumberToObject(o, "escalated", (double)c->escalated);
	cJSON_AddNumberToObject(o, "lost", (double)c->lost);
	return o;
}

cJSON *sb_kstatus_to_json(const struct sb_kstatus *st)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t i;
	int h;

	cJSON_AddBoolToObject(o, "attached", st->nbox > 0);
	cJSON_AddBoolToObject(o, "pinned", st->pinned);
	if (st->pinned) {
		cJSON_AddStringToObject(o, "pin_dir", SB_PIN_DIR);
		cJSON_AddNumberToObject(o, "programs", st->nlinks);
		cJSON_AddStringToObject(o, "hooks", st->meta.features & SB_META_PATH_HOOKS ? "path" : "inode");
		cJSON_AddNumberToObject(o, "abi", st->meta.abi);
	}
	arr = cJSON_AddArrayToObject(o, "sandboxes");
	for (i = 0; i < st->nbox; i++) {
		const struct sb_kstatus_box *b = &st->box[i];
		cJSON *s = cJSON_CreateObject(), *hooks;

		cJSON_AddNumberToObject(s, "id", b->id);
		cJSON_AddStringToObject(s, "cgroup", b->info.cgroup);
		cJSON_AddNumberToObject(s, "cgroup_id", (double)b->info.cgroup_id);
		cJSON_AddStringToObject(s, "policy", b->info.policy_source);
		cJSON_AddStringToObject(s, "folder", b->info.folder);
		cJSON_AddStringToObject(s, "hash", b->info.hash);
		cJSON_AddNumberToObject(s, "generation", b->info.counter);
		cJSON_AddNumberToObject(s, "attached_at", (double)b->info.attached_ns);
		if (b->info.owner_pid)
			cJSON_AddNumberToObject(s, "owner_pid", b->info.owner_pid);
		cJSON_AddBoolToObject(s, "streaming", b->owner_alive);
		cJSON_AddItemToObject(s, "total", counters_json(&b->total));
		{
			cJSON *held = cJSON_AddArrayToObject(s, "held");
			size_t j;

			for (j = 0; held && j < b->nheld; j++) {
				const struct sb_kstatus_held *t = &b->held[j];
				cJSON *ho = cJSON_CreateObject();

				cJSON_AddNumberToObject(ho, "pid", t->pid);
				cJSON_AddNumberToObject(ho, "tid", t->tid);
				cJSON_AddStringToObject(ho, "comm", t->comm);
				cJSON_AddStringToObject(ho, "trigger", t->trigger);
				cJSON_AddStringToObject(ho, "what", t->what);
				cJSON_AddNumberToObject(ho, "held_seconds", (double)(t->age_ms / 1000));
				cJSON_AddBoolToObject(ho, "after_exec", t->after_exec);
				cJSON_AddBoolToObject(ho, "resuming", t->verdict);
				cJSON_AddItemToArray(held, ho);
			}
		}
		hooks = cJSON_AddObjectToObject(s, "hooks");
		for (h = 0; h < SB_HOOK__COUNT; h++)
			cJSON_AddItemToObject(hooks, sb_hook_name((unsigned)h), counters_json(&b->counters[h]));
		cJSON_AddItemToArray(arr, s);
	}
	return o;
}
