#include <errno.h>
#include <string.h>

#include "policy.h"

static const char *const tier_names[SB_TIER_COUNT] = { "allow", "observe", "escalate", "deny" };
static const char *const trigger_names[SB_TRIG_COUNT] = { "shell", "write", "network", "read" };

const char *sb_tier_name(enum sb_tier t)
{
	return (unsigned)t < SB_TIER_COUNT ? tier_names[t] : "?";
}

int sb_tier_parse(const char *s, enum sb_tier *out)
{
	int i;

	for (i = 0; i < SB_TIER_COUNT; i++) {
		if (!strcmp(s, tier_names[i])) {
			*out = (enum sb_tier)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sb_trigger_name(enum sb_trigger t)
{
	return (unsigned)t < SB_TRIG_COUNT ? trigger_names[t] : "?";
}

int sb_trigger_parse(const char *s, enum sb_trigger *out)
{
	int i;

	for (i = 0; i < SB_TRIG_COUNT; i++) {
		if (!strcmp(s, trigger_names[i])) {
			*out = (enum sb_trigger)i;
			return 0;
		}
	}
	return -EINVAL;
}
