/* Remembered decisions on disk: FOLDER/.sandbox/remembered.json, what
 * approvers asked to remember ("approve --remember prefix"). Loaded at
 * broker start and on reload, written atomically (temp file in
 * .sandbox/tmp, fsync, rename, fsync of the directory) after every
 * change, read-modify-write under a lock shared by every broker of the
 * folder (sb_bmem_add_saved, sb_bmem_take_once). Everything under
 * .sandbox/ is protected from the agent by the kernel, so only the broker
 * (and a human) writes it.
 *
 *   {"version": 1, "remembered": [
 *     {"scope": "prefix", "trigger": "shell", "value": "git push",
 *      "reviewer": "alice", "request": "2025...", "created_at": "2025-03-14T15:31:02.000Z"}]}
 *
 * Every entry is validated by the classifier's own sb_memory_add (values
 * are stored canonical), so a file that loads is one the classifier can
 * use; a file that does not is an error, never silently ignored. */
#ifndef SB_BROKER_MEMORY_H
#define SB_BROKER_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "classify.h"
#include "queue/queue.h"
#include "sb_err.h"

struct sb_bmem_entry {
	enum sb_remember_scope scope;
	enum sb_trigger trigger;
	char *value;			/* canonical */
	char reviewer[SB_QUEUE_NAME_MAX + 1];
	char request[SB_QUEUE_ID_MAX + 1];	/* the request it was given for ("" unknown) */
	int64_t created_ms;
};

struct sb_bmem {
	struct sb_bmem_entry *e;
	size_t n, cap;
};

void sb_bmem_init(struct sb_bmem *m);
void sb_bmem_free(struct sb_bmem *m);

/* Loads FOLDER/.sandbox/remembered.json; a missing file is an empty list. */
int sb_bmem_load(const char *folder, struct sb_bmem *m, struct sb_err *err);
/* Parses the file's text (exposed for tests and fuzzing). */
int sb_bmem_parse(const char *text, size_t len, struct sb_bmem *m, struct sb_err *err);
/* Writes the list atomically. */
int sb_bmem_save(const char *folder, const struct sb_bmem *m, struct sb_err *err);

/* Adds an entry (validated and canonicalised); an identical entry (scope,
 * trigger, value) is not added twice: *added says whether it was. */
int sb_bmem_add(struct sb_bmem *m, enum sb_remember_scope scope, enum sb_trigger trigger, const char *value,
		const char *reviewer, const char *request, int64_t created_ms, bool *added, struct sb_err *err);
void sb_bmem_remove(struct sb_bmem *m, size_t i);

/* Changes shared with other brokers of the folder: under a lock on
 * FOLDER/.sandbox/remembered.lock, the file is read, changed and written
 * back, and *m becomes the file's list (*changed: it differs from the old
 * *m). On an error *m is unchanged.
 *
 * sb_bmem_add_saved: adds an entry (as sb_bmem_add).
 * sb_bmem_take_once: uses up a remembered once; -ENOENT when it is no
 * longer in the file (another broker used it): it must not be used. */
int sb_bmem_add_saved(const char *folder, struct sb_bmem *m, enum sb_remember_scope scope, enum sb_trigger trigger,
		      const char *value, const char *reviewer, const char *request, int64_t created_ms, bool *changed,
		      struct sb_err *err);
int sb_bmem_take_once(const char *folder, struct sb_bmem *m, enum sb_trigger trigger, const char *value,
		      bool *changed, struct sb_err *err);

/* The classifier's view (entries in the same order: index i is entry i). */
int sb_bmem_to_memory(const struct sb_bmem *m, struct sb_memory *out, struct sb_err *err);

#endif
