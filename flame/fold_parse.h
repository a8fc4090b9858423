/* perf script's lines read as stackcollapse-perf.pl reads them (Perl's regexes emulated by hand,
 * byte classes as Perl sees a byte string) and as our dialect does (docs/FOLDING.md): the
 * folder's parser (flame/fold_parse.c), used by fold.c and fold_tidy.c. Depends on nothing of
 * the folder. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- character classes as Perl sees a byte string (no locale, no unicode_strings) ---- */

enum { C_SPACE = 1, C_DIGIT = 2, C_WORD = 4, C_HEX = 8, C_XLOWER = 16, C_SPECIAL = 32 };
/* C_XLOWER: [0-9a-f] (perf's offsets); C_SPECIAL: bytes the per-frame pass must rewrite. */
extern const unsigned char fold_cls[256];

static inline bool pl_space(unsigned char c)
{
    return fold_cls[c] & C_SPACE;
}
static inline bool pl_digit(unsigned char c)
{
    return fold_cls[c] & C_DIGIT;
}
static inline bool pl_word(unsigned char c)
{
    return fold_cls[c] & C_WORD;
}
static inline bool is_hex(unsigned char c)
{
    return fold_cls[c] & C_HEX;
}

/* Runs of a byte class (Perl's \s* \d+ \w+ ...): run_fwd() is where the run of class c that
 * starts at s[i] ends, run_to() where the next byte of class c is (n if none), run_back() where
 * the run of class c that ends just before s[i] starts. */
static inline size_t run_fwd(const char *s, size_t i, size_t n, unsigned c)
{
    while (i < n && (fold_cls[(unsigned char)s[i]] & c))
        i++;
    return i;
}
static inline size_t run_to(const char *s, size_t i, size_t n, unsigned c)
{
    while (i < n && !(fold_cls[(unsigned char)s[i]] & c))
        i++;
    return i;
}
static inline size_t run_back(const char *s, size_t i, unsigned c)
{
    while (i > 0 && (fold_cls[(unsigned char)s[i - 1]] & c))
        i--;
    return i;
}

/* A text span inside the current line; len 0 with p NULL means "absent" (Perl's undef). */
typedef struct span {
    const char *p;
    size_t len;
} span;

static inline bool span_eq(span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.p && s.len == n && memcmp(s.p, lit, n) == 0;
}

static inline const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
    return nn <= hn ? memmem(h, hn, n, nn) : NULL;
}

/* ---- perf script's lines ---- */

typedef struct header {
    span comm, pid, tid, event, period;
    span time, cpu; /* ours only: the timestamp (without ':') and the "[cpu]" token's digits */
    span rest;      /* ours only: a frame printed on the header line (perf record without -g) */
} header;

/* Perl's header regex, with the comm's minimum length (2 in Perl, 1 in our dialect). */
bool fold_header_perl(const char *s, size_t n, size_t min_comm, header *h);
/* Perl's event regex: fills h->event and h->period (or leaves them absent). */
void fold_event_perl(const char *s, size_t n, header *h);
/* Our header parser, anchored on the timestamp token. */
bool fold_header_ours(const char *s, size_t n, header *h);
bool fold_all_digits(const char *p, size_t n);

typedef struct frame_line {
    span pc, func, mod;
} frame_line;

/* Perl's frame regex: /^\s*(\w+)\s*(.+) \((.*)\)/. */
bool fold_parse_frame(const char *s, size_t n, frame_line *fl);
bool fold_mod_is_perfmap(span mod);      /* ours: ".../perf-<N>.map" */
bool fold_mod_is_perfmap_perl(span mod); /* Perl: m:/tmp/perf-\d+\.map: anywhere */
bool fold_mod_is_kernel(span mod);       /* Perl: m/(^\[|vmlinux$)/ && !/unknown/ */
/* The next "->" in [p, end), or NULL. */
const char *fold_find_arrow(const char *p, const char *end);
