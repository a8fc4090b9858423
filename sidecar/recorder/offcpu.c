/* Off-CPU samples: the loader of bpf/offcpu.bpf.c, its rate control, its samples rewritten and
 * held until their time off CPU is known (see offcpu.h and the program's opening comment). */
#include "sidecar/recorder/offcpu.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/recorder/bpf/offcpu.h"
#include "offcpu.bpf.h" /* offcpu_bpf[]: the compiled object (sidecar/sidecar.mk) */
#include "flame/fold.h"

/* the folder reads the tags we write (and splits one recording into modes by them) */
_Static_assert(SC_OFFCPU_TAG_RUNNING == FOLD_STATE_RUNNING &&
                   SC_OFFCPU_TAG_RUNNABLE == FOLD_STATE_RUNNABLE &&
                   SC_OFFCPU_TAG_SLEEPING == FOLD_STATE_SLEEPING,
               "wall's state tags");

#define STEER_MS 250
#define STEER_FIRST_MS 10 /* the first steering, after sc_offcpu_start */
#define SEQ_MASK 0xffffffull
#define DELTA_MASK ((1ull << OFFCPU_DELTA_BITS) - 1)

struct sc_offcpu {
    struct bpf_object *obj;
    int prog_fd, raw_fd, out_map_fd;
    struct offcpu_cpu *slots; /* mapped percpu_slots */
    size_t slots_len;
    uint64_t *done; /* mapped done table */
    size_t done_len;
    int ncpu;                        /* slots */
    unsigned rate[OFFCPU_KINDS];     /* by kind: to sleep, preempted */
    uint64_t calib_ns;               /* switch-outs counted unsampled since (attach or pause) ... */
    uint64_t calib_sw[OFFCPU_KINDS]; /* ... from these sums on (sc_offcpu_start's first p) */
    int64_t steer_ms;                /* the last steering (or the start) */
    int64_t steer_wait;              /* ms from there to the next */
    uint64_t steer_switchouts[OFFCPU_KINDS];
    int64_t kind_ms[OFFCPU_KINDS]; /* each kind's last steering (or the start) */
    bool counted[OFFCPU_KINDS];    /* its p since the start came from the first count */
    uint64_t end_ns; /* when sampling paused (CLOCK_MONOTONIC; 0: not yet): the window's end */
    sc_offcpu_pend pend;
};

static char last_msg[256]; /* libbpf's last warning, for our error message */

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBBPF_DEBUG)
        return 0;
    int n = vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    if (n > 0 && (size_t)n < sizeof last_msg && last_msg[n - 1] == '\n')
        last_msg[n - 1] = '\0';
    return 0;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---------------------------------------------------------------- pure parts */

uint64_t sc_offcpu_threshold(uint64_t switchouts, int64_t ms, unsigned rate)
{
    if (ms <= 0 || !rate)
        return OFFCPU_ALWAYS;
    double per_sec = (double)switchouts * 1000.0 / (double)ms;
    if (per_sec <= (double)rate)
        return OFFCPU_ALWAYS;
    double t = (double)rate / per_sec * (double)OFFCPU_ALWAYS;
    return t < OFFCPU_MIN_THRESHOLD ? OFFCPU_MIN_THRESHOLD : (uint64_t)t;
}

uint64_t sc_offcpu_first_threshold(uint64_t switchouts, uint64_t ns, unsigned rate)
{
    if (switchouts < SC_OFFCPU_CALIB_MIN || ns < 1000000)
        return OFFCPU_ALWAYS; /* too few to tell: every one until the first steering (10 ms) */
    /* in microseconds: a calibration of 2 ms must not round to 1 or 3 */
    return sc_offcpu_threshold(switchouts * 1000, (int64_t)(ns / 1000), rate);
}

uint64_t sc_offcpu_kfix(uint64_t threshold)
{
    if (threshold >= OFFCPU_ALWAYS)
        return 0; /* not used: every switch-out */
    if (threshold < OFFCPU_MIN_THRESHOLD)
        threshold = OFFCPU_MIN_THRESHOLD;
    double p = (double)threshold / (double)OFFCPU_ALWAYS;
    /* 1 / -log2(1 - p), in 2^-14; log1p keeps the small p exact */
    return (uint64_t)llround(-M_LN2 / log1p(-p) * (double)(1u << OFFCPU_KFIX_SHIFT));
}

