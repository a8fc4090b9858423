/* The recorder, the one way record.c and top.c start, read, stop and reap a recording: a child
 * that writes pipe-format perf.data on a pipe and ends when "stop\n" arrives on its control pipe.
 * Two kinds (docs/SIDECAR.md "Sampling"):
 *   per CPU   (default) our own child around sidecar/recorder/percpu.c: one cpu-clock event per
 * CPU, a BPF filter keeping only the target's PID namespace. Costs the target nothing at its
 *             context switches. Needs CAP_PERFMON (or CAP_SYS_ADMIN) while opening, then none.
 *   per thread `perf record -p <JVMs>`, as nobody with CAP_SYS_PTRACE: the fallback when per-CPU
 *             events are refused, or --sampling thread.
 * Both speak perf's --control protocol ("stop\n"), so stopping is one path. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/recorder/interp.h"
#include "sidecar/recorder/percpu.h"
#include "sidecar/recorder/recorder.h"
#include "sidecar/recorder/threadwalk.h"
#include "sidecar/recorder/walk.h"
#include "sidecar/session.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define STATUS_MAX 1024
#define OPEN_TIMEOUT_MS 10000 /* the per-CPU child reports within this (opening takes ~5 ms) */
#define PUMP_MS 250           /* per-CPU: the longest a sample waits in its ring */
/* Naming interpreted frames: a sample's Method* is resolved when its ring is drained, and a name
 * is kept only if no class was unloaded since the pass before (interp.h); draining every 50 ms
 * keeps that window short for JVMs that unload classes often (~20 wake-ups/s, microseconds each).
 */
#define PUMP_INTERP_MS 50
#define DATA_PIPE_SIZE (1 << 20)
#define SC_INTERP_WHY_LINE 256

/* Nothing of the environment we were given: no $HOME whose .perfconfig or .debug could have been
 * planted, no configuration file at all. */
char *const sc_perf_env[] = {"HOME=/nonexistent",
                             "PERF_CONFIG_NOGLOBAL=1",
                             "PERF_CONFIG_NOSYSTEM=1",
                             "PATH=/usr/bin:/bin",
                             "LC_ALL=C",
                             NULL};

void sc_interp_names_path(char *buf, size_t cap, pid_t pid, int window)
{
    if (window < 0)
        snprintf(buf, cap, "interp-%d.names", (int)pid);
    else
        snprintf(buf, cap, "interp-%d-%d.names", (int)pid, window);
}

static void thread_walker(const sc_session *s, int in_fd, int out_fd, const int *names_fd);
static void make_names(const sc_session *s, int *names_fd);
static void close_names(int *names_fd);
static struct sc_interp *open_interp(const sc_session *s, const int *names_fd);
static bool names_header(struct sc_interp *in, const sc_session *s, const int *names_fd, int k);
static void names_walks(struct sc_interp *in, const sc_session *s, const int *names_fd);

/* ---- per thread: perf record -p ---- */
static int spawn_thread(const sc_session *s, bool live, sc_sampler *r, flame_err *err)
{
    char pids[SC_MAX_JVMS * 12] = "", freq[16];
    for (int k = 0; k < s->n; k++)
        snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d", k ? "," : "",
                 (int)s->jvms[k].st.pid);
    snprintf(freq, sizeof(freq), "%lld", (long long)s->o.frequency);
    /* Walking (s->interp): perf in dwarf mode -- each sample with the user registers and 16 KiB
     * of stack, no user chain of the kernel's -- through a rewriter child (threadwalk.c) that
     * walks them as the per-CPU recorder does; perf wakes at every sample then, so that samples
     * reach the walker within milliseconds (the unloading rule of interp.h counts on it). */
    bool walk = s->interp;
    int p[2], c[2] = {-1, -1}, q[2] = {-1, -1};
    if (pipe2(p, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    if (pipe2(c, O_CLOEXEC) < 0 || (walk && pipe2(q, O_CLOEXEC) < 0)) {
        int e = errno;
        close(p[0]), close(p[1]);
        if (c[0] >= 0)
            close(c[0]), close(c[1]);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "pipe");
    }
    fflush(stdout); /* the child must not inherit unwritten result lines */
    r->pid = fork();
    if (r->pid < 0) {
        int e = errno;
        close(p[0]), close(p[1]), close(c[0]), close(c[1]);
        if (walk)
            close(q[0]), close(q[1]);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "fork");
    }
    if (r->pid == 0) {
        dup2(p[1], 1);
        dup2(c[0], 3); /* perf's --control fd: we stop it by writing "stop" */
        /* The recorder needs only CAP_SYS_PTRACE (perf_event_open on another user's process
         * passes ptrace_may_access; perf_event_paranoid=2 then limits it to user-space samples,
         * all we want). Become nobody keeping just that one, via the ambient set so it
         * survives exec. If that fails we stop: never record with more than we planned. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (prctl(PR_SET_KEEPCAPS, 1) < 0 || sc_become_run_user() < 0)
            _exit(126);
        cap_t keep = cap_from_text("cap_sys_ptrace=eip");
        if (!keep || cap_set_proc(keep) < 0 || cap_set_ambient(CAP_SYS_PTRACE, CAP_SET) < 0)
            _exit(126);
        /* Changing uid reset the parent-death signal: set it again so perf dies with us. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* --no-buffering wakes perf at every sample so that samples reach us at once (P lines,
         * first_sample); measured in docs/SIDECAR.md "Sampling". Without it perf's ring is
         * read when half full (seconds at 99 Hz) and at "stop": a top window loses nothing. */
        const char *argv[20] = {"perf", "record", "-q", "-N"};
        int n = 4;
        if (live || walk)
            argv[n++] = "--no-buffering";
        const char *rest[] = {"--control", "fd:3", "-e", "cpu-clock", "-F", freq,
                              "-p",        pids,   "-o", "-",         NULL};
        memcpy(argv + n, rest, sizeof rest);
        n += (int)(sizeof rest / sizeof rest[0]) - 1;
        /* the call graph: the walker's registers and stack copy, or the kernel's chain */
        if (walk) {
            argv[n++] = "--call-graph";
            argv[n++] = "dwarf," STR(SC_INTERP_STACK);
        } else {
            argv[n++] = "-g";
        }
        argv[n] = NULL;
        execve(SC_PERF, (char *const *)argv, sc_perf_env);
        _exit(127);
    }
    close(p[1]);
    close(c[0]);
    r->out_fd = p[0];
    r->ctl_fd = c[1];
    r->mode = CT_SAMPLING_THREAD;
    snprintf(r->filter, sizeof r->filter, "pid");
    if (!walk)
        return 0;
    int names_fd[SC_MAX_JVMS];
    make_names(s, names_fd);
    r->walker_pid = fork();
    if (r->walker_pid == 0) {
        close(q[0]);
        close(c[1]);
        thread_walker(s, p[0], q[1], names_fd);
    }
    int e = errno;
    close_names(names_fd);
    close(p[0]);
    close(q[1]);
    r->out_fd = q[0];
    if (r->walker_pid < 0) { /* perf's pipe is gone: it ends at its next write */
        close(q[0]);
        r->out_fd = -1;
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "fork");
    }
    return 0;
}

