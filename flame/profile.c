/* Folded profiles: interned frame names, a hash table of distinct stacks (summed), loading
 * folded text (1 or 2 count columns) or the data a docker-flame SVG embeds, writing folded text.
 * Input is hostile: lines are bounded, every error names the input and the line. */
#include "flame/profile.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/profile_impl.h"
#include "flame/render.h"

/* ---- hashing and growable arrays --------------------------------------------------------- */

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t load8(const char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}

/* Word-at-a-time hash: the 8-byte words of s, then the remaining n % 8 bytes as one zero-padded
 * word, then the length. scan_frame() computes the same value while it looks for the end of a
 * frame, so each input frame is read once for both. */
#define HASH_SEED 0x9e3779b97f4a7c15ULL

static inline uint64_t hash_word(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x87c37b91114253d5ULL;
    return h ^ (h >> 31);
}

static inline uint64_t hash_end(uint64_t h, uint64_t tail, size_t n)
{
    return mix64((h ^ tail ^ (n * 0x100000001b3ULL)) * 0x4cf5ad432745937fULL);
}

/* s[0..r), r < 8, as a little-endian word padded with zero bytes, reading nothing past it. */
static inline uint64_t tail_word(const char *s, size_t r)
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

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = HASH_SEED;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        h = hash_word(h, load8(s + i));
    return hash_end(h, tail_word(s + i, n - i), n);
}

/* The frame starting at f: where it ends (the next ';', or end), and *hash = hash_bytes() of
 * it. Looks for ';' a word at a time (a zero byte of w ^ ";;;;;;;;": the lowest flagged byte
 * is always a true one) and hashes the words it passes; whole-word loads only while 8 bytes
 * remain before end, so nothing past the stack is read. */
static inline const char *scan_frame(const char *f, const char *end, uint64_t *hash)
{
    const uint64_t semis = 0x3b3b3b3b3b3b3b3bULL, ones = 0x0101010101010101ULL,
                   highs = 0x8080808080808080ULL;
    uint64_t h = HASH_SEED;
    const char *q = f;
    for (; end - q >= 8; q += 8) {
        uint64_t w = load8(q), x = w ^ semis, z = (x - ones) & ~x & highs;
        if (z) {
            unsigned k = (unsigned)__builtin_ctzll(z) >> 3; /* bytes before the ';' */
            *hash = hash_end(h, k ? w & (~0ULL >> (64 - 8 * k)) : 0, (size_t)(q - f) + k);
            return q + k;
        }
        h = hash_word(h, w);
    }
    const char *e = q;
    while (e < end && *e != ';')
        e++;
    *hash = hash_end(h, tail_word(q, (size_t)(e - q)), (size_t)(e - f));
    return e;
}

/* memcmp(a, b, n) == 0 for the short strings compared here (names, stacks of ids), inline. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
    if (n < 8) /* the bytes as one zero-padded word each: equal words, equal bytes */
        return tail_word(a, n) == tail_word(b, n);
    for (size_t i = 0; i + 8 < n; i += 8)
        if (load8(a + i) != load8(b + i))
            return false;
    return load8(a + n - 8) == load8(b + n - 8);
}

void *prof_zalloc(size_t n)
{
    void *q = malloc(n ? n : 1);
    /* not memset: GCC turns malloc + memset(0) back into calloc */
    if (q)
        explicit_bzero(q, n);
    return q;
}

/* Make room for `need` elements of size sz: returns the (maybe moved) array, or NULL on OOM
 * (the old array is still valid then). */
static void *grow(void *arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return arr;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 4 / sz)
            return NULL;
        n *= 2;
    }
    void *q = realloc(arr, n * sz);
    if (q)
        *cap = n;
    return q;
}

#define GROW(arr, cap, need)                                                                       \
    ({                                                                                             \
        size_t _c = (cap);                                                                         \
        void *_q = grow((arr), &_c, (need), sizeof *(arr));                                        \
        if (_q) {                                                                                  \
            (arr) = _q;                                                                            \
            (cap) = _c;                                                                            \
        }                                                                                          \
        _q != NULL;                                                                                \
    })

/* ---- profile --------------------------------------------------------------------------- */

profile *profile_new(void)
{
    profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->name_tab_mask = 1023;
    p->stack_tab_mask = 1023;
    p->name_tab = calloc(1024, sizeof *p->name_tab);
    p->stack_tab = calloc(1024, sizeof *p->stack_tab);
    if (!p->name_tab || !p->stack_tab) {
        profile_free(p);
        return NULL;
    }
    return p;
}

void profile_free(profile *p)
{
    if (!p)
        return;
    if (p->shares) { /* prof_counts_copy(): only the stacks are its own */
        free(p->stacks);
        free(p);
        return;
    }
    free(p->text);
    free(p->names);
    free(p->name_tab);
    free(p->ids);
    free(p->stacks);
    free(p->stack_tab);
    free(p->seq);
    free(p->scratch);
    free(p->prev);
    free(p->prev_ends);
    free(p);
}

profile *prof_counts_copy(const profile *p)
{
    profile *q = malloc(sizeof *q);
    if (!q)
        return NULL;
    *q = *p;
    q->stacks = malloc((p->nstacks ? p->nstacks : 1) * sizeof *q->stacks);
    if (!q->stacks) {
        free(q);
        return NULL;
    }
    memcpy(q->stacks, p->stacks, p->nstacks * sizeof *q->stacks);
    q->stacks_cap = p->nstacks;
    q->shares = true;
    /* what would be written when adding is not shared: adding is not allowed */
    q->keep_order = false;
    q->seq = NULL;
    q->nseq = q->seq_cap = 0;
    q->scratch = NULL;
    q->prev = NULL;
    q->prev_ends = NULL;
    q->scratch_cap = q->prev_cap = q->prev_ends_cap = q->prev_n = q->prev_len = 0;
    return q;
}

