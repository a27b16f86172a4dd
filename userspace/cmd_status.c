/* sandbox-bpf status */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "kernel/events.h"
#include "kernel/status.h"
#include "queue/queue.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf status [--json]\n"
		"\n"
		"Lists the attached sandboxes from the maps pinned under " SB_PIN_DIR ":\n"
		"cgroup, policy source and hash, whether an attach/run process is streaming\n"
		"its events, and per hook the calls allowed, denied and escalated and the\n"
		"events lost on a full ring buffer. Hooks with no calls are not listed\n"
		"(--json lists all). Then the tasks held for the broker (escalations\n"
		"waiting for a decision): pid, command, what they asked for, for how long.\n"
		"Exit status 0 also when nothing is attached.\n");
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sb_kstatus *st;
	struct sb_err err = { { 0 } };
	bool json = false;
	size_t i;
	int c, h;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("status", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("status", "unexpected argument '%s'", argv[optind]);
	st = calloc(1, sizeof(*st));
	if (!st)
		return sb_fail("status", "out of memory");
	if (sb_kstatus_read(st, &err)) {
		free(st);
		return sb_fail("status", "%s", err.msg);
	}
	if (json) {
		sb_print_json_line(stdout, sb_kstatus_to_json(st));
		sb_kstatus_free(st);
		free(st);
		return SB_EXIT_OK;
	}
	if (!st->pinned) {
		printf("no sandbox is attached (nothing pinned under %s)\n", SB_PIN_DIR);
		free(st);
		return SB_EXIT_OK;
	}
	printf("%d BPF-LSM programs attached (%s hooks), pinned under %s\n", st->nlinks,
	       st->meta.features & SB_META_PATH_HOOKS ? "path_*" : "inode_* fallback", SB_PIN_DIR);
	if (st->nbox == 0)
		printf("no sandbox is attached\n");
	for (i = 0; i < st->nbox; i++) {
		const struct sb_kstatus_box *b = &st->box[i];

		printf("\nsandbox %u: %s (cgroup id %llu)\n", b->id, b->info.cgroup,
		       (unsigned long long)b->info.cgroup_id);
		printf("  policy %s, hash %.16s, generation %u\n", b->info.policy_source, b->info.hash, b->info.counter);
		if (b->owner_alive)
			printf("  events streamed by pid %u\n", b->info.owner_pid);
		else
			printf("  no process is streaming its events (they wait in the ring buffer until it fills)\n");
		printf("  %-24s %10s %10s %10s %8s\n", "hook", "allowed", "denied", "escalated", "lost");
		for (h = 0; h < SB_HOOK__COUNT; h++) {
			const struct sb_counters *k = &b->counters[h];

			if (!k->allowed && !k->denied && !k->escalated && !k->lost)
				continue;
			printf("  %-24s %10llu %10llu %10llu %8llu\n", sb_hook_name((unsigned)h),
			       (unsigned long long)k->allowed, (unsigned long long)k->denied,
			       (unsigned long long)k->escalated, (unsigned long long)k->lost);
		}
		printf("  %-24s %10llu %10llu %10llu %8llu\n", "total", (unsigned long long)b->total.allowed,
		       (unsigned long long)b->total.denied, (unsigned long long)b->total.escalated,
		       (unsigned long long)b->total.lost);
		if (b->nheld) {
			size_t j;

			printf("  held for the broker: %zu task%s%s\n", b->nheld, b->nheld == 1 ? "" : "s",
			       b->owner_alive ? "" : " (no broker runs: they stay held until 'attach --adopt')");
			printf("  %-8s %-16s %-8s %-9s %s\n", "PID", "COMMAND", "TRIGGER", "SINCE", "WHAT");
			for (j = 0; j < b->nheld; j++) {
				const struct sb_kstatus_held *t = &b->held[j];
				char age[32], what[160];

				sb_queue_format_age((int64_t)t->age_ms, age, sizeof(age));
				sb_queue_escape(t->what, what, sizeof(what));
				printf("  %-8u %-16s %-8s %-9s %s%s%s\n", t->pid, t->comm, t->trigger, age, what,
				       t->after_exec ? " [after exec]" : "", t->verdict ? " [resuming]" : "");
			}
		}
	}
	sb_kstatus_free(st);
	free(st);
	return SB_EXIT_OK;
}
