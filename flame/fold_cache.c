/* The frame-line cache (flame/fold_cache.h): a line already parsed, tidied and interned is
 * remembered by its exact bytes (and, in compat mode, whether the comm starts with "java",
 * which changes the tidy) with the frame ids it gave: a hit skips parsing, tidying and
 * interning. Bounded (MAX_USED lines, MAX_BYTES), emptied when full, so its memory does not
 * depend on the input. */
#include "flame/fold_cache.h"

#include <stdlib.h>
#include <string.h>

#include "flame/hash.h"

struct fold_line {
    uint64_t hash;
    char *data; /* line bytes, then npieces frame ids (unaligned); NULL = empty slot */
    uint32_t line_len;
    uint16_t npieces;
    uint8_t leaf;      /* what this line makes of a sample's leaf (the folder's code) */
    uint8_t java_comm; /* compat: the tidy depends on the comm starting with "java" */
};

#define MAX_USED 32768       /* entries; the table stays <= 65536 slots */
#define MAX_BYTES (8u << 20) /* arena bytes */

void fold_cache_init(fold_cache *c)
{
    *c = (fold_cache){.seed = hash_random_seed(), .arena = {.chunk = 256u << 10}};
}

void fold_cache_clear(fold_cache *c)
{
    alloc_arena_clear(&c->arena);
    c->used = 0;
    if (c->lines)
        memset(c->lines, 0, c->cap * sizeof *c->lines);
}

void fold_cache_free(fold_cache *c)
{
    fold_cache_clear(c);
    free(c->lines);
    c->lines = NULL;
    c->cap = 0;
}

static struct fold_line *slot(fold_cache *c, const char *line, size_t len, bool java, uint64_t h)
{
    for (size_t j = h & (c->cap - 1);; j = (j + 1) & (c->cap - 1)) {
        struct fold_line *e = &c->lines[j];
        if (!e->data || (e->hash == h && e->line_len == len && e->java_comm == java &&
                         memcmp(e->data, line, len) == 0))
            return e;
    }
}

int fold_cache_lookup(fold_cache *c, const char *line, size_t len, bool java_comm, uint32_t *ids,
                      size_t *n, int *leaf)
{
    if (!c->used)
        return 0;
    uint64_t h = hash_bytes(line, len, c->seed ^ java_comm);
    struct fold_line *e = slot(c, line, len, java_comm, h);
    if (!e->data)
        return 0;
    memcpy(ids, e->data + e->line_len, e->npieces * sizeof *ids); /* stored unaligned */
    *n = e->npieces;
    *leaf = e->leaf;
    return 1;
}

static int grow(fold_cache *c)
{
    size_t ncap = c->cap ? c->cap * 2 : 1024;
    struct fold_line *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->lines[i].data)
            continue;
        size_t j = c->lines[i].hash & (ncap - 1);
        while (nt[j].data)
            j = (j + 1) & (ncap - 1);
        nt[j] = c->lines[i];
    }
    free(c->lines);
    c->lines = nt;
    c->cap = ncap;
    return 0;
}

void fold_cache_insert(fold_cache *c, const char *line, size_t len, bool java_comm,
                       const uint32_t *ids, size_t n, int leaf)
{
    if (n > FOLD_CACHE_MAX_PIECES)
        return;
    if (c->used >= MAX_USED || c->arena.bytes >= MAX_BYTES)
        fold_cache_clear(c);
    if ((c->used + 1) * 2 > c->cap && grow(c) < 0)
        return; /* the cache is an optimisation: do without */
    uint64_t h = hash_bytes(line, len, c->seed ^ java_comm);
    struct fold_line *e = slot(c, line, len, java_comm, h);
    if (e->data)
        return;
    char *d = alloc_arena_alloc(&c->arena, len + n * sizeof *ids);
    if (!d)
        return;
    memcpy(d, line, len);
    if (n)
        memcpy(d + len, ids, n * sizeof *ids);
    *e = (struct fold_line){h, d, (uint32_t)len, (uint16_t)n, (uint8_t)leaf, java_comm};
    c->used++;
}
