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
#include "flame/match.h"
#include "flame/methods.h"
#include "flame/profile_impl.h"
#include "flame/union.h"

struct diff {
    profile *r;     /* two columns; diff_view(d, false) rewrites its counts */
    profile *exact; /* the union as folded when r is it matched as read (movers need the marks),
                     * else NULL (r is exact) */
    size_t matched; /* stacks that became part of another, matched as read */
    profile *m;     /* r's stacks with counts of their own, for the mirror: made on first use */
    double *a, *b;  /* raw before/after count of each stack of r */
    double ta, tb;  /* raw totals */
    bool norm;
    bool samples;            /* both columns count samples */
    char *mover_text;        /* names of the last diff_movers() result */
    diff_mover *mover_hosts; /* and their hosts */
};

/* ---- diff ------------------------------------------------------------------------------------ */

/* The smallest non-zero count of a column. */
static double smallest(const double *c, uint32_t n)
{
    double m = 0;
    for (uint32_t k = 0; k < n; k++)
        if (c[k] > 0 && (m == 0 || c[k] < m))
            m = c[k];
    return m;
}

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
    /* stacks that differ only in JIT marks are one (the exact union stays for the movers) */
    profile *read = NULL;
    size_t merged = 0;
    if (!o->exact && match_as_read(r, &read, &merged, err) < 0) {
        profile_free(r);
        return -1;
    }

    diff *d = calloc(1, sizeof *d);
    if (!d) {
        profile_free(r);
        profile_free(read);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    d->r = read ? read : r;
    d->exact = read ? r : NULL;
    d->matched = merged;
    r = d->r;
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
    d->samples = smallest(d->a, r->nstacks) <= 100 && smallest(d->b, r->nstacks) <= 100;
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
    profile_free(d->exact);
    free(d->mover_hosts);
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

bool diff_counts_samples(const diff *d)
{
    return d->samples;
}

bool diff_matched(const diff *d, size_t *merged)
{
    *merged = d->matched;
    return d->exact != NULL;
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

/* A method (net: every row of its name) or one of its rows (a host), and its change. */
typedef struct mover_ent {
    const char *name, *host;
    double sa, sb, delta;
    size_t first, nrows; /* its rows in the sorted row order (net), or its own row */
    bool split;          /* net: some of its self time was inlined code (hosts to show) */
} mover_ent;

static int cmp_mover(const void *x, const void *y)
{
    const mover_ent *a = x, *b = y;
    if (a->delta != b->delta)
        return a->delta > b->delta ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Hosts: the largest change first, then by name (not inlined last). */
static int cmp_host(const void *x, const void *y)
{
    const mover_ent *a = x, *b = y;
    if (fabs(a->delta) != fabs(b->delta))
        return fabs(a->delta) > fabs(b->delta) ? -1 : 1;
    if (!a->host || !b->host)
        return !a->host - !b->host;
    return strcmp(a->host, b->host);
}

/* Rows by name, then host (no host first). Names and hosts are interned by the methods table:
 * equal names are one pointer, so grouping compares pointers, not bytes (the movers' output
 * order comes from cmp_mover and cmp_host, by bytes). */
static int cmp_row(const void *x, const void *y)
{
    const mover_ent *a = x, *b = y;
    if (a->name != b->name)
        return (uintptr_t)a->name < (uintptr_t)b->name ? -1 : 1;
    if (a->host == b->host)
        return 0;
    if (!a->host || !b->host)
        return a->host ? 1 : -1;
    return (uintptr_t)a->host < (uintptr_t)b->host ? -1 : 1;
}

/* Two standard errors of the change of a share from sa of ta samples to sb of tb, in points:
 * each sample lands in the method or not, so a share of n samples varies by sqrt(p (1 - p) / n)
 * (measured on the fixture JVM: the changes between two profiles of one unchanged JVM stay within
 * it, docs/DIFF.md "Noise"). */
static double noise(double sa, double ta, double sb, double tb)
{
    double pa = sa / ta, pb = sb / tb;
    return 200.0 * sqrt(pa * (1 - pa) / ta + pb * (1 - pb) / tb);
}

int diff_movers(diff *d, const diff_movers_opts *o, size_t n, diff_mover *grew, size_t *ngrew,
                diff_mover *shrank, size_t *nshrank, flame_err *err)
{
    bool samples = d->samples;
    *ngrew = *nshrank = 0;
    /* self share of each method (inlined code by host), or its inclusive share, counted on the
     * stacks as folded (the hosts need the marks: _[i] says what was inlined) with their raw
     * counts, each over its own raw total: independent of normalisation and of matching */
    methods_opts mo = {.java_only = !o->all_frames,
                       .inlined_hosts = !o->inclusive,
                       .measure = o->inclusive ? METHODS_TOTAL : METHODS_SELF};
    methods *m = methods_new(&mo);
    if (!m)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int rc =
        d->exact ? methods_add(m, d->exact, err) : methods_add_columns(m, d->r, d->a, d->b, err);
    if (rc < 0) {
        methods_free(m);
        return -1;
    }
    size_t nrows;
    const methods_row *rows = methods_rows(m, &nrows);
    _cleanup_free_ mover_ent *row = malloc((nrows ? nrows : 1) * sizeof *row);
    _cleanup_free_ mover_ent *net = malloc((nrows ? nrows : 1) * sizeof *net);
    if (!row || !net) {
        methods_free(m);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    for (size_t i = 0; i < nrows; i++) {
        double sa = o->inclusive ? rows[i].total_before : rows[i].self_before;
        double sb = o->inclusive ? rows[i].total : rows[i].self;
        row[i] = (mover_ent){
            rows[i].name, rows[i].host, sa, sb, 100.0 * (sb / d->tb - sa / d->ta), i, 1, false};
    }
    /* one net line per method: its rows are adjacent once sorted by name */
    qsort(row, nrows, sizeof *row, cmp_row);
    size_t nnet = 0;
    for (size_t i = 0; i < nrows;) {
        mover_ent e = {row[i].name, NULL, 0, 0, 0, i, 0, false};
        for (; i < nrows && row[i].name == e.name; i++, e.nrows++) {
            e.sa += row[i].sa;
            e.sb += row[i].sb;
            e.split |= row[i].host != NULL;
        }
        e.delta = 100.0 * (e.sb / d->tb - e.sa / d->ta);
        /* a change that prints as 0.00 points (the same samples out of a slightly different
         * total) is not a mover */
        if (fabs(e.delta) >= MOVER_MIN_PTS)
            net[nnet++] = e;
    }
    qsort(net, nnet, sizeof *net, cmp_mover);
    /* names (and hosts) into one buffer owned by d, details into one array */
    size_t want = 0, nhost = 0, pick[2] = {0, 0};
    for (int side = 0; side < 2; side++)
        for (size_t q = 0; q < nnet && pick[side] < n; q++) {
            const mover_ent *x = side == 0 ? &net[q] : &net[nnet - 1 - q];
            if (side == 0 ? x->delta <= 0 : x->delta >= 0)
                break;
            pick[side]++;
            want += strlen(x->name) + 1;
            for (size_t r = x->first; x->split && r < x->first + x->nrows; r++, nhost++)
                want += row[r].host ? strlen(row[r].host) + 1 : 0;
        }
    free(d->mover_text);
    free(d->mover_hosts);
    d->mover_text = malloc(want + 1);
    d->mover_hosts = malloc((nhost ? nhost : 1) * sizeof *d->mover_hosts);
    if (!d->mover_text || !d->mover_hosts) {
        methods_free(m);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    char *t = d->mover_text;
    diff_mover *h = d->mover_hosts;
    for (int side = 0; side < 2; side++) {
        for (size_t q = 0; q < pick[side]; q++) {
            const mover_ent *x = side == 0 ? &net[q] : &net[nnet - 1 - q];
            diff_mover *out = side == 0 ? &grew[(*ngrew)++] : &shrank[(*nshrank)++];
            *out = (diff_mover){t,
                                100.0 * x->sa / d->ta,
                                100.0 * x->sb / d->tb,
                                x->delta,
                                samples ? noise(x->sa, d->ta, x->sb, d->tb) : NAN,
                                h,
                                0};
            t = stpcpy(t, x->name) + 1;
            if (!x->split)
                continue;
            qsort(row + x->first, x->nrows, sizeof *row, cmp_host);
            for (size_t r = x->first; r < x->first + x->nrows; r++) {
                const mover_ent *y = &row[r];
                h[out->nhosts++] = (diff_mover){y->host ? t : NULL,
                                                100.0 * y->sa / d->ta,
                                                100.0 * y->sb / d->tb,
                                                y->delta,
                                                samples ? noise(y->sa, d->ta, y->sb, d->tb) : NAN,
                                                NULL,
                                                0};
                if (y->host)
                    t = stpcpy(t, y->host) + 1;
            }
            h += out->nhosts;
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

/* ---- merge ---------------------------------------------------------------------------------- */

int diff_merge(profile **in, size_t n, bool normalize, bool exact, profile **out, flame_err *err)
{
    *out = NULL;
    int rc = 0;
    double tmax = 0;
    size_t base = 0;
    for (size_t i = 0; i < n; i++) {
        if (profile_is_diff(in[i])) {
            rc = flame_fail(err, FLAME_EXIT_ERROR,
                            "input %zu is a differential profile (two count columns); merge "
                            "plain profiles",
                            i + 1);
            goto done;
        }
        if (profile_stacks(in[i]) == 0 || profile_total(in[i]) <= 0) {
            rc = flame_fail(err, FLAME_EXIT_ERROR, "input %zu is empty (no samples)", i + 1);
            goto done;
        }
        if (profile_total(in[i]) > tmax)
            tmax = profile_total(in[i]);
        if (in[i]->nstacks > in[base]->nstacks)
            base = i;
    }
    if (n == 0) {
        rc = flame_fail(err, FLAME_EXIT_USAGE, "nothing to merge");
        goto done;
    }
    /* the input with the most stacks becomes the sum: only the others are interned again */
    profile *r = in[base];
    if (normalize && r->total != tmax) {
        double f = tmax / r->total, sum = 0;
        for (uint32_t k = 0; k < r->nstacks; k++) {
            r->stacks[k].count = floor(r->stacks[k].count * f + 0.5);
            sum += r->stacks[k].count;
        }
        r->total = sum;
    }
    r->keep_order = false; /* input order means nothing for a sum of profiles */
    r->nseq = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == base)
            continue;
        double f = normalize ? tmax / in[i]->total : 1;
        if (union_add_ids(r, in[i], -1, f, normalize, err) < 0) {
            rc = -1;
            goto done;
        }
        profile_free(in[i]);
        in[i] = NULL;
    }
    in[base] = NULL;
    profile *read = NULL;
    size_t merged;
    if (!exact && match_as_read(r, &read, &merged, err) < 0) {
        profile_free(r);
        rc = -1;
        goto done;
    }
    if (read) {
        profile_free(r);
        r = read;
    }
    *out = r;
done:
    for (size_t i = 0; i < n; i++) {
        profile_free(in[i]);
        in[i] = NULL;
    }
    return rc;
}
