/* Per-sample cost, in the sampled thread, of what interpreted-frame naming adds to each sample
 * (sidecar/recorder/interp.h): the user registers bp/sp/ip and a 16 or 48 KiB copy of the user
 * stack, on top of the fp callchain the recorder always takes. A child spins on fixed work units
 * DEPTH_KB deep in frame-pointer frames; a cpu-clock event on it samples at HZ (amplified, so that
 * the cost shows; the ring is drained every ms so that no sample is lost) with each configuration
 * in turn; the work lost per CPU-second divided by the samples per CPU-second is the cost of one
 * sample. Modes alternate so machine noise spreads evenly. build/bench/interp-cost HZ SECS REPS
 * DEPTH_KB Prints one line per run and the mean per mode. perf_event_paranoid <= 2 allows this on
 * our own child, user space only. */
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGES 256 /* 1 MiB: a 48 KiB sample each 0.2 ms at 5 kHz, drained each ms */

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile unsigned long sink;

static void spin(double secs, int out)
{
    unsigned long units = 0, x = 1;
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        units++;
    } while (now(CLOCK_MONOTONIC) - w0 < secs);
    double r = (double)units / (now(CLOCK_THREAD_CPUTIME_ID) - c0);
    sink = x;
    if (write(out, &r, sizeof r) != sizeof r)
        _exit(1);
}

__attribute__((noinline)) static void deep(int n, double secs, int out)
{
    volatile char pad[200];
    pad[0] = (char)n;
    if (n > 0)
        deep(n - 1, secs, out);
    else
        spin(secs, out);
    sink += (unsigned long)pad[0];
}

/* mode 0: no event; 1: callchain; 2: callchain + regs + 16 KiB stack (the recorder's copy until
 * javac's stacks showed it short); 3: the same with 48 KiB (interp.h's SC_INTERP_STACK now) */
static int run(int mode, unsigned hz, double secs, int frames, double *units, double *samples,
               double *bytes)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    int go[2];
    if (pipe(go) < 0)
        return -1;
    pid_t c = fork();
    if (c == 0) {
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(1);
        deep(frames, secs, p[1]);
        _exit(0);
    }
    int fd = -1;
    struct perf_event_mmap_page *m = NULL;
    size_t len = (PAGES + 1) * 4096;
    if (mode) {
        struct perf_event_attr a = {.size = sizeof a,
                                    .type = PERF_TYPE_SOFTWARE,
                                    .config = PERF_COUNT_SW_CPU_CLOCK,
                                    .freq = 1,
                                    .sample_freq = hz,
                                    .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                                   PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                                   PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
                                    .exclude_kernel = 1,
                                    .exclude_hv = 1,
                                    .exclude_callchain_kernel = 1};
        if (mode >= 2) {
            a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
            a.sample_regs_user = 0x1c0;
            a.sample_stack_user = mode == 2 ? 16384 : 49152;
        }
        fd = (int)syscall(SYS_perf_event_open, &a, c, -1, -1, 0);
        m = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fd < 0 || m == MAP_FAILED) {
            perror("perf_event_open/mmap");
            kill(c, SIGKILL);
            return -1;
        }
    }
    if (write(go[1], "x", 1) != 1)
        return -1;
    double n = 0, by = 0;
    for (;;) {
        if (m) { /* drain: count samples and bytes, as the recorder's pump would */
            uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;
            const unsigned char *d = (const unsigned char *)m + 4096;
            while (tail < head) {
                struct perf_event_header h;
                for (size_t k = 0; k < sizeof h; k++)
                    ((unsigned char *)&h)[k] = d[(tail + k) & (PAGES * 4096 - 1)];
                if (h.size < sizeof h)
                    break;
                if (h.type == PERF_RECORD_SAMPLE)
                    n++, by += h.size;
                tail += h.size;
            }
            __atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
        }
        if (waitpid(c, NULL, WNOHANG) == c)
            break;
        usleep(1000); /* a sample each 0.2 ms at 5 kHz: 256 pages hold 20 of 48 KiB */
    }
    if (read(p[0], units, sizeof *units) != sizeof *units)
        return -1;
    *samples = n / secs;
    *bytes = n ? by / n : 0;
    if (m)
        munmap(m, len);
    if (fd >= 0)
        close(fd);
    close(p[0]), close(p[1]), close(go[0]), close(go[1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: interp-cost HZ SECS REPS DEPTH_KB\n");
        return 2;
    }
    unsigned hz = (unsigned)atoi(argv[1]);
    double secs = atof(argv[2]);
    int reps = atoi(argv[3]), frames = atoi(argv[4]) * 1024 / 224;
    static const char *const name[4] = {"none", "callchain", "callchain+regs+stack16k",
                                        "callchain+regs+stack48k"};
    double su[4] = {0}, ss[4] = {0}, sb[4] = {0};
    for (int r = 0; r < reps; r++)
        for (int mode = 0; mode < 4; mode++) {
            double u, s, b;
            if (run(mode, hz, secs, frames, &u, &s, &b) < 0)
                return 1;
            printf("rep %d %-24s units/cpu_s %9.1f samples/s %7.1f bytes/sample %7.0f\n", r,
                   name[mode], u, s, b);
            su[mode] += u, ss[mode] += s, sb[mode] += b;
        }
    for (int mode = 1; mode < 4; mode++) {
        double u0 = su[0] / reps, u = su[mode] / reps, s = ss[mode] / reps;
        double us = s > 0 ? (u0 - u) / u0 / s * 1e6 : 0;
        printf("mean %-24s %.1f us/sample  %.0f bytes/sample in the ring  %.2f %% at 99 Hz\n",
               name[mode], us, sb[mode] / reps, us * 99 / 1e4);
    }
    return 0;
}
