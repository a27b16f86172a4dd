#include "loader.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "generation.h"
#include "holds.h"
#include "probe/probe.h"
#include "sandbox.skel.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

static const char *const kmap_names[SB_KM__COUNT] = {
	[SB_KM_GLOBAL] = "sb_global",	  [SB_KM_SCOPE] = "sb_scope",	  [SB_KM_ACTIVE] = "sb_active",
	[SB_KM_CFG] = "sb_cfg",		  [SB_KM_INFO] = "sb_info",	  [SB_KM_META] = "sb_meta",
	[SB_KM_PROTECTED] = "sb_protected", [SB_KM_PINODE] = "sb_pinode",	  [SB_KM_PCHILD] = "sb_pchild",
	[SB_KM_PCHAIN] = "sb_pchain",	  [SB_KM_PNAME] = "sb_pname",	  [SB_KM_LONGNAME] = "sb_longname",
	[SB_KM_PGLOB] = "sb_pglob",	  [SB_KM_SHELL] = "sb_shell",	  [SB_KM_XINODE] = "sb_xinode",
	[SB_KM_NET4] = "sb_net4",	  [SB_KM_NET6] = "sb_net6",	  [SB_KM_COUNTERS] = "sb_counters",
	[SB_KM_RINGS] = "sb_rings",	  [SB_KM_HOLD] = "sb_hold",	  [SB_KM_VERDICT] = "sb_verdict",
	[SB_KM_HELD] = "sb_held",
};

/* generation.h map -> loader map */
static const enum sb_kmap gmap_to_kmap[SB_GM__COUNT] = {
	[SB_GM_ACTIVE] = SB_KM_ACTIVE, [SB_GM_CFG] = SB_KM_CFG,	      [SB_GM_PINODE] = SB_KM_PINODE,
	[SB_GM_PCHILD] = SB_KM_PCHILD, [SB_GM_PCHAIN] = SB_KM_PCHAIN,   [SB_GM_PNAME] = SB_KM_PNAME,
	[SB_GM_LONGNAME] = SB_KM_LONGNAME, [SB_GM_PGLOB] = SB_KM_PGLOB, [SB_GM_SHELL] = SB_KM_SHELL,
	[SB_GM_XINODE] = SB_KM_XINODE, [SB_GM_NET4] = SB_KM_NET4,	      [SB_GM_NET6] = SB_KM_NET6,
};

const char *sb_kmap_name(enum sb_kmap m)
{
	return (unsigned)m < SB_KM__COUNT ? kmap_names[m] : "?";
}

/* libbpf talks on stderr by default; library code must not. Verifier
 * logs are useful when debugging, so SANDBOX_BPF_DEBUG=1 shows them. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	const char *dbg = getenv("SANDBOX_BPF_DEBUG");

	if (!dbg || strcmp(dbg, "1") || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

bool sb_kernel_pinned(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/maps/%s", SB_PIN_DIR, kmap_names[SB_KM_META]);
	return access(path, F_OK) == 0;
}

static int rm_dir_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) && errno != ENOENT)
			rc = -errno;
	}
	closedir(d);
	if (rmdir(dir) && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

int sb_kernel_unpin_all(struct sb_err *err)
{
	char path[PATH_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/links", SB_PIN_DIR);
	rc = rm_dir_files(path);
	if (!rc) {
		snprintf(path, sizeof(path), "%s/maps", SB_PIN_DIR);
		rc = rm_dir_files(path);
	}
	if (rc)
		return sb_errf(err, rc, "cannot remove the pins under %s: %s", SB_PIN_DIR, strerror(-rc));
	/* The directory itself stays: it carries the lock. */
	return 0;
}

/* /sys/fs/bpf must be a bpf filesystem; mount one when it is not. */
static int ensure_bpffs(struct sb_err *err)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mkdir("/sys/fs/bpf", 0700) && errno != EEXIST)
		return sb_errf(err, -errno, "/sys/fs/bpf does not exist and cannot be created: %s", strerror(errno));
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=700"))
		return sb_errf(err, -errno,
			       "no bpf filesystem at /sys/fs/bpf and mounting one failed (%s): mount -t bpf bpf /sys/fs/bpf",
			       strerror(errno));
	return 0;
}

