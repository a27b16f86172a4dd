/* One line of `classify` input (untrusted): parse it and decide it
 * against a fixed policy; remembered decisions of every scope are present
 * so their matching code is exercised too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "classify.h"
#include "event_json.h"
#include "policy.h"

static const char *policy_json =
	"{\"version\":1,\"shell\":{\"allow\":[\"git*\",\"/usr/bin/x*\"],\"escalate\":[\"git push*\",\"a?b[cd]*\"]},"
	"\"write\":{\"allow\":[\"./**\"],\"escalate\":[\"**/.env\",\"./s/**/*.k\"]},"
	"\"read\":{\"escalate\":[\"~/.ssh/**\"]},"
	"\"network\":{\"allow\":[\"10.0.0.0/8:1-100\",\"*.x.com\",\"[::1]\"],\"deny\":[\"*:25\",\"1.2.3.4\"]}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p" };
	struct sb_policy *p = NULL;
	struct sb_memory m;
	struct sb_event_json ev;
	struct sb_decision d;
	struct sb_err err;
	char key[SB_EVENT_KEY_MAX];

	if (sb_policy_parse(policy_json, strlen(policy_json), &o, &p, &err))
		abort();
	sb_memory_init(&m);
	sb_memory_add(&m, SB_REM_PREFIX, SB_TRIG_SHELL, "git push", &err);
	sb_memory_add(&m, SB_REM_COMMAND, SB_TRIG_SHELL, "a b c", &err);
	sb_memory_add(&m, SB_REM_DIR, SB_TRIG_READ, "/home/u/.ssh", &err);
	sb_memory_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "x.com:443", &err);
	sb_memory_add(&m, SB_REM_HOST, SB_TRIG_NETWORK, "::1", &err);
	sb_memory_add(&m, SB_REM_ONCE, SB_TRIG_WRITE, "write:open:/p/.env", &err);
	if (sb_event_from_json((const char *)data, size, &ev, &err) == 0) {
		if (sb_classify(p, &m, &ev.ev, &d, &err) == 0) {
			cJSON *out = sb_decision_to_json(&d, ev.id);

			if (d.remembered && d.tier != SB_TIER_ALLOW)
				abort();
			cJSON_Delete(out);
		}
		sb_event_key(p, &ev.ev, key, sizeof(key), &err);
		sb_event_json_free(&ev);
	}
	sb_memory_free(&m);
	sb_policy_free(p);
	return 0;
}
