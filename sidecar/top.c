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
#include "common/clock.h"
#include "flame/fold.h"
#include "sidecar/kallsyms.h"
#include "sidecar/recorder/recorder.h"
#include "sidecar/session.h"

/* One window handed to the child: fixed size, far below PIPE_BUF, so one write is atomic. */
typedef struct top_cmd {
    int window;
    long start_ms, ms, end_mono_ms;
    unsigned long long samples, lost, skipped;
    long long raw_size[SC_MAX_JVMS]; /* bytes of each raw map valid for this window */
    char modes[SC_MAX_JVMS];         /* 1: the agent's alloc/lock samples of this window fetched */
    /* 1: the window's samples are off-CPU ones taken for lock's java.util.concurrent waits
     * (sc_session.juc as the window recorded: the recorder clears it when the kernel refuses
     * the off-CPU program, after this child was forked) */
    char juc;
} top_cmd;

/* The window's recording, in the work directory. */
static void data_path(char *buf, size_t cap, int window)
{
    snprintf(buf, cap, "w%d.data", window);
}

/* JVM k's alloc/lock samples of the window, fetched from its agent (flush_modes) */
static void modes_path(char *buf, size_t cap, int window, const sc_session *env, int k)
{
    snprintf(buf, cap, "w%d-%d.modes", window, (int)env->jvms[k].st.pid);
}

/* ---- the child: unprivileged, seccomp-filtered ---- */

static void child_window(const sc_session *env, const top_cmd *c, const int *raw_fd,
                         const int *map_fd, unsigned long long *total)
{
    int64_t t = mono_ms();
    for (int k = 0; k < env->n; k++) {
        if (map_fd[k] < 0)
            continue;
        sc_map_stats st = {0};
        flame_err e = FLAME_ERR_INIT;
        if (raw_fd[k] >= 0 && c->raw_size[k] > 0) {
            if (sc_map_refresh(raw_fd[k], c->raw_size[k], map_fd[k], &st, &e) < 0)
                fprintf(stderr, "flame-sidecar: top: map of pid %d: %s\n", (int)env->jvms[k].st.pid,
                        e.msg);
        } else if (ftruncate(map_fd[k], 0) < 0) {
            continue; /* the recorder's names are per window: never another window's */
        }
        sc_append_interp(env, k, c->window, map_fd[k], &st, NULL);
    }
    fold_opts fo = {.inline_frames = !env->o.no_inline,
                    .signatures = env->o.signatures,
                    .kernel = env->kernel_text != 0, /* --kernel: kernel frames marked _[k] */
                    .root_for_pid = env->n > 1 ? sc_root_for_pid : NULL,
                    .root_ctx = (void *)env};
    /* The window's samples split by mode as a one-shot profile's are (sc_split): wall, offcpu
     * weigh their periods (ns, M lines), cpu counts samples (F lines); from a wall recording
     * each of cpu, wall and offcpu asked keeps its own (--mode cpu,offcpu: a window of each);
     * lock alone: off-CPU samples (ns) too, for the java.util.concurrent waits among them. */
    enum ct_mode rm = c->juc ? CT_MODE_OFFCPU : sc_perf_mode(&env->o);
    sc_split mf;
    if (sc_split_new(&mf, &fo, rm, ct_modes_of(&env->o)) < 0) {
        sc_split_free(&mf);
        return;
    }
    char path[64];
    data_path(path, sizeof(path), c->window);
    flame_err err = FLAME_ERR_INIT;
    /* alloc alone (or lock without off-CPU samples): the CPU samples are recorded (the
     * windows' clock) but not wanted */
    bool want = sc_split_wants_samples(&mf);
    int data = want ? sc_work_open(path, O_RDONLY) : -1;
    int rc = !want      ? 0
             : data < 0 ? flame_fail_errno(&err, FLAME_EXIT_ERROR, errno, "open %s", path)
                        : sc_perf_script(env, data, true, false, mf.feed, mf.nfeed, NULL, &err);
    if (data >= 0)
        close(data);
    fold_stats fs = {0};
    const folder *sf = sc_split_stats(&mf);
    if (sf)
        folder_get_stats(sf, &fs);
    *total += c->samples;
    if (rc < 0) {
        sc_warn("top: window %d: %s", c->window, err.msg);
    } else {
        /* T first: the plugin starts a new window, the F lines that follow belong to it. */
        ct_window w = {.window = (uint64_t)c->window,
                       .start_ms = (uint64_t)c->start_ms,
                       .ms = (uint64_t)c->ms,
                       .samples = c->samples,
                       .folded = fs.samples,
                       .lost = c->lost,
                       .skipped = c->skipped,
                       .jit_leaf = fs.jit_leaf,
                       .jit_leaf_named = fs.jit_leaf_named,
                       .process_ms = (uint64_t)(mono_ms() - t),
                       .end_mono_ms = (uint64_t)c->end_mono_ms};
        char buf[512];
        if (ct_format_window(buf, sizeof buf, &w) >= 0)
            sc_out(CT_TAG_WINDOW, buf);
        if (want)
            sc_split_emit(&mf, env->n > 1 ? 2 : 1);
        /* the agent's samples of this window, checked as the target's data they are */
        for (int k = 0; k < env->n; k++) {
            if (!c->modes[k])
                continue;
            char mp[64];
            modes_path(mp, sizeof mp, c->window, env, k);
            int mfd = sc_work_open(mp, O_RDONLY);
            if (mfd < 0)
                continue;
            sc_emit_modes_fd(env, k, mfd);
            close(mfd);
        }
    }
    sc_out_progress((uint64_t)(c->start_ms + c->ms), 0, *total, env->n);
    sc_split_free(&mf);
}

