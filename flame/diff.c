/* Differential profiles with difffolded.pl's semantics (union of stacks, -n, -s) and the movers
 * (per-method shares before and after, from flame/methods.c). The union reuses the larger
 * input's tables (flame/union.c) instead of re-parsing both. */
#include "flame/diff.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/methods.h"
#include "flame/profile_impl.h"
#include "flame/union.h"

struct diff {
    profile *r;    /* two columns; diff_view(d, false) rewrites its counts */
    profile *m;    /* r's stacks with counts of their own, for the mirror: made on first use */
    double *a, *b; /* raw before/after count of each stack of r */
    double ta, tb; /* raw totals */
    bool norm;
    char *mover_text; /* names of the last diff_movers() result */
};

/* ---- stacks as text ------------------------------------------------------------------------ */

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

size_t diff_strip_hex(const char *s, size_t n, char *buf)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        /* Perl's s/0x[0-9a-fA-F]+/0x.../g: leftmost match, greedy run of hex digits */
        if (s[i] == '0' && i + 2 < n && s[i + 1] == 'x' && is_hex(s[i + 2])) {
            memcpy(buf + o, "0x...", 5);
            o += 5;
            i += 2;
            while (i < n && is_hex(s[i]))
                i++;
        } else {
            buf[o++] = s[i++];
        }
    }
    buf[o] = '\0';
    return o;
}

/* ---- diff ------------------------------------------------------------------------------------ */

