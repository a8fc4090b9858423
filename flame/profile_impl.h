/* Internal layout of a profile, shared only by flame/'s own files (the profile's, the folder,
 * the renderers, diff, methods). Everyone else uses flame/profile.h.
 *
 * Frame names are interned: each distinct name gets an id (0..nnames-1, first-seen order) and a
 * stack is a run of ids in one big uint32 array. A million 20-frame stacks then cost ~84 MB
 * instead of the ~460 MB of their text, and comparing stacks compares integers. This is the one
 * table of stacks in flame/: the folder accumulates into it, loading, diff, merge and methods
 * read and extend it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flame/hash.h"
#include "flame/profile.h"

typedef struct prof_name {
    size_t off; /* into profile.text; the name is NUL-terminated there too */
    uint32_t len;
    uint64_t hash;
} prof_name;

typedef struct prof_stack {
    size_t off;     /* into profile.ids */
    uint32_t depth; /* number of frames, >= 1 */
    uint64_t hash;
    double count;  /* the last column: the only one, or "after" for differentials */
    double before; /* first column of a differential line; 0 otherwise */
} prof_stack;

/* One input line in input order, kept only when profile_keep_order() was asked (flame charts). */
typedef struct prof_seq {
    uint32_t stack;
    double count, before;
} prof_seq;

struct profile {
    uint64_t seed; /* of every hash below: random per profile (flame/hash.h) */
    char *text;    /* name bytes */
    size_t text_len, text_cap;
    prof_name *names;
    uint32_t nnames, names_cap;
    uint32_t *name_tab; /* open addressing: 0 = empty, else id+1 */
    uint32_t name_tab_mask;

    uint32_t *ids; /* stack frames */
    size_t ids_len, ids_cap;
    prof_stack *stacks;
    uint32_t nstacks, stacks_cap;
    uint64_t *stack_tab; /* 0 = empty, else (hash >> 32) << 32 | (index + 1) */
    uint32_t stack_tab_mask;

    int columns; /* 0 = nothing added yet, 1 or 2 */
    double total, total_before;

    bool keep_order;
    bool shares; /* made by prof_counts_copy(): everything but the stacks is another's */
    prof_seq *seq;
    size_t nseq, seq_cap;

    uint32_t *scratch; /* ids of the stack being added */
    size_t scratch_cap;
    /* The previous stack's text and frame ends: input is usually sorted, so a line shares most
     * frames with the one before, and those are not hashed and interned again. prev_n = 0
     * whenever scratch no longer holds that stack's ids. */
    char *prev;
    size_t prev_len, prev_cap;
    uint32_t *prev_ends; /* offset just past each frame (a ';' or the end) */
    size_t prev_n, prev_ends_cap;
};

static inline const char *prof_name_str(const struct profile *p, uint32_t id)
{
    return p->text + p->names[id].off;
}

/* ---- names (profile.c) ---- */

/* The slot of name s[0..n) (hash h) in the name table: its entry, or the empty slot where it
 * would go. Inline: loading looks up every frame of every line. */
static inline size_t prof_name_slot(const struct profile *p, const char *s, size_t n, uint64_t h)
{
    size_t j = h & p->name_tab_mask;
    for (uint32_t e; (e = p->name_tab[j]); j = (j + 1) & p->name_tab_mask) {
        const prof_name *nm = &p->names[e - 1];
        if (nm->hash == h && nm->len == n && hash_same_bytes(p->text + nm->off, s, n))
            break;
    }
    return j;
}

/* Add name s[0..n) (hash h), absent from the table, at its empty slot j: its id, or UINT32_MAX
 * on OOM or too many names. */
uint32_t prof_add_name(struct profile *p, const char *s, size_t n, uint64_t h, size_t j);

/* The id of name s[0..n), h = hash_bytes(s, n, p->seed), added if new; UINT32_MAX on OOM. */
static inline uint32_t prof_intern_hashed(struct profile *p, const char *s, size_t n, uint64_t h)
{
    size_t j = prof_name_slot(p, s, n, h);
    return p->name_tab[j] ? p->name_tab[j] - 1 : prof_add_name(p, s, n, h, j);
}

/* Names: the id of a name, UINT32_MAX when absent (find) or out of memory (intern). */
uint32_t prof_name_find(const struct profile *p, const char *s, size_t n);
uint32_t prof_name_intern(struct profile *p, const char *s, size_t n);

/* ---- stacks by frame ids (profile.c) ---- */

/* Stacks: ids[0..n) must be ids of p's names, n >= 1. prof_stack_find() only reads p, so
 * threads may call it together while nothing adds to p. */
uint64_t prof_ids_hash(const struct profile *p, const uint32_t *ids, size_t n);
uint32_t prof_stack_find(const struct profile *p, const uint32_t *ids, size_t n, uint64_t hash);
/* prof_stack_find() for up to PROF_FIND_BATCH stacks at once, their memory fetched in parallel
 * (out[i] for stack i; n[i] = 0 is not looked up: out[i] = UINT32_MAX). */
#define PROF_FIND_BATCH 16
void prof_stack_find_many(const struct profile *p, size_t count, const uint32_t *const *ids,
                          const uint32_t *n, const uint64_t *hash, uint32_t *out);
/* Count a stack: count into the last column, before into the first (0 for single-column
 * profiles). 0, -EINVAL when n is 0 or above PROFILE_MAX_DEPTH, -ENOMEM. Does not set
 * p->columns (the caller knows). */
int prof_stack_add(struct profile *p, const uint32_t *ids, size_t n, double count, double before);
/* The same without the depth bound, for the folder, whose own bounds allow a few frames more
 * (its root, process and [truncated] frames around FOLD_MAX_FRAMES). */