static int take_lock(struct sb_kernel *k, struct sb_err *err)
{
	if (k->lock_fd < 0) {
		if (mkdir(SB_PIN_DIR, 0700) && errno != EEXIST)
			return sb_errf(err, -errno, "cannot create %s: %s", SB_PIN_DIR, strerror(errno));
		k->lock_fd = open(SB_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (k->lock_fd < 0)
			return sb_errf(err, -errno, "cannot open %s: %s", SB_PIN_DIR, strerror(errno));
	}
	if (k->locked++ == 0 && flock(k->lock_fd, LOCK_EX))
		return sb_errf(err, -errno, "cannot lock %s: %s", SB_PIN_DIR, strerror(errno));
	return 0;
}

static void drop_lock(struct sb_kernel *k)
{
	if (k->locked > 0 && --k->locked == 0 && k->lock_fd >= 0)
		flock(k->lock_fd, LOCK_UN);
}

static int open_pinned(struct sb_kernel *k, struct sb_err *err)
{
	struct sb_meta meta;
	__u32 zero = 0;
	int i;

	for (i = 0; i < SB_KM__COUNT; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/maps/%s", SB_PIN_DIR, kmap_names[i]);
		k->fd[i] = bpf_obj_get(path);
		if (k->fd[i] < 0) {
			int e = -errno;

			return sb_errf(err, e == -ENOENT ? -ENOENT : e,
				       "pinned map %s cannot be opened (%s): the pins under %s are incomplete; remove them with 'sandbox-bpf detach --all'",
				       path, strerror(-e), SB_PIN_DIR);
		}
	}
	if (bpf_map_lookup_elem(k->fd[SB_KM_META], &zero, &meta))
		return sb_errf(err, -errno, "cannot read %s/maps/sb_meta: %s", SB_PIN_DIR, strerror(errno));
	if (meta.abi != SB_ABI_VERSION)
		return sb_errf(err, -EPROTO,
			       "the programs pinned under %s come from another sandbox-bpf version (layout %u, this binary %u): detach every sandbox with that version, or 'sandbox-bpf detach --all'",
			       SB_PIN_DIR, meta.abi, SB_ABI_VERSION);
	k->features = meta.features;
	return 0;
}

static bool btf_has_func(struct btf *btf, const char *name)
{
	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
}

static int btf_func_nargs(struct btf *btf, const char *name)
{
	const struct btf_type *t;
	int id;

	if (!btf)
		return -1;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	return t ? btf_vlen(t) : -1;
}

/* Chooses the programs this kernel has hooks for. */
static void select_programs(struct sandbox_bpf *s, uint32_t *features)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const char *force = getenv("SANDBOX_BPF_FORCE_INODE_HOOKS");
	bool path_hooks = btf_has_func(btf, "bpf_lsm_path_unlink") && !(force && !strcmp(force, "1"));
	struct bpf_program *path_progs[] = { s->progs.sb_path_truncate, s->progs.sb_path_unlink,
					     s->progs.sb_path_rmdir,	s->progs.sb_path_mkdir,
					     s->progs.sb_path_mknod,	s->progs.sb_path_symlink,
					     s->progs.sb_path_chmod,	s->progs.sb_path_chown,
					     s->progs.sb_path_rename,	s->progs.sb_path_link };
	struct bpf_program *inode_progs[] = { s->progs.sb_inode_create, s->progs.sb_inode_unlink,
					      s->progs.sb_inode_rmdir,	s->progs.sb_inode_mkdir,
					      s->progs.sb_inode_mknod,	s->progs.sb_inode_symlink,
					      s->progs.sb_inode_link,	s->progs.sb_inode_rename };
	size_t i;
	int nargs;

	*features = 0;
	for (i = 0; i < sizeof(path_progs) / sizeof(path_progs[0]); i++)
		bpf_program__set_autoload(path_progs[i], path_hooks);
	for (i = 0; i < sizeof(inode_progs) / sizeof(inode_progs[0]); i++)
		bpf_program__set_autoload(inode_progs[i], !path_hooks);
	s->rodata->inode_fallback = !path_hooks;
	if (path_hooks)
		*features |= SB_META_PATH_HOOKS;
	if (btf_has_func(btf, "bpf_lsm_file_truncate"))
		*features |= SB_META_FILE_TRUNCATE;
	else
		bpf_program__set_autoload(s->progs.sb_file_truncate, false);
	if (btf_has_func(btf, "bpf_lsm_inode_set_acl")) {
		*features |= SB_META_ACL_HOOKS;
	} else {
		bpf_program__set_autoload(s->progs.sb_inode_set_acl, false);
		bpf_program__set_autoload(s->progs.sb_inode_remove_acl, false);
	}
	/* inode_setattr gained the idmap argument in 6.3 (first position). */
	nargs = btf_func_nargs(btf, "bpf_lsm_inode_setattr");
	if (nargs == 3) {
		*features |= SB_META_SETATTR_IDMAP;
		bpf_program__set_autoload(s->progs.sb_inode_setattr, false);
	} else {
		bpf_program__set_autoload(s->progs.sb_inode_setattr_idmap, false);
	}
	if (!btf_has_func(btf, "bpf_lsm_userns_create"))
		bpf_program__set_autoload(s->progs.sb_userns_create, false);
	if (!btf_has_func(btf, "bpf_lsm_file_ioctl_compat"))
		bpf_program__set_autoload(s->progs.sb_file_ioctl_compat, false);
	btf__free(btf);
}

