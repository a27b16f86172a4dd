#include "netpat.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

int sb_hostname_canon(const char *in, char *out, size_t out_len)
{
	size_t len = strlen(in), i, label = 0;

	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len > 253 || len + 1 > out_len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
		} else if (isalnum(c) || c == '-' || c == '_') {
			if (++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		out[i] = (char)tolower(c);
	}
	if (label == 0)
		return -EINVAL;
	out[len] = '\0';
	return 0;
}

int sb_netaddr_parse(const char *s, struct sb_netdst *dst)
{
	uint8_t buf[16];

	if (inet_pton(AF_INET, s, buf) == 1) {
		dst->family = AF_INET;
		memset(dst->addr, 0, sizeof(dst->addr));
		memcpy(dst->addr, buf, 4);
		dst->has_addr = true;
		return 0;
	}
	if (inet_pton(AF_INET6, s, buf) == 1) {
		if (!memcmp(buf, v4mapped_prefix, 12)) {
			dst->family = AF_INET;
			memset(dst->addr, 0, sizeof(dst->addr));
			memcpy(dst->addr, buf + 12, 4);
		} else {
			dst->family = AF_INET6;
			memcpy(dst->addr, buf, 16);
		}
		dst->has_addr = true;
		return 0;
	}
	return -EINVAL;
}

void sb_netpat_free(struct sb_netpat *pat)
{
	if (!pat)
		return;
	free(pat->host);
	memset(pat, 0, sizeof(*pat));
}

static int parse_port(const char *entry, const char *s, struct sb_netpat *pat, struct sb_err *err)
{
	char *end;
	unsigned long lo, hi;

	if (!strcmp(s, "*")) {
		pat->any_port = true;
		pat->port_lo = 0;
		pat->port_hi = 65535;
		return 0;
	}
	if (!isdigit((unsigned char)s[0]))
		goto bad;
	lo = strtoul(s, &end, 10);
	hi = lo;
	if (*end == '-') {
		if (!isdigit((unsigned char)end[1]))
			goto bad;
		hi = strtoul(end + 1, &end, 10);
	}
	if (*end || lo < 1 || hi > 65535 || lo > hi)
		goto bad;
	pat->any_port = false;
	pat->port_lo = (uint16_t)lo;
	pat->port_hi = (uint16_t)hi;
	return 0;
bad:
	return sb_errf(err, -EINVAL, "invalid port '%s' in '%s': expected 1-65535, a range like 8000-8999, or *",
		       s, entry);
}

static int parse_prefix(const char *entry, const char *s, int max, uint8_t *out, struct sb_err *err)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)s[0]))
		goto bad;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > max)
		goto bad;
	*out = (uint8_t)v;
	return 0;
bad:
	return sb_errf(err, -EINVAL, "invalid prefix length '/%s' in '%s': expected 0-%d", s, entry, max);
}

/* Rejects "10.1.2.3/8": host bits set are almost always a typo for a
 * different network, and silently masking them would change the rule. */
static int check_host_bits(const char *entry, struct sb_netpat *pat, struct sb_err *err)
{
	int bytes = pat->family == AF_INET ? 4 : 16, i;

	for (i = 0; i < bytes; i++) {
		int bit_lo = i * 8;
		uint8_t mask;

		if (bit_lo >= pat->prefix)
			mask = 0;
		else if (bit_lo + 8 <= pat->prefix)
			mask = 0xff;
		else
			mask = (uint8_t)(0xff << (8 - (pat->prefix - bit_lo)));
		if (pat->addr[i] & ~mask) {
			char net[INET6_ADDRSTRLEN];
			uint8_t fixed[16];
			int k;

			memcpy(fixed, pat->addr, 16);
			for (k = i; k < bytes; k++) {
				int lo = k * 8;
				uint8_t m = lo >= pat->prefix ? 0 :
					    (lo + 8 <= pat->prefix ? 0xff :
								     (uint8_t)(0xff << (8 - (pat->prefix - lo))));
				fixed[k] &= m;
			}
			inet_ntop(pat->family, fixed, net, sizeof(net));
			return sb_errf(err, -EINVAL, "'%s' has host bits set beyond /%d; did you mean %s/%d?",
				       entry, pat->prefix, net, pat->prefix);
		}
	}
	return 0;
}

