/* What offcpu.bpf.c and its loader (sidecar/recorder/offcpu.c) share: the layout of the program's
 * configuration (.rodata, set before loading), of its per-CPU slots and of its table of finished
 * intervals (mmapable arrays the recorder reads and writes after its privilege drop, without a
 * bpf() call), and of the RAW part of its samples. */
#pragma once
#include <linux/types.h>

#define OFFCPU_MAX_EXCLUDE 8
#define OFFCPU_DONE 65536          /* finished intervals remembered (a power of two) */
#define OFFCPU_DELTA_BITS 40       /* a done entry: seq (24 bits) << 40 | ns off CPU (40 bits) */
#define OFFCPU_ALWAYS (1ull << 32) /* threshold: every switch-out sampled */

struct offcpu_cfg {
    __u64 dev; /* the target's PID namespace: nsfs device (kernel encoding) */
    __u64 ino; /* ... and inode */
    __u32 exclude[OFFCPU_MAX_EXCLUDE]; /* our tgids as seen in that namespace; 0 = unused */
};

/* One per CPU (64 bytes: no false sharing), written by that CPU's program, but `threshold`,
 * which the recorder sets: a switch-out of the target is sampled when a random u32 is below it. */
struct offcpu_cpu {
    __u64 threshold;
    __u64 switchouts; /* the target's switch-outs seen */
    __u64 sampled;    /* ... of which sampled (a stack written, a stamp kept) */
    __u64 lost;       /* samples the bpf-output event refused (disabled, ring full) */
    __u64 no_start;   /* stamps the table refused */
    __u64 finished;   /* sampled intervals ended (switched in) */
    __u64 seq;        /* CPU 0's slot only: the last sequence number given */
    __u64 pad;
};

/* The RAW part of each sample (written at switch-out, the task's stack with it). */
struct offcpu_raw {
    __u64 seq;       /* pairs it with its done entry */
    __u64 threshold; /* it was sampled with probability threshold / 2^32 */
    __u64 ts;        /* bpf_ktime_get_ns() at switch-out (CLOCK_MONOTONIC) */
};
