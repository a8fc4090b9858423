/* One run (plugin/run/run.h). The main thread drives everything (HTTP calls, signals, progress, the
 * load command); one thread per sidecar only reads its attach stream. Every sidecar that was
 * created is removed on every path: after a graceful stop when it still runs, so that the sidecar
 * can undo what it did in the target (mounts, files) before it goes. */
#include "plugin/run/session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "plugin/run/image.h"
#include "plugin/run/sidecar.h"
#include "plugin/run/signals.h"
#include "plugin/run/spec.h"

#define STOP_GRACE_S 20.0 /* SIGTERM -> exit: the sidecar restores the target */
#define OVERRUN_S 60.0
#define STOP_DEADLINE_S 120.0 /* SIGINT -> profile delivered, at most */

/* ---- the load command ---- */

/* Is path a file we may execute (not a directory)? 0, or an errno. */
static int runnable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno;
    if (S_ISDIR(st.st_mode))
        return EISDIR;
    return access(path, X_OK) == 0 ? 0 : errno;
}

int run_cmd_check(const char *cmd, flame_err *err)
{
    /* posix_spawnp's own search: a name with a '/' as given, else each $PATH entry (an empty one
     * is the current directory; no PATH: glibc's default) */
    if (strchr(cmd, '/')) {
        int e = runnable(cmd);
        return e ? flame_fail_errno(err, FLAME_EXIT_USAGE, e, "cannot run %s", cmd) : 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    int seen = ENOENT;
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        char full[4096];
        int n = snprintf(full, sizeof full, "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", cmd);
        if (n > 0 && (size_t)n < sizeof full) {
            int e = runnable(full);
            if (!e)
                return 0;
            if (e == EACCES)
                seen = EACCES;
        }
        if (!*end)
            break;
        p = end;
    }
    if (seen == EACCES)
        return flame_fail_errno(err, FLAME_EXIT_USAGE, EACCES, "cannot run %s", cmd);
    return flame_fail(err, FLAME_EXIT_USAGE,
                      "cannot run %s: no such command in $PATH (nothing was profiled)", cmd);
}

static int spawn_cmd(run_ctx *r, flame_err *err)
{
    extern char **environ;
    pid_t pid;
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    /* The command gets default signal dispositions, not our handlers' ignores. */
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawnp(&pid, r->req->cmd[0], NULL, &at, r->req->cmd, environ);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return flame_fail_errno(err, FLAME_EXIT_USAGE, rc, "cannot run %s", r->req->cmd[0]);
    r->cmd_pid = pid;
    r->res->cmd_started = true;
    return 0;
}

int run_sidecar_error(const run_target *t, flame_err *err)
{
    const proto *p = &t->pr;
    char text[1024];
    proto_sanitize(p->err_text ? p->err_text : "", text, sizeof text);
    const char *name = t->name[0] ? t->name : t->arg;
    int code = ct_error_exit(p->err);
    switch (p->err) {
    case CT_ERR_NO_JVM:
        return flame_fail(err, code, "no JVM in container %s: %s", name, text);
    case CT_ERR_NO_PID:
        return flame_fail(err, code, "no JVM with --pid in container %s: %s", name, text);
    case CT_ERR_ATTACH:
    case CT_ERR_INJECT:
        return flame_fail(err, code, "the JVM in %s refused the attach: %s", name, text);
    case CT_ERR_PERF_DENIED:
        /* a mode the JVM refused (record --mode alloc, docs/MODES.md): as a profile says it */
        if (!strncmp(text, "--mode ", 7) && strstr(text, " refused in JVM pid "))
            return flame_fail(err, code, "%s: %s", name, text);
        return flame_fail(err, code, "perf is not permitted on this engine's host: %s", text);
    case CT_ERR_PERF_UNSUPPORTED:
        return flame_fail(err, code, "perf is not supported by this kernel: %s", text);
    case CT_ERR_USAGE:
    case CT_ERR_ABORTED:
    case CT_ERR_INTERNAL:
    case CT_ERR_COUNT:
        break;
    }
    /* the protocol's code stays in parentheses only where no wording above fits */
    return flame_fail(err, code, "profiling %s failed (%s): %s", name, ct_error_name(p->err), text);
}

/* ---- the run ---- */

