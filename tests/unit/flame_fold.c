/* Our folding dialect (docs/FOLDING.md): each deliberate difference from stackcollapse-perf.pl
 * is checked here against the compat mode, plus the JDK 17 capture, stats, bounds and hostile
 * input. */
#include <math.h>
#include <time.h>

#include "tests/unit/tap.h"
#include "tests/unit/fold_test_util.h"

static const fold_opts ours = {.inline_frames = true};
static const fold_opts compat = {.compat = true};

static void check(const char *input, const fold_opts *o, const char *want, const char *what)
{
    char *got = fold_str(input, o, NULL);
    is_str(got, want, "%s", what);
    free(got);
}

static const char *root_cb(void *ctx, long pid)
{
    static char buf[64];
    (void)ctx;
    snprintf(buf, sizeof buf, "jvm;%ld\n", pid); /* ';' and '\n' must not survive */
    return buf;
}

/* `docker flame host`: the roots by pid/tid/comm and each sample's CPU and time */
static struct {
    int n, cpu;
    long pid, tid;
    unsigned long long us;
} seen_sample;
static unsigned long long task_us;
static const char *task_cb(void *ctx, long pid, long tid, const char *comm, size_t len,
                           unsigned long long us)
{
    (void)ctx;
    task_us = us;
    static char buf[128];
    snprintf(buf, sizeof buf, "ctr;proc %ld;%.*s %ld", pid, (int)len, comm, tid);
    return pid == 99 ? NULL : buf;
}
static void sample_cb(void *ctx, long pid, long tid, int cpu, unsigned long long us)
{
    (void)ctx;
    seen_sample.n++;
    seen_sample.pid = pid;
    seen_sample.tid = tid;
    seen_sample.cpu = cpu;
    seen_sample.us = us;
}

static int stop_after_one(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    (void)stack, (void)len, (void)count;
    ++*(int *)ctx;
    return 7;
}

typedef struct ev_seen {
    int n;
    char stack[4][32];
    unsigned long long count[4], events[4];
} ev_seen;

static int ev_collect(void *ctx, const char *stack, size_t len, unsigned long long count,
                      unsigned long long events)
{
    ev_seen *e = ctx;
    if (e->n < 4) {
        snprintf(e->stack[e->n], sizeof e->stack[e->n], "%.*s", (int)len, stack);
        e->count[e->n] = count;
        e->events[e->n] = events;
    }
    e->n++;
    return 0;
}

static ev_seen fold_events(const char *text, const fold_opts *o)
{
    ev_seen e = {0};
    flame_err err = FLAME_ERR_INIT;
    folder *f = folder_new(o);
    const char *p = text;
    while (f && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        folder_feed(f, p, len, &err);
        p += len + (nl != NULL);
    }
    if (f && folder_finish(f, &err) == 0)
        folder_each_events(f, ev_collect, &e);
    folder_free(f);
    return e;
}

