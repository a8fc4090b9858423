/* The sidecar's recorder: how record.c and top.c take samples (docs/SIDECAR.md "Sampling"). A
 * recording is a child that writes pipe-format perf.data on a pipe and ends when "stop\n" arrives
 * on its control pipe; sampler.c starts, reads, stops and reaps it, and perfstream.c counts the
 * samples in the stream as it passes. Two kinds:
 *   per CPU    (default) our own child around percpu.c (percpu_filter.c keeps only the target's
 *              PID namespace, percpu_synth.c describes its processes), whose JVM samples
 *              interp.c rewrites: their stacks walked by walk.c (HotSpot's code cache through
 *              codeheap.c, native unwind tables through ehframe.c; docs/SIDECAR.md "Stack
 *              walking"), their Java frames named through HotSpot's VMStructs (hotspot.c);
 *   per thread `perf record -p <JVMs>`, the fallback when per-CPU events are refused.
 * This header is the recorder's face; percpu.h, percpu_impl.h, interp.h, hotspot.h, walk.h,
 * codeheap.h, ehframe.h and wread.h are its insides (and their unit tests'). Compiled BPF programs
 * go to bpf/, beside their loaders. Module prefixes: sc_sampler_, sc_perfstream_ (here);
 * sc_percpu_, sc_interp_, sc_hs_, sc_walk(er)_, sc_ch_, sc_eh_, sc_wr_ inside. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

typedef struct sc_session sc_session; /* sidecar/session.h */

/* ---- perfstream.c: counting samples in perf's pipe-mode stream, pure ---- */
typedef struct sc_perfstream {
    unsigned char hdr[32];
    size_t have;             /* bytes of the current header collected */
    unsigned long long skip; /* bytes of the current record body still to skip */
    bool started;            /* pipe file header consumed */
    bool bad;
    unsigned long long samples, lost;
} sc_perfstream;
void sc_perfstream_feed(sc_perfstream *ps, const unsigned char *buf, size_t len);

/* ---- sampler.c: one recording, from start to reaping ---- */
/* The whole environment of every perf we exec: the recorder's, and process.c's perf script. */
extern char *const sc_perf_env[];
/* Where the recorder writes the names of a JVM's interpreted frames, for process.c and top.c to
 * append to its map, in the work directory (session.h): interp-<pid>.names (record), or
 * interp-<pid>-<window>.names (top's windows, window >= 0). */
void sc_interp_names_path(char *buf, size_t cap, pid_t pid, int window);
typedef struct sc_sampler {
    int mode;          /* enum ct_sampling: CT_SAMPLING_CPU or CT_SAMPLING_THREAD */
    pid_t pid;         /* the recorder process */
    pid_t walker_pid;  /* per thread, walking: the rewriter between perf and us (threadwalk.h) */
    int out_fd;        /* its pipe-format perf.data */
    int ctl_fd;        /* "stop\n" ends it */
    int64_t stop_sent; /* mono_ms() of the stop, 0 before */
    int cpus;
    char filter[8]; /* "bpf", "user" (per CPU), "pid" (per thread) */
    char caps_open[20], caps_record[20];
    char bpf_refused[400]; /* why the in-kernel filter could not be used, "" */
    bool boottime;         /* per CPU: sample times are CLOCK_BOOTTIME */
} sc_sampler;
/* Start a recorder of every JVM of s: per CPU unless s->sampling is CT_SAMPLING_THREAD; when
 * per-CPU events are refused, per thread with one W line (auto) or E perf_denied (--sampling
 * cpu). s->sampling then records the decision. live: samples should reach us as they are taken
 * (perf's --no-buffering in per-thread mode). exclude: more of our own processes (tgids) whose
 * samples are never kept. */
int sc_sampler_start(sc_session *s, bool live, const pid_t *exclude, int n_exclude, sc_sampler *r,
                     flame_err *err);
void sc_sampler_stop(sc_sampler *r);
/* Close, reap (bounded); the wait status. */
int sc_sampler_end(sc_sampler *r);

/* One recording from start to end, its stream teed into data_fd and counted. */
typedef struct sc_run {
    int data_fd;
    int64_t duration_ms; /* 0 = until *stop */
    int64_t grace_ms;    /* how long the recorder may take to end after "stop" */
    bool live;
    const pid_t *exclude;
    int n_exclude;
    int extra_fd; /* also polled (-1: none); on_extra(ctx) when readable */
    void (*on_extra)(void *ctx);
    void (*on_tick)(void *ctx, int64_t elapsed_ms, const sc_perfstream *ps); /* ~5 times/s */
    void *ctx;
} sc_run;
typedef struct sc_run_result {
    sc_perfstream ps;
    int64_t start, ms;
    int mode;
    char filter[8];
    int status, write_errno;
    bool boottime; /* sample times are CLOCK_BOOTTIME */
} sc_run_result;
int sc_sampler_run(sc_session *s, const sc_run *run, sc_run_result *res, flame_err *err);
