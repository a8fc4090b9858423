/* plugin/web/web_timeline.c: the serve page's timeline. Nice steps, buckets aligned and filled by
 * overlap, an empty window (covered, no samples) apart from a gap (not covered), and the marks:
 * gaps, compacted runs, a JVM restart, a recreated container, none for a series already running
 * when the range starts. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/web/web_timeline.h"
#include "tests/unit/tap.h"

#define T0 1795708800000LL /* a whole hour, UTC */
/* a point of one window */
#define PT(a, b, n, f)                                                                             \
    {                                                                                              \
        .start_ms = (a), .end_ms = (b), .samples = (n), .frequency = (f)                           \
    }

static store_series series(const char *host, const char *id, const char *name, int64_t pid,
                           const store_point *pts, size_t n)
{
    store_series s = {.host = (char *)host,
                      .container_id = (char *)id,
                      .container_name = (char *)name,
                      .jvm_pid = pid,
                      .pts = malloc(n * sizeof *pts),
                      .n = n};
    memcpy(s.pts, pts, n * sizeof *pts);
    return s;
}

static void test_step(void)
{
    is_int(web_timeline_step(3600000, 1000), 10000, "1 h in 1000 buckets: 10 s");
    is_int(web_timeline_step(86400000, 1000), 120000, "24 h: 2 min");
    is_int(web_timeline_step(86400000, 1500), 60000, "24 h in 1500: 1 min");
    is_int(web_timeline_step(7 * 86400000LL, 1000), 900000, "7 d: 15 min");
    ok(web_timeline_step(365 * 86400000LL, 10) % 604800000 == 0, "a year in 10: whole weeks");
}

static void test_buckets_and_marks(void)
{
    /* web: 10-s windows 0..60 s, an empty one at 30 s, a gap 60..120 s, then 120..140 s; then
     * 1-min compacted windows 200..380 s */
    store_point web[] = {
        PT(T0, T0 + 10000, 100, 100),           PT(T0 + 10000, T0 + 20000, 100, 100),
        PT(T0 + 20000, T0 + 30000, 100, 100),   PT(T0 + 30000, T0 + 40000, 0, 100),
        PT(T0 + 40000, T0 + 50000, 100, 100),   PT(T0 + 50000, T0 + 60000, 100, 100),
        PT(T0 + 120000, T0 + 130000, 50, 100),  PT(T0 + 130000, T0 + 140000, 50, 100),
        PT(T0 + 200000, T0 + 260000, 600, 100), PT(T0 + 260000, T0 + 320000, 600, 100),
        PT(T0 + 320000, T0 + 380000, 600, 100),
    };
    /* the same container, its JVM restarted (new pid) at 400 s */
    store_point restarted[] = {PT(T0 + 400000, T0 + 410000, 10, 50)};
    /* a new container under the same name at 500 s */
    store_point recreated[] = {PT(T0 + 500000, T0 + 510000, 10, 0)};
    /* another container, running from before the range: no mark */
    store_point other[] = {PT(T0 - 10000, T0 + 10000, 20, 0), PT(T0 + 10000, T0 + 20000, 10, 0)};
    /* web at 100 Hz, its restarted JVM at 50 Hz; the others say no rate */
    store_series s[] = {
        series("h", "aaaa1111", "web", 10, web, sizeof web / sizeof *web),
        series("h", "aaaa1111", "web", 11, restarted, 1),
        series("h", "bbbb2222", "web", 10, recreated, 1),
        series("h", "cccc3333", "api", 7, other, 2),
    };
    store_series_list l = {s, 4};
    web_tl t;
    ok(web_timeline_build(&l, T0, T0 + 600000, 60, 0, &t) == 0, "built");
    is_int(t.step_ms, 10000, "10 min in 60 buckets: 10 s");
    is_int(t.nb, 60, "60 buckets");
    is_int(t.from_ms, T0, "aligned on the step");
    is_int(t.n, 4, "four series");
    const web_tl_series *w = &t.series[0];
    ok(w->samples[0] == 100 && w->covered[0] == 10000, "a window a bucket");
    ok(w->samples[3] == 0 && w->covered[3] == 10000, "the empty window: covered, no samples");
    ok(w->covered[7] == 0, "the gap: not covered");
    ok(w->samples[20] == 100 && w->covered[20] == 10000,
       "a compacted minute shared by its six buckets");
    ok(t.series[3].samples[0] == 10 && t.series[3].covered[0] == 10000,
       "a window half before the range: half its samples, its part");
    /* cores: samples / frequency over the bucket's length */
    is_num(w->cores[0], 0.1, "100 samples at 100 Hz in 10 s: 0.1 cores");
    is_num(w->cores[3], 0, "the empty window: no CPU");
    is_num(w->cores[20], 0.1, "a compacted minute: its share of 600 samples, 0.1 cores");
    is_num(t.series[1].cores[40], 10.0 / 50 / 10, "at 50 Hz a sample is 20 ms");
    is_num(t.series[3].cores[0], 0, "no rate stored: no CPU figure");
    int gaps = 0, compacted = 0, restart = 0, recreated_n = 0;
    for (size_t i = 0; i < t.nmarks; i++) {
        const web_mark *m = &t.marks[i];
        switch (m->kind) {
        case WEB_MARK_GAP:
            gaps++;
            if (m->series == 0 && m->from_ms == T0 + 60000)
                ok(m->to_ms == T0 + 120000, "the gap 60..120 s");
            break;
        case WEB_MARK_COMPACTED:
            compacted++;
            ok(m->series == 0 && m->from_ms == T0 + 200000 && m->to_ms == T0 + 380000 &&
                   m->bucket_ms == 60000,
               "one mark for the run of three 1-min buckets");
            break;
        case WEB_MARK_RESTART:
            restart++;
            ok(m->series == 1 && m->other == 0 && m->from_ms == T0 + 400000,
               "the restart: series 1 after series 0");
            break;
        case WEB_MARK_RECREATED:
            recreated_n++;
            ok(m->series == 2 && m->from_ms == T0 + 500000, "recreated: series 2");
            break;
        }
    }
    is_int(gaps, 2, "two gaps (60..120 s, 140..200 s); the empty window is none");
    is_int(compacted, 1, "one compacted run");
    is_int(restart, 1, "one restart");
    is_int(recreated_n, 1, "one recreated container; none for api, running before the range");
    web_timeline_free(&t);

    ok(web_timeline_build(&l, T0 + 450000, T0 + 600000, 60, 0, &t) == 0, "a later range");
    restart = 0;
    for (size_t i = 0; i < t.nmarks; i++)
        restart += t.marks[i].kind == WEB_MARK_RESTART;
    is_int(restart, 0, "a series that starts before the range shows no restart");
    web_timeline_free(&t);
    for (size_t i = 0; i < 4; i++)
        free(s[i].pts);

    store_series_list empty = {NULL, 0};
    ok(web_timeline_build(&empty, T0, T0 + 1000, 100, 0, &t) == 0 && t.n == 0, "nothing stored");
    web_timeline_free(&t);
}

