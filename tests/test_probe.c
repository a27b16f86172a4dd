/* doctor's probes: the decision logic with injected observations (what this
 * machine cannot produce), and the real probes: every result well formed,
 * nothing left behind (no cgroup, pin, mount, BPF fd, signal mask change). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "probe/probe.h"
#include "probe/probe_internal.h"
#include "doctor_sock.skel.h"

#define assert_contains(hay, needle)                                                        \
	do {                                                                                \
		if (!strstr((hay), (needle)))                                               \
			fail_msg("expected \"%s\" in \"%s\"", (needle), (hay));             \
	} while (0)

static void assert_well_formed(const char *name, const struct sb_probe_result *r)
{
	if (r->status != SB_PROBE_OK && r->status != SB_PROBE_MISSING && r->status != SB_PROBE_ERROR)
		fail_msg("%s: bad status %d", name, (int)r->status);
	if (!r->detail[0])
		fail_msg("%s: empty detail", name);
	if (r->status != SB_PROBE_OK && !r->remedy[0] && r->status != SB_PROBE_ERROR)
		fail_msg("%s: %s without a remedy: %s", name, sb_probe_status_name(r->status), r->detail);
	if (memchr(r->detail, '\n', strlen(r->detail)) || memchr(r->remedy, '\n', strlen(r->remedy)))
		fail_msg("%s: newline in detail or remedy", name);
}

/* ---- BPF-LSM classification ------------------------------------------- */

struct lsm_case {
	const char *what;
	struct sb_bpf_lsm_obs obs;
	enum sb_bpf_lsm_state state;
	enum sb_probe_status status;
	const char *detail;	/* substring */
	const char *remedy;	/* substring or NULL */
	enum sb_probe_status sleepable;
};

static const struct lsm_case lsm_cases[] = {
	{ "no BTF", { .btf = false, .privileged = true, .sleepable_err = -1 }, SB_BPF_LSM_NO_BTF,
	  SB_PROBE_MISSING, "no kernel BTF", "CONFIG_DEBUG_INFO_BTF", SB_PROBE_MISSING },
	{ "EPERM, privileged, empty log (this dev host)",
	  { .btf = true, .privileged = true, .load_err = EPERM, .log_empty = true, .sleepable_err = EPERM },
	  SB_BPF_LSM_LOAD_REFUSED, SB_PROBE_MISSING, "refused with EPERM although privileged, before the verifier",
	  "make vmtest", SB_PROBE_MISSING },
	{ "EPERM, privileged, with a log",
	  { .btf = true, .privileged = true, .load_err = EPERM, .log_empty = false, .sleepable_err = EPERM },
	  SB_BPF_LSM_LOAD_REFUSED, SB_PROBE_MISSING, "lockdown or a hypervisor policy", "another kernel or host",
	  SB_PROBE_MISSING },
	{ "EPERM, not privileged", { .btf = true, .privileged = false, .load_err = EPERM, .sleepable_err = EPERM },
	  SB_BPF_LSM_NO_PRIV, SB_PROBE_MISSING, "not privileged", "as root", SB_PROBE_MISSING },
	{ "no CONFIG_BPF_LSM",
	  { .btf = true, .privileged = true, .load_err = ESRCH, .sleepable_err = ESRCH,
	    .message = "failed to find kernel BTF type ID of 'bpf_lsm_file_open'" },
	  SB_BPF_LSM_NOT_BUILT, SB_PROBE_MISSING, "bpf_lsm_file_open", "CONFIG_BPF_LSM=y", SB_PROBE_MISSING },
	{ "other load error", { .btf = true, .privileged = true, .load_err = EINVAL, .sleepable_err = EINVAL },
	  SB_BPF_LSM_LOAD_FAILED, SB_PROBE_ERROR, "Invalid argument", "report this", SB_PROBE_MISSING },
	{ "attach fails", { .btf = true, .privileged = true, .attach_err = EBUSY, .sleepable_err = 0 },
	  SB_BPF_LSM_ATTACH_FAILED, SB_PROBE_ERROR, "attaching it failed", NULL, SB_PROBE_MISSING },
	{ "trigger fails", { .btf = true, .privileged = true, .trigger_err = EMFILE, .sleepable_err = 0 },
	  SB_BPF_LSM_TRIGGER_FAILED, SB_PROBE_ERROR, "opening / to trigger it failed", NULL, SB_PROBE_MISSING },
	{ "attached, never ran, bpf not listed",
	  { .btf = true, .privileged = true, .count_before = 3, .count_after = 3, .sleepable_err = 0,
	    .lsm_list = "lockdown,capability,landlock,yama,apparmor" },
	  SB_BPF_LSM_NEVER_RAN, SB_PROBE_MISSING, "never ran",
	  "lsm=lockdown,capability,landlock,yama,apparmor,bpf", SB_PROBE_MISSING },
	{ "attached, never ran, list unknown",
	  { .btf = true, .privileged = true, .sleepable_err = 0, .lsm_list = NULL }, SB_BPF_LSM_NEVER_RAN,
	  SB_PROBE_MISSING, "bpf is not an active LSM", "lsm=landlock,lockdown,yama,integrity,apparmor,bpf",
	  SB_PROBE_MISSING },
	{ "attached, never ran, bpf listed (odd)",
	  { .btf = true, .privileged = true, .sleepable_err = 0, .lsm_list = "capability,bpf" },
	  SB_BPF_LSM_NEVER_RAN, SB_PROBE_MISSING, "never ran", "report this", SB_PROBE_MISSING },
	{ "works (the VM)",
	  { .btf = true, .privileged = true, .count_before = 0, .count_after = 1, .sleepable_err = 0,
	    .lsm_list = "capability,landlock,bpf" },
	  SB_BPF_LSM_WORKS, SB_PROBE_OK, "counted 1 open of this process", NULL, SB_PROBE_OK },
	{ "works, sleepable refused",
	  { .btf = true, .privileged = true, .count_before = 5, .count_after = 7, .sleepable_err = EINVAL },
	  SB_BPF_LSM_WORKS, SB_PROBE_OK, "counted 2 opens", NULL, SB_PROBE_MISSING },
};