void sc_offcpu_log2tab(uint32_t tab[OFFCPU_LOG2_TAB + 1])
{
    for (int i = 0; i <= OFFCPU_LOG2_TAB; i++)
        tab[i] = (uint32_t)lround(log2(1.0 + (double)i / OFFCPU_LOG2_TAB) * (double)(1u << 20));
}

unsigned sc_offcpu_events_code(uint64_t threshold, double u)
{
    if (threshold >= OFFCPU_ALWAYS || !threshold)
        return 0; /* every switch-out sampled: one event */
    if (threshold < OFFCPU_MIN_THRESHOLD)
        threshold = OFFCPU_MIN_THRESHOLD;
    double ev = (double)OFFCPU_ALWAYS / (double)threshold;
    double x = log2(ev) * FOLD_EVENTS_STEPS;
    unsigned lo = (unsigned)x; /* x >= 0, at most 24 * 128 */
    double a = fold_events_of(lo), b = fold_events_of(lo + 1);
    if (ev <= a)
        return lo;
    return u < (ev - a) / (b - a) ? lo + 1 : lo;
}

uint64_t sc_offcpu_with_events(uint64_t weight, unsigned code)
{
    if (weight > FOLD_EVENTS_VALUE_MAX)
        weight = FOLD_EVENTS_VALUE_MAX;
    return weight | (uint64_t)code << FOLD_EVENTS_SHIFT;
}

/* uniform in [0, 1) from a sample's sequence number (splitmix64's finaliser): which neighbour
 * its event code takes (sc_offcpu_events_code) */
