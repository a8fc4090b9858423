/* sidecar/recorder/offcpu.c, its pure parts: a bpf-output sample rewritten in the recorder's
 * layout (RAW out, user ip, malformed records refused), the probability the rate control sets,
 * and the held samples: weighted by their time off CPU / probability once the done table has
 * their interval, dropped when shorter than --offcpu-min or when their entry was overwritten,
 * written with the time until the end when their thread is still off CPU, bounded in number. */
#include <linux/perf_event.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/recorder/bpf/offcpu.h"
#include "flame/fold.h"
#include "sidecar/recorder/offcpu.h"
#include "tests/unit/tap.h"

static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A bpf-output sample: ip (kernel), pid/tid, time, cpu, period 1, chain [USER, a, b], RAW
 * {seq, threshold, ts, runnable} (size 36: 4 + 36 = 40), then 16 bytes that stand for
 * REGS/STACK. */
static size_t make_sample_state(unsigned char *r, uint64_t seq, uint64_t thr, uint64_t ts,
                                uint64_t runnable)
{
    memset(r, 0, 256);
    size_t n = 8;
    put64(r + n, 0xffffffff81000000ull); /* ip: the tracepoint's kernel address */
    n += 8;
    uint32_t pid = 7, tid = 9;
    memcpy(r + n, &pid, 4);
    memcpy(r + n + 4, &tid, 4);
    n += 8;
    put64(r + n, 1000); /* time */
    n += 8;
    n += 8;          /* cpu, res */
    put64(r + n, 1); /* period */
    n += 8;
    put64(r + n, 3); /* nr */
    n += 8;
    put64(r + n, (uint64_t)PERF_CONTEXT_USER);
    put64(r + n + 8, 0x7f0000001000ull);
    put64(r + n + 16, 0x7f0000002000ull);
    n += 24;
    uint32_t rsz = 36;
    memcpy(r + n, &rsz, 4);
    put64(r + n + 4, seq);
    put64(r + n + 12, thr);
    put64(r + n + 20, ts);
    put64(r + n + 28, runnable);
    n += 40;
    put64(r + n, 0xabcdef);
    put64(r + n + 8, 0x123456);
    n += 16;
    uint32_t type = PERF_RECORD_SAMPLE;
    memcpy(r, &type, 4);
    uint16_t misc = PERF_RECORD_MISC_KERNEL, sz = (uint16_t)n;
    memcpy(r + 4, &misc, 2);
    memcpy(r + 6, &sz, 2);
    return n;
}

static size_t make_sample(unsigned char *r, uint64_t seq, uint64_t thr, uint64_t ts)
{
    return make_sample_state(r, seq, thr, ts, 0);
}

static void test_convert(void)
{
    unsigned char r[256], out[65536];
    size_t n = make_sample(r, 5, OFFCPU_ALWAYS, 123);
    sc_offcpu_raw raw;
    size_t m = sc_offcpu_convert(r, n, out, &raw);
    is_int(m, n - 40, "RAW taken out: 40 bytes fewer");
    is_int(raw.seq, 5, "seq from RAW");
    is_int(raw.threshold, OFFCPU_ALWAYS, "threshold from RAW");
    is_int(raw.ts, 123, "switch-out time from RAW");
    is_int(get64(out + 8), 0x7f0000001000ull, "ip: the first user address, not the kernel's");
    uint16_t misc, sz;
    memcpy(&misc, out + 4, 2);
    memcpy(&sz, out + 6, 2);
    is_int(misc, PERF_RECORD_MISC_USER, "misc: user");
    is_int(sz, m, "header size updated");
    is_int(get64(out + m - 16), 0xabcdef, "what followed RAW follows the chain");
    is_int(get64(out + 72), 0x7f0000002000ull, "chain kept");

    is_int(sc_offcpu_convert(r, 40, out, &raw), 0, "truncated: refused");
    unsigned char bad[256];
    memcpy(bad, r, n);
    put64(bad + 48, 1000); /* nr beyond the record */
    is_int(sc_offcpu_convert(bad, n, out, &raw), 0, "chain longer than the record: refused");
    memcpy(bad, r, n);
    uint32_t huge = 4000;
    memcpy(bad + 56 + 24, &huge, 4);
    is_int(sc_offcpu_convert(bad, n, out, &raw), 0, "RAW longer than the record: refused");
    memcpy(bad, r, n);
    put64(bad + 56, 0x1234); /* no PERF_CONTEXT_USER */
    is_int(sc_offcpu_convert(bad, n, out, &raw), 0, "no user chain: refused");
    memcpy(bad, r, n);
    put64(bad + 56 + 24 + 12, 0); /* threshold 0 */
    is_int(sc_offcpu_convert(bad, n, out, &raw), 0, "threshold 0 (not the program's): refused");
    memcpy(bad, r, n);
    bad[0] = PERF_RECORD_LOST;
    is_int(sc_offcpu_convert(bad, n, out, &raw), 0, "not a sample: refused");
}