static void test_bpf_lsm_classify(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lsm_cases) / sizeof(lsm_cases[0]); i++) {
		const struct lsm_case *c = &lsm_cases[i];
		struct sb_probe_bpf_lsm out;

		memset(&out, 0x5a, sizeof(out));
		sb_probe_bpf_lsm_classify(&c->obs, &out);
		if (out.state != c->state || out.res.status != c->status)
			fail_msg("%s: got %s/%s, want %s/%s (%s)", c->what, sb_bpf_lsm_state_name(out.state),
				 sb_probe_status_name(out.res.status), sb_bpf_lsm_state_name(c->state),
				 sb_probe_status_name(c->status), out.res.detail);
		assert_contains(out.res.detail, c->detail);
		if (c->remedy)
			assert_contains(out.res.remedy, c->remedy);
		if (out.sleepable.status != c->sleepable)
			fail_msg("%s: sleepable %s, want %s (%s)", c->what, sb_probe_status_name(out.sleepable.status),
				 sb_probe_status_name(c->sleepable), out.sleepable.detail);
		assert_well_formed(c->what, &out.res);
		assert_well_formed(c->what, &out.sleepable);
		if (c->status == SB_PROBE_OK)
			assert_string_equal(out.res.remedy, "");
	}
	assert_string_equal(sb_bpf_lsm_state_name(SB_BPF_LSM_LOAD_REFUSED), "load-refused");
	assert_string_equal(sb_bpf_lsm_state_name(SB_BPF_LSM_NEVER_RAN), "never-ran");
	assert_string_equal(sb_bpf_lsm_state_name(SB_BPF_LSM_WORKS), "works");
}

/* ---- LSM list ----------------------------------------------------------- */

static void test_lsm_list_classify(void **state)
{
	struct sb_probe_lsm_list l;
	char s[128];

	(void)state;
	sb_probe_lsm_list_classify("lockdown,capability,landlock,bpf\n", 0, "none [integrity] confidentiality\n",
				   true, &l);
	assert_int_equal(l.res.status, SB_PROBE_OK);
	assert_true(l.known && l.has_bpf && l.has_landlock && l.private_mount);
	assert_string_equal(l.list, "lockdown,capability,landlock,bpf");
	assert_string_equal(l.lockdown, "integrity");
	assert_contains(l.res.detail, "private mount namespace");

	sb_probe_lsm_list_classify("capability,yama,apparmor,bpfx", 0, NULL, false, &l);
	assert_int_equal(l.res.status, SB_PROBE_MISSING);
	assert_false(l.has_bpf);
	assert_false(l.has_landlock);
	assert_string_equal(l.lockdown, "");
	assert_contains(l.res.remedy, "lsm=capability,yama,apparmor,bpfx,bpf");
	assert_contains(l.res.remedy, "GRUB_CMDLINE_LINUX");

	sb_probe_lsm_list_classify("bpf,capability", 0, NULL, false, &l);
	assert_true(l.has_bpf);

	sb_probe_lsm_list_classify(NULL, EPERM, NULL, true, &l);
	assert_int_equal(l.res.status, SB_PROBE_MISSING);
	assert_false(l.known);
	assert_contains(l.res.remedy, "mount -t securityfs");
	sb_probe_lsm_list_classify(NULL, ENODEV, NULL, true, &l);
	assert_int_equal(l.res.status, SB_PROBE_MISSING);
	assert_contains(l.res.remedy, "CONFIG_SECURITYFS");
	sb_probe_lsm_list_classify(NULL, EIO, NULL, true, &l);
	assert_int_equal(l.res.status, SB_PROBE_ERROR);

	sb_probe_lsm_suggest("capability,landlock", s, sizeof(s));
	assert_string_equal(s, "lsm=capability,landlock,bpf");
	sb_probe_lsm_suggest("capability,bpf", s, sizeof(s));
	assert_string_equal(s, "lsm=capability,bpf");
	sb_probe_lsm_suggest(NULL, s, sizeof(s));
	assert_contains(s, ",bpf");
}

/* ---- mountinfo, cgroup, bpffs ------------------------------------------ */

static const char *mi_hybrid =
	"22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
	"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
	"41 22 0:38 / /sys/fs/bpf rw,relatime - bpf bpf rw\n";
static const char *mi_v2 =
	"25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	"26 22 0:24 / /sys/fs/bpf rw - bpf none rw,mode=700\n";