static void fill_items(run_ctx *r, progress_item *it)
{
    for (int i = 0; i < r->n; i++) {
        sess *s = &r->s[i];
        pthread_mutex_lock(&s->lock);
        it[i] = (progress_item){.name = s->t->name,
                                .elapsed_ms = (long long)s->t->pr.prog.elapsed_ms,
                                .duration_ms = (long long)s->t->pr.prog.duration_ms,
                                .samples = (long long)s->t->pr.prog.samples,
                                .jvms = (long long)s->t->pr.prog.jvms};
        if (s->stream_done)
            it[i].state = s->t->pr.done ? PS_DONE : PS_FAILED;
        else if (s->t->pr.f_lines || s->t->pr.have_summary || s->stop_sent)
            it[i].state = PS_PROCESSING;
        else if (s->t->pr.progress)
            it[i].state = PS_RECORDING;
        else
            it[i].state = PS_STARTING;
        pthread_mutex_unlock(&s->lock);
    }
}

static bool all_done(run_ctx *r, bool need_progress)
{
    for (int i = 0; i < r->n; i++) {
        sess *s = &r->s[i];
        pthread_mutex_lock(&s->lock);
        bool d = s->stream_done || (need_progress && s->t->pr.progress);
        pthread_mutex_unlock(&s->lock);
        if (!d)
            return false;
    }
    return true;
}

static bool any_recording(run_ctx *r)
{
    bool any = false;
    for (int i = 0; i < r->n && !any; i++) {
        pthread_mutex_lock(&r->s[i].lock);
        any = r->s[i].t->pr.progress || r->s[i].t->pr.f_lines || r->s[i].t->pr.have_summary;
        pthread_mutex_unlock(&r->s[i].lock);
    }
    return any;
}

static void stop_all(run_ctx *r, const char *sig)
{
    for (int i = 0; i < r->n; i++) {
        sidecar_signal(r, &r->s[i], sig);
        r->s[i].stop_sent = true;
    }
}