/* Wall windows hold ns of the threads' time: 3 threads for 10 s are 3e10 ns, whatever the
 * windows' sampling rate; the bucket says 3 threads, not cores of a rate. */
static void test_threads(void)
{
    store_point wall[] = {PT(T0, T0 + 10000, 30000000000ULL, 99),
                          PT(T0 + 10000, T0 + 20000, 5000000000ULL, 99)};
    store_series s = series("h", "aaaa1111", "web", 10, wall, 2);
    store_series_list l = {&s, 1};
    web_tl t;
    ok(web_timeline_build(&l, T0, T0 + 20000, 10, 1e-9, &t) == 0, "wall: built");
    is_int(t.step_ms, 10000, "wall: 10-s buckets");
    ok(t.series[0].cores[0] > 2.999999 && t.series[0].cores[0] < 3.000001,
       "3e10 ns in 10 s: 3 threads (%g)", t.series[0].cores[0]);
    ok(t.series[0].cores[1] > 0.499999 && t.series[0].cores[1] < 0.500001,
       "5e9 ns in 10 s: half a thread (%g)", t.series[0].cores[1]);
    ok(t.series[0].samples[0] == 30000000000.0, "the bucket's value stays the ns");
    web_timeline_free(&t);
    free(s.pts);
}

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) > 1 ? fabs(a) : 1);
}

/* What a store may send for bucket_ms (store.h, store_query.bucket_ms; ClickHouse's ch_timeline
 * does it in SQL): the windows of a bucket merged into one point when they are short, lie whole
 * in it and pause at most STORE_MERGE_PAUSE_MS in all; the others one by one. */