static double seq_uniform(uint64_t seq)
{
    uint64_t z = seq + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

size_t sc_offcpu_convert(const unsigned char *r, size_t size, unsigned char *out,
                         sc_offcpu_raw *raw)
{
    /* header; ip; pid, tid; time; cpu, res; period; nr; ips[nr]; u32 raw size; raw; rest */
    if (size < 56 || size > 65535)
        return 0;
    uint32_t type;
    memcpy(&type, r, 4);
    if (type != PERF_RECORD_SAMPLE)
        return 0;
    uint64_t nr = get64(r + 48);
    if (nr > (size - 56) / 8)
        return 0;
    size_t chain_end = 56 + 8 * (size_t)nr;
    if (chain_end + 4 > size)
        return 0;
    uint32_t rsz;
    memcpy(&rsz, r + chain_end, 4);
    if (rsz < sizeof(struct offcpu_raw) || rsz > size - chain_end - 4 || (4 + rsz) % 8)
        return 0;
    size_t raw_end = chain_end + 4 + rsz;
    raw->seq = get64(r + chain_end + 4);
    raw->threshold = get64(r + chain_end + 12);
    raw->ts = get64(r + chain_end + 20);
    raw->runnable = get64(r + chain_end + 28) != 0;
    uint64_t ip = 0;
    for (size_t i = 0; i + 1 < nr; i++)
        if (get64(r + 56 + 8 * i) == (uint64_t)PERF_CONTEXT_USER) {
            ip = get64(r + 56 + 8 * (i + 1));
            break;
        }
    if (!ip || !raw->threshold || raw->threshold > OFFCPU_ALWAYS)
        return 0; /* no user stack (not a task of the target), or not the program's */
    memcpy(out, r, chain_end);
    memcpy(out + chain_end, r + raw_end, size - raw_end);
    size_t n = size - (raw_end - chain_end);
    uint16_t misc = PERF_RECORD_MISC_USER, sz = (uint16_t)n;
    memcpy(out + 4, &misc, 2);
    memcpy(out + 6, &sz, 2);
    put64(out + 8, ip); /* the tracepoint's kernel address never leaves */
    return n;
}

int sc_offcpu_pend_add(sc_offcpu_pend *p, const unsigned char *rec, size_t len,
                       const sc_offcpu_raw *raw)
{
    if (p->n >= SC_OFFCPU_PENDING || len < 48) {
        p->st.full++;
        return -1;
    }
    unsigned char *c = malloc(len);
    if (!c) {
        p->st.full++;
        return -1;
    }
    memcpy(c, rec, len);
    p->h[p->n++] = (sc_offcpu_held){.raw = *raw, .len = len, .rec = c};
    return 0;
}

int sc_offcpu_pend_pair(sc_offcpu_pend *p, const volatile uint64_t *done, uint64_t last_seq,
                        bool end, uint64_t now_ns, sc_offcpu_emit_fn emit, void *ctx)
{
    int rc = 0;
    for (int i = 0; i < p->n;) {
        sc_offcpu_held *h = &p->h[i];
        uint64_t v = done[h->raw.seq & (OFFCPU_DONE - 1)], d;
        if (v >> OFFCPU_DELTA_BITS == (h->raw.seq & SEQ_MASK)) {
            d = v & DELTA_MASK;
        } else if (last_seq - h->raw.seq >= OFFCPU_DONE / 2) {
            p->st.stale++; /* its entry may be another's by now: drop rather than guess */
            goto drop;
        } else if (end) {
            d = now_ns > h->raw.ts ? now_ns - h->raw.ts : 0; /* off CPU until the end */
            p->st.at_end++;
        } else {
            i++;
            continue;
        }
        if (d < p->min_ns || !d) {
            p->st.short_n++;
            goto drop;
        }
        {
            /* unbiased: an interval sampled with probability t/2^32 stands for 2^32/t of them */
            unsigned __int128 w = (unsigned __int128)d * OFFCPU_ALWAYS / h->raw.threshold;
            uint64_t weight = w > FOLD_EVENTS_VALUE_MAX ? FOLD_EVENTS_VALUE_MAX : (uint64_t)w;
            if (p->tags)
                weight = sc_offcpu_tag(weight, h->raw.runnable ? SC_OFFCPU_TAG_RUNNABLE
                                                               : SC_OFFCPU_TAG_SLEEPING);
            /* and the number of switch-outs to sleep it stands for (the folder counts them:
             * lock contentions); a preempted thread waited for a CPU, no event */
            unsigned code = h->raw.runnable
                                ? FOLD_EVENTS_NONE
                                : sc_offcpu_events_code(h->raw.threshold, seq_uniform(h->raw.seq));
            uint64_t period = sc_offcpu_with_events(weight, code);
            put64(h->rec + 24, get64(h->rec + 24) + d); /* at its switch-in */
            put64(h->rec + 40, period);
            p->st.paired++;
            p->st.weight_ns += weight;
            if (!rc)
                rc = emit(ctx, h->rec, h->len);
        }
    drop:
        free(h->rec);
        *h = p->h[--p->n];
    }
    return rc;
}

void sc_offcpu_pend_free(sc_offcpu_pend *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->h[i].rec);
    p->n = 0;
}

/* ---------------------------------------------------------------- the program */

