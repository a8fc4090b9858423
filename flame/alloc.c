/* Memory helpers shared by flame/: growable arrays, zero-written tables, a string arena. */
#include "flame/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int alloc_grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 4 / size)
            return -1;
        n *= 2;
    }
    void *q = realloc(*arr, n * size);
    if (!q)
        return -1;
    *arr = q;
    *cap = n;
    return 0;
}

void *alloc_zalloc(size_t n)
{
    void *q = malloc(n ? n : 1);
    /* not memset: GCC turns malloc + memset(0) back into calloc */
    if (q)
        explicit_bzero(q, n);
    return q;
}

char *alloc_arena_alloc(alloc_arena *a, size_t n)
{
    size_t chunk = a->chunk ? a->chunk : 64u << 10;
    if (n > a->left) {
        size_t sz = n > chunk / 4 ? n : chunk;
        char *c = malloc(sz ? sz : 1);
        if (!c || !GROW(a->chunks, a->chunks_cap, a->nchunks + 1)) {
            free(c);
            return NULL;
        }
        a->chunks[a->nchunks++] = c;
        a->bytes += sz;
        if (sz != chunk) /* a block of its own: the current chunk stays current */
            return c;
        a->cur = c;
        a->left = sz;
    }
    char *d = a->cur;
    a->cur += n;
    a->left -= n;
    return d;
}

char *alloc_arena_strdup(alloc_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *d = alloc_arena_alloc(a, n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

void alloc_arena_clear(alloc_arena *a)
{
    for (size_t i = 0; i < a->nchunks; i++)
        free(a->chunks[i]);
    free(a->chunks);
    *a = (alloc_arena){.chunk = a->chunk};
}
