/* The policy: what the agent may do, per trigger, per tier.
 *
 * A policy is parsed from JSON (docs/policy.md), validated completely, and
 * then immutable. Protections are injected at load and cannot be removed.
 * Nothing here touches the kernel or the filesystem beyond reading the
 * policy file and resolving root/home with realpath when they exist. */
#ifndef SB_POLICY_H
#define SB_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sb_err.h"

/* Ordered from least to most strict: a larger value is stricter. */
enum sb_tier {
	SB_TIER_ALLOW = 0,
	SB_TIER_OBSERVE = 1,
	SB_TIER_ESCALATE = 2,
	SB_TIER_DENY = 3,
};
#define SB_TIER_COUNT 4

enum sb_trigger {
	SB_TRIG_SHELL = 0,
	SB_TRIG_WRITE = 1,
	SB_TRIG_NETWORK = 2,
	SB_TRIG_READ = 3,
};
#define SB_TRIG_COUNT 4

enum sb_mode {
	SB_MODE_ENFORCE = 0,
	SB_MODE_AUDIT = 1,
};

const char *sb_tier_name(enum sb_tier t);
int sb_tier_parse(const char *s, enum sb_tier *out);
const char *sb_trigger_name(enum sb_trigger t);
int sb_trigger_parse(const char *s, enum sb_trigger *out);
static inline enum sb_tier sb_tier_stricter(enum sb_tier a, enum sb_tier b)
{
	return a > b ? a : b;
}

/* ---- patterns ---------------------------------------------------------- */

#define SB_PATH_MAX 4096

/* A path pattern after expansion of ~ and root: absolute ("/p/src/ **") or
 * anchored anywhere ("**" first). Components are kept split for matching. */
struct sb_pathpat {
	char *text;		/* expanded, normalised pattern */
	char **comps;		/* components; "**" is the any-depth wildcard */
	bool *literal;		/* comps[i] has no wildcard */
	size_t ncomps;
};

/* A shell pattern: a glob over the command line (argv joined by spaces,
 * argv[0] reduced to its basename, or the full executable path when the
 * pattern's first word contains '/'). */
struct sb_shellpat {
	char *text;
	bool fullpath;
	size_t literal_prefix;	/* literal characters before the first wildcard */
};

enum sb_net_kind {
	SB_NET_ANY = 0,		/* "*": any address and any host name */
	SB_NET_IP = 1,		/* address or CIDR */
	SB_NET_HOST = 2,	/* exact host name */
	SB_NET_DOMAIN = 3,	/* "*.example.com": strict subdomains */
};

struct sb_netpat {
	enum sb_net_kind kind;
	int family;		/* AF_INET or AF_INET6 for SB_NET_IP */
	uint8_t addr[16];	/* network address, 4 bytes used for AF_INET */
	uint8_t prefix;		/* prefix length in bits */
	char *host;		/* lower case; for DOMAIN the suffix without "*." */
	uint16_t port_lo, port_hi;	/* 0..65535 when any port */
	bool any_port;
};

struct sb_rule {
	enum sb_trigger trigger;
	enum sb_tier tier;
	char *text;		/* the pattern as written in the policy */
	char *where;		/* JSON path, e.g. $.write.allow[0] */
	bool is_protected;	/* injected protection: cannot be overridden */
	union {
		struct sb_pathpat path;
		struct sb_shellpat shell;
		struct sb_netpat net;
	};
};

struct sb_policy {
	int version;
	enum sb_mode mode;
	char *root;		/* absolute, normalised project folder */
	char *home;		/* absolute, normalised home of the agent user */
	unsigned escalation_timeout;
	bool deny_user_namespaces;
	enum sb_tier defaults[SB_TRIG_COUNT];
	struct sb_rule *rules;	/* all triggers; protections first */
	size_t nrules;
	char *source;		/* file name, "<default>" or "srt:FILE" */
	char hash[65];		/* sha256 (hex) of the effective policy */
	char **warnings;	/* non-fatal remarks from validation */
	size_t nwarnings;
};

struct sb_policy_opts {
	const char *root_override;	/* --root: replaces the policy's root */
	const char *home_override;	/* --home: replaces $HOME */
	const char *base_dir;		/* for a relative root; default: file's project folder */
	const char *source_name;	/* for messages */
};

/* Parses and validates. On error *out is NULL and err names the file, the
 * line and column (syntax) or the JSON path (validation) and what was
 * expected. A policy is never partly accepted. */
int sb_policy_parse(const char *json, size_t len, const struct sb_policy_opts *opts,
		    struct sb_policy **out, struct sb_err *err);
int sb_policy_load_file(const char *path, const struct sb_policy_opts *opts,
			struct sb_policy **out, struct sb_err *err);
int sb_policy_load_default(const struct sb_policy_opts *opts, struct sb_policy **out,
			   struct sb_err *err);
/* Anthropic srt settings (JSON): mapped to a policy (docs/policy.md). */
int sb_policy_load_srt(const char *path, const struct sb_policy_opts *opts,
		       struct sb_policy **out, struct sb_err *err);
void sb_policy_free(struct sb_policy *p);
/* Appends a rule after the file's rules (indexes and hash unchanged): the
 * broker's remembered decisions enforced in the kernel. */
int sb_policy_append_rule(struct sb_policy *p, enum sb_trigger trigger, enum sb_tier tier, const char *text,
			  const char *where, struct sb_err *err);

struct cJSON;
/* The effective policy as JSON (rules as written, expanded root and home,
 * protections listed separately when with_protected). */
struct cJSON *sb_policy_to_json(const struct sb_policy *p, bool with_protected);
/* srt settings JSON -> policy JSON text (for policy import-srt). */
int sb_srt_to_policy_json(const char *srt_json, size_t len, const char *source,
			  struct cJSON **out, struct sb_err *err);

extern const char sb_default_policy_json[];

/* The protected write patterns, relative to root; see docs/policy.md. */
extern const char *const sb_protected_patterns[];

#endif