/* When bpf is not an active LSM, programs load and attach but never run,
 * and the LSM list is not always readable (securityfs unmounted, and we do
 * not mount it on the user's system). So prove it the way doctor does:
 * attach a probe program scoped to this process, trigger it, and check it
 * ran. Anything but "works" stops here: never attach programs that would
 * leave the sandbox silently unconfined. */
static int check_lsm_active(struct sb_err *err)
{
	struct sb_probe_bpf_lsm probe;
	char buf[512] = "";
	const char *list = NULL;
	int fd, n;

	fd = open("/sys/kernel/security/lsm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = (int)read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (n > 0)
			list = buf;
	}
	if (sb_probe_bpf_lsm(list, &probe))
		return sb_errf(err, -EIO, "cannot probe whether BPF-LSM programs run here; 'sandbox-bpf doctor' explains");
	if (probe.state != SB_BPF_LSM_WORKS)
		return sb_errf(err, -ENOTSUP,
			       "BPF-LSM programs do not run here (%s: %s). %s Nothing was attached and nothing runs unconfined",
			       sb_bpf_lsm_state_name(probe.state), probe.res.detail, probe.res.remedy);
	return 0;
}

static int load_and_pin(struct sb_kernel *k, struct sb_err *err)
{
	struct sandbox_bpf *s;
	struct bpf_program *prog;
	struct sb_meta meta = { .abi = SB_ABI_VERSION };
	char path[PATH_MAX];
	__u32 zero = 0;
	int rc, i;

	libbpf_set_print(libbpf_print);
	s = sandbox_bpf__open();
	if (!s)
		return sb_errf(err, -errno, "cannot open the BPF object: %s", strerror(errno));
	select_programs(s, &meta.features);
	rc = sandbox_bpf__load(s);
	if (rc) {
		sandbox_bpf__destroy(s);
		if (rc == -EPERM || rc == -EACCES)
			return sb_errf(err, rc,
				       "the kernel refused to load the BPF-LSM programs (%s): this kernel does not allow LSM BPF programs for this process (no BPF-LSM, lockdown, or missing CAP_BPF/CAP_SYS_ADMIN). 'sandbox-bpf doctor' explains what works here; 'make vmtest' shows enforcement in a VM. Nothing was attached and nothing runs unconfined",
				       strerror(-rc));
		return sb_errf(err, rc,
			       "loading the BPF-LSM programs failed (%s); run with SANDBOX_BPF_DEBUG=1 for the verifier log, and 'sandbox-bpf doctor'",
			       strerror(-rc));
	}
	k->skel = s;
	rc = check_lsm_active(err);
	if (rc) {
		sandbox_bpf__destroy(s);
		k->skel = NULL;
		return rc;
	}
	if (mkdir(SB_PIN_DIR "/maps", 0700) && errno != EEXIST)
		goto pin_fail;
	if (mkdir(SB_PIN_DIR "/links", 0700) && errno != EEXIST)
		goto pin_fail;
	bpf_object__for_each_program(prog, s->obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		if (k->nprogs >= (int)(sizeof(k->links) / sizeof(k->links[0]))) {
			rc = sb_errf(err, -E2BIG, "too many programs");
			goto fail;
		}
		link = bpf_program__attach(prog);
		if (!link) {
			rc = -errno;
			sb_errf(err, rc, "attaching %s failed: %s", bpf_program__name(prog), strerror(-rc));
			goto fail;
		}
		snprintf(path, sizeof(path), "%s/links/%s", SB_PIN_DIR, bpf_program__name(prog));
		rc = bpf_link__pin(link, path);
		/* The pin holds the link; this process keeps its fd until exit. */
		if (rc) {
			bpf_link__destroy(link);
			sb_errf(err, rc, "pinning %s failed: %s", path, strerror(-rc));
			goto fail;
		}
		k->links[k->nprogs++] = link;
	}
	meta.created_ns = (uint64_t)time(NULL);
	if (bpf_map__update_elem(s->maps.sb_meta, &zero, sizeof(zero), &meta, sizeof(meta), 0)) {
		rc = -errno;
		sb_errf(err, rc, "cannot write sb_meta: %s", strerror(-rc));
		goto fail;
	}
	for (i = 0; i < SB_KM__COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(s->obj, kmap_names[i]);

		if (!m) {
			rc = sb_errf(err, -ENOENT, "map %s missing from the BPF object", kmap_names[i]);
			goto fail;
		}
		/* sb_meta last: its pin marks the set complete. */
		if (i == SB_KM_META)
			continue;
		snprintf(path, sizeof(path), "%s/maps/%s", SB_PIN_DIR, kmap_names[i]);
		rc = bpf_map__pin(m, path);
		if (rc) {
			sb_errf(err, rc, "pinning %s failed: %s", path, strerror(-rc));
			goto fail;
		}
	}
	snprintf(path, sizeof(path), "%s/maps/%s", SB_PIN_DIR, kmap_names[SB_KM_META]);
	rc = bpf_map__pin(s->maps.sb_meta, path);
	if (rc) {
		sb_errf(err, rc, "pinning %s failed: %s", path, strerror(-rc));
		goto fail;
	}
	for (i = 0; i < SB_KM__COUNT; i++)
		k->fd[i] = dup(bpf_map__fd(bpf_object__find_map_by_name(s->obj, kmap_names[i])));
	k->features = meta.features;
	k->loaded = true;
	return 0;
pin_fail:
	rc = sb_errf(err, -errno, "cannot create directories under %s: %s", SB_PIN_DIR, strerror(errno));
fail:
	sb_kernel_unpin_all(NULL);
	for (i = 0; i < k->nprogs; i++)
		bpf_link__destroy(k->links[i]);
	k->nprogs = 0;
	sandbox_bpf__destroy(s);
	k->skel = NULL;
	return rc;
}

