#include "shellpat.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pathpat.h"

const char *sb_basename(const char *path)
{
	const char *s;
	size_t len = strlen(path);

	/* "dir/" has no basename of its own; keep whatever follows the last
	 * non-trailing slash so "/usr/bin/" does not become "". */
	while (len > 1 && path[len - 1] == '/')
		len--;
	for (s = path + len; s > path && s[-1] != '/'; s--)
		;
	return s;
}

void sb_shellpat_free(struct sb_shellpat *pat)
{
	if (!pat)
		return;
	free(pat->text);
	memset(pat, 0, sizeof(*pat));
}

/* Collapses runs of blanks to one space and trims, so the pattern matches
 * the canonical command line (argv joined by single spaces). */
static char *canonical_spaces(const char *s)
{
	char *out = malloc(strlen(s) + 1), *w = out;
	bool space = false;

	if (!out)
		return NULL;
	while (*s && isspace((unsigned char)*s))
		s++;
	for (; *s; s++) {
		if (isspace((unsigned char)*s)) {
			space = true;
			continue;
		}
		if (space && w != out)
			*w++ = ' ';
		space = false;
		*w++ = *s;
	}
	*w = '\0';
	return out;
}

int sb_shellpat_compile(const char *pattern, const char *root, const char *home,
			struct sb_shellpat *pat, struct sb_err *err)
{
	char *canon, *sp;
	size_t firstlen, i;

	memset(pat, 0, sizeof(*pat));
	canon = canonical_spaces(pattern);
	if (!canon)
		return -ENOMEM;
	if (!canon[0]) {
		free(canon);
		return sb_errf(err, -EINVAL, "empty shell pattern");
	}
	if (strlen(canon) >= SB_PATH_MAX) {
		free(canon);
		return sb_errf(err, -ENAMETOOLONG, "shell pattern longer than %d bytes", SB_PATH_MAX);
	}
	sp = strchr(canon, ' ');
	firstlen = sp ? (size_t)(sp - canon) : strlen(canon);
	pat->fullpath = memchr(canon, '/', firstlen) != NULL;
	if (pat->fullpath) {
		/* Resolve "~/", "./" and ".." in the executable path so it compares
		 * with the normalised path of the event. */
		char first[SB_PATH_MAX + 1], norm[SB_PATH_MAX + 1], joined[SB_PATH_MAX * 2 + 2];
		const char *base = root;
		int rc;

		memcpy(first, canon, firstlen);
		first[firstlen] = '\0';
		if (first[0] == '~' && first[1] == '/') {
			if (!home) {
				free(canon);
				return sb_errf(err, -EINVAL, "'%s' uses ~ but no home directory is known", pattern);
			}
			snprintf(joined, sizeof(joined), "%s%s", home, first + 1);
		} else if (first[0] != '/') {
			if (!base) {
				free(canon);
				return sb_errf(err, -EINVAL, "'%s' is relative but the policy has no root", pattern);
			}
			snprintf(joined, sizeof(joined), "%s/%s", base, first);
		} else {
			snprintf(joined, sizeof(joined), "%s", first);
		}
		if (!sb_glob_has_wildcard(joined)) {
			if (joined[0] != '/' && !base) {
				free(canon);
				return sb_errf(err, -EINVAL, "'%s' is relative but the policy has no root", pattern);
			}
			rc = sb_path_normalize(joined, base, norm, sizeof(norm));
			if (rc) {
				free(canon);
				return sb_errf(err, rc, "'%s': invalid executable path", pattern);
			}
		} else {
			/* Normalise the directory part before the first wildcard; a
			 * ".." after it would depend on what the wildcard matched. */
			char dirpart[SB_PATH_MAX * 2 + 2];
			size_t w = strcspn(joined, "*?[");
			char *slash;

			memcpy(dirpart, joined, w);
			dirpart[w] = '\0';
			slash = strrchr(dirpart, '/');
			*slash = '\0';
			if (strstr(joined + (slash - dirpart), "/..") || strstr(joined + (slash - dirpart), "/./")) {
				free(canon);
				return sb_errf(err, -EINVAL, "'%s': '.' or '..' after a wildcard is ambiguous", pattern);
			}
			rc = sb_path_normalize(dirpart[0] ? dirpart : "/", NULL, norm, sizeof(norm));
			if (rc) {
				free(canon);
				return sb_errf(err, rc, "'%s': invalid executable path", pattern);
			}
			if (strlen(norm) + strlen(joined + (slash - dirpart)) >= sizeof(norm)) {
				free(canon);
				return sb_errf(err, -ENAMETOOLONG, "'%s': path too long", pattern);
			}
			strcat(norm, strcmp(norm, "/") ? joined + (slash - dirpart) : joined + (slash - dirpart) + 1);
		}
		pat->text = malloc(strlen(norm) + strlen(canon) - firstlen + 1);
		if (!pat->text) {
			free(canon);
			return -ENOMEM;
		}
		strcpy(pat->text, norm);
		strcat(pat->text, canon + firstlen);
		free(canon);
	} else {
		pat->text = canon;
	}
	for (i = 0; pat->text[i]; i++) {
		if (pat->text[i] == '\\' && pat->text[i + 1]) {
			i++;
			pat->literal_prefix++;
			continue;
		}
		if (pat->text[i] == '*' || pat->text[i] == '?' || pat->text[i] == '[')
			break;
		pat->literal_prefix++;
	}
	return 0;
}

int sb_shellpat_match(const struct sb_shellpat *pat, const char *cmdline, const char *fullline)
{
	const char *subject = pat->fullpath ? fullline : cmdline;

	if (!subject)
		return -1;
	return sb_glob_match(pat->text, subject, false) ? (int)pat->literal_prefix : -1;
}

int sb_cmdline_build(const char *first, const char *const *argv, size_t argc, char *out,
		     size_t out_len)
{
	size_t n = 0, i, l;

	l = strlen(first);
	if (l + 1 > out_len)
		return -ENAMETOOLONG;
	memcpy(out, first, l);
	n = l;
	for (i = 1; i < argc; i++) {
		l = strlen(argv[i]);
		if (n + 1 + l + 1 > out_len)
			return -ENAMETOOLONG;
		out[n++] = ' ';
		memcpy(out + n, argv[i], l);
		n += l;
	}
	out[n] = '\0';
	/* Same canonical form as patterns: empty or blank words cannot be used
	 * to slip "rm  -rf" past a rule written for "rm -rf". */
	{
		char *c = canonical_spaces(out);

		if (!c)
			return -ENOMEM;
		strcpy(out, c);
		free(c);
	}
	return 0;
}
