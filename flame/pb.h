/* A protobuf writer, just what pprof's profile.proto needs (flame/pprof.c): varints, int64,
 * length-delimited bytes, packed repeated varints, nested messages built in their own buffer.
 * Written by hand rather than with protobuf-c: the wire format is a few rules (docs/PPROF.md).
 * Errors stick: after an allocation failure every call is a no-op and `oom` stays set, so a
 * writer checks once at the end. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pb_buf {
    uint8_t *b;
    size_t n, cap;
    bool oom;
} pb_buf;

/* The wire types used here (the protobuf encoding's own numbers). */
enum { PB_VARINT = 0, PB_LEN = 2 };

void pb_free(pb_buf *w);
static inline void pb_reset(pb_buf *w)
{
    w->n = 0;
}
size_t pb_varint_len(uint64_t v);
void pb_raw(pb_buf *w, const void *data, size_t n);
void pb_varint(pb_buf *w, uint64_t v);
void pb_key(pb_buf *w, uint32_t field, unsigned wire_type);
/* A varint field. Zero is the default of proto3 and is left out, as protobuf itself does. */
void pb_uint(pb_buf *w, uint32_t field, uint64_t v);
/* int64 fields are varints of the two's complement (10 bytes when negative; not zigzag). */
static inline void pb_int(pb_buf *w, uint32_t field, int64_t v)
{
    pb_uint(w, field, (uint64_t)v);
}
/* A length-delimited field: bytes, a string, or a nested message's encoding. Written even when
 * empty (the string table's entry 0 must be ""). */
void pb_bytes(pb_buf *w, uint32_t field, const void *data, size_t n);
static inline void pb_msg(pb_buf *w, uint32_t field, const pb_buf *m)
{
    pb_bytes(w, field, m->b, m->n);
}
/* A packed repeated varint field (nothing for n == 0). */
void pb_packed_u64(pb_buf *w, uint32_t field, const uint64_t *v, size_t n);
void pb_packed_i64(pb_buf *w, uint32_t field, const int64_t *v, size_t n);
