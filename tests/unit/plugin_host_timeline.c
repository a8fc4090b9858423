/* plugin/host_timeline.c and the host lines of plugin/run/proto.c: K and U lines read strictly; the
 * timeline picks each bucket's dominant container, keeps hostile names escaped, bounds buckets. */
#include <stdlib.h>
#include <string.h>

#include "plugin/host_timeline.h"
#include "plugin/run/proto.h"
#include "tests/unit/tap.h"

static const char *names[] = {"web", "db<script>\"&'", "host"};
static int row_of(void *ctx, const char *key)
{
    (void)ctx;
    for (int i = 0; i < 3; i++)
        if (!strcmp(key, names[i]))
            return i;
    return -1;
}
static const char *row_name(void *ctx, int r)
{
    (void)ctx;
    return names[r];
}

static double quota(void *ctx, int r)
{
    (void)ctx;
    return r == 0 ? 0.1 : 0;
}

static char *render(const tl_input *in)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    flame_err err = FLAME_ERR_INIT;
    int rc = host_timeline_write((void *)in, f, &err);
    fclose(f);
    ok(rc == 0, "timeline written");
    return buf;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

int main(void)
{
    flame_err err = FLAME_ERR_INIT;
    proto p;
    proto_init(&p);
#define LINE(s) proto_line(&p, s, strlen(s), &err)
    ok(LINE("V 2") == 0, "V");
    ok(LINE("K 10 11 1 2 web;java;worker-0") == 0 && p.ntasks == 1 && p.tasks[0].vtid == 2 &&
           !strcmp(p.tasks[0].tcomm, "worker-0"),
       "K read");
    ok(LINE("K 10 11 1 2 web;java") < 0, "K without the thread name refused");
    ok(LINE("K 10 x 1 2 web;a;b") < 0, "K with a bad number refused");
    ok(LINE("K 10 11 1 2 web;java;01234567890123456789") < 0, "K with a name too long refused");
    ok(LINE("U 0,0,11 1,5,11 0,150,11") == 0 && p.ntl == 3 && p.tl[2].ms == 150, "U read");
    ok(LINE("U 0,0") < 0, "U with a short triple refused");
    ok(LINE("U 0,0,11,") < 0, "U with trailing junk refused");
    ok(LINE("U 0,99999999999,1") < 0, "U with a number beyond 32 bits refused");
    proto_clear(&p);

    proto_task tasks[3] = {
        {.pid = 10, .tid = 11, .vpid = 1, .vtid = 2, .key = "web", .tcomm = "worker-0"},
        {.pid = 20,
         .tid = 21,
         .vpid = 1,
         .vtid = 7,
         .key = "db<script>\"&'",
         .tcomm = "<b>evil</b>"},
        {.pid = 30, .tid = 30, .vpid = 30, .vtid = 30, .key = "host"}};
    /* CPU 0, bucket 0: web 2, db 1; bucket 1: db 3. CPU 1, bucket 0: host 1. */
    proto_tl tl[] = {{0, 10, 11},  {0, 20, 11},  {0, 30, 21}, {0, 110, 21},
                     {0, 120, 21}, {0, 130, 21}, {1, 50, 30}};
    tl_input in = {.tasks = tasks,
                   .ntasks = 3,
                   .tl = tl,
                   .ntl = sizeof tl / sizeof *tl,
                   .cpus = 2,
                   .record_ms = 200,
                   .frequency = 99,
                   .bucket_ms = 100,
                   .nrows = 3,
                   .row_of = row_of,
                   .row_name = row_name};
    char *svg = render(&in);
    ok(svg && strstr(svg, "data-t=\"web | worker-0 tid 11 (vtid 2) | CPU 0, 0.00-0.10 s, 2 of 3 "
                          "samples\""),
       "CPU 0, first bucket: web dominates, its busiest thread with tid/vtid");
    ok(svg && strstr(svg, "CPU 0, 0.10-0.20 s, 3 of 3 samples"), "second bucket: db");
    ok(svg && strstr(svg, "data-c=\"db&lt;script&gt;&quot;&amp;&apos;\""), "hostile name escaped");
    ok(svg && !strstr(svg, "<script>\"") && !strstr(svg, "<b>evil"), "no raw markup from names");
    is_int((int)count(svg, "<rect x=\"190.00\" y=\"64\""), 1, "one cell per CPU and bucket");

    /* colours: distinct hues per container (a categorical palette in the table's order), host
     * grey, the same colour in the CPU band, the legend and the rows */
    ok(svg && strstr(svg, "fill=\"#4e79a7\" data-c=\"web\"") &&
           strstr(svg, "fill=\"#f28e2b\" data-c=\"db&lt;script&gt;&quot;&amp;&apos;\"") &&
           strstr(svg, "fill=\"#969696\" data-c=\"host\""),
       "distinct hues: web blue, db orange, host grey");
    const char *lg = svg ? strstr(svg, "<g id=\"legend\">") : NULL;
    ok(lg && strstr(lg, ">web</text>") && strstr(lg, ">db&lt;script&gt;&quot;&amp;&apos;</text>") &&
           strstr(lg, ">host</text>") && strstr(lg, "fill=\"#4e79a7\" data-c=\"web\""),
       "a legend: each container's colour and name (clickable like a cell)");
    /* the time axis: at most 12 ticks of a nice step (0.1 s here), labelled */
    ok(svg && count(svg, "<g class=\"axis\">") == 2 && strstr(svg, ">0 s</text>") &&
           strstr(svg, ">0.2 s</text>"),
       "a time axis in seconds under the CPUs and under the rows");
    /* no limits given: each row to its own peak, said */
    ok(svg && strstr(svg, "no CPU limit, peak ") && !strstr(svg, "class=\"limit\""),
       "without limits: no limit line, each row to its own peak");
    free(svg);

    /* web limited to 0.1 CPU: its row is scaled to the limit (at 80 % of the plot), drawn
     * dashed; web's 2 samples in 100 ms at 99 Hz are 0.2 cores: above the limit, the full row */
    in.row_quota = quota;
    svg = render(&in);
    ok(svg && strstr(svg, "<line class=\"limit\" data-limit=\"0.1\"") &&
           strstr(svg, ">0.1 CPU</text>") && strstr(svg, "limit 0.10 CPU, peak 0.20"),
       "a row with a CPU limit: the limit drawn and said");
    ok(svg && strstr(svg, "height=\"36.00\" fill=\"#4e79a7\""),
       "web's bucket at twice its limit fills its row (scaled to the peak)");
    free(svg);

    in.bucket_ms = 10;
    in.record_ms = 3600 * 1000; /* an hour at 10 ms: 360000 buckets, cut to 2000 */
    svg = render(&in);
    ok(svg && strstr(svg, "1800 ms buckets"), "at most 2000 buckets: wider ones, said");
    free(svg);

    /* CPU limits from the engine's HostConfig */
    ok(tl_quota_cores(500000000, 0, 0, "") == 0.5, "--cpus 0.5");
    ok(tl_quota_cores(0, 150000, 100000, NULL) == 1.5, "--cpu-quota 150000 (period 100 ms)");
    ok(tl_quota_cores(0, 50000, 0, "") == 0.5, "--cpu-quota without a period: 100 ms");
    ok(tl_quota_cores(0, 0, 0, "0-2,5") == 4, "--cpuset-cpus 0-2,5: 4 CPUs");
    ok(tl_quota_cores(2000000000, 0, 0, "1") == 1, "the smallest limit counts");
    ok(tl_quota_cores(0, 0, 0, "0-x") == 0 && tl_quota_cores(0, 0, 0, "3-1") == 0 &&
           tl_quota_cores(0, -1, 100000, "") == 0,
       "no limit, or one that does not parse: 0");
    return tap_done();
}
