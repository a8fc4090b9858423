/* Session lifecycle. The main thread drives everything (HTTP calls, signals, progress, the load
 * command); one thread per sidecar only reads its attach stream. Every sidecar that was created
 * is removed on every path: after a graceful stop when it still runs, so that the sidecar can
 * undo what it did in the target (mounts, files) before it goes. */
#include "plugin/session.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "plugin/image.h"
#include "plugin/spec.h"

#define ATTACH_TIMEOUT_S 30.0
#define STOP_GRACE_S 20.0 /* SIGTERM -> exit: the sidecar restores the target */
#define INTERRUPT_COALESCE_S 0.25
#define OVERRUN_S 60.0
#define STOP_DEADLINE_S 120.0 /* SIGINT -> profile delivered, at most */

/* ---- signals: count and wake the loop through a self-pipe ---- */

static void check_plugin_socket(void);

static volatile sig_atomic_t g_sigint, g_sigterm, g_sock_closed, g_any;
static int g_pipe[2] = {-1, -1};
static int g_plugin_sock = -1;

static void on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGINT)
        g_sigint++;
    else
        g_sigterm++;
    g_any = 1;
    if (g_pipe[1] >= 0) {
        ssize_t w = write(g_pipe[1], "s", 1);
        (void)w;
    }
    errno = saved;
}

int sess_signals_install(flame_err *err)
{
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* A closed pipe on stdout/stderr must not kill us before the sidecar is removed. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

void sess_plugin_socket_connect(void)
{
    const char *name = getenv("DOCKER_CLI_PLUGIN_SOCKET");
    if (!name || !*name)
        return;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n >= sizeof sa.sun_path)
        return;
    memcpy(sa.sun_path, name, n);
    /* "@name" is an abstract socket (Linux): a leading NUL in sun_path, no trailing one. */
    if (name[0] == '@')
        sa.sun_path[0] = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
        close(fd);
        return;
    }
    g_plugin_sock = fd;
}

bool sess_interrupted(void)
{
    return g_any != 0;
}

const volatile sig_atomic_t *sess_cancel_flag(void)
{
    return &g_any;
}

unsigned sess_event_count(void)
{
    check_plugin_socket();
    return (unsigned)(g_sigint + g_sigterm + g_sock_closed);
}

double sess_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The CLI closes its end when the user interrupts it (or when it dies). */
static void check_plugin_socket(void)
{
    if (g_plugin_sock < 0)
        return;
    char buf[64];
    ssize_t r = recv(g_plugin_sock, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close(g_plugin_sock);
        g_plugin_sock = -1;
        g_sock_closed++;
        g_any = 1;
    }
}

/* ---- one sidecar's attach stream ---- */

static void tail_add(sess *s, const char *line, size_t len)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%.*s", (int)(len < 255 ? len : 255), line);
    proto_sanitize(tmp, s->tail[s->tail_n % SESS_TAIL], sizeof s->tail[0]);
    s->tail_n++;
}

