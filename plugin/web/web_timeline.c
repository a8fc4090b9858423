/* The serve page's timeline: buckets and marks from the stored windows
 * (plugin/web/web_timeline.h). */
#include "plugin/web/web_timeline.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int64_t web_timeline_step(int64_t span_ms, size_t max_buckets)
{
    static const int64_t nice[] = {
        10000,   20000,   30000,    60000,    120000,   300000,   600000,    900000,    1800000,
        3600000, 7200000, 10800000, 21600000, 43200000, 86400000, 172800000, 604800000,
    };
    if (max_buckets == 0)
        max_buckets = 1;
    for (size_t i = 0; i < sizeof nice / sizeof *nice; i++)
        if (span_ms <= nice[i] * (int64_t)max_buckets)
            return nice[i];
    /* beyond a week a bucket: whole weeks */
    int64_t w = nice[sizeof nice / sizeof *nice - 1];
    return (span_ms / (int64_t)max_buckets + w) / w * w;
}

static bool add_mark(web_tl *t, size_t *cap, web_mark m)
{
    if (t->nmarks == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        web_mark *p = realloc(t->marks, nc * sizeof *p);
        if (!p)
            return false;
        t->marks = p;
        *cap = nc;
    }
    t->marks[t->nmarks++] = m;
    return true;
}

/* Share a window's samples between the buckets it overlaps, by the time it spends in each. */
static void spread(web_tl *t, web_tl_series *ts, const store_point *pt)
{
    int64_t a = pt->start_ms > t->from_ms ? pt->start_ms : t->from_ms;
    int64_t b = pt->end_ms < t->to_ms ? pt->end_ms : t->to_ms;
    int64_t len = pt->end_ms - pt->start_ms;
    if (b <= a || len <= 0)
        return;
    for (int64_t i = (a - t->from_ms) / t->step_ms; i < (int64_t)t->nb; i++) {
        int64_t lo = t->from_ms + i * t->step_ms, hi = lo + t->step_ms;
        if (lo >= b)
            break;
        int64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
        if (y <= x)
            continue;
        /* a point of several windows covers their lengths, not the ms of pauses between them */
        ts->covered[i] += (double)(y - x) * (double)store_point_covered(pt) / (double)len;
        double share = (double)pt->samples * (double)(y - x) / (double)len;
        ts->samples[i] += share;
        /* a sample stands for 1/frequency s of one CPU: the bucket's CPU seconds over its
         * length are the cores it held on average; a value in ns (wall, off-CPU) is a thread's
         * time itself: ns per ns of the bucket are the threads it kept running or waiting */
        if (t->scale > 0)
            ts->cores[i] += share * t->scale / ((double)t->step_ms / 1000.0);
        else if (pt->frequency > 0)
            ts->cores[i] += share / (double)pt->frequency / ((double)t->step_ms / 1000.0);
    }
}

static bool same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* The series' own marks: gaps between its windows, runs of compacted windows. */
static bool series_marks(web_tl *t, size_t *cap, size_t k)
{
    const store_series *s = t->series[k].s;
    int64_t run_from = 0, run_to = 0, run_bucket = 0;
    for (size_t i = 0; i < s->n; i++) {
        const store_point *p = &s->pts[i];
        /* a merged point holds windows of at most WEB_COMPACTED_MS, whatever its span */
        int64_t len = p->windows > 1 ? 0 : p->end_ms - p->start_ms;
        if (i > 0) {
            const store_point *q = &s->pts[i - 1];
            /* the window before: a merged point's last */
            int64_t pause = p->start_ms - q->end_ms, half = store_point_last(q) / 2;
            if (pause > WEB_GAP_MIN_MS && pause > half && q->end_ms < t->to_ms &&
                p->start_ms > t->from_ms &&
                !add_mark(t, cap,
                          (web_mark){.kind = WEB_MARK_GAP,
                                     .from_ms = q->end_ms,
                                     .to_ms = p->start_ms,
                                     .series = k}))
                return false;
        }
        bool compacted = len > WEB_COMPACTED_MS;
        if (compacted && run_bucket == len && p->start_ms - run_to <= WEB_GAP_MIN_MS) {
            run_to = p->end_ms;
            continue;
        }
        if (run_bucket && !add_mark(t, cap,
                                    (web_mark){.kind = WEB_MARK_COMPACTED,
                                               .from_ms = run_from,
                                               .to_ms = run_to,
                                               .series = k,
                                               .bucket_ms = run_bucket}))
            return false;
        run_bucket = compacted ? len : 0;
        run_from = p->start_ms;
        run_to = p->end_ms;
    }
    if (run_bucket && !add_mark(t, cap,
                                (web_mark){.kind = WEB_MARK_COMPACTED,
                                           .from_ms = run_from,
                                           .to_ms = run_to,
                                           .series = k,
                                           .bucket_ms = run_bucket}))
        return false;
    return true;
}

