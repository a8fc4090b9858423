/* Sorted views of a profile (names ranked bytewise, stacks ordered frame by frame or by their
 * folded text) and the one writer of folded text. Renderers, exporters and every folded output
 * (profile, diff, the folder) read a profile through these. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/profile_impl.h"

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

/* Stacks compared as their folded text "a;b;c", byte by byte (stackcollapse-perf.pl's `sort`).
 * At the first frame where two stacks differ, the names' ranks decide unless the smaller name
 * is a proper prefix of the other ("a" and "a b"): then the byte after it decides, ';' when a
 * frame follows or the end of the stack, against the longer name's next byte. Names never hold
 * ';' (it separates them), so that byte is never ';' itself. A name that is a proper prefix of
 * any later name is one of the next rank's (everything between them starts with it), so one
 * flag per rank tells when the ranks are not enough. */
typedef struct text_ctx {
    const profile *p;
    const prof_view *v;
    const bool *prefix_of_next; /* by rank */
} text_ctx;

static int cmp_stack_text(const void *a, const void *b, void *ctx)
{
    const text_ctx *c = ctx;
    const profile *p = c->p;
    const prof_stack *x = &p->stacks[*(const uint32_t *)a], *y = &p->stacks[*(const uint32_t *)b];
    const uint32_t *fx = c->v->seq + x->off, *fy = c->v->seq + y->off;
    uint32_t n = x->depth < y->depth ? x->depth : y->depth;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t rx = fx[i], ry = fy[i];
        if (rx == ry)
            continue;
        if (!c->prefix_of_next[rx < ry ? rx : ry])
            return rx < ry ? -1 : 1;
        const prof_name *nx = &p->names[c->v->by_rank[rx]], *ny = &p->names[c->v->by_rank[ry]];
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

static int sort_by_text(const profile *p, prof_view *v)
{
    _cleanup_free_ bool *flag = calloc(p->nnames ? p->nnames : 1, sizeof *flag);
    if (!flag)
        return -1;
    for (uint32_t r = 0; r + 1 < p->nnames; r++) {
        const prof_name *a = &p->names[v->by_rank[r]], *b = &p->names[v->by_rank[r + 1]];
        flag[r] = a->len < b->len && memcmp(p->text + a->off, p->text + b->off, a->len) == 0;
    }
    text_ctx c = {p, v, flag};
    return sort_indexes(v->order, p->nstacks, cmp_stack_text, &c);
}

int prof_view_build(const profile *p, bool reverse, enum prof_order order, prof_view *v)
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
    sort_ctx c = {p->stacks, v->seq};
    int rc = order == PROF_ORDER_FRAMES ? sort_indexes(v->order, p->nstacks, cmp_stack, &c)
             : order == PROF_ORDER_TEXT ? sort_by_text(p, v)
                                        : 0;
    if (rc < 0)
        prof_view_free(v);
    return rc;
}

/* ---- folded text ------------------------------------------------------------------------ */

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

int prof_write_folded(const profile *p, enum prof_order order, FILE *out, flame_err *err)
{
    prof_view v;
    if (prof_view_build(p, false, order, &v) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* lines are assembled in one buffer and written in large blocks: stdio's per-character
     * path was most of the cost of writing a million stacks */
    size_t cap = 1 << 20, len = 0;
    _cleanup_free_ char *buf = malloc(cap);
    int rc = buf ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (uint32_t k = 0; k < p->nstacks && rc == 0; k++) {
        const prof_stack *st = &p->stacks[v.order[k]];
        const uint32_t *ids = p->ids + st->off;
        size_t need = 2 * 32 + 3;
        for (uint32_t i = 0; i < st->depth; i++)
            need += p->names[ids[i]].len + 1;
        if (len + need > cap) {
            if (len && fwrite(buf, 1, len, out) != len) {
                rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
                break;
            }
            len = 0;
            if (need > cap) {
                char *q = realloc(buf, need);
                if (!q) {
                    rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                    break;
                }
                buf = q;
                cap = need;
            }
        }
        for (uint32_t i = 0; i < st->depth; i++) {
            if (i)
                buf[len++] = ';';
            memcpy(buf + len, prof_name_str(p, ids[i]), p->names[ids[i]].len);
            len += p->names[ids[i]].len;
        }
        if (p->columns == 2) {
            buf[len++] = ' ';
            len += (size_t)prof_format_count(buf + len, 32, st->before);
        }
        buf[len++] = ' ';
        len += (size_t)prof_format_count(buf + len, 32, st->count);
        buf[len++] = '\n';
    }
    if (rc == 0 && len && fwrite(buf, 1, len, out) != len)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    prof_view_free(&v);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return rc;
}

int profile_write_folded(const profile *p, FILE *out, flame_err *err)
{
    return prof_write_folded(p, PROF_ORDER_TEXT, out, err);
}
