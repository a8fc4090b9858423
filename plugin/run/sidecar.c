/* One target and its sidecar container, from inspect to removal: create it (the contract's
 * argv, plugin/run/spec.c), attach to its output before starting it (one thread reads the stream),
 * signal it, and remove it on every path (gracefully while it runs, so that it can undo what it
 * did in the target). A sidecar killed by SIGKILL is followed by a restore sidecar. */
#include "plugin/run/sidecar.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "plugin/run/signals.h"
#include "plugin/run/spec.h"

#define ATTACH_TIMEOUT_S 30.0
#define STOP_GRACE_S 20.0 /* SIGTERM -> exit: the sidecar restores the target */

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
        bool had_s = s->pr.have_summary;
        if (!s->line_hook || !s->line_hook(s->hook_ctx, line, len))
            rc = proto_line(&s->pr, line, len, err);
        double now = mono_s();
        if (!had_p && s->pr.progress) {
            s->t_first_p = now;
            s->first_p_elapsed_ms = (long long)s->pr.prog.elapsed_ms;
        }
        if ((f == 0 && s->pr.f_lines) || (!had_s && s->pr.have_summary)) {
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
    s->t_attached = mono_s();
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
    s->t_done = mono_s();
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    sess_wake(); /* the main loop notices the end of this stream */
    return NULL;
}

/* A container started --pid host or --pid container:X shares another PID namespace; the
 * sidecar joins the same one (moby joins the donor's), where the host's or the donor's
 * processes live too. Refused before anything is created, unless --shared-pid: the sidecar then
 * keeps to the target's own processes (docs/HARDENING.md "Shared PID namespaces"). */
static int shared_pid_refused(run_ctx *r, sess *s, json_t *inspect, flame_err *err)
{
    const char *mode =
        json_string_value(json_object_get(json_object_get(inspect, "HostConfig"), "PidMode"));
    if (!mode || !*mode || !strcmp(mode, "private") || r->o->shared_pid)
        return 0;
    char shown[160];
    proto_sanitize(mode, shown, sizeof shown);
    return flame_fail(err, FLAME_EXIT_USAGE,
                      "container %s shares %s PID namespace (--pid %s): a profile would reach "
                      "processes outside it; add --shared-pid to profile only its own processes",
                      s->arg, strcmp(mode, "host") ? "another container's" : "the host's", shown);
}

int sidecar_inspect_target(run_ctx *r, sess *s, flame_err *err)
{
    if (r->o->host) { /* the whole host: no container to inspect */
        s->target_id = strdup("host");
        snprintf(s->name, sizeof s->name, "host");
        return s->target_id ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
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
    } else if ((rc = shared_pid_refused(r, s, j, err)) == 0) {
        s->target_id = strdup(id);
        const char *image =
            json_string_value(json_object_get(json_object_get(j, "Config"), "Image"));
        snprintf(s->image, sizeof s->image, "%s", image ? image : "");
        snprintf(s->name, sizeof s->name, "%s",
                 name && name[0] == '/' ? name + 1
                 : name                 ? name
                                        : s->arg);
    }
    json_decref(j);
    return rc;
}

