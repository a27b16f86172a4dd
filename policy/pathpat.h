/* Path normalisation and path-pattern matching. */
#ifndef SB_PATHPAT_H
#define SB_PATHPAT_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

/* Lexical normalisation: joins a relative path to base (which must be
 * absolute), removes "." and empty components, resolves ".." without ever
 * going above "/". Does not touch the filesystem. Returns 0, -EINVAL for a
 * relative path without base or an embedded NUL, -ENAMETOOLONG. */
int sb_path_normalize(const char *path, const char *base, char *out, size_t out_len);

/* Expands a policy path pattern: "~" and "~/x" to home, "./x" and "x" to
 * root, a trailing "/" to "/ **". Patterns starting with "**" stay anchored
 * anywhere. Fills pat (caller frees with sb_pathpat_free). */
int sb_pathpat_compile(const char *pattern, const char *root, const char *home,
		       struct sb_pathpat *pat, struct sb_err *err);
void sb_pathpat_free(struct sb_pathpat *pat);

/* Matches a normalised absolute path. Returns -1 when it does not match,
 * else the specificity: 2 * depth of the deepest target component matched
 * by a component with literal characters, plus 1 when that component is
 * entirely literal (so "a.txt" beats "*.txt" at the same depth). */
int sb_pathpat_match(const struct sb_pathpat *pat, const char *path);

/* True when the component contains an unescaped glob character. */
bool sb_glob_has_wildcard(const char *s);
/* Glob match of one string: '*' any run, '?' one char, '[..]' classes,
 * '\' escapes. When slash_special, wildcards do not match '/'. */
bool sb_glob_match(const char *pat, const char *s, bool slash_special);
/* Removes backslash escapes in place. */
void sb_glob_unescape(char *s);

#endif
