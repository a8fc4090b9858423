/* Session lifecycle. The main thread drives everything (HTTP calls, signals, progress, the load
 * command); one thread per sidecar only reads its attach stream. Every sidecar that was created
 * is removed on every path: after a graceful stop when it still runs, so that the sidecar can
 * undo what it did in the target (mounts, files) before it goes. */
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
#define INTERRUPT_COALESCE_S 0.25
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

int sess_cmd_check(const char *cmd, flame_err *err)
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
    int rc = posix_spawnp(&pid, r->o->cmd[0], NULL, &at, r->o->cmd, environ);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return flame_fail_errno(err, FLAME_EXIT_USAGE, rc, "cannot run %s", r->o->cmd[0]);
    r->cmd_pid = pid;
    return 0;
}

int sess_sidecar_error(const sess *s, flame_err *err)
{
    const proto *p = &s->pr;
    char text[1024];
    proto_sanitize(p->err_text ? p->err_text : "", text, sizeof text);
    const char *name = s->name[0] ? s->name : s->arg;
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
        it[i] = (progress_item){.name = s->name,
                                .elapsed_ms = (long long)s->pr.prog.elapsed_ms,
                                .duration_ms = (long long)s->pr.prog.duration_ms,
                                .samples = (long long)s->pr.prog.samples,
                                .jvms = (long long)s->pr.prog.jvms};
        if (s->stream_done)
            it[i].state = s->pr.done ? PS_DONE : PS_FAILED;
        else if (s->pr.f_lines || s->pr.have_summary || s->stop_sent)
            it[i].state = PS_PROCESSING;
        else if (s->pr.progress)
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
        bool d = s->stream_done || (need_progress && s->pr.progress);
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
        any = r->s[i].pr.progress || r->s[i].pr.f_lines || r->s[i].pr.have_summary;
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
    unsigned seen_int = 0, seen_term = 0, seen_sock = 0;
    double last_int = -1e9, abort_at = 0, stop_at = 0;
    bool stopping = false, cmd_started = r->o->cmd == NULL;
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
        sess_signals sg;
        sess_signal_counts(&sg);
        double now = mono_s();
        /* How a Ctrl-C reaches us (docker CLI 28, cmd/docker tryPluginRun): on a terminal the
         * kernel sends SIGINT to the whole process group and the CLI does nothing; without a
         * terminal the CLI only closes the plugin socket (once: later signals are not passed
         * on, and the third one makes the CLI SIGKILL us). Events closer than 0.25 s are one
         * interrupt, in case a CLI does both. */
        bool ev = false;
        if (sg.sigint != seen_int) {
            seen_int = sg.sigint;
            ev = true;
        }
        if (sg.sock_closed != seen_sock) {
            seen_sock = sg.sock_closed;
            ev = true;
        }
        if (ev && now - last_int >= INTERRUPT_COALESCE_S) {
            r->interrupts++;
            last_int = now;
        } else if (ev) {
            last_int = now;
        }
        if (sg.sigterm != seen_term) {
            seen_term = sg.sigterm;
            r->interrupts = 2;
        }
        /* A first Ctrl-C before any sidecar records has nothing to save: "stop and write"
         * would only end in "no samples" (exit 1). It aborts (exit 130, nothing written). */
        if (r->interrupts == 1 && !stopping && !r->aborted && !any_recording(r)) {
            r->early = true;
            r->interrupts = 2;
        }
        if (r->interrupts >= 2 && !r->aborted) {
            r->aborted = true;
            progress_note(&r->pg, "aborting: removing the sidecars");
            stop_all(r, "SIGTERM");
            abort_at = now + STOP_GRACE_S;
            if (r->cmd_pid > 0 && !r->cmd_done)
                kill(r->cmd_pid, SIGTERM);
        } else if (r->interrupts == 1 && !stopping) {
            stopping = true;
            progress_note(&r->pg, "stopping early, the profile so far will be written (Ctrl-C "
                                  "again to abort)");
            stop_all(r, "SIGINT");
        }
        /* A sidecar that overruns its duration by a minute is asked to stop (and still
         * deliver); the user can always abort with a second Ctrl-C. */
        double dur_s = (double)r->o->duration_ms / 1000;
        if (!stopping && dur_s > 0 && now > r->tm.start + dur_s + OVERRUN_S) {
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
            r->interrupts = 2;
            continue;
        }
        if (r->aborted && now > abort_at)
            for (int i = 0; i < r->n; i++)
                r->s[i].cancel = 1;

        /* The load command: start it once every sidecar records; stop them when it ends. */
        if (!cmd_started && !stopping && all_done(r, true)) {
            flame_err e = FLAME_ERR_INIT;
            if (spawn_cmd(r, &e) < 0) {
                /* checked before anything started (sess_cmd_check): gone since, or PATH lied */
                r->cmd_error = e;
                r->cmd_done = true;
                r->cmd_status = 127 << 8;
                stopping = true;
                stop_all(r, "SIGINT");
            }
            cmd_started = true;
        }
        if (r->cmd_pid > 0 && !r->cmd_done) {
            int st;
            if (waitpid(r->cmd_pid, &st, WNOHANG) == r->cmd_pid) {
                r->cmd_done = true;
                r->cmd_status = st;
                if (!stopping) {
                    stopping = true;
                    progress_note(&r->pg, "%s exited: stopping the recording", r->o->cmd[0]);
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

        struct pollfd p[2] = {{.fd = sess_wake_fd(), .events = POLLIN},
                              {.fd = sess_plugin_sock_fd(), .events = POLLIN}};
        int np = p[1].fd >= 0 ? 2 : 1;
        if (poll(p, (nfds_t)np, 250) > 0 && (p[0].revents & POLLIN))
            sess_drain_wake();
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
    const char *p = r->o->attach_ids;
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
                snprintf(s->restore_why, sizeof s->restore_why, "container %.12s: %.160s", id,
                         e.msg);
            all = false;
            progress_note(&r->pg,
                          "could not restore container %.12s after the host sidecar was "
                          "killed: %s",
                          id, e.msg);
        }
        p += l + (p[l] == ',');
    }
    s->restored = all;
}

int run_profile(run_ctx *r, flame_err *err)
{
    int rc = 0;
    for (int i = 0; i < r->n; i++) {
        pthread_mutex_init(&r->s[i].lock, NULL);
        pthread_cond_init(&r->s[i].cond, NULL);
        proto_init(&r->s[i].pr);
        r->s[i].exit_status = -1;
        r->s[i].target_exit = -1;
    }
    for (int i = 0; i < r->n && rc == 0; i++)
        rc = sidecar_inspect_target(r, &r->s[i], err);
    r->tm.inspect = mono_s();
    if (rc == 0 && sess_interrupted())
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted: nothing was recorded");
    if (rc == 0) {
        rc = image_ensure(r->e, sess_cancel_flag(), &r->image_imported, r->image_id, err);
        if (rc == 0 && r->image_imported)
            progress_note(&r->pg, "loaded the sidecar image %s into the engine", spec_image());
    }
    r->tm.image = mono_s();
    for (int i = 0; i < r->n && rc == 0; i++)
        if ((rc = sidecar_create(r, &r->s[i], err)) < 0)
            rc = sidecar_explain_stopped_target(r, &r->s[i], err);
    r->tm.create = mono_s();
    for (int i = 0; i < r->n && rc == 0; i++)
        if ((rc = sidecar_start(r, &r->s[i], err)) < 0)
            rc = sidecar_explain_stopped_target(r, &r->s[i], err);
    r->tm.start = mono_s();
    if (rc == 0) {
        if (sess_interrupted())
            r->interrupts = 2; /* interrupted during setup: abort, nothing recorded */
        follow(r);
        r->tm.streams_done = mono_s();
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
    } else if (rc < 0 && sess_interrupted() && err->code != FLAME_EXIT_INTERRUPTED) {
        /* An error caused by our own cancellation reads as an interruption. */
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted: nothing was recorded");
    }
    /* A sidecar that ended without its D line: was it the target that went away (the JVM
     * exited or was killed, which kills every process of its PID namespace, ours too)? */
    for (int i = 0; i < r->n && !r->aborted; i++)
        if (r->s[i].started && !r->s[i].pr.done && !r->s[i].pr.failed)
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
    r->tm.removed = mono_s();
    /* A sidecar killed by SIGKILL (docker kill, OOM) while its target still runs left the agent
     * mount and map there: undo them with a restore sidecar. */
    for (int i = 0; i < r->n; i++) {
        sess *s = &r->s[i];
        if (!s->started || s->pr.done || s->exit_status != 137 || s->target_exit >= 0)
            continue;
        if (r->o->host) { /* host: a restore sidecar in each container it may have injected */
            restore_host_targets(r, s);
            continue;
        }
        flame_err e = FLAME_ERR_INIT;
        if (sidecar_restore_target(r->e, s->target_id, &e) == 0)
            s->restored = true;
        else
            progress_note(&r->pg, "could not restore %s after its sidecar was killed: %s", s->name,
                          e.msg);
    }
    if (r->cmd_pid > 0 && !r->cmd_done) {
        int st;
        for (int k = 0; k < 100 && waitpid(r->cmd_pid, &st, WNOHANG) == 0; k++) {
            if (k == 0)
                progress_note(&r->pg, "waiting for %s to exit", r->o->cmd[0]);
            if (k == 60)
                kill(r->cmd_pid, SIGTERM);
            sleep_ms(100);
        }
        if (waitpid(r->cmd_pid, &st, WNOHANG) == 0) {
            kill(r->cmd_pid, SIGKILL);
            waitpid(r->cmd_pid, &st, 0);
        }
        r->cmd_done = true;
        r->cmd_status = st;
    }
    return rc;
}

/* Why did this sidecar not deliver a profile? Returns the exit code, err filled. */
int run_failure(const sess *s, bool stopping, flame_err *err)
{
    const proto *p = &s->pr;
    if (p->failed)
        return sess_sidecar_error(s, err);
    if (s->stream_rc < 0 && s->stream_err.code != FLAME_EXIT_INTERRUPTED) {
        *err = s->stream_err;
        flame_wrap(err, "sidecar of %s", s->name);
        return err->code;
    }
    if (!p->done && s->target_exit >= 0)
        return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                          "container %s stopped during the profile (exit code %ld: its JVM "
                          "exited or was killed): nothing could be saved",
                          s->name, s->target_exit);
    char oom[256];
    if (!p->done && sidecar_out_of_memory(s, oom, sizeof oom))
        return flame_fail(err, FLAME_EXIT_ERROR, "the sidecar of %s %s: nothing written%s", s->name,
                          oom,
                          s->restored ? "; what it left in the target was removed by "
                                        "`flame-sidecar restore`"
                                      : "");
    if (!p->done && s->exit_status == 137 && s->restored)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "the sidecar of %s was killed (SIGKILL): nothing written; what it "
                          "left in the target was removed by `flame-sidecar restore`",
                          s->name);
    if (!p->done && s->exit_status == 137)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "the sidecar of %s was killed (SIGKILL) before it could restore the "
                          "target: its agent mount /tmp/.docker-flame-* may remain in %s until "
                          "the container restarts; nothing written",
                          s->name, s->name);
    if (!p->done) {
        const char *last = s->tail_n ? s->tail[(s->tail_n - 1) % SESS_TAIL] : "";
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "the sidecar of %s stopped before finishing (exit status %ld)%s%s",
                          s->name, s->exit_status, *last ? ": " : "", last);
    }
    if (!p->prof || profile_total(p->prof) <= 0)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "no samples recorded in %s%s: nothing written (is the JVM busy? try a "
                          "longer -d)",
                          s->name, stopping ? " before the stop" : "");
    return 0;
}
