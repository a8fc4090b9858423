/* walk-capture: record real samples of a running JVM for the stack walker's replay tests
 * (tests/walk/README.md). Run as root on the host, against a JVM started there:
 *     build/tests/walk-capture [-F HZ] [-n SAMPLES] [-t SECONDS] [-c COMM] PID OUT
 * One cpu-clock event per CPU with the recorder's sample type (percpu.c with interpreted-frame
 * naming: registers and 16 KiB of stack), samples of PID kept; each goes through the recorder's
 * own rewrite (sidecar/interp.c: the walk and the naming) at once, while every byte of the JVM's
 * memory that reads is logged (fixture.c). -c keeps only threads whose name starts with COMM.
 * A sample walked to its root is stored cut to the part of its stack copy the walk read. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "sidecar/recorder/interp.h"
#include "sidecar/recorder/walk.h"
#include "tests/walk/fixture.h"

#define PAGES 64
#define MAX_CPUS 256

static void die(const char *msg)
{
    fprintf(stderr, "walk-capture: %s%s%s\n", msg, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void read_maps(int pid, wf_fixture *f)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *m = fopen(path, "r");
    if (!m)
        die("open maps");
    f->maps = calloc(4096, sizeof *f->maps);
    while (fgets(line, sizeof line, m) && f->n_maps < 4096) {
        unsigned long long s, e, off;
        char perm[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perm, &off, &pos) < 4 ||
            perm[2] != 'x')
            continue;
        wf_map *w = &f->maps[f->n_maps++];
        *w = (wf_map){.start = s, .end = e, .pgoff = off};
        snprintf(w->path, sizeof w->path, "%s", pos ? line + pos : "");
        w->path[strcspn(w->path, "\n")] = '\0';
    }
    fclose(m);
}

static void read_threads(int pid, wf_fixture *f)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        die("open task");
    f->threads = calloc(65536, sizeof *f->threads);
    struct dirent *de;
    while ((de = readdir(d)) && f->n_threads < 65536) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char p2[320], c[32] = "";
        snprintf(p2, sizeof p2, "/proc/%d/task/%s/comm", pid, de->d_name);
        FILE *cf = fopen(p2, "r");
        if (cf) {
            if (!fgets(c, sizeof c, cf))
                c[0] = '\0';
            fclose(cf);
        }
        c[strcspn(c, "\n")] = '\0';
        wf_thread *t = &f->threads[f->n_threads++];
        t->tid = (uint32_t)atoi(de->d_name);
        snprintf(t->comm, sizeof t->comm, "%.15s", c);
    }
    closedir(d);
}

/* The sample cut to `used` bytes of its stack copy (plus a line of slack). */
static uint32_t cut(const unsigned char *r, uint32_t size, uint64_t used, unsigned char *out)
{
    const size_t fixed = 8 + 48;
    uint64_t nr;
    memcpy(&nr, r + fixed - 8, 8);
    size_t p = fixed + 8 * nr + 8 + 48; /* abi + 6 registers */
    uint64_t ss, dyn;
    memcpy(&ss, r + p, 8);
    if (!ss || p + 8 + ss + 8 > size) {
        memcpy(out, r, size);
        return size;
    }
    memcpy(&dyn, r + p + 8 + ss, 8);
    uint64_t keep = (used + 64 + 7) & ~7ull;
    if (keep > ss)
        keep = ss;
    memcpy(out, r, p);
    memcpy(out + p, &keep, 8);
    memcpy(out + p + 8, r + p + 8, keep);
    uint64_t nd = dyn < keep ? dyn : keep;
    memcpy(out + p + 8 + keep, &nd, 8);
    uint32_t n = (uint32_t)(p + 8 + keep + 8);
    uint16_t hs = (uint16_t)n;
    memcpy(out + 6, &hs, 2);
    return n;
}

