/* .sandbox/remembered.json as found on disk: whatever parses must be
 * usable by the classifier (sb_bmem_to_memory never fails on it), and the
 * kernel-rule safety check must cope with every entry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker_krules.h"
#include "broker/broker_memory.h"

static const char policy_json[] =
	"{\"version\": 1, \"root\": \"/p\", \"shell\": {\"escalate\": [\"git push*\"], \"deny\": [\"sudo*\"]},"
	" \"write\": {\"escalate\": [\"./build/**\"], \"deny\": [\"**/.env\"]},"
	" \"network\": {\"deny\": [\"10.0.0.0/8:22\"]}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sb_policy *p;
	static struct sb_compiled *c;
	struct sb_bmem m;
	struct sb_memory cm;
	struct sb_err err = { { 0 } };
	struct sb_krules k;
	size_t i;

	if (!p) {
		struct sb_policy_opts o = { .home_override = "/home/u" };

		if (sb_policy_parse(policy_json, strlen(policy_json), &o, &p, &err) || sb_policy_compile(p, &c, &err))
			abort();
	}
	if (sb_bmem_parse((const char *)data, size, &m, &err))
		return 0;
	if (sb_bmem_to_memory(&m, &cm, &err))
		abort();	/* parsed means usable */
	sb_memory_free(&cm);
	for (i = 0; i < m.n; i++) {
		char why[256];

		if (sb_krule_check(p, c, &m.e[i], why, sizeof(why)) < 0)
			abort();
	}
	if (sb_krules_compute(p, c, &m, &k) == 0)
		sb_krules_free(&k);
	sb_bmem_free(&m);
	return 0;
}
