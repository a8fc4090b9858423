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
#include "sidecar/percpu.h"

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
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"
#include "sidecar/interp.h"

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
};

/* ---------------------------------------------------------------- small helpers */

static void put16(unsigned char *p, uint16_t v)
{
    memcpy(p, &v, 2);
}
static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

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

static int flush_out(sc_percpu *s, int fd, flame_err *err)
{
    if (!s->out_len)
        return 0;
    int rc = write_all(fd, s->out, s->out_len, err);
    s->f.st.bytes += s->out_len;
    s->out_len = 0;
    return rc;
}

/* Append one record to the output buffer (flushed to fd when it grows past OUT_FLUSH). */
static int emit(sc_percpu *s, int fd, const unsigned char *r, size_t n, flame_err *err)
{
    if (s->out_len + n > s->out_cap && flush_out(s, fd, err) < 0)
        return -1;
    /* n <= 65535 + 16 (u16 record size) < out_cap: it fits after a flush */
    memcpy(s->out + s->out_len, r, n);
    s->out_len += n;
    return s->out_len >= OUT_FLUSH ? flush_out(s, fd, err) : 0;
}

static bool tracked(const sc_percpu_filter *f, uint32_t pid)
{
    for (int i = 0; i < f->n_tracked; i++)
        if ((uint32_t)f->tracked[i] == pid)
            return true;
    return false;
}

/* Is a record of this pid (as the kernel translated it into our namespace) the target's?
 * 0 = a task outside the namespace (the kernel reports it as pid 0; the namespace's own init is
 * 1, so no task of the target is ever 0). */
static bool keep_pid(const sc_percpu_filter *f, uint32_t pid)
{
    return pid != 0 && pid != UINT32_MAX && !tracked(f, pid);
}

/* ---------------------------------------------------------------- the BPF filter */

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    return (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

int sc_percpu_build_filter(void *insns, int cap, uint64_t dev, uint64_t ino, const pid_t *exclude,
                           int n_exclude)
{
    struct bpf_insn p[32];
    int n = 0;
    if (n_exclude < 0 || n_exclude > SC_PERCPU_MAX_EXCLUDE)
        return -1;
    /* r1 = dev, r2 = ino: the target's PID namespace (64-bit immediates take two slots). */
    p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, 0, 0, (int32_t)(uint32_t)dev);
    p[n++] = insn(0, 0, 0, 0, (int32_t)(uint32_t)(dev >> 32));
    p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, 0, 0, (int32_t)(uint32_t)ino);
    p[n++] = insn(0, 0, 0, 0, (int32_t)(uint32_t)(ino >> 32));
    /* r3 = r10 - 8: a struct bpf_pidns_info {u32 pid; u32 tgid;} on our stack; r4 = its size.
     * The helper's argument is ARG_PTR_TO_UNINIT_MEM: no need to zero it first. */
    p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0);
    p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -8);
    p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 8);
    /* r0 = bpf_get_ns_current_pid_tgid(dev, ino, &info, 8): 0 when the interrupted task's
     * active PID namespace is exactly that one (then info holds its pid/tgid there), -EINVAL
     * otherwise -- the host, other containers, and tasks of namespaces nested in the target. */
    p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_ns_current_pid_tgid);
    int jne = n; /* patched below: jump to "drop" */
    p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 0, 0);
    /* r1 = info.tgid; refuse our own processes (they share the namespace). */
    p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_10, -4, 0);
    int jeq[SC_PERCPU_MAX_EXCLUDE];
    for (int i = 0; i < n_exclude; i++) {
        jeq[i] = n;
        p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_1, 0, 0, (int32_t)exclude[i]);
    }
    /* keep: return 1 -- the kernel then writes the sample as usual */
    p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    /* drop: return 0 -- the kernel discards the sample (kernel/events/core.c,
     * __perf_event_overflow: the overflow handler, i.e. the ring write, is skipped) */
    int drop = n;
    p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    p[jne].off = (int16_t)(drop - jne - 1);
    for (int i = 0; i < n_exclude; i++)
        p[jeq[i]].off = (int16_t)(drop - jeq[i] - 1);
    if (n > cap)
        return -1;
    memcpy(insns, p, sizeof(p[0]) * (size_t)n);
    return n;
}

