/* Folding `perf script` text into folded stacks ("a;b;c 12"), streaming, line by line.
 * Behaviour reference: stackcollapse-perf.pl (see docs/FOLDING.md for our deliberate changes).
 * Shared by the sidecar (folds while perf script streams) and `docker flame fold`. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "flame/profile.h"

/* wall-clock's thread states, in the two low bits of each period (fold_opts.state_tags,
 * state_mask); the sidecar's recorder writes them (SC_OFFCPU_TAG_*: the same values) */
enum { FOLD_STATE_RUNNING = 1, FOLD_STATE_RUNNABLE = 2, FOLD_STATE_SLEEPING = 3 };

/* How many events a sample stands for (an off-CPU sample taken with probability p: 1/p
 * switch-outs), in the top FOLD_EVENTS_BITS bits of its period (fold_opts.events), the period's
 * value below them: code c stands for 2^(c / FOLD_EVENTS_STEPS) events (0: one; FOLD_EVENTS_NONE:
 * none). The sidecar's
 * recorder writes them (sc_offcpu_events_code); docs/MODES.md "Weights". */
#define FOLD_EVENTS_BITS 12
#define FOLD_EVENTS_SHIFT (64 - FOLD_EVENTS_BITS)
#define FOLD_EVENTS_STEPS 128
#define FOLD_EVENTS_VALUE_MAX ((1ull << FOLD_EVENTS_SHIFT) - 1)
#define FOLD_EVENTS_NONE                                                                           \
    ((1u << FOLD_EVENTS_BITS) - 1) /* the code of no event (its value counts) */
double fold_events_of(unsigned code);

typedef struct fold_opts {
    bool pid, tid;      /* append -PID / -PID/TID to the process name (stackcollapse --pid/--tid) */
    bool kernel, jit;   /* annotate kernel (_[k]) / JIT (_[j]) frames; `all` sets both */
    bool addrs;         /* show raw addresses for unknown symbols (stackcollapse --addrs) */
    bool compat;        /* byte-exact stackcollapse-perf.pl output: none of our improvements */
    bool signatures;    /* keep Java return types and parameter lists */
    bool inline_frames; /* split agent symbols "a->b" into frames, inlined ones marked _[i] */
    bool period;        /* count summed periods instead of samples (compat always sums periods) */
    /* wall-clock: the two low bits of each period name the thread's state, shown as a leaf
     * frame (1 [running], 2 [runnable], 3 [sleeping]; 0: none) and cleared from the count;
     * docs/MODES.md "Thread states in wall" */
    bool state_tags;
    /* several modes from one wall recording (docs/MODES.md "Several modes in one run"): count
     * only the samples whose state (the period's two low bits, as state_tags reads them) is in
     * this mask, bit 1 << state, their tag cleared from a summed period; the others are skipped
     * (fold_stats.other_state). 0: every sample. */
    unsigned state_mask;
    /* the periods carry an event code in their top bits (FOLD_EVENTS_*): taken off the period
     * (the count is the value below) and summed per stack (folder_each_events) */
    bool events;
    const char *event_filter; /* only samples of this event; NULL = the first event seen */
    /* Optional: a root frame to put above each stack, chosen by pid (the sidecar uses it to
     * tell several JVMs apart). Return NULL for none. Called once per sample: keep it cheap. */
    const char *(*root_for_pid)(void *ctx, long pid);
    void *root_ctx;
    /* Optional, instead of root_for_pid and the process name: the frames above each stack, ';'
     * separated (`docker flame host`: "container;process;thread"), chosen by pid, tid, the
     * sample's comm and its time in microseconds (0 when none: a tid names several tasks over a
     * recording). NULL = the usual root and process name. The text is the caller's, sane. */
    const char *(*root_for_task)(void *ctx, long pid, long tid, const char *comm, size_t len,
                                 unsigned long long time_us);
    /* Optional: called for each sample counted, with its CPU (-1 when perf script printed none)
     * and time in microseconds (0 when none): `docker flame host`'s timeline. */
    void (*on_sample)(void *ctx, long pid, long tid, int cpu, unsigned long long time_us);
} fold_opts;

