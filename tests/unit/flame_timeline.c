/* flame/timeline.c: hostile container names come out escaped (markup, quotes, invalid UTF-8,
 * control bytes) and the picture is well-formed XML (a real parser), each
 * bar's hover text names its window and count (a wall time's: its ns and threads), a week of 10-s
 * windows draws at most one bar per pixel column, and an empty range says so. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flame/timeline.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

#define T0 1795534200000LL

/* The series and their count, for render_test_util.h's out_str. */
typedef struct series_set {
    const tl_series *s;
    size_t n;
} series_set;

static int out_timeline(const void *set, const void *opts, FILE *out, flame_err *err)
{
    const series_set *ss = set;
    return timeline_render(ss->s, ss->n, opts, out, err);
}

static char *render(const tl_series *s, size_t n, const tl_opts *o)
{
    series_set ss = {s, n};
    return out_str(out_timeline, &ss, o, NULL);
}

static void test_hostile(void)
{
    const char *name = "<script>alert('x')</script>&\"web\" \xff\xfe\x01 caf\xc3\xa9 \xed\xa0\x80";
    tl_point pts[] = {{T0, T0 + 10000, 120}};
    tl_series s = {name, pts, 1};
    tl_opts o = {.title = "timeline of </text><script>"};
    char *svg = render(&s, 1, &o);
    ok(svg != NULL, "rendered");
    ok(svg && !strstr(svg, "<script"), "no markup from names or titles");
    ok(svg && strstr(svg, "&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;&amp;&quot;web&quot;"),
       "markup and quotes escaped");
    ok(svg &&
           strstr(svg, "web&quot; \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd caf\xc3\xa9 \xef\xbf\xbd"),
       "invalid UTF-8, a control byte and a surrogate shown as U+FFFD (as in flame graphs), "
       "valid UTF-8 kept");
    ok(svg && xml_well_formed(svg, strlen(svg)), "well-formed XML");
    free(svg);
}

static void test_bars(void)
{
    setenv("TZ", "UTC", 1);
    tl_point pts[] = {{T0, T0 + 10000, 100}, {T0 + 10000, T0 + 20000, 300}};
    tl_series s = {"web pid 1", pts, 2};
    tl_opts o = {.width = 2000};
    char *svg = render(&s, 1, &o);
    ok(svg && strstr(svg, "web pid 1: 2026-11-24 15:30:00 to 15:30:10, 100 samples (10.0/s)"),
       "hover text: the window and its count");
    ok(svg && strstr(svg, "300 samples (30.0/s)"), "the second window");
    ok(svg && strstr(svg, ">30/s<"), "the scale: the highest rate");
    ok(svg && strstr(svg, ">15:30:10<"), "axis labels in local time");
    free(svg);

    /* a week of 10-s windows, two JVMs */
    size_t n = 7 * 8640;
    tl_point *week = malloc(n * sizeof *week);
    for (size_t i = 0; i < n; i++)
        week[i] =
            (tl_point){T0 + (int64_t)i * 10000, T0 + (int64_t)(i + 1) * 10000, (double)(i % 500)};
    tl_series two[] = {{"a", week, n}, {"b", week, n / 2}};
    o = (tl_opts){.width = 1000};
    svg = render(two, 2, &o);
    size_t bars = svg ? count_str(svg, "<rect class=\"b\"") : 0;
    ok(bars > 900 && bars <= 2 * 1000, "a week of windows: one bar per pixel column (%zu)", bars);
    ok(svg && strlen(svg) < 600 * 1000, "the file stays small (%zu bytes)", svg ? strlen(svg) : 0);
    ok(svg && strstr(svg, " windows)</title>"), "a summed bar says how many windows");
    ok(svg && strstr(svg, ">11-25 00:00<"), "a week's axis shows dates");
    free(svg);
    free(week);

    o = (tl_opts){.from_ms = T0, .to_ms = T0 + 3600000};
    svg = render(NULL, 0, &o);
    ok(svg && strstr(svg, "nothing recorded in this range"), "nothing to draw: said so");
    free(svg);
}

/* Wall windows hold ns of the threads' time: drawn as threads (ns per ns), not samples/s. */
static void test_units(void)
{
    setenv("TZ", "UTC", 1);
    tl_point pts[] = {{T0, T0 + 10000, 2e10}, {T0 + 10000, T0 + 20000, 5e9}};
    tl_series s = {"web pid 1", pts, 2};
    tl_opts o = {.width = 2000, .unit = "ns", .rate_unit = "threads", .rate_scale = 1e-9};
    char *svg = render(&s, 1, &o);
    ok(svg && strstr(svg, "15:30:10, 20000000000 ns (2.00 threads)"), "a bar: its ns, 2 threads");
    ok(svg && strstr(svg, "5000000000 ns (0.50 threads)"), "the second: half a thread");
    ok(svg && strstr(svg, ">2.00 threads<"), "the scale: the most threads");
    ok(svg && !strstr(svg, "samples") && !strstr(svg, "/s)") && !strstr(svg, "/s<"),
       "no samples, no per second");
    free(svg);
}

int main(void)
{
    test_hostile();
    test_bars();
    test_units();
    return tap_done();
}
