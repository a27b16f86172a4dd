/* lsm_smoke: prove that BPF-LSM programs run in this kernel.
 * Loads lsm/file_open (bpf/lsm_smoke.bpf.c), attaches it, opens a file and
 * checks that the program counted the open, then checks that it can deny an
 * open with EPERM. When bpf is not an active LSM, load and attach succeed but
 * the program never runs: the counter catches that. Exit 0 pass, 1 fail. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lsm_smoke.skel.h"

static void show_lsms(void)
{
	char buf[512] = "";
	int fd = open("/sys/kernel/security/lsm", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	printf("lsm_smoke: active LSMs: %s\n", buf[0] ? buf : "(unknown: securityfs not mounted?)");
}

static int make_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || close(fd) != 0) {
		fprintf(stderr, "lsm_smoke: create %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int main(void)
{
	const char *dir = getenv("VMTEST_WORKDIR") ? getenv("VMTEST_WORKDIR") : "/tmp";
	char allowed[4096], denied[4096];
	struct lsm_smoke_bpf *skel;
	struct stat st;
	__u64 before;
	int fd, err, rc = 1;

	show_lsms();
	snprintf(allowed, sizeof(allowed), "%s/lsm_smoke.allowed", dir);
	snprintf(denied, sizeof(denied), "%s/lsm_smoke.denied", dir);
	if (make_file(allowed) || make_file(denied) || stat(denied, &st) != 0)
		return 1;

	skel = lsm_smoke_bpf__open();
	if (!skel) {
		fprintf(stderr, "lsm_smoke: open skeleton: %s\n", strerror(errno));
		return 1;
	}
	skel->bss->target_tgid = (__u32)getpid();
	err = lsm_smoke_bpf__load(skel);
	if (err) {
		fprintf(stderr, "lsm_smoke: load lsm/file_open: %s\n", strerror(-err));
		goto out;
	}
	err = lsm_smoke_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "lsm_smoke: attach lsm/file_open: %s\n", strerror(-err));
		goto out;
	}

	before = skel->bss->open_count;
	fd = open(allowed, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "lsm_smoke: open %s: %s\n", allowed, strerror(errno));
		goto out;
	}
	close(fd);
	if (skel->bss->open_count <= before) {
		fprintf(stderr, "lsm_smoke: program attached but never ran (open_count=%llu): "
			"bpf is not an active LSM in this kernel\n",
			(unsigned long long)skel->bss->open_count);
		goto out;
	}
	printf("lsm_smoke: file_open ran (open_count=%llu)\n",
	       (unsigned long long)skel->bss->open_count);

	skel->bss->deny_ino = st.st_ino;
	fd = open(denied, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || errno != EPERM) {
		fprintf(stderr, "lsm_smoke: open of the denied file: want EPERM, got %s\n",
			fd >= 0 ? "success" : strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	printf("lsm_smoke: file_open denied with EPERM (deny_count=%llu)\n",
	       (unsigned long long)skel->bss->deny_count);
	rc = 0;
out:
	lsm_smoke_bpf__destroy(skel);
	return rc;
}
