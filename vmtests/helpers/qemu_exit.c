/* qemu_exit CODE: flush the serial consoles, then leave QEMU through its
 * isa-debug-exit device (iobase 0xf4). QEMU then exits with (CODE << 1) | 1.
 * Used by the VM test /init; needs root (ioperm). Built static. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <termios.h>
#include <unistd.h>

#define DEBUG_EXIT_PORT 0xf4

static void drain(int fd)
{
	if (isatty(fd))
		tcdrain(fd);
}

static void drain_path(const char *path)
{
	int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return;
	drain(fd);
	close(fd);
}

int main(int argc, char **argv)
{
	char *end;
	long code;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CODE (0-127)\n", argv[0]);
		return 2;
	}
	errno = 0;
	code = strtol(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || code < 0 || code > 127) {
		fprintf(stderr, "%s: bad exit code '%s' (want 0-127)\n", argv[0], argv[1]);
		return 2;
	}
	fflush(NULL);
	drain(STDOUT_FILENO);
	drain(STDERR_FILENO);
	drain_path("/dev/console");
	drain_path("/dev/ttyS1");
	sync();
	if (ioperm(DEBUG_EXIT_PORT, 1, 1) != 0) {
		fprintf(stderr, "%s: ioperm(0x%x): %s\n", argv[0], DEBUG_EXIT_PORT, strerror(errno));
		return 1;
	}
	outb((unsigned char)code, DEBUG_EXIT_PORT);
	/* Still here: no isa-debug-exit device on this machine. */
	fprintf(stderr, "%s: no isa-debug-exit device at 0x%x\n", argv[0], DEBUG_EXIT_PORT);
	return 1;
}