int sc_offcpu_load(sc_offcpu **out, const sc_offcpu_opts *o, flame_err *err)
{
    *out = NULL;
    if (o->n_exclude < 0 || o->n_exclude > SC_OFFCPU_MAX_EXCLUDE)
        return flame_fail(err, FLAME_EXIT_USAGE, "off-CPU: bad options");
    sc_offcpu *oc = calloc(1, sizeof *oc);
    if (!oc)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    oc->prog_fd = oc->raw_fd = oc->out_map_fd = -1;
    oc->rate[OFFCPU_SLEPT] = o->rate ? o->rate : SC_OFFCPU_RATE;
    oc->rate[OFFCPU_PREEMPTED] =
        o->rate ? (o->rate / 5 ? o->rate / 5 : 1) : SC_OFFCPU_RATE_PREEMPTED;
    oc->pend.min_ns = o->min_ns;
    oc->pend.tags = o->tags;
    libbpf_set_print(quiet_print);
    last_msg[0] = '\0';
    LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "flame_offcpu");
    oc->obj = bpf_object__open_mem(offcpu_bpf, sizeof offcpu_bpf, &oo);
    if (!oc->obj) {
        int e = errno;
        free(oc);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "off-CPU program: open (%s)", last_msg);
    }
    struct bpf_map *ro = bpf_object__find_map_by_name(oc->obj, ".rodata");
    struct bpf_map *slots = bpf_object__find_map_by_name(oc->obj, "percpu_slots");
    struct bpf_map *done = bpf_object__find_map_by_name(oc->obj, "done");
    struct bpf_map *mout = bpf_object__find_map_by_name(oc->obj, "out");
    struct bpf_program *prog = bpf_object__find_program_by_name(oc->obj, "offcpu_switch");
    oc->ncpu = libbpf_num_possible_cpus();
    struct offcpu_cfg cfg = {.dev = o->dev, .ino = o->ino};
    for (int i = 0; i < o->n_exclude; i++)
        cfg.exclude[i] = (uint32_t)o->exclude[i];
    sc_offcpu_log2tab(cfg.log2tab);
    if (!ro || !slots || !done || !mout || !prog || oc->ncpu <= 0 ||
        bpf_map__set_initial_value(ro, &cfg, sizeof cfg) ||
        bpf_map__set_max_entries(slots, (uint32_t)oc->ncpu)) {
        sc_offcpu_close(oc);
        return flame_fail(err, FLAME_EXIT_ERROR, "off-CPU program: not the object expected");
    }
    /* PRIVILEGE: map creation and BPF_PROG_LOAD of a raw tracepoint program need CAP_BPF +
     * CAP_PERFMON (or CAP_SYS_ADMIN) */
    if (bpf_object__load(oc->obj)) {
        int e = errno;
        sc_offcpu_close(oc);
        return flame_fail_errno(err, FLAME_EXIT_PERF, e ? e : EPERM, "off-CPU program: load (%s)",
                                last_msg);
    }
    oc->prog_fd = bpf_program__fd(prog);
    oc->out_map_fd = bpf_map__fd(mout);
    long pg = sysconf(_SC_PAGESIZE);
    oc->slots_len =
        ((size_t)oc->ncpu * sizeof(struct offcpu_cpu) + (size_t)pg - 1) & ~((size_t)pg - 1);
    oc->done_len = OFFCPU_DONE * sizeof(uint64_t);
    void *m = mmap(NULL, oc->slots_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(slots), 0);
    void *d = m == MAP_FAILED
                  ? MAP_FAILED
                  : mmap(NULL, oc->done_len, PROT_READ, MAP_SHARED, bpf_map__fd(done), 0);
    if (m == MAP_FAILED || d == MAP_FAILED) {
        int e = errno;
        if (m != MAP_FAILED)
            munmap(m, oc->slots_len);
        sc_offcpu_close(oc);
        return flame_fail_errno(err, FLAME_EXIT_PERF, e, "off-CPU program: map its tables");
    }
    oc->slots = m;
    oc->done = d;
    sc_offcpu_pause(oc); /* nothing sampled before sc_offcpu_start */
    *out = oc;
    return 0;
}

int sc_offcpu_set_output(sc_offcpu *oc, int cpu, int fd, flame_err *err)
{
    uint32_t k = (uint32_t)cpu, v = (uint32_t)fd;
    if (bpf_map_update_elem(oc->out_map_fd, &k, &v, BPF_ANY))
        return flame_fail_errno(err, FLAME_EXIT_PERF, errno, "off-CPU output of CPU %d", cpu);
    return 0;
}

int sc_offcpu_attach(sc_offcpu *oc, flame_err *err)
{
    /* PRIVILEGE: a raw tracepoint by name: no tracefs, and not the sched_switch perf event */
    oc->raw_fd = bpf_raw_tracepoint_open("sched_switch", oc->prog_fd);
    if (oc->raw_fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_PERF, errno,
                                "off-CPU: attach to the sched_switch raw tracepoint");
    /* paused (threshold 0): from now on the program counts the target's switch-outs, each */
    oc->calib_ns = mono_ns();
    memset(oc->calib_sw, 0, sizeof oc->calib_sw);
    return 0;
}