int sb_kernel_open(struct sb_kernel *k, unsigned flags, struct sb_err *err)
{
	int i, rc;

	memset(k, 0, sizeof(*k));
	k->lock_fd = -1;
	for (i = 0; i < SB_KM__COUNT; i++)
		k->fd[i] = -1;
	libbpf_set_print(libbpf_print);
	if (!(flags & SB_KOPEN_LOAD)) {
		if (!sb_kernel_pinned())
			return sb_errf(err, -ENOENT, "no sandbox is attached (nothing pinned under %s)", SB_PIN_DIR);
		rc = take_lock(k, err);
		if (!rc)
			rc = open_pinned(k, err);
		drop_lock(k);
		if (rc)
			sb_kernel_close(k);
		return rc;
	}
	rc = ensure_bpffs(err);
	if (!rc)
		rc = take_lock(k, err);
	if (rc) {
		sb_kernel_close(k);
		return rc;
	}
	if (sb_kernel_pinned())
		rc = open_pinned(k, err);
	else
		rc = load_and_pin(k, err);
	drop_lock(k);
	if (rc)
		sb_kernel_close(k);
	return rc;
}

void sb_kernel_close(struct sb_kernel *k)
{
	int i;

	for (i = 0; i < SB_KM__COUNT; i++) {
		if (k->fd[i] >= 0)
			close(k->fd[i]);
		k->fd[i] = -1;
	}
	/* Links stay attached through their pins (unless unpinned). */
	for (i = 0; i < k->nprogs; i++)
		bpf_link__destroy(k->links[i]);
	k->nprogs = 0;
	if (k->skel) {
		sandbox_bpf__destroy(k->skel);
		k->skel = NULL;
	}
	if (k->lock_fd >= 0)
		close(k->lock_fd);
	k->lock_fd = -1;
	k->locked = 0;
}