static int on_line(void *ud, int stream, const char *line, size_t len, flame_err *err)
{
    sess *s = ud;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (stream == 2) {
        tail_add(s, line, len);
        if (s->debug)
            fprintf(stderr, "docker-flame: debug: sidecar %s: %s\n", s->name,
                    s->tail[(s->tail_n - 1) % SESS_TAIL]);
    } else {
        bool had_p = s->pr.progress;
        unsigned long long f = s->pr.f_lines;
        bool had_s = s->pr.summary != NULL;
        if (!s->line_hook || !s->line_hook(s->hook_ctx, line, len))
            rc = proto_line(&s->pr, line, len, err);
        double now = sess_now();
        if (!had_p && s->pr.progress) {
            s->t_first_p = now;
            s->first_p_elapsed_ms = s->pr.elapsed_ms;
        }
        if ((f == 0 && s->pr.f_lines) || (!had_s && s->pr.summary)) {
            if (!s->t_first_f)
                s->t_first_f = now;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int on_data(void *ud, const char *buf, size_t len, flame_err *err)
{
    sess *s = ud;
    return demux_feed(&s->dx, buf, len, err);
}

static void on_open(void *ud, long status)
{
    (void)status;
    sess *s = ud;
    pthread_mutex_lock(&s->lock);
    s->attached = true;
    s->t_attached = sess_now();
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void *stream_main(void *ud)
{
    sess *s = ud;
    char path[512];
    snprintf(path, sizeof path, "/containers/%s/attach?stream=1&stdout=1&stderr=1", s->sidecar_id);
    engine_req rq = {.method = "POST",
                     .path = path,
                     .on_data = on_data,
                     .on_open = on_open,
                     .ctx = s,
                     .cancel = &s->cancel};
    flame_err err = FLAME_ERR_INIT;
    int rc = engine_do(s->e, &rq, NULL, NULL, &err);
    if (rc == 0)
        rc = demux_finish(&s->dx, &err);
    pthread_mutex_lock(&s->lock);
    s->stream_done = true;
    s->stream_rc = rc;
    s->stream_err = err;
    s->t_done = sess_now();
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    ssize_t w = write(g_pipe[1], "t", 1); /* wake the main loop */
    (void)w;
    return NULL;
}

/* ---- engine steps ---- */

static int inspect_target(run_ctx *r, sess *s, flame_err *err)
{
    _cleanup_free_ char *esc = engine_escape(s->arg);
    json_t *j = NULL;
    long st = 0;
    if (!esc)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (engine_json(r->e, "GET", NULL, &j, &st, err, "/containers/%s/json", esc) < 0) {
        if (st == 404)
            return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                              "no such container: %s (see `docker ps`)", s->arg);
        return flame_wrap(err, "inspect %s", s->arg);
    }
    const char *id = json_string_value(json_object_get(j, "Id"));
    const char *name = json_string_value(json_object_get(j, "Name"));
    json_t *state = json_object_get(j, "State");
    const char *status = json_string_value(json_object_get(state, "Status"));
    int rc = 0;
    if (!id) {
        rc =
            flame_fail(err, FLAME_EXIT_ENGINE, "inspect %s: the engine's answer has no Id", s->arg);
    } else if (!json_is_true(json_object_get(state, "Running")) ||
               json_is_true(json_object_get(state, "Paused")) ||
               json_is_true(json_object_get(state, "Restarting"))) {
        rc = flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                        "container %s is not running (status: %s): start it first", s->arg,
                        status ? status : "unknown");
    } else {
        s->target_id = strdup(id);
        snprintf(s->name, sizeof s->name, "%s",
                 name && name[0] == '/' ? name + 1
                 : name                 ? name
                                        : s->arg);
    }
    json_decref(j);
    return rc;
}

static int create_sidecar(run_ctx *r, sess *s, flame_err *err)
{
    const char *owner = getenv("FLAME_TEST_OWNER");
    spec_args a = {.image = spec_image(),
                   .target_id = s->target_id,
                   .duration_s = r->o->duration_s,
                   .frequency = r->o->frequency,
                   .pid = r->o->pid,
                   .no_inline = r->o->no_inline,
                   .signatures = r->o->signatures,
                   .top = r->o->top,
                   .interval_ms = r->o->interval_ms,
                   .owner_pid = (long)getpid(),
                   .created = (long long)time(NULL),
                   .caps = getenv("DOCKER_FLAME_SIDECAR_CAPS"),
                   .test_owner = owner,
                   .test_stop = getenv("DOCKER_FLAME_SIDECAR_TEST_STOP")};
    json_t *spec = spec_sidecar(&a, err);
    if (!spec)
        return -1;
    json_t *resp = NULL;
    long st = 0;
    int rc = engine_json(r->e, "POST", spec, &resp, &st, err, "/containers/create");
    json_decref(spec);
    if (rc < 0) {
        json_decref(resp);
        if (st == 404)
            return flame_wrap(err, "create sidecar for %s: image %s missing", s->name,
                              spec_image());
        return flame_wrap(err, "create sidecar for %s", s->name);
    }
    const char *id = json_string_value(json_object_get(resp, "Id"));
    if (id)
        s->sidecar_id = strdup(id);
    json_decref(resp);
    if (!s->sidecar_id)
        return flame_fail(err, FLAME_EXIT_ENGINE, "create sidecar for %s: no Id in the answer",
                          s->name);
    s->created = true;
    return 0;
}

static int attach_and_start(run_ctx *r, sess *s, flame_err *err)
{
    s->e = r->e;
    s->debug = r->debug;
    demux_init(&s->dx, DEMUX_MAX_LINE, on_line, s);
    /* The stream thread must not take SIGINT/SIGTERM: the main thread's poll() does. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int prc = pthread_create(&s->thread, NULL, stream_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, prc, "thread");
    s->thread_started = true;

    /* Attach before start, so not one line of the stream is lost. Bounded wait. */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)ATTACH_TIMEOUT_S;
    pthread_mutex_lock(&s->lock);
    while (!s->attached && !s->stream_done && !g_any)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &dl) == ETIMEDOUT)
            break;
    bool attached = s->attached, done = s->stream_done;
    flame_err serr = s->stream_err;
    pthread_mutex_unlock(&s->lock);
    if (!attached) {
        if (g_any)
            return flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted");
        if (done) {
            *err = serr;
            return flame_wrap(err, "attach to the sidecar of %s refused", s->name);
        }
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "attach to the sidecar of %s: no answer from the engine in %.0f s",
                          s->name, ATTACH_TIMEOUT_S);
    }
    long st = 0;
    if (engine_json(r->e, "POST", NULL, NULL, &st, err, "/containers/%s/start", s->sidecar_id) < 0)
        return flame_wrap(err, "start sidecar for %s", s->name);
    s->started = true;
    return 0;
}