static _Noreturn void child_main(const sc_session *env, int cmd_fd, int ack_fd, const int *raw_fd,
                                 const int *map_fd)
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
    sc_session *env;
    int raw_fd[SC_MAX_JVMS], map_fd[SC_MAX_JVMS];
    long long raw_size[SC_MAX_JVMS];
    int cmd_fd, ack_fd;
    pid_t child;
    bool busy; /* the child works on busy_window */
    int busy_window;
    bool pending; /* a recorded window waits for the child */
    top_cmd pend;
    unsigned long long skipped;
    bool announced; /* the P line of the first window's start is out */
} top_state;

/* Our /tmp/perf-<pid>.map (what perf script reads) and the raw copy of the agent's map. */
static void open_maps(top_state *t)
{
    const sc_session *env = t->env;
    for (int k = 0; k < env->n; k++) {
        t->raw_fd[k] = t->map_fd[k] = -1;
        t->raw_size[k] = 0;
        const sc_jvm *j = &env->jvms[k];
        if (j->attach != CT_ATTACH_AGENT) {
            /* no live map: only the recorder's names of its Java frames (VMStructs) */
            t->map_fd[k] = sc_create_map(j);
            continue;
        }
        char path[64];
        snprintf(path, sizeof(path), "raw-%d.map", (int)j->st.pid);
        t->raw_fd[k] = sc_work_create(path, O_RDWR | O_APPEND, 0600);
        /* Created as root before the child drops privilege: perf accepts maps owned by root. */
        t->map_fd[k] = sc_create_map(j);
    }
}

/* The recorder's interpreted-frame names of a window that is done (or skipped). */
static void unlink_names(const sc_session *env, int window)
{
    for (int k = 0; k < env->n; k++) {
        char path[64];
        sc_interp_names_path(path, sizeof path, env->jvms[k].st.pid, window);
        sc_work_unlink(path);
        modes_path(path, sizeof path, window, env, k);
        sc_work_unlink(path);
    }
}

/* alloc, lock (docs/MODES.md): at each window's end every JVM's agent writes the window's
 * samples and goes on with an empty table (`flush`, as the JVM's user through the attach
 * socket), and they are copied here as the one-shot profile copies them at its end (the
 * JVM's user, no symlink, a regular file of that user, bounded, removed in the target). A
 * target that planted something else there refuses the modes: the run ends (exit 6). */
