/* The effective policy as JSON, and its hash. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_internal.h"

/* A valid policy document (rules as written, root made absolute) that
 * parses back to the same decisions. */
static cJSON *policy_doc(const struct sb_policy *p)
{
	cJSON *doc = cJSON_CreateObject(), *trig;
	int t, tier;

	if (!doc)
		return NULL;
	cJSON_AddNumberToObject(doc, "version", p->version);
	cJSON_AddStringToObject(doc, "mode", p->mode == SB_MODE_AUDIT ? "audit" : "enforce");
	cJSON_AddStringToObject(doc, "root", p->root);
	cJSON_AddNumberToObject(doc, "escalation_timeout_seconds", p->escalation_timeout);
	cJSON_AddStringToObject(doc, "user_namespaces", p->deny_user_namespaces ? "deny" : "allow");
	trig = cJSON_AddObjectToObject(doc, "triggers");
	for (t = 0; t < SB_TRIG_COUNT; t++)
		cJSON_AddStringToObject(trig, sb_trigger_name((enum sb_trigger)t), sb_tier_name(p->defaults[t]));
	for (t = 0; t < SB_TRIG_COUNT; t++) {
		cJSON *section = NULL;

		for (tier = SB_TIER_COUNT - 1; tier >= 0; tier--) {
			cJSON *arr = NULL;
			size_t i;

			for (i = 0; i < p->nrules; i++) {
				const struct sb_rule *r = &p->rules[i];

				if (r->is_protected || (int)r->trigger != t || (int)r->tier != tier)
					continue;
				if (!section)
					section = cJSON_AddObjectToObject(doc, sb_trigger_name((enum sb_trigger)t));
				if (!arr)
					arr = cJSON_AddArrayToObject(section, sb_tier_name((enum sb_tier)tier));
				cJSON_AddItemToArray(arr, cJSON_CreateString(r->text));
			}
		}
	}
	return doc;
}

static cJSON *protected_doc(const struct sb_policy *p)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; arr && i < p->nrules; i++)
		if (p->rules[i].is_protected)
			cJSON_AddItemToArray(arr, cJSON_CreateString(p->rules[i].path.text));
	return arr;
}

cJSON *sb_policy_to_json(const struct sb_policy *p, bool with_protected)
{
	cJSON *out = cJSON_CreateObject(), *warn;
	size_t i;

	if (!out)
		return NULL;
	cJSON_AddStringToObject(out, "source", p->source);
	cJSON_AddStringToObject(out, "hash", p->hash);
	cJSON_AddStringToObject(out, "home", p->home);
	cJSON_AddItemToObject(out, "policy", policy_doc(p));
	if (with_protected) {
		cJSON *prot = cJSON_AddObjectToObject(out, "protected");
		cJSON *w = cJSON_AddObjectToObject(prot, "write");

		cJSON_AddItemToObject(w, "deny", protected_doc(p));
	}
	warn = cJSON_AddArrayToObject(out, "warnings");
	for (i = 0; i < p->nwarnings; i++)
		cJSON_AddItemToArray(warn, cJSON_CreateString(p->warnings[i]));
	return out;
}

int sb_policy_compute_hash(struct sb_policy *p)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	cJSON *doc = cJSON_CreateObject();
	char *text;
	int i;

	if (!doc)
		return -ENOMEM;
	if (sodium_init() < 0) {
		cJSON_Delete(doc);
		return -EIO;
	}
	cJSON_AddItemToObject(doc, "policy", policy_doc(p));
	cJSON_AddItemToObject(doc, "protected", protected_doc(p));
	cJSON_AddStringToObject(doc, "home", p->home);
	text = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	if (!text)
		return -ENOMEM;
	crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
	free(text);
	for (i = 0; i < (int)sizeof(h); i++)
		snprintf(p->hash + 2 * i, 3, "%02x", h[i]);
	return 0;
}