void profile_keep_order(profile *p, bool keep)
{
    p->keep_order = keep;
}

bool profile_is_diff(const profile *p)
{
    return p->columns == 2;
}

double profile_total(const profile *p)
{
    return p->total;
}

double profile_total_before(const profile *p)
{
    return p->total_before;
}

size_t profile_stacks(const profile *p)
{
    return p->nstacks;
}

static int rehash(uint32_t **tab, uint32_t *mask, uint32_t n, const void *items, size_t item_sz,
                  size_t hash_off)
{
    uint32_t newmask = *mask * 2 + 1;
    uint32_t *t = prof_zalloc(((size_t)newmask + 1) * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t h;
        memcpy(&h, (const char *)items + (size_t)i * item_sz + hash_off, sizeof h);
        size_t j = h & newmask;
        while (t[j])
            j = (j + 1) & newmask;
        t[j] = i + 1;
    }
    free(*tab);
    *tab = t;
    *mask = newmask;
    return 0;
}

/* The slot of name s[0..n) (hash h) in the name table: its entry, or the empty slot where it
 * would go. */
static inline size_t name_slot(const profile *p, const char *s, size_t n, uint64_t h)
{
    size_t j = h & p->name_tab_mask;
    for (uint32_t e; (e = p->name_tab[j]); j = (j + 1) & p->name_tab_mask) {
        const prof_name *nm = &p->names[e - 1];
        if (nm->hash == h && nm->len == n && same_bytes(p->text + nm->off, s, n))
            break;
    }
    return j;
}

uint32_t prof_name_find(const profile *p, const char *s, size_t n)
{
    uint32_t e = p->name_tab[name_slot(p, s, n, hash_bytes(s, n))];
    return e ? e - 1 : UINT32_MAX;
}

/* Add name s[0..n) (hash h), absent from the table, at its empty slot j: its id, or UINT32_MAX
 * on OOM or too many names. Out of line: nearly every lookup finds its name. */
static __attribute__((noinline)) uint32_t add_name(profile *p, const char *s, size_t n, uint64_t h,
                                                   size_t j)
{
    if (n > UINT32_MAX - 2 || p->nnames >= UINT32_MAX / 4)
        return UINT32_MAX;
    if (!GROW(p->text, p->text_cap, p->text_len + n + 1) ||
        !GROW(p->names, p->names_cap, (size_t)p->nnames + 1))
        return UINT32_MAX;
    memcpy(p->text + p->text_len, s, n);
    p->text[p->text_len + n] = '\0';
    uint32_t id = p->nnames++;
    p->names[id] = (prof_name){.off = p->text_len, .len = (uint32_t)n, .hash = h};
    p->text_len += n + 1;
    p->name_tab[j] = id + 1;
    /* keep the load factor under 1/2 so probes stay short */
    if ((size_t)p->nnames * 2 > p->name_tab_mask &&
        rehash(&p->name_tab, &p->name_tab_mask, p->nnames, p->names, sizeof *p->names,
               offsetof(prof_name, hash)) < 0)
        return UINT32_MAX;
    return id;
}

/* The id of name s[0..n) (hash h = hash_bytes(s, n)), adding it if new; UINT32_MAX on OOM or
 * too many names. */
static inline uint32_t intern_hashed(profile *p, const char *s, size_t n, uint64_t h)
{
    size_t j = name_slot(p, s, n, h);
    return p->name_tab[j] ? p->name_tab[j] - 1 : add_name(p, s, n, h, j);
}

static uint32_t intern(profile *p, const char *s, size_t n)
{
    return intern_hashed(p, s, n, hash_bytes(s, n));
}

uint32_t prof_name_intern(profile *p, const char *s, size_t n)
{
    return intern(p, s, n);
}

static uint64_t hash_ids(const uint32_t *ids, size_t n)
{
    return hash_bytes((const char *)ids, n * sizeof *ids);
}

static int stack_rehash(profile *p)
{
    uint32_t newmask = p->stack_tab_mask * 2 + 1;
    uint64_t *t = prof_zalloc(((size_t)newmask + 1) * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < p->nstacks; i++) {
        uint64_t h = p->stacks[i].hash;
        size_t j = h & newmask;
        while (t[j])
            j = (j + 1) & newmask;
        t[j] = (h >> 32 << 32) | (i + 1);
    }
    free(p->stack_tab);
    p->stack_tab = t;
    p->stack_tab_mask = newmask;
    return 0;
}

/* The slot of the stack ids[0..n) (hash h) in the stack table: its entry, or the empty slot
 * where it would go. The table keeps the high half of each hash next to the index, so probing
 * past other stacks touches no stack memory. */
static size_t stack_slot(const profile *p, const uint32_t *ids, size_t n, uint64_t h)
{
    uint64_t tag = h >> 32 << 32;
    size_t j = h & p->stack_tab_mask;
    for (uint64_t e; (e = p->stack_tab[j]); j = (j + 1) & p->stack_tab_mask) {
        if ((e >> 32 << 32) != tag)
            continue;
        const prof_stack *st = &p->stacks[(uint32_t)e - 1];
        if (st->hash == h && st->depth == n &&
            same_bytes((const char *)(p->ids + st->off), (const char *)ids, n * sizeof *ids))
            break;
    }
    return j;
}

uint64_t prof_ids_hash(const uint32_t *ids, size_t n)
{
    return hash_ids(ids, n);
}

uint32_t prof_stack_find(const profile *p, const uint32_t *ids, size_t n, uint64_t hash)
{
    uint64_t e = p->stack_tab[stack_slot(p, ids, n, hash)];
    return e ? (uint32_t)e - 1 : UINT32_MAX;
}

