/* tap.h's is_str passes a variable named _c into ok(), which declares its own _c (shadowing,
 * self-initialised): the plugin tests use this equivalent until tap.h is fixed. */
#pragma once
#include "tests/unit/tap.h"

#undef is_str
#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        int c_ = g_ && w_ && strcmp(g_, w_) == 0;                                                  \
        ok(c_, __VA_ARGS__);                                                                       \
        if (!c_)                                                                                   \
            printf("#   got:  '%s'\n#   want: '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)");    \
    } while (0)
