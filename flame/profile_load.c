/* Text into profiles: folded lines ("a;b;c 12", or "a;b;c 10 12" for differentials) through a
 * bounded line reader (profile_reader.c), or a docker-flame SVG's embedded data
 * (profile_embed.c). Input is hostile:
 * lines are bounded, every error names the input and the line. */
#include "flame/profile.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/profile_impl.h"

/* The frame starting at f: where it ends (the next ';', or end), and *hash = hash_bytes() of
 * it with this seed. Looks for ';' a word at a time (a zero byte of w ^ ";;;;;;;;": the lowest
 * flagged byte is always a true one) and hashes the words it passes; whole-word loads only while 8
 * bytes remain before end, so nothing past the stack is read. */
static inline const char *scan_frame(const char *f, const char *end, uint64_t seed, uint64_t *hash)
{
    const uint64_t semis = 0x3b3b3b3b3b3b3b3bULL, ones = 0x0101010101010101ULL,
                   highs = 0x8080808080808080ULL;
    uint64_t h = seed;
    const char *q = f;
    for (; end - q >= 8; q += 8) {
        uint64_t w = hash_load8(q), x = w ^ semis, z = (x - ones) & ~x & highs;
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
    *hash = hash_end(h, hash_tail(q, (size_t)(e - q)), (size_t)(e - f));
    return e;
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

long prof_split_stack(profile *p, const char *s, size_t len)
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
        const char *fe = scan_frame(f, end, p->seed, &h);
        if (n >= PROFILE_MAX_DEPTH)
            return -E2BIG;
        if ((n >= p->scratch_cap || n >= p->prev_ends_cap) &&
            (!GROW(p->scratch, p->scratch_cap, n + 1) ||
             !GROW(p->prev_ends, p->prev_ends_cap, n + 1)))
            return -ENOMEM;
        uint32_t id = prof_intern_hashed(p, f, (size_t)(fe - f), h);
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

int profile_add(profile *p, const char *stack, size_t len, double count1, double count2)
{
    bool two = !(count2 < 0) && !isnan(count2);
    double count = two ? count2 : count1, before = two ? count1 : 0;
    if (len == 0 || prof_bad_count(count) || prof_bad_count(before) ||
        (p->columns && p->columns != (two ? 2 : 1))) {
        errno = EINVAL;
        return -1;
    }
    long n = prof_split_stack(p, stack, len);
    if (n < 0 || prof_stack_add_deep(p, p->scratch, (size_t)n, count, before) < 0) {
        errno = n == -E2BIG ? E2BIG : ENOMEM;
        return -1;
    }
    p->columns = two ? 2 : 1;
    return 0;
}

uint32_t profile_name(profile *p, const char *name, size_t len)
{
    return prof_name_intern(p, name, len);
}

int profile_add_names(profile *p, const uint32_t *ids, size_t n, double count)
{
    if (n == 0 || prof_bad_count(count) || (p->columns && p->columns != 1)) {
        errno = EINVAL;
        return -1;
    }
    if (n > PROFILE_MAX_DEPTH) {
        errno = E2BIG;
        return -1;
    }
    p->prev_n = 0; /* the previous text's frames are not the last stack's any more */
    if (prof_stack_add_deep(p, ids, n, count, 0) < 0) {
        errno = ENOMEM;
        return -1;
    }
    p->columns = 1;
    return 0;
}

/* ---- parsing folded lines ---------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* A count as flamegraph.pl accepts it: digits, optionally '.' and more digits. */
bool prof_parse_count(const char *s, size_t n, double *out)
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
static int add_line(profile *p, const char *line, size_t len, prof_staged *pend, flame_err *err)
{
    while (len > 0 && (is_space(line[len - 1]) || line[len - 1] == '\n'))
        len--;
    if (len == 0)
        return 0; /* blank lines are allowed (and ignored) */
    const char *tok;
    size_t toklen;
    double c1 = 0, c2;
    if (!last_token(line, &len, &tok, &toklen) || !prof_parse_count(tok, toklen, &c2))
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "no count at the end of the line (expected 'frame;frame;... COUNT')");
    bool two = false;
    if (p->columns != 1) {
        size_t l2 = len;
        const char *t2;
        size_t t2len;
        double v;
        if (last_token(line, &l2, &t2, &t2len) && l2 > 0 && prof_parse_count(t2, t2len, &v)) {
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
    long n = prof_split_stack(p, line, len);
    if (n == -E2BIG)
        return flame_fail(err, FLAME_EXIT_ERROR, "more than %d frames in one stack",
                          PROFILE_MAX_DEPTH);
    if (n < 0 || (pend ? prof_commit_ids(p, pend) < 0 ||
                             prof_stage_ids(p, p->scratch, (size_t)n, c2, c1, pend) < 0
                       : prof_stack_add_deep(p, p->scratch, (size_t)n, c2, c1) < 0))
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    p->columns = two ? 2 : 1;
    return 0;
}

int profile_add_line(profile *p, const char *line, size_t len, flame_err *err)
{
    return add_line(p, line, len, NULL, err);
}

/* ---- loading ------------------------------------------------------------------------------ */

static bool looks_like_svg(const char *s, size_t n)
{
    if (prof_starts_with(s, n, "\xef\xbb\xbf")) {
        s += 3;
        n -= 3;
    }
    while (n > 0 && is_space(*s)) {
        s++;
        n--;
    }
    return prof_starts_with(s, n, "<?xml") || prof_starts_with(s, n, "<svg") ||
           prof_starts_with(s, n, "<!DOCTYPE svg");
}

int profile_load(profile *p, FILE *in, const char *name, flame_err *err)
{
    _cleanup_free_ char *buf = malloc(PROF_READ_CHUNK);
    if (!buf)
        return flame_fail(err, FLAME_EXIT_ERROR, "%s: out of memory", name);
    prof_reader r = {.in = in, .buf = buf};
    _cleanup_free_ char *line_buf = NULL;
    const char *line;
    size_t n;
    int rc;
    bool first = true;
    prof_staged pend = {0};
    size_t before = p->nstacks;
    double total_before = p->total;
    while ((rc = prof_reader_next(&r, &line, &n, err)) > 0) {
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
                !(last_token(line, &l, &tok, &toklen) && prof_parse_count(tok, toklen, &v))) {
                rc = prof_load_embedded(p, &r, err);
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
    if (prof_commit_ids(p, &pend) < 0 && rc >= 0)
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