/* ---- generation ops over the real maps ----------------------------------- */

static int g_update(void *arg, enum sb_gmap m, const void *key, const void *val)
{
	struct sb_kernel *k = arg;

	return bpf_map_update_elem(k->fd[gmap_to_kmap[m]], key, val, BPF_ANY) ? -errno : 0;
}

static int g_lookup(void *arg, enum sb_gmap m, const void *key, void *val)
{
	struct sb_kernel *k = arg;

	return bpf_map_lookup_elem(k->fd[gmap_to_kmap[m]], key, val) ? -errno : 0;
}

static int g_del(void *arg, enum sb_gmap m, const void *key)
{
	struct sb_kernel *k = arg;

	return bpf_map_delete_elem(k->fd[gmap_to_kmap[m]], key) ? -errno : 0;
}

static int g_next(void *arg, enum sb_gmap m, const void *key, void *next)
{
	struct sb_kernel *k = arg;

	return bpf_map_get_next_key(k->fd[gmap_to_kmap[m]], key, next) ? -errno : 0;
}

/* Decisions that started on the old generation are microseconds long and
 * re-check the counter at their end; this pause only keeps them from
 * having to start over in the common case. */
static void g_settle(void *arg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
}

static void gops_init(struct sb_kernel *k, struct sb_gops *o)
{
	o->update = g_update;
	o->lookup = g_lookup;
	o->del = g_del;
	o->next_key = g_next;
	o->settle = g_settle;
	o->arg = k;
}

/* ---- sandboxes ----------------------------------------------------------- */

static int update_level_mask(struct sb_kernel *k, struct sb_err *err)
{
	struct sb_global g = { 0 };
	__u32 id, zero = 0;

	for (id = 1; id < SB_MAX_SANDBOXES; id++) {
		struct sb_info info;

		if (bpf_map_lookup_elem(k->fd[SB_KM_INFO], &id, &info) == 0 && info.cgroup_id)
			g.level_mask |= 1ULL << info.level;
	}
	if (bpf_map_update_elem(k->fd[SB_KM_GLOBAL], &zero, &g, BPF_ANY))
		return sb_errf(err, -errno, "cannot update sb_global: %s", strerror(errno));
	return 0;
}

