#include "pathpat.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next path component at or after p (skipping '/'), with its length
 * in *len; NULL at the end of the string. */
static const char *next_comp(const char *p, size_t *len)
{
	while (*p == '/')
		p++;
	if (!*p)
		return NULL;
	*len = strcspn(p, "/");
	return p;
}

int sb_path_normalize(const char *path, const char *base, char *out, size_t out_len)
{
	char buf[SB_PATH_MAX * 2 + 2];
	size_t n = 0, plen, blen, clen = 0;
	const char *p;

	if (!path || out_len < 2)
		return -EINVAL;
	plen = strlen(path);
	if (plen == 0)
		return -EINVAL;
	if (path[0] == '/') {
		if (plen >= sizeof(buf))
			return -ENAMETOOLONG;
		memcpy(buf, path, plen + 1);
	} else {
		if (!base || base[0] != '/')
			return -EINVAL;
		blen = strlen(base);
		if (blen + 1 + plen >= sizeof(buf))
			return -ENAMETOOLONG;
		memcpy(buf, base, blen);
		buf[blen] = '/';
		memcpy(buf + blen + 1, path, plen + 1);
	}

	/* Build the result component by component; ".." pops back to the
	 * previous '/', and never past the root. */
	out[0] = '\0';
	for (p = next_comp(buf, &clen); p; p = next_comp(p + clen, &clen)) {
		if (clen == 1 && p[0] == '.') {
			/* skip */
		} else if (clen == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
		} else {
			if (n + 1 + clen + 1 > out_len || n + 1 + clen >= SB_PATH_MAX)
				return -ENAMETOOLONG;
			out[n++] = '/';
			memcpy(out + n, p, clen);
			n += clen;
			out[n] = '\0';
		}
	}
	if (n == 0) {
		out[0] = '/';
		out[1] = '\0';
	}
	return 0;
}

bool sb_glob_has_wildcard(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\') {
			if (!s[1])
				break;
			s++;
			continue;
		}
		if (*s == '*' || *s == '?' || *s == '[')
			return true;
	}
	return false;
}

bool sb_glob_match(const char *pat, const char *s, bool slash_special)
{
	return fnmatch(pat, s, slash_special ? FNM_PATHNAME : 0) == 0;
}

void sb_glob_unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s == '\\' && s[1])
			s++;
		*w++ = *s;
	}
	*w = '\0';
}

void sb_pathpat_free(struct sb_pathpat *pat)
{
	size_t i;

	if (!pat)
		return;
	for (i = 0; i < pat->ncomps; i++)
		free(pat->comps[i]);
	free(pat->comps);
	free(pat->literal);
	free(pat->text);
	memset(pat, 0, sizeof(*pat));
}

/* Splits a normalised pattern into components. Lexical ".." handling was
 * done before; here a ".." or "." next to a wildcard is rejected because
 * its meaning depends on what the wildcard matched. */
static int split_pattern(struct sb_pathpat *pat, struct sb_err *err)
{
	const char *p;
	size_t cap = 8, clen = 0;

	pat->comps = calloc(cap, sizeof(*pat->comps));
	pat->literal = calloc(cap, sizeof(*pat->literal));
	if (!pat->comps || !pat->literal)
		return -ENOMEM;
	for (p = next_comp(pat->text, &clen); p; p = next_comp(p + clen, &clen)) {
		char *c = strndup(p, clen);

		if (!c)
			return -ENOMEM;
		if (!strcmp(c, ".") || !strcmp(c, "..")) {
			free(c);
			return sb_errf(err, -EINVAL,
				       "'.' or '..' after a wildcard in '%s' is ambiguous; write the path without it",
				       pat->text);
		}
		if (strstr(c, "**") && strcmp(c, "**")) {
			free(c);
			return sb_errf(err, -EINVAL,
				       "'**' must be a whole path component in '%s' (write 'a/**/b', not 'a**b')",
				       pat->text);
		}
		if (pat->ncomps == cap) {
			char **nc;
			bool *nl;

			cap *= 2;
			nc = realloc(pat->comps, cap * sizeof(*nc));
			if (!nc) {
				free(c);
				return -ENOMEM;
			}
			pat->comps = nc;
			nl = realloc(pat->literal, cap * sizeof(*nl));
			if (!nl) {
				free(c);
				return -ENOMEM;
			}
			pat->literal = nl;
		}
		pat->literal[pat->ncomps] = strcmp(c, "**") && !sb_glob_has_wildcard(c);
		if (pat->literal[pat->ncomps])
			sb_glob_unescape(c);
		pat->comps[pat->ncomps++] = c;
	}
	return 0;
}

