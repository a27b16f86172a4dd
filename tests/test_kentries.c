/* Compiled policy -> kernel map entries (userspace/kernel/maps_policy.c),
 * on a real temporary directory tree: paths resolved to the kernel's
 * (dev, ino), named-child entries for missing files, chains for missing
 * directories (and their over-approximation), basename and glob entries,
 * glob expansion, protections, shell prefix keys and markers, executables
 * keyed by inode, network LPM keys with host names resolved. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "compile.h"
#include "kernel/maps_policy.h"
#include "kernel/scope.h"
#include "policy.h"

struct fixture {
	char root[PATH_MAX];	/* the project */
	char home[PATH_MAX];
	char bin[PATH_MAX];	/* an exec dir */
	struct sb_kresolver r;
	const char *exec_dirs[2];
	struct sb_policy *p;
	struct sb_compiled *c;
	struct sb_kentries *e;
};

static void touch(const char *dir, const char *rel, mode_t mode)
{
	char path[PATH_MAX * 2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	close(fd);
	chmod(path, mode);
}

static void mkdirs(const char *dir, const char *rel)
{
	char path[PATH_MAX * 2], *p;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (p = path + strlen(dir) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	mkdir(path, 0755);
}

static int fake_resolve(void *arg, const char *host, struct sb_kaddr **out, size_t *n)
{
	(void)arg;
	*out = NULL;
	*n = 0;
	if (strcmp(host, "example.test"))
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	(*out)->family = AF_INET;
	inet_pton(AF_INET, "10.1.2.3", (*out)->addr);
	*n = 1;
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sb_err err = { { 0 } };
	char tmpl[] = "/tmp/sbkent-XXXXXX", *base;

	base = mkdtemp(tmpl);
	assert_non_null(base);
	snprintf(f->root, sizeof(f->root), "%s/proj", base);
	snprintf(f->home, sizeof(f->home), "%s/home", base);
	snprintf(f->bin, sizeof(f->bin), "%s/bin", base);
	mkdir(f->root, 0755);
	mkdir(f->home, 0755);
	mkdir(f->bin, 0755);
	mkdirs(f->home, ".ssh");
	touch(f->home, ".ssh/id_rsa", 0600);
	mkdirs(f->root, "data/a");
	touch(f->root, "data/a/secret.txt", 0644);
	touch(f->root, "data/a/other.txt", 0644);
	mkdirs(f->root, ".git/hooks");
	touch(f->bin, "deny-me", 0755);
	touch(f->bin, "gitx", 0755);
	touch(f->bin, "plain", 0755);
	touch(f->bin, "notexec", 0644);
	{
		char a[PATH_MAX * 2], b[PATH_MAX * 2];

		/* One inode, two names with different decisions (multi-call). */
		snprintf(a, sizeof(a), "%s/plain", f->bin);
		snprintf(b, sizeof(b), "%s/deny-me-too", f->bin);
		assert_int_equal(link(a, b), 0);
	}
	assert_int_equal(sb_kresolver_default(&f->r, &err), 0);
	f->exec_dirs[0] = f->bin;
	f->exec_dirs[1] = NULL;
	f->r.exec_dirs = f->exec_dirs;
	f->r.sysfs = NULL;
	f->r.resolve = fake_resolve;
	*state = f;
	return 0;
}

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX * 2 + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char base[PATH_MAX];

	sb_kentries_free(f->e);
	sb_compiled_free(f->c);
	sb_policy_free(f->p);
	/* the resolver's own arg is freed by cleanup; our overrides are static */
	f->r.exec_dirs = NULL;
	sb_kresolver_cleanup(&f->r);
	snprintf(base, sizeof(base), "%s", f->root);
	*strrchr(base, '/') = '\0';
	rm_rf(base);
	free(f);
	return 0;
}

static void compute(struct fixture *f, const char *body)
{
	char json[8192];
	struct sb_policy_opts o = { .home_override = f->home, .root_override = f->root };
	struct sb_kopts ko = { .anon_exec = SB_K_DENY };
	struct sb_err err = { { 0 } };

	snprintf(json, sizeof(json), "{\"version\":1,%s}", body);
	if (sb_policy_parse(json, strlen(json), &o, &f->p, &err))
		fail_msg("parse: %s", err.msg);
	assert_int_equal(sb_policy_compile(f->p, &f->c, &err), 0);
	if (sb_kentries_compute(f->p, f->c, &f->r, &ko, &f->e, &err))
		fail_msg("compute: %s", err.msg);
}

static struct sb_kstat kstat_of(struct fixture *f, const char *path)
{
	struct sb_kstat st;

	if (f->r.stat(f->r.arg, path, &st))
		fail_msg("stat %s", path);
	return st;
}

static const struct sb_pval *inode_entry(struct fixture *f, const char *path)
{
	struct sb_kstat st = kstat_of(f, path);
	struct sb_inode_key k = { .dev = st.kdev, .ino = st.ino };

	return sb_kv_find(f->e->inodes, &k);
}

static const struct sb_pval *child_entry(struct fixture *f, const char *dir, const char *name)
{
	struct sb_kstat st = kstat_of(f, dir);
	struct sb_child_key k;

	sb_kchild_key(&k, st.kdev, st.ino, name, 0);
	return sb_kv_find(f->e->children, &k);
}

static bool has_note(struct fixture *f, const char *needle)
{
	size_t i;

	for (i = 0; i < f->e->nnotes; i++)
		if (strstr(f->e->notes[i], needle))
			return true;
	return false;
}

static int depth(const char *p)
{
	int d = 0;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

/* The kernel's device number: MAJOR << 20 | MINOR of the superblock. */
static void test_kernel_dev_encoding(void **state)
{
	struct fixture *f = *state;
	struct sb_kstat st = kstat_of(f, f->root);
	struct stat s;

	assert_int_equal(stat(f->root, &s), 0);
	assert_int_equal(st.ino, s.st_ino);
	/* Equal to st_dev's major/minor except on btrfs subvolumes. */
	assert_int_equal(st.kdev >> 20, major(s.st_dev));
	assert_int_equal(st.kdev & 0xfffff, minor(s.st_dev));
}

static void test_exact_existing_and_missing(void **state)
{
	struct fixture *f = *state;
	char idrsa[PATH_MAX * 2], ssh[PATH_MAX * 2];
	const struct sb_pval *v;

	compute(f, "\"write\":{\"deny\":[\"~/.ssh/id_rsa\",\"~/.bashrc\"]}");
	snprintf(idrsa, sizeof(idrsa), "%s/.ssh/id_rsa", f->home);
	snprintf(ssh, sizeof(ssh), "%s/.ssh", f->home);
	/* Existing file: by inode (hard links, bind mounts) ... */
	v = inode_entry(f, idrsa);
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_EXACT].tier, SB_K_DENY);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_EXACT].spec, 2 * depth(idrsa) + 1);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].tier, SB_K_NONE);
	assert_int_equal(v->slot[SB_PT_READ][SB_PL_EXACT].tier, SB_K_NONE);
	/* ... and by name in its directory (replaced by rename). */
	v = child_entry(f, ssh, "id_rsa");
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_EXACT].tier, SB_K_DENY);
	/* Missing file: its name under the existing parent. */
	v = child_entry(f, f->home, ".bashrc");
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_EXACT].tier, SB_K_DENY);
	assert_int_equal(f->e->cfg.uniform[SB_K_WRITE], SB_K_NONE);
	assert_int_equal(f->e->cfg.uniform[SB_K_READ], SB_K_ALLOW);
}