static int flush_modes(top_state *t, int window, flame_err *err)
{
    sc_session *env = t->env;
    unsigned want = sc_agent_modes(env);
    for (int k = 0; want && k < env->n; k++) {
        sc_jvm *j = &env->jvms[k];
        t->pend.modes[k] = 0;
        if (!j->agent_started || !(want & ~j->refused) || env->ns_fd[k] < 0)
            continue;
        char msg[1024];
        flame_err e = FLAME_ERR_INIT;
        int r = sc_attach_command(j, env->ns_fd[k], (int)env->o.attach_timeout_ms, "load",
                                  j->agent_path, "true", "flush", msg, sizeof msg, NULL, &e);
        char names[64];
        ct_modes_name(want & ~j->refused, names, sizeof names);
        if (r > 0) /* the agent refused: it could not write its file (a link, FIFO or read-only
                    * file planted there): every later window would be empty */
            return sc_fail(err, CT_ERR_PERF_DENIED,
                           "--mode %s refused in JVM pid %d: the agent could not write its "
                           "samples to /tmp/perf-%d.%s.modes (%.300s): a link, FIFO or read-only "
                           "file there?",
                           names, (int)j->st.pid, (int)j->st.nspid, j->map_tag,
                           msg[0] ? msg : "no message");
        if (r < 0) { /* no answer in time: this window has none of its samples; the next may */
            fprintf(stderr, "flame-sidecar: top: pid %d: the agent's flush failed: %s\n",
                    (int)j->st.pid, e.msg);
            continue;
        }
        char path[64];
        modes_path(path, sizeof path, window, env, k);
        /* read by the processing child (nobody) by name, as the window's data */
        _cleanup_close_ int fd = sc_work_create(path, O_RDWR, 0644);
        if (fd < 0) {
            fprintf(stderr, "flame-sidecar: top: create %s: %s\n", path, strerror(errno));
            continue;
        }
        if (sc_fetch_modes(j, env->ns_fd[k], fd, &e) < 0)
            return sc_fail(err, CT_ERR_PERF_DENIED, "--mode %s refused in JVM pid %d: %s", names,
                           (int)j->st.pid, e.msg);
        t->pend.modes[k] = 1;
    }
    return 0;
}

/* Every JVM refused the agent's modes (another agent holds the allocation sampler, attach
 * refused...) and nothing else was asked: no window could hold anything, so the run fails now
 * (exit 6) rather than store empty windows. */
static int modes_refused(const sc_session *env, flame_err *err)
{
    unsigned want = sc_agent_modes(env);
    if (!want || (ct_modes_of(&env->o) & ~SC_AGENT_MODES))
        return 0;
    for (int k = 0; k < env->n; k++)
        if (want & ~env->jvms[k].refused)
            return 0;
    char names[64];
    ct_modes_name(want, names, sizeof names);
    const sc_jvm *j = env->n > 0 ? &env->jvms[0] : NULL;
    return sc_fail(err, CT_ERR_PERF_DENIED, "--mode %s refused in JVM pid %d: %s", names,
                   j ? (int)j->st.pid : 0, j && j->refused_why[0] ? j->refused_why : "no JVM");
}

/* Append what the agent wrote since last time to the raw copy, then hand the window over. */
static void hand_over(top_state *t)
{
    const sc_session *env = t->env;
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
    sc_work_unlink(path);
    unlink_names(t->env, t->busy_window);
    t->busy = false;
    if (t->pending)
        hand_over(t);
}

static void on_ack_cb(void *ctx)
{
    on_ack(ctx);
}

/* The first window's first tick: the recorder runs (its events are open, the JVMs attached).
 * One P line says so at once, not a whole window later: `record --detach` returns on it. Only
 * while the first window records: the child owns stdout once it has a window to process, and it
 * has none before this one is over. */
static void on_first_tick(void *ctx, int64_t elapsed_ms, const sc_perfstream *ps)
{
    top_state *t = ctx;
    if (t->announced)
        return;
    t->announced = true;
    sc_out_progress((uint64_t)elapsed_ms, 0, ps->samples, t->env->n);
}

/* One window: the recorder (sampler.c) for interval_ms, its pipe-format output teed into the
 * window's data file. Acks from the child are served meanwhile. */
