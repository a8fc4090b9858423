/* flame-sidecar: `record` — find the JVMs, inject + attach, perf record, complete the maps,
 * undo everything in the target, drop privilege, perf script + fold, stream docs/PROTOCOL.md.
 * Single-threaded on purpose: setns(CLONE_NEWNS) in our children requires it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/fold.h"
#include "sidecar/sidecar.h"
#include "sidecar/top.h"

#define PERF "/usr/bin/perf"
#define WORK_DATA "/tmp/perf.data"
#define SYMFS "/tmp/symfs"

static volatile sig_atomic_t stop_requested, abort_requested;

static void on_signal(int sig)
{
    if (sig == SIGINT)
        stop_requested = 1;
    else
        abort_requested = stop_requested = 1;
}

typedef struct opts {
    int duration, frequency, attach_timeout;
    long pid;
    bool inline_frames, signatures;
    enum { INJ_AUTO, INJ_MOUNT, INJ_COPY } inject;
    bool top; /* `top`: windows of interval_ms streamed live (top.c) */
    bool restore; /* `restore`: undo what a killed sidecar left in the target (no recording) */
    int interval_ms;
} opts;

static long t0;
static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ---- protocol output ---- */
static void out_line(char tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_line(char tag, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++) /* payloads never carry a line break */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (buf[0])
        printf("%c %s\n", tag, buf);
    else
        printf("%c\n", tag);
    fflush(stdout);
}

/* JSON string body (no quotes), escaped; input is already printable ASCII mostly. */
static const char *json_esc(const char *s, char *buf, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o] = 0;
    return buf;
}

static const char *inject_name(enum sc_inject i)
{
    switch (i) {
    case SC_INJECT_MOUNT:
        return "mount";
    case SC_INJECT_COPY:
        return "copy";
    case SC_INJECT_NONE:
        break;
    }
    return "none";
}
static const char *attach_name(enum sc_attach a)
{
    switch (a) {
    case SC_ATTACH_AGENT:
        return "agent";
    case SC_ATTACH_PERFMAP:
        return "perfmap";
    case SC_ATTACH_NONE:
        break;
    }
    return "none";
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: flame-sidecar record [--duration SEC] [--frequency HZ] [--pid PID] [--no-inline]\n"
        "       flame-sidecar top [--interval MS] [--frequency HZ] [--pid PID] [--no-inline]\n"
        "       flame-sidecar restore [--pid PID]   (undo what a killed sidecar left)\n"
        "                            [--signatures] [--attach-timeout SEC] [--inject "
        "auto|mount|copy]\n"
        "Runs inside a container sharing the target's PID namespace; writes docs/PROTOCOL.md on "
        "stdout.\n");
}

static int parse_opts(int argc, char **argv, opts *o, flame_err *err)
{
    *o = (opts){.duration = 30,
                .frequency = 99,
                .attach_timeout = 10,
                .pid = 0,
                .inline_frames = true,
                .inject = INJ_AUTO};
    o->top = argc >= 2 && !strcmp(argv[1], "top");
    o->restore = argc >= 2 && !strcmp(argv[1], "restore");
    o->interval_ms = 1000;
    if (argc < 2 || (strcmp(argv[1], "record") != 0 && !o->top && !o->restore))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "expected the command 'record', 'top' or 'restore' (see --help)");
    static const struct option lo[] = {
        {"duration", required_argument, 0, 'd'}, {"frequency", required_argument, 0, 'F'},
        {"pid", required_argument, 0, 'p'},      {"no-inline", no_argument, 0, 'n'},
        {"signatures", no_argument, 0, 's'},     {"attach-timeout", required_argument, 0, 't'},
        {"inject", required_argument, 0, 'i'},   {"interval", required_argument, 0, 'I'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "d:F:p:", lo, NULL)) != -1) {
        char *e = NULL;
        long v = 0;
        if (optarg && c != 'i') {
            errno = 0;
            v = strtol(optarg, &e, 10);
            long max = c == 'p' ? 4194304 : 86400; /* PID_MAX_LIMIT; a day */
            if (errno || *e || !*optarg || v < 0 || v > max)
                return flame_fail(err, FLAME_EXIT_USAGE, "--%s: '%s' is not a number in 0..%ld",
                                  c == 'd'   ? "duration"
                                  : c == 'F' ? "frequency"
                                  : c == 'p' ? "pid"
                                             : "attach-timeout",
                                  optarg, max);
        }
        switch (c) {
        case 'd':
            o->duration = (int)v;
            break;
        case 'F':
            if (v < 1 || v > 10000)
                return flame_fail(err, FLAME_EXIT_USAGE, "--frequency must be 1..10000 Hz");
            o->frequency = (int)v;
            break;
        case 'p':
            o->pid = v;
            break;
        case 'n':
            o->inline_frames = false;
            break;
        case 's':
            o->signatures = true;
            break;
        case 't':
            if (v < 1)
                return flame_fail(err, FLAME_EXIT_USAGE, "--attach-timeout must be >= 1");
            o->attach_timeout = (int)v;
            break;
        case 'i':
            if (!strcmp(optarg, "auto"))
                o->inject = INJ_AUTO;
            else if (!strcmp(optarg, "mount"))
                o->inject = INJ_MOUNT;
            else if (!strcmp(optarg, "copy"))
                o->inject = INJ_COPY;
            else
                return flame_fail(err, FLAME_EXIT_USAGE, "--inject must be auto, mount or copy");
            break;
        case 'I': /* top: window length in ms */
            if (v < 100 || v > 60000)
                return flame_fail(err, FLAME_EXIT_USAGE, "--interval must be 100..60000 ms");
            o->interval_ms = (int)v;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return flame_fail(err, FLAME_EXIT_USAGE, "unknown option (see --help)");
        }
    }
    if (optind < argc)
        return flame_fail(err, FLAME_EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
    return 0;
}