static void test_missing_chain(void **state)
{
	struct fixture *f = *state;
	struct sb_kstat root = kstat_of(f, f->root);
	const struct sb_pval *v;
	const struct sb_chain *ch;
	struct sb_child_key k;

	compute(f, "\"write\":{\"deny\":[\"./build/out/**\"],\"allow\":[\"./gen/a/b/c/d/e/f/**\"],"
		   "\"escalate\":[\"./deep/a/b/c/d/e/f/**\"]}");
	/* ./build/out/ **: key (root, "build"), then "out" must follow. */
	v = child_entry(f, f->root, "build");
	assert_non_null(v);
	assert_int_equal(v->nchains, 1);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].tier, SB_K_NONE);	/* build itself is free */
	sb_kchild_key(&k, root.kdev, root.ino, "build", 1);
	ch = sb_kv_find(f->e->chains, &k);
	assert_non_null(ch);
	assert_int_equal(ch->ncomps, 1);
	assert_int_equal(ch->lens[0], 3);
	assert_memory_equal(ch->names[0], "out", 3);
	assert_int_equal(ch->val.slot[SB_PT_WRITE][SB_PL_SUBTREE].tier, SB_K_DENY);
	/* Too deep to track: escalate over-approximates below the last
	 * component it can follow; allow is only noted. */
	assert_true(has_note(f, "deep/a/b/c/d/e/f"));
	assert_true(has_note(f, "applies after 'policy reload'"));
	v = child_entry(f, f->root, "deep");
	assert_non_null(v);
	sb_kchild_key(&k, root.kdev, root.ino, "deep", 1);
	ch = sb_kv_find(f->e->chains, &k);
	assert_non_null(ch);
	assert_int_equal(ch->ncomps, SB_CHAIN_MAX);
	assert_int_equal(ch->val.slot[SB_PT_WRITE][SB_PL_BELOW].tier, SB_K_ESCALATE);
	assert_null(child_entry(f, f->root, "gen"));
}

