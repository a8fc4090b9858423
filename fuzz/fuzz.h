/* Shared helpers of the libFuzzer harnesses (fuzz/fuzz_*.c). Each harness defines
 * LLVMFuzzerTestOneInput(); the same source is linked either with libFuzzer (make fuzz, clang) or
 * with tests/unit/fuzz_regress_main.c (make test, the ASan build) which replays the kept inputs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A heap copy of exactly n bytes, NOT NUL-terminated: a parser that reads past the length it was
 * given then touches a redzone and ASan reports it. */
static inline char *fuzz_exact(const uint8_t *data, size_t n)
{
    char *p = malloc(n ? n : 1);
    if (!p)
        abort();
    if (n)
        memcpy(p, data, n);
    return p;
}

/* Same, with a NUL after the n bytes, for APIs documented to take C strings. */
static inline char *fuzz_cstr(const uint8_t *data, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        abort();
    if (n)
        memcpy(p, data, n);
    p[n] = '\0';
    return p;
}

static inline ssize_t fuzz_sink_write(void *c, const char *b, size_t n)
{
    (void)c, (void)b;
    return (ssize_t)n;
}

/* A FILE that swallows everything (like /dev/null, without a syscall per flush). */
static inline FILE *fuzz_sink(void)
{
    cookie_io_functions_t io = {.write = fuzz_sink_write};
    FILE *f = fopencookie(NULL, "w", io);
    if (!f)
        abort();
    return f;
}

/* Call fn on each '\n'-separated line (without the '\n'), each in its own exact-size buffer. */
static inline void fuzz_lines(const uint8_t *data, size_t size,
                              void (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
    size_t i = 0;
    while (i < size) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t n = nl ? (size_t)(nl - (data + i)) : size - i;
        char *line = fuzz_exact(data + i, n);
        fn(ctx, line, n);
        free(line);
        i += n + 1;
    }
}

/* Abort with a message: a broken invariant is a finding like a crash. */
#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: %s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