/* ---- session: what we changed in the target, undone on every path ---- */
typedef struct session {
    opts o;
    sc_jvm jvms[SC_MAX_JVMS];
    int ns_fd[SC_MAX_JVMS];
    int n;
    long t_scan, t_inject, t_attach, t_record, t_finish, t_sanitize, t_script, t_first_sample;
    char cap_setup[32], cap_record[32], cap_process[32];
    unsigned long long samples, lost;
    int raw_fd[SC_MAX_JVMS];
} session;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    out_line('W', "%s", buf);
}

static void prepare_jvm(session *s, int k)
{
    sc_jvm *j = &s->jvms[k];
    int ns = s->ns_fd[k];
    flame_err err = FLAME_ERR_INIT;
    char msg[1024];
    if (!j->preserve_fp)
        warn("pid %d: the JVM runs without -XX:+PreserveFramePointer: Java stacks will be broken "
             "(truncated or misattributed); restart it with that flag for usable flame graphs",
             (int)j->st.pid);
    if (j->attach_disabled) {
        snprintf(
            j->reason, sizeof(j->reason),
            "the JVM was started with -XX:+DisableAttachMechanism: no agent, native frames only");
        warn("pid %d: %s", (int)j->st.pid, j->reason);
        return;
    }
    long t = now_ms();
    bool have_agent = access(SC_AGENT_DIR "/" SC_AGENT_NAME, R_OK) == 0;
    if (!have_agent) {
        snprintf(j->reason, sizeof(j->reason), "the sidecar image has no agent (%s/%s)",
                 SC_AGENT_DIR, SC_AGENT_NAME);
    } else {
        int r = -1;
        if (s->o.inject != INJ_COPY) {
            r = sc_inject(j, ns, SC_INJECT_MOUNT, &err);
            if (r < 0 && s->o.inject == INJ_AUTO)
                warn("pid %d: mount injection failed (%s); copying the agent instead",
                     (int)j->st.pid, err.msg);
        }
        if (r < 0 && s->o.inject != INJ_MOUNT) {
            err = (flame_err)FLAME_ERR_INIT;
            r = sc_inject(j, ns, SC_INJECT_COPY, &err);
        }
        if (r < 0)
            snprintf(j->reason, sizeof(j->reason), "agent not injected: %.400s", err.msg);
    }
    s->t_inject += now_ms() - t;
    if (stop_requested)
        return;
    t = now_ms();
    if (j->inject != SC_INJECT_NONE) {
        char aopts[128];
        snprintf(aopts, sizeof(aopts), "start,inline=%d,sig=%d,dir=/tmp",
                 s->o.inline_frames ? 1 : 0, s->o.signatures ? 1 : 0);
        err = (flame_err)FLAME_ERR_INIT;
        int r = sc_attach_command(j, ns, s->o.attach_timeout * 1000, "load", j->agent_path, "true",
                                  aopts, msg, sizeof(msg), &err);
        if (r == 0) {
            j->attach = SC_ATTACH_AGENT;
            j->agent_started = true;
        } else {
            snprintf(j->reason, sizeof(j->reason), "agent load failed: %.400s",
                     r < 0    ? err.msg
                     : msg[0] ? msg
                              : "(no message)");
        }
    }
    j->attach_ms = now_ms() - t;
    bool planted = j->attach == SC_ATTACH_NONE && j->java_major >= 16 &&
                   !strstr(j->reason, "no attach socket") && sc_map_name_free(j, ns) < 0;
    if (planted) /* HotSpot's fopen() would follow it (or block on a FIFO): no fallback */
        snprintf(j->reason + strlen(j->reason), sizeof(j->reason) - strlen(j->reason),
                 "; /tmp/perf-%d.map in the target is a symlink, FIFO or foreign file planted "
                 "there: refused, no Compiler.perfmap",
                 (int)j->st.nspid);
    if (j->attach == SC_ATTACH_NONE && j->java_major >= 16 && !planted &&
        !strstr(j->reason, "no attach socket")) {
        /* Fallback: HotSpot's own perf map dump at the end of the recording (a snapshot: code
         * JITed and freed during the recording is missing, and no inlined frames). */
        j->attach = SC_ATTACH_PERFMAP;
        warn("pid %d: %s; using Compiler.perfmap instead: the map is a snapshot taken after "
             "recording, without inlined frames",
             (int)j->st.pid, j->reason);
    } else if (j->attach == SC_ATTACH_NONE) {
        warn("pid %d: %s: Java frames will have no names", (int)j->st.pid, j->reason);
    }
    s->t_attach += j->attach_ms;
}

