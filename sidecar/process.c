/* Processing, the last phase: our copies of the JVMs' maps are published where perf looks
 * (the rename step, as root), then, with no privilege left (harden.c), each map is sanitised,
 * `perf script` turns the recording into text that flame/fold.c folds as it streams, and the
 * folded stacks and the summary go out. top.c's windows use the same steps. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/kallsyms.h"
#include "sidecar/recorder/recorder.h"
#include "sidecar/session.h"

const char *sc_root_for_pid(void *ctx, long pid)
{
    const sc_session *s = ctx;
    for (int k = 0; k < s->n; k++)
        if (s->jvms[k].st.pid == pid)
            return s->jvms[k].root_frame;
    return NULL;
}

/* perf looks for /tmp/perf-<pid>.map: a link, made by root in our 0711 /tmp, to the map in the
 * work directory through perf's own inherited descriptor of it (workdir.c). */
static int map_link(pid_t pid, const char *target)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
    unlink(path);
    return symlink(target, path);
}

int sc_create_map(const sc_jvm *j)
{
    char name[64], target[128];
    snprintf(name, sizeof(name), "perf-%d.map", (int)j->st.pid);
    int fd = sc_work_create(name, O_WRONLY, 0644);
    sc_work_path(target, sizeof target, name);
    if (fd >= 0 && map_link(j->st.pid, target) < 0)
        sc_warn("link /tmp/%s: %s", name, strerror(errno));
    /* perfs that name the file by the in-namespace pid */
    if (fd >= 0 && j->st.nspid != j->st.pid && map_link(j->st.nspid, target) < 0)
        sc_warn("link /tmp/perf-%d.map: %s", (int)j->st.nspid, strerror(errno));
    return fd;
}

void sc_publish_maps(sc_session *s, int *map_fd)
{
    /* perf script looks for JIT symbols in /tmp/perf-<pid>.map: first in the target's mount
     * namespace (where the map was just deleted, and which it cannot enter without privilege),
     * then in its own /tmp: ours, a link into the work directory. Created as root before the
     * privilege drop (perf accepts maps owned by root or by itself). */
    /* A JVM without a fetched map (no agent) gets one too when the recorder names its frames
     * (interpreted and compiled, from VMStructs): the names are all it holds. */
    for (int k = 0; k < s->n; k++)
        map_fd[k] = s->raw_fd[k] < 0 && !s->interp ? -1 : sc_create_map(&s->jvms[k]);
}

int sc_map_refresh(int raw_fd, long long size, int map_fd, sc_map_stats *st, flame_err *err)
{
    *st = (sc_map_stats){0};
    if ((unsigned long long)size > SC_MAP_FILE_MAX)
        size = (long long)SC_MAP_FILE_MAX;
    if (size <= 0)
        return 0;
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, raw_fd, 0);
    if (m == MAP_FAILED)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "read the map");
    int rc = -1;
    FILE *out = NULL;
    /* rewritten from the start: top refreshes the same map every window */
    if (ftruncate(map_fd, 0) < 0 || lseek(map_fd, 0, SEEK_SET) < 0)
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "truncate the map");
    else if (!(out = fdopen(dup(map_fd), "w")))
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "write the map");
    else
        rc = sc_map_sanitize(m, (size_t)size, out, st, err);
    if (out && fclose(out) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "write the map");
    munmap(m, (size_t)size);
    return rc;
}

/* The recorder's names of JVM k's interpreted frames (recorder/recorder.h): its first line says
 * whether they could be named (else one W line with the reason), the rest are map lines for the
 * synthetic addresses, sanitised and appended to the map like the agent's own lines. */
/* The recorder's report on JVM k's stack walks in its names file ("#nowalk <why>", "#walk
 * <walks> <tail> <status counts...>"), into walk (may be NULL), and the warnings it calls for
 * (first window only): stacks not walked for a JVM without PreserveFramePointer, or walks that
 * fail for a noticeable share of its samples, naming the commonest reasons. */
