/* sidecar/recorder/bpf/offcpu.bpf.c, the compiled program itself (the object the sidecar carries),
 * run by the kernel with BPF_PROG_TEST_RUN on a context switch we make up: this process, pinned to
 * one CPU, is "current" going off CPU; prev and next are made-up task addresses (only keys for the
 * program). Its samples go to a bpf-output event of that CPU, read back here. What it checks:
 * current judged the target's or not by its PID namespace (and that verdict kept for the next
 * switch-outs), the sampled switch-out and its switch-in paired in the done table, every
 * switch-out counted (also across a pause), and a new probability taking effect at the end of the
 * gap in progress, whose sample carries the probability it was drawn with (the common switch-out
 * reads nothing the recorder writes). Needs root (CAP_BPF and CAP_PERFMON): it fails without. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sidecar/recorder/bpf/offcpu.h"
#include "sidecar/recorder/offcpu.h"
#include "offcpu.bpf.h" /* offcpu_bpf[]: the compiled program (sidecar/sidecar.mk) */
#include "tests/unit/tap.h"

#define RING_PAGES 8
#define TASK_A 0xffff888012345600ull
#define TASK_B 0xffff888065432100ull
#define TASK_C 0xffff8880abcdef00ull

typedef struct {
    struct bpf_object *obj;
    int prog, cpu, ev;
    struct offcpu_cpu *slots;
    size_t slots_len;
    const uint64_t *done;
    unsigned char *ring;
    long pg;
} prog;

static int cpu_now;

/* The program loaded with our own PID namespace as the target's (target) or another one. */
static int load(prog *p, int target)
{
    memset(p, 0, sizeof *p);
    p->ev = -1;
    p->cpu = cpu_now;
    p->pg = sysconf(_SC_PAGESIZE);
    struct stat st;
    if (stat("/proc/self/ns/pid", &st))
        return -1;
    struct offcpu_cfg cfg = {.dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev),
                             .ino = st.st_ino};
    if (!target)
        cfg.ino ^= 1; /* a namespace that is not ours */
    sc_offcpu_log2tab(cfg.log2tab);
    p->obj = bpf_object__open_mem(offcpu_bpf, sizeof offcpu_bpf, NULL);
    int ncpu = libbpf_num_possible_cpus();
    struct bpf_map *ro = p->obj ? bpf_object__find_map_by_name(p->obj, ".rodata") : NULL;
    struct bpf_map *slots = p->obj ? bpf_object__find_map_by_name(p->obj, "percpu_slots") : NULL;
    struct bpf_map *done = p->obj ? bpf_object__find_map_by_name(p->obj, "done") : NULL;
    struct bpf_map *out = p->obj ? bpf_object__find_map_by_name(p->obj, "out") : NULL;
    if (!ro || !slots || !done || !out || ncpu <= p->cpu ||
        bpf_map__set_initial_value(ro, &cfg, sizeof cfg) ||
        bpf_map__set_max_entries(slots, (uint32_t)ncpu) || bpf_object__load(p->obj))
        return -1;
    p->prog = bpf_program__fd(bpf_object__find_program_by_name(p->obj, "offcpu_switch"));
    p->slots_len =
        ((size_t)ncpu * sizeof(struct offcpu_cpu) + (size_t)p->pg - 1) & ~((size_t)p->pg - 1);
    p->slots = mmap(NULL, p->slots_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(slots), 0);
    p->done = mmap(NULL, OFFCPU_DONE * 8, PROT_READ, MAP_SHARED, bpf_map__fd(done), 0);
    /* this CPU's bpf-output event, as the recorder opens it */
    struct perf_event_attr a = {.type = PERF_TYPE_SOFTWARE,
                                .size = sizeof a,
                                .config = PERF_COUNT_SW_BPF_OUTPUT,
                                .sample_type = PERF_SAMPLE_RAW,
                                .sample_period = 1,
                                .wakeup_events = 1};
    p->ev = (int)syscall(SYS_perf_event_open, &a, -1, p->cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (p->slots == MAP_FAILED || p->done == MAP_FAILED || p->ev < 0)
        return -1;
    p->ring = mmap(NULL, (size_t)(RING_PAGES + 1) * (size_t)p->pg, PROT_READ | PROT_WRITE,
                   MAP_SHARED, p->ev, 0);
    uint32_t k = (uint32_t)p->cpu, v = (uint32_t)p->ev;
    if (p->ring == MAP_FAILED || bpf_map_update_elem(bpf_map__fd(out), &k, &v, BPF_ANY))
        return -1;
    return 0;
}

