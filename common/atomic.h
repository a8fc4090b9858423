/* Writing an output file atomically: a reader never sees half a file, a failure leaves any older
 * file untouched and no temporary file behind. Used by every writer of user-visible outputs. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"

/* Writes the content into out; returns 0 or <0 with err set. */
typedef int (*atomic_writer_fn)(void *ctx, FILE *out, flame_err *err);

/* fn writes into a temporary file ".<name>.XXXXXX" in path's directory (same filesystem, so
 * rename() is atomic); then fsync, mode 0666 & ~umask, owner = the sudo user when run as root
 * under sudo (SUDO_UID/SUDO_GID), rename over path. On any failure the temporary is unlinked.
 * A path that is a device, FIFO or socket (/dev/null, a named pipe) is written in place; a
 * directory is an error. */
int atomic_write_file(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err);
/* Is path an existing device, FIFO or socket (written in place, never replaced)? */
bool atomic_is_special(const char *path);
