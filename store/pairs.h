/* A window's (stack id, count) pairs as one blob of varints, deflated (docs/STORE.md, "Pairs"):
 * the encoding of the SQLite backend's windows and of its spool. Pure code (zlib). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store_pair {
    uint64_t id, count;
} store_pair;

/* Sort by id and add up the counts of equal ids; returns the new length. */
size_t pairs_normalize(store_pair *p, size_t n);
/* The most bytes pairs_encode() writes for n pairs. */
size_t pairs_bound(size_t n);
/* p: sorted by id, ids distinct and >= 1, counts >= 1 (pairs_normalize, then drop zeroes).
 * Writes a format byte, varint(n), then the ids as varint gaps (id - previous id) followed by
 * the counts as varints; that body is deflated when that makes it smaller (format 1) and stored
 * as is otherwise (format 0). Returns the length; 0 when out of memory. */
size_t pairs_encode(const store_pair *p, size_t n, uint8_t *out);

/* Decoded pairs, the buffers reused from one blob to the next. */
typedef struct pairs_buf {
    store_pair *p;
    size_t n, cap;
    uint8_t *raw; /* the inflated body */
    size_t raw_cap;
} pairs_buf;
/* Decode a blob into b->p[0..b->n) (in id order). Every byte is checked: a damaged or hostile
 * blob is refused (-1), never read past, and cannot inflate beyond what its pair count allows.
 * -2 when out of memory. */
int pairs_decode(const void *blob, size_t len, pairs_buf *b);
void pairs_buf_free(pairs_buf *b);
