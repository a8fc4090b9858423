/* The one hash of flame/ (frame names, stacks of ids, frame lines, method names): a word at a
 * time, seeded per table. A random seed (hash_random_seed) keeps hostile input from aiming
 * many keys at one bucket; tables never compare hashes made with different seeds. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t hash_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t hash_load8(const char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}

/* The state after one more 8-byte word, and the final value after the last (partial) word;
 * split out so a scanner can hash while it looks for a delimiter (profile_load.c). */
static inline uint64_t hash_word(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x87c37b91114253d5ULL;
    return h ^ (h >> 31);
}

static inline uint64_t hash_end(uint64_t h, uint64_t tail, size_t n)
{
    return hash_mix64((h ^ tail ^ (n * 0x100000001b3ULL)) * 0x4cf5ad432745937fULL);
}

/* s[0..r), r < 8, as a little-endian word padded with zero bytes, reading nothing past it. */
static inline uint64_t hash_tail(const char *s, size_t r)
{
    if (r >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + r - 4, 4);
        return lo | (uint64_t)hi << (8 * (r - 4));
    }
    uint64_t w = 0;
    for (size_t i = 0; i < r; i++)
        w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return w;
}

/* The 8-byte words of s, then the remaining n % 8 bytes as one zero-padded word, then n. */
static inline uint64_t hash_bytes(const char *s, size_t n, uint64_t seed)
{
    uint64_t h = seed;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        h = hash_word(h, hash_load8(s + i));
    return hash_end(h, hash_tail(s + i, n - i), n);
}

/* memcmp(a, b, n) == 0 for the short keys compared after a hash match, inline. */
static inline bool hash_same_bytes(const char *a, const char *b, size_t n)
{
    if (n < 8) /* the bytes as one zero-padded word each: equal words, equal bytes */
        return hash_tail(a, n) == hash_tail(b, n);
    for (size_t i = 0; i + 8 < n; i += 8)
        if (hash_load8(a + i) != hash_load8(b + i))
            return false;
    return hash_load8(a + n - 8) == hash_load8(b + n - 8);
}

/* Open addressing with linear probing over mask + 1 uint32 slots (0 = empty): put v at the first
 * empty slot from h. The rebuilds of every index table go through here. */
static inline void hash_slot_put(uint32_t *t, size_t mask, uint64_t h, uint32_t v)
{
    size_t j = h & mask;
    while (t[j])
        j = (j + 1) & mask;
    t[j] = v;
}

/* A seed from getrandom(); early in boot, when the pool is not ready, one that still varies. */
uint64_t hash_random_seed(void);