void prof_stack_find_many(const profile *p, size_t count, const uint32_t *const *ids,
                          const uint32_t *n, const uint64_t *hash, uint32_t *out)
{
    /* group prefetching: each stage's loads are issued for the whole batch before the next
     * stage needs them, so the batch waits for memory about once per stage, not once per stack
     * and stage (table slot -> stack record -> its frame ids are three dependent misses) */
    uint32_t cand[PROF_FIND_BATCH];
    for (size_t i = 0; i < count; i++)
        __builtin_prefetch(&p->stack_tab[hash[i] & p->stack_tab_mask]);
    for (size_t i = 0; i < count; i++) {
        uint64_t e = n[i] ? p->stack_tab[hash[i] & p->stack_tab_mask] : 0;
        cand[i] = e && (e >> 32) == (hash[i] >> 32) ? (uint32_t)e - 1 : UINT32_MAX;
        if (cand[i] != UINT32_MAX)
            __builtin_prefetch(&p->stacks[cand[i]]);
    }
    for (size_t i = 0; i < count; i++)
        if (cand[i] != UINT32_MAX) {
            const uint32_t *f = p->ids + p->stacks[cand[i]].off;
            __builtin_prefetch(f);
            __builtin_prefetch(f + n[i] - 1);
        }
    for (size_t i = 0; i < count; i++)
        out[i] = n[i] ? prof_stack_find(p, ids[i], n[i], hash[i]) : UINT32_MAX;
}

/* A stack waiting to be counted: its ids already copied to the end of p->ids (past ids_len, so
 * not yet part of the profile) and its table slot prefetched. The stack table is far bigger than
 * the caches for a big profile, so its probe is a cache miss per input line; profile_load()
 * commits a line's stack only after parsing the next line, and that work hides the miss. */
typedef struct staged {
    bool on;
    uint32_t n;
    uint64_t h;
    double count, before;
} staged;

static int stage_ids(profile *p, const uint32_t *ids, size_t n, double count, double before,
                     staged *s)
{
    if (n > UINT32_MAX - 1 || !GROW(p->ids, p->ids_cap, p->ids_len + n))
        return -ENOMEM;
    uint32_t *tail = p->ids + p->ids_len;
    memcpy(tail, ids, n * sizeof *ids);
    *s = (staged){
        .on = true, .n = (uint32_t)n, .h = hash_ids(tail, n), .count = count, .before = before};
    __builtin_prefetch(&p->stack_tab[s->h & p->stack_tab_mask]);
    return 0;
}

/* Count the staged stack: add it to an equal stack, or make it a new one (its ids are in place
 * already). */
static int commit_ids(profile *p, staged *s)
{
    if (!s->on)
        return 0;
    s->on = false;
    uint32_t n = s->n;
    uint64_t h = s->h;
    size_t j = stack_slot(p, p->ids + p->ids_len, n, h);
    uint32_t idx = p->stack_tab[j] ? (uint32_t)p->stack_tab[j] - 1 : UINT32_MAX;
    if (idx == UINT32_MAX) {
        if (p->nstacks >= UINT32_MAX / 4 || !GROW(p->stacks, p->stacks_cap, (size_t)p->nstacks + 1))
            return -ENOMEM;
        idx = p->nstacks++;
        p->stacks[idx] = (prof_stack){.off = p->ids_len, .depth = n, .hash = h};
        p->ids_len += n;
        p->stack_tab[j] = (h >> 32 << 32) | (idx + 1);
        if ((size_t)p->nstacks * 2 > p->stack_tab_mask && stack_rehash(p) < 0)
            return -ENOMEM;
    }
    p->stacks[idx].count += s->count;
    p->stacks[idx].before += s->before;
    p->total += s->count;
    p->total_before += s->before;
    if (p->keep_order) {
        if (!GROW(p->seq, p->seq_cap, p->nseq + 1))
            return -ENOMEM;
        p->seq[p->nseq++] = (prof_seq){.stack = idx, .count = s->count, .before = s->before};
    }
    return 0;
}

/* Add the stack made of ids[0..n) (already validated) at once. */
static int add_ids(profile *p, const uint32_t *ids, size_t n, double count, double before)
{
    staged s;
    if (stage_ids(p, ids, n, count, before, &s) < 0)
        return -ENOMEM;
    return commit_ids(p, &s);
}

int prof_stack_add(profile *p, const uint32_t *ids, size_t n, double count, double before)
{
    if (n == 0 || n > PROFILE_MAX_DEPTH)
        return -EINVAL;
    return add_ids(p, ids, n, count, before);
}