#define WALK_WARN_MIN 20     /* walks before a share means anything */
#define WALK_WARN_SHARE 0.10 /* more than this not reaching the root: a warning */
static void walk_report(const sc_session *s, int k, int window, const char *b, size_t size,
                        sc_jvm *walk)
{
    const sc_jvm *j = &s->jvms[k];
    uint64_t n[2 + CT_WALK_NSTATUS] = {0};
    char off[192] = "";
    bool have = false;
    for (size_t i = 0; i < size;) {
        const char *nl = memchr(b + i, '\n', size - i);
        size_t len = (size_t)((nl ? nl : b + size) - (b + i));
        if (len > 8 && !memcmp(b + i, "#nowalk ", 8))
            snprintf(off, sizeof off, "%.*s", (int)(len - 8 > 180 ? 180 : len - 8), b + i + 8);
        if (len > 6 && len < 512 && !memcmp(b + i, "#walk ", 6)) {
            char line[512];
            memcpy(line, b + i + 6, len - 6);
            line[len - 6] = '\0';
            char *p = line, *e;
            int got = 0;
            for (; got < 2 + CT_WALK_NSTATUS; got++, p = e) {
                unsigned long long v = strtoull(p, &e, 10);
                if (e == p)
                    break;
                n[got] = v;
            }
            have = got == 2 + CT_WALK_NSTATUS;
        }
        i += len + 1;
    }
    if (walk) {
        snprintf(walk->walk_off, sizeof walk->walk_off, "%s", off);
        if (have) {
            walk->walks = n[0], walk->walk_tail = n[1];
            memcpy(walk->walk_status, n + 2, sizeof walk->walk_status);
        }
    }
    if (window > 0)
        return;
    if (off[0] && !j->preserve_fp)
        sc_warn("pid %d: its Java stacks cannot be walked (%s), and the JVM runs without "
                "-XX:+PreserveFramePointer: they will be broken (truncated or misattributed)",
                (int)j->st.pid, off);
    uint64_t root = n[2];
    if (!have || n[0] < WALK_WARN_MIN || (double)(n[0] - root) <= WALK_WARN_SHARE * (double)n[0])
        return;
    /* the two commonest reasons */
    int a = -1, c = -1;
    for (int q = 1; q < CT_WALK_NSTATUS; q++) {
        if (!n[2 + q])
            continue;
        if (a < 0 || n[2 + q] > n[2 + a])
            c = a, a = q;
        else if (c < 0 || n[2 + q] > n[2 + c])
            c = q;
    }
    char why[160] = "";
    for (int q = 0, r = a; q < 2 && r >= 0; q++, r = c)
        snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s %.0f %%", q ? ", " : "",
                 ct_walk_status_name(r), 100.0 * (double)n[2 + r] / (double)n[0]);
    sc_warn("pid %d: %.0f %% of its samples' stacks could not be walked to the thread's root (%s; "
            "docs/SIDECAR.md \"Stack walking\"): those are cut where the walk stopped",
            (int)j->st.pid, 100.0 * (double)(n[0] - root) / (double)n[0], why);
}

void sc_append_interp(const sc_session *s, int k, int window, int map_fd, sc_map_stats *total,
                      sc_jvm *walk)
{
    char path[64];
    sc_interp_names_path(path, sizeof path, s->jvms[k].st.pid, window);
    _cleanup_close_ int fd = sc_work_open(path, O_RDONLY | O_NONBLOCK);
    off_t size = fd < 0 ? 0 : lseek(fd, 0, SEEK_END);
    if (size <= 0) {
        /* no report from the recorder: perf's per-thread recorder, which takes no stack copies */
        if (window <= 0 && !s->jvms[k].preserve_fp)
            sc_warn("pid %d: the JVM runs without -XX:+PreserveFramePointer and is sampled per "
                    "thread, where its stacks are not walked: Java stacks will be broken "
                    "(truncated or misattributed); give the sidecar CAP_PERFMON (per-CPU "
                    "sampling) or restart the JVM with that flag",
                    (int)s->jvms[k].st.pid);
        return;
    }
    if ((unsigned long long)size > SC_MAP_FILE_MAX)
        size = (off_t)SC_MAP_FILE_MAX;
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return;
    const char *b = m;
    if (size > 9 && !memcmp(b, "#unnamed ", 9) && window <= 0) {
        const char *nl = memchr(b, '\n', (size_t)size);
        int len = (int)((nl ? nl : b + size) - b - 9);
        sc_warn("pid %d: interpreted Java frames stay `Interpreter`: %.*s", (int)s->jvms[k].st.pid,
                len > 400 ? 400 : len, b + 9);
    }
    walk_report(s, k, window, b, (size_t)size, walk);
    sc_map_stats st;
    flame_err e = FLAME_ERR_INIT;
    FILE *out = NULL;
    if (lseek(map_fd, 0, SEEK_END) >= 0 && (out = fdopen(dup(map_fd), "a")) != NULL &&
        sc_map_sanitize(m, (size_t)size, out, &st, &e) == 0) {
        total->lines_out += st.lines_out;
        total->bytes_out += st.bytes_out;
    }
    if (out)
        fclose(out);
    munmap(m, (size_t)size);
}