static void unload(prog *p)
{
    if (p->ring && p->ring != MAP_FAILED)
        munmap(p->ring, (size_t)(RING_PAGES + 1) * (size_t)p->pg);
    if (p->ev >= 0)
        close(p->ev);
    if (p->slots && p->slots != MAP_FAILED)
        munmap(p->slots, p->slots_len);
    if (p->done && p->done != MAP_FAILED)
        munmap((void *)p->done, OFFCPU_DONE * 8);
    bpf_object__close(p->obj);
}

/* Each CPU's probability of a kind, as sc_offcpu_steer writes it (kfix first). */
static void set_threshold(prog *p, int k, uint64_t t)
{
    int ncpu = (int)(p->slots_len / sizeof(struct offcpu_cpu));
    for (int c = 0; c < ncpu; c++) {
        __atomic_store_n(&p->slots[c].kfix[k], sc_offcpu_kfix(t), __ATOMIC_RELAXED);
        __atomic_store_n(&p->slots[c].threshold[k], t, __ATOMIC_RELEASE);
    }
}

/* One context switch on our CPU: current (this process) goes off CPU as prev, next comes in;
 * slept: current's state is not TASK_RUNNING (kind OFFCPU_SLEPT), else it yielded. */
static int run(prog *p, uint64_t prev, uint64_t next, int slept)
{
    uint64_t args[4] = {0, prev, next, slept ? 1 : 0};
    LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args, .ctx_size_in = sizeof args);
    return bpf_prog_test_run_opts(p->prog, &o);
}

/* The RAW parts of the samples written since the last call (at most max). */
static int samples(prog *p, struct offcpu_raw *r, int max)
{
    struct perf_event_mmap_page *m = (void *)p->ring;
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;
    const unsigned char *data = p->ring + p->pg;
    uint64_t size = (uint64_t)RING_PAGES * (uint64_t)p->pg;
    int n = 0;
    while (tail < head) {
        unsigned char rec[256];
        struct perf_event_header h;
        for (size_t i = 0; i < sizeof h; i++)
            ((unsigned char *)&h)[i] = data[(tail + i) % size];
        for (size_t i = 0; i < h.size && i < sizeof rec; i++)
            rec[i] = data[(tail + i) % size];
        /* header, u32 raw size, the raw bytes */
        if (h.type == PERF_RECORD_SAMPLE && h.size >= 12 + sizeof *r && n < max)
            memcpy(&r[n++], rec + 12, sizeof *r);
        tail += h.size ? h.size : size;
    }
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
    return n;
}

static uint64_t count(prog *p, int k)
{
    return p->slots[p->cpu].switchouts[k];
}

static void test_filter(void)
{
    prog p;
    struct offcpu_raw r[16];
    ok(!load(&p, 0), "the program loads (another namespace as the target's)");
    set_threshold(&p, OFFCPU_SLEPT, OFFCPU_ALWAYS);
    for (int i = 0; i < 10; i++)
        run(&p, i % 2 ? TASK_A : TASK_B, TASK_C, 1);
    is_int(count(&p, OFFCPU_SLEPT), 0, "not the target's: its switch-outs not even counted");
    is_int(samples(&p, r, 16), 0, "... nor sampled (the verdict from the cache the same)");
    unload(&p);

    ok(!load(&p, 1), "the program loads (our namespace as the target's)");
    set_threshold(&p, OFFCPU_SLEPT, OFFCPU_ALWAYS);
    for (int i = 0; i < 10; i++)
        run(&p, i % 2 ? TASK_A : TASK_B, TASK_C, 1);
    is_int(count(&p, OFFCPU_SLEPT), 10, "the target's: every switch-out counted");
    is_int(p.slots[p.cpu].sampled[OFFCPU_SLEPT], 10, "... and sampled (p = 1)");
    int n = samples(&p, r, 16);
    is_int(n, 10, "... each sample written (the verdict from the cache the same)");
    ok(n == 10 && r[0].seq == 1 && r[9].seq == 10 && r[9].threshold == OFFCPU_ALWAYS &&
           !r[9].runnable,
       "numbered in order, with their probability and kind");
    /* TASK_A is stamped (its last switch-out sampled, no switch-in seen): it comes back */
    run(&p, TASK_C, TASK_A, 0);
    uint64_t e = p.done[r[9].seq & (OFFCPU_DONE - 1)];
    ok(e >> OFFCPU_DELTA_BITS == r[9].seq && (e & ((1ull << OFFCPU_DELTA_BITS) - 1)) > 0 &&
           (e & ((1ull << OFFCPU_DELTA_BITS) - 1)) < 60000000000ull,
       "its switch-in puts its time off CPU in the done table, under its sequence number");
    is_int(p.slots[p.cpu].finished, 1, "one interval finished");
    is_int(count(&p, OFFCPU_PREEMPTED), 1, "TASK_C's yield counted as preempted");
    unload(&p);
}