/* Counts over everything folded so far. A "JIT leaf" is a sample whose innermost frame lies
 * in a perf map (dso "/tmp/perf-N.map") or in unknown anonymous code ("[unknown]" dso). */
typedef struct fold_stats {
    unsigned long long samples;        /* samples folded (after event filtering) */
    unsigned long long jit_leaf;       /* samples whose leaf is JIT code */
    unsigned long long jit_leaf_named; /* ... of which the leaf has a (Java) name */
    unsigned long long stacks;         /* distinct folded stacks */
    unsigned long long filtered;       /* samples skipped by the event filter */
    unsigned long long unrecognized;   /* lines that are neither header, frame, blank nor comment */
    unsigned long long truncated;      /* samples whose stack hit FOLD_MAX_STACK_BYTES/FRAMES */
    unsigned long long other_state;    /* samples skipped by fold_opts.state_mask */
} fold_stats;

/* Bounds on hostile input (see docs/FOLDING.md). Longer lines are cut at FOLD_MAX_LINE, longer
 * names at FOLD_MAX_FRAME ("..." appended); a deeper stack keeps its root-side frames and gets a
 * "[truncated]" leaf, so a folded line always fits the 1 MiB line of the sidecar protocol. */
#define FOLD_MAX_LINE (64 * 1024)
#define FOLD_MAX_FRAME 1024
#define FOLD_MAX_FRAMES 8192
#define FOLD_MAX_STACK_BYTES (900 * 1024)

typedef struct folder folder;

/* NULL only when out of memory. opts is copied. */
folder *folder_new(const fold_opts *opts);
void folder_free(folder *f);
/* One line of perf script output without its '\n'. Lines may be arbitrarily hostile. */
int folder_feed(folder *f, const char *line, size_t len, flame_err *err);
/* End of input: flushes the last sample. */
int folder_finish(folder *f, flame_err *err);
/* Visit every folded stack in stackcollapse order (sorted by the bytes of the folded text). A
 * non-zero return from fn stops the walk and is returned (-ENOMEM: out of memory). Counts are
 * exact up to 2^53 per stack (a sum of periods that large is 1.8 billion 5-ms samples in one
 * stack), rounded beyond, and saturate at 2^64 - 1. */
typedef int (*fold_emit_fn)(void *ctx, const char *stack, size_t len, unsigned long long count);
int folder_each(const folder *f, fold_emit_fn fn, void *ctx);
/* The same with each stack's events (fold_opts.events: the sum of its samples' events, rounded
 * to an integer; without that option, 0). */
typedef int (*fold_emit_events_fn)(void *ctx, const char *stack, size_t len,
                                   unsigned long long count, unsigned long long events);
int folder_each_events(const folder *f, fold_emit_events_fn fn, void *ctx);
/* "stack count\n" lines, sorted. */
int folder_write(const folder *f, FILE *out, flame_err *err);
/* The folded stacks as a profile (one count column): render, export or diff them without
 * printing and parsing them again. After folder_finish(); valid until folder_free() or the next
 * folder_feed(). It holds the names its stacks use, as profile_load() of folder_write()'s text
 * would. NULL on OOM. */
const profile *folder_profile(folder *f);
/* The same, handed over (the caller frees it with profile_free()); the folder goes on with an
 * empty profile. NULL on OOM. */
profile *folder_steal_profile(folder *f);
void folder_get_stats(const folder *f, fold_stats *st);
/* Feed everything readable from fd (until EOF) line by line; does not call folder_finish. Lines
 * longer than FOLD_MAX_LINE are cut. Retries EINTR. */
int folder_read_fd(folder *f, int fd, flame_err *err);
/* The event name the default filter settled on (first event seen), or NULL. Valid until
 * folder_free. */
const char *folder_event(const folder *f);
