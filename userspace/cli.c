#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sb_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sandbox-bpf %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'sandbox-bpf %s --help'.\n", cmd);
	return SB_EXIT_USAGE;
}

int sb_fail(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sandbox-bpf %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return SB_EXIT_FAIL;
}

int sb_resolve_folder(const char *opt, char *out, size_t out_len)
{
	char buf[PATH_MAX];

	if (!realpath(opt ? opt : ".", buf))
		return -errno;
	if (strlen(buf) >= out_len)
		return -ENAMETOOLONG;
	strcpy(out, buf);
	return 0;
}

void sb_print_json_line(FILE *f, struct cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);

	if (s) {
		fputs(s, f);
		fputc('\n', f);
		free(s);
	}
	cJSON_Delete(obj);
}

void sb_getopt_reset(void)
{
	optind = 0;
	opterr = 1;
}
