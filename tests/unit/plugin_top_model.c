/* plugin/top_model.c: windows built from the sidecar's T/F/M/P lines, the ring of the last k, their
 * aggregation per method (flame/methods), --record, and hostile lines. */
#include <stdlib.h>
#include <string.h>

#include "plugin/top.h"
#include "tests/unit/tap.h"

static int feed(top_model *m, const char *line)
{
    return top_model_line(m, line, strlen(line));
}

static const methods_row *row(const methods *t, const char *name)
{
    size_t n;
    const methods_row *r = methods_rows(t, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].name, name))
            return &r[i];
    return NULL;
}

int main(void)
{
    top_model m;
    ok(top_model_init(&m, 2, true) == 0, "a model of 2 windows with --record");
    ok(feed(&m, "V 2") == 0 && feed(&m, "J {\"pid\":1}") == 0 && m.jvms == 1,
       "V and J are left to the protocol parser; J counts a JVM");
    ok(feed(&m, "T {\"window\":0,\"ms\":1000,\"folded\":10}") == 1 && m.in_win, "T opens a window");
    ok(feed(&m, "F worker-0;A.work;A.isPrime_[i] 8") == 1 &&
           feed(&m, "F worker-0;A.work;[libjvm.so] 2") == 1 && m.cur.stacks == 2,
       "F lines go into the window");
    ok(feed(&m, "F no count at all") == 1 && feed(&m, "F a;b -3") == 1 && m.cur.stacks == 2,
       "malformed F lines are dropped, not fatal");
    ok(feed(&m, "P {\"elapsed_ms\":1000}") == 0 && m.nring == 1 && m.gen == 1 && !m.in_win,
       "P completes the window");
    ok(feed(&m, "F stray;line 1") == 1 && m.nring == 1, "an F line outside a window is ignored");

    methods_opts o = {.java_only = true, .self_to_java = true, .roots = 1};
    methods *t = methods_new(&o);
    double span;
    int wins;
    flame_err err = FLAME_ERR_INIT;
    ok(top_model_aggregate(&m, t, &span, &wins, &err) == 0 && wins == 1 && span == 1000,
       "aggregate: one window of 1000 ms");
    methods_sort(t, false);
    ok(row(t, "A.isPrime") && row(t, "A.isPrime")->self == 8, "the hot method's self samples");
    ok(row(t, "A.work") && row(t, "A.work")->self == 2 && row(t, "A.work")->total == 10,
       "a native leaf's self goes to its Java caller (java-only view)");
    methods_free(t);

    for (int w = 1; w <= 3; w++) {
        char line[128];
        snprintf(line, sizeof line, "T {\"window\":%d,\"ms\":1000}", w);
        feed(&m, line);
        feed(&m, "F t;B.run 1");
        feed(&m, "P {}");
    }
    ok(m.nring == 2 && m.gen == 4, "the ring keeps the last 2 of 4 windows");
    t = methods_new(&o);
    top_model_aggregate(&m, t, &span, &wins, &err);
    ok(!row(t, "A.isPrime") && row(t, "B.run") && row(t, "B.run")->self == 2,
       "older windows fell out of the view");
    methods_free(t);
    ok(m.rec && profile_total(m.rec) == 13, "--record kept every stack seen (%g samples)",
       m.rec ? profile_total(m.rec) : 0);
    ok(feed(&m, "T not json") == 1 && m.in_win && m.cur.ms == 0,
       "a malformed T still opens a window (zeroes)");
    ok(feed(&m, "D") == 0 && m.ended && !m.in_win, "D ends the view");
    top_model_free(&m);

    /* a window of record --mode wall: M lines, "<mode> <count0> stack value" */
    top_model w;
    top_model_init(&w, 2, false);
    feed(&w, "T {\"window\":0,\"ms\":2000}");
    ok(feed(&w, "M wall 0 sleeper;A.sleepy;Thread.sleep 1600000000") == 1 &&
           feed(&w, "M wall 0 sleeper;A.sleepy 400000000") == 1 && w.cur.stacks == 2 &&
           w.cur.p[CT_MODE_WALL] && profile_total(w.cur.p[CT_MODE_WALL]) == 2e9,
       "M lines go into the window, their value in its unit (ns)");
    ok(feed(&w, "M wall") == 1 && feed(&w, "M wall 0") == 1 && w.cur.stacks == 2,
       "malformed M lines are dropped");
    ok(feed(&w, "M heap 0 a;b 5") == 1 && feed(&w, "M cpu 0 a;b 5") == 1 && w.cur.stacks == 2,
       "M lines of an unknown mode (or cpu, which is F lines) are dropped");
    top_model_free(&w);

    /* a window of record --mode cpu,alloc: F lines and alloc M lines, a profile each */
    top_model ca;
    top_model_init(&ca, 2, false);
    feed(&ca, "T {\"window\":0,\"ms\":1000}");
    feed(&ca, "F main;A.run 7");
    feed(&ca, "M alloc 3 main;A.run;long[]_[a] 1048576");
    feed(&ca, "M alloc 1 main;A.run;byte[]_[a] 524288");
    ok(ca.cur.p[CT_MODE_CPU] && profile_total(ca.cur.p[CT_MODE_CPU]) == 7 &&
           ca.cur.p[CT_MODE_ALLOC] && profile_total(ca.cur.p[CT_MODE_ALLOC]) == 1572864 &&
           !ca.cur.p[CT_MODE_LOCK],
       "cpu,alloc: the F lines are cpu's profile (samples), the M lines alloc's (bytes)");
    top_model_free(&ca);
    return tap_done();
}