static void follow(run_ctx *r)
{
    unsigned seen_term = 0;
    sig_ctrlc cc = SIG_CTRLC_INIT;
    double abort_at = 0, stop_at = 0;
    bool stopping = false, cmd_started = r->req->cmd == NULL;
    progress_item *items = calloc((size_t)r->n, sizeof *items);
    enum progress_state *prev = calloc((size_t)r->n, sizeof *prev);
    if (!items || !prev) {
        free(items);
        free(prev);
        return;
    }
    for (int i = 0; i < r->n; i++)
        prev[i] = (enum progress_state) - 1;
    /* Events that happened during setup count too. */
    for (;;) {
        sig_counts sg;
        sig_get_counts(&sg);
        double now = mono_s();
        /* How a Ctrl-C reaches us (docker CLI 28, cmd/docker tryPluginRun): on a terminal the
         * kernel sends SIGINT to the whole process group and the CLI does nothing; without a
         * terminal the CLI only closes the plugin socket (once: later signals are not passed
         * on, and the third one makes the CLI SIGKILL us). A CLI may do both: one Ctrl-C
         * (sig_ctrlc_step). */
        r->res->interrupts += sig_ctrlc_step(&cc, sg.sigint, sg.sock_closed, now);
        if (sg.sigterm != seen_term) {
            seen_term = sg.sigterm;
            r->res->interrupts = 2;
        }
        /* A first Ctrl-C before any sidecar records has nothing to save: "stop and write"
         * would only end in "no samples" (exit 1). It aborts (exit 130, nothing written). */
        if (r->res->interrupts == 1 && !stopping && !r->aborted && !any_recording(r)) {
            r->early = true;
            r->res->interrupts = 2;
        }
        if (r->res->interrupts >= 2 && !r->aborted) {
            r->aborted = true;
            progress_note(&r->pg, "aborting: removing the sidecars");
            stop_all(r, "SIGTERM");
            abort_at = now + STOP_GRACE_S;
            if (r->cmd_pid > 0 && !r->res->cmd_done)
                kill(r->cmd_pid, SIGTERM);
        } else if (r->res->interrupts == 1 && !stopping) {
            stopping = true;
            progress_note(&r->pg, "stopping early, the profile so far will be written (Ctrl-C "
                                  "again to abort)");
            stop_all(r, "SIGINT");
        }
        /* A sidecar that overruns its duration by a minute is asked to stop (and still
         * deliver); the user can always abort with a second Ctrl-C. */
        double dur_s = (double)r->req->sidecar.duration_ms / 1000;
        if (!stopping && dur_s > 0 && now > r->res->tm.start + dur_s + OVERRUN_S) {
            stopping = true;
            progress_note(&r->pg, "the sidecar did not stop after %.1f s: stopping it", dur_s);
            stop_all(r, "SIGINT");
        }
        if (stopping && !stop_at)
            stop_at = now;
        /* A sidecar that ignores the stop would keep us forever: abort it (the SIGTERM still
         * lets it restore the target). */
        if (stop_at && !r->aborted && now > stop_at + STOP_DEADLINE_S) {
            r->stuck = true;
            r->res->interrupts = 2;
            continue;
        }
        if (r->aborted && now > abort_at)
            for (int i = 0; i < r->n; i++)
                r->s[i].cancel = 1;

        /* The load command: start it once every sidecar records; stop them when it ends. */
        if (!cmd_started && !stopping && all_done(r, true)) {
            flame_err e = FLAME_ERR_INIT;
            if (spawn_cmd(r, &e) < 0) {
                /* checked before anything started (run_cmd_check): gone since, or PATH lied */
                r->res->cmd_error = e;
                r->res->cmd_done = true;
                r->res->cmd_status = 127 << 8;
                stopping = true;
                stop_all(r, "SIGINT");
            }
            cmd_started = true;
        }
        if (r->cmd_pid > 0 && !r->res->cmd_done) {
            int st;
            if (waitpid(r->cmd_pid, &st, WNOHANG) == r->cmd_pid) {
                r->res->cmd_done = true;
                r->res->cmd_status = st;
                if (!stopping) {
                    stopping = true;
                    progress_note(&r->pg, "%s exited: stopping the recording", r->req->cmd[0]);
                    stop_all(r, "SIGINT");
                }
            }
        }
        if (all_done(r, false))
            break;
        fill_items(r, items);
        /* Plain (non-TTY) output: a line on every state change, else every few seconds. */
        bool changed = false;
        for (int i = 0; i < r->n; i++) {
            if (items[i].state != prev[i])
                changed = true;
            prev[i] = items[i].state;
        }
        if (!r->aborted)
            progress_update(&r->pg, items, r->n, now, changed);

        struct pollfd p[2] = {{.fd = sig_wake_fd(), .events = POLLIN},
                              {.fd = sig_plugin_sock_fd(), .events = POLLIN}};
        int np = p[1].fd >= 0 ? 2 : 1;
        if (poll(p, (nfds_t)np, 250) > 0 && (p[0].revents & POLLIN))
            sig_drain_wake();
    }
    progress_clear(&r->pg);
    free(items);
    free(prev);
}

/* The host sidecar was SIGKILLed: its JVMs (in the containers of --attach) may keep the agent's
 * mount and map. One restore sidecar per container (plugin/run/sidecar.c), as for a profile; one
 * that has no JVM of ours or is gone simply finds nothing to undo. */
static void restore_host_targets(run_ctx *r, sess *s)
{
    const char *p = r->req->sidecar.attach_ids;
    bool all = true;
    while (p && *p) {
        char id[65];
        size_t l = strcspn(p, ",");
        snprintf(id, sizeof id, "%.*s", (int)(l < 64 ? l : 64), p);
        flame_err e = FLAME_ERR_INIT;
        /* A container that stopped meanwhile has nothing left to restore: its mount namespace
         * went with it (the restore sidecar cannot join a stopped container's PID namespace). */
        int rc = sidecar_restore_target(r->e, id, &e);
        if (rc < 0 && sidecar_target_running(r->e, id) == 1) { /* once more: a busy engine */
            sleep_ms(500);
            e = (flame_err)FLAME_ERR_INIT;
            rc = sidecar_restore_target(r->e, id, &e);
        }
        if (rc < 0 && sidecar_target_running(r->e, id) != 0) {
            if (all)
                snprintf(s->t->restore_why, sizeof s->t->restore_why, "container %.12s: %.160s", id,
                         e.msg);
            all = false;
            progress_note(&r->pg,
                          "could not restore container %.12s after the host sidecar was "
                          "killed: %s",
                          id, e.msg);
        }
        p += l + (p[l] == ',');
    }
    s->t->restored = all;
}

