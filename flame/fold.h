/* Folding `perf script` text into folded stacks ("a;b;c 12"), streaming, line by line.
 * Behaviour reference: stackcollapse-perf.pl (see docs/FOLDING.md for our deliberate changes).
 * Shared by the sidecar (folds while perf script streams) and `docker flame fold`. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

typedef struct fold_opts {
    bool pid, tid;       /* append -PID / -PID/TID to the process name (stackcollapse --pid/--tid) */
    bool kernel, jit;    /* annotate kernel (_[k]) / JIT (_[j]) frames; `all` sets both */
    bool addrs;          /* show raw addresses for unknown symbols (stackcollapse --addrs) */
    bool compat;         /* byte-exact stackcollapse-perf.pl output: none of our improvements */
    bool signatures;     /* keep Java return types and parameter lists */
    bool inline_frames;  /* split agent symbols "a->b" into frames, inlined ones marked _[i] */
    const char *event_filter; /* only samples of this event; NULL = the first event seen */
    /* Optional: a root frame to put above each stack, chosen by pid (the sidecar uses it to
     * tell several JVMs apart). Return NULL for none. Called once per sample: keep it cheap. */
    const char *(*root_for_pid)(void *ctx, long pid);
    void *root_ctx;
} fold_opts;

/* Counts over everything folded so far. A "JIT leaf" is a sample whose innermost frame lies
 * in a perf map (dso "/tmp/perf-N.map") or in unknown anonymous code ("[unknown]" dso). */
typedef struct fold_stats {
    unsigned long long samples;        /* samples folded (after event filtering) */
    unsigned long long jit_leaf;       /* samples whose leaf is JIT code */
    unsigned long long jit_leaf_named; /* ... of which the leaf has a (Java) name */
    unsigned long long stacks;         /* distinct folded stacks */
} fold_stats;

typedef struct folder folder;

/* NULL only when out of memory. opts is copied. */
folder *folder_new(const fold_opts *opts);
void folder_free(folder *f);
/* One line of perf script output without its '\n'. Lines may be arbitrarily hostile. */
int folder_feed(folder *f, const char *line, size_t len, flame_err *err);
/* End of input: flushes the last sample. */
int folder_finish(folder *f, flame_err *err);
/* Visit every folded stack in stackcollapse order (sorted by stack bytes). A non-zero return
 * from fn stops the walk and is returned. */
typedef int (*fold_emit_fn)(void *ctx, const char *stack, size_t len, unsigned long long count);
int folder_each(const folder *f, fold_emit_fn fn, void *ctx);
/* "stack count\n" lines, sorted. */
int folder_write(const folder *f, FILE *out, flame_err *err);
void folder_get_stats(const folder *f, fold_stats *st);