static void test_mountinfo(void **state)
{
	struct sb_mount_entry *e = malloc(sizeof(*e));
	const char *cur =
		"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
		"garbage line\n"
		"\n"
		"2 1 0:5 /sub\\040dir /mnt/with\\040space rw shared:1 master:2 - tmpfs tmpfs rw\n"
		"3 1 0:6 / /no-separator rw tmpfs\n";

	(void)state;
	assert_non_null(e);
	assert_true(sb_mountinfo_next(&cur, e));
	assert_string_equal(e->point, "/");
	assert_string_equal(e->fstype, "ext4");
	assert_true(sb_mountinfo_next(&cur, e));
	assert_string_equal(e->root, "/sub dir");
	assert_string_equal(e->point, "/mnt/with space");
	assert_string_equal(e->fstype, "tmpfs");
	assert_false(sb_mountinfo_next(&cur, e));
	assert_false(sb_mountinfo_next(&cur, e));
	free(e);
	assert_true(sb_mountinfo_has(mi_hybrid, "/sys/fs/bpf", "bpf"));
	assert_false(sb_mountinfo_has(mi_hybrid, "/sys/fs/bpf", "tmpfs"));
	assert_false(sb_mountinfo_has("", "/", "ext4"));
}

static void test_cgroup_parse(void **state)
{
	struct sb_probe_cgroup *cg = calloc(1, sizeof(*cg));

	(void)state;
	assert_non_null(cg);
	/* Hybrid layout (this dev host): v2 at /sys/fs/cgroup/unified. */
	assert_int_equal(sb_probe_cgroup_parse(mi_hybrid, "4:memory:/x\n0::/\n", cg), 0);
	assert_string_equal(cg->mount, "/sys/fs/cgroup/unified");
	assert_true(cg->hybrid);
	assert_string_equal(cg->self, "/sys/fs/cgroup/unified");

	/* Pure v2 (systemd, the VM): our cgroup below the mount. */
	assert_int_equal(sb_probe_cgroup_parse(mi_v2, "0::/user.slice/user-1000.slice/session-2.scope\n", cg), 0);
	assert_string_equal(cg->mount, "/sys/fs/cgroup");
	assert_false(cg->hybrid);
	assert_string_equal(cg->self, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");

	/* /sys/fs/cgroup preferred over other cgroup2 mounts, whatever the order. */
	assert_int_equal(sb_probe_cgroup_parse("9 1 0:40 / /mnt/cg rw - cgroup2 cgroup2 rw\n"
					       "10 1 0:40 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
					       "0::/a\n", cg), 0);
	assert_string_equal(cg->mount, "/sys/fs/cgroup");
	assert_string_equal(cg->self, "/sys/fs/cgroup/a");

	/* A mount of a subtree (root "/ctr"): strip it from our path. */
	assert_int_equal(sb_probe_cgroup_parse("9 1 0:40 /ctr /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
					       "0::/ctr/job\n", cg), 0);
	assert_string_equal(cg->self, "/sys/fs/cgroup/job");
	/* ... and our cgroup outside that subtree: unknown. */
	assert_int_equal(sb_probe_cgroup_parse("9 1 0:40 /ctr /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
					       "0::/other\n", cg), 0);
	assert_string_equal(cg->self, "");
	/* No v2 line in /proc/self/cgroup (v1 only). */
	assert_int_equal(sb_probe_cgroup_parse(mi_v2, "1:name=systemd:/\n", cg), 0);
	assert_string_equal(cg->self, "");

	/* No cgroup2 at all. */
	assert_int_equal(sb_probe_cgroup_parse("31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
					       "0::/\n", cg), -ENOENT);
	assert_string_equal(cg->mount, "");
	cg->delegate[0] = '\0';
	sb_probe_cgroup_classify(cg);
	assert_int_equal(cg->res.status, SB_PROBE_MISSING);
	assert_contains(cg->res.remedy, "mount -t cgroup2");

	/* Classification of delegation. */
	assert_int_equal(sb_probe_cgroup_parse(mi_hybrid, "0::/\n", cg), 0);
	strcpy(cg->delegate, cg->mount);
	sb_probe_cgroup_classify(cg);
	assert_int_equal(cg->res.status, SB_PROBE_OK);
	assert_contains(cg->res.detail, "hybrid");
	assert_contains(cg->res.detail, "can create child cgroups in /sys/fs/cgroup/unified");
	cg->delegate[0] = '\0';
	cg->delegate_err = EACCES;
	sb_probe_cgroup_classify(cg);
	assert_int_equal(cg->res.status, SB_PROBE_MISSING);
	assert_int_equal(cg->res.code, EACCES);
	assert_contains(cg->res.remedy, "Delegate=yes");
	free(cg);
}

static void test_bpffs_classify(void **state)
{
	struct sb_probe_bpffs b;

	(void)state;
	sb_probe_bpffs_classify(mi_v2, &b);
	assert_true(b.mounted);
	assert_int_equal(b.res.status, SB_PROBE_OK);
	sb_probe_bpffs_classify("30 22 0:27 / /sys/fs/bpf rw - tmpfs tmpfs rw\n", &b);
	assert_false(b.mounted);
	assert_int_equal(b.res.status, SB_PROBE_MISSING);
	assert_contains(b.res.remedy, "mount -t bpf bpf /sys/fs/bpf");
}

/* ---- privileges, Landlock, seccomp, VM ---------------------------------- */

static void test_privs_parse(void **state)
{
	struct sb_probe_privs p;

	(void)state;
	assert_int_equal(sb_probe_privs_parse("Name:\tx\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n", 0, &p), 0);
	assert_int_equal(p.res.status, SB_PROBE_OK);
	assert_true(p.root && p.cap_bpf && p.cap_perfmon && p.cap_sys_admin && p.cap_net_admin && p.cap_mac_admin);
	assert_true(sb_probe_privs_can_bpf(&p));

	/* Only CAP_BPF: not enough to load tracing/LSM programs. */
	assert_int_equal(sb_probe_privs_parse("CapEff:\t0000008000000000\n", 1000, &p), 0);
	assert_true(p.cap_bpf);
	assert_false(p.cap_perfmon);
	assert_false(sb_probe_privs_can_bpf(&p));
	assert_int_equal(p.res.status, SB_PROBE_MISSING);
	assert_contains(p.res.detail, "not root (euid 1000)");

	/* CAP_BPF + CAP_PERFMON without CAP_SYS_ADMIN: can load, cannot make cgroups. */
	assert_int_equal(sb_probe_privs_parse("CapEff:\t000000c000000000\n", 1000, &p), 0);
	assert_true(sb_probe_privs_can_bpf(&p));
	assert_int_equal(p.res.status, SB_PROBE_MISSING);

	assert_int_equal(sb_probe_privs_parse("CapEff:\t0000000000000000\n", 1000, &p), 0);
	assert_contains(p.res.detail, "none of");
	assert_contains(p.res.remedy, "root");

	assert_int_equal(sb_probe_privs_parse("Name:\tx\n", 0, &p), 0);
	assert_int_equal(p.res.status, SB_PROBE_ERROR);
	assert_int_equal(sb_probe_privs_parse(NULL, 0, &p), -EINVAL);
}

static void test_landlock_classify(void **state)
{
	struct sb_probe_landlock l;

	(void)state;
	sb_probe_landlock_classify(7, 0, &l);
	assert_int_equal(l.res.status, SB_PROBE_OK);
	assert_int_equal(l.abi, 7);
	assert_contains(l.res.detail, "ABI 7");
	sb_probe_landlock_classify(1, 0, &l);
	assert_int_equal(l.abi, 1);
	assert_contains(l.res.detail, "file rules");
	sb_probe_landlock_classify(-1, ENOSYS, &l);
	assert_int_equal(l.res.status, SB_PROBE_MISSING);
	assert_int_equal(l.abi, 0);
	assert_contains(l.res.remedy, "CONFIG_SECURITY_LANDLOCK");
	sb_probe_landlock_classify(-1, EOPNOTSUPP, &l);
	assert_int_equal(l.res.status, SB_PROBE_MISSING);
	assert_contains(l.res.remedy, "lsm=");
	sb_probe_landlock_classify(-1, EFAULT, &l);
	assert_int_equal(l.res.status, SB_PROBE_ERROR);
	sb_probe_landlock_classify(0, 0, &l);
	assert_int_equal(l.res.status, SB_PROBE_ERROR);
}

static void test_seccomp_classify(void **state)
{
	struct sb_probe_seccomp s;

	(void)state;
	sb_probe_seccomp_classify(0, 0, 0, 0, 0, 0, &s);
	assert_int_equal(s.res.status, SB_PROBE_OK);
	assert_true(s.filter && s.user_notif);
	sb_probe_seccomp_classify(0, 0, -1, EOPNOTSUPP, -1, EINVAL, &s);
	assert_int_equal(s.res.status, SB_PROBE_MISSING);
	assert_true(s.filter);
	assert_false(s.user_notif);
	assert_contains(s.res.detail, "EOPNOTSUPP");
	sb_probe_seccomp_classify(0, 0, 0, 0, -1, EINVAL, &s);
	assert_false(s.user_notif);
	sb_probe_seccomp_classify(-1, EINVAL, -1, EINVAL, -1, EINVAL, &s);
	assert_int_equal(s.res.status, SB_PROBE_MISSING);
	assert_false(s.filter);
	assert_contains(s.res.remedy, "CONFIG_SECCOMP_FILTER");
	sb_probe_seccomp_classify(-1, EFAULT, -1, EFAULT, -1, EFAULT, &s);
	assert_int_equal(s.res.status, SB_PROBE_ERROR);
}

static void test_vm_classify(void **state)
{
	struct sb_probe_vm v;

	(void)state;
	sb_probe_vm_classify("/usr/bin/qemu-system-x86_64", 0, 12, &v);
	assert_int_equal(v.qemu.status, SB_PROBE_OK);
	assert_int_equal(v.kvm.status, SB_PROBE_OK);
	assert_true(v.kvm_present);
	assert_string_equal(v.qemu_path, "/usr/bin/qemu-system-x86_64");
	assert_contains(v.kvm.detail, "TCG");
	sb_probe_vm_classify(NULL, ENOENT, -1, &v);
	assert_int_equal(v.qemu.status, SB_PROBE_MISSING);
	assert_contains(v.qemu.remedy, "qemu-system-x86");
	assert_int_equal(v.kvm.status, SB_PROBE_MISSING);
	assert_false(v.kvm_present);
	assert_string_equal(v.qemu_path, "");
	sb_probe_vm_classify(NULL, EACCES, -1, &v);
	assert_contains(v.kvm.remedy, "group kvm");
}

static void test_find_in_path(void **state)
{
	char dir[] = "/tmp/sb-probe-path.XXXXXX", exe[64], noexe[64], env[200], out[256];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/tool", dir);
	snprintf(noexe, sizeof(noexe), "%s/plain", dir);
	fd = open(exe, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	assert_true(fd >= 0);
	close(fd);
	fd = open(noexe, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(env, sizeof(env), "/nonexistent::%s", dir);
	assert_int_equal(sb_probe_find_in_path("tool", env, out, sizeof(out)), 0);
	assert_string_equal(out, exe);
	assert_int_equal(sb_probe_find_in_path("plain", env, out, sizeof(out)), -ENOENT);
	assert_int_equal(sb_probe_find_in_path("absent", env, out, sizeof(out)), -ENOENT);
	assert_int_equal(sb_probe_find_in_path("tool", env, out, 4), -ENAMETOOLONG);
	assert_int_equal(sb_probe_find_in_path("", env, out, sizeof(out)), -EINVAL);
	unlink(exe);
	unlink(noexe);
	rmdir(dir);
}

static void test_btf_at(void **state)
{
	char path[] = "/tmp/sb-probe-btf.XXXXXX";
	struct sb_probe_btf b;
	int fd;

	(void)state;
	sb_probe_btf_at("/nonexistent/vmlinux", &b);
	assert_int_equal(b.res.status, SB_PROBE_MISSING);
	assert_int_equal(b.size, -1);
	assert_contains(b.res.remedy, "CONFIG_DEBUG_INFO_BTF");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	sb_probe_btf_at(path, &b);
	assert_int_equal(b.res.status, SB_PROBE_ERROR); /* empty */
	assert_int_equal(write(fd, "BTF!", 4), 4);
	close(fd);
	sb_probe_btf_at(path, &b);
	assert_int_equal(b.res.status, SB_PROBE_OK);
	assert_int_equal(b.size, 4);
	unlink(path);
}

/* ---- backend selection and the report ----------------------------------- */

static struct sb_probe_report *fake_report(enum sb_bpf_lsm_state lsm, int landlock_abi, bool seccomp)
{
	struct sb_probe_report *r = calloc(1, sizeof(*r));
	struct sb_bpf_lsm_obs obs = { .btf = true, .privileged = true, .sleepable_err = 0 };

	assert_non_null(r);
	if (lsm == SB_BPF_LSM_WORKS)
		obs.count_after = 1;
	else
		obs.load_err = EPERM;
	sb_probe_bpf_lsm_classify(&obs, &r->bpf_lsm);
	strcpy(r->cgroup.mount, "/sys/fs/cgroup");
	strcpy(r->cgroup.delegate, "/sys/fs/cgroup");
	sb_probe_cgroup_classify(&r->cgroup);
	sb_probe_landlock_classify(landlock_abi ? landlock_abi : -1, landlock_abi ? 0 : ENOSYS, &r->landlock);
	sb_probe_seccomp_classify(seccomp ? 0 : -1, seccomp ? 0 : EINVAL, 0, 0, 0, 0, &r->seccomp);
	sb_probe_vm_classify("/usr/bin/qemu-system-x86_64", ENOENT, -1, &r->vm);
	sb_probe_set(&r->cgroup_sock.res, SB_PROBE_OK, 0, NULL, "fake");
	return r;
}

static void test_backend_select(void **state)
{
	struct sb_probe_report *r;

	(void)state;
	r = fake_report(SB_BPF_LSM_WORKS, 7, true);
	sb_backend_select(r, false);
	assert_int_equal(r->backend, SB_BACKEND_BPF_LSM);
	assert_true(r->backend_built);
	assert_int_equal(r->backend_res.status, SB_PROBE_OK);
	assert_contains(r->backend_res.detail, "bpf-lsm");
	assert_contains(r->backend_res.detail, "argv-level");
	assert_int_equal(r->vmtests.status, SB_PROBE_OK);
	assert_contains(r->vmtests.detail, "TCG");
	/* BPF-LSM works but no cgroup v2: not usable for run. */
	r->cgroup.delegate[0] = '\0';
	sb_probe_cgroup_classify(&r->cgroup);
	sb_backend_select(r, false);
	assert_int_equal(r->backend, SB_BACKEND_LANDLOCK_SECCOMP);
	assert_contains(r->backend_res.detail, "cgroup v2 is not usable");
	free(r);

	/* This dev host: LSM refused, Landlock + seccomp, fallback not built. */
	r = fake_report(SB_BPF_LSM_LOAD_REFUSED, 7, true);
	sb_backend_select(r, false);
	assert_int_equal(r->backend, SB_BACKEND_LANDLOCK_SECCOMP);
	assert_false(r->backend_built);
	assert_int_equal(r->backend_res.status, SB_PROBE_MISSING);
	assert_contains(r->backend_res.detail, "landlock+seccomp (Landlock ABI 7");
	assert_contains(r->backend_res.detail, "load-refused");
	assert_contains(r->backend_res.remedy, "not yet available in this build");
	assert_contains(r->backend_res.remedy, "make vmtest");
	sb_backend_select(r, true);
	assert_true(r->backend_built);
	assert_int_equal(r->backend_res.status, SB_PROBE_OK);
	assert_string_equal(r->backend_res.remedy, "");
	free(r);

	r = fake_report(SB_BPF_LSM_LOAD_REFUSED, 0, true);
	sb_backend_select(r, true);
	assert_int_equal(r->backend, SB_BACKEND_NONE);
	assert_int_equal(r->backend_res.status, SB_PROBE_MISSING);
	assert_contains(r->backend_res.remedy, "make vmtest");
	free(r);
	r = fake_report(SB_BPF_LSM_LOAD_REFUSED, 3, false);
	sb_backend_select(r, true);
	assert_int_equal(r->backend, SB_BACKEND_NONE);
	sb_probe_vm_classify(NULL, ENOENT, -1, &r->vm);
	sb_backend_select(r, true);
	assert_int_equal(r->vmtests.status, SB_PROBE_MISSING);
	assert_contains(r->vmtests.remedy, "apt-get install");
	free(r);

	assert_string_equal(sb_backend_name(SB_BACKEND_BPF_LSM), "bpf-lsm");
	assert_string_equal(sb_backend_name(SB_BACKEND_LANDLOCK_SECCOMP), "landlock+seccomp");
	assert_string_equal(sb_backend_name(SB_BACKEND_NONE), "none");
}

static const char *const line_names[] = {
	"kernel", "privileges", "btf", "lsm-list", "bpf-lsm", "bpf-lsm-sleepable", "cgroup2", "bpffs",
	"cgroup-sock", "landlock", "seccomp", "qemu", "kvm", "backend", "vm-tests",
};

static void check_json(const struct sb_probe_report *r)
{
	cJSON *o = sb_probe_report_to_json(r), *checks, *c, *s;
	char *text;
	size_t i;

	assert_non_null(o);
	text = cJSON_PrintUnformatted(o);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"checks\":{\"kernel\":{\"status\":"));
	free(text);
	checks = cJSON_GetObjectItemCaseSensitive(o, "checks");
	assert_true(cJSON_IsObject(checks));
	assert_int_equal(cJSON_GetArraySize(checks), (int)(sizeof(line_names) / sizeof(line_names[0])));
	for (i = 0; i < sizeof(line_names) / sizeof(line_names[0]); i++) {
		c = cJSON_GetObjectItemCaseSensitive(checks, line_names[i]);
		if (!cJSON_IsObject(c))
			fail_msg("no check %s in the JSON", line_names[i]);
		s = cJSON_GetObjectItemCaseSensitive(c, "status");
		assert_true(cJSON_IsString(s));
		if (strcmp(s->valuestring, "ok") && strcmp(s->valuestring, "missing") && strcmp(s->valuestring, "error"))
			fail_msg("%s: status %s", line_names[i], s->valuestring);
		assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "detail")));
		/* status first, so that a grep for "NAME":{"status":"ok" works */
		assert_string_equal(c->child->string, "status");
	}
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "backend")->valuestring, sb_backend_name(r->backend));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "bpf_lsm")->valuestring,
			    sb_bpf_lsm_state_name(r->bpf_lsm.state));
	assert_true(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o, "backend_built")));
	assert_true(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o, "vm_tests")));
	assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(checks, "landlock"), "abi")));
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(checks, "bpf-lsm"), "state")));
	cJSON_Delete(o);
}