int diff_new(profile *a, profile *b, const diff_opts *o, diff **out, flame_err *err)
{
    *out = NULL;
    int rc = 0;
    if (profile_is_diff(a) || profile_is_diff(b)) {
        rc = flame_fail(err, FLAME_EXIT_ERROR,
                        "the %s profile is already a differential (two count columns); diff "
                        "two plain profiles instead",
                        profile_is_diff(a) ? "before" : "after");
        goto fail;
    }
    if (profile_stacks(a) == 0 || profile_total(a) <= 0 || profile_stacks(b) == 0 ||
        profile_total(b) <= 0) {
        rc = flame_fail(err, FLAME_EXIT_ERROR, "the %s profile is empty (no samples)",
                        profile_stacks(a) == 0 || profile_total(a) <= 0 ? "before" : "after");
        goto fail;
    }
    /* Reuse the bigger input's tables as the result and add the other's stacks to it by frame
     * ids (union_add_ids): only stacks the bigger one lacks are interned again. Hex stripping
     * rewrites every stack, so it builds a fresh profile from the text of both. */
    profile *r;
    if (o->strip_hex) {
        r = profile_new();
        if (!r || union_add_text(r, a, 0, 1, false, true, err) < 0 ||
            union_add_text(r, b, 1, 1, false, true, err) < 0) {
            if (!r)
                flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            profile_free(r);
            rc = -1;
            goto fail;
        }
        profile_free(a);
        profile_free(b);
    } else {
        bool base_a = a->nstacks >= b->nstacks;
        r = base_a ? a : b;
        profile *other = base_a ? b : a;
        union_two_columns(r, base_a ? 0 : 1);
        if (union_add_ids(r, other, base_a ? 1 : 0, 1, false, err) < 0) {
            rc = -1;
            goto fail; /* r is a or b: freed there */
        }
        profile_free(other);
    }
    a = b = NULL;

    diff *d = calloc(1, sizeof *d);
    if (!d) {
        profile_free(r);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    d->r = r;
    size_t n = r->nstacks ? r->nstacks : 1;
    d->a = malloc(n * sizeof *d->a);
    d->b = malloc(n * sizeof *d->b);
    if (!d->a || !d->b) {
        diff_free(d);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    for (uint32_t k = 0; k < r->nstacks; k++) {
        d->a[k] = r->stacks[k].before;
        d->b[k] = r->stacks[k].count;
    }
    d->ta = r->total_before;
    d->tb = r->total;
    d->norm = o->normalize == DIFF_NORM_ON || (o->normalize == DIFF_NORM_AUTO && d->ta != d->tb);
    *out = d;
    return 0;
fail:
    profile_free(a);
    profile_free(b);
    return rc;
}

void diff_free(diff *d)
{
    if (!d)
        return;
    profile_free(d->m);
    profile_free(d->r);
    free(d->a);
    free(d->b);
    free(d->mover_text);
    free(d);
}

double diff_total_before(const diff *d)
{
    return d->ta;
}

double diff_total_after(const diff *d)
{
    return d->tb;
}

bool diff_normalized(const diff *d)
{
    return d->norm;
}

const profile *diff_view(diff *d, bool mirror)
{
    if (mirror && !d->m && !(d->m = prof_counts_copy(d->r)))
        return NULL;
    profile *r = mirror ? d->m : d->r;
    const double *base = mirror ? d->b : d->a, *shown = mirror ? d->a : d->b;
    double tbase = mirror ? d->tb : d->ta, tshown = mirror ? d->ta : d->tb;
    double sum = 0;
    for (uint32_t k = 0; k < r->nstacks; k++) {
        /* difffolded.pl -n: int($count1 * $total2 / $total1), same order of operations */
        double c = d->norm ? floor(base[k] * tshown / tbase) : base[k];
        r->stacks[k].before = c;
        r->stacks[k].count = shown[k];
        sum += c;
    }
    r->total_before = sum;
    r->total = tshown;
    return r;
}

/* ---- folded output ----------------------------------------------------------------------------
 */

int diff_write_folded(const profile *p, FILE *out, flame_err *err)
{
    return prof_write_folded(p, PROF_ORDER_FRAMES, out, err);
}

/* ---- movers ---------------------------------------------------------------------------------- */

/* A mover: a row of the methods table and its change. */
typedef struct mover_ent {
    const methods_row *row;
    double sa, sb, delta;
} mover_ent;

static int cmp_mover(const void *x, const void *y)
{
    const mover_ent *a = x, *b = y;
    if (a->delta != b->delta)
        return a->delta > b->delta ? -1 : 1;
    int r = strcmp(a->row->name, b->row->name);
    if (r)
        return r;
    if (!a->row->host || !b->row->host) /* the method itself after its inlined copies */
        return !a->row->host - !b->row->host;
    return strcmp(a->row->host, b->row->host);
}

int diff_movers(diff *d, const diff_movers_opts *o, size_t n, diff_mover *grew, size_t *ngrew,
                diff_mover *shrank, size_t *nshrank, flame_err *err)
{
    *ngrew = *nshrank = 0;
    /* self share of each method (inlined code as "X (inlined into H)"), or its inclusive share;
     * raw counts (d->a, d->b), each over its own raw total: independent of normalisation */
    methods_opts mo = {.java_only = !o->all_frames,
                       .inlined_hosts = !o->inclusive,
                       .measure = o->inclusive ? METHODS_TOTAL : METHODS_SELF};
    methods *m = methods_new(&mo);
    if (!m)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (methods_add_columns(m, d->r, d->a, d->b, err) < 0) {
        methods_free(m);
        return -1;
    }
    size_t nrows, keep = 0;
    const methods_row *rows = methods_rows(m, &nrows);
    _cleanup_free_ mover_ent *e = malloc((nrows ? nrows : 1) * sizeof *e);
    if (!e) {
        methods_free(m);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    for (size_t i = 0; i < nrows; i++) {
        double sa = o->inclusive ? rows[i].total_before : rows[i].self_before;
        double sb = o->inclusive ? rows[i].total : rows[i].self;
        double delta = 100.0 * (sb / d->tb - sa / d->ta);
        /* a change that prints as 0.00 points (the same samples out of a slightly different
         * total) is not a mover */
        if (fabs(delta) >= MOVER_MIN_PTS)
            e[keep++] = (mover_ent){&rows[i], sa, sb, delta};
    }
    qsort(e, keep, sizeof *e, cmp_mover);
    /* names into one buffer owned by d: "method" or "method (inlined into host)" */
    size_t want = 0, pick[2] = {0, 0};
    for (size_t i = 0; i < keep && pick[0] < n && e[i].delta > 0; i++, pick[0]++)
        want += strlen(e[i].row->name) + (e[i].row->host ? strlen(e[i].row->host) + 20 : 0) + 1;
    for (size_t i = keep; i > 0 && pick[1] < n && e[i - 1].delta < 0; i--, pick[1]++)
        want += strlen(e[i - 1].row->name) +
                (e[i - 1].row->host ? strlen(e[i - 1].row->host) + 20 : 0) + 1;
    free(d->mover_text);
    d->mover_text = malloc(want + 1);
    if (!d->mover_text) {
        methods_free(m);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    char *t = d->mover_text;
    for (int side = 0; side < 2; side++) {
        for (size_t q = 0; q < pick[side]; q++) {
            const mover_ent *x = side == 0 ? &e[q] : &e[keep - 1 - q];
            diff_mover *out = side == 0 ? &grew[(*ngrew)++] : &shrank[(*nshrank)++];
            *out = (diff_mover){t, 100.0 * x->sa / d->ta, 100.0 * x->sb / d->tb, x->delta};
            t = stpcpy(t, x->row->name);
            if (x->row->host)
                t += sprintf(t, " (inlined into %s)", x->row->host);
            *t++ = '\0';
        }
    }
    methods_free(m);
    return 0;
}

double diff_smallest_count(const profile *p)
{
    double m = 0;
    for (uint32_t k = 0; k < p->nstacks; k++) {
        double c = p->stacks[k].count;
        if (c > 0 && (m == 0 || c < m))
            m = c;
    }
    return m;
}
