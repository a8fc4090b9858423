/* flame-sidecar `top`: windows of `perf record` (record mode's launcher), each processed by a
 * hardened child while the next one records. The parent keeps the privileges it needs for the
 * whole run (perf with CAP_SYS_PTRACE, reading the live agent map in the target's mount
 * namespace, the undo at the end); everything that parses data from the target (the map, perf
 * script's output) happens in the child, which drops to nobody under seccomp first (sc_harden),
 * exactly like record mode's processing phase. Protocol: docs/PROTOCOL.md, tag T. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/fold.h"
#include "sidecar/top.h"

#define PERF "/usr/bin/perf"

/* One window handed to the child: fixed size, far below PIPE_BUF, so one write is atomic. */
typedef struct top_cmd {
    int window;
    long start_ms, ms, end_mono_ms;
    unsigned long long samples, lost, skipped;
    long long raw_size[SC_MAX_JVMS]; /* bytes of each raw map valid for this window */
} top_cmd;

static long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void data_path(char *buf, size_t cap, int window)
{
    snprintf(buf, cap, "/tmp/w%d.data", window);
}

/* ---- the child: unprivileged, seccomp-filtered ---- */

static int child_emit(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    (void)ctx;
    /* Frame names never carry a line break (fold replaces control bytes); belt and braces. */
    fputs("F ", stdout);
    for (size_t i = 0; i < len; i++)
        putchar(stack[i] == '\n' || stack[i] == '\r' ? '?' : stack[i]);
    printf(" %llu\n", count);
    return 0;
}

/* Rewrite our /tmp/perf-<pid>.map from the raw copy of the agent's map (sanitized, as record
 * mode does). The file was created by root before we dropped privilege: perf trusts it. */
static void child_refresh_map(const sc_top_env *env, int k, int raw_fd, int map_fd, long long sz)
{
    if (raw_fd < 0 || map_fd < 0 || sz <= 0)
        return;
    if ((unsigned long long)sz > SC_MAP_FILE_MAX)
        sz = (long long)SC_MAP_FILE_MAX;
    void *m = mmap(NULL, (size_t)sz, PROT_READ, MAP_PRIVATE, raw_fd, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "flame-sidecar: top: map of pid %d: %s\n", (int)env->jvms[k].st.pid,
                strerror(errno));
        return;
    }
    if (ftruncate(map_fd, 0) == 0 && lseek(map_fd, 0, SEEK_SET) == 0) {
        FILE *out = fdopen(dup(map_fd), "w");
        sc_map_stats st;
        flame_err e = FLAME_ERR_INIT;
        if (!out || sc_map_sanitize(m, (size_t)sz, out, &st, &e) < 0)
            fprintf(stderr, "flame-sidecar: top: sanitize map of pid %d: %s\n",
                    (int)env->jvms[k].st.pid, e.msg);
        if (out)
            fclose(out);
    }
    munmap(m, (size_t)sz);
}