int sidecar_create(run_ctx *r, sess *s, flame_err *err)
{
    const char *owner = getenv("FLAME_TEST_OWNER");
    /* The one limit a run can reach (plugin/spec.h); a bad value is the user's to fix. */
    const char *mem = getenv("DOCKER_FLAME_SIDECAR_MEMORY");
    s->memory = SPEC_MEMORY_DEFAULT;
    if (mem && *mem && spec_memory_parse(mem, &s->memory, err) < 0)
        return -1;
    long long test_tmpfs = 0;
    const char *tt = getenv("DOCKER_FLAME_SIDECAR_TEST_TMPFS");
    flame_err ignored = FLAME_ERR_INIT;
    if (tt && *tt && spec_memory_parse(tt, &test_tmpfs, &ignored) < 0)
        test_tmpfs = 0;
    spec_args a = {.image = r->image_id[0] ? r->image_id : spec_image(),
                   .target_id = s->target_id,
                   .owner_pid = (long)getpid(),
                   .run_id = spec_run_id(),
                   .created = (long long)time(NULL),
                   .caps = getenv("DOCKER_FLAME_SIDECAR_CAPS"),
                   .test_owner = owner,
                   .test_stop = getenv("DOCKER_FLAME_SIDECAR_TEST_STOP"),
                   .test_no_perfmon = getenv("DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON") != NULL};
    ct_args_default(&a.cmd, r->o->host ? CT_HOST : r->o->top ? CT_TOP : CT_RECORD);
    a.host = r->o->host;
    a.cmd.attach_ids = r->o->attach_ids;
    a.cmd.duration_ms = r->o->duration_ms;
    a.cmd.interval_ms = r->o->interval_ms;
    a.cmd.last_window = r->o->last_window;
    a.cmd.frequency = r->o->frequency;
    a.cmd.pid = r->o->pid;
    a.cmd.no_inline = r->o->no_inline;
    a.cmd.signatures = r->o->signatures;
    a.cmd.sampling = r->o->sampling;
    a.cmd.kernel = r->o->kernel;
    /* the sidecar tells the target's own processes by this id (its cgroup) */
    a.cmd.target = r->o->host ? NULL : s->target_id;
    a.memory = s->memory;
    a.test_tmpfs = test_tmpfs;
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

int sidecar_start(run_ctx *r, sess *s, flame_err *err)
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
    while (!s->attached && !s->stream_done && !sess_interrupted())
        if (pthread_cond_timedwait(&s->cond, &s->lock, &dl) == ETIMEDOUT)
            break;
    bool attached = s->attached, done = s->stream_done;
    flame_err serr = s->stream_err;
    pthread_mutex_unlock(&s->lock);
    if (!attached) {
        if (sess_interrupted())
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

void sidecar_signal(run_ctx *r, sess *s, const char *sig)
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
int sidecar_remove(run_ctx *r, sess *s, flame_err *err)
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
        s->oom_killed = json_is_true(json_object_get(state, "OOMKilled"));
    } else if (st == 404) {
        s->removed = true;
        return 0;
    }
    json_decref(j);
    if (running) {
        /* SIGTERM: the sidecar undoes its changes in the target, then exits (PROTOCOL.md). */
        sidecar_signal(r, s, "SIGTERM");
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
        sleep_ms(100);
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

void sidecar_join(sess *s, double timeout_s)
{
    if (!s->thread_started)
        return;
    double end = mono_s() + timeout_s;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        bool done = s->stream_done;
        pthread_mutex_unlock(&s->lock);
        if (done)
            break;
        if (mono_s() > end)
            s->cancel = 1; /* curl's progress callback aborts the transfer within ~1 s */
        sleep_ms(50);
    }
    pthread_join(s->thread, NULL);
    s->thread_started = false;
}

static void sidecar_target_gone(run_ctx *r, sess *s)
{
    json_t *j = NULL;
    long st = 0;
    flame_err e = FLAME_ERR_INIT;
    if (r->o->host) /* the host does not stop */
        return;
    if (!s->target_id ||
        engine_json(r->e, "GET", NULL, &j, &st, &e, "/containers/%s/json", s->target_id) < 0) {
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
void sidecar_target_gone_bounded(run_ctx *r, sess *s)
{
    for (int k = 0; k < 10 && s->target_exit < 0; k++) {
        if (k)
            sleep_ms(200);
        sidecar_target_gone(r, s);
    }
}

/* Creating or starting the sidecar failed. When the target stopped since it was inspected, the
 * engine's own message is about its runtime ("OCI runtime create failed: ... lstat
 * /proc/N/ns/pid: no such file or directory"): say what happened instead, with the exit code of
 * a target that is gone. Returns -1 (err replaced or kept). */
int sidecar_explain_stopped_target(run_ctx *r, sess *s, flame_err *err)
{
    if (err->code == FLAME_EXIT_INTERRUPTED)
        return -1;
    sidecar_target_gone(r, s);
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

bool sidecar_out_of_memory(const sess *s, char *buf, size_t cap)
{
    if (!s->oom_killed || s->exit_status != 137)
        return false;
    snprintf(buf, cap,
             "ran out of memory (its limit is %lld MiB; give it more with "
             "DOCKER_FLAME_SIDECAR_MEMORY, e.g. =2g: docs/SIDECAR.md \"Limits\")",
             s->memory >> 20);
    return true;
}

/* A sidecar killed by SIGKILL could not undo its agent mount and map in the target: a short
 * `flame-sidecar restore` sidecar does (docs/HARDENING.md "Faults"). Bounded (30 s); best
 * effort: returns <0 with err set when it could not run. */
int sidecar_restore_target(engine *e, const char *target_id, flame_err *err)
{
    spec_args a = {.image = spec_image(),
                   .target_id = target_id,
                   .owner_pid = (long)getpid(),
                   .run_id = spec_run_id(),
                   .created = (long long)time(NULL),
                   .caps = getenv("DOCKER_FLAME_SIDECAR_CAPS"),
                   .test_owner = getenv("FLAME_TEST_OWNER")};
    ct_args_default(&a.cmd, CT_RESTORE);
    a.cmd.target = target_id;
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
            sleep_ms(100);
    }
    flame_err e3 = FLAME_ERR_INIT;
    engine_json(e, "DELETE", NULL, NULL, &st, &e3, "/containers/%s?force=1&v=1", id);
    if (rc == 0 && running)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "the restore sidecar did not finish within 30 s");
    return rc;
}

int sidecar_target_running(engine *e, const char *id)
{
    json_t *j = NULL;
    long st = 0;
    flame_err e2 = FLAME_ERR_INIT;
    if (engine_json(e, "GET", NULL, &j, &st, &e2, "/containers/%s/json", id) < 0)
        return st == 404 ? 0 : -1;
    int running = json_is_true(json_object_get(json_object_get(j, "State"), "Running"));
    json_decref(j);
    return running;
}

void sess_clear(sess *s)
{
    if (s->thread_started)
        sidecar_join(s, 5);
    proto_clear(&s->pr);
    demux_free(&s->dx);
    free(s->target_id);
    free(s->sidecar_id);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}
