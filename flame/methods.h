/* Per-method aggregation of profiles: self and inclusive (total) counts per method, a method
 * being a frame name without folding's annotation (_[j] _[i] _[k] _[w]), so a method that moved
 * from the interpreter to JIT code, or was inlined, is one row. One table for every summary:
 * methods_top_self(), diff's movers, and `docker flame top`'s live view (a table fed one window
 * at a time, or one table per window merged). Pure: formatting is the caller's. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "flame/profile.h"

/* What a table counts (methods_opts.measure); 0 = both. */
#define METHODS_SELF 1u
#define METHODS_TOTAL 2u

typedef struct methods_opts {
    /* Rows only for Java methods (methods_is_java; a method is Java when any of its names looks
     * like Java): other frames count for no row. */
    bool java_only;
    /* With java_only: a sample whose leaf is not Java gives its self time to its innermost Java
     * frame, or to the row "(no Java frame)" when it has none (top's view). Without, such a
     * sample gives no self time (diff, methods_top_self). */
    bool self_to_java;
    /* Self time of an inlined leaf X_[i] goes to the row (X, host H), H being the nearest caller
     * that is not inlined itself: the compiled method the time is really spent in. */
    bool inlined_hosts;
    unsigned measure; /* METHODS_SELF, METHODS_TOTAL or both (0) */
    /* Leading frames that name the JVM/thread (1, or 2 with several JVMs): never methods; joined
     * by '/', the `where` of a row. A sample with no frame below them counts as "(no frame)"
     * ("(no Java frame)" with java_only). */
    unsigned roots;
    /* Set: the rows are the callers of this method (a name without annotation). Each stack
     * containing it gives its count, once, to the method above its innermost occurrence (the
     * nearest Java one with java_only), or to "(root)" when there is none; self = total. Only
     * those stacks count as samples. Copied by methods_new(). */
    const char *callers_of;
} methods_opts;

typedef struct methods_row {
    const char *name;   /* the method; NUL-terminated, owned by the table */
    const char *host;   /* inlined_hosts: the method inlined code ran in; else NULL */
    const char *where;  /* roots > 0: the roots of the stack that gave this row its largest single
                         * count ("JVM/thread"); else NULL */
    double self, total; /* the only column, or a differential's "after" */
    double self_before, total_before; /* a differential's first column; 0 otherwise */
} methods_row;

typedef struct methods methods;

methods *methods_new(const methods_opts *o); /* NULL on OOM */
void methods_free(methods *m);
void methods_clear(methods *m); /* no rows, no samples, same options */
/* Count every stack of p (one or two columns). Tables accumulate: add several profiles. */
int methods_add(methods *m, const profile *p, flame_err *err);
/* Add the rows and samples of a table made with the same options (`where` keeps the larger
 * single count). */
int methods_merge(methods *m, const methods *from, flame_err *err);
/* The counts of the stacks counted (with callers_of: of the stacks containing the method), of
 * the last column, or of a differential's first (before). */
double methods_samples(const methods *m, bool before);
/* The rows and their number: first-seen order, or the last methods_sort()'s. Valid until the
 * table changes. */
const methods_row *methods_rows(const methods *m, size_t *n);
/* Largest first by self (by_total false) or total, then by the other, then by name and host
 * bytewise (no host last). */
void methods_sort(methods *m, bool by_total);

/* Does a frame name look like a Java method: JIT- or inline-annotated (_[j], _[i]), a slashed
 * class path, or identifier.identifier that is neither kernel (_[k]), C++ (a::b), a [dso]
 * placeholder, a stripped address nor a GCC clone (f.isra.0, f.constprop.1, f.part.2, f.cold). */
bool methods_is_java(const char *name, size_t len);

/* Self time per frame name (leaf frames), the n largest, for summaries
 * (flame/methods.c). java_only keeps frames
 * that look like Java methods. Fills names/counts (names point into p; valid while p lives). */
size_t methods_top_self(const profile *p, size_t n, bool java_only, const char **names,
                        double *counts);