static void test_names_and_globs(void **state)
{
	struct fixture *f = *state;
	struct sb_name_key nk;
	const struct sb_pval *v;
	const char *longn = "a-very-long-file-name-that-is-longer-than-the-key.txt";
	char rule[256];
	size_t i;
	bool pem = false, child = false;

	snprintf(rule, sizeof(rule),
		 "\"read\":{\"deny\":[\"**/.env\",\"**/node_modules/**\",\"**/*.pem\",\"./data/*.key\",\"**/%s\"]}",
		 longn);
	compute(f, rule);
	sb_kname_key(&nk, ".env");
	v = sb_kv_find(f->e->names, &nk);
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_READ][SB_PL_EXACT].tier, SB_K_DENY);
	sb_kname_key(&nk, "node_modules");
	v = sb_kv_find(f->e->names, &nk);
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_READ][SB_PL_SUBTREE].tier, SB_K_DENY);
	sb_kname_key(&nk, longn);
	v = sb_kv_find(f->e->names, &nk);
	assert_non_null(v);
	assert_true(v->flags & SB_PV_LONGNAME);
	{
		struct sb_child_key ck;
		const struct sb_longname *ln;

		sb_kchild_key(&ck, 0, 0, longn, 0xff);
		ln = sb_kv_find(f->e->longnames, &ck);
		assert_non_null(ln);
		assert_string_equal(ln->name, longn);
	}
	assert_true(f->e->cfg.has_names);
	assert_int_equal(f->e->cfg.nglobs, 2);
	for (i = 0; i < f->e->nglobs; i++) {
		const struct sb_glob *g = &f->e->globs[i];

		if (!(g->flags & SB_GLOB_CHILD) && g->slen == 4 && !memcmp(g->suffix, ".pem", 4)) {
			pem = g->plen == 0 && (g->flags & SB_GLOB_ANCHORED) && g->trig == SB_PT_READ;
		} else if (g->flags & SB_GLOB_CHILD) {
			char data[PATH_MAX * 2];
			struct sb_kstat st;

			snprintf(data, sizeof(data), "%s/data", f->root);
			st = kstat_of(f, data);
			child = g->dev == st.kdev && g->ino == st.ino && g->slen == 4;
		}
	}
	assert_true(pem);
	assert_true(child);
}

static void test_glob_expansion(void **state)
{
	struct fixture *f = *state;
	char secret[PATH_MAX * 2], other[PATH_MAX * 2];
	const struct sb_pval *v;

	compute(f, "\"read\":{\"deny\":[\"./data/*/secret.txt\"]}");
	snprintf(secret, sizeof(secret), "%s/data/a/secret.txt", f->root);
	snprintf(other, sizeof(other), "%s/data/a/other.txt", f->root);
	v = inode_entry(f, secret);
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_READ][SB_PL_EXACT].tier, SB_K_DENY);
	assert_null(inode_entry(f, other));
	assert_true(has_note(f, "expanded at load to 1 existing path;"));
}

