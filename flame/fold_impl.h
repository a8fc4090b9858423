/* Internals of the folder, shared by its files only: fold.c (samples into the profile),
 * fold_parse.c (perf script's lines, Perl's regexes emulated by hand), fold_tidy.c (frame names)
 * and fold_cache.c (frame lines already seen). Everyone else uses flame/fold.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flame/alloc.h"
#include "flame/fold.h"
#include "flame/profile.h"

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

/* ---- perf script's lines (fold_parse.c) ---- */

typedef struct header {
    span comm, pid, tid, event, period;
    span time, cpu; /* ours only: the timestamp (without ':') and the "[cpu]" token's digits */
    span rest;      /* ours only: a frame printed on the header line (perf record without -g) */
} header;

/* Perl's header regex, with the comm's minimum length (2 in Perl, 1 in our dialect). */
bool header_perl(const char *s, size_t n, size_t min_comm, header *h);
/* Perl's event regex: fills h->event and h->period (or leaves them absent). */
void event_perl(const char *s, size_t n, header *h);
/* Our header parser, anchored on the timestamp token. */
bool header_ours(const char *s, size_t n, header *h);
bool all_digits(const char *p, size_t n);

typedef struct frame_line {
    span pc, func, mod;
} frame_line;

/* Perl's frame regex: /^\s*(\w+)\s*(.+) \((.*)\)/. */
bool parse_frame(const char *s, size_t n, frame_line *fl);
bool mod_is_perfmap(span mod);      /* ours: ".../perf-<N>.map" */
bool mod_is_perfmap_perl(span mod); /* Perl: m:/tmp/perf-\d+\.map: anywhere */
bool mod_is_kernel(span mod);       /* Perl: m/(^\[|vmlinux$)/ && !/unknown/ */
/* The next "->" in [p, end), or NULL. */
const char *find_arrow(const char *p, const char *end);

/* ---- the folder ---- */

enum leaf_kind { LEAF_NONE, LEAF_OTHER, LEAF_JIT, LEAF_JIT_NAMED };

typedef struct fold_span {
    uint32_t off, len;
} fold_span;

struct line_entry;

struct folder {
    fold_opts o;
    char *filter; /* owned: opts.event_filter or the first event seen */
    bool filter_defaulted;
    /* The folded stacks: frame names interned, stacks as runs of ids (the one stack table of
     * flame/). Names of dropped samples may linger: folder_profile() removes them. */
    profile *prof;
    bool maybe_unused; /* names were interned for frames no stack kept */

    /* The sample being read: frame ids leaf first, as perf prints them, and their bytes. */
    bool in_sample;
    char *pname;
    size_t pname_len;
    long pid, tid;
    int cpu; /* -1 unknown */
    unsigned long long time_us;
    unsigned long long period;
    enum leaf_kind leaf;
    bool truncated;
    enum leaf_kind last_leaf; /* what the last frame line would make of a leaf */
    uint32_t *fr;
    size_t nfr, fr_cap, fr_bytes;
    char *fbuf; /* scratch: the piece being tidied */
    size_t fbuf_cap;
    fold_span *pieces; /* scratch: one frame line split on "->" */
    size_t pieces_cap;
    uint32_t *key; /* scratch: the stack being counted, root first */
    size_t key_cap;
    char *text; /* scratch: a stack's folded text for folder_each() */
    size_t text_cap;

    /* Cache of frame lines already parsed, tidied and interned (perf repeats the same lines
     * endlessly): bounded, and simply emptied when full. */
    struct line_entry *lc;
    size_t lc_cap, lc_used;
    uint64_t lc_seed;
    flame_arena lc_arena;

    fold_stats st;
};

/* ---- frame names (fold_tidy.c) ---- */

/* Tidy one piece of a frame line's symbol (index = its position in the "->" chain) into
 * f->fbuf: the name's length, or -1 when out of memory. */
long tidy_piece(folder *f, const frame_line *fl, span piece, size_t index, bool java_comm,
                bool perfmap);
/* Perl's generic tidy: cut from the first '(' (Go methods and "(anonymous namespace)" kept). */
size_t cut_params_generic(char *b, size_t n);

/* ---- the frame-line cache (fold_cache.c) ---- */

#define LC_MAX_PIECES 64 /* lines with more pieces are not cached */

/* 1: the line was a cached frame line and its frames are pushed; 0: not cached; -1: OOM. */
int lc_lookup(folder *f, const char *line, size_t len);
/* Remember frames [from, nfr) of the sample as what this line gives; leaf: what the line makes
 * of a sample's leaf. Silently does nothing when it cannot (the cache is an optimisation). */
void lc_insert(folder *f, const char *line, size_t len, size_t from, enum leaf_kind leaf);
void lc_clear(folder *f); /* forget everything (e.g. the ids changed) */
void lc_free(folder *f);

/* ---- samples (fold.c) ---- */

/* Append frame ids to the sample (leaf first) and keep it within the bounds. -1 on OOM. */
int push_frames(folder *f, const uint32_t *ids, size_t n);
/* In compat mode, the tidy of JIT names depends on the comm starting with "java". */
bool java_comm_of(const folder *f);
