#include "sb_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sb_errf(struct sb_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void sb_err_prefix(struct sb_err *err, const char *fmt, ...)
{
	char prefix[SB_ERR_MSG_MAX];
	char old[SB_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s%s", prefix, old);
}
