/* Differential profiles with difffolded.pl's semantics (union of stacks, -n, -s), the movers
 * summary, and merging. Works on the profile's interned layout (flame/profile_impl.h) so a
 * million-stack diff reuses the larger input's tables instead of re-parsing both. */
#include "flame/diff.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/profile_impl.h"

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

typedef struct textbuf {
    char *s, *tmp;
    size_t cap, tmp_cap;
} textbuf;

static void textbuf_free(textbuf *t)
{
    free(t->s);
    free(t->tmp);
}

static bool reserve(char **s, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    char *q = realloc(*s, n);
    if (!q)
        return false;
    *s = q;
    *cap = n;
    return true;
}

/* Stack k of p as "a;b;c" (hex-stripped when asked): a pointer into t, its length in *len.
 * NULL on OOM. */
static const char *stack_text(const profile *p, uint32_t k, bool strip, textbuf *t, size_t *len)
{
    const prof_stack *st = &p->stacks[k];
    const uint32_t *ids = p->ids + st->off;
    size_t n = 0;
    for (uint32_t i = 0; i < st->depth; i++)
        n += p->names[ids[i]].len + 1;
    if (!reserve(&t->s, &t->cap, n + 1))
        return NULL;
    char *o = t->s;
    for (uint32_t i = 0; i < st->depth; i++) {
        if (i)
            *o++ = ';';
        memcpy(o, prof_name_str(p, ids[i]), p->names[ids[i]].len);
        o += p->names[ids[i]].len;
    }
    *o = '\0';
    *len = (size_t)(o - t->s);
    if (!strip)
        return t->s;
    if (!reserve(&t->tmp, &t->tmp_cap, 2 * *len + 1))
        return NULL;
    *len = diff_strip_hex(t->s, *len, t->tmp);
    return t->tmp;
}

/* Add every stack of src to dst, counts multiplied by factor (rounded when round is set),
 * into the before (column 0), after (column 1) or only (column -1) column. */
static int add_all(profile *dst, const profile *src, int column, double factor, bool round,
                   bool strip, flame_err *err)
{
    textbuf t = {0};
    int rc = 0;
    for (uint32_t k = 0; k < src->nstacks; k++) {
        size_t len;
        const char *s = stack_text(src, k, strip, &t, &len);
        double c = src->stacks[k].count * factor;
        if (round)
            c = floor(c + 0.5);
        if (!s || profile_add(dst, s, len,
                              column == 0   ? c
                              : column == 1 ? 0
                                            : c,
                              column == 0   ? 0
                              : column == 1 ? c
                                            : PROFILE_ONE_COLUMN) < 0) {
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            break;
        }
    }
    textbuf_free(&t);
    return rc;
}

/* ---- adding one profile to another by frame ids ------------------------------------------- */