static uint64_t switchouts(const sc_offcpu *oc, int k)
{
    uint64_t sw = 0;
    for (int c = 0; c < oc->ncpu; c++)
        sw += __atomic_load_n(&oc->slots[c].switchouts[k], __ATOMIC_RELAXED);
    return sw;
}

void sc_offcpu_settle(sc_offcpu *oc)
{
    if (!oc->calib_ns)
        return;
    uint64_t want = oc->calib_ns + SC_OFFCPU_CALIB_MS * 1000000ull, now = mono_ns();
    if (now < want) {
        struct timespec t = {.tv_sec = 0, .tv_nsec = (long)(want - now)};
        nanosleep(&t, NULL); /* interrupted: a shorter count, still a count */
    }
}

void sc_offcpu_start(sc_offcpu *oc, int64_t now_ms)
{
    for (int c = 0; c < oc->ncpu; c++) {
        struct offcpu_cpu *s = &oc->slots[c];
        /* the program of CPU c may write meanwhile: these are statistics */
        for (int k = 0; k < OFFCPU_KINDS; k++) {
            __atomic_store_n(&s->sampled[k], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->lost[k], 0, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&s->no_start, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->finished, 0, __ATOMIC_RELAXED);
    }
    /* The first probability of each kind: from the switch-outs the paused program counted since
     * the attach (or the last pause), when there were enough of them; else every one until the
     * first steering, which comes early (10 ms): a sample is not free (a callchain walk in the
     * target's thread, also when a full ring refuses it), but one with probability p < 1 stands
     * for 1/p of its interval, so p < 1 only from a count. */
    uint64_t now = mono_ns();
    for (int k = 0; k < OFFCPU_KINDS; k++) {
        uint64_t t = OFFCPU_ALWAYS;
        if (oc->calib_ns && now > oc->calib_ns)
            t = sc_offcpu_first_threshold(switchouts(oc, k) - oc->calib_sw[k], now - oc->calib_ns,
                                          oc->rate[k]);
        oc->counted[k] = t < OFFCPU_ALWAYS;
        oc->kind_ms[k] = now_ms;
        uint64_t kf = sc_offcpu_kfix(t);
        for (int c = 0; c < oc->ncpu; c++) {
            struct offcpu_cpu *s = &oc->slots[c];
            __atomic_store_n(&s->switchouts[k], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->kfix[k], kf, __ATOMIC_RELAXED);
            __atomic_store_n(&s->threshold[k], t, __ATOMIC_RELEASE);
        }
    }
    oc->steer_ms = now_ms;
    oc->steer_wait = STEER_FIRST_MS;
    oc->end_ns = 0;
    memset(oc->steer_switchouts, 0, sizeof oc->steer_switchouts);
}

void sc_offcpu_pause(sc_offcpu *oc)
{
    for (int c = 0; c < oc->ncpu; c++)
        for (int k = 0; k < OFFCPU_KINDS; k++)
            __atomic_store_n(&oc->slots[c].threshold[k], 0, __ATOMIC_RELAXED);
    oc->steer_ms = INT64_MAX / 2; /* no steering after this */
    oc->end_ns = mono_ns();
    /* the paused program counts each switch-out (plus the rest of each gap in progress: the
     * next start's first p errs low, never high) */
    oc->calib_ns = oc->end_ns;
    for (int k = 0; k < OFFCPU_KINDS; k++)
        oc->calib_sw[k] = switchouts(oc, k);
}

void sc_offcpu_steer(sc_offcpu *oc, int64_t now_ms)
{
    if (now_ms - oc->steer_ms < oc->steer_wait)
        return;
    /* each kind of switch-out (bpf/offcpu.h OFFCPU_SLEPT, OFFCPU_PREEMPTED) to the rate */
    for (int k = 0; k < OFFCPU_KINDS; k++) {
        /* A p from the first count is not steered after 10 ms: its gaps (1/p switch-outs, their
         * count added when they end) have mostly not ended yet, so 10 ms would count ~none and
         * set p = 1 for the next 250 ms. */
        if (oc->counted[k] && now_ms - oc->kind_ms[k] < STEER_MS)
            continue;
        oc->counted[k] = false;
        uint64_t sw = switchouts(oc, k);
        uint64_t t =
            sc_offcpu_threshold(sw - oc->steer_switchouts[k], now_ms - oc->kind_ms[k], oc->rate[k]);
        uint64_t kf = sc_offcpu_kfix(t);
        for (int c = 0; c < oc->ncpu; c++) {
            /* kfix first: a program that sees the new threshold draws with its kfix (one that
             * reads them between the two stores draws one gap with the old threshold's kfix) */
            __atomic_store_n(&oc->slots[c].kfix[k], kf, __ATOMIC_RELAXED);
            __atomic_store_n(&oc->slots[c].threshold[k], t, __ATOMIC_RELEASE);
        }
        oc->steer_switchouts[k] = sw;
        oc->kind_ms[k] = now_ms;
    }
    oc->steer_ms = now_ms;
    oc->steer_wait = STEER_MS;
}

int sc_offcpu_hold(sc_offcpu *oc, const unsigned char *rec, size_t len, const sc_offcpu_raw *raw)
{
    return sc_offcpu_pend_add(&oc->pend, rec, len, raw);
}

int sc_offcpu_flush(sc_offcpu *oc, bool end, sc_offcpu_emit_fn emit, void *ctx)
{
    uint64_t last = __atomic_load_n(&oc->slots[0].seq, __ATOMIC_ACQUIRE);
    /* a thread still off CPU at the end counts until the window's end, not until this pass
     * (late on a loaded machine: hundreds of ms more for each such sample, times 1/p) */
    return sc_offcpu_pend_pair(&oc->pend, oc->done, last, end,
                               end && oc->end_ns ? oc->end_ns : mono_ns(), emit, ctx);
}

/* run_cnt and run_time_ns of a program, from its fdinfo */
static void prog_runs(int fd, uint64_t *cnt, uint64_t *ns)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = f < 0 ? -1 : read(f, buf, sizeof buf - 1);
    if (f >= 0)
        close(f);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *p = strstr(buf, "run_time_ns:");
    if (p)
        *ns = strtoull(p + 12, NULL, 10);
    p = strstr(buf, "run_cnt:");
    if (p)
        *cnt = strtoull(p + 8, NULL, 10);
}