static int zero_counters(struct sb_kernel *k, __u32 id)
{
	int ncpu = libbpf_num_possible_cpus(), h, rc = 0;
	struct sb_counters *z;

	if (ncpu <= 0)
		return -EINVAL;
	z = calloc((size_t)ncpu, sizeof(*z));
	if (!z)
		return -ENOMEM;
	for (h = 0; h < SB_HOOK__COUNT && !rc; h++) {
		__u32 idx = id * SB_HOOK__COUNT + (__u32)h;

		if (bpf_map_update_elem(k->fd[SB_KM_COUNTERS], &idx, z, BPF_ANY))
			rc = -errno;
	}
	free(z);
	return rc;
}

int sb_kernel_find(struct sb_kernel *k, uint64_t cgid, uint32_t *id, struct sb_info *info)
{
	__u32 v;

	if (bpf_map_lookup_elem(k->fd[SB_KM_SCOPE], &cgid, &v))
		return -ENOENT;
	*id = v;
	if (info && bpf_map_lookup_elem(k->fd[SB_KM_INFO], &v, info))
		return -errno;
	return 0;
}

int sb_kernel_info(struct sb_kernel *k, uint32_t id, struct sb_info *info)
{
	if (id == 0 || id >= SB_MAX_SANDBOXES)
		return -EINVAL;
	if (bpf_map_lookup_elem(k->fd[SB_KM_INFO], &id, info))
		return -errno;
	return info->cgroup_id ? 0 : -ENOENT;
}

int sb_kernel_set_owner(struct sb_kernel *k, uint32_t id, uint32_t pid)
{
	struct sb_info info;
	int rc;

	rc = take_lock(k, NULL);
	if (rc)
		return rc;
	rc = sb_kernel_info(k, id, &info);
	if (!rc) {
		info.owner_pid = pid;
		if (bpf_map_update_elem(k->fd[SB_KM_INFO], &id, &info, BPF_ANY))
			rc = -errno;
	}
	drop_lock(k);
	return rc;
}

int sb_kernel_add(struct sb_kernel *k, const struct sb_kscope *scope, const struct sb_kentries *e,
		  const struct sb_info *tmpl, uint32_t *idp, struct sb_err *err)
{
	struct sb_gops o;
	struct sb_info info;
	__u32 id, free_id = 0;
	int rc, ring = -1;

	if (scope->level >= SB_MAX_LEVELS)
		return sb_errf(err, -E2BIG, "cgroup %s is %u levels deep; the kernel side scans at most %d levels",
			       scope->path, scope->level, SB_MAX_LEVELS - 1);
	rc = take_lock(k, err);
	if (rc)
		return rc;
	for (id = 1; id < SB_MAX_SANDBOXES; id++) {
		struct sb_info other;

		if (bpf_map_lookup_elem(k->fd[SB_KM_INFO], &id, &other) || !other.cgroup_id) {
			if (!free_id)
				free_id = id;
			continue;
		}
		if (other.cgroup_id == scope->id) {
			rc = sb_errf(err, -EEXIST,
				     "cgroup %s is already a sandbox (sandbox %u); change its policy with 'sandbox-bpf policy reload --cgroup %s' or remove it with 'sandbox-bpf detach --cgroup %s'",
				     scope->path, id, scope->path, scope->path);
			goto out;
		}
		if (sb_cgroup_nested(other.cgroup, scope->path)) {
			rc = sb_errf(err, -EEXIST,
				     "cgroup %s and sandbox %u (%s) contain one another; a task must be in at most one sandbox: pick a cgroup outside it",
				     scope->path, id, other.cgroup);
			goto out;
		}
	}
	if (!free_id) {
		rc = sb_errf(err, -ENOSPC, "%d sandboxes are attached already (the maximum)", SB_MAX_SANDBOXES - 1);
		goto out;
	}
	id = free_id;
	ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sb_ring", 0, 0, SB_RING_BYTES, NULL);
	if (ring < 0) {
		rc = sb_errf(err, -errno, "cannot create the event ring buffer: %s", strerror(errno));
		goto out;
	}
	if (bpf_map_update_elem(k->fd[SB_KM_RINGS], &id, &ring, BPF_ANY)) {
		rc = sb_errf(err, -errno, "cannot register the event ring buffer: %s", strerror(errno));
		goto out;
	}
	rc = zero_counters(k, id);
	if (rc) {
		sb_errf(err, rc, "cannot reset the counters: %s", strerror(-rc));
		goto undo;
	}
	gops_init(k, &o);
	rc = sb_gen_install(&o, id, e, err);
	if (rc)
		goto undo;
	info = *tmpl;
	info.cgroup_id = scope->id;
	info.level = scope->level;
	info.counter = 1;
	snprintf(info.cgroup, sizeof(info.cgroup), "%s", scope->path);
	if (bpf_map_update_elem(k->fd[SB_KM_INFO], &id, &info, BPF_ANY)) {
		rc = sb_errf(err, -errno, "cannot write sb_info: %s", strerror(errno));
		goto undo;
	}
	/* Enforcement starts here: the policy is complete before the cgroup
	 * enters the scope, and the level bit is set after the entry exists. */
	if (bpf_map_update_elem(k->fd[SB_KM_SCOPE], &scope->id, &id, BPF_NOEXIST)) {
		rc = sb_errf(err, -errno, "cannot add the cgroup to the scope: %s", strerror(errno));
		goto undo;
	}
	rc = update_level_mask(k, err);
	if (rc) {
		bpf_map_delete_elem(k->fd[SB_KM_SCOPE], &scope->id);
		goto undo;
	}
	*idp = id;
	goto out;
undo:
	{
		struct sb_info zero = { 0 };
		struct sb_gops o2;

		gops_init(k, &o2);
		o2.settle = NULL;
		sb_gen_remove(&o2, id, NULL);
		bpf_map_update_elem(k->fd[SB_KM_INFO], &id, &zero, BPF_ANY);
		bpf_map_delete_elem(k->fd[SB_KM_RINGS], &id);
	}
out:
	if (ring >= 0)
		close(ring);
	drop_lock(k);
	return rc;
}

