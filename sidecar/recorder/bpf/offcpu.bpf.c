/* Off-CPU time of the target's threads (docs/SIDECAR.md "Off-CPU and wall-clock"): one program on
 * the raw tracepoint sched_switch (by name: no tracefs, and not the sched_switch perf event, whose
 * shared program array would silence that tracepoint for every other perf user on the host).
 *   prev (current, going off CPU): when it is the target's (its active PID namespace is exactly
 *        the target's, its tgid not one of ours) and a random draw passes this CPU's threshold, a
 *        sample is written to this CPU's bpf-output event: that event takes the user registers,
 *        callchain and stack copy of current, so the recorder walks and names it like a
 *        cpu-clock sample; the task is stamped (time, sequence number).
 *   next (coming back): a stamped task's time off CPU goes into the done table, under its
 *        sequence number, where the recorder finds it and gives the sample its weight.
 * Sampling at switch-out keeps the cost of the target's switches bounded by the rate the recorder
 * steers (a stack copy per sample); the weight divided by the probability keeps the totals.
 * For a task not of the target the program does a table lookup and a namespace test: it runs on
 * EVERY context switch of the host. No BTF, no CO-RE: only "current", helpers and maps (this
 * project's CI kernel has neither kprobes nor BPF trampolines, so neither finish_task_switch
 * hook of other tools works there). The task_struct pointers are only keys, never read. */
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
 * behind: a lookup more, never one less. */
#define BLOOM 1024
struct bloom {
    __u32 n[BLOOM];
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct bloom);
} stamped SEC(".maps");

/* The namespace test costs ~60 ns on a VM (measured: docs/BENCHMARKS.md "Off-CPU"); its answer
 * is kept per CPU, by task address and host pid/tid together (an address reused by a new task
 * comes with a new tid). A wrong "yes" would only make a sample the recorder drops (its pid is 0
 * in our namespace, or its process is judged not the target's, as for cpu-clock samples). */
#define VCACHE 64
struct vcache {
    __u64 key[VCACHE];
    __u8 yes[VCACHE];
};
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct vcache);
} verdicts SEC(".maps");

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

static __always_inline int target_task(__u64 task)
{
    __u32 zero = 0;
    __u64 key = task ^ bpf_get_current_pid_tgid();
    struct vcache *vc = bpf_map_lookup_elem(&verdicts, &zero);
    if (!vc)
        return target_task_uncached();
    __u32 i = hash(key, 6) & (VCACHE - 1);
    if (vc->key[i] == key)
        return vc->yes[i];
    int yes = target_task_uncached();
    vc->key[i] = key;
    vc->yes[i] = (__u8)yes;
    return yes;
}

SEC("raw_tracepoint/sched_switch")
int offcpu_switch(struct bpf_raw_tracepoint_args *ctx)
{
    /* args: preempt, prev, next (and prev_state on newer kernels) */
    __u64 next = ctx->args[2], prev = ctx->args[1];
    __u32 zero = 0, bn = hash(next, 10) & (BLOOM - 1);
    struct bloom *bl = bpf_map_lookup_elem(&stamped, &zero);
    if (!bl)
        return 0;
    struct stamp *st = bl->n[bn] ? bpf_map_lookup_elem(&start, &next) : NULL;
    if (st) {
        __u64 d = bpf_ktime_get_ns() - st->ts, seq = st->seq;
        if (d >= (1ull << OFFCPU_DELTA_BITS))
            d = (1ull << OFFCPU_DELTA_BITS) - 1;
        __u32 i = (__u32)seq & (OFFCPU_DONE - 1);
        __u64 *slot = bpf_map_lookup_elem(&done, &i);
        if (slot) /* one 64-bit store: the recorder never sees half of it */
            *slot = (seq & 0xffffff) << OFFCPU_DELTA_BITS | d;
        if (!bpf_map_delete_elem(&start, &next))
            __sync_fetch_and_add(&bl->n[bn], -1);
        __u32 cpu = bpf_get_smp_processor_id();
        struct offcpu_cpu *c = bpf_map_lookup_elem(&percpu_slots, &cpu);
        if (c)
            c->finished++;
    }
    if (!target_task(prev))
        return 0;
    __u32 cpu = bpf_get_smp_processor_id();
    struct offcpu_cpu *c = bpf_map_lookup_elem(&percpu_slots, &cpu);
    if (!c)
        return 0;
    c->switchouts++;
    __u64 threshold = c->threshold;
    if (threshold < OFFCPU_ALWAYS && bpf_get_prandom_u32() >= threshold)
        return 0;
    struct offcpu_cpu *c0 = bpf_map_lookup_elem(&percpu_slots, &zero);
    if (!c0)
        return 0;
    struct offcpu_raw r = {.seq = __sync_fetch_and_add(&c0->seq, 1) + 1,
                           .threshold = threshold,
                           .ts = bpf_ktime_get_ns()};
    if (bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, &r, sizeof r)) {
        c->lost++;
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
            __sync_fetch_and_add(&bl->n[hash(prev, 10) & (BLOOM - 1)], 1);
    }
    c->sampled++;
    return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
