/* sbrt OP ARGS...: red-team system calls for the redteam_* VM tests (the
 * ones vmtests/helpers/sbk.c does not have). Same convention as sbk:
 * prints "OK" (or a result) or the errno name of the call that failed,
 * exits 0; exits 2 on usage errors.
 *
 * network
 *   sendto-unspec4 ADDR PORT     UDP/IPv4 sendto with sin_family = AF_UNSPEC (udp_sendmsg takes it as AF_INET)
 *   sendto-v4on6 ADDR PORT       AF_INET6 UDP socket, sendto with an AF_INET sockaddr
 *   sendmsg4 ADDR PORT | sendmmsg4 ADDR PORT   UDP with msg_name
 *   fastopen4 ADDR PORT          TCP sendto(MSG_FASTOPEN)
 *   fastopen-connect4 ADDR PORT  TCP_FASTOPEN_CONNECT, then connect
 *   udp-reconnect4 OKADDR OKPORT ADDR PORT  connect (allowed), connect(AF_UNSPEC), sendto (ADDR PORT)
 *   uring-sendmsg4 ADDR PORT     UDP sendmsg through io_uring
 *   socket FAMILY TYPE PROTO     socket(2) only (numbers)
 *   vsock-connect CID PORT       AF_VSOCK connect
 * files
 *   uring-rename OLD NEW | uring-unlink PATH | uring-mkdir PATH | uring-link OLD NEW | uring-symlink T PATH
 *   uring-sqpoll-open PATH       io_uring openat done by an SQPOLL kernel thread
 *   openat2 DIR NAME r|w RESOLVE   openat2 with resolve flags (beneath, in_root, no_symlinks, no_xdev, no_magiclinks)
 *   tmpfile-link DIR NEWPATH     O_TMPFILE in DIR, then linkat through /proc/self/fd/N
 *   tmpfile DIR                  O_TMPFILE|O_WRONLY in DIR
 *   fchmod PATH | fchown PATH | futimens PATH | fsetxattr PATH   through an O_RDONLY fd
 *   copy-into DST SRC            open DST for write, copy_file_range from SRC
 *   exchange A B                 renameat2(RENAME_EXCHANGE)
 *   noreplace A B                renameat2(RENAME_NOREPLACE)
 *   cat PATH                     open for read, print the first line (or the errno)
 *   swap-loop LINK T1 T2 N       atomically point LINK at T1, T2, T1... N times (rename of a temp symlink)
 *   open-loop PATH N             open PATH for read N times, print each first line or errno
 *   handle-open PATH [MOUNTDIR]  name_to_handle_at + open_by_handle_at (CAP_DAC_READ_SEARCH)
 * mounts, namespaces
 *   open-tree DIR NAME [userns]  open_tree(OPEN_TREE_CLONE) of DIR, then read DIR/NAME through it
 *   open-tree-exec DIR NAME [userns] -- ARGV...  open_tree clone of DIR, execveat(tree, NAME)
 *   fsmount-tmpfs [userns]       fsopen("tmpfs"), FSCONFIG_CMD_CREATE, fsmount
 *   userns-mount DIR             unshare(user+mount), mount tmpfs on DIR
 *   chroot DIR [userns] -- CMD...  chroot(DIR) (in a new user namespace), then exec CMD
 *   clone-newuser                clone3(CLONE_NEWUSER)
 *   unshare FLAGS                unshare (user,mount,net,pid,ipc,uts,cgroup; comma separated)
 *   setns-pid PID TYPE           pidfd_open + setns(pidfd, TYPE) (net, mnt, user, cgroup)
 *   clone-into-cgroup DIR        clone3(CLONE_INTO_CGROUP): the child prints its /proc/self/cgroup
 *   bpf-objget PATH              bpf(BPF_OBJ_GET)
 * processes
 *   tgkill PID SIG | sigqueue PID SIG | pidfd-signal PID SIG
 *   sigio PID                    F_SETOWN(PID) + O_ASYNC on a socket, then write to its peer
 *   sigio-ex PID                 F_SETOWN_EX(F_OWNER_PID, PID)
 *   ioctl-setown PID             ioctl(FIOSETOWN)
 *   pidfd-getfd PID FD           pidfd_getfd
 *   vm-write PID                 process_vm_writev of one byte (EFAULT means the access check passed)
 *   proc-mem PID                 open /proc/PID/mem O_RDWR
 *   perf PID                     perf_event_open(task clock, user only) on PID
 *   tiocsti                      new session, a pty as controlling terminal, TIOCSTI
 *   exec-pad PATH N ARG...       execv PATH with argv[0]=PATH, N empty words, then ARG...
 *   sctp-socket                  socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) (module autoload)
 *   execveat-opath PATH ARG...   O_PATH fd, then execveat(fd, "", AT_EMPTY_PATH)
 *   iopl                         iopl(3) (CAP_SYS_RAWIO)
 *   append-unlink PATH           open PATH O_APPEND (prints OK or the errno), then unlink it (same)
 *   sigio-cont-exec PATH ARG...  child: F_SETSIG SIGCONT + O_ASYNC on a pipe, execv PATH; once the
 *                                child is stopped (held), write to the pipe: the kernel's SIGIO
 *                                continues it; prints "SIGNAL N" or "EXIT N" (or NOT-HELD)
 *   (PID "self" = this process, for the sigio ops)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/bpf.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/vm_sockets.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/io.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/* Process state letter from /proc/PID/stat ('T': stopped), or 0. */
