/* What a frame name says beyond its text: the annotation folding appends to it (_[j] JIT code,
 * _[i] inlined, _[k] kernel, _[w] waker) or the recorder gave it (_[int]: a Java method running
 * in the interpreter, docs/FOLDING.md). Labels, tooltips and methods show names without it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline bool frame_ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* A Java method the interpreter ran (sidecar/recorder/interp.h names it X_[int]). */
static inline bool frame_is_interpreted(const char *s, size_t n)
{
    return frame_ends_with(s, n, "_[int]");
}

/* The length of s[0..n) without a trailing _[j] _[i] _[k] _[w] _[int]. */
static inline size_t frame_strip_annotation(const char *s, size_t n)
{
    if (frame_is_interpreted(s, n))
        return n - 6;
    if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' &&
        (s[n - 2] == 'j' || s[n - 2] == 'i' || s[n - 2] == 'k' || s[n - 2] == 'w'))
        return n - 4;
    return n;
}

/* Code the JIT inlined into its caller (our agent's "a->b" chains, folded as b_[i]). */
static inline bool frame_is_inlined(const char *s, size_t n)
{
    return frame_ends_with(s, n, "_[i]");
}
