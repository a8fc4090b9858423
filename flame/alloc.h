/* Memory helpers shared by every flame/ module: growable arrays, hash tables zeroed by writing,
 * and an arena of byte strings that never move. One implementation, so each module does not
 * grow its own. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Make room for `need` elements of `size` bytes in *arr, whose capacity is *cap (doubled, from
 * 64): 0, or -1 on OOM or overflow, *arr and *cap then unchanged. */
int alloc_grow(void **arr, size_t *cap, size_t need, size_t size);

/* alloc_grow() for an array of any type and a capacity of any unsigned type; the test that
 * nearly always succeeds stays inline. True on success. */
#define GROW(arr, cap, need)                                                                       \
    ({                                                                                             \
        size_t grow_need_ = (need);                                                                \
        bool grow_ok_ = grow_need_ <= (cap);                                                       \
        if (!grow_ok_) {                                                                           \
            void *grow_arr_ = (arr);                                                               \
            size_t grow_cap_ = (cap);                                                              \
            grow_ok_ = alloc_grow(&grow_arr_, &grow_cap_, grow_need_, sizeof *(arr)) == 0;         \
            if (grow_ok_) {                                                                        \
                (arr) = grow_arr_;                                                                 \
                (cap) = grow_cap_;                                                                 \
            }                                                                                      \
        }                                                                                          \
        grow_ok_;                                                                                  \
    })

/* Zeroed memory for a hash table that is probed (read) before it is filled. Unlike calloc,
 * whose big blocks come straight from mmap, the zeroes are written: a page read first is mapped
 * to the shared zero page and its first write then faults again and, with a second thread
 * running, flushes the other CPU's TLB (an IPI per 4 KiB page: measured as the bulk of a
 * million-stack diff's system time on these VMs). */
void *alloc_zalloc(size_t n);

/* Byte strings copied into chunks that are never moved nor freed one by one: pointers stay
 * valid until alloc_arena_clear(). `bytes` counts what the chunks hold, for callers that bound
 * their memory. */
typedef struct alloc_arena {
    char **chunks;
    size_t nchunks, chunks_cap;
    char *cur;
    size_t left, bytes;
    size_t chunk; /* chunk size; 0 = 64 KiB */
} alloc_arena;

/* n bytes (n > chunk / 4 gets a block of its own, so a big request wastes no chunk), or NULL. */
char *alloc_arena_alloc(alloc_arena *a, size_t n);
/* A copy of s[0..n) with a NUL after it, or NULL. */
char *alloc_arena_strdup(alloc_arena *a, const char *s, size_t n);
void alloc_arena_clear(alloc_arena *a); /* frees every chunk; the arena can be used again */