static void send_signal(run_ctx *r, sess *s, const char *sig)
{
    if (!s->started)
        return;
    pthread_mutex_lock(&s->lock);
    bool done = s->stream_done;
    pthread_mutex_unlock(&s->lock);
    if (done)
        return;
    flame_err e = FLAME_ERR_INIT;
    long st = 0;
    /* 409 = not running any more: it finished on its own meanwhile. */
    if (engine_json(r->e, "POST", NULL, NULL, &st, &e, "/containers/%s/kill?signal=%s",
                    s->sidecar_id, sig) < 0 &&
        st != 409 && st != 404 && r->debug)
        fprintf(stderr, "docker-flame: debug: kill %s %s: %s\n", s->name, sig, e.msg);
}

/* Stop (gracefully when it still runs) and remove one sidecar. Never fails silently: a sidecar
 * we could not remove is reported with its id. */
static int remove_sidecar(run_ctx *r, sess *s, flame_err *err)
{
    if (!s->created || s->removed)
        return 0;
    json_t *j = NULL;
    long st = 0;
    flame_err e = FLAME_ERR_INIT;
    bool running = false;
    if (engine_json(r->e, "GET", NULL, &j, &st, &e, "/containers/%s/json", s->sidecar_id) == 0) {
        json_t *state = json_object_get(j, "State");
        running = json_is_true(json_object_get(state, "Running"));
        if (!running && json_is_integer(json_object_get(state, "ExitCode")))
            s->exit_status = (long)json_integer_value(json_object_get(state, "ExitCode"));
    } else if (st == 404) {
        s->removed = true;
        return 0;
    }
    json_decref(j);
    if (running) {
        /* SIGTERM: the sidecar undoes its changes in the target, then exits (PROTOCOL.md). */
        send_signal(r, s, "SIGTERM");
        char path[256];
        snprintf(path, sizeof path, "/containers/%s/wait", s->sidecar_id);
        engine_req rq = {.method = "POST", .path = path, .timeout_ms = (long)(STOP_GRACE_S * 1000)};
        json_t *w = NULL;
        if (engine_do(r->e, &rq, &st, &w, &e) == 0 &&
            json_is_integer(json_object_get(w, "StatusCode")))
            s->exit_status = (long)json_integer_value(json_object_get(w, "StatusCode"));
        json_decref(w);
    }
    int drc = engine_json(r->e, "DELETE", NULL, NULL, &st, &e, "/containers/%s?force=1&v=1",
                          s->sidecar_id);
    /* 409 "removal already in progress": someone else removes it; wait until it is gone. */
    for (int k = 0; drc < 0 && st == 409 && k < 100; k++) {
        nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
        json_t *g = NULL;
        if (engine_json(r->e, "GET", NULL, &g, &st, &e, "/containers/%s/json", s->sidecar_id) < 0 &&
            st == 404)
            drc = 0;
        json_decref(g);
        if (st != 404)
            st = 409;
    }
    if (drc < 0 && st != 404)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "could not remove sidecar %.12s (%s): remove it with `docker flame gc`",
                          s->sidecar_id, e.msg);
    s->removed = true;
    return 0;
}

