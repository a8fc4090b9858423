/* What percpu.c, percpu_filter.c and percpu_synth.c share: the recorder's state and the record
 * encoding helpers (formats: percpu.c's opening comment). Internal to the sidecar's recorder.
 * NEEDSWORK: each of the three files sees all of the state here (rings, poll fds, the filter, two
 * 64 KiB buffers), and the filter's type and bounds live in percpu.h: percpu_filter.c takes names
 * from percpu's headers while percpu.c calls it, a circle in reading if not in linking. Give the
 * filter a header of its own (its type, its bounds, tracked/keep_pid) and the byte helpers one
 * that interp.c shares instead of its own get64, before the profile modes add their state. */
#pragma once
#include <linux/perf_event.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sidecar/recorder/percpu.h"

/* perf 6.1 finds the ids after HEADER_ATTR's attr at sizeof(its struct perf_event_attr), which
 * is 128 (PERF_ATTR_SIZE_VER7); newer perfs use attr.size. Writing exactly 128 bytes with
 * size = 128 satisfies both. Nothing we set lives beyond those 128 bytes. */
#define FILE_ATTR_SIZE 128
#define TRAILER_SIZE 24 /* sample_id_all: TID (8) + TIME (8) + CPU (8) */
#define OUT_FLUSH (64 * 1024)
#define COMM_LEN 16
/* perf's own record types (user records, >= 64; not in the kernel's header) */
#define REC_HEADER_ATTR 64
#define REC_FINISHED_ROUND 68

typedef struct ring {
    int fd, cpu;
    uint64_t id;
    void *base; /* metadata page + data pages, shared with the kernel */
    size_t map_len;
    const unsigned char *data;
    uint64_t mask; /* data size - 1 (a power of two) */
    bool offcpu;   /* a bpf-output event of offcpu.bpf.c: samples in its own layout */
} ring;

struct sc_percpu {
    sc_percpu_opts o;
    struct perf_event_attr attr;
    ring *rings;
    struct pollfd *pfd; /* n rings + one slot for the caller's ctl fd */
    int n, prog_fd;
    sc_percpu_filter f;                  /* excluded tgids, their descendants, the counters */
    pid_t maps_pid[SC_PERCPU_MAX_PROCS]; /* sc_percpu_collect: processes to synthesize */
    int maps_fd[SC_PERCPU_MAX_PROCS];
    int n_maps;
    unsigned char *out;
    size_t out_len, out_cap;
    unsigned char rec[65536]; /* one record (u16 size) unwrapped from a ring */
    unsigned char rew[65536]; /* a sample rewritten by interp.h */
    sc_offcpu *oc;            /* off-CPU samples (offcpu.h), or NULL */
    int n_main;               /* rings of the main events (the first n_main); then off-CPU ones */
    bool ending;              /* disabled: the held off-CPU samples go out at the next pump */
    /* the varied cpu-clock period (percpu.h sc_percpu_jitter_period) */
    uint64_t period_ns;    /* T = 1e9/freq: every cpu-clock sample's weight; 0: no cpu-clock */
    uint64_t jit_first_ns; /* CLOCK_MONOTONIC of the enable */
    uint64_t jit_last_ns;  /* ... of the last change */
    uint64_t rng;          /* xorshift64 state */
    bool vary;             /* the period is varied (stops at disable or a refused ioctl) */
};

/* ---------------------------------------------------------------- small helpers */

static inline void put16(unsigned char *p, uint16_t v)
{
    memcpy(p, &v, 2);
}
static inline void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static inline void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static inline uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline bool tracked(const sc_percpu_filter *f, uint32_t pid)
{
    for (int i = 0; i < f->n_tracked; i++)
        if ((uint32_t)f->tracked[i] == pid)
            return true;
    return false;
}

/* Is a record of this pid (as the kernel translated it into our namespace), taken at time, the
 * target's? 0 = a task outside the namespace (the kernel reports it as pid 0; the namespace's
 * own init is 1, so no task of the target is ever 0); ours; then whose process it is
 * (percpu_filter.c: by cgroup, inherited through FORK records). */
static inline bool keep_pid(sc_percpu_filter *f, uint32_t pid, uint64_t time)
{
    return pid != 0 && pid != UINT32_MAX && !tracked(f, pid) &&
           (!f->classify || sc_percpu_filter_is_target(f, pid, time));
}

/* Append one record to the output (percpu.c); flush what is buffered to fd. */
int sc_pc_emit(sc_percpu *s, int fd, const unsigned char *r, size_t n, flame_err *err);
int sc_pc_flush(sc_percpu *s, int fd, flame_err *err);
/* The PID-namespace filter program for o's namespace, loaded (percpu_filter.c): its fd, or -1. */
int sc_pc_load_filter(const sc_percpu_opts *o, flame_err *err);
