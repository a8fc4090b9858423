/* The inputs of diff and merge: each argument a folded file, a docker-flame SVG, "-" for
 * standard input, a stored range CONTAINER@SINCE..UNTIL (read from the profile store), or a
 * running container (profiled through the plugin's profiler, all of them at the same time, over
 * one window). Plus the little checks both verbs make of what they loaded. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/args.h"
#include "common/count.h"
#include "common/contract.h"
#include "common/err.h"
#include "flame/pprof.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "plugin/cmd.h"

typedef struct input {
    const char *arg;
    bool container, stored;
    /* what it measures (a --mode name, docs/MODES.md): a file's from its SVG's mark or its name
     * (".alloc." in web.alloc.folded), else "cpu", as are containers; a stored range's is the
     * verb's --mode (inputs_load's stored_type); "" for standard input (not known: never
     * refused) */
    char ptype[16];
    profile *p;
    flame_err err;
    int rc;
} input;

/* -d/--duration for the containers among the inputs (the contract's limits), as an entry of a
 * verb's option table; off: where its uint64_t (ms) is. */
#define INPUTS_DURATION_SPEC(offset)                                                               \
    {                                                                                              \
        .lng = "duration", .shrt = 'd', .kind = ARG_DURATION, .off = (offset), .meta = "DURATION", \
        .help = "how long to profile the containers among the inputs (30s)", .lo = 1,              \
        .hi = CT_DURATION_MAX_MS                                                                   \
    }

/* --mode MODE of the verbs that read the profile store (show, ls, and diff and merge for their
 * stored inputs): the profile type of the windows read (docs/MODES.md; one, an index of
 * ct_mode_names), as an entry of a verb's option table; offset: its int field (-1 when not given:
 * cpu, for ls every type). */
#define INPUTS_MODE_SPEC(offset, help_)                                                            \
    {                                                                                              \
        .lng = "mode", .kind = ARG_CHOICE, .off = (offset), .meta = "MODE",                        \
        .choices = ct_mode_names, .help = help_                                                    \
    }

/* The profile type of a file (input.ptype): the mark of a docker-flame SVG, else a mode's name
 * between dots in its base name, else "cpu". Pure but for reading the file's first 4 KiB. */
void inputs_ptype_of(const char *path, char *out, size_t cap);
/* The mode all inputs share when it is another than cpu (checked by inputs_load: they are of one
 * type), or -1: what the output's unit, SVG mark and pprof types are (docs/MODES.md). */
int inputs_mode(const input *in, size_t n);
/* The output of a diff or merge of mode m (inputs_mode): the unit in the SVG's tooltips, its
 * mark, and pprof's sample type (the value column only). Nothing for m < 0. */
void inputs_apply_mode(int m, render_opts *ro, pprof_meta *pm);
/* Resolve and load every input (files two at a time in parallel, then every container in one
 * profiling call; stored ranges: their windows of stored_type, NULL = cpu). Inputs of different
 * profile types are refused (FLAME_EXIT_USAGE) before anything is loaded or profiled. On error some
 * in[i].p may be set: inputs_free() in every case. */
int inputs_load(input *in, size_t n, const flame_profiler *prof, uint64_t duration_ms,
                const char *stored_type, flame_err *err);
void inputs_free(input *in, size_t n);
/* A plain (one-column), non-empty profile. */
int inputs_check_plain(const input *in, flame_err *err);
/* Refuse to compare a profile of sample counts with one of summed periods (unless ignored). */
int inputs_check_units(const input *a, const input *b, flame_err *err);
/* DOCKER_FLAME_TIMINGS=1: "load, <combine>, summary, write, total" on one line (t[0..4] in s). */
void inputs_print_timings(const char *verb, const char *combine, const double *t);
