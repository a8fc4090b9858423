/* `docker flame [OPTIONS] CONTAINER [CONTAINER...] [-- CMD ARGS...]`: the profile verb's options
 * (an option table for common/args.c), also the run configuration plugin/run/session.c follows.
 * Pure code (unit-tested): no I/O besides what is parsed. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/args.h"
#include "common/err.h"
#include "plugin/graph.h"
#include "plugin/out/output.h"

typedef struct flame_opts {
    uint64_t duration_ms; /* 0 = until Ctrl-C (or until CMD exits) */
    bool duration_set;
    int64_t frequency;
    int64_t pid;        /* 0 = every JVM */
    const char *output; /* -o */
    unsigned formats;   /* bit per enum out_fmt */
    int nformats;
    graph_opts graph; /* --title, --colors, --minwidth, --width */
    bool no_inline, signatures, quiet;
    bool kernel; /* --kernel: kernel stacks too (one-shot only; the sidecar gets CAP_SYSLOG) */
    const char *summary_json; /* --summary-json FILE, or NULL */
    int sampling;             /* enum ct_sampling (common/contract.h) */
    /* --shared-pid: profile a container started --pid host or --pid container:X (refused
     * without it); the sidecar then keeps to the container's own processes */
    bool shared_pid;
    bool help, version;
    args_operands containers; /* points into argv */
    bool top;                 /* `docker flame top` (plugin/cmd_top.c): the sidecar runs `top` */
    uint64_t interval_ms;     /* top: window length */
    bool last_window;         /* top: the window cut short by the stop is sent too (record) */
    bool host;                /* `docker flame host` (plugin/cmd_host.c): the sidecar runs `host` */
    const char *attach_ids;   /* host: the containers whose JVMs get the agent (comma list) */
    char **cmd;               /* after "--": NULL-terminated, points into argv */
    int ncmd;
} flame_opts;

/* The profile verb's grammar (also read by shell completion, plugin/complete.c). */
extern const args_verb opts_grammar;
void opts_init(flame_opts *o);
/* argv[0] is the first argument after "flame". */
int opts_parse(int argc, char **argv, flame_opts *o, flame_err *err);
/* The options part of `docker flame --help`. */
void opts_help(FILE *out);
