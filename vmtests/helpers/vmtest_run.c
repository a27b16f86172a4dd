/* vmtest_run: run one VM test with a time limit, used by the VM test /init.
 *
 *   vmtest_run -t SECS -o LOG -s STATUS [-c CGROUP] -- CMD [ARG...]
 *
 * CMD runs in a new session (its own process group), in cgroup directory
 * CGROUP if given (created), with stdin /dev/null and stdout+stderr on a
 * pipe that this program copies to its own stdout (the console, live) and to
 * LOG. When CMD exits, or after SECS seconds, everything left in its process
 * group and cgroup is killed; output is drained for at most a short grace
 * period, so a leftover process that holds the pipe cannot hang the run.
 * STATUS gets one line: "exit N", "signal N" or "timeout SECS".
 * Exit status: 0 when STATUS was written, 2 on usage or setup errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DRAIN_GRACE_MS 1000
#define REAP_WAIT_MS 10000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

static void kill_all(pid_t pgid, const char *cgroup)
{
	kill(-pgid, SIGKILL);
	if (cgroup)
		write_file(cgroup, "cgroup.kill", "1");
}

/* Copy what is readable now to the console and the log. Returns 0 on EOF. */
static int pump(int in, int log_fd)
{
	char buf[8192];
	ssize_t n = read(in, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return 0;
	write_all(STDOUT_FILENO, buf, (size_t)n);
	write_all(log_fd, buf, (size_t)n);
	return 1;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s -t SECS -o LOG -s STATUS [-c CGROUP] -- CMD [ARG...]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *log_path = NULL, *status_path = NULL, *cgroup = NULL;
	long secs = 0;
	int opt, pfd[2], log_fd, eof = 0, timed_out = 0, reaped = 0, wstatus = 0;
	long long deadline, drain_until = -1;
	pid_t pid;
	FILE *st;

	while ((opt = getopt(argc, argv, "+t:o:s:c:")) != -1) {
		switch (opt) {
		case 't': secs = strtol(optarg, NULL, 10); break;
		case 'o': log_path = optarg; break;
		case 's': status_path = optarg; break;
		case 'c': cgroup = optarg; break;
		default: usage(argv[0]);
		}
	}
	if (secs <= 0 || !log_path || !status_path || optind >= argc)
		usage(argv[0]);
	if (cgroup && mkdir(cgroup, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "vmtest_run: mkdir %s: %s (running without a cgroup)\n", cgroup,
			strerror(errno));
		cgroup = NULL;
	}
	log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (log_fd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, "vmtest_run: %s: %s\n", log_path, strerror(errno));
		return 2;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "vmtest_run: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDONLY);
		char self[32];

		setsid();
		if (cgroup) {
			snprintf(self, sizeof(self), "%d", (int)getpid());
			if (write_file(cgroup, "cgroup.procs", self) != 0)
				fprintf(stderr, "vmtest_run: cannot join %s: %s\n", cgroup, strerror(errno));
		}
		if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0)
			_exit(126);
		close_range(3, ~0U, 0);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "vmtest_run: exec %s: %s\n", argv[optind], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);
	deadline = now_ms() + secs * 1000;

	for (;;) {
		long long now = now_ms(), wait_ms = 100;
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };

		if (!reaped && waitpid(pid, &wstatus, WNOHANG) == pid) {
			reaped = 1;
			drain_until = now + DRAIN_GRACE_MS;
			kill_all(pid, cgroup); /* leftovers of a finished test */
		}
		if (!reaped && !timed_out && now >= deadline) {
			timed_out = 1;
			kill_all(pid, cgroup);
			drain_until = now + REAP_WAIT_MS;
		}
		if (reaped && (eof || now >= drain_until))
			break;
		if (timed_out && !reaped && now >= drain_until)
			break; /* unkillable (stuck in the kernel): give up on it */
		if (eof) {
			usleep(100 * 1000);
			continue;
		}
		if (poll(&p, 1, (int)wait_ms) > 0 && !pump(pfd[0], log_fd))
			eof = 1;
	}
	close(pfd[0]);
	close(log_fd);
	if (cgroup)
		rmdir(cgroup); /* fails while unkillable tasks remain: fine */

	st = fopen(status_path, "we");
	if (!st) {
		fprintf(stderr, "vmtest_run: %s: %s\n", status_path, strerror(errno));
		return 2;
	}
	if (timed_out)
		fprintf(st, "timeout %ld\n", secs);
	else if (WIFEXITED(wstatus))
		fprintf(st, "exit %d\n", WEXITSTATUS(wstatus));
	else
		fprintf(st, "signal %d\n", WTERMSIG(wstatus));
	return fclose(st) == 0 ? 0 : 2;
}
