/* The store's dictionary of stacks, shared by its backends: each frame name stored once, each
 * stack a path in a tree of (parent, frame) nodes, so stacks that share a prefix share its nodes
 * (a parent-pointer tree, as pprof stores locations once and Pyroscope stores its stack traces).
 * Frames, nodes and stacks are numbered 1, 2, 3, ... in the order they are first seen; node 0 is
 * the root (the empty path). A window names its stacks by stack id (store/codec.h, pairs).
 *
 * What a writer adds is sent in chunks: the frames, nodes and stacks added since the last mark,
 * in one blob (docs/STORE.md, "Dictionary"), appended in order. A reader applies the chunks in
 * the same order and gets the same numbering. Every byte of a chunk is checked: a damaged one is
 * refused, never read past, and cannot inflate beyond what its counts allow. Pure code (zlib). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of one dictionary (memory: ~16 bytes a node, ~12 a stack, a frame's name and ~16 more):
 * a store past them refuses new stacks (the put fails), never grows without end. */
#define DICT_MAX_FRAMES ((uint32_t)1 << 24)
#define DICT_MAX_NODES ((uint32_t)1 << 26)
#define DICT_MAX_STACKS ((uint32_t)1 << 26)
#define DICT_MAX_NAMES ((size_t)1 << 31) /* bytes of frame names */

typedef struct dict {
    /* frames: names[off[i]..off[i]+len[i]) is frame i (index 0 unused) */
    char *names;
    size_t names_len, names_cap;
    uint64_t *name_off;
    uint32_t *name_len;
    uint32_t nframes, frames_cap;
    /* nodes: parent[i], frame[i] of node i (node 0 = the root) */
    uint32_t *parent, *frame;
    uint32_t nnodes, nodes_cap;
    /* stacks: leaf[i] is the last node of stack i; 0 = a stack whose text is unknown (a gap) */
    uint32_t *leaf;
    uint32_t nstacks, stacks_cap;
    /* lookups (open addressing, 0 = empty): frame name -> id, (parent, frame) -> node, leaf ->
     * stack; built only by a writer (dict_add_stack), on first use */
    uint32_t *fmap, *nmap, *smap;
    size_t fmask, nmask, smask;
    uint64_t seed;
    /* the counts at the last mark: what dict_encode sends and dict_rollback takes back */
    uint32_t mark_frames, mark_nodes, mark_stacks;
} dict;

void dict_init(dict *d);
void dict_free(dict *d); /* and back to empty */
/* Back to empty, its arrays kept for the next dictionary decoded into it: a reader that names
 * one run after another reuses the memory it has already touched (glibc gives the freed top of
 * its heap back, and each page faulted in again costs ~15 us on the VMs this runs on). */
void dict_empty(dict *d);
/* Forget everything (a reader that saw the dictionary rewritten starts again). */
void dict_reset(dict *d);

/* The id of the stack text[0..len) (frames separated by ';'), added when new. 0, or -1 when
 * out of memory or past the bounds (errno ENOMEM or E2BIG). An empty text is refused (EINVAL). */
int dict_add_stack(dict *d, const char *text, size_t len, uint32_t *id);

/* A stack whose text is unknown, numbered next (a store migrated with a hole in its ids: its
 * samples are counted as missing). 0 or -1 (ENOMEM, E2BIG). */
int dict_add_gap(dict *d, uint32_t *id);

/* The text of stack id into *buf (grown as needed, *cap its size), its length in *len. 1 done,
 * 0 no such stack or a stack whose text is unknown, -1 out of memory. */
int dict_stack_text(const dict *d, uint32_t id, char **buf, size_t *cap, size_t *len);

/* Everything so far is known to the store: the next chunk starts here. */
void dict_mark(dict *d);
/* Take back what was added since the mark (a put that failed). */
void dict_rollback(dict *d);
/* Anything added since the mark? */
bool dict_dirty(const dict *d);
/* The chunk of what was added since the mark, malloc'd into *out (its length in *len); does not
 * move the mark. 0, or -1 out of memory. */
int dict_encode(const dict *d, uint8_t **out, size_t *len);
/* The whole dictionary as chunks of about max_raw bytes each (before deflate), for rewriting
 * it: fn gets each in turn. 0, -1 out of memory, or fn's nonzero result. */
int dict_encode_all(const dict *d, size_t max_raw,
                    int (*fn)(void *ctx, const uint8_t *chunk, size_t len), void *ctx);

/* Apply a chunk read back: it must continue the dictionary exactly (its first frame, node and
 * stack are the next ones). 0; -1 damaged or not the next chunk (the dictionary is unchanged);
 * -2 out of memory or past the bounds. Moves the mark (what a reader applies is the store's). */
int dict_apply(dict *d, const uint8_t *chunk, size_t len);
/* The counts a chunk starts at and adds, read from its header only (cheap; -1 damaged). */
typedef struct dict_span {
    uint32_t first_frame, nframes, first_node, nnodes, first_stack, nstacks;
} dict_span;
int dict_chunk_span(const uint8_t *chunk, size_t len, dict_span *out);