/* TEST ONLY (sc_test_hook "script", once per process): perf script reads the recording through
 * a pipe fed by a child that stops itself first, so that perf stays alive, exec'd, waiting for
 * input, while tests/e2e/privilege-phases.t probes it; the test's SIGCONT lets the feeder copy.
 * Returns the fd perf reads (the pipe, or data_fd itself), *feeder the child or -1. */
static int test_hold_script(int data_fd, pid_t *feeder)
{
    static bool held;
    *feeder = -1;
    int fp[2];
    if (held || !sc_test_hook("script") || pipe2(fp, O_CLOEXEC) < 0)
        return data_fd;
    held = true;
    fflush(stdout);
    *feeder = fork();
    if (*feeder == 0) {
        close(fp[0]);
        raise(SIGSTOP);
        char b[65536];
        for (ssize_t n; (n = read(data_fd, b, sizeof b)) > 0;)
            if (write(fp[1], b, (size_t)n) != n)
                _exit(1);
        _exit(0);
    }
    close(fp[1]);
    if (*feeder < 0) {
        close(fp[0]);
        return data_fd;
    }
    return fp[0];
}

int sc_perf_script(const sc_session *s, int data_fd, bool symfs, bool cpu, folder *const *f, int nf,
                   const volatile sig_atomic_t *abort, flame_err *err)
{
    int kallsyms_fd = s->kallsyms_fd;
    pid_t feeder;
    int in_fd = test_hold_script(data_fd, &feeder);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fork");
    }
    if (pid == 0) {
        dup2(in_fd, 0);
        dup2(p[1], 1);
        /* comm,pid,tid,time,event + ip,sym,dso per frame: the classic layout fold parses;
         * `-i -` reads the pipe-format data from stdin (the file is ours, opened by the caller). */
        const char *fields =
            cpu ? "comm,pid,tid,cpu,time,event,ip,sym,dso" : "comm,pid,tid,time,event,ip,sym,dso";
        /* wall, offcpu: each sample weighs its period, ns (on CPU: 1e9/Hz; off: its time) */
        if (!cpu && sc_rec_mode(s) != CT_MODE_CPU)
            fields = "comm,pid,tid,time,period,event,ip,sym,dso";
        /* --max-stack: the walked stacks go deeper than perf's default of 127 frames (the
         * walker's 2048, the kernel's part, the context markers) */
        const char *argv[18] = {"perf", "script", "-i", "-", "-F", fields, "--max-stack", "2200"};
        int n = 8;
        /* What perf reads by name is below the work directory, which it reaches through the
         * descriptor it inherits (workdir.c); so are the maps (/tmp/perf-<pid>.map links). */
        fcntl(sc_work_fd(), F_SETFD, 0);
        char symfs_arg[96], kallsyms_arg[64];
        if (symfs) {
            sc_work_path(symfs_arg, sizeof symfs_arg, SC_SYMFS_NAME);
            argv[n++] = "--symfs";
            argv[n++] = symfs_arg;
        }
        /* --kallsyms: our copy of the kernel's symbols, a file without a name (kallsyms.h); we
         * can no longer read the real file's addresses, having dropped CAP_SYSLOG */
        if (kallsyms_fd >= 0) {
            fcntl(kallsyms_fd, F_SETFD, 0);
            snprintf(kallsyms_arg, sizeof kallsyms_arg, "/proc/self/fd/%d", kallsyms_fd);
            argv[n++] = "--kallsyms";
            argv[n++] = kallsyms_arg;
        }
        /* --max-stack: perf keeps the first N entries of each callchain, which starts at the
         * leaf; the folder's root frames (process, thread, JVM) are added above what is kept */
        char max_stack[32];
        if (s->o.max_stack > 0) {
            snprintf(max_stack, sizeof max_stack, "--max-stack=%lld", (long long)s->o.max_stack);
            argv[n++] = max_stack;
        }
        argv[n] = NULL;
        execve(SC_PERF, (char *const *)argv, sc_perf_env);
        _exit(127);
    }
    if (in_fd != data_fd)
        close(in_fd);
    close(p[1]);
    _cleanup_fclose_ FILE *in = fdopen(p[0], "r");
    if (!in) {
        close(p[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fdopen");
    }
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, in)) >= 0) {
        if (abort && *abort) {
            kill(pid, SIGKILL);
            break;
        }
        if (n && line[n - 1] == '\n')
            n--;
        if (n > (1 << 20))
            continue; /* absurd line: skip rather than grow without end */
        for (int i = 0; i < nf && rc == 0; i++)
            if (folder_feed(f[i], line, (size_t)n, err) < 0)
                rc = -1;
        if (rc < 0) {
            kill(pid, SIGKILL);
            break;
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (feeder > 0)
        waitpid(feeder, NULL, 0);
    /* Killed by the kernel (the sidecar's memory limit) rather than by us: what it printed is
     * a part of the profile, which must not pass for the whole. */
    if (rc == 0 && !(abort && *abort) && WIFSIGNALED(status))
        return sc_fail_killed(err, "perf script", WTERMSIG(status));
    for (int i = 0; i < nf && rc == 0; i++)
        if (folder_finish(f[i], err) < 0)
            rc = -1;
    return rc;
}

static int emit_folded(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    (void)ctx;
    size_t cap = len + 32;
    char *b = malloc(cap);
    if (!b)
        return -1;
    /* ct_line_format (sc_out) turns any control byte into '?': one stack, one line */
    memcpy(b, stack, len);
    snprintf(b + len, cap - len, " %llu", count);
    sc_out(CT_TAG_FOLDED, b);
    free(b);
    return 0;
}

static int emit_mode(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    sc_out_mode(*(const enum ct_mode *)ctx, 0, stack, len, count);
    return 0;
}

/* a lock wait among the off-CPU stacks (juclock.c): an M line of lock, its value in ns, its
 * contentions the switch-outs its samples stand for (each 1/p: fold_opts.events) */
typedef struct juc_ctx {
    int nroot;
    char *buf;
    size_t cap;
} juc_ctx;

static int emit_juc(void *ctx, const char *stack, size_t len, unsigned long long ns,
                    unsigned long long events)
{
    juc_ctx *j = ctx;
    if (2 * len + 8 > j->cap) {
        char *b = realloc(j->buf, 2 * len + 8);
        if (!b)
            return -1;
        j->buf = b;
        j->cap = 2 * len + 8;
    }
    long n = sc_juc_lock(stack, len, j->nroot, j->buf, j->cap);
    if (n > 0)
        sc_out_mode(CT_MODE_LOCK, events, j->buf, (size_t)n, ns);
    return 0;
}

int sc_emit_juc(const folder *f, int nroot)
{
    juc_ctx j = {.nroot = nroot};
    int rc = folder_each_events(f, emit_juc, &j);
    free(j.buf);
    return rc;
}

int sc_emit_folded(const folder *f)
{
    return folder_each(f, emit_folded, NULL);
}

int sc_emit_mode(const folder *f, enum ct_mode m)
{
    return folder_each(f, emit_mode, &m);
}

enum ct_mode sc_perf_mode(const ct_args *a)
{
    unsigned m = ct_modes_of(a);
    /* cpu and offcpu: one wall recording, whose state tags say which samples are whose */
    bool both = (m & CT_MODE_BIT(CT_MODE_CPU)) && (m & CT_MODE_BIT(CT_MODE_OFFCPU));
    return m & CT_MODE_BIT(CT_MODE_WALL) || both ? CT_MODE_WALL
           : m & CT_MODE_BIT(CT_MODE_OFFCPU)     ? CT_MODE_OFFCPU
                                                 : CT_MODE_CPU;
}

enum ct_mode sc_rec_mode(const sc_session *s)
{
    return s->juc ? CT_MODE_OFFCPU : sc_perf_mode(&s->o);
}

bool sc_juc_wanted(const ct_args *a)
{
    unsigned m = ct_modes_of(a);
    unsigned perf =
        CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_WALL) | CT_MODE_BIT(CT_MODE_OFFCPU);
    /* the one-shot profile, and the windows of `record` and `top` (the top verb) */
    bool verb = a->verb == CT_RECORD || a->verb == CT_TOP;
    return (m & CT_MODE_BIT(CT_MODE_LOCK)) && !(m & perf) && verb &&
           a->sampling != CT_SAMPLING_THREAD;
}