static size_t common_prefix(const char *a, size_t na, const char *b, size_t nb)
{
    size_t n = na < nb ? na : nb, i = 0;
    while (i + 8 <= n) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            break;
        i += 8;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Split "a;b;c" into interned ids in p->scratch; returns the frame count or -errno. Frames
 * equal to the previous stack's leading frames keep the ids already in scratch. */
static long split_stack(profile *p, const char *s, size_t len)
{
    size_t n = 0, start = 0;
    if (p->prev_n) {
        size_t l = common_prefix(s, len, p->prev, p->prev_len);
        while (n < p->prev_n && p->prev_ends[n] <= l &&
               (p->prev_ends[n] == len || s[p->prev_ends[n]] == ';'))
            n++;
        if (n)
            start = p->prev_ends[n - 1] + 1;
        if (start > len) { /* the whole line was reused: it equals the previous one */
            start = len;
        }
    }
    p->prev_n = 0; /* scratch is being rewritten */
    if (!GROW(p->prev_ends, p->prev_ends_cap, n + 1))
        return -ENOMEM;
    if (n && start >= len && p->prev_ends[n - 1] == len)
        goto done;
    const char *end = s + len;
    for (const char *f = s + start;;) {
        uint64_t h;
        const char *fe = scan_frame(f, end, &h);
        if (n >= PROFILE_MAX_DEPTH)
            return -E2BIG;
        if ((n >= p->scratch_cap || n >= p->prev_ends_cap) &&
            (!GROW(p->scratch, p->scratch_cap, n + 1) ||
             !GROW(p->prev_ends, p->prev_ends_cap, n + 1)))
            return -ENOMEM;
        uint32_t id = intern_hashed(p, f, (size_t)(fe - f), h);
        if (id == UINT32_MAX)
            return -ENOMEM;
        p->prev_ends[n] = (uint32_t)(fe - s);
        p->scratch[n++] = id;
        if (fe == end)
            break;
        f = fe + 1;
    }
done:
    if (!GROW(p->prev, p->prev_cap, len ? len : 1))
        return -ENOMEM;
    memcpy(p->prev, s, len);
    p->prev_len = len;
    p->prev_n = n;
    return (long)n;
}

static bool bad_count(double c)
{
    return !(c >= 0) || !isfinite(c);
}

int profile_add(profile *p, const char *stack, size_t len, double count1, double count2)
{
    bool two = !(count2 < 0) && !isnan(count2);
    double count = two ? count2 : count1, before = two ? count1 : 0;
    if (len == 0 || bad_count(count) || bad_count(before) ||
        (p->columns && p->columns != (two ? 2 : 1))) {
        errno = EINVAL;
        return -1;
    }
    long n = split_stack(p, stack, len);
    if (n < 0 || add_ids(p, p->scratch, (size_t)n, count, before) < 0) {
        errno = n == -E2BIG ? E2BIG : ENOMEM;
        return -1;
    }
    p->columns = two ? 2 : 1;
    return 0;
}

/* ---- parsing folded lines ---------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* A count as flamegraph.pl accepts it: digits, optionally '.' and more digits. */
static bool parse_count(const char *s, size_t n, double *out)
{
    /* digits [. digits] [e|E [+|-] digits]: what prof_format_count writes (it uses an exponent
     * for counts beyond 2^53 and for tiny fractions), so every profile we write reads back. */
    if (n == 0 || n > 64 || s[0] < '0' || s[0] > '9')
        return false;
    if (n <= 15) { /* plain integers (nearly every count): exact without strtod */
        uint64_t v = 0;
        size_t d = 0;
        while (d < n && s[d] >= '0' && s[d] <= '9')
            v = v * 10 + (uint64_t)(s[d++] - '0');
        if (d == n) {
            *out = (double)v;
            return true;
        }
    }
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i != n)
        return false;
    char buf[65];
    memcpy(buf, s, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return isfinite(*out);
}

/* Split off the last whitespace-separated token of s[0..*len): the token's bounds, and *len
 * shrinks to the text before it (trailing whitespace removed). false if there is no
 * whitespace before the token. */
static bool last_token(const char *s, size_t *len, const char **tok, size_t *toklen)
{
    size_t e = *len;
    size_t b = e;
    while (b > 0 && !is_space(s[b - 1]))
        b--;
    if (b == 0)
        return false;
    *tok = s + b;
    *toklen = e - b;
    while (b > 0 && is_space(s[b - 1]))
        b--;
    *len = b;
    return true;
}

/* One folded line. With pend (profile_load), the line's stack is staged and the one staged
 * before it committed; without, it is counted at once. */
static int add_line(profile *p, const char *line, size_t len, staged *pend, flame_err *err)
{
    while (len > 0 && (is_space(line[len - 1]) || line[len - 1] == '\n'))
        len--;
    if (len == 0)
        return 0; /* blank lines are allowed (and ignored) */
    const char *tok;
    size_t toklen;
    double c1 = 0, c2;
    if (!last_token(line, &len, &tok, &toklen) || !parse_count(tok, toklen, &c2))
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "no count at the end of the line (expected 'frame;frame;... COUNT')");
    bool two = false;
    if (p->columns != 1) {
        size_t l2 = len;
        const char *t2;
        size_t t2len;
        double v;
        if (last_token(line, &l2, &t2, &t2len) && l2 > 0 && parse_count(t2, t2len, &v)) {
            two = true;
            c1 = v;
            len = l2;
        } else if (p->columns == 2) {
            return flame_fail(err, FLAME_EXIT_ERROR,
                              "one count column, but earlier lines had two (differential input "
                              "needs 'stack BEFORE AFTER' on every line)");
        }
    }
    if (len == 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "empty stack before the count");
    long n = split_stack(p, line, len);
    if (n == -E2BIG)
        return flame_fail(err, FLAME_EXIT_ERROR, "more than %d frames in one stack",
                          PROFILE_MAX_DEPTH);
    if (n < 0 ||
        (pend ? commit_ids(p, pend) < 0 || stage_ids(p, p->scratch, (size_t)n, c2, c1, pend) < 0
              : add_ids(p, p->scratch, (size_t)n, c2, c1) < 0))
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    p->columns = two ? 2 : 1;
    return 0;
}

int profile_add_line(profile *p, const char *line, size_t len, flame_err *err)
{
    return add_line(p, line, len, NULL, err);
}

/* ---- bounded line reader ------------------------------------------------------------------ */

typedef struct reader {
    FILE *in;
    char *buf; /* read buffer */
    size_t pos, len;
    char *line; /* a line that spans two reads */
    size_t line_len, line_cap;
    bool eof;
    bool omitted; /* saw the marker of an SVG whose data was left out */
    unsigned long lineno;
} reader;

enum { READ_CHUNK = 1 << 20 };