/* mkdir -p of the directories of path (in our own /tmp). */
static int mkdirs_for(const char *path)
{
    char buf[600];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* After recording: make the map complete, bring it over, undo everything in the target. */
static void finish_jvm(session *s, int k, bool fetch)
{
    sc_jvm *j = &s->jvms[k];
    int ns = s->ns_fd[k];
    flame_err err = FLAME_ERR_INIT;
    char msg[1024];
    if (j->agent_started) {
        /* `stop`: the agent stops listening and closes its map, which is then complete. */
        int r = sc_attach_command(j, ns, s->o.attach_timeout * 1000, "load", j->agent_path, "true",
                                  "stop", msg, sizeof(msg), &err);
        if (r != 0)
            warn("pid %d: stopping the agent failed: %s", (int)j->st.pid, r < 0 ? err.msg : msg);
        j->agent_started = false;
    }
    if (j->attach == SC_ATTACH_PERFMAP && fetch && sc_map_name_free(j, ns) < 0) {
        /* HotSpot opens the map with fopen(): it would write through a planted symlink and
         * its attach listener would block forever on a planted FIFO. */
        warn("pid %d: /tmp/perf-%d.map in the target is not a regular file of the JVM user (a "
             "symlink, FIFO or foreign file planted there): refused, no Compiler.perfmap; Java "
             "frames will have no names",
             (int)j->st.pid, (int)j->st.nspid);
        j->attach = SC_ATTACH_NONE;
    }
    if (j->attach == SC_ATTACH_PERFMAP && fetch) {
        err = (flame_err)FLAME_ERR_INIT;
        int r = sc_attach_command(j, ns, s->o.attach_timeout * 1000, "jcmd", "Compiler.perfmap",
                                  NULL, NULL, msg, sizeof(msg), &err);
        if (r != 0) {
            warn("pid %d: Compiler.perfmap failed: %s", (int)j->st.pid, r < 0 ? err.msg : msg);
            j->attach = SC_ATTACH_NONE;
        }
    }
    if (fetch && j->attach != SC_ATTACH_NONE) {
        char path[64];
        snprintf(path, sizeof(path), "/tmp/raw-%d.map", (int)j->st.pid);
        unlink(path);
        s->raw_fd[k] = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        err = (flame_err)FLAME_ERR_INIT;
        if (s->raw_fd[k] < 0)
            warn("create %s: %s", path, strerror(errno));
        else if (sc_fetch_map(j, ns, s->raw_fd[k], &err) < 0)
            warn("%s", err.msg);
    }
    /* libjvm.so for perf's symbols: perf script runs without the privilege to enter the
     * target's mount namespace, so it reads a copy below --symfs (same path, same build-id).
     * Best effort: without it libjvm frames stay "[libjvm.so]". */
    if (fetch && j->libjvm[0] == '/') {
        char path[600];
        snprintf(path, sizeof(path), "%s%s", SYMFS, j->libjvm);
        int fd =
            mkdirs_for(path) == 0 ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
        err = (flame_err)FLAME_ERR_INIT;
        if (fd >= 0 && sc_fetch_file(j, ns, j->libjvm, fd, &err) < 0) {
            warn("%s (libjvm frames stay unnamed)", err.msg);
            unlink(path);
        }
        if (fd >= 0)
            close(fd);
    }
    /* The map in the target is removed either way (fetch removes it; on abort remove here). */
    sc_remove_map(j, ns);
    err = (flame_err)FLAME_ERR_INIT;
    if (sc_inject_undo(j, ns, &err) < 0)
        warn("%s", err.msg);
}

static int spawn_perf_record(session *s, int *out_fd, int *ctl_fd, pid_t *pid, flame_err *err)
{
    char pids[SC_MAX_JVMS * 12] = "", freq[16];
    for (int k = 0; k < s->n; k++)
        snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d", k ? "," : "",
                 (int)s->jvms[k].st.pid);
    snprintf(freq, sizeof(freq), "%d", s->o.frequency);
    int p[2], c[2];
    if (pipe2(p, O_CLOEXEC) < 0 || pipe2(c, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    *pid = fork();
    if (*pid < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fork");
    if (*pid == 0) {
        dup2(p[1], 1);
        dup2(c[0], 3); /* perf's --control fd: we stop it by writing "stop" (see below) */
        /* The recorder needs only CAP_SYS_PTRACE (perf_event_open on another user's process
         * passes ptrace_may_access; perf_event_paranoid=2 then limits it to user-space samples,
         * all we want). Become nobody keeping just that one, via the ambient set so it
         * survives exec. If that fails we stop: never record with more than we planned. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setgroups(0, NULL) < 0 ||
            setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            _exit(126);
        cap_t keep = cap_from_text("cap_sys_ptrace=eip");
        if (!keep || cap_set_proc(keep) < 0 || cap_set_ambient(CAP_SYS_PTRACE, CAP_SET) < 0)
            _exit(126);
        /* Changing uid reset the parent-death signal: set it again so perf dies with us. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("HOME", "/tmp", 1);
        /* --no-buffering: perf is woken for every sample, so samples stream out at once
         * (first sample and progress lines without multi-second buffer bursts); at ~100 Hz the
         * cost is negligible. */
        execl(PERF, "perf", "record", "-q", "-N", "--no-buffering", "--control", "fd:3", "-e",
              "cpu-clock", "-g", "-F", freq, "-p", pids, "-o", "-", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    close(c[0]);
    *out_fd = p[0];
    *ctl_fd = c[1];
    return 0;
}

static int record(session *s, flame_err *err)
{
    _cleanup_close_ int data = open(WORK_DATA, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "create %s", WORK_DATA);
    int rfd = -1, cfd = -1;
    pid_t pid = -1;
    if (spawn_perf_record(s, &rfd, &cfd, &pid, err) < 0)
        return -1;
    _cleanup_close_ int in = rfd;
    _cleanup_close_ int ctl = cfd;
    sc_perfstream ps = {0};
    long start = now_ms(), last_p = start, stop_sent = 0;
    long dur_ms = s->o.duration * 1000L;
    bool got_caps = false;
    static unsigned char buf[1 << 16];
    for (;;) {
        long now = now_ms();
        if (!got_caps && now - start > 100) {
            char path[64], st[SC_STATUS_MAX];
            snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
            if (sc_read_bounded(AT_FDCWD, path, st, sizeof(st)) > 0 && strstr(st, "CapEff:")) {
                char *c = strstr(st, "CapEff:") + 7;
                while (*c == '\t' || *c == ' ')
                    c++;
                snprintf(s->cap_record, sizeof(s->cap_record), "%.*s", (int)strcspn(c, "\n"), c);
            }
            got_caps = true;
        }
        /* perf runs as nobody and we hold no CAP_KILL: we cannot signal it. Its control fd
         * ("stop") ends the recording cleanly; if it does not finish within 10 s (2 s when
         * aborting), closing its output pipe makes its next write fail and it exits. */
        if (!stop_sent && (stop_requested || (dur_ms > 0 && now - start >= dur_ms))) {
            if (write(ctl, "stop\n", 5) != 5)
                kill(pid, SIGINT); /* best effort */
            stop_sent = now;
        }
        if (stop_sent && now - stop_sent > (abort_requested ? 2000 : 10000))
            break;
        if (now - last_p >= 1000) {
            last_p = now;
            out_line('P', "{\"elapsed_ms\":%ld,\"duration_ms\":%ld,\"samples\":%llu,\"jvms\":%d}",
                     now - start, dur_ms, ps.samples, s->n);
        }
        struct pollfd pfd = {.fd = in, .events = POLLIN};
        int r = poll(&pfd, 1, 200);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        sc_perfstream_feed(&ps, buf, (size_t)n);
        if (ps.samples && !s->t_first_sample)
            s->t_first_sample = now_ms() - t0;
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(data, buf + w, (size_t)(n - w)));
            if (k <= 0) {
                stop_sent = now - 1000000; /* cannot store: end the recording now */
                break;
            }
            w += k;
        }
    }
    close(steal_fd(&in)); /* a perf still writing gets EPIPE and exits */
    int status = 0;
    for (long w0 = now_ms(); waitpid(pid, &status, WNOHANG) == 0;) {
        if (now_ms() - w0 > 5000) {
            warn("perf record did not exit; leaving it to die with the sidecar");
            break;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    s->samples = ps.samples;
    s->lost = ps.lost;
    s->t_record = now_ms() - start;
    out_line('P', "{\"elapsed_ms\":%ld,\"duration_ms\":%ld,\"samples\":%llu,\"jvms\":%d}",
             now_ms() - start, dur_ms, ps.samples, s->n);
    if (!ps.started) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
            return flame_fail(err, FLAME_EXIT_PERF,
                              "perf_denied could not drop to the recorder's privileges");
        return flame_fail(err, FLAME_EXIT_PERF,
                          "perf_denied perf record produced no data (exit status %d); see stderr",
                          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return 0;
}

/* ---- processing (unprivileged, seccomp-filtered) ---- */
static const char *root_for_pid(void *ctx, long pid)
{
    session *s = ctx;
    for (int k = 0; k < s->n; k++)
        if (s->jvms[k].st.pid == pid)
            return s->jvms[k].root_frame;
    return NULL;
}

static int emit_fold(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    (void)ctx;
    char *b = malloc(len + 1);
    if (!b)
        return -1;
    for (size_t i = 0; i < len; i++)
        b[i] = (stack[i] == '\n' || stack[i] == '\r') ? '?' : stack[i];
    b[len] = 0;
    printf("F %s %llu\n", b, count);
    free(b);
    return 0;
}

static int run_script(session *s, folder *f, flame_err *err)
{
    _cleanup_close_ int data = open(WORK_DATA, O_RDONLY | O_CLOEXEC);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "open %s", WORK_DATA);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    pid_t pid = fork();
    if (pid < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fork");
    if (pid == 0) {
        dup2(data, 0);
        dup2(p[1], 1);
        setenv("HOME", "/tmp", 1);
        /* comm,pid,tid,time,event + ip,sym,dso per frame: the classic layout fold parses;
         * `-i -` reads the pipe-format data from stdin (the file is ours, opened above). */
        execl(PERF, "perf", "script", "-i", "-", "--symfs", SYMFS, "-F",
              "comm,pid,tid,time,event,ip,sym,dso", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    FILE *in = fdopen(p[0], "r");
    if (!in) {
        close(p[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fdopen");
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, in)) >= 0) {
        if (abort_requested) {
            kill(pid, SIGKILL);
            break;
        }
        if (n && line[n - 1] == '\n')
            n--;
        if (n > (1 << 20))
            continue; /* absurd line: skip rather than grow without end */
        if (folder_feed(f, line, (size_t)n, err) < 0) {
            rc = -1;
            kill(pid, SIGKILL);
            break;
        }
    }
    free(line);
    fclose(in);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    (void)s;
    if (rc == 0 && folder_finish(f, err) < 0)
        rc = -1;
    return rc;
}

static int process(session *s, int *map_fd, flame_err *err)
{
    long t = now_ms();
    unsigned long long map_lines = 0, map_bytes = 0;
    for (int k = 0; k < s->n; k++) {
        if (s->raw_fd[k] < 0 || map_fd[k] < 0)
            continue;
        off_t sz = lseek(s->raw_fd[k], 0, SEEK_END);
        if (sz <= 0)
            continue;
        if ((unsigned long long)sz > SC_MAP_FILE_MAX)
            sz = (off_t)SC_MAP_FILE_MAX;
        void *m = mmap(NULL, (size_t)sz, PROT_READ, MAP_PRIVATE, s->raw_fd[k], 0);
        if (m == MAP_FAILED) {
            warn("map of pid %d: %s", (int)s->jvms[k].st.pid, strerror(errno));
            continue;
        }
        FILE *out = fdopen(dup(map_fd[k]), "w");
        sc_map_stats st;
        flame_err e2 = FLAME_ERR_INIT;
        if (!out || sc_map_sanitize(m, (size_t)sz, out, &st, &e2) < 0)
            warn("sanitize map of pid %d: %s", (int)s->jvms[k].st.pid, e2.msg);
        if (out)
            fclose(out);
        munmap(m, (size_t)sz);
        s->jvms[k].map_lines = st.lines_out;
        s->jvms[k].map_bytes = st.bytes_out;
        map_lines += st.lines_out;
        map_bytes += st.bytes_out;
        if (st.dropped)
            warn("map of pid %d: %llu malformed or overlapping lines dropped",
                 (int)s->jvms[k].st.pid, st.dropped);
    }
    s->t_sanitize = now_ms() - t;
    t = now_ms();
    fold_opts fo = {.inline_frames = s->o.inline_frames,
                    .signatures = s->o.signatures,
                    .jit = false,
                    .root_for_pid = s->n > 1 ? root_for_pid : NULL,
                    .root_ctx = s};
    folder *f = folder_new(&fo);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int rc = run_script(s, f, err);
    s->t_script = now_ms() - t;
    if (rc == 0 && !abort_requested) {
        folder_each(f, emit_fold, NULL);
        fold_stats fs;
        folder_get_stats(f, &fs);
        char timings[512];
        snprintf(timings, sizeof(timings),
                 "{\"scan\":%ld,\"inject\":%ld,\"attach\":%ld,\"first_sample\":%ld,\"record\":%ld,"
                 "\"finish\":%ld,\"sanitize\":%ld,\"script\":%ld,\"total\":%ld}",
                 s->t_scan, s->t_inject, s->t_attach, s->t_first_sample, s->t_record, s->t_finish,
                 s->t_sanitize, s->t_script, now_ms() - t0);
        out_line(
            'S',
            "{\"samples\":%llu,\"folded_samples\":%llu,\"lost\":%llu,\"jit_leaf_samples\":%llu,"
            "\"jit_leaf_named\":%llu,\"named_share\":%.4f,\"map_lines\":%llu,\"map_bytes\":%llu,"
            "\"timings_ms\":%s,\"jvms\":%d,\"caps\":{\"setup\":\"%s\",\"record\":\"%s\","
            "\"process\":\"%s\"}}",
            s->samples, fs.samples, s->lost, fs.jit_leaf, fs.jit_leaf_named,
            fs.jit_leaf ? (double)fs.jit_leaf_named / (double)fs.jit_leaf : 1.0, map_lines,
            map_bytes, timings, s->n, s->cap_setup, s->cap_record, s->cap_process);
    }
    folder_free(f);
    return rc;
}

/* `top` (top.c) reuses this session: the JVMs prepared above, record mode's perf launcher. */
static int top_spawn(void *ctx, int *out_fd, int *ctl_fd, pid_t *pid, flame_err *err)
{
    return spawn_perf_record(ctx, out_fd, ctl_fd, pid, err);
}

static int top_run(session *s, flame_err *err)
{
    sc_top_env env = {.jvms = s->jvms,
                      .ns_fd = s->ns_fd,
                      .n = s->n,
                      .interval_ms = s->o.interval_ms,
                      .inline_frames = s->o.inline_frames,
                      .signatures = s->o.signatures,
                      .t0 = t0,
                      .spawn = top_spawn,
                      .ctx = s,
                      .root_for_pid = s->n > 1 ? root_for_pid : NULL,
                      .stop = &stop_requested,
                      .abort = &abort_requested};
    return sc_top_run(&env, err);
}

/* `restore` (docs/HARDENING.md "Faults"): a sidecar killed by SIGKILL (docker kill, OOM, an
 * engine dying without live-restore) could not undo its work: the agent mount
 * /tmp/.docker-flame-<hex> stays in the target's mount namespace and the agent keeps writing
 * /tmp/perf-<nspid>.map. Only mounts the KERNEL says are ours are touched: the JVM's mountinfo
 * (the target cannot forge it) must show root SC_AGENT_DIR at /tmp/.docker-flame-<16 hex>.
 * Then, as in finish_jvm: `load <that path> true stop` (the same path = the loaded agent),
 * remove the map (only a regular file of the JVM's uid), unmount + rmdir. */
static bool stale_mount_name(const char *mp, char *name, size_t cap)
{
    static const char pre[] = "/tmp/.docker-flame-";
    if (strncmp(mp, pre, sizeof(pre) - 1) != 0 || strlen(mp) != sizeof(pre) - 1 + 16)
        return false;
    for (const char *h = mp + sizeof(pre) - 1; *h; h++)
        if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
            return false;
    size_t l = strlen(mp + 5); /* ".docker-flame-<16 hex>" */
    if (l >= cap)
        return false;
    memcpy(name, mp + 5, l + 1);
    return true;
}

static int restore_jvm(session *s, int k)
{
    sc_jvm *j = &s->jvms[k];
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)j->st.pid);
    _cleanup_free_ char *buf = malloc(1 << 20);
    if (!buf)
        return -1;
    ssize_t n = sc_read_bounded(AT_FDCWD, path, buf, 1 << 20);
    if (n < 0) {
        warn("pid %d: cannot read its mountinfo: %s", (int)j->st.pid, strerror((int)-n));
        return -1;
    }
    int found = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* id parent major:minor root mountpoint ... */
        char root[256], mp[256], name[64];
        if (sscanf(line, "%*s %*s %*s %255s %255s", root, mp) != 2 ||
            strcmp(root, SC_AGENT_DIR) != 0 || !stale_mount_name(mp, name, sizeof(name)))
            continue;
        found++;
        flame_err err = FLAME_ERR_INIT;
        char msg[1024];
        snprintf(j->inject_dir, sizeof(j->inject_dir), "%s", name);
        snprintf(j->agent_path, sizeof(j->agent_path), "/tmp/%s/%s", name, SC_AGENT_NAME);
        int r = sc_attach_command(j, s->ns_fd[k], s->o.attach_timeout * 1000, "load",
                                  j->agent_path, "true", "stop", msg, sizeof(msg), &err);
        if (r != 0)
            warn("pid %d: stopping the stale agent failed: %s", (int)j->st.pid,
                 r < 0 ? err.msg : msg);
        sc_remove_map(j, s->ns_fd[k]);
        j->inject = SC_INJECT_MOUNT;
        err = (flame_err)FLAME_ERR_INIT;
        if (sc_inject_undo(j, s->ns_fd[k], &err) < 0)
            warn("%s", err.msg);
        else
            warn("pid %d: removed %s, left by a sidecar that was killed", (int)j->st.pid,
                 j->agent_path);
    }
    return found;
}

/* TEST ONLY (tests/e2e/privilege-phases.t): FLAME_SIDECAR_TEST_STOP=<phase>[,<phase>] makes
 * the sidecar stop itself (SIGSTOP) on entering that phase ("setup": after the scan, before
 * anything is done in the target; "process": right after the privilege drop + seccomp), so the
 * test can read /proc/<pid>/status from the host and SIGCONT it. Unset in normal use (the
 * plugin passes it only from $DOCKER_FLAME_SIDECAR_TEST_STOP). */
static void test_stop_at(const char *phase)
{
    const char *v = getenv("FLAME_SIDECAR_TEST_STOP");
    if (!v)
        return;
    size_t n = strlen(phase);
    for (const char *p = v; (p = strstr(p, phase)) != NULL; p += n)
        if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            raise(SIGSTOP);
}

int main(int argc, char **argv)
{
    t0 = now_ms();
    flame_err err = FLAME_ERR_INIT;
    static session s;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (parse_opts(argc, argv, &s.o, &err) < 0) {
        fprintf(stderr, "flame-sidecar: %s\n", err.msg);
        usage(stderr);
        out_line('V', "1");
        out_line('E', "usage %s", err.msg);
        out_line('D', "%s", "");
        return err.code;
    }
    out_line('V', "1");
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    sc_cap_eff(s.cap_setup, sizeof(s.cap_setup));
    snprintf(s.cap_record, sizeof(s.cap_record), "unknown");
    for (int k = 0; k < SC_MAX_JVMS; k++)
        s.ns_fd[k] = s.raw_fd[k] = -1;

    /* 1. find the JVMs */
    static sc_jvm all[SC_MAX_JVMS];
    char seen[2048];
    int n = sc_find_jvms(all, SC_MAX_JVMS, seen, sizeof(seen), &err);
    s.t_scan = now_ms() - t0;
    if (n < 0) {
        out_line('E', "internal %s", err.msg);
        out_line('D', "%s", "");
        return FLAME_EXIT_ERROR;
    }
    for (int k = 0; k < n; k++)
        if (!s.o.pid || all[k].st.pid == s.o.pid || all[k].st.nspid == s.o.pid)
            s.jvms[s.n++] = all[k];
    if (n == 0 || s.n == 0) {
        if (n == 0)
            out_line('E',
                     "no_jvm no HotSpot JVM (a process mapping libjvm.so) in the container; "
                     "processes seen: %s",
                     seen[0] ? seen : "(none)");
        else
            out_line('E', "no_pid pid %ld is not a JVM in the container; processes seen: %s",
                     s.o.pid, seen);
        out_line('D', "%s", "");
        return FLAME_EXIT_NO_JVM;
    }
    test_stop_at("setup");
    if (s.o.restore) {
        for (int k = 0; k < s.n; k++) {
            char path[64];
            snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)s.jvms[k].st.pid);
            s.ns_fd[k] = open(path, O_RDONLY | O_CLOEXEC);
            if (s.ns_fd[k] >= 0) {
                restore_jvm(&s, k);
                close(s.ns_fd[k]);
            }
        }
        out_line('D', "%s", "");
        return 0;
    }
    /* 2. per JVM: namespace fd, inject, attach */
    for (int k = 0; k < s.n; k++) {
        sc_jvm *j = &s.jvms[k];
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)j->st.pid);
        s.ns_fd[k] = open(path, O_RDONLY | O_CLOEXEC);
        snprintf(j->root_frame, sizeof(j->root_frame), "java-%d", (int)j->st.pid);
        if (s.ns_fd[k] < 0) {
            snprintf(j->reason, sizeof(j->reason), "cannot open its mount namespace: %s",
                     strerror(errno));
            warn("pid %d: %s", (int)j->st.pid, j->reason);
        } else if (!stop_requested) {
            prepare_jvm(&s, k);
        }
        /* the root frame names the JVM: pid + main class (or jar) from its command line */
        char cls[64];
        sc_main_class(j->cmdline, cls, sizeof(cls));
        if (cls[0])
            snprintf(j->root_frame, sizeof(j->root_frame), "java-%d %s", (int)j->st.pid, cls);
        char e1[2200], e2[1100], e3[64];
        out_line(
            'J',
            "{\"pid\":%d,\"nspid\":%d,\"uid\":%u,\"gid\":%u,\"cmdline\":\"%s\",\"java_version\":\"%"
            "s\","
            "\"preserve_frame_pointer\":%s,\"attach\":\"%s\",\"inject\":\"%s\",\"reason\":%s%s%s,"
            "\"attach_ms\":%ld}",
            (int)j->st.pid, (int)j->st.nspid, (unsigned)j->st.uid, (unsigned)j->st.gid,
            json_esc(j->cmdline, e1, sizeof(e1)), json_esc(j->java_version, e3, sizeof(e3)),
            j->preserve_fp ? "true" : "false", attach_name(j->attach), inject_name(j->inject),
            j->reason[0] ? "\"" : "", j->reason[0] ? json_esc(j->reason, e2, sizeof(e2)) : "null",
            j->reason[0] ? "\"" : "", j->attach_ms);
    }
    /* 3. record */
    int rc = 0;
    if (!abort_requested) {
        if (s.o.top ? top_run(&s, &err) < 0 : record(&s, &err) < 0) {
            rc = err.code;
        }
    }
    /* 4. finish in the target: complete maps, fetch, undo — on every path */
    long t = now_ms();
    bool fetch = rc == 0 && !abort_requested && !s.o.top;
    for (int k = 0; k < s.n; k++)
        if (s.ns_fd[k] >= 0)
            finish_jvm(&s, k, fetch);
    s.t_finish = now_ms() - t;
    for (int k = 0; k < s.n; k++)
        if (s.ns_fd[k] >= 0)
            close(s.ns_fd[k]);
    if (abort_requested) {
        out_line('E', "internal aborted by SIGTERM; the target was restored");
        out_line('D', "%s", "");
        return FLAME_EXIT_INTERRUPTED;
    }
    if (rc) {
        out_line('E', "%s", err.msg);
        out_line('D', "%s", "");
        return rc;
    }
    if (s.o.top) { /* every window was processed and sent while recording */
        out_line('D', "%s", "");
        return 0;
    }
    /* 5. where perf looks for JIT symbols: /tmp/perf-<pid>.map. perf first tries the target's
     * mount namespace (where we just deleted the map) and then its own /tmp: ours. Created here,
     * as root, before dropping privilege (perf accepts maps owned by root or by itself). */
    int map_fd[SC_MAX_JVMS];
    for (int k = 0; k < s.n; k++) {
        map_fd[k] = -1;
        if (s.raw_fd[k] < 0)
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)s.jvms[k].st.pid);
        unlink(path);
        map_fd[k] = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (map_fd[k] >= 0 && s.jvms[k].st.nspid != s.jvms[k].st.pid) {
            char alt[64]; /* perfs that name the file by the in-namespace pid */
            snprintf(alt, sizeof(alt), "/tmp/perf-%d.map", (int)s.jvms[k].st.nspid);
            unlink(alt);
            if (link(path, alt) < 0)
                warn("link %s: %s", alt, strerror(errno));
        }
    }
    /* 6. privilege drop + seccomp, before parsing anything from the target */
    if (sc_harden(&err) < 0) {
        out_line('E', "internal %s", err.msg);
        out_line('D', "%s", "");
        return FLAME_EXIT_ERROR;
    }
    sc_cap_eff(s.cap_process, sizeof(s.cap_process));
    test_stop_at("process");
    if (process(&s, map_fd, &err) < 0) {
        out_line('E', "internal %s", err.msg);
        out_line('D', "%s", "");
        return FLAME_EXIT_ERROR;
    }
    out_line('D', "%s", "");
    return 0;
}