static void test_threshold(void)
{
    is_int(sc_offcpu_threshold(100, 1000, 500), OFFCPU_ALWAYS, "under the rate: every one");
    is_int(sc_offcpu_threshold(0, 100, 500), OFFCPU_ALWAYS, "no switches: every one");
    uint64_t t = sc_offcpu_threshold(80000, 100, 500); /* 800k/s */
    ok(t > OFFCPU_ALWAYS / 1700 && t < OFFCPU_ALWAYS / 1500, "800k/s at 500/s: 1 in 1600 (%llu)",
       (unsigned long long)t);
    is_int(sc_offcpu_threshold(UINT64_MAX / 2, 1, 1), OFFCPU_MIN_THRESHOLD,
           "never below the gap draw's least (never 0, which would mean paused)");
    is_int(sc_offcpu_threshold(10, 0, 500), OFFCPU_ALWAYS, "no time: every one");
}

/* The first probability, from the switch-outs the paused program counted before the start: a
 * JVM at ~1 M switches/s is no longer sampled at p = 1 until the first steering (~10k samples). */
static void test_first_threshold(void)
{
    uint64_t t = sc_offcpu_first_threshold(2200, 2000000, SC_OFFCPU_RATE); /* 1.1 M/s */
    ok(t > OFFCPU_ALWAYS / 4500 && t < OFFCPU_ALWAYS / 4300,
       "1.1 M/s counted in 2 ms, 250/s: 1 in 4400 (%llu)", (unsigned long long)t);
    t = sc_offcpu_first_threshold(2000, 1500000, SC_OFFCPU_RATE); /* 1.33 M/s */
    ok(t > OFFCPU_ALWAYS / 5400 && t < OFFCPU_ALWAYS / 5270,
       "counted in 1.5 ms: not rounded to whole ms (1 in 5333: %llu)", (unsigned long long)t);
    is_int(sc_offcpu_first_threshold(SC_OFFCPU_CALIB_MIN - 1, 2000000, SC_OFFCPU_RATE),
           OFFCPU_ALWAYS, "too few counted: every one until the first steering");
    is_int(sc_offcpu_first_threshold(5000, 500000, SC_OFFCPU_RATE), OFFCPU_ALWAYS,
           "counted for less than a millisecond: every one");
    is_int(sc_offcpu_first_threshold(100, 2000000000, SC_OFFCPU_RATE), OFFCPU_ALWAYS,
           "under the rate: every one");
    ok(SC_OFFCPU_RATE_PREEMPTED < SC_OFFCPU_RATE, "preemptions sampled at a lower rate (%d/s)",
       SC_OFFCPU_RATE_PREEMPTED);
}

/* The program's gap draw (bpf/offcpu.h offcpu_gap, the same code) over 2^20 evenly spread
 * random numbers: the mean gap is 1/p, P(gap = 1) is p and P(gap > 2/p) is (1-p)^(2/p), i.e.
 * each switch-out is sampled with probability p, independently (geometric gaps). */