/* ---- per thread, walking: the rewriter between perf and us (threadwalk.h) ---- */

typedef struct tw_ctx {
    const sc_session *s;
    const int *names_fd;
    struct sc_interp *in;
} tw_ctx;

static int tw_write(void *ctx, const unsigned char *b, size_t n)
{
    int fd = *(const int *)ctx;
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* At the first sample: perf's own MMAP2 records of what the JVMs had mapped have passed (so
 * libjvm is known): read the VMStructs, write the names files' first lines, map the synthetic
 * range of every JVM whose frames get names. */
static void tw_start(sc_tw *t, void *ctx)
{
    tw_ctx *c = ctx;
    sc_interp_start(c->in);
    /* two passes: the unloading count as of now becomes the floor of the samples that follow
     * (perf's samples start after its FINISHED_INIT; the first ones need not wait 100 ms) */
    sc_interp_pass(c->in);
    sc_interp_pass(c->in);
    for (int k = 0; k < c->s->n; k++)
        if (c->names_fd[k] >= 0 && names_header(c->in, c->s, c->names_fd, k))
            sc_tw_anon(t, (uint32_t)c->s->jvms[k].st.pid, SC_INTERP_BASE, SC_INTERP_SPAN);
}

/* The child: /proc/<pid>/mem of each JVM opened while root (as the JVM's user, open_interp), then
 * the run's uid with no capability, NO_NEW_PRIVS and the seccomp deny-list (sc_seal) before the
 * first byte of the stream -- or of the target -- is read. */