static void test_protected_ancestors(void **state)
{
	struct fixture *f = *state;
	char git[PATH_MAX * 2], hooks[PATH_MAX * 2];
	const struct sb_pval *v;

	compute(f, "\"write\":{\"allow\":[\"./**\"]}");
	snprintf(git, sizeof(git), "%s/.git", f->root);
	snprintf(hooks, sizeof(hooks), "%s/.git/hooks", f->root);
	/* .git/hooks/ ** is protected: the directory itself ... */
	v = inode_entry(f, hooks);
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].tier, SB_K_DENY);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].spec, SB_SPEC_PROTECTED);
	/* ... and .git and the project cannot be moved away. */
	v = inode_entry(f, git);
	assert_non_null(v);
	assert_true(v->flags & SB_PV_PROT_ANCESTOR);
	v = inode_entry(f, f->root);
	assert_non_null(v);
	assert_true(v->flags & SB_PV_PROT_ANCESTOR);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].tier, SB_K_ALLOW);
	/* .sandbox does not exist: named child, protected. */
	v = child_entry(f, f->root, ".sandbox");
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].spec, SB_SPEC_PROTECTED);
}

static const struct sb_shell_val *shell_entry(struct fixture *f, uint8_t kind, const char *text)
{
	struct sb_shell_key k;

	sb_kshell_key(&k, kind, text, strlen(text));
	return sb_kv_find(f->e->shell, &k);
}

static void test_shell_keys(void **state)
{
	struct fixture *f = *state;
	const struct sb_shell_val *v;

	compute(f, "\"shell\":{\"deny\":[\"sudo*\",\"su\",\"gitx push*\",\"deny-me*\"],\"allow\":[\"gitx*\",\"su*\"],"
		   "\"escalate\":[\"g*t pull\"]}");
	v = shell_entry(f, SB_SHK_NAME, "sudo");
	assert_non_null(v);
	assert_int_equal(v->tier, SB_K_DENY);
	assert_int_equal(v->spec, 4);
	assert_true(f->e->cfg.shell_lens[0][0] & (1ULL << 4));
	/* Exact "su" ties with "su*" (same literal length): the stricter. */
	v = shell_entry(f, SB_SHK_NAME_EXACT, "su");
	assert_non_null(v);
	assert_int_equal(v->tier, SB_K_DENY);
	v = shell_entry(f, SB_SHK_NAME, "su");
	assert_non_null(v);
	assert_int_equal(v->tier, SB_K_ALLOW);
	/* Argv-level rules mark their first word for bprm_committed_creds. */
	assert_non_null(shell_entry(f, SB_SHK_ARGVNAME, "gitx"));
	assert_non_null(shell_entry(f, SB_SHK_ARGVNAME, "su"));
	assert_null(shell_entry(f, SB_SHK_ARGVNAME, "sudo"));
	v = shell_entry(f, SB_SHK_NAME, "gitx push");
	assert_non_null(v);
	assert_int_equal(v->tier, SB_K_DENY);
	/* A wildcard inside: the literal prefix, marked for refinement. */
	v = shell_entry(f, SB_SHK_NAME, "g");
	assert_non_null(v);
	assert_true(v->refine);
	assert_true(has_note(f, "as the prefix 'g'"));
	assert_true(f->e->cfg.has_shell);
}

static void test_exec_inodes(void **state)
{
	struct fixture *f = *state;
	char p[PATH_MAX * 2];
	struct sb_kstat st;
	struct sb_inode_key k;
	const struct sb_xinode_val *v;

	compute(f, "\"shell\":{\"deny\":[\"deny-me*\",\"gitx push*\"],\"allow\":[\"gitx*\"]}");
	snprintf(p, sizeof(p), "%s/deny-me", f->bin);
	st = kstat_of(f, p);
	k = (struct sb_inode_key){ .dev = st.kdev, .ino = st.ino };
	v = sb_kv_find(f->e->xinodes, &k);
	assert_non_null(v);
	assert_int_equal(v->tier, SB_K_DENY);
	assert_int_equal(v->namelen, 7);
	snprintf(p, sizeof(p), "%s/gitx", f->bin);
	st = kstat_of(f, p);
	k = (struct sb_inode_key){ .dev = st.kdev, .ino = st.ino };
	v = sb_kv_find(f->e->xinodes, &k);
	assert_non_null(v);
	assert_true(v->flags & SB_XI_ARGV);
	assert_memory_equal(v->name, "gitx", 4);
	/* plain and deny-me-too share an inode but not a decision. */
	snprintf(p, sizeof(p), "%s/plain", f->bin);
	st = kstat_of(f, p);
	k = (struct sb_inode_key){ .dev = st.kdev, .ino = st.ino };
	assert_null(sb_kv_find(f->e->xinodes, &k));
	assert_true(has_note(f, "multi-call"));
	/* Not executable: not an executable. */
	snprintf(p, sizeof(p), "%s/notexec", f->bin);
	st = kstat_of(f, p);
	k = (struct sb_inode_key){ .dev = st.kdev, .ino = st.ino };
	assert_null(sb_kv_find(f->e->xinodes, &k));
}