static int parse_ip(const char *entry, const char *addr, const char *prefix, struct sb_netpat *pat,
		    struct sb_err *err)
{
	uint8_t buf[16];
	int rc;

	pat->kind = SB_NET_IP;
	memset(pat->addr, 0, sizeof(pat->addr));
	if (inet_pton(AF_INET, addr, buf) == 1) {
		pat->family = AF_INET;
		memcpy(pat->addr, buf, 4);
		pat->prefix = 32;
		if (prefix && (rc = parse_prefix(entry, prefix, 32, &pat->prefix, err)))
			return rc;
	} else if (inet_pton(AF_INET6, addr, buf) == 1) {
		pat->family = AF_INET6;
		memcpy(pat->addr, buf, 16);
		pat->prefix = 128;
		if (prefix && (rc = parse_prefix(entry, prefix, 128, &pat->prefix, err)))
			return rc;
		/* An IPv4-mapped rule is an IPv4 rule: the kernel and the
		 * classifier unmap addresses before matching. */
		if (!memcmp(buf, v4mapped_prefix, 12) && pat->prefix >= 96) {
			pat->family = AF_INET;
			memset(pat->addr, 0, sizeof(pat->addr));
			memcpy(pat->addr, buf + 12, 4);
			pat->prefix = (uint8_t)(pat->prefix - 96);
		}
	} else {
		return sb_errf(err, -EINVAL, "'%s': '%s' is not an IPv4 or IPv6 address", entry, addr);
	}
	return check_host_bits(entry, pat, err);
}

int sb_netpat_compile(const char *entry, struct sb_netpat *pat, struct sb_err *err)
{
	char buf[512], canon[256];
	char *host = buf, *port = NULL, *prefix = NULL;
	size_t len = strlen(entry);
	int rc, colons = 0;
	const char *c;

	memset(pat, 0, sizeof(*pat));
	pat->any_port = true;
	pat->port_hi = 65535;
	if (len == 0)
		return sb_errf(err, -EINVAL, "empty network entry");
	if (len >= sizeof(buf))
		return sb_errf(err, -EINVAL, "network entry longer than %zu bytes", sizeof(buf) - 1);
	for (c = entry; *c; c++) {
		if (isspace((unsigned char)*c))
			return sb_errf(err, -EINVAL, "'%s': whitespace is not allowed in a network entry", entry);
		if (*c == ':')
			colons++;
	}
	memcpy(buf, entry, len + 1);

	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (!close)
			return sb_errf(err, -EINVAL, "'%s': missing ']' after an IPv6 address", entry);
		*close = '\0';
		host = buf + 1;
		prefix = strchr(host, '/');
		if (prefix)
			*prefix++ = '\0';
		c = close + 1;
		if (*c == '/') {
			char *after = (char *)c + 1, *pc = strchr(after, ':');

			if (prefix)
				return sb_errf(err, -EINVAL, "'%s': two prefix lengths", entry);
			if (pc)
				*pc = '\0';
			prefix = after;
			c = pc ? pc + 1 : after + strlen(after);
			if (pc)
				port = pc + 1;
		} else if (*c == ':') {
			port = (char *)c + 1;
		} else if (*c) {
			return sb_errf(err, -EINVAL, "'%s': expected ':port' after ']'", entry);
		}
		rc = parse_ip(entry, host, prefix, pat, err);
		if (rc)
			return rc;
		if (pat->family != AF_INET6 && strchr(host, ':') == NULL)
			return sb_errf(err, -EINVAL, "'%s': brackets are for IPv6 addresses", entry);
		if (port)
			return parse_port(entry, port, pat, err);
		return 0;
	}

	if (colons >= 2) {
		/* Bare IPv6 (no brackets): no port can be given. */
		prefix = strchr(buf, '/');
		if (prefix)
			*prefix++ = '\0';
		if (inet_pton(AF_INET6, buf, canon) != 1)
			return sb_errf(err, -EINVAL,
				       "'%s' is not an IPv6 address; write IPv6 with a port as [addr]:port",
				       entry);
		return parse_ip(entry, buf, prefix, pat, err);
	}
	if (colons == 1) {
		port = strchr(buf, ':');
		*port++ = '\0';
		rc = parse_port(entry, port, pat, err);
		if (rc)
			return rc;
	}
	host = buf;
	if (!host[0])
		return sb_errf(err, -EINVAL, "'%s': missing host before ':'", entry);
	if (!strcmp(host, "*")) {
		pat->kind = SB_NET_ANY;
		return 0;
	}
	prefix = strchr(host, '/');
	if (prefix) {
		*prefix++ = '\0';
		return parse_ip(entry, host, prefix, pat, err);
	}
	{
		uint8_t tmp[4];

		if (inet_pton(AF_INET, host, tmp) == 1)
			return parse_ip(entry, host, NULL, pat, err);
	}
	if (!strncmp(host, "*.", 2)) {
		if (sb_hostname_canon(host + 2, canon, sizeof(canon)))
			return sb_errf(err, -EINVAL, "'%s': '%s' is not a valid domain", entry, host + 2);
		pat->kind = SB_NET_DOMAIN;
	} else {
		if (strchr(host, '*'))
			return sb_errf(err, -EINVAL,
				       "'%s': '*' is only allowed as a whole host ('*') or as a leading '*.' for subdomains",
				       entry);
		if (sb_hostname_canon(host, canon, sizeof(canon)))
			return sb_errf(err, -EINVAL, "'%s': '%s' is not a valid host name or address", entry, host);
		/* A dotted all-numeric name that inet_pton refused (1.2.3, 1.2.3.4.5)
		 * is a typo, not a host. */
		if (strspn(canon, "0123456789.") == strlen(canon))
			return sb_errf(err, -EINVAL, "'%s': '%s' is not a valid IPv4 address", entry, host);
		pat->kind = SB_NET_HOST;
	}
	pat->host = strdup(canon);
	return pat->host ? 0 : -ENOMEM;
}

