/* Per-CPU sampling with an in-kernel PID-namespace filter, written out as pipe-format perf.data.
 * See percpu.h for the why and the privilege contract. Formats used here (kernel ABI and
 * tools/perf/Documentation/perf.data-file-format.txt):
 *   pipe header   { u64 magic "PERFILE2"; u64 size = 16 }
 *   records       { u32 type; u16 misc; u16 size; body } -- the kernel's own ring records are
 *                 copied verbatim; we add PERF_RECORD_HEADER_ATTR (64), synthesized COMM (3) and
 *                 MMAP2 (10), and PERF_RECORD_FINISHED_ROUND (68).
 *   sample body   (our sample_type IP|TID|TIME|CPU|PERIOD|CALLCHAIN, in the kernel's order)
 *                 u64 ip; u32 pid, tid; u64 time; u32 cpu, res; u64 period; u64 nr; u64 ips[nr]
 *   sample_id_all trailer of every other record: u32 pid, tid; u64 time; u32 cpu, res. */
#include "sidecar/recorder/percpu_impl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"
#include "sidecar/recorder/interp.h"

static int write_all(int fd, const unsigned char *b, size_t n, flame_err *err)
{
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, k < 0 ? errno : EIO,
                                    "write the recording");
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int sc_pc_flush(sc_percpu *s, int fd, flame_err *err)
{
    if (!s->out_len)
        return 0;
    int rc = write_all(fd, s->out, s->out_len, err);
    s->f.st.bytes += s->out_len;
    s->out_len = 0;
    return rc;
}

/* Append one record to the output buffer (flushed to fd when it grows past OUT_FLUSH). */
int sc_pc_emit(sc_percpu *s, int fd, const unsigned char *r, size_t n, flame_err *err)
{
    if (s->out_len + n > s->out_cap && sc_pc_flush(s, fd, err) < 0)
        return -1;
    /* n <= 65535 + 16 (u16 record size) < out_cap: it fits after a flush */
    memcpy(s->out + s->out_len, r, n);
    s->out_len += n;
    return s->out_len >= OUT_FLUSH ? sc_pc_flush(s, fd, err) : 0;
}

/* ---------------------------------------------------------------- opening */

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,8"), into a bitmap. All of them, not our
 * affinity: the sidecar may be confined to a cpuset while the target runs everywhere. */
static int online_cpus(unsigned char *set, int cap)
{
    char buf[1024];
    int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    int count = 0;
    if (n <= 0) { /* no sysfs: every configured CPU, ENODEV ones are skipped later */
        long c = sysconf(_SC_NPROCESSORS_CONF);
        for (int i = 0; i < c && i < cap; i++, count++)
            set[i] = 1;
        return count;
    }
    buf[n] = '\0';
    for (char *p = buf; *p && *p != '\n';) {
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (e == p || a < 0)
            return -1;
        if (*e == '-') {
            p = e + 1;
            b = strtol(p, &e, 10);
            if (e == p || b < a)
                return -1;
        }
        for (long i = a; i <= b && i < cap; i++)
            if (!set[i]) {
                set[i] = 1;
                count++;
            }
        p = *e == ',' ? e + 1 : e;
        if (*e != ',' && *e != '\n' && *e != '\0')
            return -1;
    }
    return count;
}

static int map_ring(ring *r, unsigned pages, flame_err *err)
{
    long pg = sysconf(_SC_PAGESIZE);
    r->map_len = (size_t)(pages + 1) * (size_t)pg;
    /* PROT_WRITE: we move data_tail, which makes the kernel stop rather than overwrite unread
     * data. The pages count against perf_event_mlock_kb per user (then RLIMIT_MEMLOCK): EPERM
     * here means that budget is used up by other perf users of the same uid. */
    r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (r->base == MAP_FAILED) {
        r->base = NULL;
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno,
                         "map the ring buffer of CPU %d (%u pages; perf_event_mlock_kb?)", r->cpu,
                         pages);
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    const struct perf_event_mmap_page *m = r->base;
    uint64_t off = m->data_offset ? m->data_offset : (uint64_t)pg;
    uint64_t size = m->data_size ? m->data_size : (uint64_t)pages * (uint64_t)pg;
    r->data = (const unsigned char *)r->base + off;
    r->mask = size - 1;
    return 0;
}

