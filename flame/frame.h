/* What a frame name says beyond its text: the annotation folding appends to it (_[j] JIT code,
 * _[i] inlined, _[k] kernel, _[w] waker) or the recorder gave it (_[int]: a Java method running
 * in the interpreter, docs/FOLDING.md; _[a] the class allocated, _[l] the monitor's class waited
 * for, docs/MODES.md). Labels, tooltips and methods show names without it. */
#pragma once
#include <ctype.h>
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

/* The length of s[0..n) without a trailing _[j] _[i] _[k] _[w] _[a] _[l] _[int]. */
static inline size_t frame_strip_annotation(const char *s, size_t n)
{
    if (frame_is_interpreted(s, n))
        return n - 6;
    if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' &&
        (s[n - 2] == 'j' || s[n - 2] == 'i' || s[n - 2] == 'k' || s[n - 2] == 'w' ||
         s[n - 2] == 'a' || s[n - 2] == 'l'))
        return n - 4;
    return n;
}

/* The length of s[0..n) without the annotations that record what the JIT made of a Java method:
 * _[j] compiled, _[i] inlined into its caller, _[int] interpreted. Unchanged code gets other
 * ones from one run to the next (the JIT compiles and inlines by what it has seen so far), so
 * diff and merge compare names without them (flame/match.h); _[k] and _[w] say what a frame is
 * and stay. */
static inline size_t frame_strip_jit(const char *s, size_t n)
{
    if (frame_is_interpreted(s, n))
        return n - 6;
    if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' &&
        (s[n - 2] == 'j' || s[n - 2] == 'i'))
        return n - 4;
    return n;
}

/* Code the JIT inlined into its caller (our agent's "a->b" chains, folded as b_[i]). */
static inline bool frame_is_inlined(const char *s, size_t n)
{
    return frame_ends_with(s, n, "_[i]");
}

/* Replace every 0x[0-9a-fA-F]+ in s[0..n) by "0x..." into buf, which must hold 2 * n + 1 bytes
 * (a 3-byte "0x0" becomes 5 bytes); returns the new length. NUL-terminates buf. difffolded.pl's
 * -s: Perl's s/0x[0-9a-fA-F]+/0x.../g, leftmost match, greedy run of hex digits. */
static inline size_t frame_strip_hex(const char *s, size_t n, char *buf)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '0' && i + 2 < n && s[i + 1] == 'x' && isxdigit((unsigned char)s[i + 2])) {
            memcpy(buf + o, "0x...", 5);
            o += 5;
            i += 2;
            while (i < n && isxdigit((unsigned char)s[i]))
                i++;
        } else {
            buf[o++] = s[i++];
        }
    }
    buf[o] = '\0';
    return o;
}