static _Noreturn void thread_walker(const sc_session *s, int in_fd, int out_fd, const int *names_fd)
{
    signal(SIGINT, SIG_IGN); /* perf ends first, then its pipe: we follow */
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct sc_interp *in = open_interp(s, names_fd);
    flame_err e = FLAME_ERR_INIT;
    _cleanup_cap_ cap_t none = cap_init();
    if (sc_become_run_user() < 0 || !none || cap_set_proc(none) < 0) {
        fprintf(stderr, "flame-sidecar: walker: cannot drop privileges: %s\n", strerror(errno));
        _exit(126);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the uid change cleared it */
    if (sc_seal(&e) < 0) {
        fprintf(stderr, "flame-sidecar: walker: %s\n", e.msg);
        _exit(126);
    }
    sc_test_stop("record");
    static sc_tw t;
    tw_ctx c = {.s = s, .names_fd = names_fd, .in = in};
    sc_tw_init(&t, in);
    t.on_start = tw_start;
    t.start_ctx = &c;
    static unsigned char buf[1 << 16];
    int64_t last = 0;
    for (;;) {
        int64_t now = mono_ms();
        if (in && now - last >= PUMP_INTERP_MS) { /* a pass: the unloading epoch, blobs */
            sc_interp_pass(in);
            last = now;
        }
        struct pollfd pf = {.fd = in_fd, .events = POLLIN};
        if (poll(&pf, 1, PUMP_INTERP_MS) == 0)
            continue;
        ssize_t n = read(in_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (sc_tw_feed(&t, buf, (size_t)n, tw_write, &out_fd) < 0)
            _exit(1);
    }
    if (in) {
        names_walks(in, s, names_fd);
        sc_walk_stats ws;
        sc_interp_stats is;
        sc_interp_walk_stats(in, 0, &ws);
        sc_interp_get_stats(in, &is);
        fprintf(stderr,
                "flame-sidecar: recorder: walk: walks=%llu frames=%llu java_frames=%llu "
                "compiled=%llu compiled_named=%llu fp_compared=%llu fp_same=%llu walk_us=%llu "
                "(per thread, samples=%llu rewrite_us=%llu dropped=%llu)\n",
                (unsigned long long)ws.walks, (unsigned long long)ws.frames,
                (unsigned long long)ws.java_frames, (unsigned long long)is.compiled,
                (unsigned long long)is.compiled_named, (unsigned long long)is.fp_compared,
                (unsigned long long)is.fp_same, (unsigned long long)(ws.ns / 1000),
                (unsigned long long)is.samples, (unsigned long long)(is.walk_ns / 1000),
                (unsigned long long)t.bad);
    }
    _exit(0);
}

/* ---- per CPU: our child around sidecar/recorder/percpu.c ---- */

/* Write the one status line the parent waits for ("ok ...", or "<class> <message>"). */
static void put_status(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_status(int fd, const char *fmt, ...)
{
    char buf[STATUS_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof buf - 2)
        n = (int)sizeof buf - 2;
    for (int i = 0; i < n; i++)
        if (buf[i] == '\n')
            buf[i] = ' ';
    buf[n++] = '\n';
    if (write(fd, buf, (size_t)n) != n)
        _exit(1);
}

/* Become nobody holding exactly what opening the events needs: CAP_PERFMON when the engine
 * granted it (kernel >= 5.8; CAP_BPF with it for the filter), else CAP_SYS_ADMIN (Docker 20.10
 * knows no CAP_PERFMON); plus CAP_SYS_PTRACE to open other users' /proc/<pid>/maps. SETUID,
 * SETGID, SYS_CHROOT are gone for good after this. */
static int become_opener(flame_err *err)
{
    cap_value_t keep[3] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE, 0};
    int nkeep = 2;
    _cleanup_cap_ cap_t cur = cap_get_proc();
    cap_flag_value_t has = CAP_CLEAR;
    if (cur && cap_get_flag(cur, CAP_PERFMON, CAP_PERMITTED, &has) == 0 && has == CAP_SET) {
        keep[0] = CAP_PERFMON;
        if (cap_get_flag(cur, CAP_BPF, CAP_PERMITTED, &has) == 0 && has == CAP_SET)
            keep[nkeep++] = CAP_BPF;
    }
    /* TEST ONLY (tests/e2e/recorder-cpu.t): what a recorder gets on an engine that withholds
     * CAP_PERFMON from it; the kernel then refuses the CPU-wide events, as it would there. */
    if (getenv("FLAME_SIDECAR_TEST_NO_PERFMON")) {
        keep[0] = CAP_SYS_PTRACE;
        nkeep = 1;
    }
    /* KEEPCAPS: the uid change keeps the permitted set; effective is restored just below. */
    if (prctl(PR_SET_KEEPCAPS, 1) < 0 || sc_become_run_user() < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "become uid %u",
                                (unsigned)sc_run_uid());
    _cleanup_cap_ cap_t c = cap_init();
    if (!c || cap_set_flag(c, CAP_PERMITTED, nkeep, keep, CAP_SET) < 0 ||
        cap_set_flag(c, CAP_EFFECTIVE, nkeep, keep, CAP_SET) < 0 || cap_set_proc(c) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "keep the recorder's capabilities");
    prctl(PR_SET_KEEPCAPS, 0);
    /* The uid change cleared the parent-death signal: we must die with the sidecar. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    return 0;
}

static const char *class_name(int detail)
{
    switch ((enum sc_percpu_error)detail) {
    case SC_PERCPU_E_PERF_DENIED:
    case SC_PERCPU_E_BPF_DENIED:
        return "denied";
    case SC_PERCPU_E_UNSUPPORTED:
        return "unsupported";
    case SC_PERCPU_E_NONE:
    case SC_PERCPU_E_OTHER:
        break;
    }
    return "error";
}

/* PRIVILEGED (root with CAP_SETUID/SETGID, before become_opener): /proc/<pid>/mem of each JVM,
 * for interp.h, opened as the JVM's own user. The file is 0600 and owned by the JVM's euid, and
 * we hold no CAP_DAC_*: with fsuid/fsgid = the JVM's, the permission check passes as its owner's
 * and the kernel's ptrace check (PTRACE_MODE_ATTACH_FSCREDS, made here at open; reads later need
 * nothing) passes as the same user's; a JVM that made itself non-dumpable needs our
 * CAP_SYS_PTRACE. Nothing is read here. */
static struct sc_interp *open_interp(const sc_session *s, const int *names_fd)
{
    pid_t pid[SC_MAX_JVMS];
    int mem[SC_MAX_JVMS], names[SC_MAX_JVMS], n = 0;
    for (int k = 0; k < s->n && names_fd; k++) {
        if (names_fd[k] < 0)
            continue;
        const sc_jvm *j = &s->jvms[k];
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)j->st.pid);
        pid[n] = j->st.pid;
        setfsgid(j->st.gid);
        setfsuid(j->st.uid);
        mem[n] = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (mem[n] < 0)
            mem[n] = -errno; /* interp.h reports why */
        setfsuid(0);
        setfsgid(0);
        names[n++] = names_fd[k];
    }
    struct sc_interp *in = n ? sc_interp_new(pid, mem, names, n) : NULL;
    for (int k = 0; in && k < s->n; k++)
        if (names_fd[k] >= 0 && s->jvms[k].attach == CT_ATTACH_NONE)
            sc_interp_name_blobs(in, s->jvms[k].st.pid);
    return in;
}

/* After the privilege drop: read the JVMs' VMStructs, say per JVM whether its interpreted frames
 * get names (first line of its names file, read by process.c), and map the synthetic range. */
/* The names files, one per JVM, created here (root, our tmpfs), written by the recorder child
 * through the inherited fd, read by process.c; -1 where none. */
static void make_names(const sc_session *s, int *names_fd)
{
    for (int k = 0; k < SC_MAX_JVMS; k++)
        names_fd[k] = -1;
    for (int k = 0; s->interp && k < s->n; k++) {
        char path[64];
        sc_interp_names_path(path, sizeof path, s->jvms[k].st.pid, s->interp_window);
        names_fd[k] = sc_work_create(path, O_WRONLY, 0644);
    }
}

static void close_names(int *names_fd)
{
    for (int k = 0; k < SC_MAX_JVMS; k++)
        if (names_fd[k] >= 0)
            close(names_fd[k]);
}

/* The first lines of JVM k's names file: whether its frames can be named, whether its stacks
 * are walked. True when they can be named. */
static bool names_header(struct sc_interp *in, const sc_session *s, const int *names_fd, int k)
{
    const char *why = sc_interp_why(in, s->jvms[k].st.pid);
    char line[SC_INTERP_WHY_LINE];
    int m = why ? snprintf(line, sizeof line, "#unnamed %s\n", why)
                : snprintf(line, sizeof line, "#named\n");
    if (m > 0 && write(names_fd[k], line, (size_t)m) < 0)
        fprintf(stderr, "flame-sidecar: recorder: names file: %s\n", strerror(errno));
    const char *nowalk = why ? NULL : sc_interp_walk_why(in, s->jvms[k].st.pid);
    m = nowalk ? snprintf(line, sizeof line, "#nowalk %s\n", nowalk) : 0;
    if (m > 0 && write(names_fd[k], line, (size_t)m) < 0)
        fprintf(stderr, "flame-sidecar: recorder: names file: %s\n", strerror(errno));
    return !why;
}

/* The recorder's last line in each JVM's names file: its walk counts (process.c reads them). */
static void names_walks(struct sc_interp *in, const sc_session *s, const int *names_fd)
{
    for (int k = 0; k < s->n; k++) {
        if (names_fd[k] < 0)
            continue;
        sc_walk_stats js;
        sc_interp_walk_stats(in, s->jvms[k].st.pid, &js);
        if (!js.walks)
            continue;
        char line[512];
        int m = snprintf(line, sizeof line, "#walk %llu %llu", (unsigned long long)js.walks,
                         (unsigned long long)js.tail_walks);
        for (int q = 0; q < SC_WALK_NSTATUS && m > 0 && (size_t)m < sizeof line; q++)
            m += snprintf(line + m, sizeof line - (size_t)m, " %llu",
                          (unsigned long long)js.status[q]);
        if (m > 0 && (size_t)m < sizeof line - 1) {
            line[m++] = '\n';
            if (write(names_fd[k], line, (size_t)m) < 0)
                fprintf(stderr, "flame-sidecar: recorder: names file: %s\n", strerror(errno));
        }
    }
}

static int start_interp(sc_percpu *p, struct sc_interp *in, const sc_session *s,
                        const int *names_fd, int out, flame_err *e)
{
    sc_interp_start(in);
    for (int k = 0; k < s->n; k++)
        if (names_fd[k] >= 0 && names_header(in, s, names_fd, k) &&
            sc_percpu_synth_anon(p, out, s->jvms[k].st.pid, SC_INTERP_BASE, SC_INTERP_SPAN, e) < 0)
            return -1;
    return 0;
}

/* The recorder's classifier (percpu.h): is process pid of our namespace the target's? Its
 * /proc/<pid>/cgroup (world-readable: no privilege needed, read after the seal) must name the
 * target container. */
typedef struct target_ctx {
    int proc;
    const char *target;
} target_ctx;

static int classify_target(void *ctx, uint32_t pid)
{
    const target_ctx *t = ctx;
    char path[32];
    snprintf(path, sizeof path, "%u/cgroup", pid);
    return sc_cgroup_is(t->proc, path, t->target);
}

static _Noreturn void percpu_child(const sc_session *s, pid_t parent, const pid_t *extra,
                                   int n_extra, int out, int ctl, int st, const int *names_fd)
{
    signal(SIGINT, SIG_IGN); /* the parent stops us through the control pipe */
    signal(SIGTERM, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    flame_err e = FLAME_ERR_INIT;
    sc_percpu_opts o = {.freq = (unsigned)s->o.frequency, .kernel_text = s->kernel_text};
    enum ct_mode pm = sc_rec_mode(s);
    o.offcpu = pm == CT_MODE_WALL     ? SC_PERCPU_WALL
               : pm == CT_MODE_OFFCPU ? SC_PERCPU_OFFCPU
                                      : SC_PERCPU_ONCPU;
    o.offcpu_min_ns = s->o.offcpu_min_ms * 1000000ull;
    /* We joined the target's PID namespace (--pid container:<target>): keep its tasks, but
     * not ours, which live there too. */
    o.pidns_fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (s->o.verb == CT_HOST) {
        /* host (docs/HOST.md): every task of every CPU is wanted, ours included (the sidecar is
         * a container on the host too): no filter program, and only pid 0 (idle) dropped. Files
         * are named by inode: many containers' different files share paths. */
        o.user_filter_only = true;
        o.inode_names = true;
        o.clock_boottime = true; /* a tid reused meanwhile: tasks are told apart by start */
    } else {
        o.exclude[o.n_exclude++] = parent;
        o.exclude[o.n_exclude++] = getpid();
        for (int i = 0; i < n_extra && o.n_exclude < SC_PERCPU_MAX_EXCLUDE; i++)
            o.exclude[o.n_exclude++] = extra[i];
    }
    int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o.pidns_fd < 0 || proc < 0) {
        put_status(st, "error open /proc: %s", strerror(errno));
        _exit(1);
    }
    /* Only the target's processes, not everything that shares its namespace (docs/SIDECAR.md
     * "Only the target's tasks"); host: every task of the host is wanted. */
    static target_ctx tc;
    if (s->o.verb != CT_HOST) {
        tc = (target_ctx){.proc = proc, .target = s->target};
        o.classify = classify_target;
        o.classify_ctx = &tc;
    }
    o.interp = open_interp(s, names_fd);
    if (become_opener(&e) < 0) {
        put_status(st, "error %s", e.msg);
        _exit(1);
    }
    char caps_open[20], caps_rec[20];
    sc_cap_eff(0, caps_open, sizeof caps_open);
    sc_test_stop("open");
    sc_percpu *p = NULL;
    char bpf_refused[400] = "";
    int rc = sc_percpu_open(&p, &o, &e);
    if (rc < 0 && e.detail == SC_PERCPU_E_BPF_DENIED) {
        /* No in-kernel filter (an old kernel without bpf_get_ns_current_pid_tgid, a seccomp
         * profile without bpf): the same events, other processes' samples dropped by us. */
        snprintf(bpf_refused, sizeof bpf_refused, "%.300s", e.msg);
        e = (flame_err)FLAME_ERR_INIT;
        o.user_filter_only = true;
        rc = sc_percpu_open(&p, &o, &e);
    }
    if (rc < 0) {
        put_status(st, "%s %s", class_name(e.detail), e.msg);
        _exit(1);
    }
    if (sc_percpu_collect(p, proc, &e) < 0) {
        put_status(st, "error %s", e.msg);
        _exit(1);
    }
    /* PRIVILEGE: the events are open and the maps of the processes already running too;
     * nothing privileged is left to do. No capability, NO_NEW_PRIVS, seccomp denying
     * perf_event_open and bpf, before anything of the target is read. */
    if (sc_seal(&e) < 0) {
        put_status(st, "error %s", e.msg);
        _exit(1);
    }
    sc_cap_eff(0, caps_rec, sizeof caps_rec);
    sc_percpu_stats stats;
    sc_percpu_get_stats(p, &stats);
    put_status(st, "ok %s %d %s %s %s %s", stats.bpf ? "bpf" : "user", stats.cpus, caps_open,
               caps_rec, stats.boottime ? "boot" : "perf", bpf_refused);
    close(st);
    if (sc_percpu_write_header(p, out, &e) < 0 || sc_percpu_enable(p, &e) < 0 ||
        sc_percpu_synthesize(p, proc, out, &e) < 0 ||
        (o.interp && start_interp(p, o.interp, s, names_fd, out, &e) < 0)) {
        fprintf(stderr, "flame-sidecar: recorder: %s\n", e.msg);
        _exit(1);
    }
    /* the samples taken before the VMStructs were read, judged at once (interp.h) */
    if (o.interp && sc_percpu_pump(p, out, -1, 0, &e) < 0) {
        fprintf(stderr, "flame-sidecar: recorder: %s\n", e.msg);
        _exit(1);
    }
    sc_test_stop("record");
    for (;;) {
        rc = sc_percpu_pump(p, out, ctl, o.interp ? PUMP_INTERP_MS : PUMP_MS, &e);
        if (rc < 0)
            break;
        if (rc > 0) { /* "stop\n", or the parent closed the pipe: either way we are done */
            char b[16];
            ssize_t n = read(ctl, b, sizeof b);
            if (n <= 0 || memchr(b, '\n', (size_t)n))
                break;
        }
    }
    if (rc >= 0) {
        sc_percpu_disable(p, &e);
        rc = sc_percpu_pump(p, out, -1, 0, &e);
    }
    sc_percpu_get_stats(p, &stats);
    if (o.offcpu) {
        sc_offcpu_stats os;
        sc_percpu_get_offcpu_stats(p, &os);
        fprintf(stderr,
                "flame-sidecar: recorder: off-CPU: switch-outs=%llu sampled=%llu lost=%llu "
                "no_start=%llu finished=%llu written=%llu at_end=%llu short=%llu stale=%llu "
                "full=%llu weight_ms=%llu runs=%llu run_ns=%llu slept=%llu/%llu "
                "preempted=%llu/%llu\n",
                (unsigned long long)os.switchouts, (unsigned long long)os.sampled,
                (unsigned long long)os.lost, (unsigned long long)os.no_start,
                (unsigned long long)os.finished, (unsigned long long)os.paired,
                (unsigned long long)os.at_end, (unsigned long long)os.short_n,
                (unsigned long long)os.stale, (unsigned long long)os.full,
                (unsigned long long)(os.weight_ns / 1000000), (unsigned long long)os.runs,
                (unsigned long long)os.run_ns, (unsigned long long)os.kind_switchouts[0],
                (unsigned long long)os.kind_sampled[0], (unsigned long long)os.kind_switchouts[1],
                (unsigned long long)os.kind_sampled[1]);
    }
    /* Counts only (never a name or a pid of anything outside the target). */
    fprintf(stderr,
            "flame-sidecar: recorder: cpus=%d filter=%s samples=%llu dropped_in_sidecar=%llu "
            "others=%llu classified=%llu sideband=%llu sideband_dropped=%llu synthesized=%llu "
            "lost=%llu wakeups=%llu period_changes=%llu\n",
            stats.cpus, stats.bpf ? "bpf" : "user", (unsigned long long)stats.samples,
            (unsigned long long)stats.samples_dropped, (unsigned long long)stats.others,
            (unsigned long long)stats.classified, (unsigned long long)stats.sideband,
            (unsigned long long)stats.sideband_dropped, (unsigned long long)stats.synthesized,
            (unsigned long long)stats.lost, (unsigned long long)stats.wakeups,
            (unsigned long long)stats.period_changes);
    if (o.interp) {
        sc_interp_stats is;
        sc_interp_get_stats(o.interp, &is);
        fprintf(stderr,
                "flame-sidecar: recorder: interpreted: samples=%llu no_floor=%llu "
                "with_interp=%llu frames=%llu named=%llu unknown=%llu partial=%llu "
                "beyond_copy=%llu unload_window=%llu refused=%llu broken_chain=%llu names=%llu "
                "names_full=%llu throttled=%llu walk_us=%llu bytes_in=%llu bytes_out=%llu\n",
                (unsigned long long)is.samples, (unsigned long long)is.no_floor,
                (unsigned long long)is.with_interp, (unsigned long long)is.frames,
                (unsigned long long)is.named, (unsigned long long)is.unknown,
                (unsigned long long)is.partial, (unsigned long long)is.beyond_copy,
                (unsigned long long)is.unload_window, (unsigned long long)is.refused,
                (unsigned long long)is.broken_chain, (unsigned long long)is.names,
                (unsigned long long)is.names_full, (unsigned long long)is.throttled,
                (unsigned long long)(is.walk_ns / 1000), (unsigned long long)is.bytes_in,
                (unsigned long long)is.bytes_out);
        /* per JVM, for the summary and its warnings (process.c): a last line in its names file */
        names_walks(o.interp, s, names_fd);
        /* three short lines: the plugin shows the sidecar's stderr cut at 255 bytes */
        sc_walk_stats ws;
        sc_interp_walk_stats(o.interp, 0, &ws);
        fprintf(stderr,
                "flame-sidecar: recorder: walk: walks=%llu frames=%llu java_frames=%llu "
                "compiled=%llu compiled_named=%llu new_code=%llu fp_compared=%llu fp_same=%llu "
                "walk_us=%llu\n",
                (unsigned long long)ws.walks, (unsigned long long)ws.frames,
                (unsigned long long)ws.java_frames, (unsigned long long)is.compiled,
                (unsigned long long)is.compiled_named, (unsigned long long)is.new_code,
                (unsigned long long)is.fp_compared, (unsigned long long)is.fp_same,
                (unsigned long long)(ws.ns / 1000));
        char line[256] = "flame-sidecar: recorder: walk status:";
        size_t m = strlen(line);
        for (int k = 0; k < SC_WALK_NSTATUS && m < sizeof line; k++)
            if (ws.status[k])
                m += (size_t)snprintf(line + m, sizeof line - m, " %s=%llu", sc_walk_status_name(k),
                                      (unsigned long long)ws.status[k]);
        fprintf(stderr, "%s\n", line);
        fprintf(stderr,
                "flame-sidecar: recorder: walk steps: prologue=%llu epilogue=%llu deopt=%llu "
                "ra_shifted=%llu entry_recovered=%llu fp_fallback=%llu tail_walks=%llu "
                "tail_pages=%llu\n",
                (unsigned long long)ws.prologue, (unsigned long long)ws.epilogue,
                (unsigned long long)ws.deopt, (unsigned long long)ws.ra_shifted,
                (unsigned long long)ws.entry_recovered, (unsigned long long)ws.fp_fallback,
                (unsigned long long)ws.tail_walks, (unsigned long long)ws.tail_reads);
    }
    _exit(rc < 0 ? 1 : 0);
}

/* Read the child's status line (bounded in size and time). */
static ssize_t read_status(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    int64_t t0 = mono_ms();
    /* TEST ONLY: a child stopped at the "open" hook is being looked at (privilege-phases.t) */
    int64_t bound = sc_test_hook("open") ? 120000 : OPEN_TIMEOUT_MS;
    while (n < cap - 1) {
        int left = (int)(bound - (mono_ms() - t0));
        if (left <= 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left) <= 0)
            continue;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
        if (memchr(buf, '\n', n))
            break;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return (ssize_t)n;
}

static void reap(pid_t pid, int64_t bound_ms, int *status)
{
    int st = 0;
    for (int64_t w0 = mono_ms(); waitpid(pid, &st, WNOHANG) == 0;) {
        if (mono_ms() - w0 > bound_ms)
            return; /* it dies with us (PDEATHSIG) */
        sleep_ms(10);
    }
    if (status)
        *status = st;
}

/* 0 started, 1 refused (why says what), <0 error. */
static int spawn_cpu(const sc_session *s, const pid_t *extra, int n_extra, sc_sampler *r, char *why,
                     size_t why_cap, flame_err *err)
{
    int p[2], c[2], st[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    if (pipe2(c, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
        close(p[0]);
        close(p[1]);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    }
    /* Room for ~5 s of samples while we are busy elsewhere (attaching a new JVM). */
    fcntl(p[1], F_SETPIPE_SZ, DATA_PIPE_SIZE);
    /* The recorder's names of interpreted frames, one file per JVM: created here (root, the work
     * directory), written by the child through the inherited fd, read by process.c. */
    int names_fd[SC_MAX_JVMS];
    make_names(s, names_fd);
    pid_t parent = getpid();
    fflush(stdout);
    r->pid = fork();
    if (r->pid < 0) {
        int e = errno;
        close(p[0]), close(p[1]), close(c[0]), close(c[1]), close(st[0]), close(st[1]);
        close_names(names_fd);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "fork");
    }
    if (r->pid == 0) {
        close(p[0]);
        close(c[1]);
        close(st[0]);
        percpu_child(s, parent, extra, n_extra, p[1], c[0], st[1], names_fd);
    }
    close_names(names_fd);
    close(p[1]);
    close(c[0]);
    close(st[1]);
    r->out_fd = p[0];
    r->ctl_fd = c[1];
    char line[STATUS_MAX];
    read_status(st[0], line, sizeof line);
    close(st[0]);
    char filt[8] = "", co[20] = "", cr[20] = "", clk[8] = "";
    int cpus = 0, used = 0;
    if (sscanf(line, "ok %7s %d %19s %19s %7s %n", filt, &cpus, co, cr, clk, &used) >= 5) {
        r->mode = CT_SAMPLING_CPU;
        r->cpus = cpus;
        r->boottime = !strcmp(clk, "boot");
        snprintf(r->filter, sizeof r->filter, "%s", filt);
        snprintf(r->caps_open, sizeof r->caps_open, "%s", co);
        snprintf(r->caps_record, sizeof r->caps_record, "%s", cr);
        snprintf(r->bpf_refused, sizeof r->bpf_refused, "%s", used > 0 ? line + used : "");
        return 0;
    }
    /* Refused or failed before any data: nothing to read, the child exits on its own. */
    close(r->out_fd);
    close(r->ctl_fd);
    r->out_fd = r->ctl_fd = -1;
    int status = 0;
    reap(r->pid, 2000, &status);
    r->pid = -1;
    const char *msg = line;
    bool refused = !strncmp(line, "denied ", 7) || !strncmp(line, "unsupported ", 12);
    if (refused)
        msg = strchr(line, ' ') + 1;
    else if (!strncmp(line, "error ", 6))
        msg = line + 6;
    snprintf(why, why_cap, "%s", *msg ? msg : "the recorder ended without a word");
    if (refused)
        return 1;
    return flame_fail(err, FLAME_EXIT_PERF, "per-CPU recorder: %s", why);
}

/* ---- the shared path ---- */

int sc_sampler_start(sc_session *s, bool live, const pid_t *extra, int n_extra, sc_sampler *r,
                     flame_err *err)
{
    *r = (sc_sampler){.pid = -1, .out_fd = -1, .ctl_fd = -1, .walker_pid = -1};
    snprintf(r->caps_open, sizeof r->caps_open, "unknown");
    snprintf(r->caps_record, sizeof r->caps_record, "unknown");
    if (s->sampling != CT_SAMPLING_THREAD) {
        char why[STATUS_MAX];
        int rc = spawn_cpu(s, extra, n_extra, r, why, sizeof why, err);
        if (rc != 0 && s->juc) {
            /* the off-CPU program refused: lock keeps its monitors (the agent's), and the run
             * goes on as it did before off-CPU samples served lock */
            sc_warn("--mode lock: java.util.concurrent locks not seen, monitors only: their "
                    "off-CPU samples were refused (%s); they need a BPF program on the "
                    "sched_switch raw tracepoint (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, in "
                    "the sidecar; a rootful engine)",
                    rc < 0 ? err->msg : why);
            s->juc = false;
            *err = (flame_err)FLAME_ERR_INIT;
            rc = spawn_cpu(s, extra, n_extra, r, why, sizeof why, err);
        }
        if (rc < 0)
            return sc_fail(err, CT_ERR_PERF_DENIED, "%s", err->msg);
        if (rc == 0) {
            if (r->bpf_refused[0] && s->sampling != CT_SAMPLING_CPU)
                sc_warn("the in-kernel sample filter was refused (%s): samples of other "
                        "processes reach the sidecar and are dropped there (costs the sidecar "
                        "CPU on a busy host, not the target)",
                        r->bpf_refused);
            s->sampling = CT_SAMPLING_CPU; /* decided: top's next windows need not ask */
            return 0;
        }
        if (s->o.verb == CT_HOST)
            return sc_fail(err, CT_ERR_PERF_DENIED,
                           "the kernel refused system-wide sampling (%s): `docker flame host` "
                           "needs CPU-wide perf events (CAP_PERFMON or CAP_SYS_ADMIN in the "
                           "sidecar, perf_event_paranoid <= 2, a rootful engine)",
                           why);
        if (s->kernel_text) /* perf's per-thread recorder runs unprivileged: user only */
            return sc_fail(err, CT_ERR_PERF_DENIED,
                           "--kernel refused: per-CPU sampling refused (%s), and kernel stacks "
                           "are recorded per CPU only; profile without --kernel",
                           why);
        if (sc_perf_mode(&s->o) != CT_MODE_CPU)
            return sc_fail(err, CT_ERR_PERF_DENIED,
                           "--mode %s refused (%s): it needs a BPF program on the sched_switch "
                           "raw tracepoint (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, in the "
                           "sidecar; a rootful engine)",
                           ct_mode(sc_perf_mode(&s->o))->name, why);
        if (s->o.sampling == CT_SAMPLING_CPU)
            return sc_fail(err, CT_ERR_PERF_DENIED,
                           "per-CPU sampling refused (%s); --sampling thread records per thread",
                           why);
        sc_warn("per-CPU sampling refused (%s): sampling per thread instead, which costs the JVM "
                "at every context switch of its threads (measured: 6-9 %% of a busy server's "
                "throughput, ~50 %% of a JVM handing work between threads; docs/SIDECAR.md); give "
                "the sidecar CAP_PERFMON (or CAP_SYS_ADMIN) to avoid it",
                why);
        s->sampling = CT_SAMPLING_THREAD;
    }
    if (spawn_thread(s, live, r, err) < 0)
        return sc_fail(err, CT_ERR_INTERNAL, "%s", err->msg);
    return 0;
}

void sc_sampler_stop(sc_sampler *r)
{
    if (r->stop_sent || r->ctl_fd < 0)
        return;
    /* The recorder runs as nobody and we hold no CAP_KILL: its control pipe stops it (perf's
     * --control protocol, which our per-CPU child speaks too). */
    if (write(r->ctl_fd, "stop\n", 5) != 5 && r->pid > 0)
        kill(r->pid, SIGINT); /* best effort */
    r->stop_sent = mono_ms();
}

int sc_sampler_end(sc_sampler *r)
{
    if (r->out_fd >= 0)
        close(r->out_fd); /* a recorder still writing gets EPIPE and exits */
    if (r->ctl_fd >= 0)
        close(r->ctl_fd);
    r->out_fd = r->ctl_fd = -1;
    int status = 0;
    if (r->pid > 0)
        reap(r->pid, 5000, &status);
    r->pid = -1;
    if (r->walker_pid > 0) /* it ends when perf's pipe does */
        reap(r->walker_pid, 5000, NULL);
    r->walker_pid = -1;
    return status;
}

/* The per-thread recorder (perf) runs with what it kept: its CapEff, for S.caps open and record
 * (perf opens its events after exec, so both phases have the same). Returns true. */
static bool read_perf_caps(sc_session *s, pid_t pid)
{
    sc_cap_eff(pid, s->caps[CT_CAPS_RECORD], sizeof s->caps[CT_CAPS_RECORD]);
    memcpy(s->caps[CT_CAPS_OPEN], s->caps[CT_CAPS_RECORD], sizeof s->caps[CT_CAPS_OPEN]);
    return true;
}

int sc_sampler_run(sc_session *s, const sc_run *run, sc_run_result *res, flame_err *err)
{
    *res = (sc_run_result){0};
    sc_sampler r;
    if (sc_sampler_start(s, run->live, run->exclude, run->n_exclude, &r, err) < 0)
        return -1;
    int64_t start = mono_ms();
    res->start = start;
    res->mode = r.mode;
    res->boottime = r.boottime;
    snprintf(res->filter, sizeof res->filter, "%s", r.filter);
    snprintf(s->caps[CT_CAPS_OPEN], sizeof s->caps[CT_CAPS_OPEN], "%s", r.caps_open);
    snprintf(s->caps[CT_CAPS_RECORD], sizeof s->caps[CT_CAPS_RECORD], "%s", r.caps_record);
    bool got_caps = r.mode == CT_SAMPLING_CPU; /* our child reported them itself */
    static unsigned char buf[1 << 16];
    int64_t last_tick = start;
    for (;;) {
        int64_t now = mono_ms();
        /* perf's privilege once it runs (S.caps): read at its first output, which only the
         * exec'd perf writes; a fixed delay read the forked child at load ~20 before it had
         * dropped to CAP_SYS_PTRACE (the sidecar's setup caps). 2 s: perf that never writes. */
        if (!got_caps && now - start > 2000)
            got_caps = read_perf_caps(s, r.pid);
        if (!r.stop_sent && (*s->stop || (run->duration_ms > 0 && now - start >= run->duration_ms)))
            sc_sampler_stop(&r);
        /* if the recorder does not finish in time, closing its pipe makes its next write fail */
        if (r.stop_sent && now - r.stop_sent > (*s->abort ? 1000 : run->grace_ms))
            break;
        if (run->on_tick && !r.stop_sent && now - last_tick >= 200) {
            last_tick = now;
            run->on_tick(run->ctx, now - start, &res->ps);
        }
        int64_t wait = 200;
        if (!r.stop_sent && run->duration_ms > 0 && run->duration_ms - (now - start) < wait)
            wait = run->duration_ms - (now - start);
        struct pollfd p[2] = {{.fd = r.out_fd, .events = POLLIN},
                              {.fd = run->extra_fd, .events = POLLIN}};
        int pr = poll(p, run->extra_fd >= 0 ? 2 : 1, wait < 1 ? 1 : (int)wait);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        if (run->extra_fd >= 0 && p[1].revents && run->on_extra)
            run->on_extra(run->ctx);
        if (!p[0].revents)
            continue;
        ssize_t n = read(r.out_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (!got_caps)
            got_caps = read_perf_caps(s, r.pid);
        sc_perfstream_feed(&res->ps, buf, (size_t)n);
        if (res->ps.samples && !s->t[CT_PH_FIRST_SAMPLE])
            s->t[CT_PH_FIRST_SAMPLE] = (uint64_t)(mono_ms() - s->t0);
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(run->data_fd, buf + w, (size_t)(n - w)));
            if (k <= 0) {
                res->write_errno = k < 0 ? errno : EIO;
                sc_sampler_stop(&r); /* cannot store: end the recording now */
                r.stop_sent -= 1000000;
                break;
            }
            w += k;
        }
    }
    pid_t pid = r.pid;
    res->status = sc_sampler_end(&r);
    res->ms = mono_ms() - start;
    if (!res->ps.started) {
        int st = res->status;
        if (r.mode == CT_SAMPLING_THREAD && WIFEXITED(st) && WEXITSTATUS(st) == 126)
            return sc_fail(err, CT_ERR_PERF_DENIED, "could not drop to the recorder's privileges");
        return sc_fail(err, CT_ERR_PERF_DENIED,
                       "the %s recorder (pid %d) produced no data (exit status %d); see stderr",
                       r.mode == CT_SAMPLING_CPU ? "per-CPU" : "perf record", (int)pid,
                       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    return 0;
}