static void join_stream(sess *s, double timeout_s)
{
    if (!s->thread_started)
        return;
    double end = sess_now() + timeout_s;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        bool done = s->stream_done;
        pthread_mutex_unlock(&s->lock);
        if (done)
            break;
        if (sess_now() > end)
            s->cancel = 1; /* curl's progress callback aborts the transfer within ~1 s */
        nanosleep(&(struct timespec){0, 50 * 1000000}, NULL);
    }
    pthread_join(s->thread, NULL);
    s->thread_started = false;
}

/* ---- the load command ---- */

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

/* ---- the run ---- */

static void fill_items(run_ctx *r, progress_item *it)
{
    for (int i = 0; i < r->n; i++) {
        sess *s = &r->s[i];
        pthread_mutex_lock(&s->lock);
        it[i] = (progress_item){.name = s->name,
                                .elapsed_ms = s->pr.elapsed_ms,
                                .duration_ms = s->pr.duration_ms,
                                .samples = s->pr.samples,
                                .jvms = s->pr.njvms};
        if (s->stream_done)
            it[i].state = s->pr.done ? PS_DONE : PS_FAILED;
        else if (s->pr.f_lines || s->pr.summary || s->stop_sent)
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

static void check_target_gone(run_ctx *r, sess *s)
{
    json_t *j = NULL;
    long st = 0;
    flame_err e = FLAME_ERR_INIT;
    if (!s->target_id || engine_json(r->e, "GET", NULL, &j, &st, &e, "/containers/%s/json",
                                     s->target_id) < 0) {
        if (st == 404) {
            s->target_exit = 0; /* removed meanwhile */
            s->target_removed = true;
        }
        return;
    }
    json_t *state = json_object_get(j, "State");
    if (!json_is_true(json_object_get(state, "Running")))
        s->target_exit = (long)json_integer_value(json_object_get(state, "ExitCode"));
    json_decref(j);
}

/* The engine notices a dead target a moment after its processes (ours included) are gone:
 * ask for up to ~2 s. Only on the failure path. */
static void check_target_gone_bounded(run_ctx *r, sess *s)
{
    for (int k = 0; k < 10 && s->target_exit < 0; k++) {
        if (k)
            nanosleep(&(struct timespec){0, 200 * 1000000}, NULL);
        check_target_gone(r, s);
    }
}

/* Creating or starting the sidecar failed. When the target stopped since it was inspected, the
 * engine's own message is about its runtime ("OCI runtime create failed: ... lstat
 * /proc/N/ns/pid: no such file or directory"): say what happened instead, with the exit code of
 * a target that is gone. Returns -1 (err replaced or kept). */
static int explain_stopped_target(run_ctx *r, sess *s, flame_err *err)
{
    if (err->code == FLAME_EXIT_INTERRUPTED)
        return -1;
    check_target_gone(r, s);
    if (s->target_exit < 0)
        return -1;
    if (s->target_removed)
        return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                          "container %s was removed before its profile could start", s->name);
    return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                      "container %s stopped before its profile could start (exit code %ld): "
                      "start it again, then profile it",
                      s->name, s->target_exit);
}

/* A sidecar killed by SIGKILL could not undo its agent mount and map in the target: a short
 * `flame-sidecar restore` sidecar does (docs/HARDENING.md "Faults"). Bounded (30 s); best
 * effort: returns <0 with err set when it could not run. */
