/* Showing requests to a human. The text comes from the agent (its argv,
 * its file names), so it is escaped before it reaches a terminal: an
 * escape sequence in an argument must not be able to clear the screen,
 * rewrite the prompt or reorder text with bidi controls to make a
 * dangerous command look harmless. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "queue.h"

/* Length of the valid UTF-8 sequence at s and its code point, or 0. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
	size_t n, i;
	uint32_t v;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		v = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		v = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		v = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* Code points that change how the rest of a line looks. */
static bool invisible(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) ||		/* C1 controls */
	       cp == 0x061c || cp == 0x200e || cp == 0x200f || /* bidi marks */
	       (cp >= 0x202a && cp <= 0x202e) ||		/* bidi embeddings/overrides */
	       (cp >= 0x2066 && cp <= 0x2069) ||		/* bidi isolates */
	       (cp >= 0x200b && cp <= 0x200d) || cp == 0xfeff || /* zero width */
	       cp == 0x2028 || cp == 0x2029;			/* line/paragraph separators */
}

void sb_queue_escape(const char *s, char *out, size_t out_len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0;

	if (out_len == 0)
		return;
	while (*p) {
		char tmp[16];
		size_t tl, used = 1;
		uint32_t cp;

		if (*p == '\\') {
			strcpy(tmp, "\\\\");
		} else if (*p >= 0x20 && *p < 0x7f) {
			tmp[0] = (char)*p;
			tmp[1] = '\0';
		} else if (*p == '\n') {
			strcpy(tmp, "\\n");
		} else if (*p == '\t') {
			strcpy(tmp, "\\t");
		} else if (*p == '\r') {
			strcpy(tmp, "\\r");
		} else if (*p < 0x80 || !(used = utf8_decode(p, &cp))) {
			used = 1;
			snprintf(tmp, sizeof(tmp), "\\x%02x", *p);
		} else if (invisible(cp)) {
			snprintf(tmp, sizeof(tmp), "\\u{%04x}", (unsigned)cp);
		} else {
			memcpy(tmp, p, used);
			tmp[used] = '\0';
		}
		tl = strlen(tmp);
		if (o + tl + 4 > out_len) {
			/* Whole pieces only, so a UTF-8 sequence is never cut;
			 * every piece so far left room for the marker. */
			if (out_len >= 4) {
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(out + o, tmp, tl);
		o += tl;
		p += used;
	}
	out[o < out_len ? o : out_len - 1] = '\0';
}

static void append(char *out, size_t out_len, size_t *o, const char *s)
{
	size_t l = strlen(s);

	if (*o + 1 >= out_len)
		return;
	if (l > out_len - 1 - *o)
		l = out_len - 1 - *o;
	memcpy(out + *o, s, l);
	*o += l;
	out[*o] = '\0';
}

void sb_queue_request_what(const struct sb_queue_request *r, char *out, size_t out_len)
{
	char buf[128];
	size_t o = 0, i;

	if (out_len == 0)
		return;
	out[0] = '\0';
	switch (r->kind) {
	case SB_EV_EXEC:
		if (r->command && r->command[0]) {
			append(out, out_len, &o, r->command);
		} else if (r->argc > 0) {
			for (i = 0; i < r->argc; i++) {
				if (i)
					append(out, out_len, &o, " ");
				append(out, out_len, &o, r->argv[i] ? r->argv[i] : "");
			}
		} else {
			append(out, out_len, &o, r->path ? r->path : "?");
		}
		break;
	case SB_EV_WRITE:
		snprintf(buf, sizeof(buf), "write (%s) ", sb_write_op_name(r->op));
		append(out, out_len, &o, buf);
		append(out, out_len, &o, r->path ? r->path : "?");
		break;
	case SB_EV_READ:
		append(out, out_len, &o, "read ");
		append(out, out_len, &o, r->path ? r->path : "?");
		break;
	case SB_EV_CONNECT: {
		const char *h = r->host ? r->host : r->addr ? r->addr : "?";
		bool v6 = !r->host && r->addr && strchr(r->addr, ':');

		append(out, out_len, &o, "connect ");
		append(out, out_len, &o, v6 ? "[" : "");
		append(out, out_len, &o, h);
		snprintf(buf, sizeof(buf), "%s:%d (%s%s%s)", v6 ? "]" : "", r->port,
			 r->proto == SB_PROTO_UDP ? "udp" : "tcp", r->host && r->addr ? ", " : "",
			 r->host && r->addr ? r->addr : "");
		append(out, out_len, &o, buf);
		break;
	}
	}
}

void sb_queue_format_age(int64_t ms, char *out, size_t out_len)
{
	int64_t s = ms > 0 ? ms / 1000 : 0;

	if (s < 60)
		snprintf(out, out_len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, out_len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 86400)
		snprintf(out, out_len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else
		snprintf(out, out_len, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}
