/* Minimal TAP producer for C unit tests (read by `prove`). Header-only: each test program
 * includes it once, calls the checks, and ends with `return tap_done();`. */
#pragma once
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...)                                                                              \
    do {                                                                                           \
        int _c = !!(cond);                                                                         \
        printf("%sok %d - ", _c ? "" : "not ", ++tap_n);                                           \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (!_c) {                                                                                 \
            tap_failed++;                                                                          \
            printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);                       \
        }                                                                                          \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *_g = (got), *_w = (want);                                                      \
        int _same = _g && _w && strcmp(_g, _w) == 0;                                               \
        ok(_same, __VA_ARGS__);                                                                    \
        if (!_same)                                                                                \
            printf("#   got:  '%s'\n#   want: '%s'\n", _g ? _g : "(null)", _w ? _w : "(null)");   \
    } while (0)

#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long _gi = (long long)(got), _wi = (long long)(want);                                 \
        ok(_gi == _wi, __VA_ARGS__);                                                               \
        if (_gi != _wi)                                                                            \
            printf("#   got:  %lld\n#   want: %lld\n", _gi, _wi);                                  \
    } while (0)

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