static int run_all(run_ctx *r, flame_err *err)
{
    int rc = 0;
    for (int i = 0; i < r->n && rc == 0; i++)
        rc = sidecar_inspect_target(r, &r->s[i], err);
    r->res->tm.inspect = mono_s();
    if (rc == 0 && sig_interrupted())
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted: nothing was recorded");
    if (rc == 0) {
        rc = image_ensure(r->e, sig_cancel_flag(), &r->image_imported, r->image_id, err);
        if (rc == 0 && r->image_imported)
            progress_note(&r->pg, "loaded the sidecar image %s into the engine", spec_image());
    }
    r->res->tm.image = mono_s();
    for (int i = 0; i < r->n && rc == 0; i++)
        if ((rc = sidecar_create(r, &r->s[i], err)) < 0)
            rc = sidecar_explain_stopped_target(r, &r->s[i], err);
    r->res->tm.create = mono_s();
    for (int i = 0; i < r->n && rc == 0; i++)
        if ((rc = sidecar_start(r, &r->s[i], err)) < 0)
            rc = sidecar_explain_stopped_target(r, &r->s[i], err);
    r->res->tm.start = mono_s();
    if (rc == 0) {
        if (sig_interrupted())
            r->res->interrupts = 2; /* interrupted during setup: abort, nothing recorded */
        follow(r);
        r->res->tm.streams_done = mono_s();
        if (r->stuck)
            rc = flame_fail(err, FLAME_EXIT_ERROR,
                            "the sidecar did not deliver the profile within %.0f s of being "
                            "stopped: aborted, nothing written (see `docker flame -D ...`)",
                            STOP_DEADLINE_S);
        else if (r->aborted && r->early)
            rc = flame_fail(err, FLAME_EXIT_INTERRUPTED,
                            "interrupted before recording started: nothing written");
        else if (r->aborted)
            rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "aborted: nothing written");
    } else if (rc < 0 && sig_interrupted() && err->code != FLAME_EXIT_INTERRUPTED) {
        /* An error caused by our own cancellation reads as an interruption. */
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted: nothing was recorded");
    }
    /* A sidecar that ended without its D line: was it the target that went away (the JVM
     * exited or was killed, which kills every process of its PID namespace, ours too)? */
    for (int i = 0; i < r->n && !r->aborted; i++)
        if (r->s[i].started && !r->s[i].t->pr.done && !r->s[i].t->pr.failed)
            sidecar_target_gone_bounded(r, &r->s[i]);
    /* Undo, in reverse: stop/remove sidecars (graceful when still running), join streams. */
    for (int i = r->n - 1; i >= 0; i--) {
        sess *s = &r->s[i];
        flame_err e = FLAME_ERR_INIT;
        if (sidecar_remove(r, s, &e) < 0) {
            if (rc == 0 || err->code == FLAME_EXIT_INTERRUPTED) {
                *err = e;
                rc = -1;
            } else {
                progress_note(&r->pg, "%s", e.msg);
            }
        }
        sidecar_join(s, 5);
    }
    r->res->tm.removed = mono_s();
    /* A sidecar killed by SIGKILL (docker kill, OOM) while its target still runs left the agent
     * mount and map there: undo them with a restore sidecar. */
    for (int i = 0; i < r->n; i++) {
        sess *s = &r->s[i];
        if (!s->started || s->t->pr.done || s->t->exit_status != 137 || s->t->target_exit >= 0)
            continue;
        if (r->req->sidecar.verb ==
            CT_HOST) { /* host: a restore sidecar in each container it may have injected */
            restore_host_targets(r, s);
            continue;
        }
        flame_err e = FLAME_ERR_INIT;
        if (sidecar_restore_target(r->e, s->t->target_id, &e) == 0)
            s->t->restored = true;
        else
            progress_note(&r->pg, "could not restore %s after its sidecar was killed: %s",
                          s->t->name, e.msg);
    }
    if (r->cmd_pid > 0 && !r->res->cmd_done) {
        int st;
        for (int k = 0; k < 100 && waitpid(r->cmd_pid, &st, WNOHANG) == 0; k++) {
            if (k == 0)
                progress_note(&r->pg, "waiting for %s to exit", r->req->cmd[0]);
            if (k == 60)
                kill(r->cmd_pid, SIGTERM);
            sleep_ms(100);
        }
        if (waitpid(r->cmd_pid, &st, WNOHANG) == 0) {
            kill(r->cmd_pid, SIGKILL);
            waitpid(r->cmd_pid, &st, 0);
        }
        r->res->cmd_done = true;
        r->res->cmd_status = st;
    }
    return rc;
}