static int errno_class(int e)
{
    switch (e) {
    case EPERM:
    case EACCES:
        return SC_PERCPU_E_PERF_DENIED;
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP:
    case ENOSYS:
    case EINVAL:
        return SC_PERCPU_E_UNSUPPORTED;
    default:
        return SC_PERCPU_E_OTHER;
    }
}

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t sc_percpu_jitter_period(uint64_t t, uint64_t d, uint64_t *rng)
{
    uint64_t x = *rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *rng = x;
    double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1): 53 random bits */
    /* ln 3 = E[1/P] x Tc for P uniform on [Tc/2, 3Tc/2]; the 1 + T/2D: the half tick each
     * restart drops (percpu.h) */
    double tc = (double)t * 1.0986122886681098 / (1.0 + (double)t / (2.0 * (double)(d ? d : 1)));
    return (uint64_t)(tc * (0.5 + u));
}

/* A new period for every CPU's cpu-clock event, every SC_PERCPU_JITTER_MS at most (percpu.h).
 * A kernel that refuses the ioctl keeps the fixed period (the recording goes on). */
static void vary_period(sc_percpu *s)
{
    if (!s->vary)
        return;
    uint64_t now = mono_ns();
    if (now - s->jit_last_ns < (uint64_t)SC_PERCPU_JITTER_MS * 1000000u)
        return;
    uint64_t d = (now - s->jit_first_ns) / (s->f.st.period_changes + 1);
    for (int i = 0; i < s->n_main; i++) {
        uint64_t p = sc_percpu_jitter_period(s->period_ns, d, &s->rng);
        if (ioctl(s->rings[i].fd, PERF_EVENT_IOC_PERIOD, &p) < 0) {
            s->vary = false;
            return;
        }
    }
    s->jit_last_ns = now;
    s->f.st.period_changes++;
}

/* PRIVILEGED. The off-CPU programs for o's namespace (offcpu.h), loaded, not attached. */
static int load_offcpu(sc_percpu *s, const sc_percpu_opts *o, flame_err *err)
{
    struct stat st;
    if (fstat(o->pidns_fd, &st) < 0) {
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fstat the PID namespace");
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    sc_offcpu_opts oo = {.dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev),
                         .ino = (uint64_t)st.st_ino,
                         .min_ns = o->offcpu_min_ns,
                         .rate = o->offcpu_rate,
                         .tags = o->offcpu == SC_PERCPU_WALL};
    for (int i = 0; i < o->n_exclude && i < SC_OFFCPU_MAX_EXCLUDE; i++)
        oo.exclude[oo.n_exclude++] = o->exclude[i];
    if (sc_offcpu_load(&s->oc, &oo, err) < 0) {
        err->detail = SC_PERCPU_E_PERF_DENIED; /* the caller says so; no fallback gives it */
        return -1;
    }
    return 0;
}

/* PRIVILEGED. CPU cpu's bpf-output event: the off-CPU program writes its samples there, with
 * the user registers, callchain and stack copy of the task switching in, like cpu-clock's. */