int sb_kernel_reload(struct sb_kernel *k, uint32_t id, const struct sb_kentries *e, const char *hash,
		     const char *source, struct sb_err *err)
{
	struct sb_gops o;
	struct sb_info info;
	uint32_t counter = 0;
	int rc;

	rc = take_lock(k, err);
	if (rc)
		return rc;
	rc = sb_kernel_info(k, id, &info);
	if (rc) {
		sb_errf(err, rc, "sandbox %u is not attached", id);
		goto out;
	}
	gops_init(k, &o);
	rc = sb_gen_reload(&o, id, e, &counter, err);
	if (counter) {
		info.counter = counter;
		if (hash)
			snprintf(info.hash, sizeof(info.hash), "%s", hash);
		if (source)
			snprintf(info.policy_source, sizeof(info.policy_source), "%s", source);
		if (bpf_map_update_elem(k->fd[SB_KM_INFO], &id, &info, BPF_ANY) && !rc)
			rc = sb_errf(err, -errno, "cannot update sb_info: %s", strerror(errno));
	}
out:
	drop_lock(k);
	return rc;
}

int sb_kernel_remove(struct sb_kernel *k, uint32_t id, bool unpin_if_last, bool *unpinned, struct sb_err *err)
{
	struct sb_info info, zero = { 0 };
	struct sb_gops o;
	__u32 other, left = 0;
	int rc;

	if (unpinned)
		*unpinned = false;
	rc = take_lock(k, err);
	if (rc)
		return rc;
	rc = sb_kernel_info(k, id, &info);
	if (rc) {
		sb_errf(err, rc, "sandbox %u is not attached", id);
		goto out;
	}
	/* Out of scope first: from here no task of the cgroup is confined. */
	bpf_map_delete_elem(k->fd[SB_KM_SCOPE], &info.cgroup_id);
	if (bpf_map_update_elem(k->fd[SB_KM_INFO], &id, &zero, BPF_ANY)) {
		rc = sb_errf(err, -errno, "cannot clear sb_info: %s", strerror(errno));
		goto out;
	}
	rc = update_level_mask(k, err);
	if (rc)
		goto out;
	/* Its held tasks are no longer confined: let them go. */
	sb_kernel_holds_release(k, id, true);
	gops_init(k, &o);
	rc = sb_gen_remove(&o, id, err);
	bpf_map_delete_elem(k->fd[SB_KM_RINGS], &id);
	zero_counters(k, id);
	/* Protected tgids of this sandbox. */
	{
		__u32 key, next, *pkey = NULL, v;

		while (bpf_map_get_next_key(k->fd[SB_KM_PROTECTED], pkey, &next) == 0) {
			key = next;
			pkey = &key;
			if (bpf_map_lookup_elem(k->fd[SB_KM_PROTECTED], &key, &v) == 0 && v == id) {
				bpf_map_delete_elem(k->fd[SB_KM_PROTECTED], &key);
				pkey = NULL;	/* restart: the iteration position is gone */
			}
		}
	}
	for (other = 1; other < SB_MAX_SANDBOXES; other++) {
		struct sb_info i2;

		if (bpf_map_lookup_elem(k->fd[SB_KM_INFO], &other, &i2) == 0 && i2.cgroup_id)
			left++;
	}
	if (!rc && unpin_if_last && left == 0) {
		rc = sb_kernel_unpin_all(err);
		if (!rc && unpinned)
			*unpinned = true;
	}
out:
	drop_lock(k);
	return rc;
}

