/* LEB128 varints as the store's blobs hold them (store/pairs.c: a window's pairs; store/dict.c:
 * the dictionary's chunks). One reader for both, because both read bytes from a store file that
 * anyone with write access to it may have crafted: a number past 64 bits or bytes that end early
 * are an error, never a wrap or a read past the end. */
#pragma once
#include <stdint.h>

static inline uint8_t *varint_put(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

/* 0 ok, -1 when the bytes end early or the number does not fit in 64 bits */
static inline int varint_get_long(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
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

/* Most numbers in a blob are one byte (gaps of 1, small frame ids): that case first. */
static inline int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    if (*p < end && **p < 0x80) {
        *v = *(*p)++;
        return 0;
    }
    return varint_get_long(p, end, v);
}
