/* The store's byte encodings, shared by its backends: a window's (stack id, count) pairs as one
 * blob of varints (docs/STORE.md, "Pairs"), the stack key (a hash of the folded text), and the
 * bounds put on what a container gave us. Pure code. */
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
 * Writes varint(n), then per pair varint(id - previous id) varint(count). Returns the length. */
size_t pairs_encode(const store_pair *p, size_t n, uint8_t *out);

/* Reading a blob back without allocating; every byte is checked (a damaged or hostile blob is
 * refused, never read past). */
typedef struct pairs_reader {
    const uint8_t *p, *end;
    uint64_t left, id;
} pairs_reader;
/* 1 ready, -1 when the header is bad; *n (may be NULL) = the number of pairs announced. Read
 * all with: for (got = pairs_open(..); got == 1 && (got = pairs_next(..)) == 1;) ... */
int pairs_open(pairs_reader *r, const void *blob, size_t len, uint64_t *n);
/* 1 = a pair in *pair, 0 = the end (every byte used), -1 = damaged. */
int pairs_next(pairs_reader *r, store_pair *pair);

/* The key of a stack: SHA-256 of its folded text, first 63 bits (a signed 64-bit column in
 * SQLite, an unsigned one in ClickHouse: the same number in both). */
uint64_t stack_key(const char *s, size_t n);

/* A label as stored: at most STORE_MAX_LABEL - 1 bytes (cut on a UTF-8 boundary), NULL = "". */
void label_copy(char *out, const char *in);
/* Stack text as stored: s itself when short enough (returns len), else the longest prefix that
 * ends at a frame boundary below STORE_MAX_STACK, followed by ";[truncated]" in buf (which has
 * STORE_MAX_STACK bytes); *out points to the text to store. */
size_t stack_bound(const char *s, size_t len, char *buf, const char **out);
