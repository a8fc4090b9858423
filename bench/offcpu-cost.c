/* The off-CPU recorder's cost per context switch, and its samples, outside any container
 * (docs/BENCHMARKS.md "Off-CPU"): as root on the host, against the processes of one PID
 * namespace (e.g. a fixture container's JVM):
 *     offcpu-cost <pid in that namespace, as seen from here> <seconds> [wall|offcpu] [out.data]
 * It records per CPU with the off-CPU programs (percpu.h, offcpu.h) as the sidecar does (no
 * stack walker: the kernel's frame-pointer chains), turns on the kernel's BPF statistics for
 * its run only (BPF_ENABLE_STATS: a descriptor, off again when it is closed), and prints the
 * host's context switches per second (/proc/stat ctxt), the programs' runs and ns per run, and
 * the recorder's counters. out.data (pipe-format perf.data) is for `perf script -F ...,period`.
 * OFFCPU_NO_STATS=1: without the statistics (which cost ~55 ns a run here themselves), for A/B
 * windows of a fixture's own work rate. OFFCPU_RATE=N: the sampling rate of sleeps (default 250/s,
 * preemptions a fifth of it; 1 leaves the per-switch path alone). */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/recorder/percpu.h"

static unsigned long long ctxt(void)
{
    char buf[1 << 16];
    int fd = open("/proc/stat", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nctxt ");
    return p ? strtoull(p + 6, NULL, 10) : 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PID SECONDS [wall|offcpu] [OUT]\n", argv[0]);
        return 2;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/ns/pid", argv[1]);
    double secs = atof(argv[2]);
    bool wall = argc > 3 && !strcmp(argv[3], "wall");
    int out = open(argc > 4 ? argv[4] : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    sc_percpu_opts o = {.freq = 99, .offcpu = wall ? SC_PERCPU_WALL : SC_PERCPU_OFFCPU};
    /* OFFCPU_RATE=N: sampled switch-outs per second (1: the per-switch path alone) */
    o.offcpu_rate = getenv("OFFCPU_RATE") ? (unsigned)atoi(getenv("OFFCPU_RATE")) : 0;
    o.pidns_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (o.pidns_fd < 0 || out < 0) {
        perror(path);
        return 1;
    }
    /* the statistics cost two clock reads per run themselves: OFFCPU_NO_STATS=1 for A/B runs */
    int stats_fd = getenv("OFFCPU_NO_STATS") ? -1 : bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (stats_fd < 0 && !getenv("OFFCPU_NO_STATS"))
        fprintf(stderr, "BPF statistics: %s (run times will read 0)\n", strerror(errno));
    flame_err e = FLAME_ERR_INIT;
    sc_percpu *p = NULL;
    if (sc_percpu_open(&p, &o, &e) < 0 || sc_percpu_write_header(p, out, &e) < 0 ||
        sc_percpu_enable(p, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    unsigned long long c0 = ctxt();
    double t0 = now_s();
    while (now_s() - t0 < secs)
        if (sc_percpu_pump(p, out, -1, 50, &e) < 0) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
    double t1 = now_s();
    unsigned long long c1 = ctxt();
    sc_percpu_disable(p, &e);
    sc_percpu_pump(p, out, -1, 0, &e);
    sc_offcpu_stats s;
    sc_percpu_stats ps;
    sc_percpu_get_offcpu_stats(p, &s);
    sc_percpu_get_stats(p, &ps);
    double dt = t1 - t0;
    printf("switches/s %.0f  program: runs %llu ns/run %.1f  = %.3f %% of one CPU\n",
           (double)(c1 - c0) / dt, (unsigned long long)s.runs,
           s.runs ? (double)s.run_ns / (double)s.runs : 0.0, (double)s.run_ns / (dt * 1e9) * 100.0);
    printf("kinds: slept=%llu/%llu preempted=%llu/%llu (switch-outs/sampled)\n",
           (unsigned long long)s.kind_switchouts[0], (unsigned long long)s.kind_sampled[0],
           (unsigned long long)s.kind_switchouts[1], (unsigned long long)s.kind_sampled[1]);
    printf("target: switch-outs %llu sampled %llu lost %llu no_start %llu finished %llu "
           "p %.4f; written %llu (at end %llu) short %llu stale %llu full %llu, %.3f s off CPU; "
           "samples kept %llu dropped %llu\n",
           (unsigned long long)s.switchouts, (unsigned long long)s.sampled,
           (unsigned long long)s.lost, (unsigned long long)s.no_start,
           (unsigned long long)s.finished, (double)s.threshold / 4294967296.0,
           (unsigned long long)s.paired, (unsigned long long)s.at_end,
           (unsigned long long)s.short_n, (unsigned long long)s.stale, (unsigned long long)s.full,
           (double)s.weight_ns / 1e9, (unsigned long long)ps.samples,
           (unsigned long long)ps.samples_dropped);
    sc_percpu_close(p);
    if (stats_fd >= 0)
        close(stats_fd);
    return 0;
}
