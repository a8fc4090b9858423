/* Writing an output file atomically: a reader never sees half a file, a failure leaves any older
 * file untouched and no temporary file behind. Used by every writer of user-visible outputs. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"

/* Writes the content into out; returns 0 or <0 with err set. */
typedef int (*atomic_writer_fn)(void *ctx, FILE *out, flame_err *err);

/* fn's output to path. What the last component of path is decides, never a link resolved by
 * hand:
 * - missing or a regular file: fn writes into a temporary file ".<name>.XXXXXX" (random, O_EXCL)
 *   in path's directory (same filesystem, so the rename is atomic); then fsync, mode
 *   0666 & ~umask, owner = the sudo user when run as root under sudo (SUDO_UID/SUDO_GID), rename
 *   over path. On any failure the temporary is unlinked and an older file stays as it was.
 * - a directory: an error.
 * - a device, FIFO or socket (-o /dev/null, a named pipe): written in place, never replaced.
 * - a symbolic link: the kernel follows it (with its own rules for any further link), and only
 *   when the kernel's protected_symlinks rule would (checked even when that sysctl is off): the
 *   link is ours, or its directory is not sticky and world-writable, or the directory's owner
 *   owns it. What it names is then written as above (a regular file replaced in its own
 *   directory, the link staying a link; /dev/stdout's pipe or terminal in place).
 * A device or FIFO in a sticky world-writable directory is refused by the same rule. */
int atomic_write_file(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err);
/* fn's output into a new file dir/<stem>-XXXXXX<ext> (mkostemps: a random name, O_EXCL, mode
 * 0600, never a link or a planted file), chowned to the sudo user; *made (malloc'd) names it.
 * On failure nothing is left. For a fallback location nobody else should predict. */
int atomic_write_new(const char *dir, const char *stem, const char *ext, atomic_writer_fn fn,
                     void *ctx, char **made, flame_err *err);
/* Would atomic_write_file refuse path for what it is (a directory; another user's link, FIFO or
 * device in a sticky world-writable directory)? 0, or <0 with err set. A check before a long
 * profile, not a guarantee. */
int atomic_check(const char *path, flame_err *err);
/* Is path an existing device, FIFO or socket (written in place, never replaced)? */
bool atomic_is_special(const char *path);
