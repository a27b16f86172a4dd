/* runas USER|UID CMD [ARG...]: run CMD as another user (setgroups, setgid,
 * setuid, then exec). USER is looked up in /etc/passwd, supplementary
 * groups in /etc/group. Sets HOME, USER, LOGNAME and SHELL. Needs root.
 * No setuid bit: the VM tests run as root and use it to drop to "agent". */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GROUPS 64

static int find_user(const char *who, struct passwd *out, char *buf, size_t len)
{
	char *end;
	unsigned long uid;
	int numeric;
	struct passwd *pw;
	FILE *f = fopen("/etc/passwd", "re");

	if (!f)
		return -1;
	errno = 0;
	uid = strtoul(who, &end, 10);
	numeric = !errno && *who && !*end;
	while (fgetpwent_r(f, out, buf, len, &pw) == 0) {
		if ((numeric && pw->pw_uid == uid) || (!numeric && strcmp(pw->pw_name, who) == 0)) {
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	if (!numeric)
		return -1;
	/* A bare uid that is not in /etc/passwd: use it with gid == uid. */
	memset(out, 0, sizeof(*out));
	out->pw_name = (char *)who;
	out->pw_uid = (uid_t)uid;
	out->pw_gid = (gid_t)uid;
	out->pw_dir = (char *)"/";
	out->pw_shell = (char *)"/bin/sh";
	return 0;
}

static int collect_groups(const struct passwd *pw, gid_t *groups)
{
	char buf[4096];
	struct group grp, *g;
	int n = 0;
	FILE *f;

	groups[n++] = pw->pw_gid;
	f = fopen("/etc/group", "re");
	if (!f)
		return n;
	while (n < MAX_GROUPS && fgetgrent_r(f, &grp, buf, sizeof(buf), &g) == 0) {
		for (char **m = g->gr_mem; m && *m; m++) {
			if (strcmp(*m, pw->pw_name) == 0 && g->gr_gid != pw->pw_gid) {
				groups[n++] = g->gr_gid;
				break;
			}
		}
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	char buf[4096];
	struct passwd pw;
	gid_t groups[MAX_GROUPS];
	int ngroups;

	if (argc < 3) {
		fprintf(stderr, "usage: %s USER|UID CMD [ARG...]\n", argv[0]);
		return 125;
	}
	if (find_user(argv[1], &pw, buf, sizeof(buf)) != 0) {
		fprintf(stderr, "%s: no user '%s' in /etc/passwd\n", argv[0], argv[1]);
		return 125;
	}
	ngroups = collect_groups(&pw, groups);
	if (setgroups((size_t)ngroups, groups) != 0 || setgid(pw.pw_gid) != 0 ||
	    setuid(pw.pw_uid) != 0) {
		fprintf(stderr, "%s: cannot switch to uid %u: %s\n", argv[0], (unsigned)pw.pw_uid,
			strerror(errno));
		return 125;
	}
	if (pw.pw_uid != 0 && setuid(0) == 0) {
		fprintf(stderr, "%s: could regain root after dropping it\n", argv[0]);
		return 125;
	}
	setenv("HOME", pw.pw_dir, 1);
	setenv("USER", pw.pw_name, 1);
	setenv("LOGNAME", pw.pw_name, 1);
	setenv("SHELL", pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh", 1);
	execvp(argv[2], argv + 2);
	fprintf(stderr, "%s: exec %s: %s\n", argv[0], argv[2], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
