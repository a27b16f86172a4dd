/* What the approver commands (pending, approve, deny, watch) share: opening
 * the queue with a CLI error, the reviewer's name, and showing requests to
 * a human (escaped) or to a script (JSON). */
#ifndef SB_APPROVER_H
#define SB_APPROVER_H

#include <stdint.h>
#include <stdio.h>

#include "queue/queue.h"

struct cJSON;

/* Resolves --folder and opens its queue; prints the error and returns the
 * exit status (1) on failure, 0 on success. */
int sb_approver_open(const char *cmd, const char *folder_opt, unsigned flags, struct sb_queue **q);

/* The invoking human: $SUDO_USER when set (sudo sandbox-bpf approve ...),
 * else the user name of the real uid, else "uid:N". */
void sb_approver_reviewer(char out[SB_QUEUE_NAME_MAX + 1]);

/* The request as a block of labelled lines: what, where, process chain,
 * rule and reason, age and time left. Everything from the request is
 * escaped. */
void sb_approver_show(FILE *f, const struct sb_queue_item *it, int64_t now_ms);

/* {"state", "age_seconds", "request", "lease"?, "decision"?} */
struct cJSON *sb_approver_item_json(const struct sb_queue_item *it, int64_t now_ms);

/* "approved ID: what (remember prefix 'git push')" or "denied ID: what". */
void sb_approver_print_decided(FILE *f, const struct sb_queue_request *r, const struct sb_queue_decision *d);

#endif