static int open_offcpu_ring(sc_percpu *s, int cpu, unsigned pages, flame_err *err)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_BPF_OUTPUT;
    a.sample_period = 1;
    a.sample_type =
        (s->attr.sample_type & ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)) |
        PERF_SAMPLE_RAW | (s->attr.sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER));
    a.sample_regs_user = s->attr.sample_regs_user;
    a.sample_stack_user = s->attr.sample_stack_user;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.exclude_callchain_kernel = 1; /* the user chain of current (task_pt_regs) */
    a.sample_id_all = 1;            /* its LOST records carry the same trailer */
    a.use_clockid = s->attr.use_clockid;
    a.clockid = s->attr.clockid;
    a.disabled = 1;
    /* Woken at each sample, not when half full: with 48-KiB stack copies this ring holds 2
     * (wall) or 5 (offcpu) samples, and half of it is the 2nd or 3rd, so a recorder a few ms
     * late on a loaded machine lost up to 12 % of them (the totals were short by as much). The
     * steered rate (~250/s) bounds the wakeups. */
    a.watermark = 1;
    a.wakeup_watermark = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        flame_fail_errno(err, FLAME_EXIT_PERF, e, "perf_event_open(bpf-output, CPU %d)", cpu);
        err->detail = errno_class(e);
        return -1;
    }
    ring *r = &s->rings[s->n++];
    r->fd = fd;
    r->cpu = cpu;
    r->offcpu = true;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &r->id) < 0)
        r->id = 0;
    if (map_ring(r, pages, err) < 0 || sc_offcpu_set_output(s->oc, cpu, fd, err) < 0)
        return -1;
    return 0;
}