static void test_gap(void)
{
    uint32_t tab[OFFCPU_LOG2_TAB + 1];
    sc_offcpu_log2tab(tab);
    is_int(tab[0], 0, "log2 table: log2 1 = 0");
    is_int(tab[OFFCPU_LOG2_TAB], 1u << 20, "log2 table: log2 2 = 1 (2^20)");
    is_int(offcpu_gap(UINT32_MAX, 1ull << 30, tab), 1, "U = 1: the next one");
    const uint64_t thr[] = {OFFCPU_ALWAYS / 2, OFFCPU_ALWAYS / 10, OFFCPU_ALWAYS / 4000,
                            OFFCPU_ALWAYS / 1000000, OFFCPU_MIN_THRESHOLD};
    for (size_t k = 0; k < sizeof thr / sizeof thr[0]; k++) {
        double p = (double)thr[k] / (double)OFFCPU_ALWAYS, sum = 0, ones = 0, far = 0;
        uint64_t kfix = sc_offcpu_kfix(thr[k]), lim = (uint64_t)(2.0 / p), n = 1u << 20;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t g = offcpu_gap((uint32_t)(i << 12 | 0x800), kfix, tab);
            sum += (double)g;
            ones += g == 1;
            far += g > lim;
        }
        double mean = sum / (double)n, want_far = pow(1 - p, (double)lim);
        ok(fabs(mean * p - 1) < 0.002, "p = %g: mean gap %.1f, 1/p = %.1f", p, mean, 1 / p);
        ok(fabs(ones / (double)n - p) < 0.001 + p / 100, "p = %g: P(gap = 1) %.5f", p,
           ones / (double)n);
        ok(fabs(far / (double)n - want_far) < 0.002, "p = %g: P(gap > 2/p) %.4f, want %.4f", p,
           far / (double)n, want_far);
    }
    is_int(sc_offcpu_kfix(OFFCPU_ALWAYS), 0, "every switch-out: no draw");
    ok(sc_offcpu_kfix(1) == sc_offcpu_kfix(OFFCPU_MIN_THRESHOLD) &&
           sc_offcpu_kfix(OFFCPU_MIN_THRESHOLD) < (1ull << 38),
       "kfix bounded (the draw's product stays in 64 bits)");
}

typedef struct sink {
    int n;
    uint64_t period[8], time[8];
} sink;

static int collect(void *ctx, const unsigned char *r, size_t n)
{
    sink *s = ctx;
    (void)n;
    if (s->n < 8) {
        s->period[s->n] = get64(r + 40);
        s->time[s->n] = get64(r + 24);
    }
    s->n++;
    return 0;
}

static uint64_t done_entry(uint64_t seq, uint64_t d)
{
    return (seq & 0xffffff) << OFFCPU_DELTA_BITS | d;
}

static void test_pend(void)
{
    static uint64_t done[OFFCPU_DONE];
    static sc_offcpu_pend p;
    memset(&p, 0, sizeof p);
    p.min_ns = 1000000; /* --offcpu-min 1ms */
    unsigned char r[256], out[65536];
    sc_offcpu_raw raw;
    size_t n = make_sample(r, 1, OFFCPU_ALWAYS, 500);
    size_t m = sc_offcpu_convert(r, n, out, &raw);
    is_int(sc_offcpu_pend_add(&p, out, m, &raw), 0, "held");
    sink s = {0};
    sc_offcpu_pend_pair(&p, done, 1, false, 0, collect, &s);
    is_int(s.n, 0, "not back yet: still held");
    is_int(p.n, 1, "one held");
    done[1] = done_entry(1, 8000000);
    sc_offcpu_pend_pair(&p, done, 1, false, 0, collect, &s);
    is_int(s.n, 1, "back: written");
    is_int(s.period[0], 8000000, "period = its 8 ms off CPU (probability 1)");
    is_int(s.time[0], 1000 + 8000000, "time moved to the switch-in");
    is_int(p.n, 0, "none held");

    /* probability 1/4: weight x4 */
    n = make_sample(r, 2, OFFCPU_ALWAYS / 4, 500);
    m = sc_offcpu_convert(r, n, out, &raw);
    sc_offcpu_pend_add(&p, out, m, &raw);
    done[2] = done_entry(2, 3000000);
    sc_offcpu_pend_pair(&p, done, 2, false, 0, collect, &s);
    is_int(s.period[1] & FOLD_EVENTS_VALUE_MAX, 12000000, "sampled 1 in 4: stands for 4 x 3 ms");
    is_int(s.period[1] >> FOLD_EVENTS_SHIFT, 2 * FOLD_EVENTS_STEPS,
           "... and for 4 switch-outs (its event code: 2^2)");

    /* shorter than --offcpu-min */
    n = make_sample(r, 3, OFFCPU_ALWAYS, 500);
    m = sc_offcpu_convert(r, n, out, &raw);
    sc_offcpu_pend_add(&p, out, m, &raw);
    done[3] = done_entry(3, 999999);
    sc_offcpu_pend_pair(&p, done, 3, false, 0, collect, &s);
    is_int(s.n, 2, "999 us < 1 ms: not written");
    is_int(p.st.short_n, 1, "counted short");

    /* an entry of another seq in its slot (seq + OFFCPU_DONE): not taken */
    n = make_sample(r, 4, OFFCPU_ALWAYS, 500);
    m = sc_offcpu_convert(r, n, out, &raw);
    sc_offcpu_pend_add(&p, out, m, &raw);
    done[4] = done_entry(4 + OFFCPU_DONE, 5000000);
    sc_offcpu_pend_pair(&p, done, 10, false, 0, collect, &s);
    is_int(s.n, 2, "another interval's entry: not taken");
    sc_offcpu_pend_pair(&p, done, 4 + OFFCPU_DONE, false, 0, collect, &s);
    is_int(p.st.stale, 1, "its slot reused since: dropped as stale");
    is_int(p.n, 0, "none held");

    /* still off CPU at the end: the time until then */
    n = make_sample(r, 5, OFFCPU_ALWAYS, 1000000000ull);
    m = sc_offcpu_convert(r, n, out, &raw);
    sc_offcpu_pend_add(&p, out, m, &raw);
    sc_offcpu_pend_pair(&p, done, 5, true, 1000000000ull + 70000000, collect, &s);
    is_int(s.n, 3, "at the end: written");
    is_int(s.period[2], 70000000, "with its 70 ms off CPU until the end");
    is_int(p.st.at_end, 1, "counted at_end");

    /* bounded */
    int added = 0;
    for (int i = 0; i < SC_OFFCPU_PENDING + 5; i++)
        added += sc_offcpu_pend_add(&p, out, m, &raw) == 0;
    is_int(added, SC_OFFCPU_PENDING, "at most SC_OFFCPU_PENDING held");
    is_int(p.st.full, 5, "the rest dropped and counted");
    sc_offcpu_pend_free(&p);
    is_int(p.n, 0, "freed");
    is_int(p.st.weight_ns, 8000000 + 12000000 + 70000000, "weights summed");
}

