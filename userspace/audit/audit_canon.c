/* Canonical JSON for hashing: RFC 8785 (JCS) on the subset of JSON whose
 * meaning is exact on every machine. JCS gives one byte string per value
 * (keys sorted by UTF-16 code units, no whitespace, minimal escapes), so
 * anyone with a JCS library and SHA-256 can re-check the chain. Numbers
 * are the one place JCS leans on IEEE-754 formatting; allowing only
 * integers that a double holds exactly makes them plain decimal digits. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_internal.h"

#define SB_JSON_INT_MAX 9007199254740991.0	/* 2^53 - 1 */

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (b->len + n + 1 > cap)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Decodes one code point of valid UTF-8 (no overlongs, no surrogates, at
 * most U+10FFFF); returns its length, 0 at the end, -1 when invalid. */
static int utf8_next(const unsigned char *s, unsigned *cp)
{
	unsigned c = s[0];

	if (c == 0)
		return 0;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		if ((s[1] & 0xc0) != 0x80)
			return -1;
		*cp = ((c & 0x1f) << 6) | (s[1] & 0x3f);
		return 2;
	}
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return -1;
		*cp = ((c & 0x0f) << 12) | ((unsigned)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
		if (*cp < 0x800 || (*cp >= 0xd800 && *cp <= 0xdfff))
			return -1;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return -1;
		*cp = ((c & 0x07) << 18) | ((unsigned)(s[1] & 0x3f) << 12) | ((unsigned)(s[2] & 0x3f) << 6) |
		      (s[3] & 0x3f);
		if (*cp < 0x10000 || *cp > 0x10ffff)
			return -1;
		return 4;
	}
	return -1;
}

static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned cp;
	int n;

	while ((n = utf8_next(p, &cp)) > 0)
		p += n;
	return n == 0;
}

int sb_audit_escape(const char *s, char **out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t need = 0;
	unsigned cp;
	bool change = false;
	char *o, *w;
	int n;

	*out = NULL;
	while (*p) {
		n = utf8_next(p, &cp);
		if (n < 0) {
			need += 4;
			p++;
			change = true;
			continue;
		}
		if (*p == '\\') {
			need++;
			change = true;
		}
		need += (size_t)n;
		p += n;
	}
	if (!change)
		return 0;
	o = malloc(need + 1);
	if (!o)
		return -ENOMEM;
	for (p = (const unsigned char *)s, w = o; *p;) {
		n = utf8_next(p, &cp);
		if (n < 0) {
			w += sprintf(w, "\\x%02x", *p);
			p++;
			continue;
		}
		if (*p == '\\')
			*w++ = '\\';
		memcpy(w, p, (size_t)n);
		w += n;
		p += n;
	}
	*w = '\0';
	*out = o;
	return 0;
}

/* Next UTF-16 code unit of a valid UTF-8 string; *pending carries the low
 * surrogate of a supplementary character. Returns 0 at the end. */
static unsigned utf16_next(const unsigned char **s, unsigned *pending)
{
	unsigned cp;
	int n;

	if (*pending) {
		cp = *pending;
		*pending = 0;
		return cp;
	}
	n = utf8_next(*s, &cp);
	if (n <= 0)
		return 0;
	*s += n;
	if (cp >= 0x10000) {
		cp -= 0x10000;
		*pending = 0xdc00 | (cp & 0x3ff);
		return 0xd800 | (cp >> 10);
	}
	return cp;
}

/* JCS orders keys by UTF-16 code units, which differs from byte order
 * only between U+E000..U+FFFF and supplementary characters. */
static int key_cmp(const void *pa, const void *pb)
{
	const unsigned char *a = (const unsigned char *)(*(const cJSON *const *)pa)->string;
	const unsigned char *b = (const unsigned char *)(*(const cJSON *const *)pb)->string;
	unsigned pend_a = 0, pend_b = 0;

	for (;;) {
		unsigned ua = utf16_next(&a, &pend_a);
		unsigned ub = utf16_next(&b, &pend_b);

		if (ua != ub)
			return ua < ub ? -1 : 1;
		if (ua == 0)
			return 0;
	}
}

