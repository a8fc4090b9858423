/* Internal layout of a profile, shared only by the flame/ module's own files (profile.c,
 * render.c, speedscope.c). Everyone else uses flame/profile.h.
 *
 * Frame names are interned: each distinct name gets an id (0..nnames-1, first-seen order) and a
 * stack is a run of ids in one big uint32 array. A million 20-frame stacks then cost ~84 MB
 * instead of the ~460 MB of their text, and comparing stacks compares integers. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    char *text; /* name bytes */
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

/* Zeroed memory for a hash table that is probed (read) before it is filled. Unlike calloc,
 * whose big blocks come straight from mmap, the zeroes are written: a page read first is mapped
 * to the shared zero page and its first write then faults again and, with a second thread
 * running, flushes the other CPU's TLB (an IPI per 4 KiB page: measured as the bulk of a
 * million-stack diff's system time on these VMs). */
void *prof_zalloc(size_t n);

/* A profile with p's names and stacks but counts of its own (a copy of p's stack array), for
 * rendering two views of one set of stacks at the same time (diff's forward and mirrored
 * graphs). Read-only apart from the counts: nothing may be added to it. Free it with
 * profile_free() before p. NULL on OOM. */
struct profile *prof_counts_copy(const struct profile *p);

/* Stacks by frame ids, for flame/diff.c (adding one profile to another without going back to
 * text). Names: the id of a name, UINT32_MAX when absent (find) or out of memory (intern).
 * Stacks: ids[0..n) must be ids of p's names, 1 <= n <= PROFILE_MAX_DEPTH. prof_stack_find()
 * only reads p, so threads may call it together while nothing adds to p. */
uint32_t prof_name_find(const struct profile *p, const char *s, size_t n);
uint32_t prof_name_intern(struct profile *p, const char *s, size_t n);
uint64_t prof_ids_hash(const uint32_t *ids, size_t n);
uint32_t prof_stack_find(const struct profile *p, const uint32_t *ids, size_t n, uint64_t hash);
/* prof_stack_find() for up to PROF_FIND_BATCH stacks at once, their memory fetched in parallel
 * (out[i] for stack i; n[i] = 0 is not looked up: out[i] = UINT32_MAX). */
#define PROF_FIND_BATCH 16
void prof_stack_find_many(const struct profile *p, size_t count, const uint32_t *const *ids,
                          const uint32_t *n, const uint64_t *hash, uint32_t *out);
int prof_stack_add(struct profile *p, const uint32_t *ids, size_t n, double count, double before);

/* A sorted view for renderers: names ranked by bytes, stacks as rank sequences (each stack's
 * frames at the same offsets as in profile.ids, reversed when asked), stack indexes in order
 * (sorted frame by frame, or insertion order). */
typedef struct prof_view {
    uint32_t *rank;    /* rank[id] */
    uint32_t *by_rank; /* id of each rank */
    uint32_t *seq;
    uint32_t *order;
} prof_view;
int prof_view_build(const struct profile *p, bool reverse, bool sort, prof_view *v);
void prof_view_free(prof_view *v);
int prof_format_count(char *buf, size_t n, double c);
void prof_base64_write(FILE *out, const char *s, size_t n);
/* With out NULL, only the size is computed; stop_above (0 = never) ends that count as soon as
 * it exceeds the value (*size is then some number above it). */
int prof_write_embedded(const struct profile *p, const prof_view *view, FILE *out, size_t *size,
                        size_t stop_above, flame_err *err);
/* The comment an SVG carries instead of its data when the data exceeded the embed limit. */
#define PROF_DATA_OMITTED "<!-- docker-flame-data omitted"