/* wall: the thread's state in the two low bits of the period (offcpu.h SC_OFFCPU_TAG_*) */
static void test_tags(void)
{
    static uint64_t done[OFFCPU_DONE];
    static sc_offcpu_pend p;
    unsigned char r[256], out[65536];
    sc_offcpu_raw raw;
    sink s = {0};
    for (int tags = 0; tags < 2; tags++) {
        memset(&p, 0, sizeof p);
        p.tags = tags;
        for (uint64_t q = 1; q <= 2; q++) {
            size_t n = make_sample_state(r, q, OFFCPU_ALWAYS, 500, q == 1);
            size_t m = sc_offcpu_convert(r, n, out, &raw);
            is_int(raw.runnable, q == 1, "runnable read from RAW (%d)", (int)q);
            sc_offcpu_pend_add(&p, out, m, &raw);
            done[q] = done_entry(q, 8000001);
        }
        sc_offcpu_pend_pair(&p, done, 2, false, 0, collect, &s);
    }
    is_int(s.n, 4, "all written");
    is_int(s.period[0] & FOLD_EVENTS_VALUE_MAX, 8000001, "no tags (offcpu): the time as it is");
    is_int(s.period[1] & FOLD_EVENTS_VALUE_MAX, 8000001, "no tags (offcpu): the time as it is (2)");
    /* pend_pair takes from the end when it removes: either order */
    uint64_t a = s.period[2] & FOLD_EVENTS_VALUE_MAX, b = s.period[3] & FOLD_EVENTS_VALUE_MAX;
    uint64_t ca = s.period[2] >> FOLD_EVENTS_SHIFT, cb = s.period[3] >> FOLD_EVENTS_SHIFT;
    if (a > b) {
        uint64_t t = a, tc = ca;
        a = b, ca = cb, b = t, cb = tc;
    }
    is_int(a, 8000000 | SC_OFFCPU_TAG_RUNNABLE, "wall: preempted: runnable in the low bits");
    is_int(b, 8000000 | SC_OFFCPU_TAG_SLEEPING, "wall: slept: sleeping in the low bits");
    is_int(ca, FOLD_EVENTS_NONE, "preempted: no event (it waited for a CPU, not a wakeup)");
    is_int(cb, 0, "slept at p = 1: one event");
    is_int(sc_offcpu_tag(10101010, SC_OFFCPU_TAG_RUNNING), 10101009,
           "a cpu-clock period (99 Hz) tagged running");
    is_int(sc_offcpu_tag(2, SC_OFFCPU_TAG_SLEEPING), 7, "a tiny period keeps a weight");
}

