/* Conventions shared by every subcommand.
 *
 * Each subcommand is `int cmd_NAME(int argc, char **argv)` with argv[0] the
 * subcommand name, parses its options with getopt_long, answers --help on
 * stdout with exit 0, and returns an exit status:
 *   0 success, 1 failure or bad input, 2 usage error.
 * Errors go to stderr as "sandbox-bpf NAME: message". Library code never
 * prints; it returns a negative errno and fills a struct sb_err. */
#ifndef SB_CLI_H
#define SB_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define SB_EXIT_OK 0
#define SB_EXIT_FAIL 1
#define SB_EXIT_USAGE 2

struct cJSON;

/* Prints "sandbox-bpf CMD: msg" and a hint to run --help; returns 2. */
int sb_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints "sandbox-bpf CMD: msg" on stderr; returns 1. */
int sb_fail(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Resolves the project folder: the --folder value when given, else the
 * current directory. Writes an absolute, existing path into out. */
int sb_resolve_folder(const char *opt, char *out, size_t out_len);

/* Prints a cJSON value on one line followed by a newline and frees it. */
void sb_print_json_line(FILE *f, struct cJSON *obj);

/* getopt_long must restart for every subcommand (and for tests that call
 * several commands in one process). */
void sb_getopt_reset(void);

#endif
