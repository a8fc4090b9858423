/* The folded data a docker-flame SVG carries (docs/RENDERING.md "The embedded data"): names in
 * base64, stacks as indexes sharing a prefix with the stack before. Written by render_svg(),
 * read back by profile_load(), so any SVG we wrote can be rendered, diffed or exported again. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/profile_impl.h"

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void base64_write(FILE *out, const char *s, size_t n)
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
    if (*e || prof_bad_count(v))
        return false;
    *s = q;
    *out = v;
    return true;
}

int prof_load_embedded(profile *p, prof_reader *r, flame_err *err)
{
    const char *line;
    size_t n;
    int rc;
    while ((rc = prof_reader_next(r, &line, &n, err)) > 0) {
        if (prof_starts_with(line, n, PROF_DATA_OPEN))
            break;
        if (prof_starts_with(line, n, PROF_DATA_OMITTED))
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
    if ((rc = prof_reader_next(r, &line, &n, err)) <= 0)
        return rc < 0 ? -1 : flame_fail(err, FLAME_EXIT_ERROR, "truncated docker-flame data");
    {
        const char *q = line, *end = line + n;
        if (!prof_starts_with(line, n, "v1 ") || (q += 3, !parse_u32(&q, end, &columns)) ||
            q >= end || *q++ != ' ' || !parse_u32(&q, end, &nnames) || q >= end || *q++ != ' ' ||
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
        if ((rc = prof_reader_next(r, &line, &n, err)) <= 0)
            return rc < 0 ? -1 : flame_fail(err, FLAME_EXIT_ERROR, "truncated docker-flame data");
        if (!GROW(dec, dec_cap, n / 4 * 3 + 3) || !GROW(map, map_cap, (size_t)i + 1))
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        long dl = base64_decode(line, n, dec);
        if (dl < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: bad base64 frame name", r->lineno);
        map[i] = prof_name_intern(p, dec, (size_t)dl);
        if (map[i] == UINT32_MAX)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    _cleanup_free_ uint32_t *cur = NULL; /* the previous stack, as embedded indexes */
    size_t cur_cap = 0, cur_len = 0;
    for (uint32_t i = 0; i < nstacks; i++) {
        if ((rc = prof_reader_next(r, &line, &n, err)) <= 0)
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
        if (prof_stack_add_deep(p, p->scratch, cur_len, count, before) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        p->columns = (int)columns;
    }
    if ((rc = prof_reader_next(r, &line, &n, err)) <= 0 ||
        !prof_starts_with(line, n, "</metadata>"))
        return rc < 0 ? -1
                      : flame_fail(err, FLAME_EXIT_ERROR, "line %lu: docker-flame data not closed",
                                   r->lineno);
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

int prof_write_embedded(const profile *p, const prof_view *view, FILE *out, size_t *size,
                        size_t stop_above, flame_err *err)
{
    prof_view own;
    if (!view) {
        if (prof_view_build(p, false, PROF_ORDER_FRAMES, &own) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        view = &own;
    }
    char head[160];
    size_t total = (size_t)snprintf(
        head, sizeof head, PROF_DATA_OPEN " data-format=\"docker-flame-folded-v1\">\nv1 %d %u %u\n",
        p->columns == 2 ? 2 : 1, p->nnames, p->nstacks);
    if (out)
        fputs(head, out);
    for (uint32_t r = 0; r < p->nnames; r++) {
        uint32_t id = view->by_rank[r];
        total += (p->names[id].len + 2) / 3 * 4 + 1;
        if (out) {
            base64_write(out, prof_name_str(p, id), p->names[id].len);
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
