/* The folder's cache of frame lines (flame/fold_cache.c): perf repeats the same frame lines
 * endlessly, so a line already parsed, tidied and interned is remembered by its exact bytes
 * (and, in compat mode, whether the comm starts with "java", which changes the tidy) with the
 * frame ids it gave. Bounded, emptied when full. Knows nothing of the folder: fold.c asks it and
 * pushes what it answers. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flame/alloc.h"

#define FOLD_CACHE_MAX_PIECES 64 /* lines with more frames are not cached */

struct fold_line;

typedef struct fold_cache {
    struct fold_line *lines;
    size_t cap, used;
    uint64_t seed;
    alloc_arena arena;
} fold_cache;

void fold_cache_init(fold_cache *c);
/* The frames a line gave (into ids, room for FOLD_CACHE_MAX_PIECES; *n of them) and what it
 * made of a sample's leaf (*leaf, the folder's own code): 1, or 0 when the line is not cached. */
int fold_cache_lookup(fold_cache *c, const char *line, size_t len, bool java_comm, uint32_t *ids,
                      size_t *n, int *leaf);
/* Remember ids[0..n) as what this line gives. Silently does nothing when it cannot (more than
 * FOLD_CACHE_MAX_PIECES frames, out of memory: the cache is an optimisation). */
void fold_cache_insert(fold_cache *c, const char *line, size_t len, bool java_comm,
                       const uint32_t *ids, size_t n, int leaf);
void fold_cache_clear(fold_cache *c); /* forget everything (e.g. the ids changed) */
void fold_cache_free(fold_cache *c);
