/* sandbox-bpf: one binary, many subcommands. */
#include "cli.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	const struct sb_command *c;

	fprintf(f, "usage: sandbox-bpf COMMAND [OPTIONS]\n\n"
		   "Kernel-enforced policy engine for AI coding agents.\n\n"
		   "Commands:\n");
	for (c = sb_commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\nRun 'sandbox-bpf COMMAND --help' for the options of a command.\n"
		   "Other options: --help, --version\n");
}

int main(int argc, char **argv)
{
	const struct sb_command *c;

	if (argc < 2) {
		usage(stderr);
		return SB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return SB_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("sandbox-bpf %s (%s)\n", SB_VERSION, SB_GITREV);
		return SB_EXIT_OK;
	}
	for (c = sb_commands; c->name; c++) {
		if (!strcmp(argv[1], c->name)) {
			sb_getopt_reset();
			return c->run(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "sandbox-bpf: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return SB_EXIT_USAGE;
}