static void test_gap_end(void)
{
    prog p;
    struct offcpu_raw r[64];
    ok(!load(&p, 1), "the program loads");
    uint64_t half = OFFCPU_ALWAYS / 2;
    set_threshold(&p, OFFCPU_SLEPT, half);
    int runs = 0, got = 0;
    /* p = 1/2 until a sample: the gap after it is drawn with 1/2 */
    while (!got && runs < 200) {
        run(&p, TASK_A, TASK_C, 1);
        runs++;
        got = samples(&p, r, 64);
    }
    ok(got >= 1 && r[0].threshold == half, "sampled with p = 1/2 (after %d)", runs);
    set_threshold(&p, OFFCPU_SLEPT, OFFCPU_ALWAYS);
    int after = 0, n = 0;
    while (n < 3 && after < 200) {
        run(&p, TASK_A, TASK_C, 1);
        runs++;
        after++;
        n += samples(&p, r + n, 64 - n);
    }
    /* the gap drawn with 1/2 runs out first; its sample stands for 2 switch-outs, not 1 */
    ok(n >= 3 && r[0].threshold == half,
       "the first sample after p = 1 still carries its gap's 1/2");
    ok(n >= 3 && r[1].threshold == OFFCPU_ALWAYS && r[2].threshold == OFFCPU_ALWAYS,
       "the ones after it p = 1");

    /* a pause: the gap in progress (1/2) ends unsampled, every switch-out still counted */
    set_threshold(&p, OFFCPU_SLEPT, half);
    for (int i = 0; i < 20; i++)
        run(&p, TASK_A, TASK_C, 1);
    runs += 20;
    samples(&p, r, 64);
    set_threshold(&p, OFFCPU_SLEPT, 0);
    for (int i = 0; i < 100; i++)
        run(&p, TASK_A, TASK_C, 1);
    runs += 100;
    is_int(samples(&p, r, 64), 0, "paused: nothing sampled");
    is_int(count(&p, OFFCPU_SLEPT), runs, "every switch-out counted, also those of gaps");

    /* a long gap (p = 2^-24) is not cut short by a new p: nothing sampled until it ends */
    set_threshold(&p, OFFCPU_SLEPT, OFFCPU_MIN_THRESHOLD);
    run(&p, TASK_A, TASK_C, 1);
    set_threshold(&p, OFFCPU_SLEPT, OFFCPU_ALWAYS);
    for (int i = 0; i < 100; i++)
        run(&p, TASK_A, TASK_C, 1);
    is_int(samples(&p, r, 64), 0,
           "inside a gap a new threshold is not read: none of 100 switch-outs sampled");
    unload(&p);
}

int main(void)
{
    /* pinned: the program runs on our CPU with us as current */
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) {
                cpu_now = c;
                break;
            }
    CPU_ZERO(&set);
    CPU_SET(cpu_now, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        fprintf(stderr, "sidecar_offcpu_bpf: cannot pin to CPU %d: %s\n", cpu_now, strerror(errno));
        return 1;
    }
    if (geteuid() != 0)
        fprintf(stderr, "sidecar_offcpu_bpf: not root: loading the program needs CAP_BPF and "
                        "CAP_PERFMON; run the unit tests as root\n");
    test_filter();
    test_gap_end();
    return tap_done();
}