/* Collapses "**" runs ("** / **" is the same as "**") so matching stays
 * polynomial and specificity is not affected. */
static void collapse_globstars(struct sb_pathpat *pat)
{
	size_t r, w = 0;

	for (r = 0; r < pat->ncomps; r++) {
		if (w > 0 && !strcmp(pat->comps[r], "**") && !strcmp(pat->comps[w - 1], "**")) {
			free(pat->comps[r]);
			continue;
		}
		pat->comps[w] = pat->comps[r];
		pat->literal[w] = pat->literal[r];
		w++;
	}
	pat->ncomps = w;
}

int sb_pathpat_compile(const char *pattern, const char *root, const char *home,
		       struct sb_pathpat *pat, struct sb_err *err)
{
	char joined[SB_PATH_MAX * 2 + 8];
	char norm[SB_PATH_MAX + 1];
	size_t len;
	bool trailing_slash, anywhere = false;
	const char *rest;
	int rc;

	memset(pat, 0, sizeof(*pat));
	len = strlen(pattern);
	if (len == 0)
		return sb_errf(err, -EINVAL, "empty path pattern");
	if (len >= SB_PATH_MAX)
		return sb_errf(err, -ENAMETOOLONG, "path pattern longer than %d bytes", SB_PATH_MAX);
	trailing_slash = len > 1 && pattern[len - 1] == '/';

	if (pattern[0] == '~') {
		if (pattern[1] != '\0' && pattern[1] != '/')
			return sb_errf(err, -EINVAL,
				       "'%s': only '~' and '~/...' are supported (the agent user's home); write other users' homes as absolute paths",
				       pattern);
		if (!home)
			return sb_errf(err, -EINVAL, "'%s' uses ~ but no home directory is known (set --home or HOME)",
				       pattern);
		rest = pattern + 1;
		snprintf(joined, sizeof(joined), "%s/%s", home, rest);
	} else if (!strncmp(pattern, "**", 2) && (pattern[2] == '\0' || pattern[2] == '/')) {
		anywhere = true;
		snprintf(joined, sizeof(joined), "/%s", pattern);
	} else if (pattern[0] == '/') {
		snprintf(joined, sizeof(joined), "%s", pattern);
	} else {
		if (!root)
			return sb_errf(err, -EINVAL, "'%s' is relative but the policy has no root", pattern);
		snprintf(joined, sizeof(joined), "%s/%s", root, pattern);
	}
	if (trailing_slash)
		strncat(joined, "/**", sizeof(joined) - strlen(joined) - 1);