int sb_kernel_unpin_if_empty(struct sb_kernel *k, struct sb_err *err)
{
	__u32 id;
	int rc;

	rc = take_lock(k, err);
	if (rc)
		return rc;
	for (id = 1; id < SB_MAX_SANDBOXES; id++) {
		struct sb_info info;

		if (bpf_map_lookup_elem(k->fd[SB_KM_INFO], &id, &info) == 0 && info.cgroup_id) {
			drop_lock(k);
			return 0;
		}
	}
	rc = sb_kernel_unpin_all(err);
	drop_lock(k);
	return rc;
}

int sb_kernel_protect(struct sb_kernel *k, uint32_t tgid, uint32_t id, bool on)
{
	if (on)
		return bpf_map_update_elem(k->fd[SB_KM_PROTECTED], &tgid, &id, BPF_ANY) ? -errno : 0;
	return bpf_map_delete_elem(k->fd[SB_KM_PROTECTED], &tgid) && errno != ENOENT ? -errno : 0;
}

int sb_kernel_ring_fd(struct sb_kernel *k, uint32_t id, struct sb_err *err)
{
	__u32 map_id;
	int fd;

	if (bpf_map_lookup_elem(k->fd[SB_KM_RINGS], &id, &map_id))
		return sb_errf(err, -errno, "sandbox %u has no event ring buffer: %s", id, strerror(errno));
	fd = bpf_map_get_fd_by_id(map_id);
	if (fd < 0)
		return sb_errf(err, -errno, "cannot open the event ring buffer of sandbox %u: %s", id,
			       strerror(errno));
	return fd;
}

int sb_kernel_counters(struct sb_kernel *k, uint32_t id, struct sb_counters *out)
{
	int ncpu = libbpf_num_possible_cpus(), h, c;
	struct sb_counters *v;

	if (ncpu <= 0)
		return -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (h = 0; h < SB_HOOK__COUNT; h++) {
		__u32 idx = id * SB_HOOK__COUNT + (__u32)h;

		memset(&out[h], 0, sizeof(out[h]));
		if (bpf_map_lookup_elem(k->fd[SB_KM_COUNTERS], &idx, v))
			continue;
		for (c = 0; c < ncpu; c++) {
			out[h].allowed += v[c].allowed;
			out[h].denied += v[c].denied;
			out[h].escalated += v[c].escalated;
			out[h].lost += v[c].lost;
		}
	}
	free(v);
	return 0;
}

int sb_kernel_meta(struct sb_kernel *k, struct sb_meta *m)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(k->fd[SB_KM_META], &zero, m) ? -errno : 0;
}
