/* Network rule entries: addresses, CIDRs, host names, ports. */
#ifndef SB_NETPAT_H
#define SB_NETPAT_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

/* A destination as the classifier sees it. */
struct sb_netdst {
	bool has_addr;
	int family;		/* AF_INET or AF_INET6; v4-mapped v6 is stored as AF_INET */
	uint8_t addr[16];
	uint16_t port;
	const char *host;	/* lower case, no trailing dot; NULL when unknown */
};

int sb_netpat_compile(const char *entry, struct sb_netpat *pat, struct sb_err *err);
void sb_netpat_free(struct sb_netpat *pat);

/* Parses an address ("1.2.3.4", "::1", "::ffff:1.2.3.4") into dst,
 * unmapping IPv4-mapped IPv6. Returns 0 or -EINVAL. */
int sb_netaddr_parse(const char *s, struct sb_netdst *dst);

/* Match rank, larger is more specific; see docs/policy.md. */
struct sb_netrank {
	int host_class;		/* 0 any, 1 range or subdomain wildcard, 2 exact */
	int kind;		/* 0 address, 1 name */
	int host_sub;		/* prefix length or number of labels */
	int port_class;		/* 0 any, 1 range, 2 single port */
};

/* Returns false when the entry does not match dst. */
bool sb_netpat_match(const struct sb_netpat *pat, const struct sb_netdst *dst,
		     struct sb_netrank *rank);
/* <0, 0, >0 like strcmp: how a's specificity compares to b's. */
int sb_netrank_cmp(const struct sb_netrank *a, const struct sb_netrank *b);

/* Lower-cases and strips one trailing dot into out; -EINVAL if invalid. */
int sb_hostname_canon(const char *in, char *out, size_t out_len);

#endif
