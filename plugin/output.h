/* Output files: names (flame-<container>-<YYYYmmdd-HHMMSS>.<ext>), atomic writes (temp file in
 * the same directory + fsync + rename: never a truncated SVG), ownership under sudo, and the
 * three formats through flame/render.h and flame/profile.h. */
#pragma once
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "common/err.h"
#include "flame/profile.h"
#include "plugin/opts.h"

/* Paths for one container (index i of n). paths[f] is set (malloc'd) for each chosen format, NULL
 * otherwise. Errors: -o given for several containers without being a directory. */
int out_paths(const flame_opts *o, const char *container, int n, time_t when,
              char *paths[FMT_COUNT], flame_err *err);

typedef int (*out_writer_fn)(void *ctx, FILE *f, flame_err *err);
/* Write through fn into a temp file next to path, fsync, rename. chown to SUDO_UID/SUDO_GID
 * when running as root under sudo. On any failure the temp file is removed. */
int out_write_atomic(const char *path, out_writer_fn fn, void *ctx, flame_err *err);

typedef struct out_render {
    const profile *prof;
    const flame_opts *o;
    const char *name;        /* container name: default title, speedscope profile name */
    const char *subtitle;    /* may be NULL */
    /* checked before the rename; NULL = never */
    bool (*cancelled)(void *cancel_ctx);
    void *cancel_ctx;
} out_render;
int out_write_format(int fmt, const char *path, const out_render *r, flame_err *err);
/* Before anything is started: the directory of path exists and is writable (a read-only or
 * missing output dir fails in a second, not after the whole profile). */
int out_check_dir(const char *path, flame_err *err);
/* out_write_format; when that fails for a reason other than an interrupt (disk full, read-only,
 * removed dir), the profile is saved under the same name in $TMPDIR (or /tmp) instead:
 * returns 1, *path replaced by the new (malloc'd) path, err says both. 0 ok, <0 failed. */
int out_write_saved(int fmt, char **path, const out_render *r, flame_err *err);
/* Sanitise a container name for use in a file name ([A-Za-z0-9_.-], others -> '_'). */
void out_safe_name(const char *in, char *out, size_t n);