static int put_string(struct buf *b, const char *s, struct sb_err *err)
{
	const char *run = s;
	int rc = 0;

	if (!utf8_valid(s))
		return sb_errf(err, -EINVAL, "string is not valid UTF-8");
	rc = buf_put(b, "\"", 1);
	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		const char *e = NULL;

		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			if (c < 0x20) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				e = esc;
			}
		}
		if (!e)
			continue;
		rc = buf_put(b, run, (size_t)(s - run));
		if (!rc)
			rc = buf_put(b, e, strlen(e));
		run = s + 1;
	}
	if (!rc)
		rc = buf_put(b, run, (size_t)(s - run));
	if (!rc)
		rc = buf_put(b, "\"", 1);
	return rc == -ENOMEM ? sb_errf(err, rc, "out of memory") : rc;
}

static int put_value(struct buf *b, const cJSON *v, int depth, struct sb_err *err)
{
	char num[32];
	int rc;

	if (depth > SB_AUDIT_DEPTH_MAX)
		return sb_errf(err, -EINVAL, "nested deeper than %d levels", SB_AUDIT_DEPTH_MAX);
	switch (v->type & 0xff) {
	case cJSON_False:
		rc = buf_put(b, "false", 5);
		break;
	case cJSON_True:
		rc = buf_put(b, "true", 4);
		break;
	case cJSON_NULL:
		rc = buf_put(b, "null", 4);
		break;
	case cJSON_Number: {
		double d = v->valuedouble;

		if (!isfinite(d) || d != trunc(d) || fabs(d) > SB_JSON_INT_MAX)
			return sb_errf(err, -EINVAL,
				       "number %.17g is not an integer within +-(2^53-1) (write it as a string)", d);
		/* -0 prints as 0, as JCS wants. */
		snprintf(num, sizeof(num), "%lld", (long long)d);
		rc = buf_put(b, num, strlen(num));
		break;
	}
	case cJSON_String:
		if (!v->valuestring)
			return sb_errf(err, -EINVAL, "string without a value");
		return put_string(b, v->valuestring, err);
	case cJSON_Array: {
		const cJSON *c;
		bool first = true;

		rc = buf_put(b, "[", 1);
		for (c = v->child; c && !rc; c = c->next) {
			if (!first)
				rc = buf_put(b, ",", 1);
			first = false;
			if (!rc) {
				rc = put_value(b, c, depth + 1, err);
				if (rc)
					return rc;
			}
		}
		if (!rc)
			rc = buf_put(b, "]", 1);
		break;
	}
	case cJSON_Object: {
		const cJSON *c, **items;
		size_t n = 0, i;

		for (c = v->child; c; c = c->next)
			n++;
		items = calloc(n ? n : 1, sizeof(*items));
		if (!items)
			return sb_errf(err, -ENOMEM, "out of memory");
		n = 0;
		for (c = v->child; c; c = c->next) {
			if (!c->string || !utf8_valid(c->string)) {
				free(items);
				return sb_errf(err, -EINVAL, "object key is not valid UTF-8");
			}
			items[n++] = c;
		}
		qsort(items, n, sizeof(*items), key_cmp);
		rc = buf_put(b, "{", 1);
		for (i = 0; i < n && !rc; i++) {
			if (i > 0 && !strcmp(items[i - 1]->string, items[i]->string)) {
				rc = sb_errf(err, -EINVAL, "duplicate key \"%.64s\"", items[i]->string);
				break;
			}
			if (i > 0)
				rc = buf_put(b, ",", 1);
			if (!rc)
				rc = put_string(b, items[i]->string, err);
			if (!rc)
				rc = buf_put(b, ":", 1);
			if (!rc)
				rc = put_value(b, items[i], depth + 1, err);
		}
		free(items);
		if (!rc)
			rc = buf_put(b, "}", 1);
		return rc;
	}
	default:
		return sb_errf(err, -EINVAL, "value of an unsupported JSON type");
	}
	return rc == -ENOMEM ? sb_errf(err, rc, "out of memory") : rc;
}

int sb_audit_canon(const cJSON *v, char **out, size_t *len, struct sb_err *err)
{
	struct buf b = { 0 };
	int rc;

	if (!v)
		return sb_errf(err, -EINVAL, "no value");
	rc = put_value(&b, v, 0, err);
	if (rc) {
		free(b.p);
		return rc;
	}
	if (!b.p) {
		b.p = strdup("");
		if (!b.p)
			return sb_errf(err, -ENOMEM, "out of memory");
	}
	*out = b.p;
	if (len)
		*len = b.len;
	return 0;
}
