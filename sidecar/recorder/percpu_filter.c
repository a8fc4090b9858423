/* The per-CPU recorder's filters (percpu.h): the in-kernel PID-namespace BPF program attached to
 * every event, and the user-space filter of records (forks of excluded processes, pid 0). */
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
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"
#include "sidecar/recorder/interp.h"

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

int sc_pc_load_filter(const sc_percpu_opts *o, flame_err *err)
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

/* ---------------------------------------------------------------- filtering records */

void sc_percpu_filter_init(sc_percpu_filter *f, const pid_t *exclude, int n_exclude)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < n_exclude && i < SC_PERCPU_MAX_EXCLUDE; i++)
        f->tracked[f->n_tracked++] = exclude[i];
    f->n_exclude = f->n_tracked;
}

void sc_percpu_filter_set_target(sc_percpu_filter *f, sc_percpu_classify_fn classify, void *ctx)
{
    f->classify = classify;
    f->classify_ctx = ctx;
}

/* ---- whose process a pid is: the verdict table ----
 * Per-CPU events see every task of the PID namespace; the target shares it with whatever joined
 * it (another docker-flame sidecar, a container started --pid container:<target>, an nsenter)
 * or, started --pid host / container:X, is itself the guest. Each process gets a verdict once:
 * from its parent's through the FORK record (a child of the target's process is the target's),
 * or, for a process that entered the namespace from outside (its parent is 0 here) or was never
 * seen, from its cgroup (classify). A pid the kernel hands to a new process keeps the verdict of
 * the one it had before for records older than that FORK: rings are drained one after the
 * other, so a sample of the old process can be read after the new one's FORK. */

static sc_percpu_verdict *verdict_slot(sc_percpu_filter *f, uint32_t pid, bool create)
{
    if (create && f->n_verdict * 4 >= SC_PERCPU_VERDICTS * 3) {
        /* Full (a target that forks all the time): start over; every process is classified
         * again when next seen. Bounded memory, never a wrong verdict. */
        memset(f->verdict, 0, sizeof f->verdict);
        f->n_verdict = 0;
    }
    size_t h = (pid * 2654435761u) & (SC_PERCPU_VERDICTS - 1);
    for (size_t k = 0; k < SC_PERCPU_VERDICTS; k++, h = (h + 1) & (SC_PERCPU_VERDICTS - 1)) {
        sc_percpu_verdict *v = &f->verdict[h];
        if (v->pid == pid)
            return v;
        if (!v->pid) {
            if (!create)
                return NULL;
            *v = (sc_percpu_verdict){.pid = pid};
            f->n_verdict++;
            return v;
        }
    }
    return NULL;
}

bool sc_percpu_filter_is_target(sc_percpu_filter *f, uint32_t pid, uint64_t time)
{
    if (!f->classify)
        return true;
    sc_percpu_verdict *v = verdict_slot(f, pid, true);
    if (!v)
        return false;
    bool old = v->since && time && time < v->since;
    uint8_t *x = old ? &v->before : &v->now;
    if (*x == SC_PV_UNKNOWN) {
        /* gone (-1): its records are dropped; a process that reuses the pid comes with a FORK */
        *x = f->classify(f->classify_ctx, pid) == 1 ? SC_PV_TARGET : SC_PV_OTHER;
        f->st.classified++;
    }
    return *x == SC_PV_TARGET;
}

/* A FORK record's new process inherits its parent's verdict (once per record: the first pass
 * over the rings and the filtering pass both see it). */
static void verdict_fork(sc_percpu_filter *f, uint32_t pid, uint32_t ppid, uint64_t time)
{
    if (!f->classify)
        return;
    sc_percpu_verdict *v = verdict_slot(f, pid, true);
    if (!v || (v->since == time && time))
        return;
    const sc_percpu_verdict *p = ppid ? verdict_slot(f, ppid, false) : NULL;
    v->before = v->now;
    v->since = time;
    v->now = p ? p->now : SC_PV_UNKNOWN; /* parent outside the namespace: its cgroup decides */
}

void sc_percpu_filter_note_fork(sc_percpu_filter *f, const unsigned char *r, size_t size)
{
    /* FORK body: u32 pid, ppid, tid, ptid; u64 time. A new process (pid == tid) whose parent is
     * ours is ours too (the sidecar's later children: attach helpers, perf script): follow it
     * here, since the BPF program only knows the tgids given at open. Any other new process
     * takes its parent's verdict. */
    if (size >= 8 + 8 && get32(r) == PERF_RECORD_COMM && f->classify) {
        /* An exec: a process that entered the namespace from outside before its container's
         * cgroup took it (runc puts a `docker exec`'s process there after it forked into the
         * namespace, and it then execs the command) is judged again; the target's own stays. */
        uint16_t misc;
        memcpy(&misc, r + 4, 2);
        sc_percpu_verdict *v = (misc & PERF_RECORD_MISC_COMM_EXEC) && get32(r + 8) == get32(r + 12)
                                   ? verdict_slot(f, get32(r + 8), false)
                                   : NULL;
        if (v && v->now == SC_PV_OTHER)
            v->now = SC_PV_UNKNOWN;
        return;
    }
    if (size < 8 + 16 || get32(r) != PERF_RECORD_FORK)
        return;
    uint32_t pid = get32(r + 8), ppid = get32(r + 12), tid = get32(r + 16);
    if (!pid || pid != tid || pid == ppid)
        return;
    if (tracked(f, ppid)) {
        if (!tracked(f, pid) && f->n_tracked < SC_PERCPU_MAX_TRACKED)
            f->tracked[f->n_tracked++] = (pid_t)pid;
    } else if (!tracked(f, pid)) {
        verdict_fork(f, pid, ppid, size >= 8 + 24 ? get64(r + 24) : 0);
    }
}

/* The time in a side-band record's sample_id trailer (sample_id_all: pid, tid, time, cpu). */
static uint64_t trailer_time(const unsigned char *r, size_t size)
{
    return size >= 8 + 24 ? get64(r + size - 16) : 0;
}

bool sc_percpu_filter_record(sc_percpu_filter *f, const unsigned char *r, size_t size)
{
    uint32_t type = get32(r);
    switch (type) {
    case PERF_RECORD_SAMPLE: {
        if (size < 8 + 16) /* ip, pid/tid */
            break;
        uint32_t pid = get32(r + 16);
        if (keep_pid(f, pid, size >= 8 + 24 ? get64(r + 24) : 0)) { /* ip, pid/tid, time */
            f->st.samples++;
            return true;
        }
        f->st.samples_dropped++;
        if (pid && pid != UINT32_MAX && !tracked(f, pid))
            f->st.others++; /* in the namespace, not ours: another's process */
        return false;
    }
    case PERF_RECORD_FORK:
    case PERF_RECORD_COMM:
        sc_percpu_filter_note_fork(f, r, size); /* either: it tells which */
        /* fall through */
    case PERF_RECORD_EXIT:
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2:
        if (size < 8 + 8)
            break;
        if (keep_pid(f, get32(r + 8), trailer_time(r, size))) {
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
        /* a lost FORK would leave a pid with its former process's verdict: ask again */
        if (f->classify) {
            memset(f->verdict, 0, sizeof f->verdict);
            f->n_verdict = 0;
        }
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