static void test_report_lines_and_json(void **state)
{
	struct sb_probe_report *r = fake_report(SB_BPF_LSM_LOAD_REFUSED, 7, true);
	struct sb_probe_line lines[SB_PROBE_MAX_LINES];
	size_t i, n;

	(void)state;
	sb_backend_select(r, false);
	n = sb_probe_report_lines(r, lines, SB_PROBE_MAX_LINES);
	assert_int_equal(n, sizeof(line_names) / sizeof(line_names[0]));
	for (i = 0; i < n; i++)
		assert_string_equal(lines[i].name, line_names[i]);
	assert_int_equal(sb_probe_report_lines(r, lines, 3), 3);
	check_json(r);
	assert_null(sb_probe_report_to_json(NULL));
	free(r);
}

/* ---- the real probes: well formed, nothing left behind ------------------ */

struct leftovers {
	int doctor_cgroups;	/* sandbox-bpf-doctor.<our pid>.* anywhere we probe */
	int securityfs_mounts;
	int bpf_fds;		/* our fds on bpf objects (programs, links, maps) */
	int fds;
	int doctor_pins;	/* anything named *doctor* in /sys/fs/bpf */
	sigset_t mask;
};

static int count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

static int count_substr(const char *dir, const char *sub)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, sub))
			n++;
	closedir(d);
	return n;
}

