/* Events and decisions as JSON lines (the classify command, the hook and
 * the MCP server speak this form). Input is untrusted: every field is
 * checked, unknown fields are errors. */
#ifndef SB_EVENT_JSON_H
#define SB_EVENT_JSON_H

#include <stddef.h>

#include "classify.h"

struct cJSON;

struct sb_event_json {
	struct sb_event ev;
	struct cJSON *doc;	/* owns the strings ev points at */
	const char **argv;
	char host[256];
	struct cJSON *id;	/* the caller's "id", echoed back; may be NULL */
};

int sb_event_from_json(const char *text, size_t len, struct sb_event_json *out, struct sb_err *err);
void sb_event_json_free(struct sb_event_json *e);

/* {"decision","trigger","rule","reason"} plus "id", "enforced":false in
 * audit mode and "remembered":true when a memory decided. */
struct cJSON *sb_decision_to_json(const struct sb_decision *d, const struct cJSON *id);

#endif
