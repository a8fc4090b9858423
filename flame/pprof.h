/* pprof export: a profile as gzip-compressed perftools.profiles.Profile (profile.proto), the
 * format of `go tool pprof` and of speedscope's pprof importer. Mapping of our stacks, labels,
 * inlined frames and differentials: docs/PPROF.md. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "flame/profile.h"

/* Where the frames of a stack say which JVM and thread it is. */
enum pprof_layout {
    PPROF_PLAIN,          /* nothing known: no thread or pid labels from frames */
    PPROF_THREAD_FIRST,   /* a container profile of one JVM: "<thread>;frames..." */
    PPROF_JVM_THEN_THREAD /* several JVMs: "java-<pid> <Main>;<thread>;frames..." */
};

/* docker flame's default -F: what a profile read from a file is assumed to have been sampled
 * at (a folded file does not say). */
#define PPROF_DEFAULT_HZ 99

typedef struct pprof_meta {
    double hz;             /* samples per second (period = 1e9/hz ns); <= 0: PPROF_DEFAULT_HZ */
    int64_t time_ns;       /* start of the recording, ns since the Unix epoch; 0 = unknown */
    int64_t duration_ns;   /* 0 = unknown */
    const char *container; /* label "container" on every sample; NULL = none */
    long jvm_pid;          /* > 0: label "pid" on every sample (the profile's one JVM) */
    enum pprof_layout layout;
    const char *comment; /* one more comment line (e.g. what a diff compares); NULL = none */
    /* A profile of something else than CPU samples (docs/MODES.md): type1/unit1 name the
     * profile's own counts ("alloc_space"/"bytes"); type0/unit0, when set, a first sample type
     * whose values are `first`'s counts, a profile built stack for stack with p (the same stacks
     * in the same order; a stack it lacks counts 0); period_type/period_unit and period. type1
     * NULL: CPU samples ("samples"/"count", "cpu"/"nanoseconds" at hz). */
    const char *type0, *unit0, *type1, *unit1, *period_type, *period_unit;
    const profile *first;
    int64_t period;
} pprof_meta;

/* Write p as gzip'd profile.proto. m may be NULL (defaults). A differential profile gives its
 * AFTER counts as samples and its BEFORE counts negated, labelled pprof::base=true, which is how
 * `go tool pprof -diff_base` writes a comparison. */
int pprof_export(const profile *p, const pprof_meta *m, FILE *out, flame_err *err);