void sc_refresh_maps(sc_session *s, const int *map_fd, uint64_t *lines, uint64_t *bytes)
{
    int64_t t = mono_ms();
    uint64_t map_lines = 0, map_bytes = 0;
    for (int k = 0; k < s->n; k++) {
        if (map_fd[k] < 0)
            continue;
        sc_map_stats st = {0};
        flame_err e2 = FLAME_ERR_INIT;
        if (s->raw_fd[k] >= 0 &&
            sc_map_refresh(s->raw_fd[k], (long long)lseek(s->raw_fd[k], 0, SEEK_END), map_fd[k],
                           &st, &e2) < 0)
            sc_warn("map of pid %d: %s", (int)s->jvms[k].st.pid, e2.msg);
        if (s->interp)
            sc_append_interp(s, k, -1, map_fd[k], &st, &s->jvms[k]);
        s->jvms[k].map_lines = st.lines_out;
        s->jvms[k].map_bytes = st.bytes_out;
        map_lines += st.lines_out;
        map_bytes += st.bytes_out;
        if (st.dropped)
            sc_warn("map of pid %d: %llu malformed or overlapping lines dropped",
                    (int)s->jvms[k].st.pid, st.dropped);
    }
    s->t[CT_PH_SANITIZE] = (uint64_t)(mono_ms() - t);
    *lines = map_lines;
    *bytes = map_bytes;
}

