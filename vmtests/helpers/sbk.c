/* sbk OP ARGS...: one system call for the kernel-enforcement VM tests.
 * Prints "OK" (plus a result for some ops) or the errno name (EPERM,
 * EACCES, ...) and exits 0; exits 2 on usage errors. Tests compare the
 * printed word, so a test can tell a denial from any other failure.
 *
 *   open PATH r|w|a|t|c|rw   open for read / write / append / O_TRUNC / O_CREAT|O_WRONLY / read-write
 *   opath-reopen PATH r|w    O_PATH, then reopen through /proc/self/fd/N
 *   opath-openat PATH NAME r|w  O_PATH on a directory, then openat(fd, NAME)
 *   truncate PATH | ftruncate PATH   (ftruncate opens O_WRONLY first)
 *   ftruncate-fd N | write-fd N      on an inherited fd
 *   unlink PATH | rmdir PATH | mkdir PATH | mknod PATH (fifo) | symlink TARGET PATH
 *   link OLD NEW | rename OLD NEW | exchange A B
 *   chmod PATH | chown PATH | setxattr PATH | removexattr PATH | utimes PATH
 *   exec PATH [ARG...]          execv, prints errno on failure (never returns on success)
 *   exec-argv0 PATH ARGV0 [ARG...]  execv with a chosen argv[0]
 *   execveat-fd PATH [ARG...]   open PATH, execveat(fd, "", AT_EMPTY_PATH)
 *   exec-procfd PATH [ARG...]   open PATH, execv("/proc/self/fd/N")
 *   memfd-exec PATH [ARG...]    copy PATH into a memfd, fexecve it
 *   mmap-exec PATH              mmap PATH with PROT_EXEC (what ld.so does)
 *   connect4 ADDR PORT | connect6 ADDR PORT  TCP connect
 *   sendto4 ADDR PORT | sendto6 ADDR PORT    UDP sendto without connect
 *   unix-connect PATH           AF_UNIX stream connect
 *   unix-abstract NAME          AF_UNIX connect to an abstract name
 *   listen4 PORT | listen6 PORT  listen (TCP) and accept forever (background)
 *   bpf                         bpf(BPF_MAP_CREATE)
 *   kill PID SIG | ptrace PID | traceme
 *   mount-tmpfs DIR | bind-mount SRC DST | umount DIR | unshare-user | unshare-mount
 *   unshare-bind SRC DST        new mount namespace, then a bind mount
 *   finit-module FILE           finit_module(2) (kernel_read_file)
 *   setns-none
 *   uring-open PATH w|r | uring-connect4 ADDR PORT   through io_uring
 *   sleep SECS                  (a target for kill/ptrace)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <liburing.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static int report(int rc)
{
	if (rc < 0) {
		const char *n = strerrorname_np(errno);

		printf("%s\n", n ? n : "EUNKNOWN");
	} else {
		printf("OK\n");
	}
	fflush(stdout);
	return 0;
}

static int open_flags(const char *m)
{
	if (!strcmp(m, "r"))
		return O_RDONLY;
	if (!strcmp(m, "w"))
		return O_WRONLY;
	if (!strcmp(m, "a"))
		return O_WRONLY | O_APPEND;
	if (!strcmp(m, "t"))
		return O_WRONLY | O_TRUNC;
	if (!strcmp(m, "c"))
		return O_WRONLY | O_CREAT;
	if (!strcmp(m, "rw"))
		return O_RDWR;
	fprintf(stderr, "sbk: open mode %s?\n", m);
	exit(2);
}

static int do_open(const char *path, const char *mode)
{
	int fd = open(path, open_flags(mode) | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

static int sockaddr_for(int fam, const char *a, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (fam == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, a, &s->sin_addr) != 1)
			return -1;
		*len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, a, &s->sin6_addr) != 1)
			return -1;
		*len = sizeof(*s);
	}
	return 0;
}

static int do_connect(int fam, const char *a, const char *p)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int s = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (s < 0 || sockaddr_for(fam, a, atoi(p), &ss, &len))
		return -1;
	rc = connect(s, (struct sockaddr *)&ss, len);
	close(s);
	return rc;
}

static int do_sendto(int fam, const char *a, const char *p)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int s = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ssize_t n;

	if (s < 0 || sockaddr_for(fam, a, atoi(p), &ss, &len))
		return -1;
	n = sendto(s, "x", 1, 0, (struct sockaddr *)&ss, len);
	close(s);
	return n < 0 ? -1 : 0;
}

static int do_listen(int fam, const char *p)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int s = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (s < 0 || sockaddr_for(fam, fam == AF_INET ? "0.0.0.0" : "::", atoi(p), &ss, &len))
		return report(-1);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&ss, len) || listen(s, 64))
		return report(-1);
	printf("LISTENING\n");
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c >= 0)
			close(c);
	}
}

static int do_unix(const char *path, bool abstract)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (abstract) {
		sun.sun_path[0] = '\0';
		strncpy(sun.sun_path + 1, path, sizeof(sun.sun_path) - 2);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	} else {
		strncpy(sun.sun_path, path, sizeof(sun.sun_path) - 1);
		len = sizeof(sun);
	}
	rc = connect(s, (struct sockaddr *)&sun, len);
	close(s);
	return rc;
}

static int do_uring_open(const char *path, const char *mode)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int rc;

	if (io_uring_queue_init(4, &ring, 0) < 0) {
		printf("ENOSYS_URING\n");
		return 0;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, path, open_flags(mode), 0644);
	io_uring_submit(&ring);
	if (io_uring_wait_cqe(&ring, &cqe) < 0) {
		io_uring_queue_exit(&ring);
		return report(-1);
	}
	rc = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	if (rc < 0) {
		errno = -rc;
		return report(-1);
	}
	close(rc);
	return report(0);
}

static int do_uring_connect(const char *a, const char *p)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct sockaddr_storage ss;
	socklen_t len;
	int s, rc;

	if (io_uring_queue_init(4, &ring, 0) < 0) {
		printf("ENOSYS_URING\n");
		return 0;
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_for(AF_INET, a, atoi(p), &ss, &len);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_connect(sqe, s, (struct sockaddr *)&ss, len);
	io_uring_submit(&ring);
	if (io_uring_wait_cqe(&ring, &cqe) < 0) {
		io_uring_queue_exit(&ring);
		return report(-1);
	}
	rc = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	close(s);
	if (rc < 0) {
		errno = -rc;
		return report(-1);
	}
	return report(0);
}

static int do_memfd_exec(char **argv)
{
	char buf[65536];
	int in = open(argv[0], O_RDONLY | O_CLOEXEC), m = (int)syscall(SYS_memfd_create, "sbk", 0);
	ssize_t n;

	if (in < 0 || m < 0)
		return report(-1);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(m, buf, (size_t)n) != n)
			return report(-1);
	close(in);
	fexecve(m, argv, environ);
	return report(-1);
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 2) {
		fprintf(stderr, "usage: sbk OP ARGS... (see vmtests/helpers/sbk.c)\n");
		return 2;
	}
	op = argv[1];
#define NEED(n)                                                            \
	do {                                                               \
		if (argc < (n) + 2) {                                      \
			fprintf(stderr, "sbk %s: needs %d arguments\n", op, n); \
			return 2;                                          \
		}                                                          \
	} while (0)
	if (!strcmp(op, "open")) {
		NEED(2);
		return report(do_open(argv[2], argv[3]));
	}
	if (!strcmp(op, "opath-reopen")) {
		char p[64];
		int fd;

		NEED(2);
		fd = open(argv[2], O_PATH | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		return report(do_open(p, argv[3]));
	}
	if (!strcmp(op, "opath-openat")) {
		int fd, f;

		NEED(3);
		fd = open(argv[2], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		f = openat(fd, argv[3], open_flags(argv[4]) | O_CLOEXEC, 0644);
		if (f >= 0)
			close(f);
		return report(f < 0 ? -1 : 0);
	}
	if (!strcmp(op, "truncate")) {
		NEED(1);
		return report(truncate(argv[2], 0));
	}
	if (!strcmp(op, "ftruncate")) {
		int fd;

		NEED(1);
		fd = open(argv[2], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		return report(ftruncate(fd, 0));
	}
	if (!strcmp(op, "ftruncate-fd")) {
		NEED(1);
		return report(ftruncate(atoi(argv[2]), 0));
	}
	if (!strcmp(op, "write-fd")) {
		NEED(1);
		return report(write(atoi(argv[2]), "x", 1) == 1 ? 0 : -1);
	}
	if (!strcmp(op, "unlink")) {
		NEED(1);
		return report(unlink(argv[2]));
	}
	if (!strcmp(op, "rmdir")) {
		NEED(1);
		return report(rmdir(argv[2]));
	}
	if (!strcmp(op, "mkdir")) {
		NEED(1);
		return report(mkdir(argv[2], 0755));
	}
	if (!strcmp(op, "mknod")) {
		NEED(1);
		return report(mknod(argv[2], S_IFIFO | 0644, 0));
	}
	if (!strcmp(op, "symlink")) {
		NEED(2);
		return report(symlink(argv[2], argv[3]));
	}
	if (!strcmp(op, "link")) {
		NEED(2);
		return report(link(argv[2], argv[3]));
	}
	if (!strcmp(op, "rename")) {
		NEED(2);
		return report(rename(argv[2], argv[3]));
	}
	if (!strcmp(op, "exchange")) {
		NEED(2);
		return report((int)syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], 2 /* RENAME_EXCHANGE */));
	}
	if (!strcmp(op, "chmod")) {
		NEED(1);
		return report(chmod(argv[2], 0600));
	}
	if (!strcmp(op, "chown")) {
		NEED(1);
		return report(chown(argv[2], getuid(), getgid()));
	}
	if (!strcmp(op, "setxattr")) {
		NEED(1);
		return report(setxattr(argv[2], "user.sbk", "1", 1, 0));
	}
	if (!strcmp(op, "removexattr")) {
		NEED(1);
		return report(removexattr(argv[2], "user.sbk"));
	}
	if (!strcmp(op, "utimes")) {
		NEED(1);
		return report(utimes(argv[2], NULL));
	}
	if (!strcmp(op, "exec")) {
		NEED(1);
		execv(argv[2], &argv[2]);
		return report(-1);
	}
	if (!strcmp(op, "exec-argv0")) {
		NEED(2);
		execv(argv[2], &argv[3]);
		return report(-1);
	}
	if (!strcmp(op, "execveat-fd")) {
		int fd;

		NEED(1);
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		syscall(SYS_execveat, fd, "", &argv[2], environ, AT_EMPTY_PATH);
		return report(-1);
	}
	if (!strcmp(op, "exec-procfd")) {
		char p[64];
		int fd;

		NEED(1);
		fd = open(argv[2], O_RDONLY);
		if (fd < 0)
			return report(-1);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		execv(p, &argv[2]);
		return report(-1);
	}
	if (!strcmp(op, "memfd-exec")) {
		NEED(1);
		return do_memfd_exec(&argv[2]);
	}
	if (!strcmp(op, "mmap-exec")) {
		int fd;
		void *p;

		NEED(1);
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		return report(p == MAP_FAILED ? -1 : 0);
	}
	if (!strcmp(op, "connect4") || !strcmp(op, "connect6")) {
		NEED(2);
		return report(do_connect(op[7] == '4' ? AF_INET : AF_INET6, argv[2], argv[3]));
	}
	if (!strcmp(op, "sendto4") || !strcmp(op, "sendto6")) {
		NEED(2);
		return report(do_sendto(op[6] == '4' ? AF_INET : AF_INET6, argv[2], argv[3]));
	}
	if (!strcmp(op, "listen4") || !strcmp(op, "listen6")) {
		NEED(1);
		return do_listen(op[6] == '4' ? AF_INET : AF_INET6, argv[2]);
	}
	if (!strcmp(op, "unix-connect")) {
		NEED(1);
		return report(do_unix(argv[2], false));
	}
	if (!strcmp(op, "unix-abstract")) {
		NEED(1);
		return report(do_unix(argv[2], true));
	}
	if (!strcmp(op, "unix-listen")) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		int s;

		NEED(1);
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (argv[2][0] == '@')
			strncpy(sun.sun_path + 1, argv[2] + 1, sizeof(sun.sun_path) - 2);
		else
			strncpy(sun.sun_path, argv[2], sizeof(sun.sun_path) - 1);
		if (bind(s, (struct sockaddr *)&sun,
			 argv[2][0] == '@' ? (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(argv[2])) :
					     (socklen_t)sizeof(sun)) ||
		    listen(s, 16))
			return report(-1);
		printf("LISTENING\n");
		fflush(stdout);
		for (;;) {
			int c = accept(s, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
	if (!strcmp(op, "bpf")) {
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.map_type = BPF_MAP_TYPE_ARRAY;
		a.key_size = 4;
		a.value_size = 4;
		a.max_entries = 1;
		return report((int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));
	}
	if (!strcmp(op, "kill")) {
		NEED(2);
		return report(kill(atoi(argv[2]), atoi(argv[3])));
	}
	if (!strcmp(op, "ptrace")) {
		NEED(1);
		if (ptrace(PTRACE_ATTACH, atoi(argv[2]), NULL, NULL) < 0)
			return report(-1);
		ptrace(PTRACE_DETACH, atoi(argv[2]), NULL, NULL);
		return report(0);
	}
	if (!strcmp(op, "traceme")) {
		return report((int)ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	}
	if (!strcmp(op, "mount-tmpfs")) {
		NEED(1);
		return report(mount("tmpfs", argv[2], "tmpfs", 0, NULL));
	}
	if (!strcmp(op, "bind-mount")) {
		NEED(2);
		return report(mount(argv[2], argv[3], NULL, MS_BIND, NULL));
	}
	if (!strcmp(op, "umount")) {
		NEED(1);
		return report(umount(argv[2]));
	}
	if (!strcmp(op, "unshare-bind")) {
		NEED(2);
		if (unshare(CLONE_NEWNS))
			return report(-1);
		return report(mount(argv[2], argv[3], NULL, MS_BIND, NULL));
	}
	if (!strcmp(op, "finit-module")) {
		int fd;

		NEED(1);
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		return report((int)syscall(SYS_finit_module, fd, "", 0));
	}
	if (!strcmp(op, "unshare-user")) {
		return report(unshare(CLONE_NEWUSER));
	}
	if (!strcmp(op, "unshare-mount")) {
		return report(unshare(CLONE_NEWNS));
	}
	if (!strcmp(op, "uring-open")) {
		NEED(2);
		return do_uring_open(argv[2], argv[3]);
	}
	if (!strcmp(op, "uring-connect4")) {
		NEED(2);
		return do_uring_connect(argv[2], argv[3]);
	}
	if (!strcmp(op, "sleep")) {
		NEED(1);
		sleep((unsigned)atoi(argv[2]));
		return 0;
	}
	fprintf(stderr, "sbk: unknown op '%s'\n", op);
	return 2;
}