/* Our own name hash (profile.c's is private): only for the movers' method table below. */
static uint64_t hash_name(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

static size_t table_size(size_t n)
{
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

/* Work for one thread of add_into(): look up src stacks [from, to) in dst. Each src stack maps
 * to a distinct dst stack (the name map is one-to-one), so the threads never update the same
 * counts; totals are summed per thread and misses listed for later. */
typedef struct union_job {
    profile *dst;
    const profile *src;
    const uint32_t *map;
    uint32_t from, to;
    int column;
    double factor;
    bool round;
    double added;
    uint32_t *miss;
    size_t nmiss;
    bool oom;
} union_job;

static double scaled(const union_job *j, double c)
{
    c *= j->factor;
    return j->round ? floor(c + 0.5) : c;
}

/* src stack k in dst's name ids into seq (room for its depth); false if a name is not in dst. */
static bool map_stack(const union_job *j, uint32_t k, uint32_t *seq)
{
    const prof_stack *st = &j->src->stacks[k];
    const uint32_t *ids = j->src->ids + st->off;
    for (uint32_t i = 0; i < st->depth; i++)
        if ((seq[i] = j->map[ids[i]]) == UINT32_MAX)
            return false;
    return true;
}

static void *union_lookup(void *ud)
{
    union_job *j = ud;
    const profile *src = j->src;
    profile *dst = j->dst;
    uint32_t maxdepth = 1;
    for (uint32_t k = j->from; k < j->to; k++)
        if (src->stacks[k].depth > maxdepth)
            maxdepth = src->stacks[k].depth;
    /* stacks go to dst's table in batches, whose memory is fetched in parallel (dst's tables are
     * far bigger than the caches: each lookup would otherwise wait for three misses in turn) */
    _cleanup_free_ uint32_t *seq = malloc((size_t)PROF_FIND_BATCH * maxdepth * sizeof *seq);
    j->miss = malloc(((size_t)(j->to - j->from) + 1) * sizeof *j->miss);
    if (!seq || !j->miss) {
        j->oom = true;
        return NULL;
    }
    const uint32_t *ids[PROF_FIND_BATCH];
    uint32_t n[PROF_FIND_BATCH], k_of[PROF_FIND_BATCH], hit[PROF_FIND_BATCH];
    uint64_t h[PROF_FIND_BATCH];
    for (uint32_t k = j->from; k < j->to;) {
        size_t count = 0;
        for (; k < j->to && count < PROF_FIND_BATCH; k++, count++) {
            uint32_t *buf = seq + count * maxdepth;
            ids[count] = buf;
            k_of[count] = k;
            /* a name dst lacks: dst lacks the stack (n = 0: not looked up) */
            n[count] = map_stack(j, k, buf) ? src->stacks[k].depth : 0;
            h[count] = n[count] ? prof_ids_hash(dst, buf, n[count]) : 0;
        }
        prof_stack_find_many(dst, count, ids, n, h, hit);
        for (size_t i = 0; i < count; i++) {
            if (hit[i] == UINT32_MAX) {
                j->miss[j->nmiss++] = k_of[i];
                continue;
            }
            double c = scaled(j, src->stacks[k_of[i]].count);
            if (j->column == 0)
                dst->stacks[hit[i]].before += c;
            else
                dst->stacks[hit[i]].count += c;
            j->added += c;
        }
    }
    return NULL;
}

/* Add every stack of src to dst: counts times factor (rounded when asked) into column 0
 * (before), 1 (after) or -1 (the only column). A stack that dst already has is found through
 * dst's own stack table by frame ids (no text, no re-interning: this is what makes a
 * million-stack diff fast), by two threads at once; only the stacks dst lacks are added,
 * afterwards and on one thread, still by ids (their new names interned into dst). */
static int add_into(profile *dst, const profile *src, int column, double factor, bool round,
                    flame_err *err)
{
    _cleanup_free_ uint32_t *map = malloc((src->nnames ? src->nnames : 1) * sizeof *map);
    _cleanup_free_ uint32_t *seq = NULL;
    if (!map)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* src name id -> dst name id, UINT32_MAX when dst does not have the name (yet) */
    for (uint32_t id = 0; id < src->nnames; id++)
        map[id] = prof_name_find(dst, prof_name_str(src, id), src->names[id].len);
    union_job jobs[2];
    for (int i = 0; i < 2; i++)
        jobs[i] = (union_job){
            .dst = dst, .src = src, .map = map, .column = column, .factor = factor, .round = round};
    jobs[0].to = jobs[1].from = src->nstacks / 2;
    jobs[1].to = src->nstacks;
    pthread_t t;
    bool threaded = src->nstacks > 50000 && pthread_create(&t, NULL, union_lookup, &jobs[1]) == 0;
    union_lookup(&jobs[0]);
    if (threaded)
        pthread_join(t, NULL);
    else
        union_lookup(&jobs[1]);

    int rc = 0;
    size_t seq_cap = 0;
    for (int i = 0; i < 2; i++) {
        if (jobs[i].oom && rc == 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        if (column == 0)
            dst->total_before += jobs[i].added;
        else
            dst->total += jobs[i].added;
        for (size_t m = 0; m < jobs[i].nmiss && rc == 0; m++) {
            const prof_stack *st = &src->stacks[jobs[i].miss[m]];
            if (st->depth > seq_cap) {
                free(seq);
                seq_cap = st->depth;
                if (!(seq = malloc(seq_cap * sizeof *seq))) {
                    rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                    break;
                }
            }
            for (uint32_t f = 0; f < st->depth && rc == 0; f++) {
                uint32_t id = src->ids[st->off + f];
                if (map[id] == UINT32_MAX &&
                    (map[id] = prof_name_intern(dst, prof_name_str(src, id), src->names[id].len)) ==
                        UINT32_MAX)
                    rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                seq[f] = map[id];
            }
            double c = scaled(&jobs[i], st->count);
            if (rc == 0 &&
                prof_stack_add(dst, seq, st->depth, column == 0 ? 0 : c, column == 0 ? c : 0) < 0)
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
        free(jobs[i].miss);
    }
    return rc;
}

/* Turn a one-column profile into a two-column one in place, its counts in column `column`. */
static void make_two_columns(profile *p, int column)
{
    for (uint32_t k = 0; k < p->nstacks; k++) {
        prof_stack *st = &p->stacks[k];
        if (column == 0) {
            st->before = st->count;
            st->count = 0;
        } else {
            st->before = 0;
        }
    }
    if (column == 0) {
        p->total_before = p->total;
        p->total = 0;
    } else {
        p->total_before = 0;
    }
    p->columns = 2;
    /* input order (flame charts) means nothing for a union of two profiles */
    p->keep_order = false;
    p->nseq = 0;
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
     * ids (add_into): only stacks the bigger one lacks are interned again. Hex stripping
     * rewrites every stack, so it builds a fresh profile from the text of both. */
    profile *r;
    if (o->strip_hex) {
        r = profile_new();
        if (!r || add_all(r, a, 0, 1, false, true, err) < 0 ||
            add_all(r, b, 1, 1, false, true, err) < 0) {
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
        make_two_columns(r, base_a ? 0 : 1);
        if (add_into(r, other, base_a ? 1 : 0, 1, false, err) < 0) {
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

/* ---- folded output ------------------------------------------------------------------------ */

int diff_write_folded(const profile *p, FILE *out, flame_err *err)
{
    return prof_write_folded(p, PROF_ORDER_FRAMES, out, err);
}

/* ---- movers ---------------------------------------------------------------------------------- */

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

/* A frame that looks like a Java method: JIT/inline-annotated, a slashed class path, or an
 * identifier '.' identifier (Cls.method) that is neither kernel, C++ (Foo::bar), a [dso]
 * placeholder nor a stripped address (0x...). */
static bool looks_java(const char *s, size_t n)
{
    if (ends_with(s, n, "_[j]") || ends_with(s, n, "_[i]"))
        return true;
    if (ends_with(s, n, "_[k]") || n == 0 || s[0] == '[')
        return false;
    if (memmem(s, n, "::", 2) && !memmem(s, n, ":::", 3) && !memchr(s, '/', n))
        return false;
    if (memchr(s, '/', n))
        return true;
    /* GCC clones of C functions (foo.isra.0, bar.constprop.1, baz.part.2, qux.cold) */
    if (memmem(s, n, ".isra", 5) || memmem(s, n, ".constprop", 10) || memmem(s, n, ".part.", 6) ||
        ends_with(s, n, ".cold"))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (s[i] == '.' && ident_char(s[i - 1]) && ident_char(s[i + 1]) &&
            !(s[i + 1] >= '0' && s[i + 1] <= '9'))
            return true;
    return false;
}

/* The annotation suffixes folding adds (JIT, inlined, kernel, waker): a method's interpreted,
 * compiled and inlined frames are one method to a reader. */
static size_t strip_annotation(const char *s, size_t n)
{
    if (n > 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' && strchr("jikw", s[n - 2]))
        return n - 4;
    return n;
}

/* One line of the summary: a method (group of names equal without annotation), and for self
 * time of inlined code, the compiled method it was inlined into (UINT32_MAX: none). */
typedef struct mover_ent {
    uint32_t g, host;
    double sa, sb, delta;
} mover_ent;

typedef struct mover_ctx {
    const char *const *gname;
    const uint32_t *glen;
} mover_ctx;

static int cmp_mover(const void *x, const void *y, void *ctx)
{
    const mover_ctx *c = ctx;
    const mover_ent *a = x, *b = y;
    if (a->delta != b->delta)
        return a->delta > b->delta ? -1 : 1;
    uint32_t n = c->glen[a->g] < c->glen[b->g] ? c->glen[a->g] : c->glen[b->g];
    int r = memcmp(c->gname[a->g], c->gname[b->g], n);
    if (r || c->glen[a->g] != c->glen[b->g])
        return r ? r : c->glen[a->g] < c->glen[b->g] ? -1 : 1;
    return a->host < b->host ? -1 : a->host > b->host;
}

static bool is_inlined(const profile *r, uint32_t id)
{
    const char *s = prof_name_str(r, id);
    uint32_t n = r->names[id].len;
    return n > 4 && memcmp(s + n - 4, "_[i]", 4) == 0;
}

int diff_movers(diff *d, const diff_movers_opts *o, size_t n, diff_mover *grew, size_t *ngrew,
                diff_mover *shrank, size_t *nshrank, flame_err *err)
{
    const profile *r = d->r;
    *ngrew = *nshrank = 0;
    size_t nn = r->nnames ? r->nnames : 1;
    /* 1. groups: names equal once the annotation suffix is dropped */
    size_t gmask = table_size(nn) - 1;
    _cleanup_free_ uint32_t *gtab = calloc(gmask + 1, sizeof *gtab);
    _cleanup_free_ uint32_t *grp = malloc(nn * sizeof *grp);
    _cleanup_free_ const char **gname = malloc(nn * sizeof *gname);
    _cleanup_free_ uint32_t *glen = malloc(nn * sizeof *glen);
    _cleanup_free_ bool *gjava = calloc(nn, sizeof *gjava);
    _cleanup_free_ uint32_t *seen = calloc(nn, sizeof *seen);
    if (!gtab || !grp || !gname || !glen || !gjava || !seen)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    uint32_t ng = 0;
    for (uint32_t id = 0; id < r->nnames; id++) {
        const char *nm = prof_name_str(r, id);
        size_t len = strip_annotation(nm, r->names[id].len);
        size_t j = hash_name(nm, len) & gmask;
        for (; gtab[j]; j = (j + 1) & gmask) {
            uint32_t g = gtab[j] - 1;
            if (glen[g] == len && memcmp(gname[g], nm, len) == 0)
                break;
        }
        if (!gtab[j]) {
            gname[ng] = nm;
            glen[ng] = (uint32_t)len;
            gtab[j] = ++ng;
        }
        grp[id] = gtab[j] - 1;
        if (looks_java(nm, r->names[id].len))
            gjava[grp[id]] = true;
    }
    /* 2. sum each (method, host) entry: self = leaf frames, inclusive = every frame once per
     * stack (so recursion is not counted twice) */
    size_t emask = table_size(o->inclusive ? ng : r->nstacks + 1) - 1;
    _cleanup_free_ uint32_t *etab = flame_zalloc((emask + 1) * sizeof *etab);
    _cleanup_free_ mover_ent *e = malloc((emask + 1) / 2 * sizeof *e);
    if (!etab || !e)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t m = 0;
#define ENTRY(G, HOST)                                                                             \
    ({                                                                                             \
        uint32_t g_ = (G), h_ = (HOST);                                                            \
        size_t j_ = (size_t)((g_ * 0x9e3779b97f4a7c15ULL) ^ (h_ * 0xc2b2ae3d27d4eb4fULL)) >> 7;    \
        for (j_ &= emask; etab[j_] && (e[etab[j_] - 1].g != g_ || e[etab[j_] - 1].host != h_);     \
             j_ = (j_ + 1) & emask)                                                                \
            ;                                                                                      \
        if (!etab[j_]) {                                                                           \
            e[m] = (mover_ent){.g = g_, .host = h_};                                               \
            etab[j_] = (uint32_t)++m;                                                              \
        }                                                                                          \
        &e[etab[j_] - 1];                                                                          \
    })
    for (uint32_t k = 0; k < r->nstacks; k++) {
        const prof_stack *st = &r->stacks[k];
        const uint32_t *ids = r->ids + st->off;
        if (!o->inclusive) {
            uint32_t leaf = ids[st->depth - 1], host = UINT32_MAX;
            /* inlined code runs inside the nearest caller that is not itself inlined */
            if (is_inlined(r, leaf)) {
                for (uint32_t i = st->depth - 1; i-- > 0;)
                    if (!is_inlined(r, ids[i])) {
                        host = grp[ids[i]];
                        break;
                    }
            }
            mover_ent *x = ENTRY(grp[leaf], host);
            x->sa += d->a[k];
            x->sb += d->b[k];
            continue;
        }
        for (uint32_t i = 0; i < st->depth; i++) {
            uint32_t g = grp[ids[i]];
            if (seen[g] == k + 1)
                continue;
            seen[g] = k + 1;
            mover_ent *x = ENTRY(g, UINT32_MAX);
            x->sa += d->a[k];
            x->sb += d->b[k];
        }
    }
#undef ENTRY
    /* 3. shares (each side over its own raw total: independent of normalisation), sorted */
    size_t keep = 0;
    for (size_t i = 0; i < m; i++) {
        if (!o->all_frames && !gjava[e[i].g])
            continue;
        e[i].delta = 100.0 * (e[i].sb / d->tb - e[i].sa / d->ta);
        /* a change that prints as 0.00 points (the same samples out of a slightly different
         * total) is not a mover */
        if (fabs(e[i].delta) >= MOVER_MIN_PTS)
            e[keep++] = e[i];
    }
    mover_ctx c = {gname, glen};
    qsort_r(e, keep, sizeof *e, cmp_mover, &c);
    /* 4. names into one buffer owned by d: "method" or "method (inlined into host)" */
    size_t want = 0, pick[2] = {0, 0};
    for (size_t i = 0; i < keep && pick[0] < n && e[i].delta > 0; i++, pick[0]++)
        want += glen[e[i].g] + (e[i].host != UINT32_MAX ? glen[e[i].host] + 20 : 0) + 1;
    for (size_t i = keep; i > 0 && pick[1] < n && e[i - 1].delta < 0; i--, pick[1]++)
        want += glen[e[i - 1].g] + (e[i - 1].host != UINT32_MAX ? glen[e[i - 1].host] + 20 : 0) + 1;
    free(d->mover_text);
    d->mover_text = malloc(want + 1);
    if (!d->mover_text)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    char *t = d->mover_text;
    for (int side = 0; side < 2; side++) {
        for (size_t q = 0; q < pick[side]; q++) {
            const mover_ent *x = side == 0 ? &e[q] : &e[keep - 1 - q];
            diff_mover *out = side == 0 ? &grew[(*ngrew)++] : &shrank[(*nshrank)++];
            *out = (diff_mover){t, 100.0 * x->sa / d->ta, 100.0 * x->sb / d->tb, x->delta};
            memcpy(t, gname[x->g], glen[x->g]);
            t += glen[x->g];
            if (x->host != UINT32_MAX)
                t += sprintf(t, " (inlined into %.*s)", (int)glen[x->host], gname[x->host]);
            *t++ = '\0';
        }
    }
    return 0;
}

enum { NAME_COLS_MAX = 70 };

/* Frame names come from the profiled container: never send control bytes to a terminal. Long
 * names keep their end (the method name) and lose their start. */
static void print_name(FILE *out, const char *s, int width)
{
    size_t n = strlen(s);
    int shown = 0;
    if (n > (size_t)width) {
        fputs("...", out);
        s += n - (size_t)(width - 3);
        while ((*s & 0xc0) == 0x80) /* do not start inside a UTF-8 sequence */
            s++;
        shown = 3;
    }
    for (; *s; s++, shown++)
        putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
    for (; shown < width; shown++)
        putc(' ', out);
}

static void print_table(FILE *out, const char *head, const diff_mover *m, size_t n, int w)
{
    fprintf(out, "  %s\n", head);
    if (n == 0) {
        fputs("    (none)\n", out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        fputs("    ", out);
        print_name(out, m[i].name, w);
        fprintf(out, "  %7.2f%%  %7.2f%%  %+8.2f\n", m[i].before_pct, m[i].after_pct,
                m[i].delta_pts);
    }
}

int diff_print_movers(diff *d, const diff_movers_opts *o, size_t n, FILE *out, flame_err *err)
{
    _cleanup_free_ diff_mover *g = calloc(n ? n : 1, sizeof *g);
    _cleanup_free_ diff_mover *s = calloc(n ? n : 1, sizeof *s);
    size_t ng, ns;
    if (!g || !s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (diff_movers(d, o, n, g, &ng, s, &ns, err) < 0)
        return -1;
    int w = 24;
    for (size_t i = 0; i < ng + ns; i++) {
        size_t l = strlen(i < ng ? g[i].name : s[i - ng].name);
        if (l > (size_t)w)
            w = l > NAME_COLS_MAX ? NAME_COLS_MAX : (int)l;
    }
    fprintf(out, "%s share of %s (%% of each profile's samples):\n",
            o->inclusive ? "Inclusive (total)" : "Self",
            o->all_frames ? "all frames" : "Java methods");
    fprintf(out, "    %-*s  %8s  %8s  %8s\n", w, "", "before", "after", "pts");
    print_table(out, "grew most:", g, ng, w);
    print_table(out, "shrank most:", s, ns, w);
    if (fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write summary");
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

/* ---- merge ------------------------------------------------------------------------------------
 */

int diff_merge(profile **in, size_t n, bool normalize, profile **out, flame_err *err)
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
        if (add_into(r, in[i], -1, f, normalize, err) < 0) {
            rc = -1;
            goto done;
        }
        profile_free(in[i]);
        in[i] = NULL;
    }
    in[base] = NULL;
    *out = r;
done:
    for (size_t i = 0; i < n; i++) {
        profile_free(in[i]);
        in[i] = NULL;
    }
    return rc;
}
