/* Unit tests of the agent's pure helpers: readable names, option parsing, and the split of a
 * compiled method's code into inlined ranges (no gaps, no overlaps, return address inside). */
#include "common/contract.h"
#include "mounts/agent.h"
#include "tests/unit/tap.h"

#include <stdlib.h>
#include <string.h>

/* the sidecar reads the agent's busy code from common/contract.h */
_Static_assert(AGENT_RC_BUSY == CT_AGENT_RC_BUSY, "agent and sidecar agree on the busy code");

static char out[AGENT_FRAME_MAX];

static const char *fname(const char *cls, const char *m, const char *sig)
{
    agent_frame_name(out, sizeof out, cls, m, sig);
    return out;
}

/* Chains for the split tests: idx -> chain id; equal ids are the same chain, -1 the method. */
static const int chain_of[] = {7, 7, 8, 7, -1, 9};
static int same_chain(int a, int b, void *ctx)
{
    (void)ctx;
    int ca = a < 0 ? -1 : chain_of[a], cb = b < 0 ? -1 : chain_of[b];
    return ca == cb;
}

static void test_names(void)
{
    is_str(fname("Ljava/util/HashMap;", "merge", NULL), "java.util.HashMap.merge", "class name");
    is_str(fname("LFlameFixture;", "countPrimes", NULL), "FlameFixture.countPrimes",
           "default package");
    is_str(fname("LFlameFixture;", "mixHashes", "(Ljava/util/Random;I)J"),
           "FlameFixture.mixHashes(java.util.Random, int)", "signature");
    is_str(fname("La/B$C;", "m", "([[I[Ljava/lang/String;ZBCSJFD)V"),
           "a.B$C.m(int[][], java.lang.String[], boolean, byte, char, short, long, float, double)",
           "all descriptor kinds, nested class keeps $");
    is_str(fname("La/B;", "m", "()V"), "a.B.m()", "no parameters");
    is_str(fname("La/B;", "m", "(Q)V"), "a.B.m()", "malformed descriptor is cut, still closed");
    is_str(fname("La/B;", "m", "(Ljava/lang"), "a.B.m()", "unterminated class descriptor");
    is_str(fname("LFlameFixture$$Lambda$14.0x0000000800c0b000;", "apply", NULL),
           "FlameFixture$$Lambda$14.apply", "hidden class address dropped");
    is_str(fname("LFlameFixture$$Lambda.0x00007f1234560000;", "apply", NULL),
           "FlameFixture$$Lambda.apply", "JDK 21 lambda name");
    is_str(fname("LFlameFixture$$Lambda$14/0x0000000800066840;", "apply", NULL),
           "FlameFixture$$Lambda$14.apply", "JDK 11 anonymous class address dropped");
    is_str(fname("La/B.0xzz;", "m", NULL), "a.B.0xzz.m", "not a hidden-class suffix: kept");
    is_str(fname("La/0x12;", "m", NULL), "a.0x12.m", "short hex class name kept");
    is_str(fname("L0x0000000012345678;", "m", NULL), "0x0000000012345678.m",
           "a name that is only the suffix is kept");
    is_str(fname(NULL, NULL, NULL), "[unknown].[unknown]", "JVMTI failures give [unknown]");
    is_str(fname("La/B\nC;", "m\x01x", NULL), "a.B?C.m?x", "control bytes replaced");

    char big[5000];
    memset(big, 'x', sizeof big);
    big[0] = 'L';
    big[sizeof big - 2] = ';';
    big[sizeof big - 1] = '\0';
    agent_frame_name(out, sizeof out, big, "m", "(I)V");
    is_int(strlen(out), sizeof out - 1, "frame name capped at %d bytes", AGENT_FRAME_MAX - 1);
    ok(strcmp(out + strlen(out) - 10, "xxx...m(int)") != 0 &&
           strcmp(out + strlen(out) - 9, "...m(int)") == 0,
       "a huge class name is cut with '...' and the method survives: %s", out + strlen(out) - 12);
    big[sizeof big - 2] = 'y';
    agent_frame_name(out, sizeof out, "La/B;", big, NULL);
    ok(strncmp(out, "a.B.Lxx", 7) == 0 && strlen(out) == 3 + sizeof out / 2 - 1 &&
           strcmp(out + strlen(out) - 3, "...") == 0,
       "a huge method name takes at most half the frame, cut with '...'");
    char small[8];
    agent_frame_name(small, sizeof small, "Ljava/util/HashMap;", "merge", NULL);
    is_str(small, "j......", "tiny buffer: both parts cut, NUL-terminated");
    agent_frame_name(small, 1, "La;", "m", NULL);
    is_str(small, "", "1-byte buffer");
}