/* perf script over one window's data, folded. */
static int child_script(const char *path, folder *f, flame_err *err)
{
    _cleanup_close_ int data = open(path, O_RDONLY | O_CLOEXEC);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "open %s", path);
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
        dup2(data, 0);
        dup2(p[1], 1);
        setenv("HOME", "/tmp", 1);
        /* the field layout flame/fold.c parses (same as record mode) */
        execl(PERF, "perf", "script", "-i", "-", "-F", "comm,pid,tid,time,event,ip,sym,dso",
              (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    int rc = folder_read_fd(f, p[0], err);
    close(p[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0)
        rc = folder_finish(f, err);
    return rc;
}

static void child_window(const sc_top_env *env, const top_cmd *c, const int *raw_fd,
                         const int *map_fd, unsigned long long *total)
{
    long t = mono_ms();
    for (int k = 0; k < env->n; k++)
        child_refresh_map(env, k, raw_fd[k], map_fd[k], c->raw_size[k]);
    fold_opts fo = {.inline_frames = env->inline_frames,
                    .signatures = env->signatures,
                    .root_for_pid = env->root_for_pid,
                    .root_ctx = env->ctx};
    folder *f = folder_new(&fo);
    if (!f)
        return;
    char path[64];
    data_path(path, sizeof(path), c->window);
    flame_err err = FLAME_ERR_INIT;
    int rc = child_script(path, f, &err);
    fold_stats fs = {0};
    folder_get_stats(f, &fs);
    *total += c->samples;
    if (rc < 0) {
        printf("W top: window %d: %s\n", c->window, err.msg);
    } else {
        /* T first: the plugin starts a new window, the F lines that follow belong to it. */
        printf("T {\"window\":%d,\"start_ms\":%ld,\"ms\":%ld,\"samples\":%llu,"
               "\"folded\":%llu,\"lost\":%llu,\"skipped\":%llu,\"jit_leaf\":%llu,"
               "\"jit_leaf_named\":%llu,\"process_ms\":%ld,\"end_mono_ms\":%ld}\n",
               c->window, c->start_ms, c->ms, c->samples, fs.samples, c->lost, c->skipped,
               fs.jit_leaf, fs.jit_leaf_named, mono_ms() - t, c->end_mono_ms);
        folder_each(f, child_emit, NULL);
    }
    printf("P {\"elapsed_ms\":%ld,\"duration_ms\":0,\"samples\":%llu,\"jvms\":%d}\n",
           c->start_ms + c->ms, *total, env->n);
    fflush(stdout);
    folder_free(f);
}

static _Noreturn void child_main(const sc_top_env *env, int cmd_fd, int ack_fd,
                                 const int *raw_fd, const int *map_fd)
{
    /* Ctrl-C and docker's signals are the parent's business; we end when it closes cmd_fd. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    /* The target's namespaces are the parent's business: keep no handle on them. */
    for (int k = 0; k < env->n; k++)
        if (env->ns_fd[k] >= 0)
            close(env->ns_fd[k]);
    flame_err err = FLAME_ERR_INIT;
    if (sc_harden(&err) < 0) {
        fprintf(stderr, "flame-sidecar: top: %s\n", err.msg);
        _exit(1);
    }
    /* Changing uid cleared the parent-death signal: without CAP_KILL the parent could not
     * stop us, so we die with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        _exit(0);
    unsigned long long total = 0;
    for (;;) {
        top_cmd c;
        ssize_t n = TEMP_FAILURE_RETRY(read(cmd_fd, &c, sizeof(c)));
        if (n != (ssize_t)sizeof(c))
            break; /* parent closed: the end */
        child_window(env, &c, raw_fd, map_fd, &total);
        char a = 'a';
        if (write(ack_fd, &a, 1) != 1)
            break;
    }
    _exit(0);
}

/* ---- the parent: records windows, copies the growing maps, hands windows over ---- */

typedef struct top_state {
    const sc_top_env *env;
    int raw_fd[SC_MAX_JVMS], map_fd[SC_MAX_JVMS];
    long long raw_size[SC_MAX_JVMS];
    int cmd_fd, ack_fd;
    pid_t child;
    bool busy;             /* the child works on busy_window */
    int busy_window;
    bool pending;          /* a recorded window waits for the child */
    top_cmd pend;
    unsigned long long skipped;
} top_state;

/* Our /tmp/perf-<pid>.map (what perf script reads) and the raw copy of the agent's map. */
static void open_maps(top_state *t)
{
    const sc_top_env *env = t->env;
    for (int k = 0; k < env->n; k++) {
        t->raw_fd[k] = t->map_fd[k] = -1;
        t->raw_size[k] = 0;
        const sc_jvm *j = &env->jvms[k];
        if (j->attach != SC_ATTACH_AGENT)
            continue; /* no live map: native frames only (docs/TOP.md) */
        char path[64];
        snprintf(path, sizeof(path), "/tmp/raw-%d.map", (int)j->st.pid);
        unlink(path);
        t->raw_fd[k] = open(path, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
        snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)j->st.pid);
        unlink(path);
        /* Created as root before the child drops privilege: perf accepts maps owned by root. */
        t->map_fd[k] = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (t->map_fd[k] >= 0 && j->st.nspid != j->st.pid) {
            char alt[64]; /* perfs that name the file by the in-namespace pid */
            snprintf(alt, sizeof(alt), "/tmp/perf-%d.map", (int)j->st.nspid);
            unlink(alt);
            if (link(path, alt) < 0)
                fprintf(stderr, "flame-sidecar: top: link %s: %s\n", alt, strerror(errno));
        }
    }
}

/* Append what the agent wrote since last time to the raw copy, then hand the window over. */
static void hand_over(top_state *t)
{
    const sc_top_env *env = t->env;
    for (int k = 0; k < env->n; k++) {
        if (t->raw_fd[k] < 0)
            continue;
        flame_err e = FLAME_ERR_INIT;
        int r = sc_peek_map(&env->jvms[k], env->ns_fd[k], t->raw_fd[k], t->raw_size[k], &e);
        if (r < 0)
            fprintf(stderr, "flame-sidecar: top: %s\n", e.msg);
        else
            t->raw_size[k] += r;
        t->pend.raw_size[k] = t->raw_size[k];
    }
    t->pend.skipped = t->skipped;
    if (write(t->cmd_fd, &t->pend, sizeof(t->pend)) == (ssize_t)sizeof(t->pend)) {
        t->busy = true;
        t->busy_window = t->pend.window;
    }
    t->pending = false;
}

static void on_ack(top_state *t)
{
    char buf[16];
    if (read(t->ack_fd, buf, sizeof(buf)) <= 0) {
        close(t->ack_fd);
        t->ack_fd = -1; /* the child died: sc_top_run ends with an error */
        return;
    }
    char path[64];
    data_path(path, sizeof(path), t->busy_window);
    unlink(path);
    t->busy = false;
    if (t->pending)
        hand_over(t);
}

