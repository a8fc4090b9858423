/* Off-CPU samples for the per-CPU recorder (docs/SIDECAR.md "Off-CPU and wall-clock"): the loader
 * of bpf/offcpu.bpf.c, its rate control, the rewrite of its samples into the recorder's own
 * sample layout, and the samples held until their thread is back on CPU (the time off CPU is
 * known only then). Internal to the recorder (percpu.c uses it). Module prefix: sc_offcpu_.
 *
 * Privilege: sc_offcpu_load, sc_offcpu_set_output and sc_offcpu_attach need CAP_BPF +
 * CAP_PERFMON (or CAP_SYS_ADMIN): map and program creation, the raw tracepoint. Everything else
 * works on memory mapped before the drop and on /proc/self/fdinfo. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define SC_OFFCPU_MAX_EXCLUDE 8
/* Sampled switch-outs per second for the whole target, by default, for each kind (bpf/offcpu.h
 * OFFCPU_KINDS). Preemptions get fewer: a preempted thread waits for a CPU with the stack it was
 * running, which the cpu-clock samples see already, and on a loaded host they are the many
 * (thousands a second) whose samples cost the target most; their time still counts (each sample
 * weighs 1/p), with more noise (docs/SIDECAR.md "Weights and rate"). */
#define SC_OFFCPU_RATE 250          /* switch-outs to sleep */
#define SC_OFFCPU_RATE_PREEMPTED 50 /* preemptions */
/* The first probability comes from the switch-outs counted (unsampled) between attaching the
 * program and sc_offcpu_start when at least this many were seen in at least SC_OFFCPU_CALIB_MS
 * (sc_offcpu_start waits for the rest of it): every switch-out sampled until the first steering
 * costs a JVM at ~1 M switches/s ~10k callchain walks, more than a 5-s recording's own samples. */
#define SC_OFFCPU_CALIB_MIN 64
#define SC_OFFCPU_CALIB_MS 2
#define SC_OFFCPU_PENDING 1024 /* samples held while their thread is off CPU; more are dropped */

typedef struct sc_offcpu_opts {
    uint64_t dev, ino; /* the target's PID namespace: nsfs device (kernel encoding), inode */
    pid_t exclude[SC_OFFCPU_MAX_EXCLUDE]; /* our tgids in that namespace */
    int n_exclude;
    uint64_t min_ns; /* intervals off CPU shorter than this are not counted */
    unsigned rate;   /* sampled switch-outs to sleep per second (0: SC_OFFCPU_RATE); preemptions:
                        a fifth of it (SC_OFFCPU_RATE_PREEMPTED), at least 1 */
    bool tags;       /* wall: the thread's state in each sample's period (SC_OFFCPU_TAG_*) */
} sc_offcpu_opts;

/* Wall-clock samples carry their thread's state in the two low bits of their period (ns; an
 * error of at most 3 ns a sample), which `perf script` prints and the folder turns into a leaf
 * frame (flame/fold.h state_tags): on CPU (the cpu-clock samples), runnable (preempted:
 * waiting for a CPU), sleeping (waiting for an event: a lock, I/O, a timer). 0: no state. */
#define SC_OFFCPU_TAG_RUNNING 1
#define SC_OFFCPU_TAG_RUNNABLE 2
#define SC_OFFCPU_TAG_SLEEPING 3
/* A period with a state tag. */
static inline uint64_t sc_offcpu_tag(uint64_t period, unsigned tag)
{
    return (period > 3 ? period & ~3ull : 4) | tag;
}

/* pure, for tests: how many switch-outs a sample taken with probability threshold / 2^32 stands
 * for (2^32 / threshold: `--mode lock` counts them as the contentions of java.util.concurrent
 * locks), as the event code that rides in the top bits of its period (flame/fold.h
 * FOLD_EVENTS_*; docs/MODES.md "Weights"). Codes are 2^(1/128) apart: u, uniform in [0, 1),
 * picks the upper of the two codes around 2^32 / threshold with the probability that makes the
 * expected events exactly 2^32 / threshold (exact: a power of two, p = 1 among them). */
unsigned sc_offcpu_events_code(uint64_t threshold, double u);
/* A sample's period: its weight (capped below the event code's bits) and the event code
 * (a preempted thread's sample: FOLD_EVENTS_NONE). */
uint64_t sc_offcpu_with_events(uint64_t weight, unsigned code);

typedef struct sc_offcpu_stats {
    /* the program's */
    uint64_t switchouts, sampled, lost, no_start, finished;
    uint64_t kind_switchouts[2], kind_sampled[2]; /* the same by kind: to sleep, preempted */
    uint64_t threshold; /* the last probability set for switch-outs to sleep, in 2^-32 (CPU 0's) */
    uint64_t runs, run_ns; /* the program's runs and run time (0 while the kernel's BPF
                              statistics are off: kernel.bpf_stats_enabled) */
    /* the recorder's */
    uint64_t paired;    /* samples written with their time off CPU */
    uint64_t at_end;    /* ... of threads still off CPU at the end: the time until then */
    uint64_t short_n;   /* dropped: shorter than min_ns */
    uint64_t stale;     /* dropped: their interval's entry was overwritten (very long off CPU) */
    uint64_t full;      /* dropped: SC_OFFCPU_PENDING held already */
    uint64_t weight_ns; /* the time the written samples stand for */
} sc_offcpu_stats;

