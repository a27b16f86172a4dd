/* srt settings files are untrusted input to policy import-srt. */
#include <stdint.h>
#include <stdlib.h>
#include <cjson/cJSON.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *out = NULL;
	struct sb_err err;

	if (sb_srt_to_policy_json((const char *)data, size, "fuzz", &out, &err) == 0)
		cJSON_Delete(out);
	return 0;
}
