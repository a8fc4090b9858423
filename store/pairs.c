/* A window's pairs (store/pairs.h): varint delta-coded then deflated: a
 * window of a steady JVM references stacks stored long ago, with ids close to each other and
 * small counts, so most pairs take one byte or less. */
#include "store/pairs.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store/varint.h"

static int cmp_pair(const void *a, const void *b)
{
    const store_pair *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

size_t pairs_normalize(store_pair *p, size_t n)
{
    if (n == 0)
        return 0;
    qsort(p, n, sizeof *p, cmp_pair);
    size_t o = 0;
    for (size_t i = 1; i < n; i++) {
        if (p[i].id == p[o].id)
            p[o].count += p[i].count;
        else
            p[++o] = p[i];
    }
    return o + 1;
}

/* format byte of a blob */
enum { PAIRS_PLAIN = 0, PAIRS_DEFLATE = 1 };
/* a body holds two varints per pair, of 1 to 10 bytes each */
#define BODY_MAX(n) ((n)*20)

size_t pairs_bound(size_t n)
{
    return 1 + 10 + BODY_MAX(n);
}

/* The body: all the gaps, then all the counts. Apart, each stream is a run of small numbers of
 * one kind, which deflate codes in a few bits each (measured: 3.4 KB of varints per window of
 * 1,300 distinct stacks deflate to 1.5 KB; interleaved, to 1.7 KB). */
static size_t put_body(const store_pair *p, size_t n, uint8_t *out)
{
    uint8_t *o = out;
    for (size_t i = 0; i < n; i++)
        o = varint_put(o, p[i].id - (i ? p[i - 1].id : 0));
    for (size_t i = 0; i < n; i++)
        o = varint_put(o, p[i].count);
    return (size_t)(o - out);
}

/* Raw deflate (no zlib header: the format byte says what it is) of in into out (cap bytes):
 * the length, or 0 when it does not fit or fails. */
static size_t deflate_into(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
    z_stream z = {0};
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t n = rc == Z_STREAM_END ? cap - z.avail_out : 0;
    deflateEnd(&z);
    return n;
}

size_t pairs_encode(const store_pair *p, size_t n, uint8_t *out)
{
    uint8_t *body = malloc(BODY_MAX(n) + 1);
    if (!body)
        return 0;
    size_t blen = put_body(p, n, body);
    uint8_t head[21], *h = varint_put(head + 1, n);
    size_t plain = (size_t)(h - head) + blen;
    /* deflated: format, n, the body's length, then the stream; kept only when smaller */
    head[0] = PAIRS_DEFLATE;
    uint8_t *hd = varint_put(h, blen);
    size_t hl = (size_t)(hd - head);
    size_t z = n >= 8 && plain > hl ? deflate_into(body, blen, out + hl, plain - hl) : 0;
    if (z && hl + z < plain) {
        memcpy(out, head, hl);
        free(body);
        return hl + z;
    }
    head[0] = PAIRS_PLAIN;
    memcpy(out, head, (size_t)(h - head));
    memcpy(out + (h - head), body, blen);
    free(body);
    return plain;
}

/* Inflate exactly want bytes from in[0..len) into b->raw, all of the input used. */
static int inflate_body(const uint8_t *in, size_t len, size_t want, pairs_buf *b)
{
    if (want > b->raw_cap) {
        uint8_t *nr = realloc(b->raw, want);
        if (!nr)
            return -2;
        b->raw = nr;
        b->raw_cap = want;
    }
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        return -2;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = b->raw;
    z.avail_out = (uInt)want;
    int rc = inflate(&z, Z_FINISH);
    bool whole = rc == Z_STREAM_END && z.avail_out == 0 && z.avail_in == 0;
    inflateEnd(&z);
    return whole ? 0 : -1;
}

int pairs_decode(const void *blob, size_t len, pairs_buf *b)
{
    const uint8_t *p = blob, *end = p + len;
    uint64_t n, blen;
    b->n = 0;
    if (!blob || len < 2 || *p > PAIRS_DEFLATE)
        return -1;
    bool deflated = *p++ == PAIRS_DEFLATE;
    if (varint_get(&p, end, &n) < 0 || n > (1u << 30))
        return -1;
    if (deflated) {
        /* the body's length is bounded by its pair count: no inflating beyond that */
        if (varint_get(&p, end, &blen) < 0 || blen < 2 * n || blen > BODY_MAX(n))
            return -1;
        int rc = inflate_body(p, (size_t)(end - p), (size_t)blen, b);
        if (rc < 0)
            return rc;
        p = b->raw;
        end = p + blen;
    } else if ((uint64_t)(end - p) < 2 * n) {
        return -1;
    }
    if (n > b->cap) {
        store_pair *np = realloc(b->p, n * sizeof *np);
        if (!np)
            return -2;
        b->p = np;
        b->cap = n;
    }
    uint64_t id = 0, v;
    for (size_t i = 0; i < n; i++) {
        /* ids strictly increase: a gap of 0, or one past 2^64, is damage */
        if (varint_get(&p, end, &v) < 0 || v == 0 || v > UINT64_MAX - id)
            return -1;
        id += v;
        b->p[i].id = id;
    }
    for (size_t i = 0; i < n; i++) {
        if (varint_get(&p, end, &v) < 0 || v == 0)
            return -1;
        b->p[i].count = v;
    }
    if (p != end) /* bytes after the last count */
        return -1;
    b->n = n;
    return 0;
}

void pairs_buf_free(pairs_buf *b)
{
    free(b->p);
    free(b->raw);
    *b = (pairs_buf){0};
}
