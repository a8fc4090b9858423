/* The protobuf writer (flame/pb.h). */
#include "flame/pb.h"

#include <stdlib.h>
#include <string.h>

void pb_free(pb_buf *w)
{
    free(w->b);
    *w = (pb_buf){0};
}

static bool reserve(pb_buf *w, size_t more)
{
    if (w->oom)
        return false;
    if (more <= w->cap - w->n)
        return true;
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->n < more) {
        if (cap > SIZE_MAX / 2) {
            w->oom = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *b = realloc(w->b, cap);
    if (!b) {
        w->oom = true;
        return false;
    }
    w->b = b;
    w->cap = cap;
    return true;
}

size_t pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void pb_raw(pb_buf *w, const void *data, size_t n)
{
    if (n && reserve(w, n)) {
        memcpy(w->b + w->n, data, n);
        w->n += n;
    }
}

void pb_varint(pb_buf *w, uint64_t v)
{
    if (!reserve(w, 10))
        return;
    while (v >= 0x80) {
        w->b[w->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    w->b[w->n++] = (uint8_t)v;
}

void pb_key(pb_buf *w, uint32_t field, unsigned wire_type)
{
    pb_varint(w, (uint64_t)field << 3 | wire_type);
}

void pb_uint(pb_buf *w, uint32_t field, uint64_t v)
{
    if (!v)
        return;
    pb_key(w, field, PB_VARINT);
    pb_varint(w, v);
}

void pb_bytes(pb_buf *w, uint32_t field, const void *data, size_t n)
{
    pb_key(w, field, PB_LEN);
    pb_varint(w, n);
    pb_raw(w, data, n);
}

void pb_packed_u64(pb_buf *w, uint32_t field, const uint64_t *v, size_t n)
{
    if (!n)
        return;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += pb_varint_len(v[i]);
    pb_key(w, field, PB_LEN);
    pb_varint(w, len);
    for (size_t i = 0; i < n; i++)
        pb_varint(w, v[i]);
}

void pb_packed_i64(pb_buf *w, uint32_t field, const int64_t *v, size_t n)
{
    if (!n)
        return;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += pb_varint_len((uint64_t)v[i]);
    pb_key(w, field, PB_LEN);
    pb_varint(w, len);
    for (size_t i = 0; i < n; i++)
        pb_varint(w, (uint64_t)v[i]);
}