int main(int argc, char **argv)
{
    int hz = 499, want = 400, opt;
    uint32_t stack = SC_INTERP_STACK; /* -s: a larger copy lets a replay judge smaller ones */
    double secs = 20;
    const char *comm = NULL;
    while ((opt = getopt(argc, argv, "F:n:t:c:s:")) != -1) {
        if (opt == 'F')
            hz = atoi(optarg);
        else if (opt == 'n')
            want = atoi(optarg);
        else if (opt == 't')
            secs = atof(optarg);
        else if (opt == 'c')
            comm = optarg;
        else if (opt == 's')
            stack = (uint32_t)strtoul(optarg, NULL, 0) & ~7u;
        else
            return 2;
    }
    if (argc - optind != 2) {
        fprintf(stderr,
                "usage: walk-capture [-F HZ] [-n SAMPLES] [-t SECONDS] [-c COMM] [-s STACK-BYTES] "
                "PID OUT\n");
        return 2;
    }
    int pid = atoi(argv[optind]);
    const char *out_path = argv[optind + 1];
    wf_fixture f = {.pid = (uint32_t)pid};
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int mem = open(path, O_RDONLY | O_CLOEXEC);
    int names = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (mem < 0 || names < 0)
        die("open the JVM's memory");
    wf_capture_start(mem);
    read_maps(pid, &f);
    pid_t p = pid;
    sc_interp *in = sc_interp_new(&p, &mem, &names, 1);
    for (uint32_t i = 0; i < f.n_maps; i++)
        sc_interp_note_map(in, p, f.maps[i].start, f.maps[i].end, f.maps[i].pgoff, f.maps[i].path);
    errno = 0;
    double ts = now();
    int started = sc_interp_start(in);
    fprintf(stderr, "walk-capture: VMStructs and the code cache read in %.1f ms\n",
            (now() - ts) * 1000);
    if (started != 1) {
        fprintf(stderr, "walk-capture: %s\n", sc_interp_why(in, p));
        return 1;
    }
    const char *why = sc_interp_walk_why(in, p);
    if (why) {
        fprintf(stderr, "walk-capture: no walker: %s\n", why);
        return 1;
    }
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > MAX_CPUS)
        ncpu = MAX_CPUS;
    int fds[MAX_CPUS];
    void *rings[MAX_CPUS];
    struct pollfd pfd[MAX_CPUS];
    long pg = sysconf(_SC_PAGESIZE);
    for (int c = 0; c < ncpu; c++) {
        struct perf_event_attr a = {.size = sizeof a,
                                    .type = PERF_TYPE_SOFTWARE,
                                    .config = PERF_COUNT_SW_CPU_CLOCK,
                                    .freq = 1,
                                    .sample_freq = (uint64_t)hz,
                                    .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                                   PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                                   PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
                                                   PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
                                    .sample_regs_user = SC_INTERP_REGS_MASK,
                                    .sample_stack_user = stack,
                                    .exclude_kernel = 1,
                                    .exclude_hv = 1,
                                    .exclude_callchain_kernel = 1,
                                    .disabled = 1};
        fds[c] = (int)syscall(SYS_perf_event_open, &a, -1, c, -1, PERF_FLAG_FD_CLOEXEC);
        if (fds[c] < 0)
            die("perf_event_open");
        rings[c] = mmap(NULL, (size_t)(PAGES + 1) * (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED,
                        fds[c], 0);
        if (rings[c] == MAP_FAILED)
            die("mmap");
        pfd[c] = (struct pollfd){.fd = fds[c], .events = POLLIN};
        ioctl(fds[c], PERF_EVENT_IOC_ENABLE, 0);
    }
    f.samples = calloc((size_t)want, sizeof *f.samples);
    static unsigned char rec[65536], outb[65536], cutb[65536];
    double t0 = now();
    uint32_t pass = 0;
    while ((int)f.n_samples < want && now() - t0 < secs) {
        poll(pfd, (nfds_t)ncpu, 20);
        wf_at(f.n_samples);
        sc_interp_pass(in);
        pass++;
        for (int c = 0; c < ncpu; c++) {
            struct perf_event_mmap_page *m = rings[c];
            const unsigned char *data = (unsigned char *)rings[c] + pg;
            uint64_t mask = (uint64_t)PAGES * (uint64_t)pg - 1;
            uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;
            while (tail < head) {
                struct perf_event_header h;
                for (size_t k = 0; k < sizeof h; k++)
                    ((unsigned char *)&h)[k] = data[(tail + k) & mask];
                if (h.size < sizeof h)
                    break;
                for (size_t k = 0; k < h.size; k++)
                    rec[k] = data[(tail + k) & mask];
                tail += h.size;
                uint32_t rpid, tid;
                memcpy(&rpid, rec + 16, 4);
                memcpy(&tid, rec + 20, 4);
                if (h.type != PERF_RECORD_SAMPLE || (int)rpid != pid || (int)f.n_samples >= want)
                    continue;
                if (comm) {
                    char cp[128], cn[32] = "";
                    snprintf(cp, sizeof cp, "/proc/%d/task/%u/comm", pid, tid);
                    FILE *cf = fopen(cp, "r");
                    if (cf) {
                        if (!fgets(cn, sizeof cn, cf))
                            cn[0] = '\0';
                        fclose(cf);
                    }
                    if (strncmp(cn, comm, strlen(comm)) != 0)
                        continue;
                }
                wf_at(f.n_samples);
                sc_walk_stats before, after;
                sc_interp_walk_stats(in, p, &before);
                if (!sc_interp_rewrite(in, rec, h.size, outb))
                    continue;
                sc_interp_walk_stats(in, p, &after);
                /* a walk that ended early keeps its whole copy: a later walker may go further */
                uint32_t n = after.status[SC_WALK_ROOT] != before.status[SC_WALK_ROOT]
                                 ? cut(rec, h.size, sc_interp_copy_used(in, p), cutb)
                                 : cut(rec, h.size, UINT64_MAX / 2, cutb);
                wf_sample *s = &f.samples[f.n_samples++];
                s->len = n;
                s->pass = pass;
                s->rec = malloc(n);
                memcpy(s->rec, cutb, n);
            }
            __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
        }
    }
    for (int c = 0; c < ncpu; c++)
        ioctl(fds[c], PERF_EVENT_IOC_DISABLE, 0);
    read_threads(pid, &f);
    if (wf_capture_ranges(&f) < 0 || wf_write(out_path, &f) < 0)
        die("write the fixture");
    sc_walk_stats ws;
    sc_interp_walk_stats(in, p, &ws);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < f.n_ranges; i++)
        bytes += f.ranges[i].len;
    fprintf(stderr, "walk-capture: %u samples, %u ranges (%llu bytes) of memory, %u overlays;",
            f.n_samples, f.n_ranges, (unsigned long long)bytes, f.n_overlays);
    for (int s = 0; s < SC_WALK_NSTATUS; s++)
        if (ws.status[s])
            fprintf(stderr, " %s=%llu", sc_walk_status_name(s), (unsigned long long)ws.status[s]);
    fprintf(stderr, "\n");
    sc_interp_free(in);
    return 0;
}