static int restore_target(engine *e, const char *target_id, flame_err *err)
{
    spec_args a = {.image = spec_image(),
                   .target_id = target_id,
                   .restore = true,
                   .owner_pid = (long)getpid(),
                   .created = (long long)time(NULL),
                   .caps = getenv("DOCKER_FLAME_SIDECAR_CAPS"),
                   .test_owner = getenv("FLAME_TEST_OWNER")};
    json_t *spec = spec_sidecar(&a, err);
    if (!spec)
        return -1;
    json_t *resp = NULL;
    long st = 0;
    int rc = engine_json(e, "POST", spec, &resp, &st, err, "/containers/create");
    json_decref(spec);
    const char *cid = rc == 0 ? json_string_value(json_object_get(resp, "Id")) : NULL;
    _cleanup_free_ char *id = cid ? strdup(cid) : NULL;
    json_decref(resp);
    if (!id)
        return rc < 0 ? -1 : flame_fail(err, FLAME_EXIT_ENGINE, "no Id for the restore sidecar");
    rc = engine_json(e, "POST", NULL, NULL, &st, err, "/containers/%s/start", id);
    bool running = rc == 0;
    for (int k = 0; running && k < 300; k++) { /* 30 s */
        json_t *j = NULL;
        flame_err e2 = FLAME_ERR_INIT;
        if (engine_json(e, "GET", NULL, &j, &st, &e2, "/containers/%s/json", id) < 0)
            break;
        running = json_is_true(json_object_get(json_object_get(j, "State"), "Running"));
        json_decref(j);
        if (running)
            nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
    }
    flame_err e3 = FLAME_ERR_INIT;
    engine_json(e, "DELETE", NULL, NULL, &st, &e3, "/containers/%s?force=1&v=1", id);
    if (rc == 0 && running)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "the restore sidecar did not finish within 30 s");
    return rc;
}

static bool any_recording(run_ctx *r)
{
    bool any = false;
    for (int i = 0; i < r->n && !any; i++) {
        pthread_mutex_lock(&r->s[i].lock);
        any = r->s[i].pr.progress || r->s[i].pr.f_lines || r->s[i].pr.summary;
        pthread_mutex_unlock(&r->s[i].lock);
    }
    return any;
}

static void stop_all(run_ctx *r, const char *sig)
{
    for (int i = 0; i < r->n; i++) {
        send_signal(r, &r->s[i], sig);
        r->s[i].stop_sent = true;
    }
}