/* The `S` line after the `F` lines: the session's counts and timings, the folder's stats. */
void sc_emit_summary(sc_session *s, const fold_stats *fs, uint64_t map_lines, uint64_t map_bytes,
                     const char *sampling)
{
    ct_summary sum = {.samples = s->samples,
                      .folded_samples = fs->samples,
                      .lost = s->lost,
                      .jit_leaf_samples = fs->jit_leaf,
                      .jit_leaf_named = fs->jit_leaf_named,
                      .named_share =
                          fs->jit_leaf ? (double)fs->jit_leaf_named / (double)fs->jit_leaf : 1.0,
                      .map_lines = map_lines,
                      .map_bytes = map_bytes,
                      .jvms = (uint32_t)s->n};
    for (int k = 0; k < s->n; k++) {
        sum.walks += s->jvms[k].walks;
        sum.walk_tail += s->jvms[k].walk_tail;
        for (int q = 0; q < CT_WALK_NSTATUS; q++)
            sum.walk_status[q] += s->jvms[k].walk_status[q];
    }
    s->t[CT_PH_TOTAL] = (uint64_t)(mono_ms() - s->t0);
    memcpy(sum.timings_ms, s->t, sizeof sum.timings_ms);
    memcpy(sum.caps, s->caps, sizeof sum.caps);
    snprintf(sum.sampling, sizeof sum.sampling, "%s", sampling);
    snprintf(sum.filter, sizeof sum.filter, "%s", s->filter);
    char buf[2048];
    if (ct_format_summary(buf, sizeof buf, &sum) >= 0)
        sc_out(CT_TAG_SUMMARY, buf);
}

/* The folders of one recording's samples (docs/MODES.md "Several modes in one run"): one for
 * what it records as ever (wall, offcpu, cpu), and from a wall recording one per mode asked
 * besides it, each keeping its own samples by their state tag: cpu the on-CPU ones, counted one
 * a sample as a cpu recording counts them, offcpu the others, weighing their time off CPU. */
enum { MF_REC, MF_CPU, MF_OFFCPU };

void sc_split_free(sc_split *mf)
{
    for (int i = 0; i < 3; i++)
        folder_free(mf->f[i]);
    *mf = (sc_split){0};
}

int sc_split_new(sc_split *mf, const fold_opts *base, enum ct_mode rm, unsigned modes)
{
    *mf = (sc_split){.rm = rm, .modes = modes};
    bool wall = rm == CT_MODE_WALL;
    bool cpu = wall && (modes & CT_MODE_BIT(CT_MODE_CPU));
    bool off = wall && (modes & CT_MODE_BIT(CT_MODE_OFFCPU));
    /* the recording's own folder: its mode, lock's java.util.concurrent waits, or nothing else */
    bool rec = !wall || (modes & CT_MODE_BIT(CT_MODE_WALL)) ||
               ((modes & CT_MODE_BIT(CT_MODE_LOCK)) && !off);
    fold_opts fo = *base;
    fo.period = rm != CT_MODE_CPU;
    /* the off-CPU samples' periods carry the switch-outs each stands for (offcpu.h) */
    fo.events = rm != CT_MODE_CPU;
    fo.state_tags = wall; /* the recorder's FOLD_STATE_* in the periods */
    if (rec && !(mf->f[MF_REC] = folder_new(&fo)))
        return -1;
    fo.state_tags = false;
    fo.period = false;
    fo.state_mask = 1u << FOLD_STATE_RUNNING;
    if (cpu && !(mf->f[MF_CPU] = folder_new(&fo)))
        return -1;
    fo.period = true;
    fo.state_mask = 1u << FOLD_STATE_RUNNABLE | 1u << FOLD_STATE_SLEEPING;
    if (off && !(mf->f[MF_OFFCPU] = folder_new(&fo)))
        return -1;
    for (int i = 0; i < 3; i++)
        if (mf->f[i])
            mf->feed[mf->nfeed++] = mf->f[i];
    return 0;
}

