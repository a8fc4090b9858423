/* Adding one profile to another: by frame ids through the base profile's own tables (what
 * makes a million-stack diff or merge fast), or, when hex stripping rewrites every stack, as
 * text. The union of diff and the sum of merge (both in flame/diff.c). */
#include "flame/union.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/frame.h"
#include "flame/profile_impl.h"

/* ---- stacks as text ------------------------------------------------------------------------ */

typedef struct textbuf {
    char *s, *tmp;
    size_t cap, tmp_cap;
} textbuf;

static void textbuf_free(textbuf *t)
{
    free(t->s);
    free(t->tmp);
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
    if (!GROW(t->s, t->cap, n + 1))
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
    if (!GROW(t->tmp, t->tmp_cap, 2 * *len + 1))
        return NULL;
    *len = frame_strip_hex(t->s, *len, t->tmp);
    return t->tmp;
}

/* Add every stack of src to dst, counts multiplied by factor (rounded when round is set),
 * into the before (column 0), after (column 1) or only (column -1) column. */
int union_add_text(profile *dst, const profile *src, int column, double factor, bool round,
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

/* Work for one thread of union_add_ids(): look up src stacks [from, to) in dst. Each src stack maps
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
int union_add_ids(profile *dst, const profile *src, int column, double factor, bool round,
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
void union_two_columns(profile *p, int column)
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
