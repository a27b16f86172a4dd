/* Policy compiler: a validated policy -> flat entries for the kernel maps.
 *
 * Pure and kernel-free (unit-tested natively). The loader resolves paths
 * to (device, inode), host names to addresses, and writes the entries into
 * maps. The kernel then reproduces the classifier's decision:
 *
 * Paths: walking up from the object, the first level with a match decides
 * (deeper literal = more specific). At one level, exact/subtree/name
 * entries beat a name glob; ties go to the stricter tier (merged here).
 * Commands: longest literal prefix wins (LPM trie over the command line).
 * Network: longest prefix wins, then the most specific port (flattened
 * here into per-prefix port segments, so one LPM lookup + a bounded scan
 * decides). Patterns the kernel cannot express exactly are marked so the
 * loader expands them (paths) or userspace refines them (commands). */
#ifndef SB_COMPILE_H
#define SB_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

enum sb_cpath_kind {
	SB_CPATH_EXACT = 0,	/* path: this object only */
	SB_CPATH_SUBTREE,	/* path: this directory and everything below */
	SB_CPATH_NAME,		/* name: final component == name, anywhere */
	SB_CPATH_NAME_SUBTREE,	/* name: a component == name: it and everything below */
	SB_CPATH_NAME_GLOB,	/* name: final component matches prefix*suffix, anywhere */
	SB_CPATH_CHILD_GLOB,	/* path + name: a child of path matching prefix*suffix */
	SB_CPATH_GLOB,		/* other wildcards: path = literal prefix dir, expand pattern */
};

struct sb_cpath {
	enum sb_trigger trigger;	/* SB_TRIG_WRITE or SB_TRIG_READ */
	enum sb_tier tier;
	enum sb_cpath_kind kind;
	char *path;		/* absolute literal path (EXACT, SUBTREE, CHILD_GLOB, GLOB) */
	char *name;		/* NAME*, CHILD_GLOB: literal name or single-'*' glob */
	char *glob_prefix;	/* NAME_GLOB, CHILD_GLOB: text before '*' */
	char *glob_suffix;	/* NAME_GLOB, CHILD_GLOB: text after '*' */
	const char *pattern;	/* the expanded pattern (owned by the policy) */
	bool is_protected;
	size_t rule_index;	/* into policy->rules */
};

struct sb_cshell {
	enum sb_tier tier;
	char *prefix;		/* literal prefix, unescaped */
	bool exact;		/* no wildcard: the whole command line must equal prefix */
	bool fullpath;		/* matches the executable path, not its basename */
	bool argv_level;	/* needs the arguments (exact, or prefix has a space) */
	bool refine;		/* wildcards other than one trailing '*': userspace decides */
	size_t rule_index;
};

#define SB_NET_MAX_SEGS 32

struct sb_cnet_seg {
	uint16_t lo, hi;	/* inclusive port range */
	enum sb_tier tier;
	size_t rule_index;
};

/* One LPM entry: for addresses under family/addr/prefix and not under a
 * longer entry, the port decides which segment applies; a port in no
 * segment falls to the network default. */
struct sb_cnet {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint8_t prefix;
	size_t nseg;
	struct sb_cnet_seg seg[SB_NET_MAX_SEGS];
};

/* Host-name rules: the kernel sees addresses only; the loader resolves
 * exact names and adds them as exact addresses. Subdomain wildcards cannot
 * be resolved and are decided in userspace from events. */
struct sb_chost {
	enum sb_tier tier;
	const char *host;	/* owned by the policy */
	bool subdomains;
	bool any_port;
	uint16_t port_lo, port_hi;
	size_t rule_index;
};

struct sb_compiled {
	enum sb_mode mode;
	enum sb_tier defaults[SB_TRIG_COUNT];
	bool deny_user_namespaces;
	struct sb_cpath *paths;
	size_t npaths;
	struct sb_cshell *shell;
	size_t nshell;
	struct sb_cnet *net;
	size_t nnet;
	struct sb_chost *hosts;
	size_t nhosts;
	char hash[65];
};

int sb_policy_compile(const struct sb_policy *p, struct sb_compiled **out, struct sb_err *err);
void sb_compiled_free(struct sb_compiled *c);
const char *sb_cpath_kind_name(enum sb_cpath_kind k);

/* Looks up like the kernel does (for tests and for userspace mirrors):
 * returns the tier for addr:port, or the default when nothing matches. */
enum sb_tier sb_compiled_net_decide(const struct sb_compiled *c, int family, const uint8_t *addr, uint16_t port,
				    long *rule_index);
/* Longest-literal-prefix decision over the compiled shell entries for one
 * command line (as the kernel's LPM trie does); refine entries count like
 * the others and are reported through *refine. */
enum sb_tier sb_compiled_shell_decide(const struct sb_compiled *c, const char *cmdline, bool *refine,
				      long *rule_index);

#endif