/* Next line (without its newline) in out and n: 1, 0 at EOF, -1 on error (err filled). */
static int reader_next(reader *r, const char **out, size_t *n, flame_err *err)
{
    r->line_len = 0;
    for (;;) {
        if (r->pos < r->len) {
            char *s = r->buf + r->pos;
            size_t avail = r->len - r->pos;
            char *nl = memchr(s, '\n', avail);
            size_t take = nl ? (size_t)(nl - s) : avail;
            if (r->line_len + take > PROFILE_MAX_LINE)
                return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: longer than %u MiB",
                                  r->lineno + 1, PROFILE_MAX_LINE >> 20);
            if (nl && r->line_len == 0) { /* the common case: no copy */
                r->pos += take + 1;
                r->lineno++;
                *out = s;
                *n = take;
                return 1;
            }
            if (!GROW(r->line, r->line_cap, r->line_len + take + 1))
                return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            memcpy(r->line + r->line_len, s, take);
            r->line_len += take;
            r->pos += take + (nl ? 1 : 0);
            if (nl) {
                r->lineno++;
                *out = r->line;
                *n = r->line_len;
                return 1;
            }
        }
        if (r->eof) {
            if (r->line_len == 0)
                return 0;
            r->lineno++;
            *out = r->line;
            *n = r->line_len;
            r->line_len = 0;
            return 1;
        }
        r->pos = 0;
        r->len = fread(r->buf, 1, READ_CHUNK, r->in);
        if (r->len < READ_CHUNK) {
            if (ferror(r->in))
                return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "read error");
            r->eof = true;
        }
    }
}

/* ---- the data embedded in our SVGs --------------------------------------------------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void prof_base64_write(FILE *out, const char *s, size_t n)
{
    char buf[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)(unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)(unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        buf[k++] = b64chars[(v >> 18) & 63];
        buf[k++] = b64chars[(v >> 12) & 63];
        buf[k++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
        buf[k++] = i + 2 < n ? b64chars[v & 63] : '=';
        if (k > sizeof buf - 4) {
            fwrite(buf, 1, k, out);
            k = 0;
        }
    }
    fwrite(buf, 1, k, out);
}

/* Decode base64 in place-safe fashion into out (capacity >= n*3/4); -1 if malformed. */
static long base64_decode(const char *s, size_t n, char *out)
{
    if (n % 4)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        unsigned v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = s[i + j];
            const char *q = c ? strchr(b64chars, c) : NULL;
            if (c == '=' && i + 4 == n && j >= 2) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!q || pad)
                return -1;
            v = (v << 6) | (unsigned)(q - b64chars);
        }
        out[k++] = (char)(v >> 16);
        if (pad < 2)
            out[k++] = (char)(v >> 8);
        if (pad < 1)
            out[k++] = (char)v;
    }
    return (long)k;
}

static bool starts_with(const char *s, size_t n, const char *prefix)
{
    size_t l = strlen(prefix);
    return n >= l && memcmp(s, prefix, l) == 0;
}

static bool parse_u32(const char **s, const char *end, uint32_t *out)
{
    const char *q = *s;
    uint64_t v = 0;
    if (q >= end || *q < '0' || *q > '9')
        return false;
    while (q < end && *q >= '0' && *q <= '9') {
        v = v * 10 + (uint64_t)(*q - '0');
        if (v > UINT32_MAX)
            return false;
        q++;
    }
    *s = q;
    *out = (uint32_t)v;
    return true;
}

/* Counts in the embedded data may be written with exponents (%.17g), so use strtod here. */
static bool parse_double(const char **s, const char *end, double *out)
{
    char buf[64];
    size_t n = 0;
    const char *q = *s;
    while (q < end && *q != ' ' && n < sizeof buf - 1)
        buf[n++] = *q++;
    buf[n] = '\0';
    char *e;
    if (n == 0)
        return false;
    double v = strtod(buf, &e);
    if (*e || bad_count(v))
        return false;
    *s = q;
    *out = v;
    return true;
}

#define DATA_OPEN "<metadata id=\"docker-flame-data\""

