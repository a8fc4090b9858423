/* Output files, for every verb: the four formats (SVG through flame/render.h, folded text,
 * speedscope JSON, pprof through flame/pprof.h), names (flame-<container>-<YYYYmmdd-HHMMSS>.<ext>),
 * atomic writes (temp file in the same directory + fsync + rename: never half a graph; a failure
 * leaves an older file as it was), "-" for standard output, ownership under sudo, and a fallback to
 * a new randomly named file in $TMPDIR. */
#pragma once
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "common/args.h"
#include "common/err.h"
#include "flame/pprof.h"
#include "flame/profile.h"
#include "flame/render.h"

enum out_fmt { FMT_SVG, FMT_FOLDED, FMT_SPEEDSCOPE, FMT_PPROF, FMT_COUNT };
extern const char *const out_fmt_names[]; /* "svg", "folded", "speedscope", "pprof", NULL */
const char *out_fmt_name(int fmt);
const char *out_fmt_ext(int fmt); /* ".svg", ".folded", ".speedscope.json", ".pb.gz" */
/* By the file's extension (.svg; .folded .txt .collapsed; .speedscope.json .json; .pb.gz .pb
 * .pprof; any case): the format, or -1. The one table of known extensions. */
int out_fmt_of_path(const char *path);
/* The one rule of every verb that writes a profile (docs/PLUGIN.md "Formats"): given, the
 * --format bits (1 << FMT_*; 0 = not given); path, -o (NULL or "-": no name to read); allowed, the
 * formats the verb can write. Without --format a known extension decides, else dflt (-1: none,
 * an error). A known extension that names a format not given, or one the verb cannot write, is
 * refused (FLAME_EXIT_USAGE), as is a --format outside allowed. *out: the formats to write. */
int out_formats(const char *path, unsigned given, unsigned allowed, int dflt, unsigned *out,
                flame_err *err);
/* out_formats for a verb that writes one format: given is a FMT_* or -1; the format, or -1. */
int out_format(const char *path, int given, unsigned allowed, int dflt, flame_err *err);
#define OUT_ALL_FORMATS ((1u << FMT_COUNT) - 1)

/* The -o/--output and --format entries of a verb's option table (common/args.h): the same names,
 * kinds and completion in every verb, each verb's own help. off: ARG_FIELD of a const char * and
 * of an int (an unsigned bitmask with ARG_LIST). */
#define OUT_OUTPUT_SPEC(offset, meta_, help_)                                                      \
    {                                                                                              \
        .lng = "output", .shrt = 'o', .kind = ARG_STR, .off = (offset), .meta = meta_,             \
        .help = help_, .complete = "file"                                                          \
    }
#define OUT_FORMAT_SPEC(offset, help_, choices_, flags_)                                           \
    {                                                                                              \
        .lng = "format", .kind = ARG_CHOICE, .off = (offset), .meta = "FMT", .help = help_,        \
        .choices = choices_, .flags = flags_                                                       \
    }

typedef struct out_job {
    const profile *p;
    int fmt;
    const render_opts *ro; /* SVG; NULL = defaults */
    const char *name;      /* the speedscope profile's name */
    const pprof_meta *pm;  /* pprof: period, time, labels; NULL = nothing known */
    /* checked before the rename (an interrupt while writing: nothing written); NULL = never */
    bool (*cancelled)(void *cancel_ctx);
    void *cancel_ctx;
} out_job;

/* j's bytes, in its format, into an open stream: what out_write puts into its file (serve's
 * exports are the same bytes as show's files). */
int out_write_to(FILE *f, const out_job *j, flame_err *err);
/* Write j to path ("-" = standard output, no temporary file). Errors name the path. */
int out_write(const char *path, const out_job *j, flame_err *err);
/* out_write; when that fails for a reason other than an interrupt (disk full, read-only, removed
 * dir), the output is saved in $TMPDIR (or /tmp) instead, as a new file <name>-XXXXXX<ext>
 * (random, mode 0600: never a name someone could have planted a link or a file under): returns
 * 1, *path replaced by the new (malloc'd) path, err says both. 0 ok, <0 failed. */
int out_write_saved(char **path, const out_job *j, flame_err *err);

typedef int (*out_writer_fn)(void *ctx, FILE *f, flame_err *err);
/* fn's output to path as out_write does: "-" = standard output, else atomically. For what is not
 * a profile (the store's timeline picture). */
int out_write_with(const char *path, out_writer_fn fn, void *ctx, flame_err *err);
/* Write through fn into a temp file next to path, fsync, rename; chown to SUDO_UID/SUDO_GID
 * under sudo. On any failure the temp file is removed. */
int out_write_atomic(const char *path, out_writer_fn fn, void *ctx, flame_err *err);

/* The profile verb's names for one container (index i of n): paths[f] (malloc'd) for each
 * format in the formats mask (bit 1 << FMT_*), NULL for the others. output: -o (a file, or an
 * existing directory), or NULL.
 * Errors: a file -o for several containers. */
int out_paths(const char *output, unsigned formats, const char *container, int n, time_t when,
              char *paths[FMT_COUNT], flame_err *err);
/* out_paths for one mode's files (docs/MODES.md): mode (NULL = none, the names above) goes into
 * every name before the extension, "flame-web-<stamp>.alloc.svg", "web.alloc.folded" for -o
 * web.svg; a single-format -o is kept as given only when it names the mode already (or is "-"). */
int out_paths_mode(const char *output, unsigned formats, const char *container, int n, time_t when,
                   const char *mode, char *paths[FMT_COUNT], flame_err *err);
/* Before anything is started: a file can be created in the directory of path (a read-only,
 * missing or pseudo-filesystem output dir fails in a second, not after the whole profile); an
 * existing device or pipe (-o /dev/null) and "-" need only be writable themselves. */
int out_check_dir(const char *path, flame_err *err);
/* A container name in a file name ([A-Za-z0-9_.-], others -> '_', never hidden). */
void out_safe_name(const char *in, char *out, size_t n);
