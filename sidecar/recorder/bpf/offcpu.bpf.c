/* Off-CPU time of the target's threads (docs/SIDECAR.md "Off-CPU and wall-clock"): one program on
 * the raw tracepoint sched_switch (by name: no tracefs, and not the sched_switch perf event, whose
 * shared program array would silence that tracepoint for every other perf user on the host).
 *   prev (current, going off CPU): when it is the target's (its active PID namespace is exactly
 *        the target's, its tgid not one of ours) and its switch-out ends this CPU's sampling gap
 *        of its kind (to sleep, preempted: each kind sampled with the probability the recorder
 *        steers for it), a sample is written to this CPU's bpf-output event: that event takes
 * the user registers, callchain and stack copy of current, so the recorder walks and names it like
 * a cpu-clock sample; the task is stamped (time, sequence number). next (coming back): a stamped
 * task's time off CPU goes into the done table, under its sequence number, where the recorder finds
 * it and gives the sample its weight. Sampling at switch-out keeps the cost of the target's
 * switches bounded by the rate the recorder steers (a stack copy per sample); the weight divided by
 * the probability keeps the totals. For a task not of the target the program does a table lookup
 * and a namespace test: it runs on EVERY context switch of the host. No BTF, no CO-RE: only
 * "current", helpers and maps (this project's CI kernel has neither kprobes nor BPF trampolines, so
 * neither finish_task_switch hook of other tools works there). The task_struct pointers are only
 * keys, never read. */
#include <linux/bpf.h>
#include <linux/types.h>

#include <bpf/bpf_helpers.h>

#include "sidecar/recorder/bpf/offcpu.h"

/* Set by the loader before loading; read-only for the program (the verifier folds it). */
const volatile struct offcpu_cfg cfg = {0};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1); /* the loader sets the CPU count */
    __type(key, __u32);
    __type(value, struct offcpu_cpu);
} percpu_slots SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, OFFCPU_DONE);
    __type(key, __u32);
    __type(value, __u64);
} done SEC(".maps");

struct stamp {
    __u64 ts, seq;
};

/* sampled tasks off CPU, by task_struct address; LRU: one that exits off CPU never returns */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u64);
    __type(value, struct stamp);
} start SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, sizeof(__u32));
} out SEC(".maps");

/* Which tasks are stamped, counted by a hash of their address: a switch-in whose counter is 0
 * (nearly all of the host's) skips the table lookup. Entries the LRU evicts leave their count
 * behind: a lookup more, never one less. A global (.bss): its address is in the program, no map
 * lookup on the switch-in path. */
#define BLOOM 1024
__u32 stamped[BLOOM] = {0};

/* This CPU's own state (not mapped by the recorder: it holds task addresses).
 * The verdict cache: the namespace test costs ~60 ns on a VM (docs/BENCHMARKS.md "Off-CPU"); its
 * answer is kept by task address and host pid/tid together (an address reused by a new task
 * comes with a new tid; a thread that execs becomes its leader and gets the leader's tid), so a
 * task's first switch-out on this CPU pays for the test and the next ones find its answer: a
 * process forked or exec'd in the target later is tested at its first switch-out. The same
 * value holds the sampling gap, so the target's common switch-out writes nothing else (a
 * counter in the shared slots and a random number per switch-out cost ~10 ns each, measured). */
#define VCACHE 64
/* An entry: the task and its pid_tgid, the verdict in bit 63 of that (a tgid is below 2^22,
 * PID_MAX_LIMIT): one cache line holds the whole answer. */
#define VC_YES (1ull << 63)
struct vc_entry {
    __u64 task, pt;
};
struct cpu_state {
    struct vc_entry vc[VCACHE];
    /* one gap per kind of switch-out (OFFCPU_SLEPT, OFFCPU_PREEMPTED): */
    __u64 thr[OFFCPU_KINDS];   /* the threshold the gap was drawn with */
    __u64 left[OFFCPU_KINDS];  /* switch-outs until the sampled one, that one included (0: draw) */
    __u64 drawn[OFFCPU_KINDS]; /* `left` when set: drawn - left of the gap are not counted yet */
};
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cpu_state);
} state SEC(".maps");