/* Read the embedded data of an SVG (the reader is positioned anywhere before it). */
static int load_svg_data(profile *p, reader *r, flame_err *err)
{
    const char *line;
    size_t n;
    int rc;
    while ((rc = reader_next(r, &line, &n, err)) > 0) {
        if (starts_with(line, n, DATA_OPEN))
            break;
        if (starts_with(line, n, PROF_DATA_OMITTED))
            r->omitted = true;
    }
    if (rc < 0)
        return -1;
    if (rc == 0 && r->omitted)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "this SVG was written without its folded data (larger than the embed "
                          "limit); re-render it from the folded stacks, with --embed-limit 0 to "
                          "keep them");
    if (rc == 0)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "an SVG without docker-flame data (only SVGs written by docker-flame "
                          "render can be read back; re-render from folded stacks)");
    uint32_t columns, nnames, nstacks;
    if ((rc = reader_next(r, &line, &n, err)) <= 0)
        return rc < 0 ? -1 : flame_fail(err, FLAME_EXIT_ERROR, "truncated docker-flame data");
    {
        const char *q = line, *end = line + n;
        if (!starts_with(line, n, "v1 ") || (q += 3, !parse_u32(&q, end, &columns)) || q >= end ||
            *q++ != ' ' || !parse_u32(&q, end, &nnames) || q >= end || *q++ != ' ' ||
            !parse_u32(&q, end, &nstacks) || q != end || columns < 1 || columns > 2)
            return flame_fail(err, FLAME_EXIT_ERROR,
                              "line %lu: bad docker-flame data header (expected 'v1 COLUMNS "
                              "NAMES STACKS')",
                              r->lineno);
    }
    _cleanup_free_ uint32_t *map = NULL; /* embedded name index -> our id */
    size_t map_cap = 0;
    _cleanup_free_ char *dec = NULL;
    size_t dec_cap = 0;
    for (uint32_t i = 0; i < nnames; i++) {
        if ((rc = reader_next(r, &line, &n, err)) <= 0)
            return rc < 0 ? -1 : flame_fail(err, FLAME_EXIT_ERROR, "truncated docker-flame data");
        if (!GROW(dec, dec_cap, n / 4 * 3 + 3) || !GROW(map, map_cap, (size_t)i + 1))
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        long dl = base64_decode(line, n, dec);
        if (dl < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: bad base64 frame name", r->lineno);
        map[i] = intern(p, dec, (size_t)dl);
        if (map[i] == UINT32_MAX)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    _cleanup_free_ uint32_t *cur = NULL; /* the previous stack, as embedded indexes */
    size_t cur_cap = 0, cur_len = 0;
    for (uint32_t i = 0; i < nstacks; i++) {
        if ((rc = reader_next(r, &line, &n, err)) <= 0)
            return rc < 0 ? -1 : flame_fail(err, FLAME_EXIT_ERROR, "truncated docker-flame data");
        const char *q = line, *end = line + n;
        uint32_t prefix;
        if (!parse_u32(&q, end, &prefix) || prefix > cur_len || prefix >= PROFILE_MAX_DEPTH ||
            q >= end || *q++ != ' ')
            return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: bad docker-flame stack", r->lineno);
        cur_len = prefix;
        for (;;) {
            uint32_t v;
            if (!parse_u32(&q, end, &v) || v >= nnames || cur_len >= PROFILE_MAX_DEPTH ||
                !GROW(cur, cur_cap, cur_len + 1))
                return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: bad docker-flame stack",
                                  r->lineno);
            cur[cur_len++] = v;
            if (q < end && *q == ',') {
                q++;
                continue;
            }
            break;
        }
        double c[2] = {0, 0};
        for (uint32_t k = 0; k < columns; k++)
            if (q >= end || *q++ != ' ' || !parse_double(&q, end, &c[k]))
                return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: bad docker-flame count",
                                  r->lineno);
        if (q != end || (p->columns && p->columns != (int)columns))
            return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: bad docker-flame stack", r->lineno);
        p->prev_n = 0; /* scratch no longer holds the last split stack */
        if (!GROW(p->scratch, p->scratch_cap, cur_len))
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        for (size_t k = 0; k < cur_len; k++)
            p->scratch[k] = map[cur[k]];
        double count = columns == 2 ? c[1] : c[0], before = columns == 2 ? c[0] : 0;
        if (add_ids(p, p->scratch, cur_len, count, before) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        p->columns = (int)columns;
    }
    if ((rc = reader_next(r, &line, &n, err)) <= 0 || !starts_with(line, n, "</metadata>"))
        return rc < 0 ? -1
                      : flame_fail(err, FLAME_EXIT_ERROR, "line %lu: docker-flame data not closed",
                                   r->lineno);
    return 0;
}

/* ---- loading ------------------------------------------------------------------------------ */

static bool looks_like_svg(const char *s, size_t n)
{
    if (starts_with(s, n, "\xef\xbb\xbf")) {
        s += 3;
        n -= 3;
    }
    while (n > 0 && is_space(*s)) {
        s++;
        n--;
    }
    return starts_with(s, n, "<?xml") || starts_with(s, n, "<svg") ||
           starts_with(s, n, "<!DOCTYPE svg");
}

int profile_load(profile *p, FILE *in, const char *name, flame_err *err)
{
    _cleanup_free_ char *buf = malloc(READ_CHUNK);
    if (!buf)
        return flame_fail(err, FLAME_EXIT_ERROR, "%s: out of memory", name);
    reader r = {.in = in, .buf = buf};
    _cleanup_free_ char *line_buf = NULL;
    const char *line;
    size_t n;
    int rc;
    bool first = true;
    staged pend = {0};
    size_t before = p->nstacks;
    double total_before = p->total;
    while ((rc = reader_next(&r, &line, &n, err)) > 0) {
        if (first) {
            first = false;
            /* an SVG's first line never ends with a count; a folded line always does */
            size_t l = n;
            const char *tok;
            size_t toklen;
            double v;
            while (l > 0 && is_space(line[l - 1]))
                l--;
            if (looks_like_svg(line, n) &&
                !(last_token(line, &l, &tok, &toklen) && parse_count(tok, toklen, &v))) {
                rc = load_svg_data(p, &r, err);
                break;
            }
        }
        if (add_line(p, line, n, &pend, err) < 0) {
            rc = -1;
            flame_wrap(err, "line %lu", r.lineno);
            break;
        }
    }
    line_buf = r.line;
    if (commit_ids(p, &pend) < 0 && rc >= 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc < 0)
        return flame_wrap(err, "%s", name);
    if (p->nstacks == before && p->total == total_before)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "%s: no stacks in the input (expected folded lines 'frame;frame;... "
                          "COUNT', e.g. from docker flame fold)",
                          name);
    return 0;
}

int profile_load_path(profile *p, const char *path, flame_err *err)
{
    if (strcmp(path, "-") == 0)
        return profile_load(p, stdin, "<stdin>", err);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "%s", path);
    return profile_load(p, f, path, err);
}

/* ---- sorted views ------------------------------------------------------------------------ */