static void snapshot(const struct sb_probe_cgroup *cg, struct leftovers *l)
{
	char prefix[64], *mi = NULL, link[256], path[300];
	struct sb_mount_entry *e = malloc(sizeof(*e));
	const char *cur;
	struct dirent *de;
	DIR *d;

	assert_non_null(e);
	memset(l, 0, sizeof(*l));
	snprintf(prefix, sizeof(prefix), SB_PROBE_CGROUP_PREFIX "%d.", (int)getpid());
	if (cg->mount[0])
		l->doctor_cgroups += count_prefix(cg->mount, prefix);
	if (cg->self[0] && strcmp(cg->self, cg->mount))
		l->doctor_cgroups += count_prefix(cg->self, prefix);
	assert_int_equal(sb_probe_slurp("/proc/self/mountinfo", &mi), 0);
	for (cur = mi; sb_mountinfo_next(&cur, e);)
		if (!strcmp(e->fstype, "securityfs"))
			l->securityfs_mounts++;
	free(mi);
	free(e);
	d = opendir("/proc/self/fd");
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		l->fds++;
		if (strstr(link, "bpf-prog") || strstr(link, "bpf-link") || strstr(link, "bpf-map") ||
		    strstr(link, "bpf_link"))
			l->bpf_fds++;
	}
	closedir(d);
	l->doctor_pins = count_substr(SB_BPFFS_PATH, "doctor");
	pthread_sigmask(SIG_SETMASK, NULL, &l->mask);
}

