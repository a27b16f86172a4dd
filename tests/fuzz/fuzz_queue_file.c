/* A file found in the queue (untrusted): parse it as a request, a done
 * file (request + decision) and a lease. Whatever parses must survive a
 * round trip unchanged (serialise, parse, serialise again: same text), and
 * the display and remember helpers must cope with every field. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "queue/queue.h"

static char *print(cJSON *j)
{
	char *s = j ? cJSON_Print(j) : NULL;

	cJSON_Delete(j);
	if (!s)
		abort();
	return s;
}

static void exercise_request(const struct sb_queue_request *r)
{
	char buf[512], small[8], v[SB_PATH_MAX + 1];
	int s;

	sb_queue_request_what(r, buf, sizeof(buf));
	sb_queue_escape(buf, small, sizeof(small));
	sb_queue_escape(r->reason, buf, sizeof(buf));
	sb_queue_format_age(sb_queue_now_ms() - r->created_ms, small, sizeof(small));
	for (s = SB_REM_ONCE; s <= SB_REM_HOST; s++) {
		struct sb_queue_decision d;

		memset(&d, 0, sizeof(d));
		d.verdict = SB_QV_ALLOW;
		d.remember = true;
		d.scope = (enum sb_remember_scope)s;
		strcpy(d.reviewer, "fuzz");
		sb_queue_remember_default(r, d.scope, v, sizeof(v), NULL);
		if (sb_queue_decision_check(r, &d, NULL) == 0 && !d.remember_value[0])
			abort();	/* a checked remember always has a value */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct sb_queue_request r, r2;
	struct sb_queue_decision d, d2;
	struct sb_queue_lease l, l2;
	struct sb_err err;
	char id[SB_QUEUE_ID_MAX + 1], id2[SB_QUEUE_ID_MAX + 1];
	char *a, *b;

	if (sb_queue_request_parse(text, size, &r, &err) == 0) {
		if (!sb_queue_id_valid(r.id))
			abort();
		exercise_request(&r);
		a = print(sb_queue_request_to_json(&r));
		if (sb_queue_request_parse(a, strlen(a), &r2, &err))
			abort();	/* we wrote something we cannot read */
		b = print(sb_queue_request_to_json(&r2));
		if (strcmp(a, b))
			abort();
		free(a);
		free(b);
		sb_queue_request_free(&r2);
		sb_queue_request_free(&r);
	}
	if (sb_queue_done_parse(text, size, &r, &d, &err) == 0) {
		exercise_request(&r);
		a = print(sb_queue_done_to_json(&r, &d));
		if (sb_queue_done_parse(a, strlen(a), &r2, &d2, &err))
			abort();
		b = print(sb_queue_done_to_json(&r2, &d2));
		if (strcmp(a, b))
			abort();
		free(a);
		free(b);
		sb_queue_request_free(&r2);
		sb_queue_request_free(&r);
	}
	if (sb_queue_lease_parse(text, size, id, &l, &err) == 0) {
		a = print(sb_queue_lease_to_json(id, &l));
		if (sb_queue_lease_parse(a, strlen(a), id2, &l2, &err) || strcmp(id, id2))
			abort();
		b = print(sb_queue_lease_to_json(id2, &l2));
		if (strcmp(a, b))
			abort();
		free(a);
		free(b);
	}
	/* Names and ids come from directory listings and users. */
	if (size <= 128) {
		char name[130];
		struct sb_queue_request rq;

		memcpy(name, data, size);
		name[size] = '\0';
		if (sb_queue_id_valid(name) && (strchr(name, '/') || strstr(name, "..") || name[0] == '-'))
			abort();
		memset(&rq, 0, sizeof(rq));
		rq.kind = SB_EV_EXEC;
		rq.command = name;
		exercise_request(&rq);
	}
	return 0;
}
