/* Bounded reads of a target's memory through its /proc/<pid>/mem descriptor, shared by the
 * stack walker's modules (codeheap.c, ehframe.c, walk.c). Every address comes from the target
 * and may be anything: a read outside the user half, of length 0 or wrapping around, is refused
 * without a system call; a read the kernel refuses (unmapped, guard page) fails. Module prefix:
 * sc_wr_. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_WR_USER_TOP 0x800000000000ull /* x86-64 user half: above is never target memory */

typedef struct sc_wread {
    int fd;          /* /proc/<pid>/mem, owned by the caller */
    uint64_t reads;  /* preads made */
    uint64_t faults; /* of them, refused or short */
    uint64_t bytes;  /* bytes asked for */
} sc_wread;

/* 0 when all len bytes at addr were read into buf, -1 otherwise (buf then undefined). */
int sc_wr_read(sc_wread *r, uint64_t addr, void *buf, size_t len);
/* A user-half address that is 8-byte aligned and not in the first page. */
static inline bool sc_wr_ptr_ok(uint64_t p)
{
    return p >= 4096 && (p & 7) == 0 && p < SC_WR_USER_TOP;
}
