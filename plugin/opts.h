/* `docker flame [OPTIONS] CONTAINER [CONTAINER...] [-- CMD ARGS...]`: the profile verb's options
 * (an option table for common/args.c). The recording options fill the sidecar's own arguments
 * (ct_args) directly; the run request carries them as they are (plugin/run/run.h). Pure code
 * (unit-tested): no I/O besides what is parsed. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/args.h"
#include "common/contract.h"
#include "common/err.h"
#include "plugin/graph.h"
#include "plugin/out/output.h"

typedef struct flame_opts {
    /* What each sidecar does (common/contract.h): the recording options land here straight from
     * the table; duration_ms 0 = until Ctrl-C (or until CMD exits). */
    ct_args rec;
    bool duration_set;
    const char *output; /* -o */
    unsigned formats;   /* bit per enum out_fmt */
    int nformats;
    graph_opts graph; /* --title, --colors, --minwidth, --width */
    bool quiet;
    const char *summary_json; /* --summary-json FILE, or NULL */
    /* --shared-pid: profile a container started --pid host or --pid container:X (refused
     * without it); the sidecar then keeps to the container's own processes */
    bool shared_pid;
    bool help, version;
    args_operands containers; /* points into argv */
    char **cmd;               /* after "--": NULL-terminated, points into argv */
    int ncmd;
} flame_opts;

/* The modes the profile verb records (--mode, docs/MODES.md). */
#define OPTS_MODES                                                                                 \
    (CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK) |           \
     CT_MODE_BIT(CT_MODE_WALL) | CT_MODE_BIT(CT_MODE_OFFCPU))

/* The profile verb's grammar (also read by shell completion, plugin/complete.c). */
extern const args_verb opts_grammar;
void opts_init(flame_opts *o);
/* argv[0] is the first argument after "flame". */
int opts_parse(int argc, char **argv, flame_opts *o, flame_err *err);
/* The options part of `docker flame --help`. */
void opts_help(FILE *out);
