/* The timeline of `docker flame serve`: the store's windows (store_timeline) as a few hundred
 * points a series, and what happened along them, found from the windows alone: a gap (nothing
 * recorded), windows compacted into longer buckets, a JVM restarted (a new pid in the same
 * container) and a container recreated (a new id under the same name). Pure. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

enum web_mark_kind {
    WEB_MARK_GAP,       /* from..to: no window of this series (not recording) */
    WEB_MARK_COMPACTED, /* from..to: this series' windows are bucket_ms long (store_compact) */
    WEB_MARK_RESTART,   /* from: a new JVM (series) in the same container as `other` */
    WEB_MARK_RECREATED, /* from: a new container (series) with the name of `other`'s */
};

typedef struct web_mark {
    enum web_mark_kind kind;
    int64_t from_ms, to_ms;
    size_t series, other; /* indexes into the series; other: RESTART, RECREATED */
    int64_t bucket_ms;    /* COMPACTED */
} web_mark;

typedef struct web_tl_series {
    const store_series *s;
    double *samples; /* per bucket: the samples of the windows in it (a window over several
                      * buckets shares its samples by overlap) */
    double *covered; /* per bucket: the ms windows covered; 0 = nothing recorded */
    double *cores;   /* per bucket: the CPUs the JVM held on average (samples / frequency over
                      * the bucket's length; windows without a frequency count nothing); with
                      * a scale (web_timeline_build): the values times it per second of the
                      * bucket (wall, off-CPU in ns, scale 1e-9: threads) */
} web_tl_series;

typedef struct web_tl {
    int64_t from_ms, to_ms, step_ms;
    size_t nb; /* buckets: [from + i * step, from + (i + 1) * step) */
    web_tl_series *series;
    size_t n;
    web_mark *marks;
    size_t nmarks;
    double scale; /* 0: samples (cores by each window's rate); else what one value is */
} web_tl;

/* A gap is a pause between two windows of a series longer than this, or than half the window
 * before it (the recorder's windows follow each other within milliseconds). A store merging
 * windows into points (store_query.bucket_ms) keeps such pauses between its points. */
#define WEB_GAP_MIN_MS STORE_MERGE_PAUSE_MS
/* Windows longer than this are compacted buckets (the recorder writes seconds-long windows);
 * a store merges none of them. */
#define WEB_COMPACTED_MS STORE_MERGE_WINDOW_MS

/* Buckets of a nice step (10 s, 30 s, 1 min, ...: at most max_buckets) over [from, to) for
 * every series of l (which must outlive t; its points may merge windows within a bucket of that
 * step), and the marks. scale: 0 when the values are samples (`cores` from each window's rate),
 * else what a value counts per second of a bucket (1e-9 for ns: `cores` are then threads, ns
 * per ns). 0 or -1 (out of memory). */
int web_timeline_build(const store_series_list *l, int64_t from_ms, int64_t to_ms,
                       size_t max_buckets, double scale, web_tl *t);
void web_timeline_free(web_tl *t);
/* The step for a range: the smallest nice step giving at most max_buckets buckets. */
int64_t web_timeline_step(int64_t span_ms, size_t max_buckets);