int sc_percpu_open(sc_percpu **out, const sc_percpu_opts *o, flame_err *err)
{
    *out = NULL;
    /* With stack copies (SC_INTERP_STACK, 48 KiB a sample) 64 pages hold 5 samples and wake us
     * every 2 or 3 (at 99 Hz: every ~25 ms; lost samples are counted and reported); 64 pages per
     * CPU stay within the kernel's unprivileged perf mlock allowance (516 KiB per CPU, shared
     * by every process of one uid: the run's own, harden.c) together with a second recording. */
    unsigned pages = o->ring_pages ? o->ring_pages : o->interp ? 64 : 32;
    if ((pages & (pages - 1)) || pages > 4096 || !o->freq || o->n_exclude < 0 ||
        o->n_exclude > SC_PERCPU_MAX_EXCLUDE) {
        flame_fail(err, FLAME_EXIT_USAGE, "sampler: bad options");
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    unsigned char set[SC_PERCPU_MAX_CPUS];
    memset(set, 0, sizeof set);
    int ncpu = online_cpus(set, SC_PERCPU_MAX_CPUS);
    if (ncpu <= 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "cannot tell the online CPUs");
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    sc_percpu *s = calloc(1, sizeof *s);
    int per_cpu = o->offcpu ? 2 : 1; /* off-CPU: a bpf-output event per CPU too */
    if (!s || !(s->rings = calloc((size_t)ncpu * (size_t)per_cpu, sizeof *s->rings)) ||
        !(s->pfd = calloc((size_t)ncpu * (size_t)per_cpu + 1, sizeof *s->pfd)) ||
        !(s->out = malloc(OUT_FLUSH * 2))) {
        if (s) {
            free(s->rings);
            free(s->pfd);
        }
        free(s);
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    s->out_cap = OUT_FLUSH * 2;
    s->o = *o;
    s->prog_fd = -1;
    sc_percpu_filter_init(&s->f, o->exclude, o->n_exclude);
    if (o->classify)
        sc_percpu_filter_set_target(&s->f, o->classify, o->classify_ctx);

    struct perf_event_attr *a = &s->attr;
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_CPU_CLOCK; /* hrtimer based: works in VMs without a PMU */
    a->freq = 1;                         /* cpu-clock turns this into a fixed period of 1/freq s */
    a->sample_freq = o->freq;
    if (o->offcpu == SC_PERCPU_OFFCPU) {
        /* no cpu-clock samples: an event that never samples, for the side-band records */
        a->config = PERF_COUNT_SW_DUMMY;
        a->freq = 0;
        a->sample_period = 1;
    }
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
    if (o->interp) {
        /* bp, sp and the top of the user stack: where interpreter frames keep their Method*
         * (interp.h). The kernel still walks the fp callchain for us (only perf's dwarf mode
         * turns that off); we drop both additions again before writing the sample. */
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = SC_INTERP_REGS_MASK;
        a->sample_stack_user = SC_INTERP_STACK;
    }
    /* User space only by default: a sample that interrupts the kernel is discarded before any
     * filter or unwinding (perf_exclude_event), and no kernel address is ever collected.
     * --kernel: kernel samples and the kernel part of each callchain too; the BPF filter still
     * judges by the interrupted task, so they are the target's own (system calls, faults). */
    a->exclude_kernel = o->kernel_text ? 0 : 1;
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = o->kernel_text ? 0 : 1;
    /* Side-band for processes that start or map code during the recording: exec (COMM with
     * COMM_EXEC), executable mmaps (MMAP2), fork/exit. The kernel sends these for every task on
     * the CPU; records of tasks outside our namespace carry pid 0 and are dropped in the pump. */
    a->mmap = 1;
    a->mmap2 = 1;
    /* MMAP2 with the mapped file's build-id (docs/SIDECAR.md "Native frames"): perf script then
     * refuses a --symfs copy whose build-id differs. */
    a->build_id = o->inode_names ? 0 : 1; /* host: the inode names the file instead */
    a->comm = 1;
    a->comm_exec = 1;
    a->task = 1;
    a->sample_id_all = 1; /* time on side-band records: perf script orders them with samples */
    if (o->clock_boottime) {
        /* allowed for cpu-clock (a software event, never in NMI context) since Linux 4.1 */
        a->use_clockid = 1;
        a->clockid = CLOCK_BOOTTIME;
    }
    a->disabled = 1;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)((size_t)pages * (size_t)sysconf(_SC_PAGESIZE) / 2);

    if (o->offcpu && load_offcpu(s, o, err) < 0) {
        sc_percpu_close(s);
        return -1;
    }
    if (!o->user_filter_only && o->offcpu != SC_PERCPU_OFFCPU) {
        s->prog_fd = sc_pc_load_filter(o, err);
        if (s->prog_fd < 0) {
            sc_percpu_close(s);
            return -1;
        }
    }
    for (int cpu = 0; cpu < SC_PERCPU_MAX_CPUS && s->n < ncpu; cpu++) {
        if (!set[cpu])
            continue;
        /* PRIVILEGE: pid -1 + a CPU = a CPU-wide event, which perf_event_paranoid >= 1 reserves
         * to CAP_PERFMON or CAP_SYS_ADMIN (checked here, once: the fd keeps working after the
         * capability is gone). Docker's default seccomp profile allows perf_event_open only
         * when the container holds CAP_SYS_ADMIN (20.10) or CAP_PERFMON (newer engines). */
        int fd = (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && errno == EINVAL && a->use_clockid && s->n == 0) {
            a->use_clockid = 0; /* a kernel without it: perf's own clock (st.boottime false) */
            a->clockid = 0;
            fd = (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        }
        if (fd < 0 && errno == ENODEV)
            continue; /* went offline since we read the list */
        if (fd < 0) {
            int e = errno;
            flame_fail_errno(err, FLAME_EXIT_PERF, e, "perf_event_open(cpu-clock, CPU %d)", cpu);
            err->detail = errno_class(e);
            sc_percpu_close(s);
            return -1;
        }
        ring *r = &s->rings[s->n++];
        r->fd = fd;
        r->cpu = cpu;
        /* The program runs at each overflow of this event, before the sample is written; a
         * 0 return discards it. No capability is checked here beyond owning both fds. */
        if (s->prog_fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, s->prog_fd) < 0) {
            flame_fail_errno(err, FLAME_EXIT_PERF, errno, "attach the filter to CPU %d", cpu);
            err->detail = SC_PERCPU_E_BPF_DENIED;
            sc_percpu_close(s);
            return -1;
        }
        if (ioctl(fd, PERF_EVENT_IOC_ID, &r->id) < 0)
            r->id = 0;
        if (map_ring(r, o->offcpu == SC_PERCPU_OFFCPU ? 16 : pages, err) < 0) {
            sc_percpu_close(s);
            return -1;
        }
    }
    s->n_main = s->n;
    for (int i = 0; s->oc && i < s->n_main; i++)
        if (open_offcpu_ring(s, s->rings[i].cpu, o->offcpu == SC_PERCPU_WALL ? 32 : 64, err) < 0) {
            sc_percpu_close(s);
            return -1;
        }
    if (s->oc && sc_offcpu_attach(s->oc, err) < 0) {
        err->detail = SC_PERCPU_E_PERF_DENIED;
        sc_percpu_close(s);
        return -1;
    }
    if (s->n == 0) {
        flame_fail(err, FLAME_EXIT_PERF, "no CPU could be sampled");
        err->detail = SC_PERCPU_E_UNSUPPORTED;
        sc_percpu_close(s);
        return -1;
    }
    /* The events hold the program now; our fd is no longer needed. */
    if (s->prog_fd >= 0) {
        close(s->prog_fd);
        s->prog_fd = -1;
        s->f.st.bpf = true;
    }
    if (o->offcpu == SC_PERCPU_OFFCPU)
        s->f.st.bpf = true; /* the off-CPU program judges the namespace in the kernel */
    s->f.st.cpus = s->n;
    if (o->offcpu != SC_PERCPU_OFFCPU) {
        /* the kernel's own conversion of a cpu-clock frequency (perf_swevent_init_hrtimer) */
        s->period_ns = 1000000000u / o->freq;
        /* below 20 us a drawn half period would meet the hrtimer's 10-us floor */
        s->vary = s->period_ns >= 20000;
        s->rng = mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)s;
        if (!s->rng)
            s->rng = 1;
    }
    s->f.st.boottime = a->use_clockid && a->clockid == CLOCK_BOOTTIME;
    *out = s;
    return 0;
}

