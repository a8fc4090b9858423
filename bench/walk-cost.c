/* The stack walker's cost per sample (docs/BENCHMARKS.md "Stack walking"), on the recorded samples
 * of real JVMs (tests/data/walk, tests/walk/README.md): the recorder's whole rewrite of a sample
 * (parse, walk, name every Java frame, write the chain: sidecar/recorder/interp.c) and the walk
 * alone, cold (the first pass over a fixture: caches empty, the code cache and unwind tables read)
 * and warm (the same samples again), the recorder's pump passes (every 50 ms) where they were
 * when the samples were recorded. The JVM's memory is served from the recording (fixture.c's
 * pread), so a warm figure is the walker's own CPU; a live read of /proc/<pid>/mem costs ~1-2 us
 * more per read that misses the caches (the cold figure's reads are counted). build/bench/walk-cost
 * FILE... ROUNDS */
#include <fcntl.h>
#include <malloc.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/interp.h"
#include "sidecar/recorder/walk.h"
#include "tests/walk/fixture.h"

/* The thread's CPU time: on a shared machine the wall clock counts other work's time slices too
 * (walk_us, the walker's own CLOCK_MONOTONIC figure, does). */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: walk-cost FIXTURE.walk.gz... ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[argc - 1]);
    printf("%-20s %7s %6s %8s %10s %8s %8s %10s %10s\n", "fixture", "samples", "frames", "cold_us",
           "cold_reads", "warm_us", "walk_us", "per100_us", "warm_reads");
    for (int a = 1; a < argc - 1; a++) {
        wf_fixture f;
        if (wf_read(argv[a], &f) < 0) {
            fprintf(stderr, "walk-cost: cannot read %s\n", argv[a]);
            return 1;
        }
        int mem = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int names = open("/dev/null", O_WRONLY | O_CLOEXEC);
        wf_replay(mem, &f);
        wf_at(0);
        pid_t pid = (pid_t)f.pid;
        sc_interp *in = sc_interp_new(&pid, &mem, &names, 1);
        for (uint32_t i = 0; i < f.n_maps; i++)
            sc_interp_note_map(in, pid, f.maps[i].start, f.maps[i].end, f.maps[i].pgoff,
                               f.maps[i].path);
        if (sc_interp_start(in) != 1 || sc_interp_walk_why(in, pid)) {
            fprintf(stderr, "walk-cost: %s: no walker\n", argv[a]);
            return 1;
        }
        sc_interp_pass(in);
        sc_interp_pass(in); /* the unloading floor: names are given */
        static unsigned char out[65536];
        /* cold: the first pass, every read a miss (counted through the replay) */
        uint64_t r0 = wf_replay_reads();
        double t0 = now();
        for (uint32_t i = 0; i < f.n_samples; i++) {
            wf_at(i);
            if (i && f.samples[i].pass != f.samples[i - 1].pass)
                sc_interp_pass(in); /* the recorder's passes as they were */
            sc_interp_rewrite(in, f.samples[i].rec, f.samples[i].len, out);
        }
        double cold = now() - t0;
        uint64_t cold_reads = wf_replay_reads() - r0;
        r0 = wf_replay_reads();
        sc_walk_stats ws0;
        sc_interp_walk_stats(in, pid, &ws0);
        /* warm: the same samples again, a pump pass each round */
        double warm = 0;
        for (int r = 0; r < rounds; r++) {
            t0 = now();
            for (uint32_t i = 0; i < f.n_samples; i++) {
                wf_at(i);
                if (i == 0 || f.samples[i].pass != f.samples[i - 1].pass) {
                    sc_interp_pass(in);
                    if (i == 0)
                        sc_interp_pass(in); /* the counters start over: a floor at once */
                }
                sc_interp_rewrite(in, f.samples[i].rec, f.samples[i].len, out);
            }
            warm += now() - t0;
        }
        sc_walk_stats ws;
        sc_interp_walk_stats(in, pid, &ws);
        uint64_t warm_reads = wf_replay_reads() - r0;
        uint64_t walks = ws.walks - ws0.walks, frames = ws.frames - ws0.frames;
        double walk_ns = (double)(ws.ns - ws0.ns);
        double per_sample = warm / ((double)rounds * f.n_samples);
        double per_frame = walks ? (double)frames / (double)walks : 0;
        const char *base = strrchr(argv[a], '/');
        printf("%-20s %7u %6.0f %8.1f %10.1f %8.2f %8.2f %10.2f %10.2f\n",
               base ? base + 1 : argv[a], f.n_samples, per_frame, cold / 1000.0 / f.n_samples,
               (double)cold_reads / f.n_samples, per_sample / 1000.0,
               walks ? walk_ns / 1000.0 / (double)walks : 0,
               per_frame ? per_sample / 1000.0 * 100.0 / per_frame : 0,
               (double)warm_reads / ((double)rounds * f.n_samples));
        if (getenv("WALK_COST_DEBUG")) {
            sc_interp_stats is;
            sc_interp_get_stats(in, &is);
            fprintf(stderr,
                    "  unload_window=%llu named=%llu compiled_named=%llu nc_hits=%llu heap=%zu "
                    "KiB\n",
                    (unsigned long long)is.unload_window, (unsigned long long)is.named,
                    (unsigned long long)is.compiled_named, (unsigned long long)is.nc_hits,
                    mallinfo2().uordblks >> 10);
        }
        sc_interp_free(in);
        wf_free(&f);
    }
    return 0;
}