static void follow(run_ctx *r)
{
    sig_atomic_t seen_int = 0, seen_term = 0, seen_sock = 0;
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
        check_plugin_socket();
        double now = sess_now();
        /* How a Ctrl-C reaches us (docker CLI 28, cmd/docker tryPluginRun): on a terminal the
         * kernel sends SIGINT to the whole process group and the CLI does nothing; without a
         * terminal the CLI only closes the plugin socket (once: later signals are not passed
         * on, and the third one makes the CLI SIGKILL us). Events closer than 0.25 s are one
         * interrupt, in case a CLI does both. */
        bool ev = false;
        if (g_sigint != seen_int) {
            seen_int = g_sigint;
            ev = true;
        }
        if (g_sock_closed != seen_sock) {
            seen_sock = g_sock_closed;
            ev = true;
        }
        if (ev && now - last_int >= INTERRUPT_COALESCE_S) {
            r->interrupts++;
            last_int = now;
        } else if (ev) {
            last_int = now;
        }
        if (g_sigterm != seen_term) {
            seen_term = g_sigterm;
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
        if (!stopping && r->o->duration_s > 0 && now > r->tm.start + r->o->duration_s + OVERRUN_S) {
            stopping = true;
            progress_note(&r->pg, "the sidecar did not stop after %.0f s: stopping it",
                          r->o->duration_s);
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
                progress_note(&r->pg, "%s", e.msg);
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

        struct pollfd p[2] = {{.fd = g_pipe[0], .events = POLLIN},
                              {.fd = g_plugin_sock, .events = POLLIN}};
        int np = g_plugin_sock >= 0 ? 2 : 1;
        if (poll(p, (nfds_t)np, 250) > 0 && (p[0].revents & POLLIN)) {
            char buf[64];
            while (read(g_pipe[0], buf, sizeof buf) > 0) {
            }
        }
    }
    progress_clear(&r->pg);
    free(items);
    free(prev);
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
        rc = inspect_target(r, &r->s[i], err);
    r->tm.inspect = sess_now();
    if (rc == 0 && g_any)
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted: nothing was recorded");
    if (rc == 0) {
        rc = image_ensure(r->e, &g_any, &r->image_imported, err);
        if (rc == 0 && r->image_imported)
            progress_note(&r->pg, "loaded the sidecar image %s into the engine", spec_image());
    }
    r->tm.image = sess_now();
    for (int i = 0; i < r->n && rc == 0; i++)
        if ((rc = create_sidecar(r, &r->s[i], err)) < 0)
            rc = explain_stopped_target(r, &r->s[i], err);
    r->tm.create = sess_now();
    for (int i = 0; i < r->n && rc == 0; i++)
        if ((rc = attach_and_start(r, &r->s[i], err)) < 0)
            rc = explain_stopped_target(r, &r->s[i], err);
    r->tm.start = sess_now();
    if (rc == 0) {
        if (g_any)
            r->interrupts = 2; /* interrupted during setup: abort, nothing recorded */
        follow(r);
        r->tm.streams_done = sess_now();
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
    } else if (rc < 0 && g_any && err->code != FLAME_EXIT_INTERRUPTED) {
        /* An error caused by our own cancellation reads as an interruption. */
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted: nothing was recorded");
    }
    /* A sidecar that ended without its D line: was it the target that went away (the JVM
     * exited or was killed, which kills every process of its PID namespace, ours too)? */
    for (int i = 0; i < r->n && !r->aborted; i++)
        if (r->s[i].started && !r->s[i].pr.done && !r->s[i].pr.err_code[0])
            check_target_gone_bounded(r, &r->s[i]);
    /* Undo, in reverse: stop/remove sidecars (graceful when still running), join streams. */
    for (int i = r->n - 1; i >= 0; i--) {
        sess *s = &r->s[i];
        flame_err e = FLAME_ERR_INIT;
        if (remove_sidecar(r, s, &e) < 0) {
            if (rc == 0 || err->code == FLAME_EXIT_INTERRUPTED) {
                *err = e;
                rc = -1;
            } else {
                progress_note(&r->pg, "%s", e.msg);
            }
        }
        join_stream(s, 5);
    }
    r->tm.removed = sess_now();
    /* A sidecar killed by SIGKILL (docker kill, OOM) while its target still runs left the agent
     * mount and map there: undo them with a restore sidecar. */
    for (int i = 0; i < r->n; i++) {
        sess *s = &r->s[i];
        if (!s->started || s->pr.done || s->exit_status != 137 || s->target_exit >= 0)
            continue;
        flame_err e = FLAME_ERR_INIT;
        if (restore_target(r->e, s->target_id, &e) == 0)
            s->restored = true;
        else
            progress_note(&r->pg, "could not restore %s after its sidecar was killed: %s",
                          s->name, e.msg);
    }
    if (r->cmd_pid > 0 && !r->cmd_done) {
        int st;
        for (int k = 0; k < 100 && waitpid(r->cmd_pid, &st, WNOHANG) == 0; k++) {
            if (k == 0)
                progress_note(&r->pg, "waiting for %s to exit", r->o->cmd[0]);
            if (k == 60)
                kill(r->cmd_pid, SIGTERM);
            nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
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

void sess_clear(sess *s)
{
    if (s->thread_started)
        join_stream(s, 5);
    proto_clear(&s->pr);
    demux_free(&s->dx);
    free(s->target_id);
    free(s->sidecar_id);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}

/* ---- gc ---- */

/* Is the plugin that created a sidecar still running here? kill(pid, 0) alone would keep a
 * killed plugin's sidecar forever once its pid is reused: the process must also be a
 * docker-flame and have started no later than the sidecar was created (label, unix time). */
static bool owner_alive(long opid, long long created)
{
    if (opid <= 0 || (kill((pid_t)opid, 0) != 0 && errno != EPERM))
        return false;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/comm", opid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true; /* no /proc to ask: trust the pid */
    bool ours = fgets(buf, sizeof buf, f) && !strncmp(buf, "docker-flame", 12);
    fclose(f);
    if (!ours)
        return false;
    /* start time: field 22 of /proc/<pid>/stat, in clock ticks after boot (btime in /proc/stat) */
    snprintf(path, sizeof path, "/proc/%ld/stat", opid);
    f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
    unsigned long long start = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                            "%*d %*d %llu",
                     &start) != 1)
        return true;
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "re");
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "btime %llu", &btime) == 1)
            break;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (!btime || hz <= 0 || created <= 0)
        return true;
    return (long long)(btime + start / (unsigned long long)hz) <= created + 1;
}