/* the switch-outs a sample stands for (1/p), as the event code in its period's top bits */
static void test_events(void)
{
    is_int(sc_offcpu_events_code(OFFCPU_ALWAYS, 0.99), 0, "p = 1: code 0 (one event)");
    is_int(sc_offcpu_events_code(OFFCPU_ALWAYS / 4, 0.99), 256, "p = 1/4: exactly 2^2, whatever u");
    is_int(sc_offcpu_events_code(1, 0.5), 24 * 128, "below the program's floor: 2^24 at most");
    ok(24 * 128 < 1 << FOLD_EVENTS_BITS, "the largest code fits its bits");
    /* p = 1/3, 0.37, 1/1000: the code's events average to 1/p over u */
    const uint64_t th[] = {OFFCPU_ALWAYS / 3, (uint64_t)(0.37 * (double)OFFCPU_ALWAYS),
                           OFFCPU_ALWAYS / 1000};
    for (size_t i = 0; i < sizeof th / sizeof th[0]; i++) {
        double want = (double)OFFCPU_ALWAYS / (double)th[i], sum = 0, lo = 1e30, hi = 0;
        int n = 100000;
        for (int k = 0; k < n; k++) {
            double e = fold_events_of(sc_offcpu_events_code(th[i], (k + 0.5) / n));
            sum += e;
            lo = e < lo ? e : lo;
            hi = e > hi ? e : hi;
        }
        ok(fabs(sum / n / want - 1) < 1e-4, "1/p = %.3f: the codes' mean %.5f", want, sum / n);
        ok(lo <= want && hi >= want && hi / lo < 1.006,
           "... each within one step of it (%.4f-%.4f)", lo, hi);
    }
    /* the period: weight below, code above; a weight too large for its bits capped */
    uint64_t per = sc_offcpu_with_events(12000003, 300);
    is_int(per & FOLD_EVENTS_VALUE_MAX, 12000003, "the weight (and its tag) below the code");
    is_int(per >> FOLD_EVENTS_SHIFT, 300, "the code above");
    per = sc_offcpu_with_events(UINT64_MAX, 5);
    ok((per & FOLD_EVENTS_VALUE_MAX) == FOLD_EVENTS_VALUE_MAX && per >> FOLD_EVENTS_SHIFT == 5,
       "a weight past 2^52 ns (52 days) capped, the code kept");

    /* through the held samples: a 1-in-3 sample's period carries its weight and its code */
    static uint64_t done[OFFCPU_DONE];
    static sc_offcpu_pend p;
    memset(&p, 0, sizeof p);
    p.tags = true;
    unsigned char r[256], out[65536];
    sc_offcpu_raw raw;
    sink s = {0};
    double sum = 0;
    for (uint64_t q = 1; q <= 8; q++) {
        size_t n = make_sample(r, q, OFFCPU_ALWAYS / 3, 500);
        size_t m = sc_offcpu_convert(r, n, out, &raw);
        sc_offcpu_pend_add(&p, out, m, &raw);
        done[q] = done_entry(q, 1000000);
    }
    sc_offcpu_pend_pair(&p, done, 8, false, 0, collect, &s);
    is_int(s.n, 8, "all written");
    bool weights = true;
    for (int i = 0; i < 8; i++) {
        weights &= (s.period[i] & FOLD_EVENTS_VALUE_MAX) == (3000000 | SC_OFFCPU_TAG_SLEEPING);
        unsigned c = (unsigned)(s.period[i] >> FOLD_EVENTS_SHIFT);
        sum += fold_events_of(c);
        weights &= c == 202 || c == 203; /* 128 log2(3) = 202.9 */
    }
    ok(weights, "1 ms at p = 1/3: 3 ms and the sleeping tag, code 202 or 203 (events 2.98, 3.00)");
    is_int(p.st.weight_ns, 8 * 3000000 + 8 * SC_OFFCPU_TAG_SLEEPING, "the stats: weights only");
    ok(sum > 8 * 2.97 && sum < 8 * 3.02, "8 samples: ~24 events (%.3f)", sum);
}

int main(void)
{
    test_convert();
    test_threshold();
    test_first_threshold();
    test_gap();
    test_pend();
    test_tags();
    test_events();
    return tap_done();
}