static void test_opts(void)
{
    struct agent_opts o;
    struct agent_err err = {0, {0}};
    ok(agent_parse_opts(NULL, &o, &err) == 0 && !o.stop && o.inline_on && !o.sig &&
           strcmp(o.dir, "/tmp") == 0,
       "defaults");
    ok(agent_parse_opts("", &o, &err) == 0 && !o.stop, "empty options");
    ok(agent_parse_opts("stop", &o, &err) == 0 && o.stop, "stop");
    ok(agent_parse_opts("start,inline=0,sig=1,dir=/x/y,verbose=1", &o, &err) == 0 && !o.stop &&
           !o.inline_on && o.sig && o.verbose && strcmp(o.dir, "/x/y") == 0,
       "all options");
    ok(agent_parse_opts("start,bogus", &o, &err) < 0 && err.code == AGENT_RC_OPTIONS &&
           strstr(err.msg, "bogus"),
       "unknown option rejected: %s", err.msg);
    ok(agent_parse_opts("inline=2", &o, &err) < 0, "bad boolean rejected");
    ok(agent_parse_opts("dir=tmp", &o, &err) < 0, "relative dir rejected");
    ok(agent_parse_opts("stop=1", &o, &err) < 0, "stop takes no value");
    /* a window's end of `docker flame record --mode alloc` (docs/MODES.md) */
    ok(agent_parse_opts("flush", &o, &err) == 0 && o.flush && !o.stop, "flush");
    ok(agent_parse_opts("start", &o, &err) == 0 && !o.flush && !o.stop, "start is no flush");
    ok(agent_parse_opts("flush,stop", &o, &err) == 0 && !o.flush && o.stop,
       "the last command wins");
    ok(agent_parse_opts("flush=1", &o, &err) < 0, "flush takes no value");
    char longdir[1100] = "dir=/";
    memset(longdir + 5, 'a', sizeof longdir - 6);
    longdir[sizeof longdir - 1] = '\0';
    ok(agent_parse_opts(longdir, &o, &err) < 0, "too long dir rejected");
    ok(agent_parse_opts("start", &o, &err) == 0 && o.tag[0] == '\0', "no tag by default");
    ok(agent_parse_opts("start,tag=0a97a33ff2a1e8d5", &o, &err) == 0 &&
           strcmp(o.tag, "0a97a33ff2a1e8d5") == 0,
       "tag of 16 hex digits");
    static const char *const bad_tags[] = {"tag=",       "tag=0A97",   "tag=../x",
                                           "tag=ab/cd",  "tag=ab.map", "tag=0123456789abcdef0",
                                           "tag=ab\ncd", "tag"};
    for (size_t i = 0; i < sizeof bad_tags / sizeof *bad_tags; i++)
        ok(agent_parse_opts(bad_tags[i], &o, &err) < 0 && err.code == AGENT_RC_OPTIONS,
           "tag refused: %s", strchr(bad_tags[i], '\n') ? "(a newline)" : bad_tags[i]);
}

/* Every byte of [start, start+size) in exactly one range, in order. */
static int covers(const struct agent_seg *s, size_t n, uint64_t start, uint64_t size)
{
    uint64_t cur = start;
    for (size_t i = 0; i < n; i++) {
        if (s[i].start != cur || s[i].end <= s[i].start)
            return 0;
        cur = s[i].end;
    }
    return cur == start + size;
}

