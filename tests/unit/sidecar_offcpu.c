/* sidecar/recorder/offcpu.c, its pure parts: a bpf-output sample rewritten in the recorder's
 * layout (RAW out, user ip, malformed records refused), the probability the rate control sets,
 * and the held samples: weighted by their time off CPU / probability once the done table has
 * their interval, dropped when shorter than --offcpu-min or when their entry was overwritten,
 * written with the time until the end when their thread is still off CPU, bounded in number. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/recorder/bpf/offcpu.h"
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
 * {seq, threshold, ts} (size 28: 4 + 28 = 32), then 16 bytes that stand for REGS/STACK. */
static size_t make_sample(unsigned char *r, uint64_t seq, uint64_t thr, uint64_t ts)
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
    uint32_t rsz = 28;
    memcpy(r + n, &rsz, 4);
    put64(r + n + 4, seq);
    put64(r + n + 12, thr);
    put64(r + n + 20, ts);
    n += 32;
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

static void test_convert(void)
{
    unsigned char r[256], out[65536];
    size_t n = make_sample(r, 5, OFFCPU_ALWAYS, 123);
    sc_offcpu_raw raw;
    size_t m = sc_offcpu_convert(r, n, out, &raw);
    is_int(m, n - 32, "RAW taken out: 32 bytes fewer");
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
    ok(sc_offcpu_threshold(UINT64_MAX / 2, 1, 1) >= 1, "never 0 (would mean paused)");
    is_int(sc_offcpu_threshold(10, 0, 500), OFFCPU_ALWAYS, "no time: every one");
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
    is_int(s.period[1], 12000000, "sampled 1 in 4: stands for 4 x 3 ms");

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

int main(void)
{
    test_convert();
    test_threshold();
    test_pend();
    return tap_done();
}