/* What the program put in a sample's RAW part (bpf/offcpu.h struct offcpu_raw). */
typedef struct sc_offcpu_raw {
    uint64_t seq, threshold, ts;
    bool runnable;
} sc_offcpu_raw;

/* Samples held until their thread is back (pure: tests drive it with their own done table). */
typedef struct sc_offcpu_held {
    sc_offcpu_raw raw;
    size_t len;
    unsigned char *rec; /* the sample, in the recorder's layout (time and period fixed later) */
} sc_offcpu_held;
typedef struct sc_offcpu_pend {
    sc_offcpu_held h[SC_OFFCPU_PENDING];
    int n;
    uint64_t min_ns;
    bool tags;          /* sc_offcpu_opts.tags */
    sc_offcpu_stats st; /* the recorder's part */
} sc_offcpu_pend;
typedef int (*sc_offcpu_emit_fn)(void *ctx, const unsigned char *r, size_t n);
/* Hold a sample (copied). Returns 0, or -1 when full (dropped, counted) or out of memory. */
int sc_offcpu_pend_add(sc_offcpu_pend *p, const unsigned char *rec, size_t len,
                       const sc_offcpu_raw *raw);
/* Every held sample whose interval is done (done: the program's table, last_seq the last
 * sequence number given): its period set to its time off CPU divided by its probability, its
 * time moved to the switch-in; emitted, or dropped when shorter than min_ns. end: also those
 * still off CPU, with the time until now_ns (CLOCK_MONOTONIC). Returns emit's first error. */
int sc_offcpu_pend_pair(sc_offcpu_pend *p, const volatile uint64_t *done, uint64_t last_seq,
                        bool end, uint64_t now_ns, sc_offcpu_emit_fn emit, void *ctx);
void sc_offcpu_pend_free(sc_offcpu_pend *p);

typedef struct sc_offcpu sc_offcpu;

/* PRIVILEGED. Load the program for o (nothing attached yet). */
int sc_offcpu_load(sc_offcpu **out, const sc_offcpu_opts *o, flame_err *err);
/* PRIVILEGED. CPU cpu's bpf-output event is fd. */
int sc_offcpu_set_output(sc_offcpu *oc, int cpu, int fd, flame_err *err);
/* PRIVILEGED. Attach to the raw tracepoint sched_switch. Nothing is sampled before
 * sc_offcpu_start(). */
int sc_offcpu_attach(sc_offcpu *oc, flame_err *err);
/* Waits for the rest of the first count (at most SC_OFFCPU_CALIB_MS since the attach or the
 * last pause), so that sc_offcpu_start can set the first probability from it. */
void sc_offcpu_settle(sc_offcpu *oc);
/* Counters from zero, sampling from now on. */
void sc_offcpu_start(sc_offcpu *oc, int64_t now_ms);
/* No more sampling (before the events are disabled). */
void sc_offcpu_pause(sc_offcpu *oc);
/* Rate control, on every pump pass: every 250 ms each kind's probability is set so that its
 * samples stay near the rate. */
void sc_offcpu_steer(sc_offcpu *oc, int64_t now_ms);
/* A sample read from a bpf-output ring (in the recorder's layout already, raw its RAW part). */
int sc_offcpu_hold(sc_offcpu *oc, const unsigned char *rec, size_t len, const sc_offcpu_raw *raw);
/* The held samples whose threads are back (end: all of them), through emit. */
int sc_offcpu_flush(sc_offcpu *oc, bool end, sc_offcpu_emit_fn emit, void *ctx);
void sc_offcpu_get_stats(const sc_offcpu *oc, sc_offcpu_stats *st);
void sc_offcpu_close(sc_offcpu *oc);

/* pure, for tests: the probability threshold (in 2^-32, at most 2^32 = always) that samples
 * `rate` of `switchouts` switch-outs seen in ms milliseconds. */
uint64_t sc_offcpu_threshold(uint64_t switchouts, int64_t ms, unsigned rate);
/* pure, for tests: the first threshold, from the switch-outs counted before the start over ns:
 * sc_offcpu_threshold's when at least SC_OFFCPU_CALIB_MIN were counted, else every one. */
uint64_t sc_offcpu_first_threshold(uint64_t switchouts, uint64_t ns, unsigned rate);
/* pure, for tests: what the program's gap draw needs for a threshold (bpf/offcpu.h offcpu_gap):
 * 2^14 / -log2(1 - p), and the table of log2(1 + i/64) it interpolates. */
uint64_t sc_offcpu_kfix(uint64_t threshold);
void sc_offcpu_log2tab(uint32_t tab[65]);

/* pure, for tests: one sample of the bpf-output event (r, size bytes, header included; sample
 * type IP|TID|TIME|CPU|PERIOD|CALLCHAIN|RAW, then whatever follows RAW) rewritten in the
 * recorder's layout (the same without RAW): its ip the first user address of the chain, its misc
 * user; raw filled from its RAW part. Returns the new size, or 0 for a malformed record or one
 * without a user chain. out: 65536 bytes. */
size_t sc_offcpu_convert(const unsigned char *r, size_t size, unsigned char *out,
                         sc_offcpu_raw *raw);