/* A full-path rule's executable is keyed by inode even off PATH, so a
 * bind mount or a detached mount (another path) cannot rename it. */
static void test_exec_inodes_fullpath(void **state)
{
	struct fixture *f = *state;
	char p[PATH_MAX * 2], body[PATH_MAX * 3];
	struct sb_kstat st;
	struct sb_inode_key k;
	const struct sb_xinode_val *v;

	mkdirs(f->root, "tools");
	touch(f->root, "tools/tool", 0755);
	snprintf(body, sizeof(body), "\"shell\":{\"deny\":[\"%s/tools/tool*\"]}", f->root);
	compute(f, body);
	snprintf(p, sizeof(p), "%s/tools/tool", f->root);
	st = kstat_of(f, p);
	k = (struct sb_inode_key){ .dev = st.kdev, .ino = st.ino };
	v = sb_kv_find(f->e->xinodes, &k);
	assert_non_null(v);
	assert_int_equal(v->tier, SB_K_DENY);
}

static void test_network_keys(void **state)
{
	struct fixture *f = *state;
	struct sb_net4_key k4 = { .prefixlen = 32 + 8 };
	struct sb_net6_key k6 = { .prefixlen = 32 + 128 };
	const struct sb_net_val *v;
	uint32_t i;
	bool host443 = false, cidr80 = false;

	compute(f, "\"triggers\":{\"network\":\"escalate\"},"
		   "\"network\":{\"deny\":[\"10.0.0.0/8\"],\"allow\":[\"example.test:443\",\"[::1]\",\"nothere.test\"]}");
	inet_pton(AF_INET, "10.0.0.0", k4.addr);
	v = sb_kv_find(f->e->net4, &k4);
	assert_non_null(v);
	assert_int_equal(v->nseg, 1);
	assert_int_equal(v->seg[0].lo, 0);
	assert_int_equal(v->seg[0].hi, 65535);
	assert_int_equal(v->seg[0].tier, SB_K_DENY);
	inet_pton(AF_INET6, "::1", k6.addr);
	v = sb_kv_find(f->e->net6, &k6);
	assert_non_null(v);
	assert_int_equal(v->seg[0].tier, SB_K_ALLOW);
	/* The resolved name: an exact host beats the /8 on its port only. */
	k4.prefixlen = 32 + 32;
	inet_pton(AF_INET, "10.1.2.3", k4.addr);
	v = sb_kv_find(f->e->net4, &k4);
	assert_non_null(v);
	for (i = 0; i < v->nseg; i++) {
		if (v->seg[i].lo <= 443 && v->seg[i].hi >= 443)
			host443 = v->seg[i].tier == SB_K_ALLOW;
		if (v->seg[i].lo <= 80 && v->seg[i].hi >= 80)
			cidr80 = v->seg[i].tier == SB_K_DENY;
	}
	assert_true(host443);
	assert_true(cidr80);
	assert_true(has_note(f, "nothere.test"));
}

static void test_sysfs_protected(void **state)
{
	struct fixture *f = *state;
	const char *sysfs[] = { NULL, NULL };
	char cg[PATH_MAX * 2];
	const struct sb_pval *v;

	snprintf(cg, sizeof(cg), "%s/data", f->root);
	sysfs[0] = cg;
	f->r.sysfs = sysfs;
	compute(f, "\"triggers\":{\"write\":\"allow\"}");
	v = inode_entry(f, cg);
	assert_non_null(v);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].tier, SB_K_DENY);
	assert_int_equal(v->slot[SB_PT_WRITE][SB_PL_SUBTREE].rule, SB_RULE_SYS_FS);
	f->r.sysfs = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kernel_dev_encoding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exact_existing_and_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_and_globs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_glob_expansion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_ancestors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shell_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_inodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_inodes_fullpath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_network_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysfs_protected, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