/* One window: perf record for interval_ms, teeing its pipe-format output into the data file.
 * Acks from the child are served meanwhile. Returns <0 when perf produced nothing. */
static int record_window(top_state *t, int window, sc_perfstream *ps, long *start_out,
                         flame_err *err)
{
    const sc_top_env *env = t->env;
    char path[64];
    data_path(path, sizeof(path), window);
    _cleanup_close_ int data = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "create %s", path);
    int rfd = -1, cfd = -1;
    pid_t pid = -1;
    if (env->spawn(env->ctx, &rfd, &cfd, &pid, err) < 0)
        return -1;
    _cleanup_close_ int in = rfd;
    _cleanup_close_ int ctl = cfd;
    long start = mono_ms(), stop_sent = 0;
    *start_out = start;
    static unsigned char buf[1 << 16];
    for (;;) {
        long now = mono_ms();
        /* perf runs as nobody and we hold no CAP_KILL: its control fd stops it (record.c). */
        if (!stop_sent && (*env->stop || now - start >= env->interval_ms)) {
            if (write(ctl, "stop\n", 5) != 5)
                kill(pid, SIGINT); /* best effort */
            stop_sent = now;
        }
        if (stop_sent && now - stop_sent > (*env->abort ? 1000 : 5000))
            break;
        long wait = stop_sent ? 100 : env->interval_ms - (now - start);
        struct pollfd p[2] = {{.fd = in, .events = POLLIN}, {.fd = t->ack_fd, .events = POLLIN}};
        int r = poll(p, 2, wait < 1 ? 1 : (int)(wait > 200 ? 200 : wait));
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        if (p[1].revents)
            on_ack(t);
        if (!p[0].revents)
            continue;
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        sc_perfstream_feed(ps, buf, (size_t)n);
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(data, buf + w, (size_t)(n - w)));
            if (k <= 0)
                return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "write %s", path);
            w += k;
        }
    }
    close(steal_fd(&in)); /* a perf still writing gets EPIPE and exits */
    int status = 0;
    for (long w0 = mono_ms(); waitpid(pid, &status, WNOHANG) == 0;) {
        if (mono_ms() - w0 > 5000)
            break; /* it dies with us (PDEATHSIG) */
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    if (!ps->started) {
        unlink(path);
        return flame_fail(err, FLAME_EXIT_PERF,
                          "perf_denied perf record produced no data (exit status %d); see stderr",
                          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return 0;
}

int sc_top_run(const sc_top_env *env, flame_err *err)
{
    top_state t = {.env = env, .cmd_fd = -1, .ack_fd = -1, .child = -1};
    open_maps(&t);
    int cmdp[2], ackp[2];
    if (pipe2(cmdp, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    if (pipe2(ackp, O_CLOEXEC) < 0) {
        close(cmdp[0]);
        close(cmdp[1]);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    }
    fflush(stdout); /* the child inherits the stdio buffer otherwise */
    t.child = fork();
    if (t.child < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fork");
    if (t.child == 0) {
        close(cmdp[1]);
        close(ackp[0]);
        child_main(env, cmdp[0], ackp[1], t.raw_fd, t.map_fd);
    }
    close(cmdp[0]);
    close(ackp[1]);
    t.cmd_fd = cmdp[1];
    t.ack_fd = ackp[0];
    /* The child owns stdout from here until it exits: diagnostics go to stderr. */
    int rc = 0;
    for (int w = 0; !*env->stop && t.ack_fd >= 0; w++) {
        sc_perfstream ps = {0};
        long start = 0;
        if (record_window(&t, w, &ps, &start, err) < 0) {
            rc = -1;
            break;
        }
        if (*env->stop)
            break; /* a cut-short window is not worth showing: we are leaving */
        if (t.pending) {
            /* The child did not keep up for a whole window: show the newer one instead. */
            char path[64];
            data_path(path, sizeof(path), t.pend.window);
            unlink(path);
            t.skipped++;
        }
        t.pend = (top_cmd){.window = w,
                           .start_ms = start - env->t0,
                           .ms = mono_ms() - start,
                           .end_mono_ms = mono_ms(),
                           .samples = ps.samples,
                           .lost = ps.lost};
        t.pending = true;
        if (!t.busy)
            hand_over(&t);
    }
    if (rc == 0 && t.ack_fd < 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "internal the processing child died; see stderr");
    /* Closing the command pipe ends the child after its current window. */
    close(t.cmd_fd);
    long w0 = mono_ms();
    int status;
    while (waitpid(t.child, &status, WNOHANG) == 0) {
        if (mono_ms() - w0 > (*env->abort ? 1000 : 10000)) {
            fprintf(stderr, "flame-sidecar: top: the processing child did not exit\n");
            break;
        }
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    if (t.ack_fd >= 0)
        close(t.ack_fd);
    for (int k = 0; k < env->n; k++) {
        if (t.raw_fd[k] >= 0)
            close(t.raw_fd[k]);
        if (t.map_fd[k] >= 0)
            close(t.map_fd[k]);
    }
    return rc;
}