static char pstate(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

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

static int report_res(int res)
{
	if (res < 0) {
		errno = -res;
		return report(-1);
	}
	return report(0);
}

static void sin4(struct sockaddr_in *s, const char *a, const char *p)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons((uint16_t)atoi(p));
	if (inet_pton(AF_INET, a, &s->sin_addr) != 1) {
		fprintf(stderr, "sbrt: bad address %s\n", a);
		exit(2);
	}
}

static int uring_one(void (*prep)(struct io_uring_sqe *, void *), void *arg)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int rc;

	if (io_uring_queue_init(4, &ring, 0) < 0) {
		printf("ENOSYS_URING\n");
		return -1000;
	}
	prep(io_uring_get_sqe(&ring), arg);
	io_uring_submit(&ring);
	if (io_uring_wait_cqe(&ring, &cqe) < 0) {
		io_uring_queue_exit(&ring);
		return -EIO;
	}
	rc = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return rc;
}

struct two {
	const char *a, *b;
	struct msghdr *msg;
	int fd;
};

static void prep_rename(struct io_uring_sqe *s, void *a)
{
	struct two *t = a;

	io_uring_prep_renameat(s, AT_FDCWD, t->a, AT_FDCWD, t->b, 0);
}
static void prep_unlink(struct io_uring_sqe *s, void *a)
{
	io_uring_prep_unlinkat(s, AT_FDCWD, ((struct two *)a)->a, 0);
}
static void prep_mkdir(struct io_uring_sqe *s, void *a)
{
	io_uring_prep_mkdirat(s, AT_FDCWD, ((struct two *)a)->a, 0755);
}
static void prep_link(struct io_uring_sqe *s, void *a)
{
	struct two *t = a;

	io_uring_prep_linkat(s, AT_FDCWD, t->a, AT_FDCWD, t->b, 0);
}
static void prep_symlink(struct io_uring_sqe *s, void *a)
{
	struct two *t = a;

	io_uring_prep_symlinkat(s, t->a, AT_FDCWD, t->b);
}
static void prep_sendmsg(struct io_uring_sqe *s, void *a)
{
	struct two *t = a;

	io_uring_prep_sendmsg(s, t->fd, t->msg, 0);
}

static int uring_report(int rc)
{
	if (rc == -1000)
		return 0;
	return report_res(rc);
}

