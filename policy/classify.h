/* The four-trigger classifier: (policy, remembered decisions, event) ->
 * decision. Pure: no I/O, no clock, no knowledge of where events come
 * from (kernel broker, Claude Code hook, MCP server, fallbacks). */
#ifndef SB_CLASSIFY_H
#define SB_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netpat.h"
#include "policy.h"

enum sb_event_kind {
	SB_EV_EXEC = 0,
	SB_EV_WRITE = 1,
	SB_EV_READ = 2,
	SB_EV_CONNECT = 3,
};

/* What a write does. Operations that remove or move a directory entry
 * also protect the ancestors of protected paths (renaming .git away would
 * otherwise take .git/hooks with it). */
enum sb_write_op {
	SB_WOP_OPEN = 0, SB_WOP_CREATE, SB_WOP_TRUNCATE, SB_WOP_UNLINK, SB_WOP_RENAME_FROM,
	SB_WOP_RENAME_TO, SB_WOP_LINK, SB_WOP_SYMLINK, SB_WOP_MKDIR, SB_WOP_RMDIR, SB_WOP_MKNOD,
	SB_WOP_CHMOD, SB_WOP_CHOWN, SB_WOP_SETXATTR, SB_WOP_UTIMES, SB_WOP_CONNECT_UNIX,
	SB_WOP__COUNT
};
const char *sb_write_op_name(enum sb_write_op op);
int sb_write_op_parse(const char *s, enum sb_write_op *out);

enum sb_proto {
	SB_PROTO_TCP = 0,
	SB_PROTO_UDP = 1,
};

struct sb_event {
	enum sb_event_kind kind;
	const char *path;		/* exec: executable; write/read: target */
	const char *const *argv;	/* exec */
	size_t argc;
	const char *cwd;		/* base for relative paths */
	enum sb_write_op op;		/* write */
	struct sb_netdst dst;		/* connect */
	enum sb_proto proto;
};

enum sb_remember_scope {
	SB_REM_ONCE = 0,	/* exactly this request (its canonical key) */
	SB_REM_COMMAND,		/* exactly this command line */
	SB_REM_PREFIX,		/* commands starting with these words (two or more) */
	SB_REM_DIR,		/* writes/reads (and executables) under this directory */
	SB_REM_HOST,		/* connections to this host name or address */
};
const char *sb_remember_scope_name(enum sb_remember_scope s);
int sb_remember_scope_parse(const char *s, enum sb_remember_scope *out);

struct sb_remembered {
	enum sb_remember_scope scope;
	enum sb_trigger trigger;
	char *value;		/* key, command, prefix, directory, or host */
	int port;		/* host scope: a port, or -1 for any */
};

struct sb_memory {
	struct sb_remembered *items;
	size_t n, cap;
};

void sb_memory_init(struct sb_memory *m);
void sb_memory_free(struct sb_memory *m);
/* Validates and adds an entry (prefix needs two words, dir an absolute
 * path, host a host name or address with an optional :port). */
int sb_memory_add(struct sb_memory *m, enum sb_remember_scope scope, enum sb_trigger trigger,
		  const char *value, struct sb_err *err);
/* Removes entry i (callers consume "once" entries after use). */
void sb_memory_remove(struct sb_memory *m, size_t i);

#define SB_RULE_NAME_MAX 512
#define SB_REASON_MAX 1024
#define SB_EVENT_KEY_MAX (SB_PATH_MAX + 64)

struct sb_decision {
	enum sb_tier tier;
	enum sb_trigger trigger;
	char rule[SB_RULE_NAME_MAX];	/* the pattern, "default", "protected" or "remembered" */
	char reason[SB_REASON_MAX];
	char subject[SB_PATH_MAX + 8];	/* what was decided: path, command line or host:port */
	const struct sb_rule *matched;	/* NULL for default */
	bool is_default;
	bool is_protected;
	bool remembered;
	long memory_index;		/* the remembered entry used, or -1 */
	bool enforced;			/* false in audit mode */
};

/* Returns 0 and fills d, or a negative errno with err set when the event
 * itself is unusable (relative path without cwd, path too long, exec
 * without path or argv). Callers deny such events. */
int sb_classify(const struct sb_policy *p, const struct sb_memory *mem, const struct sb_event *ev,
		struct sb_decision *d, struct sb_err *err);

/* The canonical key of an event, used by "once" memories and to file the
 * same request once: "exec:<cmdline>", "write:<op>:<path>", "read:<path>",
 * "connect:<proto>:<addr|host>:<port>". */
int sb_event_key(const struct sb_policy *p, const struct sb_event *ev, char *out, size_t out_len,
		 struct sb_err *err);

#endif