static void assert_same(const struct leftovers *a, const struct leftovers *b)
{
	assert_int_equal(a->doctor_cgroups, b->doctor_cgroups);
	assert_int_equal(a->securityfs_mounts, b->securityfs_mounts);
	assert_int_equal(a->bpf_fds, b->bpf_fds);
	assert_int_equal(a->fds, b->fds);
	assert_int_equal(a->doctor_pins, b->doctor_pins);
	assert_int_equal(memcmp(&a->mask, &b->mask, sizeof(a->mask)), 0);
}

static void test_real_probes(void **state)
{
	struct sb_probe_report *r = calloc(1, sizeof(*r));
	struct sb_probe_cgroup *cg = calloc(1, sizeof(*cg));
	struct sb_probe_line lines[SB_PROBE_MAX_LINES];
	struct leftovers before, after;
	size_t i, n;

	(void)state;
	assert_non_null(r);
	assert_non_null(cg);
	assert_int_equal(sb_probe_cgroup(cg), 0);
	snapshot(cg, &before);
	assert_int_equal(before.doctor_cgroups, 0);

	assert_int_equal(sb_probe_run_all(r), 0);
	snapshot(cg, &after);
	assert_same(&before, &after);

	n = sb_probe_report_lines(r, lines, SB_PROBE_MAX_LINES);
	for (i = 0; i < n; i++)
		assert_well_formed(lines[i].name, lines[i].res);
	print_message("# bpf-lsm here: %s (%s)\n", sb_bpf_lsm_state_name(r->bpf_lsm.state), r->bpf_lsm.res.detail);
	print_message("# backend here: %s\n", sb_backend_name(r->backend));

	/* Consistency between the probes, whatever this machine supports. */
	assert_int_equal(r->bpf_lsm.res.status == SB_PROBE_OK, r->bpf_lsm.state == SB_BPF_LSM_WORKS);
	if (r->bpf_lsm.state == SB_BPF_LSM_LOAD_REFUSED || r->bpf_lsm.state == SB_BPF_LSM_NO_PRIV)
		assert_true(r->bpf_lsm.res.code == EPERM || r->bpf_lsm.res.code == EACCES);
	if (r->btf.res.status != SB_PROBE_OK)
		assert_int_equal(r->bpf_lsm.state, SB_BPF_LSM_NO_BTF);
	if (r->bpf_lsm.state == SB_BPF_LSM_WORKS)
		assert_int_equal(r->backend, SB_BACKEND_BPF_LSM + (r->cgroup.res.status != SB_PROBE_OK));
	if (r->lsm.known)
		assert_true(r->lsm.list[0] != '\0');
	if (r->cgroup.res.status == SB_PROBE_OK) {
		assert_true(r->cgroup.mount[0] == '/');
		assert_true(r->cgroup.delegate[0] == '/');
	}
	if (r->cgroup_sock.res.status == SB_PROBE_OK)
		assert_int_equal(r->cgroup.res.status, SB_PROBE_OK);
	if (r->landlock.res.status == SB_PROBE_OK)
		assert_true(r->landlock.abi >= 1);
	assert_true(r->kernel.release[0] != '\0');
	check_json(r);

	/* Each probe alone, twice: still nothing left behind. */
	for (i = 0; i < 2; i++) {
		struct sb_probe_bpf_lsm l;
		struct sb_probe_cgroup_sock s;
		struct sb_probe_lsm_list ll;

		assert_int_equal(sb_probe_bpf_lsm(NULL, &l), 0);
		assert_int_equal(l.state, r->bpf_lsm.state);
		assert_int_equal(sb_probe_cgroup_sock(&r->cgroup, &s), 0);
		assert_int_equal(s.res.status, r->cgroup_sock.res.status);
		assert_int_equal(sb_probe_lsm_list(&ll), 0);
		assert_int_equal(ll.known, r->lsm.known);
	}
	snapshot(cg, &after);
	assert_same(&before, &after);

	/* The detector itself sees a leftover program and a leftover cgroup. */
	if (r->cgroup_sock.res.status == SB_PROBE_OK) {
		struct doctor_sock_bpf *skel = doctor_sock_bpf__open_and_load();
		char dir[PATH_MAX + 64];

		assert_non_null(skel);
		snprintf(dir, sizeof(dir), "%s/" SB_PROBE_CGROUP_PREFIX "%d.selftest", r->cgroup.delegate, (int)getpid());
		assert_int_equal(mkdir(dir, 0755), 0);
		snapshot(cg, &after);
		rmdir(dir);
		doctor_sock_bpf__destroy(skel);
		assert_true(after.bpf_fds > before.bpf_fds);
		assert_int_equal(after.doctor_cgroups, before.doctor_cgroups + 1);
		snapshot(cg, &after);
		assert_same(&before, &after);
	}

	assert_int_equal(sb_probe_run_all(NULL), -EINVAL);
	assert_int_equal(sb_probe_cgroup_sock(NULL, NULL), -EINVAL);
	assert_int_equal(sb_probe_bpf_lsm(NULL, NULL), -EINVAL);
	free(cg);
	free(r);
}

