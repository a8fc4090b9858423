/* The TAP producer of every C unit test (read by `prove`). Header-only: a test program includes
 * it once, calls the checks, and ends with `return tap_done();`. The macros' locals end in '_'
 * and never nest (is_str/is_int print, they do not call ok()), so -Werror=shadow stays quiet. */
#pragma once
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

/* The start of one result line; the caller prints the description. */
static inline void tap_result(int pass)
{
    printf("%sok %d - ", pass ? "" : "not ", ++tap_n);
}

static inline void tap_failure(const char *file, int line, const char *what)
{
    tap_failed++;
    printf("#   failed at %s:%d: %s\n", file, line, what);
}

#define ok(cond, ...)                                                                              \
    do {                                                                                           \
        int ok_pass_ = !!(cond);                                                                   \
        tap_result(ok_pass_);                                                                      \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (!ok_pass_)                                                                             \
            tap_failure(__FILE__, __LINE__, #cond);                                                \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *str_got_ = (got), *str_want_ = (want);                                         \
        int str_pass_ = str_got_ && str_want_ && strcmp(str_got_, str_want_) == 0;                 \
        tap_result(str_pass_);                                                                     \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (!str_pass_) {                                                                          \
            tap_failure(__FILE__, __LINE__, #got " equals " #want);                                \
            printf("#   got:  '%s'\n#   want: '%s'\n", str_got_ ? str_got_ : "(null)",             \
                   str_want_ ? str_want_ : "(null)");                                              \
        }                                                                                          \
    } while (0)

#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long int_got_ = (long long)(got), int_want_ = (long long)(want);                      \
        tap_result(int_got_ == int_want_);                                                         \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (int_got_ != int_want_) {                                                               \
            tap_failure(__FILE__, __LINE__, #got " == " #want);                                    \
            printf("#   got:  %lld\n#   want: %lld\n", int_got_, int_want_);                       \
        }                                                                                          \
    } while (0)

/* Doubles compared exactly: counts in these tests are sums of small integers or halves. */
#define is_num(got, want, ...)                                                                     \
    do {                                                                                           \
        double num_got_ = (double)(got), num_want_ = (double)(want);                               \
        tap_result(num_got_ == num_want_);                                                         \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (num_got_ != num_want_) {                                                               \
            tap_failure(__FILE__, __LINE__, #got " == " #want);                                    \
            printf("#   got:  %.17g\n#   want: %.17g\n", num_got_, num_want_);                     \
        }                                                                                          \
    } while (0)

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
