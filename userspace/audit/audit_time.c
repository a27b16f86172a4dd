/* Record times: UTC, RFC 3339, always nine fraction digits, so that the
 * string order of two times is their time order and --since/--until are
 * plain string comparisons. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit_internal.h"

static void format_time(time_t sec, long nsec, char out[SB_AUDIT_TIME_LEN])
{
	struct tm tm;

	gmtime_r(&sec, &tm);
	snprintf(out, SB_AUDIT_TIME_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", (tm.tm_year + 1900) % 10000,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, nsec);
}

void sb_audit_time_now(char out[SB_AUDIT_TIME_LEN])
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	format_time(ts.tv_sec, ts.tv_nsec, out);
}

/* Reads exactly n digits. */
static int digits(const char **p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int parse_duration(const char *in, time_t *sec)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)in[0]))
		return -1;
	errno = 0;
	v = strtoull(in, &end, 10);
	if (errno || end[0] == '\0' || end[1] != '\0' || v > 100ULL * 365 * 86400)
		return -1;
	switch (end[0]) {
	case 's': break;
	case 'm': v *= 60; break;
	case 'h': v *= 3600; break;
	case 'd': v *= 86400; break;
	default: return -1;
	}
	*sec = (time_t)v;
	return 0;
}

int sb_audit_time_parse(const char *in, char out[SB_AUDIT_TIME_LEN], struct sb_err *err)
{
	struct tm tm = { 0 };
	const char *p = in;
	long nsec = 0;
	int y, mo, d, h = 0, mi = 0, s = 0, off = 0;
	time_t t, dur;

	if (!parse_duration(in, &dur)) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		format_time(now.tv_sec - dur, now.tv_nsec, out);
		return 0;
	}
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
		goto bad;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' || digits(&p, 2, &s))
			goto bad;
		if (*p == '.') {
			int n = 0;

			for (p++; isdigit((unsigned char)*p); p++, n++)
				if (n < 9)
					nsec = nsec * 10 + (*p - '0');
			if (n == 0)
				goto bad;
			for (; n < 9; n++)
				nsec *= 10;
		}
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			int sign = *p++ == '-' ? -1 : 1, oh, om;

			if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
				goto bad;
			off = sign * (oh * 3600 + om * 60);
		} else {
			goto bad;
		}
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		goto bad;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	t = timegm(&tm);
	if (t == (time_t)-1)
		goto bad;
	format_time(t - off, nsec, out);
	return 0;
bad:
	return sb_errf(err, -EINVAL,
		       "'%s' is not a time: use RFC 3339 (2025-06-01T12:00:00Z), a date (2025-06-01) "
		       "or a duration before now (90s, 15m, 2h, 7d)",
		       in);
}
