/* Request ids: unique, time-sortable, safe as a file name, and checked
 * strictly wherever a user or a file hands one in (they become paths). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "queue.h"

int sb_queue_id_new(char out[SB_QUEUE_ID_MAX + 1], int64_t now_us)
{
	struct timespec ts;
	struct tm tm;
	uint32_t rnd;
	time_t t;

	if (now_us <= 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	}
	/* Uniqueness comes from the random part (and submit's link(2), which
	 * refuses to reuse a name); the time part only makes ids sort. */
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno ? -errno : -EIO;
	t = (time_t)(now_us / 1000000);
	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	snprintf(out, SB_QUEUE_ID_MAX + 1, "%04d%02d%02d-%02d%02d%02d-%06d-%08x", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(now_us % 1000000), rnd);
	return 0;
}

/* ASCII only: isalnum() would follow the locale. */
static bool id_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool sb_queue_id_valid(const char *id)
{
	size_t i;

	if (!id || !id_alnum(id[0]))
		return false;
	for (i = 0; id[i]; i++) {
		if (i >= SB_QUEUE_ID_MAX)
			return false;
		if (!id_alnum(id[i]) && id[i] != '-' && id[i] != '_')
			return false;
	}
	return true;
}

int sb_queue_id_check(const char *id, struct sb_err *err)
{
	char shown[72];
	size_t i, n = 0;

	if (sb_queue_id_valid(id))
		return 0;
	for (i = 0; id && id[i] && n < 60; i++)
		shown[n++] = (unsigned char)id[i] < 0x20 || (unsigned char)id[i] >= 0x7f ? '?' : id[i];
	shown[n] = '\0';
	return sb_errf(err, -EINVAL,
		       "invalid request id '%s%s': an id is 1 to %d letters, digits, '-' or '_', starting with a letter or digit",
		       shown, id && id[i] ? "..." : "", SB_QUEUE_ID_MAX);
}