int sc_percpu_enable(sc_percpu *s, flame_err *err)
{
    if (s->oc)
        sc_offcpu_settle(s->oc); /* the off-CPU program's first count (2 ms at most) */
    for (int i = 0; i < s->n; i++)
        if (ioctl(s->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
            return flame_fail_errno(err, FLAME_EXIT_PERF, errno, "enable CPU %d", s->rings[i].cpu);
    s->jit_first_ns = s->jit_last_ns = mono_ns();
    if (s->oc)
        sc_offcpu_start(s->oc, mono_ms());
    return 0;
}

int sc_percpu_disable(sc_percpu *s, flame_err *err)
{
    int rc = 0;
    s->vary = false;
    if (s->oc) {
        sc_offcpu_pause(s->oc);
        s->ending = true; /* the next pump writes the samples still held */
    }
    for (int i = 0; i < s->n; i++)
        if (ioctl(s->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0) < 0)
            rc = flame_fail_errno(err, FLAME_EXIT_PERF, errno, "disable CPU %d", s->rings[i].cpu);
    return rc;
}

void sc_percpu_close(sc_percpu *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        if (s->rings[i].base)
            munmap(s->rings[i].base, s->rings[i].map_len);
        close(s->rings[i].fd);
    }
    if (s->prog_fd >= 0)
        close(s->prog_fd);
    sc_offcpu_close(s->oc);
    for (int k = 0; k < s->n_maps; k++)
        close(s->maps_fd[k]);
    free(s->rings);
    free(s->pfd);
    free(s->out);
    free(s);
}

void sc_percpu_get_stats(const sc_percpu *s, sc_percpu_stats *st)
{
    *st = s->f.st;
}

void sc_percpu_get_offcpu_stats(const sc_percpu *s, sc_offcpu_stats *st)
{
    sc_offcpu_get_stats(s->oc, st);
}

/* ---------------------------------------------------------------- the file header */

int sc_percpu_write_header(sc_percpu *s, int fd, flame_err *err)
{
    unsigned char h[16];
    memcpy(h, "PERFILE2", 8);
    put64(h + 8, 16);
    if (sc_pc_emit(s, fd, h, sizeof h, err) < 0)
        return -1;
    size_t size = 8 + FILE_ATTR_SIZE + 8 * (size_t)s->n_main;
    _cleanup_free_ unsigned char *r = calloc(1, size);
    if (!r)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    put32(r, REC_HEADER_ATTR);
    put16(r + 6, (uint16_t)size);
    struct perf_event_attr fa = s->attr;
    fa.size = FILE_ATTR_SIZE;
    fa.disabled = 0; /* what perf script sees: an event that sampled */
    fa.watermark = 0;
    fa.wakeup_watermark = 0;
    /* the samples we write never carry these: sc_interp_rewrite takes them out */
    fa.sample_type &= ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
    fa.sample_regs_user = 0;
    fa.sample_stack_user = 0;
    if (s->o.offcpu == SC_PERCPU_OFFCPU) {
        /* what the samples are: taken at context switches, weighted by ns off CPU */
        fa.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
    }
    memcpy(r + 8, &fa, sizeof fa < FILE_ATTR_SIZE ? sizeof fa : FILE_ATTR_SIZE);
    for (int i = 0; i < s->n_main; i++)
        put64(r + 8 + FILE_ATTR_SIZE + 8 * (size_t)i, s->rings[i].id);
    if (sc_pc_emit(s, fd, r, size, err) < 0)
        return -1;
    return sc_pc_flush(s, fd, err);
}

/* ---------------------------------------------------------------- pumping the rings */

/* Copy the record at tail out of the ring (it may wrap around the end) into s->rec. Returns its
 * size, or 0 when the ring's contents make no sense (then the caller skips to head). */
static uint16_t ring_record(sc_percpu *s, const ring *r, uint64_t tail, uint64_t head)
{
    uint64_t size_all = r->mask + 1;
    unsigned char h[8];
    for (int k = 0; k < 8; k++)
        h[k] = r->data[(tail + (uint64_t)k) & r->mask];
    uint16_t size;
    memcpy(&size, h + 6, 2);
    if (size < 8 || size > head - tail)
        return 0;
    uint64_t off = tail & r->mask;
    if (off + size <= size_all) {
        memcpy(s->rec, r->data + off, size);
    } else {
        size_t first = (size_t)(size_all - off);
        memcpy(s->rec, r->data + off, first);
        memcpy(s->rec + first, r->data, size - first);
    }
    return size;
}

/* First pass over every ring, without consuming: FORK records (of our processes; every new
 * process's verdict) and exec COMMs. A child's first samples may sit in a ring drained before
 * the one holding its FORK. */
static void note_forks(sc_percpu *s, const uint64_t *heads)
{
    for (int i = 0; i < s->n; i++) {
        const ring *r = &s->rings[i];
        const struct perf_event_mmap_page *m = r->base;
        for (uint64_t tail = m->data_tail; tail < heads[i];) {
            uint32_t type = 0;
            for (int k = 0; k < 4; k++)
                type |= (uint32_t)r->data[(tail + (uint64_t)k) & r->mask] << (8 * k);
            uint16_t size =
                (uint16_t)(r->data[(tail + 6) & r->mask] | r->data[(tail + 7) & r->mask] << 8);
            if (size < 8 || size > heads[i] - tail)
                break;
            if ((type == PERF_RECORD_FORK || type == PERF_RECORD_COMM) &&
                ring_record(s, r, tail, heads[i]) == size)
                sc_percpu_filter_note_fork(&s->f, s->rec, size);
            tail += size;
        }
    }
}

static int drain(sc_percpu *s, ring *r, uint64_t head, int fd, bool *wrote, flame_err *err)
{
    struct perf_event_mmap_page *m = r->base;
    uint64_t tail = m->data_tail;
    if (head - tail > r->mask + 1) { /* cannot happen with a writable mapping; resynchronise */
        s->f.st.bad++;
        tail = head;
    }
    int rc = 0;
    while (tail < head && rc == 0) {
        uint16_t size = ring_record(s, r, tail, head);
        if (!size) {
            s->f.st.bad++;
            tail = head;
            break;
        }
        tail += size;
        sc_offcpu_raw raw;
        bool held = r->offcpu && get32(s->rec) == PERF_RECORD_SAMPLE;
        if (held) {
            /* in the cpu-clock layout; held until its thread is back (offcpu.h) */
            size_t cl = sc_offcpu_convert(s->rec, size, s->rew, &raw);
            if (!cl) {
                s->f.st.bad++;
                continue;
            }
            memcpy(s->rec, s->rew, cl);
            size = (uint16_t)cl;
        }
        if (sc_percpu_filter_record(&s->f, s->rec, size)) {
            const unsigned char *w = s->rec;
            size_t wl = size;
            if (get32(s->rec) == PERF_RECORD_MMAP2)
                sc_percpu_fix_mmap2(s->rec, size, s->attr.build_id);
            if (s->o.interp && get32(s->rec) == PERF_RECORD_MMAP2)
                sc_interp_note_mmap2(s->o.interp, s->rec, size); /* code mapped meanwhile */
            if (s->o.inode_names && get32(s->rec) == PERF_RECORD_MMAP2) {
                size_t nl = sc_percpu_inode_name(s->rec, size, s->rew);
                if (nl) {
                    w = s->rew;
                    wl = nl;
                }
            }
            if (s->o.interp && get32(s->rec) == PERF_RECORD_SAMPLE) {
                wl = sc_interp_rewrite(s->o.interp, s->rec, size, s->rew);
                w = s->rew;
                if (!wl) {
                    s->f.st.bad++;
                    continue;
                }
            }
            if (held) {
                sc_offcpu_hold(s->oc, w, wl, &raw); /* a full table drops it (counted) */
                continue;
            }
            if (s->period_ns && get32(w) == PERF_RECORD_SAMPLE && wl >= 48) {
                /* a cpu-clock sample (w is s->rec or s->rew): weight T whatever period it was
                 * taken at (percpu.h, varied period), on CPU (offcpu.h SC_OFFCPU_TAG_*) */
                unsigned char *pw = (unsigned char *)w;
                put64(pw + 40, s->o.offcpu == SC_PERCPU_WALL
                                   ? sc_offcpu_tag(s->period_ns, SC_OFFCPU_TAG_RUNNING)
                                   : s->period_ns);
            }
            rc = sc_pc_emit(s, fd, w, wl, err);
            *wrote = true;
        }
    }
    /* release: the kernel may reuse the space only after our copies are done */
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
    return rc;
}

typedef struct held_ctx {
    sc_percpu *s;
    int fd;
    flame_err *err;
    bool *wrote;
} held_ctx;

static int emit_held(void *ctx, const unsigned char *r, size_t n)
{
    held_ctx *h = ctx;
    *h->wrote = true;
    return sc_pc_emit(h->s, h->fd, r, n, h->err);
}

int sc_percpu_pump(sc_percpu *s, int fd, int ctl_fd, int timeout_ms, flame_err *err)
{
    for (int i = 0; i < s->n; i++)
        s->pfd[i] = (struct pollfd){.fd = s->rings[i].fd, .events = POLLIN};
    int np = s->n;
    if (ctl_fd >= 0)
        s->pfd[np++] = (struct pollfd){.fd = ctl_fd, .events = POLLIN};
    /* We wake when a ring is half full (watermark) or the caller's timeout passes, never per
     * sample: at 99 Hz that is a few wakeups a second instead of one per sample. */
    if (s->vary && (timeout_ms < 0 || timeout_ms > SC_PERCPU_JITTER_MS))
        timeout_ms = SC_PERCPU_JITTER_MS; /* a pass at least as often as the period changes */
    int pr = poll(s->pfd, (nfds_t)np, timeout_ms);
    if (pr < 0 && errno != EINTR)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "poll");
    s->f.st.wakeups++;
    _cleanup_free_ uint64_t *heads = calloc((size_t)s->n, sizeof *heads);
    if (!heads)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (s->o.interp)
        sc_interp_pass(s->o.interp); /* before the heads: the unloading epoch rule */
    if (s->oc)
        sc_offcpu_steer(s->oc, mono_ms());
    vary_period(s);
    for (int i = 0; i < s->n; i++) {
        const struct perf_event_mmap_page *m = s->rings[i].base;
        /* acquire: the record bytes before data_head are visible once we see data_head */
        heads[i] = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    }
    note_forks(s, heads);
    bool wrote = false;
    for (int i = 0; i < s->n; i++)
        if (drain(s, &s->rings[i], heads[i], fd, &wrote, err) < 0)
            return -1;
    if (s->oc) {
        /* the off-CPU samples whose threads are back (at the end: all) */
        held_ctx hc = {.s = s, .fd = fd, .err = err, .wrote = &wrote};
        if (sc_offcpu_flush(s->oc, s->ending, emit_held, &hc) < 0)
            return -1;
    }
    if (wrote) {
        /* FINISHED_ROUND: everything before the previous round marker may now be sorted and
         * delivered by perf script (each ring is time-ordered; a pass over all of them is a
         * round, as perf record does it). */
        unsigned char fr[8] = {0};
        put32(fr, REC_FINISHED_ROUND);
        put16(fr + 6, 8);
        if (sc_pc_emit(s, fd, fr, sizeof fr, err) < 0)
            return -1;
    }
    if (sc_pc_flush(s, fd, err) < 0)
        return -1;
    return ctl_fd >= 0 && pr > 0 && (s->pfd[np - 1].revents & (POLLIN | POLLHUP)) ? 1 : 0;
}

