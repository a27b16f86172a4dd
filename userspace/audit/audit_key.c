/* The host's Ed25519 seal key. The secret file holds the 32-byte seed as
 * hex and must be private to its owner: a key that others can read is no
 * proof of anything, so it is refused rather than used. The public half
 * sits beside it for verifiers to pin. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_internal.h"

#define KEY_NAME "audit-ed25519.key"
#define PUB_NAME "audit-ed25519.pub"

const char *sb_audit_key_dir(void)
{
	const char *d = getenv("SANDBOX_BPF_KEY_DIR");

	return d && *d ? d : "/var/lib/sandbox-bpf";
}

static int mkdir_p(const char *dir, struct sb_err *err)
{
	char buf[4096];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(buf))
		return sb_errf(err, -ENAMETOOLONG, "key directory path is too long");
	memcpy(buf, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return sb_errf(err, -errno, "cannot create %s: %s", buf, strerror(errno));
		buf[i] = i < n ? '/' : '\0';
	}
	return 0;
}

/* Writes data into dir/name through a temp file. With no_replace the
 * final step is link(), so of two processes creating the key at once
 * exactly one wins and the other reads the winner's complete file. */
static int write_file(const char *dir, const char *name, const char *data, mode_t mode, bool no_replace,
		      struct sb_err *err)
{
	char tmp[4200], path[4200];
	int fd, rc = 0;
	size_t len = strlen(data);

	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = mkstemp(tmp);
	if (fd < 0)
		return sb_errf(err, -errno, "cannot create a file in %s: %s", dir, strerror(errno));
	if (fchmod(fd, mode) || write(fd, data, len) != (ssize_t)len || fsync(fd))
		rc = sb_errf(err, -EIO, "cannot write %s: %s", tmp, strerror(errno));
	close(fd);
	if (!rc) {
		if (no_replace) {
			if (link(tmp, path))
				rc = errno == EEXIST ? -EEXIST : sb_errf(err, -errno, "cannot create %s: %s", path, strerror(errno));
		} else if (rename(tmp, path)) {
			rc = sb_errf(err, -errno, "cannot create %s: %s", path, strerror(errno));
		}
	}
	unlink(tmp);
	if (!rc) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return rc;
}

static int create_key(const char *dir, struct sb_err *err)
{
	uint8_t seed[crypto_sign_SEEDBYTES];
	char hex[2 * crypto_sign_SEEDBYTES + 2];
	int rc = mkdir_p(dir, err);

	if (rc)
		return rc;
	randombytes_buf(seed, sizeof(seed));
	sb_audit_hex(seed, sizeof(seed), hex);
	strcat(hex, "\n");
	rc = write_file(dir, KEY_NAME, hex, 0600, true, err);
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(hex, sizeof(hex));
	return rc == -EEXIST ? 0 : rc;
}

static int read_small(int fd, char *buf, size_t cap)
{
	ssize_t n;
	size_t len = 0;

	while ((n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	if (n < 0)
		return -errno;
	buf[len] = '\0';
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	return 0;
}

static int check_pub(const char *dir, const uint8_t pk[SB_AUDIT_PK_LEN], struct sb_err *err)
{
	char path[4200], want[SB_AUDIT_HEX_LEN + 1], have[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, PUB_NAME);
	sb_audit_hex(pk, SB_AUDIT_PK_LEN, want);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			return sb_errf(err, -errno, "cannot open %s: %s", path, strerror(errno));
		strcat(want, "\n");
		return write_file(dir, PUB_NAME, want, 0644, false, err);
	}
	if (read_small(fd, have, sizeof(have))) {
		close(fd);
		return sb_errf(err, -EIO, "cannot read %s", path);
	}
	close(fd);
	if (strcmp(have, want))
		return sb_errf(err, -EINVAL, "%s does not hold the public half of %s/%s; remove it to have it rewritten",
			       path, dir, KEY_NAME);
	return 0;
}

int sb_audit_key_load(uint8_t sk[64], uint8_t pk[SB_AUDIT_PK_LEN], bool create, struct sb_err *err)
{
	const char *dir = sb_audit_key_dir();
	uint8_t seed[crypto_sign_SEEDBYTES];
	char path[4200], hex[256];
	struct stat st;
	int fd, rc;

	if (sodium_init() < 0)
		return sb_errf(err, -EIO, "libsodium failed to initialise");
	snprintf(path, sizeof(path), "%s/%s", dir, KEY_NAME);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		rc = create_key(dir, err);
		if (rc)
			return rc;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return sb_errf(err, -errno, "cannot open the seal key %s: %s%s", path, strerror(errno),
			       errno == EACCES ? " (sealing needs root, or SANDBOX_BPF_KEY_DIR)" : "");
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return sb_errf(err, -EINVAL, "seal key %s is not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return sb_errf(err, -EPERM, "refusing seal key %s: mode %04o lets group or others read it (chmod 600 it)",
			       path, (unsigned)(st.st_mode & 07777));
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return sb_errf(err, -EPERM, "refusing seal key %s: owned by uid %u, not by uid %u", path,
			       (unsigned)st.st_uid, (unsigned)geteuid());
	}
	rc = read_small(fd, hex, sizeof(hex));
	close(fd);
	if (rc || sb_audit_unhex(hex, seed, sizeof(seed))) {
		sodium_memzero(hex, sizeof(hex));
		return sb_errf(err, -EINVAL, "seal key %s does not hold 64 hex digits", path);
	}
	sodium_memzero(hex, sizeof(hex));
	crypto_sign_seed_keypair(pk, sk, seed);
	sodium_memzero(seed, sizeof(seed));
	rc = check_pub(dir, pk, err);
	if (rc)
		sodium_memzero(sk, 64);
	return rc;
}

int sb_audit_pubkey_parse(const char *arg, uint8_t pk[SB_AUDIT_PK_LEN], struct sb_err *err)
{
	char buf[256];
	int fd;

	if (!sb_audit_unhex(arg, pk, SB_AUDIT_PK_LEN))
		return 0;
	fd = open(arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sb_errf(err, -errno, "--pubkey '%s' is neither 64 hex digits nor a readable file: %s", arg,
			       strerror(errno));
	if (read_small(fd, buf, sizeof(buf))) {
		close(fd);
		return sb_errf(err, -EIO, "cannot read %s", arg);
	}
	close(fd);
	if (sb_audit_unhex(buf, pk, SB_AUDIT_PK_LEN))
		return sb_errf(err, -EINVAL, "%s does not hold a public key (64 hex digits)", arg);
	return 0;
}