static size_t merge(const store_point *w, size_t n, int64_t bucket, store_point *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int64_t k = w[i].start_ms / bucket;
        size_t j = i;
        int64_t sum = 0;
        while (j < n && w[j].end_ms - w[j].start_ms <= STORE_MERGE_WINDOW_MS &&
               w[j].start_ms / bucket == k && (w[j].end_ms - 1) / bucket == k)
            sum += w[j].end_ms - w[j].start_ms, j++;
        if (j - i > 1 && w[j - 1].end_ms - w[i].start_ms - sum <= STORE_MERGE_PAUSE_MS) {
            store_point p = {.start_ms = w[i].start_ms,
                             .end_ms = w[j - 1].end_ms,
                             .frequency = w[i].frequency,
                             .windows = (uint32_t)(j - i),
                             .covered_ms = sum,
                             .last_ms = w[j - 1].end_ms - w[j - 1].start_ms};
            for (size_t x = i; x < j; x++)
                p.samples += w[x].samples;
            out[o++] = p;
            i = j;
        } else {
            for (size_t x = i; x < (j > i ? j : i + 1); x++)
                out[o++] = w[x];
            i = j > i ? j : i + 1;
        }
    }
    return o;
}

/* The same windows, one point each or merged a bucket a point, give the same timeline: the
 * samples, covered ms, cores and marks. The windows: 10-s ones off the buckets' bounds (some
 * cross them), pauses of 1.5 s (no gap), a 25-s gap right after a merged bucket (shorter than
 * half its span: the last window's length decides), an empty window, compacted minutes. */
static void test_merged_points(void)
{
    store_point w[64];
    size_t n = 0;
    int64_t t = T0 + 3333;
    for (int i = 0; i < 20; i++, t += 10000)
        w[n++] = (store_point)PT(t, t + 10000, (uint64_t)(10 * i), 99);
    t += 1500; /* a pause, no gap */
    for (int i = 0; i < 10; i++, t += 10000)
        w[n++] = (store_point)PT(t, t + 10000, i == 4 ? 0 : 77, 99);
    t += 25000; /* a gap */
    for (int i = 0; i < 10; i++, t += 10000)
        w[n++] = (store_point)PT(t, t + 10000, 50, 99);
    t = (t / 60000 + 1) * 60000 + 60000; /* a gap, then compacted minutes */
    for (int i = 0; i < 4; i++, t += 60000)
        w[n++] = (store_point)PT(t, t + 60000, 600, 99);
    int64_t span = t + 20000 - T0;
    size_t nb = span / 60000 + 2;
    int64_t step = web_timeline_step(span, nb);
    store_point m[64];
    size_t nm = merge(w, n, step, m);
    ok(nm < n / 2, "%zu windows sent as %zu points (%lld-ms buckets)", n, nm, (long long)step);
    store_series a = series("h", "aaaa1111", "web", 10, w, n),
                 b = series("h", "aaaa1111", "web", 10, m, nm);
    store_series_list la = {&a, 1}, lb = {&b, 1};
    web_tl ta, tb;
    ok(web_timeline_build(&la, T0, T0 + span, nb, 0, &ta) == 0 &&
           web_timeline_build(&lb, T0, T0 + span, nb, 0, &tb) == 0 && ta.nb == tb.nb,
       "both built");
    /* the same sums, added in another order: equal to the last bits */
    size_t bad = 0;
    for (size_t i = 0; i < ta.nb; i++)
        bad += !near(ta.series[0].samples[i], tb.series[0].samples[i]) ||
               !near(ta.series[0].covered[i], tb.series[0].covered[i]) ||
               !near(ta.series[0].cores[i], tb.series[0].cores[i]);
    is_int(bad, 0, "every bucket's samples, covered ms and cores the same");
    is_int(tb.nmarks, ta.nmarks, "as many marks (%zu)", ta.nmarks);
    size_t same = 0, gaps = 0;
    for (size_t i = 0; i < ta.nmarks && i < tb.nmarks; i++) {
        same += ta.marks[i].kind == tb.marks[i].kind &&
                ta.marks[i].from_ms == tb.marks[i].from_ms &&
                ta.marks[i].to_ms == tb.marks[i].to_ms &&
                ta.marks[i].bucket_ms == tb.marks[i].bucket_ms;
        gaps += tb.marks[i].kind == WEB_MARK_GAP;
    }
    is_int(same, ta.nmarks, "the same marks");
    is_int(gaps, 2, "both gaps (25 s after a merged bucket, before the compacted run)");
    web_timeline_free(&ta);
    web_timeline_free(&tb);
    free(a.pts);
    free(b.pts);
}

int main(void)
{
    test_step();
    test_buckets_and_marks();
    test_threads();
    test_merged_points();
    return tap_done();
}