static __always_inline __u32 hash(__u64 p, int bits)
{
    return (__u32)((p * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static __always_inline int target_task_uncached(void)
{
    struct bpf_pidns_info ns;
    if (bpf_get_ns_current_pid_tgid(cfg.dev, cfg.ino, &ns, sizeof ns))
        return 0; /* another namespace, or a nested one */
#pragma unroll
    for (int i = 0; i < OFFCPU_MAX_EXCLUDE; i++)
        if (cfg.exclude[i] && cfg.exclude[i] == ns.tgid)
            return 0;
    return 1;
}

/* Is current (task, host pid_tgid pt) the target's? */
static __always_inline int target_task(struct cpu_state *cs, __u64 task, __u64 pt)
{
    struct vc_entry *e = &cs->vc[hash(task ^ pt, 6) & (VCACHE - 1)];
    __u64 x = e->pt ^ pt; /* VC_YES or 0 when it is this task's entry */
    if (e->task == task && !(x << 1))
        return (int)(x >> 63);
    int yes = target_task_uncached();
    e->task = task;
    e->pt = pt | (yes ? VC_YES : 0);
    return yes;
}

static __always_inline __u64 draw(const struct offcpu_cpu *c, __u32 k, __u64 thr)
{
    if (thr >= OFFCPU_ALWAYS)
        return 1;
    return offcpu_gap(bpf_get_prandom_u32(), c->kfix[k], cfg.log2tab);
}

SEC("raw_tracepoint/sched_switch")
int offcpu_switch(struct bpf_raw_tracepoint_args *ctx)
{
    /* args: preempt, prev, next, prev_state */
    __u64 next = ctx->args[2], prev = ctx->args[1];
    __u32 zero = 0, bn = hash(next, 10) & (BLOOM - 1);
    struct stamp *st = stamped[bn] ? bpf_map_lookup_elem(&start, &next) : NULL;
    if (st) {
        __u64 d = bpf_ktime_get_ns() - st->ts, seq = st->seq;
        if (d >= (1ull << OFFCPU_DELTA_BITS))
            d = (1ull << OFFCPU_DELTA_BITS) - 1;
        __u32 i = (__u32)seq & (OFFCPU_DONE - 1);
        __u64 *slot = bpf_map_lookup_elem(&done, &i);
        if (slot) /* one 64-bit store: the recorder never sees half of it */
            *slot = (seq & 0xffffff) << OFFCPU_DELTA_BITS | d;
        if (!bpf_map_delete_elem(&start, &next))
            __sync_fetch_and_add(&stamped[bn], -1);
        __u32 cpu = bpf_get_smp_processor_id();
        struct offcpu_cpu *c = bpf_map_lookup_elem(&percpu_slots, &cpu);
        if (c)
            c->finished++;
    }
    /* an idle task (pid 0: about every other switch of a CPU that idles) is never the target's */
    __u64 pt = bpf_get_current_pid_tgid();
    if (!pt)
        return 0;
    struct cpu_state *cs = bpf_map_lookup_elem(&state, &zero);
    if (!cs || !target_task(cs, prev, pt))
        return 0;
    /* preempted, or its state still TASK_RUNNING (it yielded): it waits for a CPU, not for
     * an event. args[3] (prev_state) exists since Linux 5.18; reading it on an older kernel
     * makes the attach fail (the context's size is checked there), never a wrong value. */
    __u32 k = (ctx->args[0] || !(__u32)ctx->args[3]) ? OFFCPU_PREEMPTED : OFFCPU_SLEPT;
    /* The common path: inside a gap, not this one. The recorder's threshold is read at a gap's
     * end only: a gap runs out with the p it was drawn with (each of its switch-outs sampled
     * with that p, which its sample carries), so a new p takes effect one gap later, and a
     * pause (threshold 0) before the gap's sampled switch-out, which it then skips. */
    if (cs->left[k] > 1) {
        cs->left[k]--;
        return 0;
    }
    __u32 cpu = bpf_get_smp_processor_id();
    struct offcpu_cpu *c = bpf_map_lookup_elem(&percpu_slots, &cpu);
    if (!c)
        return 0;
    __u64 threshold = c->threshold[k], p = cs->thr[k];
    c->switchouts[k] += cs->drawn[k] - cs->left[k] + 1; /* the gap's, this one included */
    if (!threshold) {                                   /* paused: counted only */
        cs->thr[k] = cs->left[k] = cs->drawn[k] = 0;
        return 0;
    }
    if (!cs->left[k]) {
        /* no gap (the first switch-out, or paused until now): one drawn from this switch-out
         * on (memoryless: see offcpu_gap) */
        cs->thr[k] = p = threshold;
        __u64 g = draw(c, k, threshold);
        if (g > 1) {
            cs->left[k] = cs->drawn[k] = g - 1;
            return 0;
        }
    }
    /* this one is sampled, with its gap's p; the gap to the next, with the threshold now */
    cs->thr[k] = threshold;
    cs->left[k] = cs->drawn[k] = draw(c, k, threshold);
    struct offcpu_cpu *c0 = bpf_map_lookup_elem(&percpu_slots, &zero);
    if (!c0)
        return 0;
    struct offcpu_raw r = {.seq = __sync_fetch_and_add(&c0->seq, 1) + 1,
                           .threshold = p,
                           .ts = bpf_ktime_get_ns(),
                           .runnable = k == OFFCPU_PREEMPTED};
    if (bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, &r, sizeof r)) {
        c->lost[k]++;
        return 0;
    }
    /* Stamped already: a switch-in we did not see (measured here: a few per thousand, the
     * stamp 3-14 ms old). Its sample is closed with 0 ns, which the recorder drops, rather
     * than left to count until the end of the recording. */
    struct stamp *o = bpf_map_lookup_elem(&start, &prev);
    if (o) {
        __u32 i = (__u32)o->seq & (OFFCPU_DONE - 1);
        __u64 *slot = bpf_map_lookup_elem(&done, &i);
        if (slot)
            *slot = (o->seq & 0xffffff) << OFFCPU_DELTA_BITS;
        o->ts = r.ts;
        o->seq = r.seq;
        c->no_start++;
    } else {
        struct stamp s = {.ts = r.ts, .seq = r.seq};
        if (bpf_map_update_elem(&start, &prev, &s, BPF_NOEXIST))
            c->no_start++;
        else
            __sync_fetch_and_add(&stamped[hash(prev, 10) & (BLOOM - 1)], 1);
    }
    c->sampled[k]++;
    return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
