/* --summary-json FILE: the end-of-run summary of the profile verb and of `top` as one JSON
 * object for scripts (docs/SUMMARY.md; schema docs/summary.schema.json; `diff` writes its own in
 * cmd_diff.c with the same writer, plugin/out/jsonw.h). Everything in it that came from a container
 * (names, versions, warnings) is bytes the writer escapes. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/err.h"
#include "flame/profile.h"
#include "plugin/opts.h"
#include "plugin/out/jsonw.h"
#include "plugin/out/output.h"
#include "plugin/run/proto.h"
#include "plugin/run/run.h"

/* Methods listed under top_methods. */
#define SUMMARY_TOP_METHODS 10

/* One container of the profile verb. */
typedef struct sum_target {
    const run_target *s;
    /* [CT_MODE_COUNT][FMT_COUNT]: the files written per mode, NULL where none */
    char *const (*paths)[FMT_COUNT];
    const char *error; /* why it has no profile; NULL = it has one */
    int exit_code;     /* 0, or the exit code of its failure */
} sum_target;

typedef struct sum_profile {
    const flame_opts *o;
    const run_result *r; /* NULL when the run never started (engine unreachable...) */
    time_t started;
    double t_written; /* mono_s() once every file was written */
    int exit_code;
    const char *error; /* the run's own failure, NULL = none */
    const sum_target *t;
    size_t n;
} sum_profile;
int summary_write_profile(const char *path, const sum_profile *sp, flame_err *err);

typedef struct sum_top {
    const char *container;
    const proto *pr;    /* the session's stream: JVMs, warnings */
    const profile *p;   /* every stack seen; NULL = none */
    unsigned windows;   /* completed windows */
    const char *record; /* --record FILE written, or NULL */
    time_t started;
    double seconds; /* the run's length */
    int64_t frequency;
    int exit_code;
    int mode; /* enum ct_mode: what the counts are (cpu samples, alloc bytes, ns) */
} sum_top;
int summary_write_top(const char *path, const sum_top *st, flame_err *err);

/* The pieces, for the writers above and their tests. */
void summary_jvms(jsonw *w, const proto *pr);
/* Java methods by self samples (methods_top_self), fold annotations dropped: name, samples,
 * share of total. */
void summary_top_methods(jsonw *w, const profile *p, size_t n);
/* fn's JSON to path as every output is written (atomic; "-" = stdout); err names the file. */
int summary_write(const char *path, out_writer_fn fn, const void *ctx, flame_err *err);
