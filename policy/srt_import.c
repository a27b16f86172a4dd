/* Anthropic sandbox-runtime (srt) settings -> sandbox-bpf policy.
 *
 * srt's meaning is kept: hosts outside allowedDomains are asked about
 * (denied with strictAllowlist), writes outside allowWrite are denied,
 * srt's built-in write protections are carried over as deny rules, and
 * a path entry covers the path and everything under it. Settings with no
 * equivalent are reported as warnings; misspelled keys are errors, since a
 * dropped rule would be silent. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pathpat.h"
#include "policy.h"
#include "policy_internal.h"

static const char *const srt_top_mapped[] = { "network", "filesystem", NULL };
static const char *const srt_top_ignored[] = {
	"credentials", "ignoreViolations", "enableWeakerNestedSandbox", "enableWeakerNetworkIsolation",
	"ripgrep", "mandatoryDenySearchDepth", "allowPty", "seccomp", "git", "windows", "$schema", NULL,
};
static const char *const srt_net_mapped[] = { "allowedDomains", "deniedDomains", "strictAllowlist", NULL };
static const char *const srt_net_ignored[] = {
	"deniedDomainReasons", "allowUnixSockets", "allowAllUnixSockets", "allowLocalBinding",
	"allowMachLookup", "httpProxyPort", "socksProxyPort", "mitmProxy", "tlsTerminate", "parentProxy", NULL,
};
static const char *const srt_fs_mapped[] = { "denyRead", "allowRead", "allowWrite", "denyWrite",
					     "allowGitConfig", "disabled", NULL };

/* srt's mandatory write protections (relative to the working directory
 * unless they start with ~). */
static const char *const srt_mandatory_write_deny[] = {
	"~/.bashrc", "~/.bash_profile", "~/.zshrc", "~/.zprofile", "~/.profile", "~/.gitconfig",
	"./.gitmodules", "./.ripgreprc", "./.vscode/**", "./.idea/**", "./.claude/commands/**",
	"./.claude/agents/**", NULL,
};

static bool in_list(const char *k, const char *const *l)
{
	for (; *l; l++)
		if (!strcmp(k, *l))
			return true;
	return false;
}

static int check_keys(const cJSON *obj, const char *where, const char *const *mapped,
		      const char *const *ignored, cJSON *warnings, struct sb_err *err)
{
	const cJSON *it;
	char msg[512];

	cJSON_ArrayForEach(it, obj) {
		if (in_list(it->string, mapped))
			continue;
		if (ignored && in_list(it->string, ignored)) {
			snprintf(msg, sizeof(msg), "%s.%s has no equivalent in sandbox-bpf and was not imported", where,
				 it->string);
			cJSON_AddItemToArray(warnings, cJSON_CreateString(msg));
			continue;
		}
		return sb_errf(err, -EINVAL, "%s.%s: unknown srt setting (misspelled?)", where, it->string);
	}
	return 0;
}

static cJSON *section(cJSON *doc, const char *trig, const char *tier)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, trig), *a;

	if (!s)
		s = cJSON_AddObjectToObject(doc, trig);
	a = cJSON_GetObjectItemCaseSensitive(s, tier);
	if (!a)
		a = cJSON_AddArrayToObject(s, tier);
	return a;
}

/* An srt path is a prefix: it covers itself and everything below. */
static char *srt_path_to_pattern(const char *p)
{
	size_t len = strlen(p);
	char *out;

	if (sb_glob_has_wildcard(p))
		return strdup(p);
	out = malloc(len + 5);
	if (!out)
		return NULL;
	if (!strcmp(p, ".") || !strcmp(p, "./"))
		strcpy(out, "./**");
	else if (!strcmp(p, "~") || !strcmp(p, "~/"))
		strcpy(out, "~/**");
	else if (!strcmp(p, "/"))
		strcpy(out, "/**");
	else {
		strcpy(out, p);
		while (len > 1 && out[len - 1] == '/')
			out[--len] = '\0';
		strcat(out, "/**");
	}
	return out;
}

static int copy_strings(const cJSON *arr, const char *where, cJSON *dst, bool paths, struct sb_err *err)
{
	const cJSON *it;
	int i = 0;

	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return sb_errf(err, -EINVAL, "%s: expected an array of strings", where);
	cJSON_ArrayForEach(it, arr) {
		char *v;

		if (!cJSON_IsString(it) || !it->valuestring[0])
			return sb_errf(err, -EINVAL, "%s[%d]: expected a non-empty string", where, i);
		v = paths ? srt_path_to_pattern(it->valuestring) : strdup(it->valuestring);
		if (!v)
			return -ENOMEM;
		cJSON_AddItemToArray(dst, cJSON_CreateString(v));
		free(v);
		i++;
	}
	return 0;
}

int sb_srt_to_policy_json(const char *srt_json, size_t len, const char *source, cJSON **out,
			  struct sb_err *err)
{
	cJSON *in, *doc = NULL, *warnings, *result, *triggers;
	const cJSON *net, *fs, *v;
	const char *const *m;
	bool strict = false, git_config_ok = false;
	char *copy;
	int rc;