void sc_offcpu_get_stats(const sc_offcpu *oc, sc_offcpu_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!oc)
        return;
    *st = oc->pend.st;
    for (int c = 0; c < oc->ncpu; c++) {
        const struct offcpu_cpu *s = &oc->slots[c];
        for (int k = 0; k < OFFCPU_KINDS; k++) {
            st->kind_switchouts[k] += __atomic_load_n(&s->switchouts[k], __ATOMIC_RELAXED);
            st->kind_sampled[k] += __atomic_load_n(&s->sampled[k], __ATOMIC_RELAXED);
            st->lost += __atomic_load_n(&s->lost[k], __ATOMIC_RELAXED);
        }
        st->no_start += __atomic_load_n(&s->no_start, __ATOMIC_RELAXED);
        st->finished += __atomic_load_n(&s->finished, __ATOMIC_RELAXED);
    }
    for (int k = 0; k < OFFCPU_KINDS; k++) {
        st->switchouts += st->kind_switchouts[k];
        st->sampled += st->kind_sampled[k];
    }
    st->threshold = oc->slots[0].threshold[OFFCPU_SLEPT];
    prog_runs(oc->prog_fd, &st->runs, &st->run_ns);
}

void sc_offcpu_close(sc_offcpu *oc)
{
    if (!oc)
        return;
    if (oc->raw_fd >= 0) /* detach first */
        close(oc->raw_fd);
    if (oc->slots)
        munmap(oc->slots, oc->slots_len);
    if (oc->done)
        munmap(oc->done, oc->done_len);
    bpf_object__close(oc->obj); /* the program's and maps' descriptors */
    sc_offcpu_pend_free(&oc->pend);
    free(oc);
}