int prof_stack_add_deep(struct profile *p, const uint32_t *ids, size_t n, double count,
                        double before);

/* A stack waiting to be counted: its ids already copied to the end of p->ids (past ids_len, so
 * not yet part of the profile) and its table slot prefetched. The stack table is far bigger than
 * the caches for a big profile, so its probe is a cache miss per input line; profile_load()
 * commits a line's stack only after parsing the next line, and that work hides the miss. */
typedef struct prof_staged {
    bool on;
    uint32_t n;
    uint64_t h;
    double count, before;
    uint32_t idx; /* set by prof_commit_ids: the stack it was added to */
} prof_staged;
int prof_stage_ids(struct profile *p, const uint32_t *ids, size_t n, double count, double before,
                   prof_staged *s);
int prof_commit_ids(struct profile *p, prof_staged *s); /* no-op when nothing is staged */

/* A profile with p's names and stacks but counts of its own (a copy of p's stack array), for
 * rendering two views of one set of stacks at the same time (diff's forward and mirrored
 * graphs). Read-only apart from the counts: nothing may be added to it. Free it with
 * profile_free() before p. NULL on OOM. */
struct profile *prof_counts_copy(const struct profile *p);

/* Drop the names no stack uses (the folder interns the frames of samples it may then drop) and
 * renumber the rest, keeping their order. -1 on OOM (p unchanged). */
int prof_drop_unused_names(struct profile *p);

/* ---- text (profile_load.c) ---- */

/* Split "a;b;c" into interned ids in p->scratch; the frame count, or -E2BIG (deeper than
 * PROFILE_MAX_DEPTH), -ENOMEM. Frames equal to the previous stack's leading frames keep the ids
 * already in scratch. */
long prof_split_stack(struct profile *p, const char *s, size_t len);
bool prof_parse_count(const char *s, size_t n, double *out);
bool prof_bad_count(double c); /* negative, NaN or infinite (profile_reader.c) */

static inline bool prof_starts_with(const char *s, size_t n, const char *prefix)
{
    size_t l = strlen(prefix);
    return n >= l && memcmp(s, prefix, l) == 0;
}

/* ---- reading lines (profile_reader.c) ---- */

/* A bounded line reader (never getline: a hostile input is one endless line). Its buffer holds
 * PROF_READ_CHUNK bytes. */
#define PROF_READ_CHUNK (1u << 20)
typedef struct prof_reader {
    FILE *in;
    char *buf; /* read buffer */
    size_t pos, len;
    char *line; /* a line that spans two reads */
    size_t line_len, line_cap;
    bool eof;
    bool omitted; /* saw the marker of an SVG whose data was left out */
    unsigned long lineno;
} prof_reader;
/* Next line (without its newline) in out and n: 1, 0 at EOF, -1 on error (err filled). */
int prof_reader_next(prof_reader *r, const char **out, size_t *n, flame_err *err);

/* ---- the data embedded in our SVGs (profile_embed.c) ---- */

#define PROF_DATA_OPEN "<metadata id=\"docker-flame-data\""
/* The comment an SVG carries instead of its data when the data exceeded the embed limit. */
#define PROF_DATA_OMITTED "<!-- docker-flame-data omitted"
/* Read the embedded data of an SVG (the reader is positioned anywhere before it). */
int prof_load_embedded(struct profile *p, prof_reader *r, flame_err *err);

/* ---- sorted views (profile_view.c) ---- */

/* The order of a view's stacks: as added, frame by frame (names compared as whole strings: what
 * renderers merge), or bytewise by the folded text "a;b;c" (stackcollapse-perf.pl's `sort`:
 * "a b;c" comes before "a;b", since ' ' < ';'). */
enum prof_order { PROF_ORDER_INPUT, PROF_ORDER_FRAMES, PROF_ORDER_TEXT };

/* Names ranked by bytes, stacks as rank sequences (each stack's frames at the same offsets as in
 * profile.ids, reversed when asked), stack indexes in the view's order. */
typedef struct prof_view {
    uint32_t *rank;    /* rank[id] */
    uint32_t *by_rank; /* id of each rank */
    uint32_t *seq;
    uint32_t *order;
} prof_view;
int prof_view_build(const struct profile *p, bool reverse, enum prof_order order, prof_view *v);
void prof_view_free(prof_view *v);
/* Counts print as integers when they are integers below 2^53, else with round-trip precision
 * (%.17g); buf needs 32 bytes. Returns the length. */
int prof_format_count(char *buf, size_t n, double c);
/* Folded text "stack [before] count\n" of every stack in the given order, written in large
 * blocks (a 1M-stack diff is ~500 MB of text). */
int prof_write_folded(const struct profile *p, enum prof_order order, FILE *out, flame_err *err);

/* The embedded copy of the profile that profile_load() reads back (see docs/RENDERING.md).
 * view: an unreversed, frame-sorted view of p to reuse, or NULL. With out NULL nothing is
 * written and *size gets the number of bytes it would take; stop_above (0 = never) ends that
 * count as soon as it exceeds the value (*size is then some number above it). */
int prof_write_embedded(const struct profile *p, const prof_view *view, FILE *out, size_t *size,
                        size_t stop_above, flame_err *err);

/* ---- per-method aggregation with given counts (methods.c) ---- */

struct methods;
/* methods_add() with each stack's counts taken from after[k] (and before[k], NULL for one
 * column) instead of the profile's: diff keeps the raw columns apart from the counts it
 * rewrites for rendering. */
int methods_add_columns(struct methods *m, const struct profile *p, const double *before,
                        const double *after, flame_err *err);
