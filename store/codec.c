/* The store's byte encodings (store/codec.h). Pairs are varint delta-coded: a window of a steady
 * JVM references stacks stored long ago, mostly with small ids close to each other, and small
 * counts, so most pairs take two or three bytes. */
#include "store/codec.h"

#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

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

size_t pairs_bound(size_t n)
{
    return 10 + n * 20; /* a 64-bit varint takes at most 10 bytes */
}

static uint8_t *put_varint(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

size_t pairs_encode(const store_pair *p, size_t n, uint8_t *out)
{
    uint8_t *o = put_varint(out, n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        o = put_varint(o, p[i].id - prev);
        o = put_varint(o, p[i].count);
        prev = p[i].id;
    }
    return (size_t)(o - out);
}

/* 0 ok, -1 when the bytes end early or the number does not fit in 64 bits */
static int get_varint(pairs_reader *r, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return -1;
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1)
            return -1;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

int pairs_open(pairs_reader *r, const void *blob, size_t len, uint64_t *n)
{
    r->p = blob;
    r->end = r->p + len;
    r->id = 0;
    if (!blob || get_varint(r, &r->left) < 0 || r->left > len) /* a pair takes 2 bytes or more */
        return -1;
    if (n)
        *n = r->left;
    return 1;
}

int pairs_next(pairs_reader *r, store_pair *pair)
{
    if (r->left == 0)
        return r->p == r->end ? 0 : -1;
    uint64_t delta, count;
    /* ids strictly increase and counts are positive: anything else is damage */
    if (get_varint(r, &delta) < 0 || get_varint(r, &count) < 0 || delta == 0 || count == 0 ||
        delta > UINT64_MAX - r->id)
        return -1;
    r->id += delta;
    r->left--;
    pair->id = r->id;
    pair->count = count;
    return 1;
}

uint64_t stack_key(const char *s, size_t n)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)s, n, md);
    uint64_t k = 0;
    for (int i = 0; i < 8; i++)
        k = k << 8 | md[i];
    return k >> 1;
}

void label_copy(char *out, const char *in)
{
    size_t n = in ? strnlen(in, STORE_MAX_LABEL) : 0;
    if (n >= STORE_MAX_LABEL) {
        n = STORE_MAX_LABEL - 1;
        while (n > 0 && ((unsigned char)in[n] & 0xc0) == 0x80) /* not inside a UTF-8 sequence */
            n--;
    }
    if (n)
        memcpy(out, in, n);
    out[n] = 0;
}

size_t stack_bound(const char *s, size_t len, char *buf, const char **out)
{
    static const char mark[] = ";[truncated]";
    *out = s;
    if (len <= STORE_MAX_STACK)
        return len;
    size_t keep = STORE_MAX_STACK - sizeof mark;
    while (keep > 0 && s[keep] != ';')
        keep--;
    memcpy(buf, s, keep);
    /* no frame boundary at all: the stack becomes the mark alone, never an empty frame */
    const char *m = keep ? mark : mark + 1;
    memcpy(buf + keep, m, strlen(m));
    *out = buf;
    return keep + strlen(m);
}
