/* sidecar/recorder/threadwalk.c: perf's per-thread dwarf-mode stream rewritten for perf script.
 * The attribute loses REGS_USER/STACK_USER; samples of a process that is no JVM of ours keep
 * their fields but lose the registers and the stack; fields after the stack survive; the stream
 * is cut anywhere (byte by byte) and still comes out the same; malformed samples are dropped;
 * garbage never crashes (ASan) and a stream that is not perf's passes through untouched. */
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/recorder/interp.h"
#include "sidecar/recorder/threadwalk.h"
#include "tests/unit/tap.h"

#define STYPE                                                                                      \
    (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |     \
     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | \
     PERF_SAMPLE_DATA_SRC)
#define RMASK 0xff0fffull /* perf's dwarf mode on x86-64 */

typedef struct sink {
    unsigned char *b;
    size_t n, cap;
} sink;

static int put(void *ctx, const unsigned char *p, size_t n)
{
    sink *s = ctx;
    if (s->n + n > s->cap) {
        s->cap = (s->n + n) * 2;
        s->b = realloc(s->b, s->cap);
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
    return 0;
}

static size_t attr_rec(unsigned char *r)
{
    struct perf_event_attr a = {.size = sizeof a,
                                .sample_type = STYPE,
                                .sample_regs_user = RMASK,
                                .sample_stack_user = 16384,
                                .sample_id_all = 1};
    size_t size = 8 + sizeof a + 8;
    memset(r, 0, size);
    uint32_t type = 64;
    uint16_t sz = (uint16_t)size;
    memcpy(r, &type, 4);
    memcpy(r + 6, &sz, 2);
    memcpy(r + 8, &a, sizeof a);
    uint64_t id = 77;
    memcpy(r + 8 + sizeof a, &id, 8);
    return size;
}

/* ip, pid/tid, time, addr, id, period, chain [USER marker, 2 ips], regs (abi + 20), stack 64
 * + dyn, data_src */
static size_t sample_rec(unsigned char *r, uint32_t pid, uint64_t data_src)
{
    size_t p = 8;
    uint64_t w[] = {0x1234, (uint64_t)pid | (uint64_t)pid << 32, 99,     0,     77, 10101,
                    3,      (uint64_t)PERF_CONTEXT_USER,         0x1234, 0x5678};
    memcpy(r + p, w, sizeof w);
    p += sizeof w;
    uint64_t abi = 2;
    memcpy(r + p, &abi, 8);
    p += 8;
    for (int i = 0; i < __builtin_popcountll(RMASK); i++, p += 8)
        memcpy(r + p, &(uint64_t){0x7000 + (uint64_t)i}, 8);
    uint64_t ss = 64;
    memcpy(r + p, &ss, 8);
    memset(r + p + 8, 0xab, 64);
    memcpy(r + p + 8 + 64, &ss, 8);
    p += 8 + 64 + 8;
    memcpy(r + p, &data_src, 8);
    p += 8;
    uint32_t type = PERF_RECORD_SAMPLE;
    uint16_t sz = (uint16_t)p;
    memset(r, 0, 8);
    memcpy(r, &type, 4);
    memcpy(r + 6, &sz, 2);
    return p;
}

static size_t stream(unsigned char *b)
{
    size_t n = 0;
    memcpy(b, "PERFILE2", 8);
    uint64_t hs = 16;
    memcpy(b + 8, &hs, 8);
    n = 16;
    n += attr_rec(b + n);
    n += sample_rec(b + n, 42, 0xdada);
    unsigned char fr[8] = {68, 0, 0, 0, 0, 0, 8, 0}; /* FINISHED_ROUND */
    memcpy(b + n, fr, 8);
    n += 8;
    n += sample_rec(b + n, 43, 0xbeef);
    return n;
}

int main(void)
{
    static unsigned char in[65536];
    size_t n = stream(in);
    pid_t pid = 42;
    int mem = -1, names = -1;
    sc_interp *ip = sc_interp_new(&pid, &mem, &names, 1);
    sc_interp_start(ip);

    static sc_tw t;
    sc_tw_init(&t, ip);
    sink out = {0};
    ok(sc_tw_feed(&t, in, n, put, &out) == 0, "the stream is fed");
    ok(out.n > 16 && !memcmp(out.b, "PERFILE2", 8), "the pipe header passes");
    struct perf_event_attr a;
    memcpy(&a, out.b + 16 + 8, sizeof a);
    ok(!(a.sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)) &&
           a.sample_regs_user == 0 && a.sample_stack_user == 0 &&
           (a.sample_type & PERF_SAMPLE_DATA_SRC),
       "the attribute: no user registers or stack any more, the rest as it was");
    ok(t.stype == STYPE && t.rmask == RMASK && t.id == 77 && t.id_all,
       "the samples' layout is learnt from it");
    size_t at = 16 + 8 + sizeof a + 8;
    uint16_t s1;
    memcpy(&s1, out.b + at + 6, 2);
    size_t want = 8 + 6 * 8 + 8 + 3 * 8 + 8;
    is_int(s1, (long long)want, "a sample of another process: registers and stack gone");
    uint64_t ds;
    memcpy(&ds, out.b + at + s1 - 8, 8);
    ok(ds == 0xdada, "the field after the stack (data_src) kept");
    uint64_t nr, c2;
    memcpy(&nr, out.b + at + 8 + 6 * 8, 8);
    memcpy(&c2, out.b + at + 8 + 6 * 8 + 8 + 16, 8);
    ok(nr == 3 && c2 == 0x5678, "its callchain as it was");
    is_int((long long)out.n, (long long)(at + 2 * want + 8), "both samples and the round out");

    /* the same stream cut into one-byte pieces comes out the same */
    static sc_tw t2;
    sc_tw_init(&t2, ip);
    sink o2 = {0};
    for (size_t i = 0; i < n; i++)
        sc_tw_feed(&t2, in + i, 1, put, &o2);
    ok(o2.n == out.n && !memcmp(o2.b, out.b, out.n), "fed a byte at a time: the same output");

    /* a truncated sample (its stack size beyond the record) is dropped */
    static sc_tw t3;
    sc_tw_init(&t3, ip);
    static unsigned char bad[65536];
    memcpy(bad, in, n);
    uint64_t huge = 1u << 20;
    size_t sp = 16 + 8 + sizeof a + 8 + 8 + 10 * 8 + 8 + 8 * (size_t)__builtin_popcountll(RMASK);
    memcpy(bad + sp, &huge, 8);
    sink o3 = {0};
    sc_tw_feed(&t3, bad, n, put, &o3);
    ok(t3.bad == 1 && o3.n == out.n - want, "a malformed sample is dropped, the rest passes");

    /* not perf's stream: passed on as it is */
    static sc_tw t4;
    sc_tw_init(&t4, ip);
    sink o4 = {0};
    sc_tw_feed(&t4, (const unsigned char *)"hello, world, not a perf stream", 31, put, &o4);
    ok(o4.n == 31 && t4.passthrough, "a stream that is not perf's passes through");

    srand(26);
    static unsigned char g[4096];
    for (int it = 0; it < 3000; it++) {
        static sc_tw tg;
        sc_tw_init(&tg, ip);
        memcpy(g, in, n < sizeof g ? n : sizeof g);
        size_t len = (size_t)(rand() % (int)sizeof g);
        for (int k = 0; k < 20; k++)
            g[16 + rand() % (int)(sizeof g - 16)] = (unsigned char)rand();
        sink og = {0};
        sc_tw_feed(&tg, g, len, put, &og);
        free(og.b);
    }
    ok(1, "3000 streams with random bytes: no crash");
    free(out.b);
    free(o2.b);
    free(o3.b);
    free(o4.b);
    sc_interp_free(ip);
    return tap_done();
}