static int cmp_name(const void *a, const void *b, void *ctx)
{
    const profile *p = ctx;
    const prof_name *x = &p->names[*(const uint32_t *)a], *y = &p->names[*(const uint32_t *)b];
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(p->text + x->off, p->text + y->off, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

typedef struct sort_ctx {
    const prof_stack *stacks;
    const uint32_t *seq;
} sort_ctx;

static int cmp_stack(const void *a, const void *b, void *ctx)
{
    const sort_ctx *c = ctx;
    const prof_stack *x = &c->stacks[*(const uint32_t *)a], *y = &c->stacks[*(const uint32_t *)b];
    const uint32_t *p = c->seq + x->off, *q = c->seq + y->off;
    uint32_t n = x->depth < y->depth ? x->depth : y->depth;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] != q[i])
            return p[i] < q[i] ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Sort stack indexes: a natural merge sort. Folded inputs are nearly always sorted already
 * (stackcollapse and docker-flame write them sorted) and a diff is two sorted runs plus a few
 * breaks where one name is a prefix of another, so the runs are found and merged pairwise: a
 * 1M-stack diff has ~30 runs, 5 linear passes instead of ~20 rounds of comparisons. Inputs
 * without long runs go to qsort_r. Stable. -1 on OOM (a is then untouched). */
typedef int (*idx_cmp)(const void *, const void *, void *);

static int sort_indexes(uint32_t *a, size_t n, idx_cmp cmp, void *ctx)
{
    if (n < 2)
        return 0;
    /* the runs' ends, as long as there are few enough runs to be worth merging */
    size_t max_runs = n / 64 + 1, nruns = 0;
    _cleanup_free_ size_t *ends = malloc(max_runs * sizeof *ends);
    if (!ends)
        return -1;
    for (size_t i = 1; i < n && nruns < max_runs; i++)
        if (cmp(&a[i - 1], &a[i], ctx) > 0)
            ends[nruns++] = i;
    if (nruns == 0)
        return 0;
    if (nruns == max_runs) {
        qsort_r(a, n, sizeof *a, cmp, ctx);
        return 0;
    }
    ends[nruns++] = n;
    _cleanup_free_ uint32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -1;
    uint32_t *src = a, *dst = tmp;
    while (nruns > 1) {
        size_t out = 0, start = 0;
        for (size_t r = 0; r < nruns; r += 2) {
            size_t mid = ends[r], end = r + 1 < nruns ? ends[r + 1] : mid;
            size_t i = start, j = mid, k = start;
            while (i < mid && j < end)
                dst[k++] = cmp(&src[j], &src[i], ctx) < 0 ? src[j++] : src[i++];
            memcpy(dst + k, src + i, (mid - i) * sizeof *dst);
            k += mid - i;
            memcpy(dst + k, src + j, (end - j) * sizeof *dst);
            ends[out++] = end;
            start = end;
        }
        nruns = out;
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    return 0;
}

void prof_view_free(prof_view *v)
{
    free(v->rank);
    free(v->by_rank);
    free(v->seq);
    free(v->order);
    memset(v, 0, sizeof *v);
}

int prof_view_build(const profile *p, bool reverse, bool sort, prof_view *v)
{
    memset(v, 0, sizeof *v);
    size_t nn = p->nnames ? p->nnames : 1, ns = p->nstacks ? p->nstacks : 1;
    v->rank = malloc(nn * sizeof *v->rank);
    v->by_rank = malloc(nn * sizeof *v->by_rank);
    v->seq = malloc((p->ids_len ? p->ids_len : 1) * sizeof *v->seq);
    v->order = malloc(ns * sizeof *v->order);
    if (!v->rank || !v->by_rank || !v->seq || !v->order) {
        prof_view_free(v);
        return -1;
    }
    for (uint32_t i = 0; i < p->nnames; i++)
        v->by_rank[i] = i;
    qsort_r(v->by_rank, p->nnames, sizeof *v->by_rank, cmp_name, (void *)p);
    for (uint32_t r = 0; r < p->nnames; r++)
        v->rank[v->by_rank[r]] = r;
    for (uint32_t s = 0; s < p->nstacks; s++) {
        const prof_stack *st = &p->stacks[s];
        const uint32_t *src = p->ids + st->off;
        uint32_t *dst = v->seq + st->off;
        for (uint32_t i = 0; i < st->depth; i++)
            dst[reverse ? st->depth - 1 - i : i] = v->rank[src[i]];
        v->order[s] = s;
    }
    if (sort) {
        sort_ctx c = {p->stacks, v->seq};
        if (sort_indexes(v->order, p->nstacks, cmp_stack, &c) < 0) {
            prof_view_free(v);
            return -1;
        }
    }
    return 0;
}

/* ---- writing folded text ---------------------------------------------------------------- */

/* Counts print as integers when they are integers, else with round-trip precision. */
int prof_format_count(char *buf, size_t n, double c)
{
    if (c == floor(c) && c >= 0 && c < 9007199254740992.0 && n >= 17) {
        uint64_t v = (uint64_t)c;
        char tmp[20];
        int k = 0, len;
        do {
            tmp[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        for (len = 0; k;)
            buf[len++] = tmp[--k];
        buf[len] = '\0';
        return len;
    }
    return snprintf(buf, n, "%.17g", c);
}

typedef struct byte_ctx {
    const profile *p;
    const prof_view *v;
} byte_ctx;

/* Stacks compared as their folded text "a;b;c" byte by byte (stackcollapse-perf.pl's order).
 * Names never contain ';' (it separates them), which settles a name that is a prefix of the
 * other: the next byte is ';' or the end of the stack. */
static int cmp_stack_bytes(const void *a, const void *b, void *ctx)
{
    const byte_ctx *c = ctx;
    const profile *p = c->p;
    const prof_stack *x = &p->stacks[*(const uint32_t *)a], *y = &p->stacks[*(const uint32_t *)b];
    const uint32_t *fx = c->v->seq + x->off, *fy = c->v->seq + y->off;
    uint32_t n = x->depth < y->depth ? x->depth : y->depth;
    for (uint32_t i = 0; i < n; i++) {
        if (fx[i] == fy[i])
            continue;
        const prof_name *nx = &p->names[c->v->by_rank[fx[i]]],
                        *ny = &p->names[c->v->by_rank[fy[i]]];
        uint32_t m = nx->len < ny->len ? nx->len : ny->len;
        int r = memcmp(p->text + nx->off, p->text + ny->off, m);
        if (r)
            return r;
        if (nx->len < ny->len) /* x's next byte: ';' or the end */
            return i + 1 == x->depth ? -1 : ';' < (unsigned char)p->text[ny->off + m] ? -1 : 1;
        return i + 1 == y->depth ? 1 : ';' < (unsigned char)p->text[nx->off + m] ? 1 : -1;
    }
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

int profile_write_folded(const profile *p, FILE *out, flame_err *err)
{
    prof_view v;
    if (prof_view_build(p, false, false, &v) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    byte_ctx bc = {p, &v};
    if (sort_indexes(v.order, p->nstacks, cmp_stack_bytes, &bc) < 0) {
        prof_view_free(&v);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    char num[64];
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[v.order[k]];
        const uint32_t *ids = p->ids + st->off;
        for (uint32_t i = 0; i < st->depth; i++) {
            if (i)
                putc(';', out);
            fwrite(prof_name_str(p, ids[i]), 1, p->names[ids[i]].len, out);
        }
        if (p->columns == 2) {
            prof_format_count(num, sizeof num, st->before);
            putc(' ', out);
            fputs(num, out);
        }
        prof_format_count(num, sizeof num, st->count);
        putc(' ', out);
        fputs(num, out);
        putc('\n', out);
    }
    prof_view_free(&v);
    if (fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return 0;
}

static char *put_u32(char *q, uint32_t v)
{
    char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *q++ = tmp[--n];
    return q;
}

/* The embedded copy of the profile that profile_load() reads back (see docs/RENDERING.md).
 * view: an unreversed, sorted view of p to reuse, or NULL. With out NULL nothing is written
 * and *size gets the number of bytes it would take. */
int prof_write_embedded(const profile *p, const prof_view *view, FILE *out, size_t *size,
                        size_t stop_above, flame_err *err)
{
    prof_view own;
    if (!view) {
        if (prof_view_build(p, false, true, &own) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        view = &own;
    }
    char head[160];
    size_t total = (size_t)snprintf(
        head, sizeof head, DATA_OPEN " data-format=\"docker-flame-folded-v1\">\nv1 %d %u %u\n",
        p->columns == 2 ? 2 : 1, p->nnames, p->nstacks);
    if (out)
        fputs(head, out);
    for (uint32_t r = 0; r < p->nnames; r++) {
        uint32_t id = view->by_rank[r];
        total += (p->names[id].len + 2) / 3 * 4 + 1;
        if (out) {
            prof_base64_write(out, prof_name_str(p, id), p->names[id].len);
            putc('\n', out);
        }
    }
    const uint32_t *prev = NULL;
    uint32_t prev_depth = 0;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[view->order[k]];
        const uint32_t *cur = view->seq + st->off;
        uint32_t common = 0;
        while (prev && common < prev_depth && common + 1 < st->depth && prev[common] == cur[common])
            common++;
        if (!GROW(line, cap, (size_t)(st->depth - common) * 11 + 160)) {
            if (view == &own)
                prof_view_free(&own);
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
        char *q = put_u32(line, common);
        for (uint32_t i = common; i < st->depth; i++) {
            *q++ = i > common ? ',' : ' ';
            q = put_u32(q, cur[i]);
        }
        if (p->columns == 2) {
            *q++ = ' ';
            q += prof_format_count(q, 64, st->before);
        }
        *q++ = ' ';
        q += prof_format_count(q, 64, st->count);
        *q++ = '\n';
        total += (size_t)(q - line);
        if (out)
            fwrite(line, 1, (size_t)(q - line), out);
        else if (stop_above && total > stop_above)
            break; /* measuring against a limit: over it is all the caller needs to know */
        prev = cur;
        prev_depth = st->depth;
    }
    total += strlen("</metadata>\n");
    if (out)
        fputs("</metadata>\n", out);
    if (size)
        *size = total;
    if (view == &own)
        prof_view_free(&own);
    return 0;
}

/* ---- summaries ----------------------------------------------------------------------------- */

/* A frame that looks like a Java method: JIT-annotated, or a package path / dotted class name. */
static bool looks_java(const char *s, size_t n)
{
    if (n >= 4 && (memcmp(s + n - 4, "_[j]", 4) == 0 || memcmp(s + n - 4, "_[i]", 4) == 0))
        return true;
    if (n >= 4 && memcmp(s + n - 4, "_[k]", 4) == 0)
        return false;
    if (memmem(s, n, "::", 2) && !memmem(s, n, ":::", 3) && !memmem(s, n, "/", 1))
        return false; /* C++ */
    if (n > 0 && (s[0] == '[' || s[0] == '('))
        return false;
    return memchr(s, '/', n) || memchr(s, '.', n);
}

typedef struct self_ent {
    uint32_t id;
    double self;
} self_ent;

static int cmp_self(const void *a, const void *b, void *ctx)
{
    const profile *p = ctx;
    const self_ent *x = a, *y = b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return cmp_name(&x->id, &y->id, (void *)p);
}

size_t profile_top_self(const profile *p, size_t n, bool java_only, const char **names,
                        double *counts)
{
    if (n == 0 || p->nnames == 0)
        return 0;
    _cleanup_free_ self_ent *e = calloc(p->nnames, sizeof *e);
    if (!e)
        return 0;
    for (uint32_t i = 0; i < p->nnames; i++)
        e[i].id = i;
    for (uint32_t s = 0; s < p->nstacks; s++) {
        const prof_stack *st = &p->stacks[s];
        e[p->ids[st->off + st->depth - 1]].self += st->count;
    }
    size_t k = 0;
    for (uint32_t i = 0; i < p->nnames; i++) {
        const prof_name *nm = &p->names[i];
        if (e[i].self > 0 && (!java_only || looks_java(p->text + nm->off, nm->len)))
            e[k++] = e[i];
    }
    qsort_r(e, k, sizeof *e, cmp_self, (void *)p);
    if (k > n)
        k = n;
    for (size_t i = 0; i < k; i++) {
        names[i] = prof_name_str(p, e[i].id);
        counts[i] = e[i].self;
    }
    return k;
}