static int record_window(top_state *t, int window, sc_run_result *res, flame_err *err)
{
    sc_session *env = t->env;
    char path[64];
    data_path(path, sizeof(path), window);
    _cleanup_close_ int data = sc_work_create(path, O_WRONLY, 0644);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "create %s", path);
    /* Not live: the window is read only once it is over, and the recorder delivers everything
     * it holds at "stop"; waking it for every sample would buy nothing (docs/SIDECAR.md). */
    /* Interpreted frames named per window: the recorder writes this window's names file. */
    env->interp = true;
    env->interp_window = window;
    sc_run run = {.data_fd = data,
                  .duration_ms = (int64_t)env->o.interval_ms,
                  .grace_ms = 5000,
                  .live = false,
                  .exclude = &t->child,
                  .n_exclude = 1,
                  .extra_fd = t->ack_fd,
                  .on_extra = on_ack_cb,
                  .on_tick = window == 0 ? on_first_tick : NULL,
                  .ctx = t};
    if (sc_sampler_run(env, &run, res, err) < 0) {
        sc_work_unlink(path);
        return -1;
    }
    snprintf(env->filter, sizeof env->filter, "%s", res->filter);
    if (res->write_errno)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, res->write_errno, "write %s", path);
    if (!*env->abort && WIFSIGNALED(res->status) && WTERMSIG(res->status) == SIGKILL)
        return sc_fail_killed(err, "the recorder", SIGKILL);
    return 0;
}

int sc_top_run(sc_session *env, flame_err *err)
{
    top_state t = {.env = env, .cmd_fd = -1, .ack_fd = -1, .child = -1};
    if (modes_refused(env, err) < 0)
        return -1;
    open_maps(&t);
    /* The JVMs' libraries for every window's perf script, copied once, still privileged
     * (symfs.c); code mapped later stays unnamed (its build-id-carrying MMAP2 makes perf refuse
     * any other file). Without copies perf would read the sidecar's own files at those paths. */
    for (int k = 0; k < env->n; k++) {
        sc_symfs_stats st;
        int r = env->ns_fd[k] >= 0
                    ? sc_symfs_copy(&env->symfs, &env->jvms[k], env->ns_fd[k], false, &st)
                    : 0;
        if (r < 0)
            sc_warn("pid %d: cannot read its maps (%s): native frames stay unnamed",
                    (int)env->jvms[k].st.pid, strerror(-r));
    }
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
        sc_run_result res;
        if (record_window(&t, w, &res, err) < 0) {
            rc = -1;
            break;
        }
        /* TEST ONLY: the phase hooks stop the first window's recorder, not every window's (the
         * processing child, forked before, keeps its copy of them for the first window). */
        if (w == 0)
            unsetenv("FLAME_SIDECAR_TEST_STOP");
        /* A cut-short window is not worth showing when we are leaving, unless it is kept (the
         * recorder stores every window, the last one too). */
        if (*env->stop && !env->o.last_window)
            break;
        if (t.pending) {
            /* The child did not keep up for a whole window: show the newer one instead. */
            char path[64];
            data_path(path, sizeof(path), t.pend.window);
            sc_work_unlink(path);
            unlink_names(env, t.pend.window);
            t.skipped++;
        }
        t.pend = (top_cmd){.window = w,
                           .start_ms = res.start - env->t0,
                           .ms = mono_ms() - res.start,
                           .end_mono_ms = mono_ms(),
                           .samples = res.ps.samples,
                           .lost = res.ps.lost,
                           .juc = env->juc};
        if (flush_modes(&t, w, err) < 0) {
            char path[64];
            data_path(path, sizeof(path), w);
            sc_work_unlink(path);
            unlink_names(env, w);
            rc = -1;
            break;
        }
        t.pending = true;
        if (!t.busy)
            hand_over(&t);
    }
    /* Closing the command pipe ends the child after its current window. */
    close(t.cmd_fd);
    int64_t w0 = mono_ms();
    int status = 0;
    while (waitpid(t.child, &status, WNOHANG) == 0) {
        if (mono_ms() - w0 > (*env->abort ? 1000 : 10000)) {
            fprintf(stderr, "flame-sidecar: top: the processing child did not exit\n");
            break;
        }
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    if (rc == 0 && t.ack_fd < 0)
        rc = WIFSIGNALED(status) ? sc_fail_killed(err, "the processing child", WTERMSIG(status))
                                 : flame_fail(err, FLAME_EXIT_ERROR,
                                              "internal the processing child died; see "
                                              "stderr");
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
