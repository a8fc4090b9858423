/* What offcpu.bpf.c and its loader (sidecar/recorder/offcpu.c) share: the layout of the program's
 * configuration (.rodata, set before loading), of its per-CPU slots and of its table of finished
 * intervals (mmapable arrays the recorder reads and writes after its privilege drop, without a
 * bpf() call), and of the RAW part of its samples. */
#pragma once
#include <linux/types.h>

#ifndef __always_inline /* bpf_helpers.h has it; user space (the tests) may not */
#define __always_inline inline __attribute__((always_inline))
#endif

#define OFFCPU_MAX_EXCLUDE 8
#define OFFCPU_DONE 65536          /* finished intervals remembered (a power of two) */
#define OFFCPU_DELTA_BITS 40       /* a done entry: seq (24 bits) << 40 | ns off CPU (40 bits) */
#define OFFCPU_ALWAYS (1ull << 32) /* threshold: every switch-out sampled */
#define OFFCPU_MIN_THRESHOLD 256   /* p >= 2^-24: keeps offcpu_gap's product within 64 bits */
#define OFFCPU_LOG2_TAB 64         /* log2(1 + i/64), i = 0..64, in 2^-20 (offcpu_gap) */
#define OFFCPU_KFIX_SHIFT 14       /* kfix = 2^14 / -log2(1 - p) */

struct offcpu_cfg {
    __u64 dev; /* the target's PID namespace: nsfs device (kernel encoding) */
    __u64 ino; /* ... and inode */
    __u32 exclude[OFFCPU_MAX_EXCLUDE];  /* our tgids as seen in that namespace; 0 = unused */
    __u32 log2tab[OFFCPU_LOG2_TAB + 1]; /* round(log2(1 + i/64) * 2^20): offcpu_gap's table */
};

/* The two kinds of switch-out, each sampled with its own probability: a task that goes to sleep
 * (waits for an event: a lock, I/O, a timer) and one preempted (still runnable). A loaded machine
 * preempts busy threads thousands of times a second; one probability for both would sample the
 * few long sleeps of a waiting thread as rarely as those, and its time would come out with the
 * noise of a handful of samples. Each kind steered to its own rate keeps the sleeps' probability
 * where their own number puts it. */
#define OFFCPU_SLEPT 0
#define OFFCPU_PREEMPTED 1
#define OFFCPU_KINDS 2

/* One per CPU (128 bytes: no false sharing), written by that CPU's program, but `threshold` and
 * `kfix`, which the recorder sets: each switch-out of the target of kind k is sampled with
 * probability p = threshold[k] / 2^32 (0: none, paused), drawn as geometric gaps (offcpu_gap). */
struct offcpu_cpu {
    __u64 threshold[OFFCPU_KINDS];
    /* 2^14 / -log2(1 - p), for offcpu_gap (written before threshold) */
    __u64 kfix[OFFCPU_KINDS];
    /* the target's switch-outs seen (those of a gap in progress: at its end) */
    __u64 switchouts[OFFCPU_KINDS];
    /* ... of which sampled (a stack written, a stamp kept) */
    __u64 sampled[OFFCPU_KINDS];
    /* ... and refused by the bpf-output event (disabled, ring full) */
    __u64 lost[OFFCPU_KINDS];
    __u64 no_start; /* stamps the table refused */
    __u64 finished; /* sampled intervals ended (switched in) */
    __u64 seq;      /* CPU 0's slot only: the last sequence number given */
    __u64 pad[3];
};
_Static_assert(sizeof(struct offcpu_cpu) == 128, "one slot: two cache lines of its own");

/* The RAW part of each sample (written at switch-out, the task's stack with it). */
struct offcpu_raw {
    __u64 seq;       /* pairs it with its done entry */
    __u64 threshold; /* it was sampled with probability threshold / 2^32 (its kind's) */
    __u64 ts;        /* bpf_ktime_get_ns() at switch-out (CLOCK_MONOTONIC) */
    __u64 runnable;  /* 1: preempted (still runnable, waiting for a CPU); 0: it slept/blocked */
};

/* The number of switch-outs up to and including the next sampled one, when each is sampled with
 * probability p: geometric, G = 1 + floor(ln U / ln(1 - p)) for U uniform in (0, 1], here
 * 1 + floor(-log2(U) * kfix / 2^14) with U = (r + 1) / 2^32 and -log2 U in 2^-20 from an
 * interpolated table (error < 5e-5). Drawing the gap once per sample instead of a random number
 * per switch-out keeps the program's common path to a decrement; a geometric gap is memoryless,
 * so a gap that runs out with the p it was drawn with, the next one drawn with a new p, leaves
 * every switch-out sampled with the p of its gap, which the sample carries, as a draw per
 * switch-out would. Shared by the program and the unit tests. kfix at
 * most 2^38 (p >= 2^-24): the product stays below 2^64. */
static __always_inline __u64 offcpu_gap(__u32 r, __u64 kfix, const volatile __u32 *tab)
{
    __u64 x = (__u64)r + 1, y = x;
    __u32 m = 0;
    if (x >> 32)
        return 1; /* U = 1: -log2 U = 0 */
    if (y >> 16) {
        m += 16;
        y >>= 16;
    }
    if (y >> 8) {
        m += 8;
        y >>= 8;
    }
    if (y >> 4) {
        m += 4;
        y >>= 4;
    }
    if (y >> 2) {
        m += 2;
        y >>= 2;
    }
    if (y >> 1)
        m += 1;
    /* x = 2^m * (1 + f), f in [0, 1) with 31 bits: the table's interval, then the rest */
    __u64 f = (x << (31 - m)) & 0x7fffffffull;
    __u32 i = (__u32)(f >> 25) & (OFFCPU_LOG2_TAB - 1);
    __u64 lo = tab[i], hi = tab[i + 1];
    __u64 lg = lo + (((hi - lo) * (f & 0x1ffffffull)) >> 25);
    __u64 nl = ((__u64)(32 - m) << 20) - lg; /* -log2 U, in 2^-20 */
    return 1 + ((nl * kfix) >> (20 + OFFCPU_KFIX_SHIFT));
}