static void events_checks(fold_opts per)
{
    is_int((long long)fold_events_of(0), 1, "event code 0: one event");
    ok(fold_events_of(128) == 2.0 && fold_events_of(24 * 128) == 16777216.0,
       "whole powers of two exact (1 in 2, 1 in 2^24)");
    ok(fabs(fold_events_of(64) - M_SQRT2) < 1e-12, "code 64: 2^(1/2)");
    ok(fold_events_of(FOLD_EVENTS_NONE) == 0 && fold_events_of(99999) == 0,
       "FOLD_EVENTS_NONE (and beyond): no event");
    /* periods: 8 ms, code 256 (4 events); 3 ms, code 0 (1); 5 ms tagged sleeping, code 128 (2)
     * on another stack; a cpu-clock period without a code (1) */
    char text[1024];
    snprintf(text, sizeof text,
             "w 1 1.1: %llu cpu-clock: \n\t1 f (/x)\n\n"
             "w 1 1.2: %llu cpu-clock: \n\t1 f (/x)\n\n"
             "w 1 1.3: %llu cpu-clock: \n\t1 f (/x)\n\t2 g (/x)\n\n"
             "w 1 1.4: 10101009 cpu-clock: \n\t1 f (/x)\n\n",
             8000000ull | 256ull << FOLD_EVENTS_SHIFT, 3000000ull,
             5000003ull | 128ull << FOLD_EVENTS_SHIFT);
    fold_opts ev = per;
    ev.events = true;
    ev_seen e = fold_events(text, &ev);
    ok(e.n == 2 && !strcmp(e.stack[0], "w;f") && e.count[0] == 8000000 + 3000000 + 10101009 &&
           e.events[0] == 4 + 1 + 1,
       "events: w;f weighs its periods without the codes, 6 events (%s %llu %llu)", e.stack[0],
       e.count[0], e.events[0]);
    ok(e.n == 2 && !strcmp(e.stack[1], "w;g;f") && e.count[1] == 5000003 && e.events[1] == 2,
       "events: w;g;f 2 events (%llu %llu)", e.count[1], e.events[1]);
    ev.state_tags = true;
    e = fold_events(text, &ev);
    ok(e.n == 3 && !strcmp(e.stack[2], "w;g;f;[sleeping]") && e.count[2] == 5000000 &&
           e.events[2] == 2,
       "events under state tags: the code above, the tag below (%s %llu %llu)", e.stack[2],
       e.count[2], e.events[2]);
    ev.state_tags = false;
    ev.state_mask = 1u << FOLD_STATE_SLEEPING;
    e = fold_events(text, &ev);
    ok(e.n == 1 && e.count[0] == 5000000 && e.events[0] == 2,
       "events with a state mask: the kept samples' alone");
    e = fold_events(text, &per);
    ok(e.n == 2 && e.events[0] == 0 && e.count[1] > 128ull << FOLD_EVENTS_SHIFT,
       "without the option: no events, periods as they are (the code not taken off)");
    /* a folder handed its profile over starts its events again */
    folder *f = folder_new(&(fold_opts){.period = true, .events = true});
    flame_err err = FLAME_ERR_INIT;
    const char *one = "w 1 1.1: 576460752303423489 cpu-clock: ";
    folder_feed(f, one, strlen(one), &err);
    folder_feed(f, "\t1 f (/x)", 10, &err);
    folder_finish(f, &err);
    profile_free(folder_steal_profile(f));
    folder_feed(f, one, strlen(one), &err);
    folder_feed(f, "\t1 h (/x)", 10, &err);
    folder_finish(f, &err);
    e = (ev_seen){0};
    folder_each_events(f, ev_collect, &e);
    ok(e.n == 1 && e.count[0] == 1 && e.events[0] == 2,
       "after folder_steal_profile: the new stacks' events alone (%llu)", e.events[0]);
    folder_free(f);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    /* 1. Headers parsed from the timestamp. */
    const char *one_letter = "t 99076 10314749.002559:    1001001 cpu-clock:pppH: \n"
                             "\t  4005d6 main+0x16 (/bin/t)\n\n";
    check(one_letter, &ours, "t;main 1\n", "one-letter comm is the comm");
    check(one_letter, &compat, "t_99076_10314749.002559:;main 1001001\n",
          "compat: one-letter comm swallows pid and time (FlameGraph #259)");
    const char *one_letter_pid = "a 12/34 [001] 5.000001: 3 cycles: \n\t  4005d6 f (/bin/a)\n\n";
    fold_opts tid = ours;
    tid.tid = true;
    check(one_letter_pid, &tid, "a-12/34;f 1\n", "one-letter comm with pid/tid and cpu");
    const char *leading = "     swapper     0 [002] 6035557.056977:     250000 cpu-clock: \n"
                          "\tffffffff8103d0ca native_safe_halt ([kernel.kallsyms])\n\n";
    check(leading, &ours, "swapper;native_safe_halt 1\n", "header with leading spaces");
    /* --kernel as the sidecar folds it (perf script of our per-CPU recording, --kallsyms) */
    const char *ksample = "syscalls 1/33 [001] 5.000001: 10101010 cpu-clock: \n"
                          "\tffffffff8133f1a0 ksys_read+0x60 ([kernel.kallsyms])\n"
                          "\tffffffff81c00099 entry_SYSCALL_64_after_hwframe+0x63 "
                          "([kernel.kallsyms])\n"
                          "\t    7f0011223344 read+0x14 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
                          "\t    7fd0a8ee5891 void FlameFixture.readZeros()+0x6d1 "
                          "(/tmp/perf-1.map)\n\n";
    fold_opts kern = ours;
    kern.kernel = true;
    check(
        ksample, &kern,
        "syscalls;FlameFixture.readZeros;read;entry_SYSCALL_64_after_hwframe_[k];ksys_read_[k] 1\n",
        "kernel frames marked _[k] at the leaf end, user frames unmarked");
    check(ksample, &ours,
          "syscalls;FlameFixture.readZeros;read;entry_SYSCALL_64_after_hwframe;ksys_read 1\n",
          "without the kernel option: no mark");
    check(leading, &compat, "", "compat: header with leading spaces drops the sample");
    check("V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cycles:\n\t1 f (/x)\n\n", &tid,
          "V8_WorkerThread-24636/25607;f 1\n", "comm with a space, pid/tid");
    check("java 19983 cycles:\n\tffff f (/x)\n\n", &ours, "java;f 1\n",
          "no timestamp: Perl's header rule still applies");

    /* 2. JDK perf-map names. */
    const char *jdk =
        "worker-1    26  2066.465803:    5025125 cpu-clock: \n"
        "\t    7fd0a8ee5891 long Work.step(java.util.Random)+0x6d1 (/tmp/perf-1.map)\n"
        "\t    7fd0a8938cc9 StubRoutines (1)+0xc9 (/tmp/perf-1.map)\n"
        "\t    7fd0a8938cc9 java.util.HashMap$Node[] java.util.HashMap.resize()+0xc9 "
        "(/tmp/perf-1.map)\n\n";
    check(jdk, &ours, "worker-1;java.util.HashMap.resize;StubRoutines;Work.step 1\n",
          "JDK names lose return type and parameters; no trailing space");
    fold_opts sig = ours;
    sig.signatures = true;
    check(jdk, &sig,
          "worker-1;java.util.HashMap$Node[] java.util.HashMap.resize();StubRoutines;"
          "long Work.step(java.util.Random) 1\n",
          "--signatures keeps them");
    check(jdk, &compat,
          "worker-1;java.util.HashMap$Node[] java.util.HashMap.resize;StubRoutines ;long "
          "Work.step 5025125\n",
          "compat: return types and a trailing space");
    check("w 1 1.5: 1 c: \n"
          "\t1 void Work$$Lambda$14/0x0000000800c0b8d8.run()+0x1 (/tmp/perf-1.map)\n"
          "\t2 void Work.lambda$main$0(int) (/tmp/perf-1.map)\n"
          "\t3 void Foo.<init>(int, long[]) (/tmp/perf-1.map)\n"
          "\t4 java.lang.Object[][] java.util.Map$Entry.get() (/tmp/perf-1.map)\n\n",
          &ours,
          "w;java.util.Map$Entry.get;Foo.<init>;Work.lambda$main$0;"
          "Work$$Lambda$14/0x0000000800c0b8d8.run 1\n",
          "lambdas, hidden classes, constructors, array return types");
    check("node 1 1.5: 1 cpu-clock:\n\t1 LazyCompile:~f /app/x.js:3 (/tmp/perf-1.map)\n\n", &ours,
          "node;LazyCompile:~f /app/x.js:3 1\n", "V8 names in a perf map are left alone");

    /* Interpreted frames (docs/FOLDING.md "Interpreted frames"): the recorder's map names them
     * X_[int]; --jit must not add _[j] to them, JIT frames still get it. */
    const char *interp = "worker-0 7 1.5: 1 cpu-clock: \n"
                         "\t4000000000000018 FlameFixture.isPrime_[int]+0x0 (/tmp/perf-7.map)\n"
                         "\t4000000000000028 FlameFixture.countPrimes_[int]+0x0 (/tmp/perf-7.map)\n"
                         "\t7fd0a8ee5891 void FlameFixture.work(int)+0x6d1 (/tmp/perf-7.map)\n\n";
    check(
        interp, &ours,
        "worker-0;FlameFixture.work;FlameFixture.countPrimes_[int];FlameFixture.isPrime_[int] 1\n",
        "interpreted frames keep their _[int]");
    fold_opts jit_int = ours;
    jit_int.jit = true;
    check(interp, &jit_int,
          "worker-0;FlameFixture.work_[j];FlameFixture.countPrimes_[int];"
          "FlameFixture.isPrime_[int] 1\n",
          "--jit marks JIT frames only, not interpreted ones");

    /* 3. Java recognised by the frame's origin, not the thread name. */
    const char *desc = "worker-0 7 1.000001: 1 cpu-clock: \n"
                       "\t1 Lorg/foo/Bar;.baz(I)V (/tmp/perf-7.map)\n"
                       "\t2 Lnot/java (/usr/lib/libx.so)\n\n";
    check(desc, &ours, "worker-0;Lnot/java;org/foo/Bar:.baz 1\n",
          "descriptor 'L' dropped for perf-map frames only");
    check(desc, &compat, "worker-0;Lnot/java;Lorg/foo/Bar:.baz 1\n",
          "compat: the 'L' stays unless the comm starts with java");

    /* 4. Our agent's inlined frames. */
    const char *inl = "worker-0 7 1.000001: 1 cpu-clock: \n"
                      "\t1 Work.step->java.util.HashMap.merge->java.util.HashMap.resize+0x10 "
                      "(/tmp/perf-7.map)\n"
                      "\t2 std::unique_ptr<A>::operator->() (/usr/lib/libx.so)\n\n";
    check(inl, &ours,
          "worker-0;std::unique_ptr<A>::operator->;Work.step;java.util.HashMap.merge_[i];"
          "java.util.HashMap.resize_[i] 1\n",
          "agent chain split with _[i]; native '->' untouched");
    fold_opts noinl = ours;
    noinl.inline_frames = false;
    check(inl, &noinl, "worker-0;std::unique_ptr<A>::operator->;Work.step 1\n",
          "--no-inline keeps the compiled (outer) method");
    fold_opts jit = ours;
    jit.jit = true;
    check(inl, &jit,
          "worker-0;std::unique_ptr<A>::operator->;Work.step_[j];java.util.HashMap.merge_[i];"
          "java.util.HashMap.resize_[i] 1\n",
          "--jit marks the compiled frame _[j], inlined ones _[i]");

    /* 5. Counts. */
    const char *two =
        "w 1 1.1: 300 cpu-clock: \n\t1 f (/x)\n\nw 1 1.2: 200 cpu-clock: \n\t1 f (/x)\n\n";
    check(two, &ours, "w;f 2\n", "default counts samples");
    fold_opts per = ours;
    per.period = true;
    check(two, &per, "w;f 500\n", "--period sums periods");

    /* 5b. wall: the period's two low bits are the thread's state, a leaf frame; the count is
     * the period without them (a sample of each state, one untagged, one truncated deep) */
    const char *tagged = "w 1 1.1: 1001 cpu-clock: \n\t1 f (/x)\n\n"
                         "w 1 1.2: 4002 cpu-clock: \n\t1 f (/x)\n\n"
                         "w 1 1.3: 8003 cpu-clock: \n\t1 f (/x)\n\t2 g (/x)\n\n"
                         "w 1 1.4: 7000 cpu-clock: \n\t1 f (/x)\n\n";
    fold_opts tags = per;
    tags.state_tags = true;
    check(tagged, &tags,
          "w;f 7000\nw;f;[runnable] 4000\nw;f;[running] 1000\nw;g;f;[sleeping] 8000\n",
          "state tags: [running]/[runnable]/[sleeping] leaves, tags out of the weights");
    check(tagged, &per, "w;f 12003\nw;g;f 8003\n", "no state tags: periods as they are");

    /* 5c. several modes from one wall recording: each folder keeps its states' samples */
    fold_opts oncpu = ours; /* cpu: the [running] samples, one each */
    oncpu.state_mask = 1u << FOLD_STATE_RUNNING;
    fold_stats mst;
    char *mgot = fold_str(tagged, &oncpu, &mst);
    is_str(mgot, "w;f 1\n", "state mask, cpu: the on-CPU sample alone, counted once, no tag");
    is_int(mst.samples, 1, "... one sample folded");
    is_int(mst.other_state, 3, "... the others skipped, counted");
    free(mgot);
    fold_opts offcpu = per; /* offcpu: the others, their periods without the tag */
    offcpu.state_mask = 1u << FOLD_STATE_RUNNABLE | 1u << FOLD_STATE_SLEEPING;
    check(tagged, &offcpu, "w;f 4000\nw;g;f 8000\n",
          "state mask, offcpu: runnable and sleeping, tags out of the weights, no tag leaf");
    fold_opts walltoo = offcpu;
    walltoo.state_tags = true;
    check(tagged, &walltoo, "w;f;[runnable] 4000\nw;g;f;[sleeping] 8000\n",
          "state mask with state tags: the kept samples' leaves");
    fold_opts untagged = per;
    untagged.state_mask = 1u << 0;
    check(tagged, &untagged, "w;f 7000\n", "state mask of 0: the untagged sample");
    fold_opts cmask = compat;
    cmask.state_mask = 1u << FOLD_STATE_RUNNING;
    char *cm = fold_str(tagged, &cmask, NULL), *cn = fold_str(tagged, &compat, NULL);
    is_str(cm, cn, "compat ignores the state mask");
    free(cm);
    free(cn);

    /* 5d. events (the off-CPU samples' switch-outs, 1/p each) in the periods' top bits:
     * taken off the weights, summed per stack; with the state tags below them */
    events_checks(per);

    /* 6. Control bytes never reach the output; ';' in a comm is not a separator. */
    check("a;b 1 1.1: 1 cpu-clock: \n\t1 f\x01g\tx\x7f (/x)\n\n", &ours, "a:b;f?g?x? 1\n",
          "control bytes replaced, ';' in comm replaced");
    check("ab 1 1.1: 1 cpu-clock: \r\n\t1 f (/x)\r\n\r\n", &ours, "ab;f 1\n", "CRLF input");

    /* 7. Sample boundaries. */
    const char *nolast = "w 1 1.1: 1 cpu-clock: \n\t1 f (/x)\n";
    check(nolast, &ours, "w;f 1\n", "last sample kept without a blank line after it");
    check(nolast, &compat, "", "compat: ... Perl drops it");
    const char *noblank =
        "ww 1 1.1: 1 cpu-clock: \n\t1 f (/x)\nww 1 1.2: 1 cpu-clock: \n\t1 g (/x)\n\n";
    check(noblank, &ours, "ww;f 1\nww;g 1\n", "a header ends an unterminated sample");
    check(noblank, &compat, "ww;g;f 1\n", "compat: ... Perl merges them");
    check("w 1 1.1: 1 cpu-clock: \n\t1 (w) (/x)\n\t1 f+0x1a (/x)\n\t2 g+0xZZ (/x)\n\n", &ours,
          "w;g+0xZZ;f 1\n", "offsets stripped, '(' frames skipped");
    check(
        "w 1 1.1: 1 cpu-clock: \n\t7f00 [unknown] (/lib/libc.so.6)\n\t0 [unknown] ([unknown])\n\n",
        &ours, "w;[unknown];[libc.so.6] 1\n", "unknown symbols named by their dso");
    fold_opts addrs = ours;
    addrs.addrs = true;
    check("w 1 1.1: 1 cpu-clock: \n\t7f00 [unknown] (/lib/libc.so.6)\n\n", &addrs,
          "w;[libc.so.6 <7f00>] 1\n", "--addrs");
    check("false 64414 20110.539270: 34467 cycles:u: ffffffff9aa3c8de do_x ([kernel.kallsyms])\n\n",
          &ours, "false;do_x 1\n", "a frame printed on the header line (no -g)");

    /* 8. Event filter. */
    const char *evs = "w 1 1.1: 1 cpu-clock:pppH: \n\t1 f (/x)\n\n"
                      "w 1 1.2: 1 page-faults: \n\t1 g (/x)\n\n";
    fold_stats st;
    char *got = fold_str(evs, &ours, &st);
    is_str(got, "w;f 1\n", "first event type kept by default");
    is_int(st.filtered, 1, "one sample filtered");
    free(got);
    fold_opts ev = ours;
    ev.event_filter = "cpu-clock";
    check(evs, &ev, "w;f 1\n", "--event-filter matches without perf's modifiers");
    ev.event_filter = "page-faults";
    check(evs, &ev, "w;g 1\n", "--event-filter selects the other event");
    fold_opts cev = compat;
    cev.event_filter = "cpu-clock";
    check(evs, &cev, "", "compat: the filter must match exactly");

    /* 8b. The frame-line cache must not change anything: the same line under another comm
     * (compat's Java tidy depends on it), as leaf and as caller, and past the cache's bounds. */
    const char *same_line = "java 1 1.1: 1 c: \n\t1 Lfoo/Bar;.x (/l.so)\n\n"
                            "ab 1 1.1: 1 c: \n\t1 Lfoo/Bar;.x (/l.so)\n\n"
                            "java 1 1.1: 1 c: \n\t1 Lfoo/Bar;.x (/l.so)\n\n";
    check(same_line, &compat, "ab;Lfoo/Bar:.x 1\njava;foo/Bar:.x 2\n",
          "compat: a cached line still follows the comm");
    const char *leaf_then_caller = "ww 1 1.1: 1 c: \n\t1 y (/l.so)\n\t2 [unknown] ([unknown])\n\n"
                                   "ww 1 1.2: 1 c: \n\t2 [unknown] ([unknown])\n\n";
    got = fold_str(leaf_then_caller, &ours, &st);
    is_int(st.jit_leaf, 1, "cached line as leaf: counted as a JIT leaf");
    free(got);
    {
        char *big_in = NULL;
        size_t big_len = 0;
        FILE *bm = open_memstream(&big_in, &big_len);
        for (int i = 0; i < 100000; i++)
            fprintf(bm, "ww 1 1.%d: 1 c: \n\t%x f%d (/l.so)\n\t1 main (/l.so)\n\n", i, i,
                    i % 50000);
        fclose(bm);
        got = fold_str(big_in, &ours, &st);
        is_int(st.stacks, 50000, "past the cache's bounds: 50000 distinct stacks");
        ok(got && strstr(got, "\nww;main;f49999 2\n") && strstr(got, "ww;main;f0 2\n"),
           "... each line folded right");
        free(got);
        free(big_in);
    }

    /* 9. Sort order: bytewise, a prefix first. */
    check("ab 1 1.1: 1 c: \n\t1 b (/x)\n\n"
          "ab 1 1.1: 1 c: \n\t1 \xc3\xa9 (/x)\n\n"
          "ab 1 1.1: 1 c: \n\t1 c (/x)\n\t1 b (/x)\n\n"
          "ab 1 1.1: 1 c: \n\t1 a (/x)\n\n",
          &ours, "ab;a 1\nab;b 1\nab;b;c 1\nab;\xc3\xa9 1\n", "bytewise sort");

    /* 10. Stats and root_for_pid. */
    const char *mix = "w 5/6 1.1: 1 c: \n\t1 long A.b(int) (/tmp/perf-5.map)\n\t2 x (/lib/l.so)\n\n"
                      "w 5/6 1.2: 1 c: \n\t1 [unknown] (/tmp/perf-5.map)\n\n"
                      "w 5/6 1.3: 1 c: \n\t1 [unknown] ([unknown])\n\n"
                      "w 5/6 1.4: 1 c: \n\t1 y (/lib/l.so)\n\n"
                      "w 9 1.5: 1 c: \n\t1 y (/lib/l.so)\n\n";
    got = fold_str(mix, &ours, &st);
    is_int(st.samples, 5, "stats: samples");
    is_int(st.jit_leaf, 3, "stats: JIT leaves (perf map or unknown dso)");
    is_int(st.jit_leaf_named, 1, "stats: named JIT leaves");
    is_int(st.stacks, 4, "stats: distinct stacks");
    free(got);
    fold_opts rooted = ours;
    rooted.root_for_pid = root_cb;
    check(mix, &rooted,
          "jvm:5?;w;[perf-5.map] 1\njvm:5?;w;[unknown] 1\njvm:5?;w;x;A.b 1\njvm:5?;w;y 1\n"
          "jvm:9?;w;y 1\n",
          "root_for_pid gets the pid (or the tid), its name is sanitised");

    folder *f = folder_new(&ours);
    flame_err err = FLAME_ERR_INIT;
    folder_feed(f, "w 1 1.1: 1 c: ", 14, &err);
    folder_feed(f, "\t1 f (/x)", 9, &err);
    folder_feed(f, "", 0, &err);
    folder_feed(f, "w 1 1.1: 1 c: ", 14, &err);
    folder_feed(f, "\t1 g (/x)", 9, &err);
    folder_finish(f, &err);
    int calls = 0;
    is_int(folder_each(f, stop_after_one, &calls), 7,
           "folder_each returns the callback's stop value");
    is_int(calls, 1, "... after one call");
    folder_free(f);

    /* 11. Hostile input: bounded, linear, no crash. */
    size_t big = 3 * FOLD_MAX_LINE;
    char *line = malloc(big + 64);
    memset(line, ' ', big + 64);
    line[0] = 'a';
    memcpy(line + big, "x (y)", 5);
    for (int mode = 0; mode < 2; mode++) {
        memset(line, ' ', big + 64);
        line[0] = 'a';
        memcpy(line + big, "x (y)", 5);
        f = folder_new(mode ? &compat : &ours);
        double t0 = now();
        int r = folder_feed(f, line, big + 5, &err);
        for (size_t i = 0; i < big; i++)
            line[i] = (char)(i % 3 == 0 ? '(' : i % 3 == 1 ? ' ' : '1');
        r |= folder_feed(f, line, big, &err);
        for (size_t i = 0; i < big; i++)
            line[i] = (char)(i % 4 == 0 ? ' ' : i % 4 == 1 ? '1' : i % 4 == 2 ? '.' : '2');
        r |= folder_feed(f, line, big, &err);
        memset(line, ':', big);
        r |= folder_feed(f, line, big, &err);
        double dt = now() - t0;
        ok(r == 0 && dt < 1.0, "pathological lines are linear (%s: %.3f s)",
           mode ? "compat" : "ours", dt);
        folder_free(f);
    }

    /* a huge frame name is cut; a huge stack keeps its root and fits a protocol line */
    char *in = NULL;
    size_t inlen = 0;
    FILE *m = open_memstream(&in, &inlen);
    fprintf(m, "deep 1 1.1: 1 c: \n\t1 ");
    for (int i = 0; i < 3000; i++)
        fputc('N', m);
    fprintf(m, " (/x)\n");
    for (int i = 0; i < 20000; i++)
        fprintf(m, "\t%x frame_%d_%0200d (/lib/x.so)\n", i, i, 0);
    fprintf(m, "\t1 root_fn (/lib/x.so)\n\n");
    fclose(m);
    got = fold_str(in, &ours, &st);
    ok(got && strlen(got) < 1024 * 1024, "deep stack fits a 1 MiB line (%zu bytes)",
       got ? strlen(got) : 0);
    ok(got && strncmp(got, "deep;root_fn;frame_19999_", 25) == 0, "... keeps the root side");
    ok(got && strstr(got, ";[truncated] 1\n"), "... marks the cut");
    is_int(st.truncated, 1, "... counted");
    free(got);
    free(in);
    got = fold_str("w 1 1.1: 1 c: \n\t1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA (/x)\n\n", &ours,
                   NULL);
    free(got);
    {
        char name[FOLD_MAX_FRAME * 3];
        memset(name, 'Q', sizeof name);
        char *txt = NULL;
        if (asprintf(&txt, "w 1 1.1: 1 c: \n\t1 %.*s (/x)\n\n", (int)sizeof name, name) > 0) {
            got = fold_str(txt, &ours, NULL);
            ok(got && strlen(got) == 2 + FOLD_MAX_FRAME + 3 + 3,
               "long frame name cut to %d + '...'", FOLD_MAX_FRAME);
            free(got);
            free(txt);
        }
    }

    /* random garbage, with and without compat: must not crash (ASan/UBSan watch) */
    unsigned seed = 12345;
    for (int round = 0; round < 2; round++) {
        f = folder_new(round ? &compat : &ours);
        for (int i = 0; i < 20000; i++) {
            char g[200];
            size_t n = (seed = seed * 1103515245 + 12345) % sizeof g;
            for (size_t k = 0; k < n; k++) {
                seed = seed * 1103515245 + 12345;
                static const char alpha[] = " \t(:)[]/;-0123456789abcL.>+x\x01\xff";
                g[k] = alpha[(seed >> 16) % (sizeof alpha - 1)];
            }
            folder_feed(f, g, n, &err);
        }
        folder_finish(f, &err);
        char *buf = NULL;
        size_t blen = 0;
        m = open_memstream(&buf, &blen);
        ok(folder_write(f, m, &err) == 0, "garbage folds without error (%s)",
           round ? "compat" : "ours");
        fclose(m);
        bool clean = true;
        for (size_t k = 0; k < blen; k++)
            if (((unsigned char)buf[k] < 0x20 && buf[k] != '\n') || buf[k] == 0x7f)
                clean = false;
        ok(clean, "... and the output has no control bytes");
        free(buf);
        folder_free(f);
    }
    free(line);

    /* 12. The JDK 17 capture: Perl's output with exactly our documented changes. */
    char *jdk_in = NULL;
    if (asprintf(&jdk_in, "%s/inputs/perf-jdk17-container-work.txt", corpus_dir()) > 0) {
        got = fold_path(jdk_in, &ours, &st);
        char *want = slurp("tests/data/fold/jdk17-container-work.improved.txt", NULL);
        ok(got && want && strcmp(got, want) == 0, "JDK 17 capture equals the improved reference");
        if (got && want && strcmp(got, want))
            show_first_diff(got, want);
        is_int(st.samples, 658, "JDK 17: 658 samples");
        is_int(st.jit_leaf, 657, "JDK 17: 652 leaves in the perf map + 5 in unknown code");
        is_int(st.jit_leaf_named, 652, "JDK 17: 652 named JIT leaves");
        free(got);
        free(want);
        free(jdk_in);
    }
    /* 9. host roots and the timeline hook */
    fold_opts host = ours;
    host.root_for_task = task_cb;
    host.on_sample = sample_cb;
    check("C2 CompilerThre 4536/4584 [001] 10314749.0025:  1 cpu-clock: \n\t 1 f (/x)\n\n", &host,
          "ctr;proc 4536;C2_CompilerThre 4584;f 1\n", "host: container;process;thread roots");
    ok(seen_sample.n == 1 && seen_sample.pid == 4536 && seen_sample.tid == 4584 &&
           seen_sample.cpu == 1 && seen_sample.us == 10314749002500ull,
       "host: the sample's pid, tid, CPU and time (us, from a 4-digit fraction)");
    ok(task_us == 10314749002500ull, "host: the roots are chosen knowing the sample's time");
    check("java 99/100 [000] 1.5: 1 cpu-clock: \n\t 1 f (/x)\n\n", &host, "java;f 1\n",
          "host: no root from the hook: the usual process name");
    check("java 7/8 2.000001: 1 cpu-clock: \n\t 1 f (/x)\n\n", &host, "ctr;proc 7;java 8;f 1\n",
          "host: without a [cpu] token");
    ok(seen_sample.cpu == -1 && seen_sample.us == 2000001, "host: no CPU printed: -1");
    return tap_done();
}
