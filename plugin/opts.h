/* `docker flame [OPTIONS] CONTAINER [CONTAINER...] [-- CMD ARGS...]`: the profile verb's options.
 * Pure code (unit-tested): no I/O besides what is parsed. */
#pragma once
#include <stdbool.h>

#include "common/err.h"

enum opt_format { FMT_SVG, FMT_FOLDED, FMT_SPEEDSCOPE, FMT_COUNT };

typedef struct flame_opts {
    double duration_s; /* 0 = until Ctrl-C (or until CMD exits) */
    bool duration_set;
    int frequency;
    long pid;           /* 0 = every JVM */
    const char *output; /* -o */
    bool formats[FMT_COUNT];
    int nformats;
    const char *title, *colors;
    double minwidth;
    bool minwidth_pct, minwidth_set;
    bool no_inline, signatures, quiet;
    bool help, version;
    char **containers; /* points into argv (array malloc'd: free with opts_clear) */
    int ncontainers;
    bool top;        /* `docker flame top` (plugin/top.c): the sidecar runs `top` */
    int interval_ms; /* top: window length */
    char **cmd; /* after "--": NULL-terminated, points into argv */
    int ncmd;
} flame_opts;

void opts_init(flame_opts *o);
void opts_clear(flame_opts *o);
/* argv[0] is the first argument after "flame". */
int opts_parse(int argc, char **argv, flame_opts *o, flame_err *err);
/* "30", "30s", "1.5s", "500ms", "2m", "1m30s", "1h" -> seconds. */
int opts_parse_duration(const char *s, double *out, flame_err *err);
const char *opts_format_name(int fmt);
const char *opts_format_ext(int fmt); /* ".svg", ".folded", ".speedscope.json" */