/* Only alloc or only lock asked for: "no samples, is the JVM busy?" would mislead, for such
 * a run records no samples; nothing recorded means no allocation sampled, or no wait. */
static bool agent_modes_only(unsigned modes)
{
    return modes == CT_MODE_BIT(CT_MODE_ALLOC) || modes == CT_MODE_BIT(CT_MODE_LOCK);
}

/* Why did this sidecar not deliver a profile? Returns the exit code, err filled. */
static int run_failure(const sess *s, unsigned modes, bool stopping, flame_err *err)
{
    const proto *p = &s->t->pr;
    if (p->failed)
        return run_sidecar_error(s->t, err);
    if (s->stream_rc < 0 && s->stream_err.code != FLAME_EXIT_INTERRUPTED) {
        *err = s->stream_err;
        flame_wrap(err, "sidecar of %s", s->t->name);
        return err->code;
    }
    if (!p->done && s->t->target_exit >= 0)
        return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                          "container %s stopped during the profile (exit code %ld: its JVM "
                          "exited or was killed): nothing could be saved",
                          s->t->name, s->t->target_exit);
    char oom[256];
    if (!p->done && run_out_of_memory(s->t, oom, sizeof oom))
        return flame_fail(err, FLAME_EXIT_ERROR, "the sidecar of %s %s: nothing written%s",
                          s->t->name, oom,
                          s->t->restored ? "; what it left in the target was removed by "
                                           "`flame-sidecar restore`"
                                         : "");
    if (!p->done && s->t->exit_status == 137 && s->t->restored)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "the sidecar of %s was killed (SIGKILL): nothing written; what it "
                          "left in the target was removed by `flame-sidecar restore`",
                          s->t->name);
    if (!p->done && s->t->exit_status == 137)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "the sidecar of %s was killed (SIGKILL) before it could restore the "
                          "target: its agent mount /tmp/.docker-flame-* may remain in %s until "
                          "the container restarts; nothing written",
                          s->t->name, s->t->name);
    if (!p->done) {
        const char *last = s->tail_n ? s->tail[(s->tail_n - 1) % SESS_TAIL] : "";
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "the sidecar of %s stopped before finishing (exit status %ld)%s%s",
                          s->t->name, s->t->exit_status, *last ? ": " : "", last);
    }
    /* a profile of any mode is a result (--mode alloc records no CPU samples) */
    bool any = p->prof && profile_total(p->prof) > 0;
    for (int m = 0; m < CT_MODE_COUNT && !any; m++)
        any = p->mprof[m] && profile_total(p->mprof[m]) > 0;
    for (size_t ji = 0; !any && ji < p->njvms; ji++) /* nothing, and a mode refused: why */
        if (p->jvms[ji].refused) {
            char names[64], why[512];
            ct_modes_name(p->jvms[ji].refused, names, sizeof names);
            proto_sanitize(p->jvms[ji].refused_why, why, sizeof why);
            return flame_fail(err, FLAME_EXIT_PERF, "%s: --mode %s refused in JVM pid %u: %s",
                              s->t->name, names, p->jvms[ji].nspid,
                              why[0] ? why : "(no reason given)");
        }
    if (!any && agent_modes_only(modes))
        return flame_fail(
            err, FLAME_EXIT_ERROR, "%s: --mode %s: nothing recorded%s (%s): nothing written",
            s->t->name, modes & CT_MODE_BIT(CT_MODE_LOCK) ? "lock" : "alloc",
            stopping ? " before the stop" : "",
            modes & CT_MODE_BIT(CT_MODE_LOCK)
                ? "no thread waited for a monitor or a lock"
                : "the JVM allocated less than one sampling interval; try a longer -d");
    if (!any)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "no samples recorded in %s%s: nothing written (is the JVM busy? try a "
                          "longer -d)",
                          s->t->name, stopping ? " before the stop" : "");
    return 0;
}