static void test_split(void)
{
    struct agent_seg seg[8];
    /* Unsorted input with pcs 0x110 (chain 7), 0x120 (7), 0x130 (8), 0x140 (7). */
    struct agent_pc pcs[] = {{0x130, 2}, {0x110, 0}, {0x140, 3}, {0x120, 1}};
    size_t n = agent_split_code(0x100, 0x100, pcs, 4, seg, same_chain, NULL);
    ok(covers(seg, n, 0x100, 0x100), "ranges cover the code without gaps or overlaps");
    is_int(n, 4, "same chains merged: 4 ranges");
    ok(seg[0].start == 0x100 && seg[0].end == 0x121 && chain_of[seg[0].idx] == 7,
       "first range ends just after pc 0x120 (return address included)");
    ok(seg[1].start == 0x121 && seg[1].end == 0x131 && chain_of[seg[1].idx] == 8, "inlined range");
    ok(seg[2].end == 0x141 && chain_of[seg[2].idx] == 7, "back to chain 7");
    ok(seg[3].start == 0x141 && seg[3].end == 0x200 && seg[3].idx == -1, "tail: method alone");

    /* pcs outside the code, duplicates, pc at the very end, -1 next to the tail. */
    struct agent_pc p2[] = {{0x50, 0}, {0x110, 2}, {0x110, 5}, {0x1ff, 4}, {0x300, 0}};
    n = agent_split_code(0x100, 0x100, p2, 5, seg, same_chain, NULL);
    ok(covers(seg, n, 0x100, 0x100), "odd pcs: still covered exactly");
    is_int(n, 2, "duplicate pc ignored, -1 merged with the tail");
    ok(seg[0].end == 0x111 && chain_of[seg[0].idx] == 8, "first record at a pc wins");

    n = agent_split_code(0x100, 0x10, NULL, 0, seg, same_chain, NULL);
    ok(n == 1 && seg[0].idx == -1 && covers(seg, n, 0x100, 0x10), "no pcs: one range");
    is_int(agent_split_code(0x100, 0, NULL, 0, seg, same_chain, NULL), 0, "empty code");

    /* Random inputs: the invariant holds whatever the pcs are. */
    srand(1);
    int good = 1;
    for (int round = 0; round < 2000 && good; round++) {
        struct agent_pc rp[6];
        struct agent_seg rs[7];
        uint64_t size = 1 + (uint64_t)(rand() % 64);
        for (int i = 0; i < 6; i++)
            rp[i] = (struct agent_pc){0x1000 - 8 + (uint64_t)(rand() % 90), rand() % 6 - 1};
        size_t k = agent_split_code(0x1000, size, rp, 6, rs, same_chain, NULL);
        good = covers(rs, k, 0x1000, size);
    }
    ok(good, "2000 random splits cover their code exactly");
}

static void test_modes(void)
{
    char c[64];
    agent_class_name(c, sizeof c, "[B");
    is_str(c, "byte[]", "[B is byte[]");
    agent_class_name(c, sizeof c, "[[Ljava/lang/String;");
    is_str(c, "java.lang.String[][]", "arrays of a class");
    agent_class_name(c, sizeof c, "LModesFixture$Monitor;");
    is_str(c, "ModesFixture$Monitor", "a nested class keeps $");
    agent_class_name(c, sizeof c, "J");
    is_str(c, "long", "a primitive");
    agent_class_name(c, sizeof c, "Lx;y\x1b;");
    is_str(c, "x", "a crafted signature is cut at its ';'");
    agent_class_name(c, sizeof c, "\x01weird;name");
    is_str(c, "?weird_name", "a non-signature: control bytes '?', ';' '_'");
    agent_class_name(c, 8, "[[[[[[[[Ljava/lang/Object;");
    ok(strlen(c) == 7, "cut at the buffer (%s)", c);
    agent_class_name(c, sizeof c, NULL);
    is_str(c, "[unknown class]", "no signature");
    struct agent_opts o;
    struct agent_err e;
    ok(agent_parse_opts("start,alloc=524288,lock=10000,depth=64", &o, &e) == 0 &&
           o.alloc == 524288 && o.lock == 10000 && o.depth == 64,
       "alloc, lock and depth options");
    ok(agent_parse_opts("start", &o, &e) == 0 && !o.alloc && !o.lock && o.depth == AGENT_DEPTH,
       "neither by default");
    ok(agent_parse_opts("start,alloc=0", &o, &e) < 0 && strstr(e.msg, "alloc=0"),
       "alloc=0 refused");
    ok(agent_parse_opts("start,depth=99999", &o, &e) < 0, "depth over the bound refused");
    ok(agent_parse_opts("start,lock=1x", &o, &e) < 0, "lock=1x refused");
    ok(agent_parse_opts("start,alloc=524288,rate=2000", &o, &e) == 0 && o.rate == 2000,
       "rate option");
    ok(agent_parse_opts("start,alloc=524288", &o, &e) == 0 && o.rate == 0, "no rate: no cap");
    ok(agent_parse_opts("start,rate=-1", &o, &e) < 0, "rate=-1 refused");
}

