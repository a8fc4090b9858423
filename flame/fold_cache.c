/* The frame-line cache: perf repeats the same frame lines endlessly, so a line already parsed,
 * tidied and interned is remembered by its exact bytes (and, in compat mode, whether the comm
 * starts with "java", which changes the tidy) with the frame ids it gave: a hit skips parsing,
 * tidying and interning. Bounded (LC_MAX_USED lines, LC_MAX_BYTES), emptied when full, so its
 * memory does not depend on the input. */
#include <stdlib.h>
#include <string.h>

#include "flame/fold_impl.h"
#include "flame/hash.h"

typedef struct line_entry {
    uint64_t hash;
    char *data; /* line bytes, then npieces frame ids (unaligned); NULL = empty slot */
    uint32_t line_len;
    uint16_t npieces;
    uint8_t leaf;      /* enum leaf_kind this line gives a sample when it is the leaf */
    uint8_t java_comm; /* compat: the tidy depends on the comm starting with "java" */
} line_entry;

#define LC_MAX_USED 32768       /* entries; the table stays <= 65536 slots */
#define LC_MAX_BYTES (8u << 20) /* arena bytes */

void lc_clear(folder *f)
{
    flame_arena_clear(&f->lc_arena);
    f->lc_used = 0;
    if (f->lc)
        memset(f->lc, 0, f->lc_cap * sizeof *f->lc);
}

void lc_free(folder *f)
{
    lc_clear(f);
    free(f->lc);
    f->lc = NULL;
    f->lc_cap = 0;
}

static line_entry *lc_slot(folder *f, const char *line, size_t len, bool java, uint64_t h)
{
    for (size_t j = h & (f->lc_cap - 1);; j = (j + 1) & (f->lc_cap - 1)) {
        line_entry *e = &f->lc[j];
        if (!e->data || (e->hash == h && e->line_len == len && e->java_comm == java &&
                         memcmp(e->data, line, len) == 0))
            return e;
    }
}

int lc_lookup(folder *f, const char *line, size_t len)
{
    if (!f->lc_used)
        return 0;
    bool java = java_comm_of(f);
    uint64_t h = hash_bytes(line, len, f->lc_seed ^ java);
    line_entry *e = lc_slot(f, line, len, java, h);
    if (!e->data)
        return 0;
    if (e->npieces && f->nfr == 0 && f->leaf == LEAF_NONE)
        f->leaf = e->leaf;
    uint32_t ids[LC_MAX_PIECES];
    memcpy(ids, e->data + e->line_len, e->npieces * sizeof *ids);
    return push_frames(f, ids, e->npieces) < 0 ? -1 : 1;
}

static int lc_grow(folder *f)
{
    size_t ncap = f->lc_cap ? f->lc_cap * 2 : 1024;
    line_entry *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t i = 0; i < f->lc_cap; i++) {
        if (!f->lc[i].data)
            continue;
        size_t j = f->lc[i].hash & (ncap - 1);
        while (nt[j].data)
            j = (j + 1) & (ncap - 1);
        nt[j] = f->lc[i];
    }
    free(f->lc);
    f->lc = nt;
    f->lc_cap = ncap;
    return 0;
}

void lc_insert(folder *f, const char *line, size_t len, size_t from, enum leaf_kind leaf)
{
    size_t np = f->nfr - from;
    if (np > LC_MAX_PIECES || f->truncated) /* the bound moved frames: not worth it */
        return;
    if (f->lc_used >= LC_MAX_USED || f->lc_arena.bytes >= LC_MAX_BYTES)
        lc_clear(f);
    if ((f->lc_used + 1) * 2 > f->lc_cap && lc_grow(f) < 0)
        return; /* the cache is an optimisation: do without */
    bool java = java_comm_of(f);
    uint64_t h = hash_bytes(line, len, f->lc_seed ^ java);
    line_entry *e = lc_slot(f, line, len, java, h);
    if (e->data)
        return;
    char *d = flame_arena_alloc(&f->lc_arena, len + np * sizeof *f->fr);
    if (!d)
        return;
    memcpy(d, line, len);
    if (np)
        memcpy(d + len, f->fr + from, np * sizeof *f->fr);
    *e = (line_entry){h, d, (uint32_t)len, (uint16_t)np, (uint8_t)leaf, java};
    f->lc_used++;
}