int sess_gc(engine *e, bool all, flame_err *err)
{
    json_t *list = NULL;
    long st = 0;
    /* filters={"label":["com.docker-flame.sidecar=1"]}, URL-encoded */
    if (engine_json(
            e, "GET", NULL, &list, &st, err,
            "/containers/json?all=1&filters=%%7B%%22label%%22%%3A%%5B%%22%s%%3D1%%22%%5D%%7D",
            SPEC_LABEL_SIDECAR) < 0)
        return flame_wrap(err, "list sidecars");
    size_t i;
    json_t *c;
    int removed = 0, kept = 0, failed = 0;
    json_array_foreach(list, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "Id"));
        const char *state = json_string_value(json_object_get(c, "State"));
        json_t *labels = json_object_get(c, "Labels");
        const char *owner = json_string_value(json_object_get(labels, SPEC_LABEL_OWNER));
        if (!id)
            continue;
        bool running = state && !strcmp(state, "running");
        /* A running sidecar whose plugin is alive (on this host) is someone's live profile. */
        long opid = owner ? strtol(owner, NULL, 10) : 0;
        const char *cr = json_string_value(json_object_get(labels, SPEC_LABEL_CREATED));
        bool alive = owner_alive(opid, cr ? strtoll(cr, NULL, 10) : 0);
        /* Not running but its owner alive: that plugin is between create and start, or
         * between exit and remove; it cleans up itself. */
        if (alive && !all) {
            kept++;
            continue;
        }
        run_ctx r = {.e = e};
        sess s = {.sidecar_id = (char *)id, .created = true, .started = running, .exit_status = -1};
        pthread_mutex_init(&s.lock, NULL);
        snprintf(s.name, sizeof s.name, "%.12s", id);
        flame_err e2 = FLAME_ERR_INIT;
        if (remove_sidecar(&r, &s, &e2) < 0) {
            fprintf(stderr, "docker flame gc: %s\n", e2.msg);
            failed++;
        } else {
            printf("removed sidecar %.12s%s\n", id, running ? " (was running)" : "");
            removed++;
            /* Killed (SIGKILL: "Exited (137)") it could not undo its work in the target. */
            const char *status = json_string_value(json_object_get(c, "Status"));
            const char *target = json_string_value(json_object_get(labels, SPEC_LABEL_TARGET));
            if (!running && status && !strncmp(status, "Exited (137)", 12) && target) {
                flame_err e3 = FLAME_ERR_INIT;
                if (restore_target(e, target, &e3) == 0)
                    printf("restored container %.12s (agent mount and map of the killed "
                           "sidecar removed)\n",
                           target);
                else
                    fprintf(stderr, "docker flame gc: could not restore container %.12s: %s\n",
                            target, e3.msg);
            }
        }
        pthread_mutex_destroy(&s.lock);
    }
    json_decref(list);
    printf("%d sidecar%s removed", removed, removed == 1 ? "" : "s");
    if (kept)
        printf(", %d kept: their docker flame is still running (--all removes them too)", kept);
    printf("\n");
    if (failed)
        return flame_fail(err, FLAME_EXIT_ENGINE, "%d sidecar%s could not be removed", failed,
                          failed == 1 ? "" : "s");
    return 0;
}