/* The rate cap's steering (agent_alloc_shift): 250-ms slots, cap 2000 a second = 500 a slot */
static void test_alloc_shift(void)
{
    const uint64_t slot = 250000000, base = 524288;
    ok(agent_alloc_shift(500, slot, 2000, base, 0) == 0, "at the cap: unchanged");
    ok(agent_alloc_shift(501, slot, 2000, base, 0) == 1, "just over: one doubling");
    /* 10 GB/s at 512 KiB: ~19,000 a second, 4,770 a slot: 4 doublings bring it to 298 */
    ok(agent_alloc_shift(4770, slot, 2000, base, 0) == 4, "9.5x the cap: 4 doublings (%d)",
       agent_alloc_shift(4770, slot, 2000, base, 0));
    ok(agent_alloc_shift(4770, slot, 2000, base, 2) == 6, "from shift 2: 6");
    ok(agent_alloc_shift(200, slot, 2000, base, 3) == 3, "between a quarter and the cap: kept");
    ok(agent_alloc_shift(124, slot, 2000, base, 3) == 2, "under a quarter: one halving");
    ok(agent_alloc_shift(0, slot, 2000, base, 1) == 0, "nothing sampled: back towards the base");
    ok(agent_alloc_shift(0, slot, 2000, base, 0) == 0, "never below the base");
    ok(agent_alloc_shift(1000000, slot, 0, base, 0) == 0, "cap 0: no cap");
    ok(agent_alloc_shift(1000000, slot, 0, base, 5) == 0, "cap 0: the base interval");
    /* bounded: at most 1 GiB, at most AGENT_ALLOC_SHIFT_MAX */
    ok(agent_alloc_shift(UINT64_MAX, 1, 1, base, 0) == 11, "huge rate: 512 KiB << 11 = 1 GiB (%d)",
       agent_alloc_shift(UINT64_MAX, 1, 1, base, 0));
    ok(agent_alloc_shift(UINT64_MAX, 1, 1, 1024, 0) == AGENT_ALLOC_SHIFT_MAX,
       "huge rate, small base: AGENT_ALLOC_SHIFT_MAX");
    ok(agent_alloc_shift(UINT64_MAX, UINT64_MAX, UINT64_MAX, base, -3) >= 0,
       "no overflow, no negative");
    ok(agent_alloc_shift(10, 0, 2000, base, 2) == 2, "a zero-length slot: unchanged, no division");
}

static void test_alloc_weight(void)
{
    uint64_t b, n;
    agent_alloc_weight(64, 524288, &b, &n);
    ok(b == 524288 + 32 && n == 8193, "64 B at 512 KiB: the interval + size/2 (%llu B, %llu)",
       (unsigned long long)b, (unsigned long long)n);
    agent_alloc_weight(524288, 524288, &b, &n);
    /* 524288 / (1 - 1/e) = 829,411.40 */
    ok(b == 829411 && n == 2, "size = interval: size / 0.632 (%llu B)", (unsigned long long)b);
    agent_alloc_weight(262144, 524288, &b, &n);
    /* 262144 / (1 - e^-0.5) = 666,237.42 */
    ok(b == 666237 && n == 3, "half the interval: size / 0.393 (%llu B, %llu)",
       (unsigned long long)b, (unsigned long long)n);
    agent_alloc_weight(64u << 20, 524288, &b, &n);
    ok(b == 64u << 20 && n == 1, "128 x the interval: the object itself");
    agent_alloc_weight(1, 1, &b, &n);
    ok(b == 2 && n == 2, "1 B at 1 B: 1 / 0.632 rounded (%llu)", (unsigned long long)b);
    agent_alloc_weight(0, 0, &b, &n);
    ok(b >= 1 && n >= 1, "zeros: no division by zero");
    agent_alloc_weight(UINT64_MAX, 1, &b, &n);
    ok(b == 9000000000000000000ull && n == 1, "huge: bounded");
}

int main(void)
{
    test_alloc_weight();
    test_alloc_shift();
    test_modes();
    test_names();
    test_opts();
    test_split();
    return tap_done();
}