static bool prefix_match(const uint8_t *net, const uint8_t *addr, int bits)
{
	int full = bits / 8, rem = bits % 8;

	if (memcmp(net, addr, (size_t)full))
		return false;
	if (rem) {
		uint8_t mask = (uint8_t)(0xff << (8 - rem));

		if ((net[full] & mask) != (addr[full] & mask))
			return false;
	}
	return true;
}

static int count_labels(const char *h)
{
	int n = 1;

	for (; *h; h++)
		if (*h == '.')
			n++;
	return n;
}

bool sb_netpat_match(const struct sb_netpat *pat, const struct sb_netdst *dst, struct sb_netrank *rank)
{
	memset(rank, 0, sizeof(*rank));
	if (!pat->any_port && (dst->port < pat->port_lo || dst->port > pat->port_hi))
		return false;
	rank->port_class = pat->any_port ? 0 : (pat->port_lo == pat->port_hi ? 2 : 1);

	switch (pat->kind) {
	case SB_NET_ANY:
		if (!dst->has_addr && !dst->host)
			return false;
		rank->host_class = 0;
		return true;
	case SB_NET_IP: {
		int full = pat->family == AF_INET ? 32 : 128;

		if (!dst->has_addr || dst->family != pat->family)
			return false;
		if (!prefix_match(pat->addr, dst->addr, pat->prefix))
			return false;
		rank->kind = 0;
		rank->host_class = pat->prefix == full ? 2 : 1;
		/* Compare v4 and v6 ranges on one scale. */
		rank->host_sub = pat->family == AF_INET ? pat->prefix + 96 : pat->prefix;
		return true;
	}
	case SB_NET_HOST:
		if (!dst->host || strcmp(dst->host, pat->host))
			return false;
		rank->kind = 1;
		rank->host_class = 2;
		return true;
	case SB_NET_DOMAIN: {
		size_t hl, sl;

		if (!dst->host)
			return false;
		hl = strlen(dst->host);
		sl = strlen(pat->host);
		if (hl <= sl + 1 || dst->host[hl - sl - 1] != '.' || strcmp(dst->host + hl - sl, pat->host))
			return false;
		rank->kind = 1;
		rank->host_class = 1;
		rank->host_sub = count_labels(pat->host);
		return true;
	}
	}
	return false;
}

int sb_netrank_cmp(const struct sb_netrank *a, const struct sb_netrank *b)
{
	if (a->host_class != b->host_class)
		return a->host_class - b->host_class;
	/* An address range and a domain wildcard are not comparable by size:
	 * leave them equal so the port and then the stricter tier decide. */
	if (a->kind == b->kind && a->host_sub != b->host_sub)
		return a->host_sub - b->host_sub;
	return a->port_class - b->port_class;
}
