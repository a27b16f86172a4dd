/* out/<id>.txt: the captured output of an approved privileged command,
 * written by whoever ran it (the MCP server, the approver) and read back
 * into the agent's answer. Same atomic write as everything else, so a
 * reader never sees half an output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "queue_internal.h"

int sb_queue_write_output(struct sb_queue *q, const char *id, const void *data, size_t len, struct sb_err *err)
{
	char name[SBQ_NAME_LEN];
	int rc;

	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	if (len > SB_QUEUE_OUTPUT_MAX)
		return sb_errf(err, -EFBIG, "output of %s is larger than %u bytes; truncate it first", id,
			       SB_QUEUE_OUTPUT_MAX);
	sbq_name(id, ".txt", name);
	return sbq_write_file(q, SBQ_OUT, name, data, len, false, err);
}

int sb_queue_read_output(struct sb_queue *q, const char *id, char **data, size_t *len, struct sb_err *err)
{
	char name[SBQ_NAME_LEN];
	struct sb_err e2 = { { 0 } };
	int rc;

	*data = NULL;
	*len = 0;
	if ((rc = sb_queue_id_check(id, err)))
		return rc;
	sbq_name(id, ".txt", name);
	rc = sbq_read_file(q->dfd[SBQ_OUT], name, SB_QUEUE_OUTPUT_MAX, data, len, &e2);
	if (rc == -ENOENT)
		return sb_errf(err, -ENOENT, "no output for %s", id);
	if (rc == -ELOOP || rc == -EINVAL || rc == -EFBIG) {
		sbq_quarantine(q, SBQ_OUT, name, e2.msg);
		return sb_errf(err, -EBADMSG, "out/%s %s; moved to quarantine", name, e2.msg);
	}
	if (rc)
		return sb_errf(err, rc, "cannot read out/%s: %s", name, e2.msg);
	return 0;
}
