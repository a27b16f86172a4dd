#include "event_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SB_EVENT_MAX_BYTES (256u << 10)
#define SB_EVENT_MAX_ARGS 4096

static const char *const event_keys[] = {
	"id", "kind", "path", "argv", "cwd", "op", "addr", "port", "proto", "host", NULL,
};

static int opt_string(const cJSON *doc, const char *key, const char **out, struct sb_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return sb_errf(err, -EINVAL, "\"%s\" must be a string", key);
	*out = v->valuestring;
	return 0;
}

int sb_event_from_json(const char *text, size_t len, struct sb_event_json *e, struct sb_err *err)
{
	const cJSON *it, *v;
	const char *kind, *s;
	char *copy;
	int rc;

	memset(e, 0, sizeof(*e));
	if (len > SB_EVENT_MAX_BYTES)
		return sb_errf(err, -EFBIG, "event line longer than %u bytes", SB_EVENT_MAX_BYTES);
	if (memchr(text, '\0', len))
		return sb_errf(err, -EINVAL, "event line contains a NUL byte");
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	e->doc = cJSON_ParseWithOpts(copy, NULL, 1);
	free(copy);
	if (!e->doc)
		return sb_errf(err, -EINVAL, "not valid JSON");
	if (!cJSON_IsObject(e->doc)) {
		rc = sb_errf(err, -EINVAL, "expected a JSON object");
		goto fail;
	}
	cJSON_ArrayForEach(it, e->doc) {
		const char *const *k;
		const cJSON *o;

		for (k = event_keys; *k && strcmp(*k, it->string); k++)
			;
		if (!*k) {
			rc = sb_errf(err, -EINVAL, "unknown field \"%s\"", it->string);
			goto fail;
		}
		for (o = it->next; o; o = o->next) {
			if (!strcmp(o->string, it->string)) {
				rc = sb_errf(err, -EINVAL, "duplicate field \"%s\"", it->string);
				goto fail;
			}
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(e->doc, "id");
	if (v) {
		if (!cJSON_IsString(v) && !cJSON_IsNumber(v)) {
			rc = sb_errf(err, -EINVAL, "\"id\" must be a string or a number");
			goto fail;
		}
		e->id = cJSON_Duplicate(v, 1);
	}
	if ((rc = opt_string(e->doc, "kind", &kind, err)))
		goto fail;
	if (!kind) {
		rc = sb_errf(err, -EINVAL, "missing \"kind\" (exec, write, read or connect)");
		goto fail;
	}
	if (!strcmp(kind, "exec"))
		e->ev.kind = SB_EV_EXEC;
	else if (!strcmp(kind, "write"))
		e->ev.kind = SB_EV_WRITE;
	else if (!strcmp(kind, "read"))
		e->ev.kind = SB_EV_READ;
	else if (!strcmp(kind, "connect"))
		e->ev.kind = SB_EV_CONNECT;
	else {
		rc = sb_errf(err, -EINVAL, "unknown kind \"%s\"; expected exec, write, read or connect", kind);
		goto fail;
	}
	if ((rc = opt_string(e->doc, "path", &e->ev.path, err)) || (rc = opt_string(e->doc, "cwd", &e->ev.cwd, err)))
		goto fail;
	if (e->ev.cwd && e->ev.cwd[0] != '/') {
		rc = sb_errf(err, -EINVAL, "\"cwd\" must be an absolute path");
		goto fail;
	}

	v = cJSON_GetObjectItemCaseSensitive(e->doc, "argv");
	if (v) {
		int n = cJSON_GetArraySize(v), i = 0;

		if (!cJSON_IsArray(v) || n > SB_EVENT_MAX_ARGS) {
			rc = sb_errf(err, -EINVAL, "\"argv\" must be an array of at most %d strings", SB_EVENT_MAX_ARGS);
			goto fail;
		}
		e->argv = calloc((size_t)n + 1, sizeof(*e->argv));
		if (!e->argv) {
			rc = -ENOMEM;
			goto fail;
		}
		cJSON_ArrayForEach(it, v) {
			if (!cJSON_IsString(it)) {
				rc = sb_errf(err, -EINVAL, "\"argv\"[%d] must be a string", i);
				goto fail;
			}
			e->argv[i++] = it->valuestring;
		}
		e->ev.argv = e->argv;
		e->ev.argc = (size_t)n;
	}

	if ((rc = opt_string(e->doc, "op", &s, err)))
		goto fail;
	if (s) {
		if (e->ev.kind != SB_EV_WRITE) {
			rc = sb_errf(err, -EINVAL, "\"op\" is only for write events");
			goto fail;
		}
		if (sb_write_op_parse(s, &e->ev.op)) {
			rc = sb_errf(err, -EINVAL, "unknown write op \"%s\"", s);
			goto fail;
		}
	}

	if ((rc = opt_string(e->doc, "addr", &s, err)))
		goto fail;
	if (s && sb_netaddr_parse(s, &e->ev.dst)) {
		rc = sb_errf(err, -EINVAL, "\"addr\" '%s' is not an IPv4 or IPv6 address", s);
		goto fail;
	}
	if ((rc = opt_string(e->doc, "host", &s, err)))
		goto fail;
	if (s) {
		if (sb_hostname_canon(s, e->host, sizeof(e->host))) {
			rc = sb_errf(err, -EINVAL, "\"host\" '%s' is not a valid host name", s);
			goto fail;
		}
		e->ev.dst.host = e->host;
	}
	v = cJSON_GetObjectItemCaseSensitive(e->doc, "port");
	if (v) {
		if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 65535) ||
		    v->valuedouble != (double)(int)v->valuedouble) {
			rc = sb_errf(err, -EINVAL, "\"port\" must be a whole number from 0 to 65535");
			goto fail;
		}
		e->ev.dst.port = (uint16_t)v->valuedouble;
	}
	if ((rc = opt_string(e->doc, "proto", &s, err)))
		goto fail;
	if (s) {
		if (!strcmp(s, "tcp"))
			e->ev.proto = SB_PROTO_TCP;
		else if (!strcmp(s, "udp"))
			e->ev.proto = SB_PROTO_UDP;
		else {
			rc = sb_errf(err, -EINVAL, "\"proto\" must be \"tcp\" or \"udp\"");
			goto fail;
		}
	}
	if (e->ev.kind == SB_EV_CONNECT) {
		if (!e->ev.dst.has_addr && !e->ev.dst.host) {
			rc = sb_errf(err, -EINVAL, "a connect event needs \"addr\" or \"host\"");
			goto fail;
		}
		if (!v) {
			rc = sb_errf(err, -EINVAL, "a connect event needs \"port\"");
			goto fail;
		}
	} else if (e->ev.dst.has_addr || e->ev.dst.host || v) {
		rc = sb_errf(err, -EINVAL, "\"addr\", \"host\" and \"port\" are only for connect events");
		goto fail;
	}
	return 0;
fail:
	sb_event_json_free(e);
	return rc;
}

void sb_event_json_free(struct sb_event_json *e)
{
	cJSON_Delete(e->doc);
	cJSON_Delete(e->id);
	free(e->argv);
	memset(e, 0, sizeof(*e));
}

cJSON *sb_decision_to_json(const struct sb_decision *d, const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (id)
		cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
	cJSON_AddStringToObject(o, "decision", sb_tier_name(d->tier));
	cJSON_AddStringToObject(o, "trigger", sb_trigger_name(d->trigger));
	cJSON_AddStringToObject(o, "rule", d->rule);
	cJSON_AddStringToObject(o, "reason", d->reason);
	if (!d->enforced)
		cJSON_AddBoolToObject(o, "enforced", 0);
	if (d->remembered)
		cJSON_AddBoolToObject(o, "remembered", 1);
	return o;
}
