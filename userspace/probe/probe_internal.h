/* Helpers shared by the probe files; not part of the probe API. */
#ifndef SB_PROBE_INTERNAL_H
#define SB_PROBE_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* Reads a whole (small, /proc or /sys) file into buf, NUL-terminated.
 * Returns the length or a negative errno. -E2BIG when it does not fit. */
long sb_probe_read_file(const char *path, char *buf, size_t len);

/* Reads a file into a malloc'ed NUL-terminated buffer (*out); the caller
 * frees it. Returns 0 or a negative errno. */
int sb_probe_slurp(const char *path, char **out);

/* One line of /proc/self/mountinfo, fields unescaped (\040 etc.). */
struct sb_mount_entry {
	char root[4096];
	char point[4096];
	char fstype[64];
};
/* Iterates the mountinfo text: *cursor starts at the text; returns true and
 * fills e for every well-formed line, false at the end. */
bool sb_mountinfo_next(const char **cursor, struct sb_mount_entry *e);
/* True when a filesystem of type fstype is mounted at point. */
bool sb_mountinfo_has(const char *mountinfo, const char *point, const char *fstype);

/* Blocks the termination signals (INT, TERM, HUP, QUIT) while a probe holds
 * something that must be cleaned up; restore with sb_probe_signals_restore. */
void sb_probe_signals_block(sigset_t *old);
void sb_probe_signals_restore(const sigset_t *old);

/* libbpf prints warnings on stderr by default; probes must not print.
 * quiet() captures them (the last one is kept for details), loud() restores. */
void sb_probe_libbpf_quiet(void);
void sb_probe_libbpf_loud(void);
/* The last libbpf message captured while quiet ("" when none). */
const char *sb_probe_libbpf_last(void);

/* "EPERM" (or "errno 123"). */
const char *sb_probe_errno_name(int err);

#endif