	*out = NULL;
	copy = strndup(srt_json, len);
	if (!copy)
		return -ENOMEM;
	if (strlen(copy) != len) {
		free(copy);
		return sb_errf(err, -EINVAL, "%s: contains a NUL byte", source);
	}
	in = cJSON_ParseWithOpts(copy, NULL, 1);
	free(copy);
	if (!in)
		return sb_errf(err, -EINVAL, "%s: not valid JSON", source);
	result = cJSON_CreateObject();
	warnings = cJSON_AddArrayToObject(result, "warnings");
	if (!cJSON_IsObject(in)) {
		rc = sb_errf(err, -EINVAL, "%s: expected a JSON object", source);
		goto fail;
	}
	if ((rc = check_keys(in, "$", srt_top_mapped, srt_top_ignored, warnings, err)))
		goto fail;
	net = cJSON_GetObjectItemCaseSensitive(in, "network");
	fs = cJSON_GetObjectItemCaseSensitive(in, "filesystem");
	if ((net && !cJSON_IsObject(net)) || (fs && !cJSON_IsObject(fs))) {
		rc = sb_errf(err, -EINVAL, "%s: \"network\" and \"filesystem\" must be objects", source);
		goto fail;
	}

	doc = cJSON_AddObjectToObject(result, "policy");
	cJSON_AddNumberToObject(doc, "version", 1);
	cJSON_AddStringToObject(doc, "root", ".");
	triggers = cJSON_AddObjectToObject(doc, "triggers");

	if (net) {
		if ((rc = check_keys(net, "$.network", srt_net_mapped, srt_net_ignored, warnings, err)))
			goto fail;
		v = cJSON_GetObjectItemCaseSensitive(net, "strictAllowlist");
		if (v && !cJSON_IsBool(v)) {
			rc = sb_errf(err, -EINVAL, "$.network.strictAllowlist: expected true or false");
			goto fail;
		}
		strict = v && cJSON_IsTrue(v);
		if ((rc = copy_strings(cJSON_GetObjectItemCaseSensitive(net, "allowedDomains"),
				       "$.network.allowedDomains", section(doc, "network", "allow"), false, err)) ||
		    (rc = copy_strings(cJSON_GetObjectItemCaseSensitive(net, "deniedDomains"),
				       "$.network.deniedDomains", section(doc, "network", "deny"), false, err)))
			goto fail;
	}
	/* srt denies hosts outside allowedDomains, asking first unless the
	 * allowlist is strict. */
	cJSON_AddStringToObject(triggers, "network", strict ? "deny" : "escalate");
	cJSON_AddStringToObject(triggers, "shell", "allow");
	cJSON_AddStringToObject(triggers, "read", "allow");

	if (fs) {
		if ((rc = check_keys(fs, "$.filesystem", srt_fs_mapped, NULL, warnings, err)))
			goto fail;
		v = cJSON_GetObjectItemCaseSensitive(fs, "disabled");
		if (v && cJSON_IsTrue(v)) {
			rc = sb_errf(err, -EINVAL,
				     "$.filesystem.disabled is true: importing it would remove every file rule; write a policy with \"write\" and \"read\" set to allow instead if that is what you want");
			goto fail;
		}
		v = cJSON_GetObjectItemCaseSensitive(fs, "allowGitConfig");
		git_config_ok = v && cJSON_IsTrue(v);
		if ((rc = copy_strings(cJSON_GetObjectItemCaseSensitive(fs, "denyRead"), "$.filesystem.denyRead",
				       section(doc, "read", "deny"), true, err)) ||
		    (rc = copy_strings(cJSON_GetObjectItemCaseSensitive(fs, "allowRead"), "$.filesystem.allowRead",
				       section(doc, "read", "allow"), true, err)) ||
		    (rc = copy_strings(cJSON_GetObjectItemCaseSensitive(fs, "allowWrite"),
				       "$.filesystem.allowWrite", section(doc, "write", "allow"), true, err)) ||
		    (rc = copy_strings(cJSON_GetObjectItemCaseSensitive(fs, "denyWrite"), "$.filesystem.denyWrite",
				       section(doc, "write", "deny"), true, err)))
			goto fail;
	}
	cJSON_AddStringToObject(triggers, "write", "deny");
	for (m = srt_mandatory_write_deny; *m; m++)
		cJSON_AddItemToArray(section(doc, "write", "deny"), cJSON_CreateString(*m));
	if (!git_config_ok)
		cJSON_AddItemToArray(section(doc, "write", "deny"), cJSON_CreateString("./.git/config"));
	cJSON_Delete(in);
	*out = result;
	return 0;
fail:
	cJSON_Delete(in);
	cJSON_Delete(result);
	return rc;
}

int sb_policy_load_srt(const char *path, const struct sb_policy_opts *opts, struct sb_policy **out,
		       struct sb_err *err)
{
	struct sb_policy_opts o = { 0 };
	cJSON *conv, *pol, *w;
	char *buf, *text, src[1100];
	size_t len;
	int rc;

	*out = NULL;
	rc = sb_read_file(path, 4u << 20, &buf, &len, err);
	if (rc)
		return rc;
	rc = sb_srt_to_policy_json(buf, len, path, &conv, err);
	free(buf);
	if (rc)
		return rc;
	pol = cJSON_GetObjectItemCaseSensitive(conv, "policy");
	text = cJSON_PrintUnformatted(pol);
	if (!text) {
		cJSON_Delete(conv);
		return -ENOMEM;
	}
	if (opts)
		o = *opts;
	snprintf(src, sizeof(src), "srt:%s", path);
	o.source_name = src;
	/* srt resolves relative paths against the working directory. */
	rc = sb_policy_parse(text, strlen(text), &o, out, err);
	free(text);
	if (!rc) {
		const cJSON *it;

		w = cJSON_GetObjectItemCaseSensitive(conv, "warnings");
		cJSON_ArrayForEach(it, w) {
			char **nw = realloc((*out)->warnings, ((*out)->nwarnings + 1) * sizeof(*nw));

			if (!nw)
				break;
			(*out)->warnings = nw;
			nw[(*out)->nwarnings] = strdup(it->valuestring);
			if (nw[(*out)->nwarnings])
				(*out)->nwarnings++;
		}
	}
	cJSON_Delete(conv);
	return rc;
}