bool sc_split_wants_samples(const sc_split *mf)
{
    return mf->rm != CT_MODE_CPU || (mf->modes & CT_MODE_BIT(CT_MODE_CPU));
}

/* The S line's fold counts (the share of JIT samples named ...): cpu's when it is asked for, as
 * in a cpu recording (the plugin prints them on cpu's line), else those of the recording's
 * folder, else offcpu's. */
const folder *sc_split_stats(const sc_split *mf)
{
    return mf->f[MF_CPU] ? mf->f[MF_CPU] : mf->f[MF_REC] ? mf->f[MF_REC] : mf->f[MF_OFFCPU];
}

void sc_split_emit(const sc_split *mf, int nroot)
{
    enum ct_mode rm = mf->rm;
    unsigned modes = mf->modes;
    const folder *rec = mf->f[MF_REC];
    if (mf->f[MF_CPU])
        sc_emit_folded(mf->f[MF_CPU]); /* F lines, samples */
    else if (rm == CT_MODE_CPU && (modes & CT_MODE_BIT(CT_MODE_CPU)))
        sc_emit_folded(rec);
    if (mf->f[MF_OFFCPU])
        sc_emit_mode(mf->f[MF_OFFCPU], CT_MODE_OFFCPU); /* M lines, ns */
    else if (rm == CT_MODE_OFFCPU && (modes & CT_MODE_BIT(CT_MODE_OFFCPU)))
        sc_emit_mode(rec, CT_MODE_OFFCPU);
    if (rm == CT_MODE_WALL && (modes & CT_MODE_BIT(CT_MODE_WALL)))
        sc_emit_mode(rec, CT_MODE_WALL);
    /* lock: the monitors from the agent, the java.util.concurrent waits from here */
    if (rm != CT_MODE_CPU && (modes & CT_MODE_BIT(CT_MODE_LOCK)))
        sc_emit_juc(mf->f[MF_OFFCPU] ? mf->f[MF_OFFCPU] : rec, nroot);
}

int sc_process(sc_session *s, const int *map_fd, flame_err *err)
{
    uint64_t map_lines = 0, map_bytes = 0;
    sc_refresh_maps(s, map_fd, &map_lines, &map_bytes);
    int64_t t = mono_ms();
    fold_opts fo = {.inline_frames = !s->o.no_inline,
                    .signatures = s->o.signatures,
                    .kernel = s->kernel_text != 0, /* kernel frames marked _[k] */
                    .root_for_pid = s->n > 1 ? sc_root_for_pid : NULL,
                    .root_ctx = s};
    enum ct_mode rm = sc_rec_mode(s);
    unsigned modes = ct_modes_of(&s->o);
    sc_split mf;
    if (sc_split_new(&mf, &fo, rm, modes) < 0) {
        sc_split_free(&mf);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* neither cpu, wall nor offcpu asked for (--mode alloc; lock without off-CPU samples): the
     * samples are not processed nor sent. NEEDSWORK: not recording them at all (the recorder
     * runs for every mode today). */
    bool perf = sc_split_wants_samples(&mf);
    _cleanup_close_ int data = perf ? sc_work_open(SC_WORK_DATA, O_RDONLY) : -1;
    int rc = !perf      ? 0
             : data < 0 ? flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "open %s", SC_WORK_DATA)
                        : sc_perf_script(s, data, true, false, mf.feed, mf.nfeed, s->abort, err);
    s->t[CT_PH_SCRIPT] = (uint64_t)(mono_ms() - t);
    if (rc == 0 && !*s->abort) {
        sc_split_emit(&mf, s->n > 1 ? 2 : 1);
        sc_emit_modes(s);
        fold_stats fs;
        folder_get_stats(sc_split_stats(&mf), &fs);
        sc_emit_summary(s, &fs, map_lines, map_bytes,
                        ct_sampling_name((enum ct_sampling)s->sampling));
    }
    sc_split_free(&mf);
    return rc;
}
