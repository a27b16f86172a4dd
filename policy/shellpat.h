/* Shell command patterns and the command line they are matched against. */
#ifndef SB_SHELLPAT_H
#define SB_SHELLPAT_H

#include <stddef.h>

#include "policy.h"

int sb_shellpat_compile(const char *pattern, const char *root, const char *home,
			struct sb_shellpat *pat, struct sb_err *err);
void sb_shellpat_free(struct sb_shellpat *pat);

/* Returns -1 for no match, else the specificity (literal prefix length). */
int sb_shellpat_match(const struct sb_shellpat *pat, const char *cmdline, const char *fullline);

/* Builds "NAME ARG1 ARG2..." where NAME is first (a basename or a full
 * path, as given) and the args are argv[1..]. Returns -ENAMETOOLONG when
 * it does not fit (callers treat that as an error, never as a shorter
 * command). */
int sb_cmdline_build(const char *first, const char *const *argv, size_t argc, char *out,
		     size_t out_len);

const char *sb_basename(const char *path);

#endif