/* A series that starts after another of the same container ended: its JVM restarted (same
 * container id, new pid) or its container was recreated (same name, new id). The latest such
 * predecessor is named. */
static bool lifecycle_marks(web_tl *t, size_t *cap)
{
    for (size_t k = 0; k < t->n; k++) {
        const store_series *s = t->series[k].s;
        if (!s->n || s->pts[0].start_ms <= t->from_ms)
            continue;
        int64_t start = s->pts[0].start_ms, best_end = INT64_MIN;
        size_t best = 0;
        enum web_mark_kind kind = WEB_MARK_RESTART;
        for (size_t j = 0; j < t->n; j++) {
            const store_series *o = t->series[j].s;
            if (j == k || !o->n || !same(o->host, s->host))
                continue;
            int64_t end = o->pts[o->n - 1].end_ms;
            if (o->pts[0].start_ms >= start || end > start + WEB_GAP_MIN_MS || end <= best_end)
                continue;
            if (same(o->container_id, s->container_id) && o->jvm_pid != s->jvm_pid)
                kind = WEB_MARK_RESTART;
            else if (!same(o->container_id, s->container_id) &&
                     same(o->container_name, s->container_name))
                kind = WEB_MARK_RECREATED;
            else
                continue;
            best_end = end;
            best = j;
        }
        if (best_end != INT64_MIN &&
            !add_mark(
                t, cap,
                (web_mark){
                    .kind = kind, .from_ms = start, .to_ms = start, .series = k, .other = best}))
            return false;
    }
    return true;
}

int web_timeline_build(const store_series_list *l, int64_t from_ms, int64_t to_ms,
                       size_t max_buckets, double scale, web_tl *t)
{
    memset(t, 0, sizeof *t);
    t->scale = scale;
    if (to_ms <= from_ms)
        to_ms = from_ms + 1;
    t->step_ms = web_timeline_step(to_ms - from_ms, max_buckets);
    /* buckets aligned on the step (local midnight is not known here: UTC multiples) */
    t->from_ms = from_ms - ((from_ms % t->step_ms) + t->step_ms) % t->step_ms;
    t->nb = (size_t)((to_ms - t->from_ms + t->step_ms - 1) / t->step_ms);
    t->to_ms = t->from_ms + (int64_t)t->nb * t->step_ms;
    t->series = calloc(l->n ? l->n : 1, sizeof *t->series);
    if (!t->series)
        return -1;
    t->n = l->n;
    size_t cap = 0;
    for (size_t k = 0; k < l->n; k++) {
        web_tl_series *ts = &t->series[k];
        ts->s = &l->series[k];
        ts->samples = calloc(t->nb, sizeof *ts->samples);
        ts->covered = calloc(t->nb, sizeof *ts->covered);
        ts->cores = calloc(t->nb, sizeof *ts->cores);
        if (!ts->samples || !ts->covered || !ts->cores)
            goto fail;
        for (size_t i = 0; i < ts->s->n; i++)
            spread(t, ts, &ts->s->pts[i]);
        if (!series_marks(t, &cap, k))
            goto fail;
    }
    if (!lifecycle_marks(t, &cap))
        goto fail;
    return 0;
fail:
    web_timeline_free(t);
    return -1;
}

void web_timeline_free(web_tl *t)
{
    for (size_t k = 0; t->series && k < t->n; k++) {
        free(t->series[k].samples);
        free(t->series[k].covered);
        free(t->series[k].cores);
    }
    free(t->series);
    free(t->marks);
    memset(t, 0, sizeof *t);
}