static unsigned long long resolve_flags(const char *s)
{
	unsigned long long f = 0;

	if (strstr(s, "beneath"))
		f |= RESOLVE_BENEATH;
	if (strstr(s, "in_root"))
		f |= RESOLVE_IN_ROOT;
	if (strstr(s, "no_symlinks"))
		f |= RESOLVE_NO_SYMLINKS;
	if (strstr(s, "no_xdev"))
		f |= RESOLVE_NO_XDEV;
	if (strstr(s, "no_magiclinks"))
		f |= RESOLVE_NO_MAGICLINKS;
	return f;
}

static int ns_flags(const char *s)
{
	int f = 0;

	if (strstr(s, "user"))
		f |= CLONE_NEWUSER;
	if (strstr(s, "mount"))
		f |= CLONE_NEWNS;
	if (strstr(s, "net"))
		f |= CLONE_NEWNET;
	if (strstr(s, "pid"))
		f |= CLONE_NEWPID;
	if (strstr(s, "ipc"))
		f |= CLONE_NEWIPC;
	if (strstr(s, "uts"))
		f |= CLONE_NEWUTS;
	if (strstr(s, "cgroup"))
		f |= CLONE_NEWCGROUP;
	return f;
}

/* New user + mount namespace with this uid mapped to 0 (like unshare -Urm). */
static int enter_userns(void)
{
	char buf[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int fd;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -1;
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "deny", 4) < 0) {
		}
		close(fd);
	}
	snprintf(buf, sizeof(buf), "0 %u 1", uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, buf, strlen(buf)) < 0)
		return -1;
	close(fd);
	snprintf(buf, sizeof(buf), "0 %u 1", gid);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd < 0 || write(fd, buf, strlen(buf)) < 0)
		return -1;
	close(fd);
	return 0;
}

static int first_line(int fd)
{
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	if (n < 0)
		return report(-1);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	printf("%s\n", buf);
	fflush(stdout);
	return 0;
}

static int do_cat(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return report(-1);
	first_line(fd);
	close(fd);
	return 0;
}

static int mkpty_ctty(int *master)
{
	int m, s;

	if (openpty(&m, &s, NULL, NULL, NULL))
		return -1;
	if (setsid() < 0)
		return -1;
	if (ioctl(s, TIOCSCTTY, 0))
		return -1;
	*master = m;
	return s;
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 2) {
		fprintf(stderr, "usage: sbrt OP ARGS... (see vmtests/helpers/sbrt.c)\n");
		return 2;
	}
	op = argv[1];
#define NEED(n)                                                             \
	do {                                                                \
		if (argc < (n) + 2) {                                       \
			fprintf(stderr, "sbrt %s: needs %d arguments\n", op, n); \
			return 2;                                           \
		}                                                           \
	} while (0)