/* ---------------------------------------------------------------- records rewritten on the way */

size_t sc_percpu_inode_name(const unsigned char *r, size_t size, unsigned char *out)
{
    /* MMAP2 body: u32 pid, tid; u64 addr, len, pgoff; u32 maj, min; u64 ino, ino_generation;
     * u32 prot, flags; char filename[] (NUL-padded to 8); then the sample_id trailer. */
    if (size < 8 + 64 + 8 + TRAILER_SIZE || size > 65535 || get32(r) != PERF_RECORD_MMAP2)
        return 0;
    uint16_t misc;
    memcpy(&misc, r + 4, 2);
    if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
        return 0; /* a build-id where the inode would be: nothing to name it by */
    uint32_t maj = get32(r + 40), min = get32(r + 44);
    uint64_t ino = get64(r + 48);
    const char *name = (const char *)r + 72;
    size_t room = size - 72 - TRAILER_SIZE, nl = strnlen(name, room);
    if (nl == room || !ino || nl < 2 || name[0] != '/' || name[1] == '/')
        return 0;
    char prefix[SC_INODE_PREFIX_MAX];
    int pl = sc_inode_prefix(prefix, sizeof prefix, maj, min, ino);
    size_t padded = (((size_t)pl + nl + 1) + 7) & ~(size_t)7;
    size_t n = 72 + padded + TRAILER_SIZE;
    if (pl < 0 || n > 65535)
        return 0;
    memcpy(out, r, 72);
    memset(out + 72, 0, padded);
    memcpy(out + 72, prefix, (size_t)pl);
    memcpy(out + 72 + pl, name, nl);
    memcpy(out + 72 + padded, r + size - TRAILER_SIZE, TRAILER_SIZE);
    put16(out + 6, (uint16_t)n);
    return n;
}

void sc_percpu_fix_mmap2(unsigned char *r, size_t size, bool build_id_attr)
{
    uint16_t misc;
    if (size < 8 + 64 || get32(r) != PERF_RECORD_MMAP2)
        return;
    memcpy(&misc, r + 4, 2);
    /* with the flag, body byte 32 (where maj would be) is the build-id's size, at most 20 */
    if ((misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && (!build_id_attr || r[40] > 20)) {
        misc &= (uint16_t)~PERF_RECORD_MISC_MMAP_BUILD_ID;
        memcpy(r + 4, &misc, 2);
    }
}