	/* ".." is resolved lexically only in the literal part before the first
	 * wildcard; split_pattern rejects it after one. */
	{
		char lit[SB_PATH_MAX * 2 + 8];
		char *wild = NULL, *cut;
		size_t i;

		for (i = 0; joined[i]; i++) {
			if (joined[i] == '\\' && joined[i + 1]) {
				i++;
				continue;
			}
			if (joined[i] == '*' || joined[i] == '?' || joined[i] == '[') {
				wild = joined + i;
				break;
			}
		}
		if (wild) {
			/* normalise up to the '/' before the wildcard component */
			memcpy(lit, joined, (size_t)(wild - joined));
			lit[wild - joined] = '\0';
			cut = strrchr(lit, '/');
			if (cut)
				*cut = '\0';
			rc = sb_path_normalize(lit[0] ? lit : "/", NULL, norm, sizeof(norm));
			if (rc)
				return sb_errf(err, rc, "'%s': path too long or invalid", pattern);
			len = strlen(norm);
			if (snprintf(lit, sizeof(lit), "%s%s", len == 1 ? "" : norm,
				     joined + (cut ? (size_t)(cut - lit) : 0)) >= (int)sizeof(lit))
				return sb_errf(err, -ENAMETOOLONG, "'%s': path too long", pattern);
			pat->text = strdup(lit);
		} else {
			rc = sb_path_normalize(joined, NULL, norm, sizeof(norm));
			if (rc)
				return sb_errf(err, rc, "'%s': path too long or invalid", pattern);
			pat->text = strdup(norm);
		}
	}
	if (!pat->text)
		return -ENOMEM;
	/* Collapse repeated '/' inside the wildcard part too. */
	{
		char *r = pat->text, *w = pat->text;

		for (; *r; r++) {
			if (*r == '/' && w > pat->text && w[-1] == '/')
				continue;
			*w++ = *r;
		}
		if (w > pat->text + 1 && w[-1] == '/')
			w--;
		*w = '\0';
	}
	rc = split_pattern(pat, err);
	if (rc) {
		sb_pathpat_free(pat);
		return rc;
	}
	collapse_globstars(pat);
	(void)anywhere;
	return 0;
}

/* Dynamic programming over (pattern component, target component): best[i][j]
 * is the best specificity for matching comps[i..] against target[j..], or -1.
 * O(P*T), no recursion, so hostile patterns or paths cannot blow the stack. */
int sb_pathpat_match(const struct sb_pathpat *pat, const char *path)
{
	const char *tc[SB_PATH_MAX / 2 + 1];
	size_t tl[SB_PATH_MAX / 2 + 1];
	size_t nt = 0, P = pat->ncomps, i, j, clen = 0;
	const char *p;
	int *best, result;
	char comp[SB_PATH_MAX + 1];

	if (!path || path[0] != '/')
		return -1;
	for (p = next_comp(path, &clen); p; p = next_comp(p + clen, &clen)) {
		if (nt == sizeof(tc) / sizeof(tc[0]))
			return -1;
		tc[nt] = p;
		tl[nt] = clen;
		nt++;
	}

	best = malloc((P + 1) * (nt + 1) * sizeof(*best));
	if (!best)
		return -1;
#define B(i, j) best[(i) * (nt + 1) + (j)]
	for (i = P + 1; i-- > 0;) {
		for (j = nt + 1; j-- > 0;) {
			int v = -1;

			if (i == P) {
				v = (j == nt) ? 0 : -1;
			} else if (!strcmp(pat->comps[i], "**")) {
				v = B(i + 1, j);
				if (j < nt && B(i, j + 1) > v)
					v = B(i, j + 1);
			} else if (j < nt) {
				bool m;

				if (tl[j] > SB_PATH_MAX)
					m = false;
				else {
					memcpy(comp, tc[j], tl[j]);
					comp[tl[j]] = '\0';
					if (pat->literal[i])
						m = !strcmp(pat->comps[i], comp);
					else
						m = sb_glob_match(pat->comps[i], comp, true);
				}
				if (m && B(i + 1, j + 1) >= 0) {
					int s = B(i + 1, j + 1);
					bool anchored = pat->literal[i] ||
							strspn(pat->comps[i], "*?") != strlen(pat->comps[i]);

					if (anchored) {
						int here = 2 * (int)(j + 1) + (pat->literal[i] ? 1 : 0);

						if (here > s)
							s = here;
					}
					v = s;
				}
			}
			B(i, j) = v;
		}
	}
	result = B(0, 0);
#undef B
	free(best);
	return result;
}