static int load_filter(const sc_percpu_opts *o, flame_err *err)
{
    struct stat st;
    if (fstat(o->pidns_fd, &st) < 0) {
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fstat the PID namespace");
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    /* The helper compares with the nsfs superblock's kernel dev_t (MKDEV: major << 20 | minor),
     * not stat()'s user-space encoding; they differ once the minor is >= 256. */
    uint64_t kdev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
    struct bpf_insn prog[32];
    int n = sc_percpu_build_filter(prog, 32, kdev, (uint64_t)st.st_ino, o->exclude, o->n_exclude);
    if (n < 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "too many excluded processes");
        err->detail = SC_PERCPU_E_OTHER;
        return -1;
    }
    char log[4096];
    log[0] = '\0';
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
    a.insns = (uint64_t)(uintptr_t)prog;
    a.insn_cnt = (uint32_t)n;
    a.license = (uint64_t)(uintptr_t) "GPL"; /* the helper is not GPL-only; any string would do */
    memcpy(a.prog_name, "flame_nsfilter", 15);
    /* PRIVILEGE: BPF_PROG_LOAD of a tracing type needs CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN
     * (unprivileged_bpf_disabled does not matter then). Docker's default seccomp profile allows
     * bpf() only when the container was given CAP_SYS_ADMIN (20.10) or CAP_BPF (newer).
     * First without a verifier log (a log too small for it would itself fail the load with
     * ENOSPC); on a refusal once more with the log, for its last line in our message. */
    int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
    if (fd < 0) {
        int e = errno;
        a.log_buf = (uint64_t)(uintptr_t)log;
        a.log_size = sizeof log;
        a.log_level = 1;
        int again = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
        if (again >= 0) /* accepted the second time: take it */
            return again;
        /* The verifier's last words name the problem ("invalid func unknown#120" on a kernel
         * without the helper for this program type), before its "processed N insns" summary. */
        log[sizeof log - 1] = '\0';
        const char *why = "";
        size_t why_len = 0;
        for (char *line = log; *line;) {
            size_t l = strcspn(line, "\n");
            if (l && strncmp(line, "processed ", 10) != 0) {
                why = line;
                why_len = l;
            }
            line += l + (line[l] == '\n');
        }
        char note[240] = "";
        if (why_len)
            snprintf(note, sizeof note, " (verifier: %.*s)", (int)(why_len > 200 ? 200 : why_len),
                     why);
        flame_fail_errno(err, FLAME_EXIT_ERROR, e, "load the PID-namespace filter%s", note);
        err->detail = SC_PERCPU_E_BPF_DENIED;
        return -1;
    }
    return fd;
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

int sc_percpu_open(sc_percpu **out, const sc_percpu_opts *o, flame_err *err)
{
    *out = NULL;
    /* With stack copies (16 KiB a sample) 32 pages would wake us every 4 samples; 64 pages per
     * CPU stay within the kernel's unprivileged perf mlock allowance (516 KiB per CPU, shared
     * by every process of uid 65534) together with a second recording. */
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
    if (!s || !(s->rings = calloc((size_t)ncpu, sizeof *s->rings)) ||
        !(s->pfd = calloc((size_t)ncpu + 1, sizeof *s->pfd)) || !(s->out = malloc(OUT_FLUSH * 2))) {
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

    struct perf_event_attr *a = &s->attr;
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_CPU_CLOCK; /* hrtimer based: works in VMs without a PMU */
    a->freq = 1;                         /* cpu-clock turns this into a fixed period of 1/freq s */
    a->sample_freq = o->freq;
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
    a->build_id = 1;
    a->comm = 1;
    a->comm_exec = 1;
    a->task = 1;
    a->sample_id_all = 1; /* time on side-band records: perf script orders them with samples */
    a->disabled = 1;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)((size_t)pages * (size_t)sysconf(_SC_PAGESIZE) / 2);

    if (!o->user_filter_only) {
        s->prog_fd = load_filter(o, err);
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
        if (map_ring(r, pages, err) < 0) {
            sc_percpu_close(s);
            return -1;
        }
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
    s->f.st.cpus = s->n;
    *out = s;
    return 0;
}

int sc_percpu_enable(sc_percpu *s, flame_err *err)
{
    for (int i = 0; i < s->n; i++)
        if (ioctl(s->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
            return flame_fail_errno(err, FLAME_EXIT_PERF, errno, "enable CPU %d", s->rings[i].cpu);
    return 0;
}

int sc_percpu_disable(sc_percpu *s, flame_err *err)
{
    int rc = 0;
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

/* ---------------------------------------------------------------- the file header */

int sc_percpu_write_header(sc_percpu *s, int fd, flame_err *err)
{
    unsigned char h[16];
    memcpy(h, "PERFILE2", 8);
    put64(h + 8, 16);
    if (emit(s, fd, h, sizeof h, err) < 0)
        return -1;
    size_t size = 8 + FILE_ATTR_SIZE + 8 * (size_t)s->n;
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
    memcpy(r + 8, &fa, sizeof fa < FILE_ATTR_SIZE ? sizeof fa : FILE_ATTR_SIZE);
    for (int i = 0; i < s->n; i++)
        put64(r + 8 + FILE_ATTR_SIZE + 8 * (size_t)i, s->rings[i].id);
    if (emit(s, fd, r, size, err) < 0)
        return -1;
    return flush_out(s, fd, err);
}

/* ---------------------------------------------------------------- synthesis from /proc */

int sc_percpu_parse_maps_line(const char *line, size_t len, sc_maps_entry *e, char *path,
                              size_t path_cap)
{
    /* start-end perms offset maj:min inode [spaces path]; every number hex but the inode. */
    char head[160];
    size_t i = 0;
    /* the fixed fields are short; copy them out to parse with sscanf safely */
    size_t hl = len < sizeof head - 1 ? len : sizeof head - 1;
    memcpy(head, line, hl);
    head[hl] = '\0';
    unsigned long long start, end, off, ino;
    unsigned maj, min;
    char perms[5];
    int used = 0;
    if (sscanf(head, "%llx-%llx %4s %llx %x:%x %llu%n", &start, &end, perms, &off, &maj, &min, &ino,
               &used) != 7 ||
        used <= 0 || end < start || strlen(perms) != 4)
        return -1;
    if (perms[2] != 'x')
        return 0;
    i = (size_t)used;
    while (i < len && line[i] == ' ')
        i++;
    size_t pl = len - i;
    if (path_cap == 0)
        return -1;
    if (pl > path_cap - 1)
        pl = path_cap - 1;
    memcpy(path, line + i, pl);
    path[pl] = '\0';
    for (size_t k = 0; k < pl; k++)
        if (path[k] == '\0')
            path[k] = '?'; /* cannot happen in procfs text; keep the string whole if it does */
    *e = (sc_maps_entry){.start = start,
                         .end = end,
                         .pgoff = off,
                         .ino = ino,
                         .maj = maj,
                         .min = min,
                         .prot = (perms[0] == 'r' ? 1u : 0) | (perms[1] == 'w' ? 2u : 0) | 4u,
                         .flags = perms[3] == 's' ? 1u : 2u}; /* MAP_SHARED : MAP_PRIVATE */
    return 1;
}

static size_t trailer(unsigned char *p, uint32_t pid, uint32_t tid)
{
    memset(p, 0, TRAILER_SIZE);
    put32(p, pid);
    put32(p + 4, tid); /* time 0: before every real record; cpu 0 */
    return TRAILER_SIZE;
}

static int synth_comm(sc_percpu *s, int fd, uint32_t pid, uint32_t tid, const char *comm,
                      flame_err *err)
{
    unsigned char r[8 + 8 + COMM_LEN + TRAILER_SIZE];
    size_t cl = strnlen(comm, COMM_LEN - 1);
    size_t body = 8 + ((cl + 1 + 7) & ~(size_t)7); /* pid, tid, comm NUL-padded to 8 */
    memset(r, 0, sizeof r);
    put32(r, PERF_RECORD_COMM);
    put32(r + 8, pid);
    put32(r + 12, tid);
    memcpy(r + 16, comm, cl);
    size_t size = 8 + body + trailer(r + 8 + body, pid, tid);
    put16(r + 6, (uint16_t)size);
    s->f.st.synthesized++;
    return emit(s, fd, r, size, err);
}

static int synth_mmap2(sc_percpu *s, int fd, uint32_t pid, const sc_maps_entry *e, const char *path,
                       flame_err *err)
{
    unsigned char r[8 + 64 + 4096 + 8 + TRAILER_SIZE];
    const char *name = path[0] ? path : "//anon"; /* perf's name for anonymous code: it then
                                                    looks symbols up in /tmp/perf-<pid>.map */
    size_t nl = strnlen(name, 4095);
    size_t body = 64 + ((nl + 1 + 7) & ~(size_t)7);
    memset(r, 0, 8 + body);
    put32(r, PERF_RECORD_MMAP2);
    put16(r + 4, PERF_RECORD_MISC_USER);
    put32(r + 8, pid);
    put32(r + 12, pid);
    put64(r + 16, e->start);
    put64(r + 24, e->end - e->start);
    put64(r + 32, e->pgoff);
    put32(r + 40, e->maj);
    put32(r + 44, e->min);
    put64(r + 48, e->ino);
    put64(r + 56, 0); /* ino_generation: unknown from /proc */
    put32(r + 64, e->prot);
    put32(r + 68, e->flags);
    memcpy(r + 72, name, nl);
    size_t size = 8 + body + trailer(r + 8 + body, pid, pid);
    put16(r + 6, (uint16_t)size);
    s->f.st.synthesized++;
    return emit(s, fd, r, size, err);
}

int sc_percpu_synth_anon(sc_percpu *s, int fd, pid_t pid, uint64_t start, uint64_t len,
                         flame_err *err)
{
    sc_maps_entry e = {.start = start, .end = start + len, .prot = 5, .flags = 2};
    if (synth_mmap2(s, fd, (uint32_t)pid, &e, "", err) < 0)
        return -1;
    return flush_out(s, fd, err);
}

static bool all_digits(const char *n)
{
    if (!*n)
        return false;
    for (; *n; n++)
        if (!isdigit((unsigned char)*n))
            return false;
    return true;
}

static int synth_threads(sc_percpu *s, int fd, int proc_dirfd, uint32_t pid, flame_err *err)
{
    char path[300], comm[64];
    snprintf(path, sizeof path, "%u/task", pid);
    int tfd = openat(proc_dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tfd < 0)
        return 0; /* gone */
    DIR *d = fdopendir(tfd);
    if (!d) {
        close(tfd);
        return 0;
    }
    int rc = 0, n = 0;
    struct dirent *de;
    while (rc == 0 && n < SC_PERCPU_MAX_THREADS && (de = readdir(d))) {
        if (!all_digits(de->d_name))
            continue;
        unsigned long tid = strtoul(de->d_name, NULL, 10);
        if (tid == 0 || tid > INT32_MAX || tid == pid)
            continue; /* the main thread's COMM was written with the process */
        snprintf(path, sizeof path, "%s/comm", de->d_name);
        ssize_t l = sc_read_bounded(dirfd(d), path, comm, sizeof comm);
        if (l < 0)
            continue;
        comm[strcspn(comm, "\n")] = '\0';
        rc = synth_comm(s, fd, pid, (uint32_t)tid, comm, err);
        n++;
    }
    closedir(d);
    return rc;
}

/* MMAP2 for every executable mapping in one process's maps text, read from mfd (opened while
 * privileged by sc_percpu_collect). Bounded: SC_PERCPU_MAPS_MAX bytes; only complete lines count,
 * a line that does not fit in the bound is the end. */
static int synth_maps(sc_percpu *s, int fd, int mfd, uint32_t pid, flame_err *err)
{
    _cleanup_free_ char *buf = malloc(SC_PERCPU_MAPS_MAX);
    if (!buf)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t have = 0;
    char name[4096];
    while (have < SC_PERCPU_MAPS_MAX) {
        ssize_t k = read(mfd, buf + have, SC_PERCPU_MAPS_MAX - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        have += (size_t)k;
    }
    size_t i = 0;
    while (i < have) {
        char *nl = memchr(buf + i, '\n', have - i);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (buf + i));
        sc_maps_entry e;
        if (sc_percpu_parse_maps_line(buf + i, len, &e, name, sizeof name) == 1) {
            sc_interp_note_map(s->o.interp, (pid_t)pid, e.start, e.pgoff, name);
            if (synth_mmap2(s, fd, pid, &e, name, err) < 0)
                return -1;
        }
        i += len + 1;
    }
    return 0;
}

int sc_percpu_collect(sc_percpu *s, int proc_dirfd, flame_err *err)
{
    int dfd = openat(proc_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "read /proc");
    }
    struct dirent *de;
    char path[64];
    while (s->n_maps < SC_PERCPU_MAX_PROCS && (de = readdir(d))) {
        if (!all_digits(de->d_name))
            continue;
        unsigned long pid = strtoul(de->d_name, NULL, 10);
        if (pid == 0 || pid > INT32_MAX || tracked(&s->f, (uint32_t)pid))
            continue;
        snprintf(path, sizeof path, "%lu/maps", pid);
        /* PRIVILEGE: another user's maps need PTRACE_MODE_READ (CAP_SYS_PTRACE, still held);
         * the kernel checks it here, at open, and reading the fd later needs nothing more. So
         * the text of the target is parsed only after the privilege drop. */
        int mfd = openat(proc_dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (mfd < 0)
            continue; /* vanished, or a kernel thread's empty maps: nothing to name */
        s->maps_pid[s->n_maps] = (pid_t)pid;
        s->maps_fd[s->n_maps++] = mfd;
    }
    closedir(d);
    return 0;
}

/* The kernel's mapping as perf itself announces it: PERF_RECORD_MMAP, pid -1, named
 * "[kernel.kallsyms]_text" with pgoff = the address of _text (perf's relocation reference), so
 * perf script places kernel addresses in [kernel.kallsyms] and names them from --kallsyms. */
static int synth_kernel_mmap(sc_percpu *s, int fd, uint64_t text, flame_err *err)
{
    static const char name[] = "[kernel.kallsyms]_text";
    unsigned char r[8 + 32 + sizeof name + 8 + TRAILER_SIZE];
    size_t body = 32 + ((sizeof name + 7) & ~(size_t)7);
    memset(r, 0, sizeof r);
    put32(r, PERF_RECORD_MMAP);
    put16(r + 4, PERF_RECORD_MISC_KERNEL);
    put32(r + 8, UINT32_MAX); /* pid -1: the kernel */
    put64(r + 16, text);
    put64(r + 24, UINT64_MAX - text);
    put64(r + 32, text);
    memcpy(r + 40, name, sizeof name);
    size_t size = 8 + body + trailer(r + 8 + body, UINT32_MAX, 0);
    put16(r + 6, (uint16_t)size);
    s->f.st.synthesized++;
    return emit(s, fd, r, size, err);
}

int sc_percpu_synthesize(sc_percpu *s, int proc_dirfd, int fd, flame_err *err)
{
    int rc = s->o.kernel_text ? synth_kernel_mmap(s, fd, s->o.kernel_text, err) : 0;
    char path[64], comm[64];
    for (int k = 0; k < s->n_maps; k++) {
        uint32_t pid = (uint32_t)s->maps_pid[k];
        snprintf(path, sizeof path, "%u/comm", pid);
        if (rc == 0 && sc_read_bounded(proc_dirfd, path, comm, sizeof comm) >= 0) {
            comm[strcspn(comm, "\n")] = '\0';
            if ((rc = synth_comm(s, fd, pid, pid, comm, err)) == 0 &&
                (rc = synth_maps(s, fd, s->maps_fd[k], pid, err)) == 0)
                rc = synth_threads(s, fd, proc_dirfd, pid, err);
        }
        close(s->maps_fd[k]);
    }
    s->n_maps = 0;
    if (rc == 0)
        rc = flush_out(s, fd, err);
    return rc;
}

/* ---------------------------------------------------------------- filtering records */

void sc_percpu_filter_init(sc_percpu_filter *f, const pid_t *exclude, int n_exclude)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < n_exclude && i < SC_PERCPU_MAX_EXCLUDE; i++)
        f->tracked[f->n_tracked++] = exclude[i];
    f->n_exclude = f->n_tracked;
}

void sc_percpu_filter_note_fork(sc_percpu_filter *f, const unsigned char *r, size_t size)
{
    /* FORK body: u32 pid, ppid, tid, ptid. A new process (pid == tid) whose parent is ours is
     * ours too (the sidecar's later children: attach helpers, perf script): follow it here,
     * since the BPF program only knows the tgids given at open. */
    if (size < 8 + 16 || get32(r) != PERF_RECORD_FORK)
        return;
    uint32_t pid = get32(r + 8), ppid = get32(r + 12), tid = get32(r + 16);
    if (pid && pid == tid && pid != ppid && tracked(f, ppid) && !tracked(f, pid) &&
        f->n_tracked < SC_PERCPU_MAX_TRACKED)
        f->tracked[f->n_tracked++] = (pid_t)pid;
}

bool sc_percpu_filter_record(sc_percpu_filter *f, const unsigned char *r, size_t size)
{
    uint32_t type = get32(r);
    switch (type) {
    case PERF_RECORD_SAMPLE:
        if (size < 8 + 16) /* ip, pid/tid */
            break;
        if (keep_pid(f, get32(r + 16))) {
            f->st.samples++;
            return true;
        }
        f->st.samples_dropped++;
        return false;
    case PERF_RECORD_FORK:
        sc_percpu_filter_note_fork(f, r, size);
        /* fall through */
    case PERF_RECORD_EXIT:
    case PERF_RECORD_COMM:
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2:
        if (size < 8 + 8)
            break;
        if (keep_pid(f, get32(r + 8))) {
            f->st.sideband++;
            return true;
        }
        /* one of our followed children exits: its pid may be reused by the target */
        if (type == PERF_RECORD_EXIT && size >= 8 + 16 && get32(r + 8) == get32(r + 16)) {
            for (int i = f->n_exclude; i < f->n_tracked; i++)
                if ((uint32_t)f->tracked[i] == get32(r + 8)) {
                    f->tracked[i] = f->tracked[--f->n_tracked];
                    break;
                }
        }
        f->st.sideband_dropped++;
        return false;
    case PERF_RECORD_LOST:
        if (size >= 8 + 16)
            f->st.lost += get64(r + 16);
        return true; /* perf script counts it; it names no process */
    case PERF_RECORD_LOST_SAMPLES:
        if (size >= 8 + 8)
            f->st.lost += get64(r + 8);
        return true;
    default:
        f->st.other_dropped++;
        return false;
    }
    f->st.bad++;
    return false;
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

/* First pass over every ring, without consuming: FORK records of our processes. A child's
 * first samples may sit in a ring drained before the one holding its FORK. */
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
            if (type == PERF_RECORD_FORK && ring_record(s, r, tail, heads[i]) == size)
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
        if (sc_percpu_filter_record(&s->f, s->rec, size)) {
            const unsigned char *w = s->rec;
            size_t wl = size;
            if (s->o.interp && get32(s->rec) == PERF_RECORD_SAMPLE) {
                wl = sc_interp_rewrite(s->o.interp, s->rec, size, s->rew);
                w = s->rew;
                if (!wl) {
                    s->f.st.bad++;
                    continue;
                }
            }
            rc = emit(s, fd, w, wl, err);
            *wrote = true;
        }
    }
    /* release: the kernel may reuse the space only after our copies are done */
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
    return rc;
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
    int pr = poll(s->pfd, (nfds_t)np, timeout_ms);
    if (pr < 0 && errno != EINTR)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "poll");
    s->f.st.wakeups++;
    _cleanup_free_ uint64_t *heads = calloc((size_t)s->n, sizeof *heads);
    if (!heads)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (s->o.interp)
        sc_interp_pass(s->o.interp); /* before the heads: the unloading epoch rule */
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
    if (wrote) {
        /* FINISHED_ROUND: everything before the previous round marker may now be sorted and
         * delivered by perf script (each ring is time-ordered; a pass over all of them is a
         * round, as perf record does it). */
        unsigned char fr[8] = {0};
        put32(fr, REC_FINISHED_ROUND);
        put16(fr + 6, 8);
        if (emit(s, fd, fr, sizeof fr, err) < 0)
            return -1;
    }
    if (flush_out(s, fd, err) < 0)
        return -1;
    return ctl_fd >= 0 && pr > 0 && (s->pfd[np - 1].revents & (POLLIN | POLLHUP)) ? 1 : 0;
}