/* A probe cgroup left by a doctor that was killed (SIGKILL) is removed by the
 * next run; one of a live process is not touched. */
static void test_cgroup_stale_sweep(void **state)
{
	struct sb_probe_cgroup *cg = calloc(1, sizeof(*cg));
	char dead[PATH_MAX + 64], live[PATH_MAX + 64];
	pid_t pid;
	int st;

	(void)state;
	assert_non_null(cg);
	assert_int_equal(sb_probe_cgroup(cg), 0);
	if (cg->res.status != SB_PROBE_OK) {
		print_message("# skip reason: no cgroup where a child can be created here\n");
		free(cg);
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	snprintf(dead, sizeof(dead), "%s/" SB_PROBE_CGROUP_PREFIX "%d.0", cg->delegate, (int)pid);
	snprintf(live, sizeof(live), "%s/" SB_PROBE_CGROUP_PREFIX "%d.0", cg->delegate, (int)getppid());
	assert_int_equal(mkdir(dead, 0755), 0);
	assert_int_equal(mkdir(live, 0755), 0);
	assert_int_equal(sb_probe_cgroup(cg), 0);
	assert_int_equal(access(live, F_OK), 0);
	assert_int_equal(rmdir(live), 0);
	if (access(dead, F_OK) == 0) {
		rmdir(dead);
		fail_msg("stale probe cgroup %s was not removed", dead);
	}
	free(cg);
}

/* A cgroup directory that does not exist: the socket probe reports an error
 * and creates nothing. */
static void test_cgroup_sock_bad_dir(void **state)
{
	struct sb_probe_cgroup *cg = calloc(1, sizeof(*cg));
	struct sb_probe_cgroup_sock s;

	(void)state;
	assert_non_null(cg);
	assert_int_equal(sb_probe_cgroup_sock(cg, &s), 0);
	assert_int_equal(s.res.status, SB_PROBE_MISSING);
	assert_contains(s.res.detail, "not tried");
	strcpy(cg->delegate, "/nonexistent/sandbox-bpf-test");
	assert_int_equal(sb_probe_cgroup_sock(cg, &s), 0);
	assert_int_not_equal(s.res.status, SB_PROBE_OK);
	assert_well_formed("cgroup-sock", &s.res);
	free(cg);
}

/* ---- the command --------------------------------------------------------- */

static int run_cmd(const char *args, char *out, size_t out_len)
{
	const char *bin = getenv("SB_BIN");
	char cmd[1024];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>/dev/null", bin, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < out_len) {
		size_t k = fread(out + n, 1, out_len - 1 - n, p);

		if (k == 0)
			break;
		n += k;
	}
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cmd_doctor(void **state)
{
	static char out[65536];
	cJSON *o;
	size_t i;

	(void)state;
	if (!getenv("SB_BIN")) {
		print_message("# skip reason: SB_BIN not set (run through make test)\n");
		skip();
	}
	assert_int_equal(run_cmd("doctor --help", out, sizeof(out)), 0);
	assert_contains(out, "usage: sandbox-bpf doctor [--json]");
	assert_int_equal(run_cmd("doctor --bogus", out, sizeof(out)), 2);
	assert_int_equal(run_cmd("doctor extra", out, sizeof(out)), 2);

	assert_int_equal(run_cmd("doctor --json", out, sizeof(out)), 0);
	/* exactly one line */
	assert_non_null(strchr(out, '\n'));
	assert_string_equal(strchr(out, '\n'), "\n");
	o = cJSON_Parse(out);
	assert_non_null(o);
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "checks")));
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "backend")));
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "version")));
	cJSON_Delete(o);

	assert_int_equal(run_cmd("doctor", out, sizeof(out)), 0);
	for (i = 0; i < sizeof(line_names) / sizeof(line_names[0]); i++) {
		char want[64];
		const char *p;

		snprintf(want, sizeof(want), "  %s ", line_names[i]);
		p = strstr(out, want);
		if (!p)
			fail_msg("no line for %s in:\n%s", line_names[i], out);
	}
	/* every line starts with a status word */
	for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		if (strncmp(l, "ok ", 3) && strncmp(l, "missing ", 8) && strncmp(l, "error ", 6))
			fail_msg("bad line: %.80s", l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bpf_lsm_classify),
		cmocka_unit_test(test_lsm_list_classify),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_cgroup_parse),
		cmocka_unit_test(test_bpffs_classify),
		cmocka_unit_test(test_privs_parse),
		cmocka_unit_test(test_landlock_classify),
		cmocka_unit_test(test_seccomp_classify),
		cmocka_unit_test(test_vm_classify),
		cmocka_unit_test(test_find_in_path),
		cmocka_unit_test(test_btf_at),
		cmocka_unit_test(test_backend_select),
		cmocka_unit_test(test_report_lines_and_json),
		cmocka_unit_test(test_real_probes),
		cmocka_unit_test(test_cgroup_stale_sweep),
		cmocka_unit_test(test_cgroup_sock_bad_dir),
		cmocka_unit_test(test_cmd_doctor),
	};

	return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