/* Free what a sess holds (joins its thread); its run_target is the result's. */
static void sess_clear(sess *s)
{
    if (s->thread_started)
        sidecar_join(s, 5);
    demux_free(&s->dx);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}

int run_result_init(run_result *res, const run_req *req, flame_err *err)
{
    *res = (run_result){.n = req->n, .tm.t0 = req->t0 ? req->t0 : mono_s()};
    res->t = calloc(req->n > 0 ? (size_t)req->n : 1, sizeof *res->t);
    if (!res->t)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (int i = 0; i < req->n; i++) {
        run_target *t = &res->t[i];
        t->arg = req->targets[i];
        proto_init(&t->pr);
        t->exit_status = -1;
        t->target_exit = -1;
        t->why = (flame_err)FLAME_ERR_INIT;
    }
    return 0;
}

void run_result_free(run_result *res)
{
    for (int i = 0; res->t && i < res->n; i++) {
        proto_clear(&res->t[i].pr);
        free(res->t[i].target_id);
        free(res->t[i].sidecar_id);
    }
    free(res->t);
    res->t = NULL;
}

int run_profile(engine *e, const run_req *req, run_result *res, flame_err *err)
{
    run_ctx r = {.e = e, .req = req, .res = res, .n = res->n};
    res->tm.ping = mono_s();
    progress_init(&r.pg, stderr, req->quiet);
    r.s = calloc(r.n > 0 ? (size_t)r.n : 1, sizeof *r.s);
    if (!r.s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (int i = 0; i < r.n; i++) {
        sess *s = &r.s[i];
        s->t = &res->t[i];
        s->line_hook = req->line_hook;
        s->hook_ctx = req->hook_ctx;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->cond, NULL);
    }
    int rc = run_all(&r, err);
    bool stopping = res->interrupts > 0 || res->cmd_done;
    for (int i = 0; i < r.n; i++) {
        sess_clear(&r.s[i]);
        run_failure(&r.s[i], req->sidecar.modes, stopping, &res->t[i].why);
    }
    free(r.s);
    return rc;
}

bool run_out_of_memory(const run_target *t, char *buf, size_t cap)
{
    if (!t->oom_killed || t->exit_status != 137)
        return false;
    snprintf(buf, cap,
             "ran out of memory (its limit is %lld MiB; give it more with "
             "DOCKER_FLAME_SIDECAR_MEMORY, e.g. =2g: docs/SIDECAR.md \"Limits\")",
             t->memory >> 20);
    return true;
}

const char *const run_timing_names[RUN_TIMINGS] = {"ping",           "inspect",
                                                   "image",          "create",
                                                   "start",          "start_to_recording",
                                                   "recording",      "recording_to_profile",
                                                   "profile_stream", "remove",
                                                   "write",          "total"};

void run_timings_ms(const run_result *res, double t_written, double out[RUN_TIMINGS])
{
    /* Recording start = first P line's arrival minus its elapsed_ms; the end is the start plus
     * the last P line's elapsed_ms. With several targets, the latest of each. */
    const run_times *t = &res->tm;
    double rec_start = 0, rec_end = 0, first_f = 0;
    for (int i = 0; i < res->n; i++) {
        const run_target *g = &res->t[i];
        if (g->t_first_p) {
            double st = g->t_first_p - (double)g->first_p_elapsed_ms / 1000;
            double en = st + (double)g->pr.prog.elapsed_ms / 1000;
            if (st > rec_start)
                rec_start = st;
            if (en > rec_end)
                rec_end = en;
        }
        if (g->t_first_f > first_f)
            first_f = g->t_first_f;
    }
    double v[RUN_TIMINGS] = {
        t->ping - t->t0,
        t->inspect - t->ping,
        t->image - t->inspect,
        t->create - t->image,
        t->start - t->create,
        rec_start ? rec_start - t->start : 0,
        rec_start ? rec_end - rec_start : 0,
        first_f && rec_end ? first_f - rec_end : 0,
        first_f ? t->streams_done - first_f : 0,
        t->removed - t->streams_done,
        t_written - t->removed,
        t_written - t->t0,
    };
    for (int i = 0; i < RUN_TIMINGS; i++)
        out[i] = v[i] * 1000;
}
