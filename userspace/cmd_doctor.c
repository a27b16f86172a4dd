/* sandbox-bpf doctor: what this machine supports and which backend `run`
 * would use. Missing features are information: the exit status is 0 whenever
 * the probes ran, 1 only when doctor could not run at all. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "probe/probe.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf doctor [--json]\n"
		"\n"
		"Tells what this machine supports and which backend `sandbox-bpf run` would use.\n"
		"BPF-LSM is tested for real: a tiny lsm/file_open program that only counts this\n"
		"process's opens is loaded, attached, triggered and detached. Also checked: the\n"
		"active LSM list, kernel BTF, the cgroup v2 mount and whether a child cgroup can be\n"
		"created, bpffs, cgroup socket programs (attached to a new, empty child cgroup and\n"
		"removed again), the Landlock ABI, seccomp user notification, qemu and /dev/kvm for\n"
		"the VM tests, the kernel version and privileges. Nothing is left attached, pinned,\n"
		"mounted or created, and no other process is affected.\n"
		"\n"
		"Each line reads: STATUS NAME DETAIL [-> what to do], STATUS being ok, missing or\n"
		"error. Exit status: 0 when the checks ran (whatever they found), 1 when doctor\n"
		"could not run, 2 on usage errors.\n"
		"\n"
		"  --json   print one JSON object instead: {\"checks\":{NAME:{\"status\",\"detail\",\n"
		"           \"remedy\",\"errno\",...}},\"backend\",\"backend_built\",\"bpf_lsm\",\"vm_tests\"}\n");
}

static void print_human(const struct sb_probe_report *r)
{
	struct sb_probe_line lines[SB_PROBE_MAX_LINES];
	size_t i, n = sb_probe_report_lines(r, lines, SB_PROBE_MAX_LINES);

	for (i = 0; i < n; i++) {
		const struct sb_probe_result *res = lines[i].res;

		printf("%-7s  %-17s  %s", sb_probe_status_name(res->status), lines[i].name, res->detail);
		if (res->status != SB_PROBE_OK && res->remedy[0])
			printf("  -> %s", res->remedy);
		putchar('\n');
	}
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sb_probe_report *r;
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("doctor", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("doctor", "unexpected argument '%s'", argv[optind]);

	r = calloc(1, sizeof(*r));
	if (!r)
		return sb_fail("doctor", "out of memory");
	if (sb_probe_run_all(r) != 0) {
		free(r);
		return sb_fail("doctor", "the probes could not run");
	}
	if (json) {
		cJSON *o = sb_probe_report_to_json(r);

		if (!o) {
			free(r);
			return sb_fail("doctor", "out of memory");
		}
		cJSON_AddStringToObject(o, "version", SB_VERSION);
		sb_print_json_line(stdout, o);
	} else {
		print_human(r);
	}
	free(r);
	if (fflush(stdout) != 0)
		return sb_fail("doctor", "cannot write the report");
	return SB_EXIT_OK;
}
