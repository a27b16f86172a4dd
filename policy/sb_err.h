/* Error detail carried out of a library call so that the edge (the CLI,
 * the hook, the broker) can print it. Functions return 0 or a negative
 * errno; when they fail they may also fill an sb_err with a sentence that
 * says what went wrong and, where possible, what to do about it. */
#ifndef SB_ERR_H
#define SB_ERR_H

#include <stddef.h>

#define SB_ERR_MSG_MAX 1024

struct sb_err {
	char msg[SB_ERR_MSG_MAX];
};

/* Formats into err (when err is not NULL) and returns code, which callers
 * pass as a negative errno: `return sb_errf(err, -EINVAL, "...")`. */
int sb_errf(struct sb_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the message already in err with more context ("policy.json: "). */
void sb_err_prefix(struct sb_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