#define IS(s) (!strcmp(op, s))

	/* ---- network ---- */
	if (IS("sendto-unspec4")) {
		struct sockaddr_in s;
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		NEED(2);
		sin4(&s, argv[2], argv[3]);
		s.sin_family = AF_UNSPEC;
		return report(sendto(fd, "x", 1, 0, (struct sockaddr *)&s, sizeof(s)) < 0 ? -1 : 0);
	}
	if (IS("sendto-v4on6")) {
		struct sockaddr_in s;
		int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		NEED(2);
		sin4(&s, argv[2], argv[3]);
		return report(sendto(fd, "x", 1, 0, (struct sockaddr *)&s, sizeof(s)) < 0 ? -1 : 0);
	}
	if (IS("sendmsg4") || IS("sendmmsg4")) {
		struct sockaddr_in s;
		struct iovec iov = { .iov_base = "x", .iov_len = 1 };
		struct mmsghdr mm[2];
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		NEED(2);
		sin4(&s, argv[2], argv[3]);
		memset(mm, 0, sizeof(mm));
		mm[0].msg_hdr.msg_name = &s;
		mm[0].msg_hdr.msg_namelen = sizeof(s);
		mm[0].msg_hdr.msg_iov = &iov;
		mm[0].msg_hdr.msg_iovlen = 1;
		mm[1] = mm[0];
		if (IS("sendmsg4"))
			return report(sendmsg(fd, &mm[0].msg_hdr, 0) < 0 ? -1 : 0);
		return report(sendmmsg(fd, mm, 2, 0) < 0 ? -1 : 0);
	}
	if (IS("fastopen4")) {
		struct sockaddr_in s;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		NEED(2);
		sin4(&s, argv[2], argv[3]);
		return report(sendto(fd, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&s, sizeof(s)) < 0 ? -1 : 0);
	}
	if (IS("fastopen-connect4")) {
		struct sockaddr_in s;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

		NEED(2);
		sin4(&s, argv[2], argv[3]);
		setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof(one));
		return report(connect(fd, (struct sockaddr *)&s, sizeof(s)));
	}
	if (IS("udp-reconnect4")) {
		struct sockaddr_in ok, bad;
		struct sockaddr un = { .sa_family = AF_UNSPEC };
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		NEED(4);
		sin4(&ok, argv[2], argv[3]);
		sin4(&bad, argv[4], argv[5]);
		if (connect(fd, (struct sockaddr *)&ok, sizeof(ok)))
			return report(-1);
		if (connect(fd, &un, sizeof(un)))
			return report(-1);
		return report(sendto(fd, "x", 1, 0, (struct sockaddr *)&bad, sizeof(bad)) < 0 ? -1 : 0);
	}
	if (IS("uring-sendmsg4")) {
		struct sockaddr_in s;
		struct iovec iov = { .iov_base = "x", .iov_len = 1 };
		struct msghdr m = { .msg_name = &s, .msg_namelen = sizeof(s), .msg_iov = &iov, .msg_iovlen = 1 };
		struct two t = { .msg = &m };

		NEED(2);
		sin4(&s, argv[2], argv[3]);
		t.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		return uring_report(uring_one(prep_sendmsg, &t));
	}
	if (IS("socket")) {
		NEED(3);
		return report(socket(atoi(argv[2]), atoi(argv[3]), atoi(argv[4])));
	}
	if (IS("sctp-socket")) {
		return report(socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP));
	}
	if (IS("vsock-connect")) {
		struct sockaddr_vm v = { .svm_family = AF_VSOCK };
		int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

		NEED(2);
		if (fd < 0)
			return report(-1);
		v.svm_cid = (unsigned)atoi(argv[2]);
		v.svm_port = (unsigned)atoi(argv[3]);
		return report(connect(fd, (struct sockaddr *)&v, sizeof(v)));
	}

	/* ---- files ---- */
	if (IS("uring-rename") || IS("uring-link") || IS("uring-symlink")) {
		struct two t;

		NEED(2);
		t.a = argv[2];
		t.b = argv[3];
		return uring_report(uring_one(IS("uring-rename") ? prep_rename : IS("uring-link") ? prep_link : prep_symlink, &t));
	}
	if (IS("uring-unlink") || IS("uring-mkdir")) {
		struct two t;

		NEED(1);
		t.a = argv[2];
		return uring_report(uring_one(IS("uring-unlink") ? prep_unlink : prep_mkdir, &t));
	}
	if (IS("uring-sqpoll-open")) {
		/* The open is done by the ring's SQPOLL kernel thread, not by
		 * the caller (the thread is in the caller's cgroup). */
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;
		int rc;

		NEED(1);
		if (io_uring_queue_init(4, &ring, IORING_SETUP_SQPOLL) < 0)
			return report(-1);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_openat(sqe, AT_FDCWD, argv[2], O_RDONLY, 0);
		io_uring_submit(&ring);
		if (io_uring_wait_cqe(&ring, &cqe) < 0)
			return report(-1);
		rc = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		io_uring_queue_exit(&ring);
		return report_res(rc < 0 ? rc : 0);
	}
	if (IS("openat2")) {
		struct open_how how = { 0 };
		int dfd, fd;

		NEED(4);
		dfd = open(argv[2], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return report(-1);
		how.flags = (argv[4][0] == 'w' ? O_WRONLY : O_RDONLY) | O_CLOEXEC;
		how.resolve = resolve_flags(argv[5]);
		fd = (int)syscall(SYS_openat2, dfd, argv[3], &how, sizeof(how));
		return report(fd);
	}
	if (IS("tmpfile") || IS("tmpfile-link")) {
		char p[64];
		int fd;

		NEED(1);
		fd = open(argv[2], O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || IS("tmpfile"))
			return report(fd);
		NEED(2);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		return report(linkat(AT_FDCWD, p, AT_FDCWD, argv[3], AT_SYMLINK_FOLLOW));
	}
	if (IS("fchmod") || IS("fchown") || IS("futimens") || IS("fsetxattr")) {
		int fd;

		NEED(1);
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		if (IS("fchmod"))
			return report(fchmod(fd, 0600));
		if (IS("fchown"))
			return report(fchown(fd, getuid(), getgid()));
		if (IS("futimens"))
			return report(futimens(fd, NULL));
		return report(fsetxattr(fd, "user.sbrt", "1", 1, 0));
	}
	if (IS("copy-into")) {
		int out, in;

		NEED(2);
		out = open(argv[2], O_WRONLY | O_CLOEXEC);
		if (out < 0)
			return report(-1);
		in = open(argv[3], O_RDONLY | O_CLOEXEC);
		if (in < 0)
			return report(-1);
		return report(copy_file_range(in, NULL, out, NULL, 4096, 0) < 0 ? -1 : 0);
	}
	if (IS("exchange") || IS("noreplace")) {
		NEED(2);
		return report((int)syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3],
					   IS("exchange") ? RENAME_EXCHANGE : RENAME_NOREPLACE));
	}
	if (IS("cat")) {
		NEED(1);
		return do_cat(argv[2]);
	}
	if (IS("swap-loop")) {
		char tmp[4096];
		int i, n;

		NEED(4);
		n = atoi(argv[5]);
		snprintf(tmp, sizeof(tmp), "%s.swap", argv[2]);
		for (i = 0; i < n; i++) {
			unlink(tmp);
			if (symlink(i % 2 ? argv[4] : argv[3], tmp) || rename(tmp, argv[2]))
				return report(-1);
		}
		return report(0);
	}
	if (IS("open-loop")) {
		int i, n;

		NEED(2);
		n = atoi(argv[3]);
		for (i = 0; i < n; i++)
			do_cat(argv[2]);
		return 0;
	}
	if (IS("handle-open")) {
		struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
		int mnt, mfd, fd;

		NEED(1);
		h->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, argv[2], h, &mnt, 0))
			return report(-1);
		/* Any directory on that mount (MOUNTDIR, else the file's own). */
		mfd = open(argc > 3 ? argv[3] : dirname(strdup(argv[2])), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		fd = open_by_handle_at(mfd, h, O_RDONLY);
		if (fd < 0)
			return report(-1);
		return first_line(fd);
	}

	/* ---- mounts, namespaces ---- */
	if (IS("open-tree")) {
		int t, fd;

		NEED(2);
		if (argc > 4 && !strcmp(argv[4], "userns") && enter_userns())
			return report(-1);
		t = (int)syscall(SYS_open_tree, AT_FDCWD, argv[2], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (t < 0)
			return report(-1);
		fd = openat(t, argv[3], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		return first_line(fd);
	}
	if (IS("open-tree-exec")) {
		int t, i = 4;

		NEED(2);
		if (argc > 4 && !strcmp(argv[4], "userns")) {
			if (enter_userns())
				return report(-1);
			i++;
		}
		t = (int)syscall(SYS_open_tree, AT_FDCWD, argv[2], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (t < 0)
			return report(-1);
		if (i < argc && !strcmp(argv[i], "--"))
			i++;
		syscall(SYS_execveat, t, argv[3], &argv[i], environ, 0);
		return report(-1);
	}
	if (IS("fsmount-tmpfs")) {
		int fs, m;

		if (argc > 2 && !strcmp(argv[2], "userns") && enter_userns())
			return report(-1);
		fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
		if (fs < 0)
			return report(-1);
		if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0))
			return report(-1);
		m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
		return report(m);
	}
	if (IS("userns-mount")) {
		NEED(1);
		if (enter_userns())
			return report(-1);
		return report(mount("tmpfs", argv[2], "tmpfs", 0, NULL));
	}
	if (IS("chroot")) {
		int i = 3;

		NEED(1);
		if (argc > 3 && !strcmp(argv[3], "userns")) {
			if (enter_userns())
				return report(-1);
			i++;
		}
		if (chroot(argv[2]) || chdir("/"))
			return report(-1);
		if (i < argc && !strcmp(argv[i], "--"))
			i++;
		if (i >= argc)
			return report(0);
		execv(argv[i], &argv[i]);
		return report(-1);
	}
	if (IS("clone-newuser")) {
		struct clone_args a = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
		long pid = syscall(SYS_clone3, &a, sizeof(a));

		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid((pid_t)pid, NULL, 0);
		return report(pid < 0 ? -1 : 0);
	}
	if (IS("unshare")) {
		NEED(1);
		return report(unshare(ns_flags(argv[2])));
	}
	if (IS("setns-pid")) {
		int pfd;

		NEED(2);
		pfd = (int)syscall(SYS_pidfd_open, atoi(argv[2]), 0);
		if (pfd < 0)
			return report(-1);
		return report(setns(pfd, ns_flags(argv[3]) ? ns_flags(argv[3]) : CLONE_NEWNS));
	}
	if (IS("clone-into-cgroup")) {
		struct clone_args a = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD };
		int cg, st;
		long pid;

		NEED(1);
		cg = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg < 0)
			return report(-1);
		a.cgroup = (unsigned)cg;
		fflush(stdout);
		pid = syscall(SYS_clone3, &a, sizeof(a));
		if (pid == 0) {
			int fd = open("/proc/self/cgroup", O_RDONLY);

			printf("ESCAPED ");
			first_line(fd);
			_exit(0);
		}
		if (pid < 0)
			return report(-1);
		waitpid((pid_t)pid, &st, 0);
		return 0;
	}
	if (IS("bpf-objget")) {
		union bpf_attr a;

		NEED(1);
		memset(&a, 0, sizeof(a));
		a.pathname = (unsigned long)argv[2];
		return report((int)syscall(SYS_bpf, BPF_OBJ_GET, &a, sizeof(a)));
	}

	/* ---- processes ---- */
	if (IS("tgkill")) {
		NEED(2);
		return report((int)syscall(SYS_tgkill, atoi(argv[2]), atoi(argv[2]), atoi(argv[3])));
	}
	if (IS("sigqueue")) {
		siginfo_t si;

		NEED(2);
		memset(&si, 0, sizeof(si));
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		return report((int)syscall(SYS_rt_sigqueueinfo, atoi(argv[2]), atoi(argv[3]), &si));
	}
	if (IS("pidfd-signal")) {
		int pfd;

		NEED(2);
		pfd = (int)syscall(SYS_pidfd_open, atoi(argv[2]), 0);
		if (pfd < 0)
			return report(-1);
		return report((int)syscall(SYS_pidfd_send_signal, pfd, atoi(argv[3]), NULL, 0));
	}
	if (IS("sigio") || IS("sigio-ex") || IS("ioctl-setown")) {
		int p[2], pid, rc;

		NEED(1);
		signal(SIGIO, SIG_IGN);
		pid = strcmp(argv[2], "self") ? atoi(argv[2]) : getpid();
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
			return report(-1);
		if (IS("sigio")) {
			rc = fcntl(p[0], F_SETOWN, pid);
		} else if (IS("sigio-ex")) {
			struct f_owner_ex ex = { .type = F_OWNER_PID, .pid = pid };

			rc = fcntl(p[0], F_SETOWN_EX, &ex);
		} else {
			rc = ioctl(p[0], FIOSETOWN, &pid);
		}
		if (rc < 0)
			return report(-1);
		if (fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK) < 0)
			return report(-1);
		if (write(p[1], "x", 1) != 1)
			return report(-1);
		usleep(100000);
		return report(0);
	}
	if (IS("pidfd-getfd")) {
		int pfd;

		NEED(2);
		pfd = (int)syscall(SYS_pidfd_open, atoi(argv[2]), 0);
		if (pfd < 0)
			return report(-1);
		return report((int)syscall(SYS_pidfd_getfd, pfd, atoi(argv[3]), 0));
	}
	if (IS("vm-write")) {
		char b = 0;
		struct iovec l = { .iov_base = &b, .iov_len = 1 }, r = { .iov_base = (void *)0x1000, .iov_len = 1 };

		NEED(1);
		return report(process_vm_writev(atoi(argv[2]), &l, 1, &r, 1, 0) < 0 ? -1 : 0);
	}
	if (IS("proc-mem")) {
		char p[64];

		NEED(1);
		snprintf(p, sizeof(p), "/proc/%s/mem", argv[2]);
		return report(open(p, O_RDWR | O_CLOEXEC));
	}
	if (IS("perf")) {
		struct perf_event_attr a;

		NEED(1);
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		return report((int)syscall(SYS_perf_event_open, &a, atoi(argv[2]), -1, -1, 0));
	}
	if (IS("tiocsti")) {
		int m, s;
		char c = '\n';

		s = mkpty_ctty(&m);
		if (s < 0)
			return report(-1);
		return report(ioctl(s, TIOCSTI, &c));
	}
	if (IS("exec-pad")) {
		int n, i, j = 0;
		char **v;

		NEED(2);
		n = atoi(argv[3]);
		v = calloc((size_t)(n + argc + 2), sizeof(*v));
		v[j++] = argv[2];
		for (i = 0; i < n; i++)
			v[j++] = "";
		for (i = 4; i < argc; i++)
			v[j++] = argv[i];
		v[j] = NULL;
		execv(argv[2], v);
		return report(-1);
	}
	if (IS("execveat-opath")) {
		int fd;

		NEED(1);
		fd = open(argv[2], O_PATH | O_CLOEXEC);
		if (fd < 0)
			return report(-1);
		syscall(SYS_execveat, fd, "", &argv[2], environ, AT_EMPTY_PATH);
		return report(-1);
	}
	if (IS("iopl"))
		return report(iopl(3));
	if (IS("append-unlink")) {
		int fd;

		NEED(1);
		fd = open(argv[2], O_WRONLY | O_APPEND | O_CLOEXEC);
		report(fd);
		if (fd >= 0)
			close(fd);
		return report(unlink(argv[2]));
	}
	if (IS("sigio-cont-exec")) {
		int p[2], st, i;
		pid_t c;
		char b = 'x';

		NEED(1);
		if (pipe(p))
			return report(-1);
		c = fork();
		if (c < 0)
			return report(-1);
		if (c == 0) {
			if (fcntl(p[0], F_SETOWN, getpid()) || fcntl(p[0], F_SETSIG, SIGCONT) ||
			    fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK))
				_exit(120);
			execv(argv[2], &argv[2]);
			_exit(121);
		}
		for (i = 0; i < 600 && pstate(c) != 't' && pstate(c) != 'T'; i++)
			usleep(100000);
		if (pstate(c) != 'T') {
			printf("NOT-HELD %c\n", pstate(c) ? pstate(c) : '?');
			kill(c, SIGKILL);
			waitpid(c, &st, 0);
			return 0;
		}
		if (write(p[1], &b, 1) != 1)
			return report(-1);
		if (waitpid(c, &st, 0) < 0)
			return report(-1);
		if (WIFSIGNALED(st))
			printf("SIGNAL %d\n", WTERMSIG(st));
		else
			printf("EXIT %d\n", WEXITSTATUS(st));
		return 0;
	}
	fprintf(stderr, "sbrt: unknown op '%s'\n", op);
	return 2;
}
