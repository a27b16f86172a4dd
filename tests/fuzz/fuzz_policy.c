/* Policy files are untrusted input: parse, and when valid, compile,
 * print and re-parse (the round trip must keep the hash), and classify a
 * few events. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "classify.h"
#include "compile.h"
#include "event_json.h"
#include "policy.h"

static const char *const events[] = {
	"{\"kind\":\"exec\",\"path\":\"/usr/bin/git\",\"argv\":[\"git\",\"push\",\"origin\"],\"cwd\":\"/p\"}",
	"{\"kind\":\"write\",\"path\":\"/p/.sandbox/x\",\"op\":\"rename-from\"}",
	"{\"kind\":\"read\",\"path\":\"/home/u/.ssh/id_rsa\"}",
	"{\"kind\":\"connect\",\"addr\":\"::ffff:10.1.2.3\",\"port\":443,\"host\":\"a.example.com\"}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p", .source_name = "fuzz" };
	struct sb_policy *p = NULL, *q = NULL;
	struct sb_compiled *c = NULL;
	struct sb_err err;
	size_t i;

	if (sb_policy_parse((const char *)data, size, &o, &p, &err))
		return 0;
	if (sb_policy_compile(p, &c, &err) == 0)
		sb_compiled_free(c);
	{
		cJSON *doc = sb_policy_to_json(p, true);
		char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "policy"));

		if (text && sb_policy_parse(text, strlen(text), &o, &q, &err) == 0) {
			if (strcmp(p->hash, q->hash))
				abort();
			sb_policy_free(q);
		}
		free(text);
		cJSON_Delete(doc);
	}
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct sb_event_json ev;
		struct sb_decision d;

		if (sb_event_from_json(events[i], strlen(events[i]), &ev, &err) == 0) {
			if (sb_classify(p, NULL, &ev.ev, &d, &err) == 0 && d.tier > SB_TIER_DENY)
				abort();
			sb_event_json_free(&ev);
		}
	}
	sb_policy_free(p);
	return 0;
}
