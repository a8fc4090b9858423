/* One container's recorder (plugin/record.h): the ordinary run (plugin/run/run.h) runs the
 * contract's `top` verb, which streams one window of folded stacks per --window; every completed
 * window is handed, as it completes, to the recorder's writer thread, which stores it in the
 * profile store (store/store.h) with its labels, one window per JVM of the container
 * (plugin/record_split.h); the stream never waits for the store: a hung server or a busy file
 * would stall the sidecar's stream. The window an interrupt cuts short is stored too, and the
 * writer compacts the store hourly. A window in which nothing ran is stored as
 * empty, never skipped: `show --timeline` then shows the quiet time as quiet, not as a gap.
 * Around it, the container's life: waited for while stopped, recorded again when it runs again
 * (restarted, or recreated under its name), the recording ended when it is removed; and the
 * engine's: waited for while it does not answer (a restart), our dead sidecar swept afterwards. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/contract.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/engine/engine.h"
#include "plugin/run/proto.h"
#include "plugin/record.h"
#include "plugin/record_split.h"
#include "plugin/run/run.h"
#include "plugin/run/signals.h"
#include "plugin/run/spec.h"
#include "plugin/stored.h"
#include "plugin/run/sweep.h"
#include "plugin/top.h"
#include "plugin/inputs.h"

/* Retry pacing once the recording has run: a sidecar that fails again and again (no JVM yet
 * after a restart) is retried at most this often. */
#define REC_RETRY_MAX_MS 30000
/* How often a recorder compacts the store (docs/STORE.md, "Retention and compaction"): windows
 * older than an hour become 1-minute buckets, so an hour is what waits to be merged. */
#define REC_COMPACT_EVERY_MS (3600LL * 1000)
/* Windows waiting for the writer at most (a put that times out takes 15 s: 15 1-s windows;
 * then the store spools without trying the server for 30 s). Beyond, the oldest is dropped. */
#define REC_QUEUE_MAX 64

/* A window on its way to the store: copies (the stream's profile is the model's), one window
 * per JVM of the container, stored in one put. */
typedef struct rec_item {
    store_window *w;
    size_t nw;
    uint64_t samples;                /* of all its windows (the registry's count) */
    uint64_t by_mode[CT_MODE_COUNT]; /* ... per profile type, in its unit */
    char label[256];
    uint64_t n; /* its number in the recording, for messages */
} rec_item;

static void item_free(rec_item *it)
{
    for (size_t i = 0; i < it->nw; i++)
        store_window_free(&it->w[i]);
    free(it->w);
    it->w = NULL;
    it->nw = 0;
}

typedef struct rec_target {
    top_model m;
    const run_target *s; /* while a run goes on: what its sidecar gave so far */
    store *st;
    const rec_args *a;
    rec_link *link;
    const char *arg;
    char host[256];
    char label[256]; /* for messages: the container's name once known, else what the user typed */
    char state[32];  /* last state announced (registry and messages) */
    bool ever_ready; /* recorded or waited once: from then on, failures are waited out */
    bool ended;
    char why[256];      /* how it ended, for `docker flame ps` */
    int exit_code;      /* why its recording ended, when not by an interrupt */
    uint64_t handed;    /* windows handed to the writer (the stream thread's count) */
    pthread_mutex_t qm; /* guards the queue, the counts below and the registry entry */
    pthread_cond_t qc;
    pthread_t writer;
    bool writer_on, closing;
    rec_item q[REC_QUEUE_MAX];
    size_t qhead, qn;
    uint64_t windows, samples, spooled, failed;
    uint64_t by_mode[CT_MODE_COUNT]; /* samples per profile type, in its unit */
    bool refusal_said;               /* a mode refused while another records: said once */
    int64_t compacted_ms;            /* when this recorder last compacted the store (0: not yet) */
} rec_target;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("docker flame record: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void reg_save(rec_target *t)
{
    rec_reg *r = t->link ? t->link->reg : NULL;
    if (!r)
        return;
    pthread_mutex_lock(&t->qm);
    snprintf(r->e.state, sizeof r->e.state, "%s", t->state);
    r->e.windows = t->windows;
    r->e.samples = t->samples;
    if (t->s && t->s->name[0])
        snprintf(r->e.name, sizeof r->e.name, "%s", t->s->name);
    if (t->s && t->s->target_id)
        snprintf(r->e.container_id, sizeof r->e.container_id, "%s", t->s->target_id);
    flame_err err = FLAME_ERR_INIT;
    int rc = recs_update(r, &err);
    pthread_mutex_unlock(&t->qm);
    if (rc < 0)
        note("%s: %s (docker flame ps may show an older state)", t->label, err.msg);
}

/* The recording runs (or waits for its container): tell a waiting `record --detach`, and from
 * now on write messages into the recording's log instead of the terminal that is about to go. */
static void rec_ready(rec_target *t)
{
    t->ever_ready = true;
    rec_link *l = t->link;
    if (!l || l->ready_fd < 0)
        return;
    ssize_t w = write(l->ready_fd, "R", 1);
    (void)w; /* the command may have gone: nothing to tell then */
    close(l->ready_fd);
    l->ready_fd = -1;
    if (l->log_fd >= 0) {
        fflush(stderr);
        dup2(l->log_fd, STDERR_FILENO);
        close(l->log_fd);
        l->log_fd = -1;
    }
}

static void set_state(rec_target *t, const char *state)
{
    if (!strcmp(t->state, state))
        return;
    snprintf(t->state, sizeof t->state, "%s", state);
    reg_save(t);
}

/* The stream thread sees every line first: the first progress line (`P`, sent once the
 * sidecar's recorder runs: JVMs found and attached, perf events open) means the recording works;
 * a `T` (a window) all the more. A `record --detach` returns then, not a whole window later. */
static int rec_line(void *ctx, const run_target *tg, const char *line, size_t len)
{
    rec_target *t = ctx;
    (void)tg; /* t->s */
    if (!t->ever_ready && len > 0 && (line[0] == 'P' || line[0] == 'T'))
        rec_ready(t);
    /* the sidecar's warnings (what a recording does without: `--mode lock` without its
     * java.util.concurrent waits, a refused in-kernel filter) as they come, one line each; the
     * run keeps them too */
    if (len > 2 && line[0] == 'W' && !t->a->quiet) {
        char raw[1024], clean[1024];
        snprintf(raw, sizeof raw, "%.*s", (int)(len - 2 < 1000 ? len - 2 : 1000), line + 2);
        proto_sanitize(raw, clean, sizeof clean);
        note("%s: warning: %s", t->label, clean);
    }
    return top_model_line(&t->m, line, len);
}

/* What the recording's windows measure, as stored (docs/STORE.md "Profile types"): each mode
 * asked for (cmd_record.c: any of cpu, wall, offcpu, alloc and lock), a window of each per
 * interval; the first names the recording in messages. */
static const char *rec_type(const ct_args *a)
{
    unsigned m = ct_modes_of(a);
    for (int i = 0; i < CT_MODE_COUNT; i++)
        if (m & CT_MODE_BIT(i))
            return ct_mode_names[i];
    return "cpu";
}

/* "1,234 samples, 5,678 bytes": each asked mode's count in its unit (ct_mode_info); a unit
 * that another asked mode shares names its mode ("2,000 ns offcpu, 3,000 ns wall"). */
static void rec_counts(const ct_args *a, const uint64_t *by_mode, char *buf, size_t cap)
{
    unsigned m = ct_modes_of(a) ? ct_modes_of(a) : CT_MODE_BIT(CT_MODE_CPU);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < CT_MODE_COUNT; i++) {
        if (!(m & CT_MODE_BIT(i)))
            continue;
        const char *unit = ct_mode((enum ct_mode)i)->unit;
        bool shared = false;
        for (int j = 0; j < CT_MODE_COUNT; j++)
            if (j != i && (m & CT_MODE_BIT(j)) && !strcmp(ct_mode((enum ct_mode)j)->unit, unit))
                shared = true;
        char n[32];
        int w = snprintf(buf + len, cap - len, "%s%s %s%s%s", len ? ", " : "",
                         count_grouped((double)by_mode[i], n, sizeof n), unit, shared ? " " : "",
                         shared ? ct_mode_names[i] : "");
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
}

/* A mode refused by every JVM while another mode records (--mode cpu,alloc, another profiler
 * holding the allocation sampler): said once; the other mode's windows are stored. */
static void say_refused(rec_target *t)
{
    if (t->refusal_said)
        return;
    for (size_t ji = 0; ji < t->s->pr.njvms; ji++) {
        const ct_jvm *jv = &t->s->pr.jvms[ji];
        if (!jv->refused)
            continue;
        char names[64], why[256];
        ct_modes_name(jv->refused, names, sizeof names);
        proto_sanitize(jv->refused_why, why, sizeof why);
        note("%s: --mode %s refused in JVM pid %u: %s (the other modes are stored)", t->label,
             names, jv->nspid, why[0] ? why : "(no reason given)");
        t->refusal_said = true;
    }
}

/* top_model.on_window: the stream thread, with the session's and the model's locks held. The
 * window is copied and queued for the writer: nothing here waits for the store. */
static void store_window_cb(void *ctx, const top_win *w)
{
    rec_target *t = ctx;
    if (t->s->name[0])
        snprintf(t->label, sizeof t->label, "%s", t->s->name);
    /* The sidecar reports the window's end on CLOCK_MONOTONIC, the host's own clock (a container
     * shares it): its wall-clock time is now minus how long ago that was. */
    int64_t now = wall_ms(), end = now;
    if (w->end_mono_ms > 0 && w->end_mono_ms <= mono_ms())
        end = now - (mono_ms() - w->end_mono_ms);
    int64_t len = w->ms > 0 ? w->ms : 1;
    /* each JVM of the container a series of its own (labelled with its pid and version): the
     * window split by the root frame the sidecar gives each JVM's stacks */
    flame_err err = FLAME_ERR_INIT;
    rec_item it = {.n = ++t->handed};
    snprintf(it.label, sizeof it.label, "%s", t->label);
    say_refused(t);
    unsigned modes = ct_modes_of(&t->a->rec) ? ct_modes_of(&t->a->rec) : CT_MODE_BIT(CT_MODE_CPU);
    int rc = 0;
    size_t cap = 0;
    for (int m = 0; rc == 0 && m < CT_MODE_COUNT; m++)
        if ((modes & CT_MODE_BIT(m)) && w->p[m])
            cap += REC_SPLIT_MAX;
    if (cap && !(it.w = calloc(cap, sizeof *it.w)))
        rc = -1;
    /* one stored window per mode that has stacks in this interval, each JVM's of its own */
    for (int m = 0; rc == 0 && m < CT_MODE_COUNT; m++) {
        if (!(modes & CT_MODE_BIT(m)) || !w->p[m])
            continue;
        rec_part parts[REC_SPLIT_MAX];
        size_t n = 0;
        rc = rec_split(w->p[m], t->s->pr.jvms, t->s->pr.njvms, t->a->rec.pid, parts, &n, &err);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            double total = profile_total(parts[i].p);
            store_window sw = {.host = t->host,
                               .container_id = t->s->target_id,
                               .container_name = t->s->name,
                               .image = t->s->image,
                               .jvm_pid = parts[i].pid,
                               .jvm_version = parts[i].version,
                               .start_ms = end - len,
                               .end_ms = end,
                               .frequency = t->a->rec.frequency,
                               .samples = total > 0 ? (uint64_t)total : 0,
                               .stacks = parts[i].p,
                               .type = ct_mode_names[m]};
            if ((rc = store_window_copy(&sw, &it.w[it.nw])) == 0) {
                it.nw++;
                it.samples += sw.samples;
                it.by_mode[m] += sw.samples;
            }
        }
        rec_split_free(parts, n);
    }
    if (rc < 0) {
        item_free(&it);
        pthread_mutex_lock(&t->qm);
        t->failed++;
        pthread_mutex_unlock(&t->qm);
        note("%s: window %llu not stored: out of memory", t->label, (unsigned long long)it.n);
        return;
    }
    uint64_t dropped = 0;
    pthread_mutex_lock(&t->qm);
    if (t->qn == REC_QUEUE_MAX) {
        rec_item *old = &t->q[t->qhead];
        dropped = old->n;
        item_free(old);
        t->qhead = (t->qhead + 1) % REC_QUEUE_MAX;
        t->qn--;
        t->failed++;
    }
    t->q[(t->qhead + t->qn++) % REC_QUEUE_MAX] = it;
    pthread_cond_signal(&t->qc);
    snprintf(t->state, sizeof t->state, "recording");
    pthread_mutex_unlock(&t->qm);
    if (dropped)
        note("%s: window %llu not stored: the store is %d windows behind (the oldest goes)",
             t->label, (unsigned long long)dropped, REC_QUEUE_MAX);
    reg_save(t);
}

/* The store kept bounded as `docker flame prune` does, hourly (the first time an hour after the
 * start: a short recording never compacts), by the writer thread: the stream does not wait for
 * it (seconds on a week of windows); the windows meanwhile wait in the queue. */
static void compact_hourly(rec_target *t, int put_rc, const char *label)
{
    int64_t now = wall_ms();
    if (!t->compacted_ms)
        t->compacted_ms = now;
    if (put_rc != 0 || now - t->compacted_ms < REC_COMPACT_EVERY_MS)
        return;
    t->compacted_ms = now;
    flame_err ce = FLAME_ERR_INIT;
    if (store_compact(t->st, now, NULL, NULL, &ce) < 0) /* tried again in an hour */
        note("%s: compacting the store: %s", label, ce.msg);
}

/* The writer thread: the only user of the store handle while the recording runs. */
static void *writer_main(void *arg)
{
    rec_target *t = arg;
    pthread_mutex_lock(&t->qm);
    for (;;) {
        while (!t->qn && !t->closing)
            pthread_cond_wait(&t->qc, &t->qm);
        if (!t->qn)
            break; /* closing, and nothing left */
        rec_item it = t->q[t->qhead];
        t->qhead = (t->qhead + 1) % REC_QUEUE_MAX;
        t->qn--;
        pthread_mutex_unlock(&t->qm);
        flame_err err = FLAME_ERR_INIT;
        int rc = store_put_many(t->st, it.w, it.nw, &err);
        int64_t start_ms = it.nw ? it.w[0].start_ms : 0, end_ms = it.nw ? it.w[0].end_ms : 0;
        pthread_mutex_lock(&t->qm);
        if (rc < 0) {
            t->failed++;
        } else {
            t->windows++;
            t->samples += it.samples;
            for (int m = 0; m < CT_MODE_COUNT; m++)
                t->by_mode[m] += it.by_mode[m];
            t->spooled += rc == 1;
            if (t->link && t->link->reg)
                t->link->reg->e.last_window_ms = end_ms;
        }
        pthread_mutex_unlock(&t->qm);
        /* The recording goes on after a failure: the next window may fit (a full disk freed). */
        if (rc < 0)
            note("%s: window %llu not stored: %s", it.label, (unsigned long long)it.n, err.msg);
        else if (rc == 1)
            note("%s: window %llu kept for later: %s", it.label, (unsigned long long)it.n, err.msg);
        else if (!t->a->quiet) {
            char n[160];
            rec_counts(&t->a->rec, it.by_mode, n, sizeof n);
            note("%s: window %llu stored (%.1f s, %s)", it.label, (unsigned long long)it.n,
                 (double)(end_ms - start_ms) / 1000, n);
        }
        item_free(&it);
        compact_hourly(t, rc, it.label);
        pthread_mutex_lock(&t->qm);
    }
    pthread_mutex_unlock(&t->qm);
    return NULL;
}

/* What is queued is stored, then the writer ends. */
static void writer_finish(rec_target *t)
{
    if (!t->writer_on)
        return;
    pthread_mutex_lock(&t->qm);
    t->closing = true;
    pthread_cond_signal(&t->qc);
    pthread_mutex_unlock(&t->qm);
    pthread_join(t->writer, NULL);
    t->writer_on = false;
}

/* Is the container running: 1 yes, 0 it exists but is not running, -1 there is none by that
 * name (removed), -2 the engine failed (err set). */
static int probe(engine *e, const char *arg, flame_err *err)
{
    _cleanup_free_ char *esc = engine_escape(arg);
    _cleanup_json_ json_t *j = NULL;
    long st = 0;
    if (!esc)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory"), -2;
    if (engine_json(e, "GET", NULL, &j, &st, err, "/containers/%s/json", esc) < 0)
        return st == 404 ? -1 : -2;
    json_t *state = json_object_get(j, "State");
    return json_is_true(json_object_get(state, "Running")) &&
           !json_is_true(json_object_get(state, "Paused")) &&
           !json_is_true(json_object_get(state, "Restarting"));
}

static void rec_end(rec_target *t, const char *why, int code)
{
    t->ended = true;
    t->exit_code = code;
    snprintf(t->why, sizeof t->why, "%.200s %s", t->label, why);
    note("%s %s: its recording ends", t->label, why);
}

/* One run of the ordinary session until an interrupt or until the container stops; then what
 * became of it. Returns run_profile's result. */
static int record_once(const ep_globals *g, engine *e, rec_target *t, flame_err *err)
{
    run_req req = {.sidecar = t->a->rec,
                   .targets = &t->arg,
                   .n = 1,
                   .shared_pid = t->a->shared_pid,
                   .quiet = true, /* one line per window instead of the progress bar */
                   .debug = g->debug,
                   .t0 = mono_s(),
                   .line_hook = rec_line,
                   .hook_ctx = t};
    req.sidecar.last_window = true; /* the window an interrupt cuts short is stored too */
    run_result r;
    if (run_result_init(&r, &req, err) < 0)
        return -1;
    const run_target *s = t->s = &r.t[0];
    int rc = run_profile(e, &req, &r, err);
    if (s->name[0])
        snprintf(t->label, sizeof t->label, "%s", s->name);
    if (s->pr.failed) {
        flame_err e2 = FLAME_ERR_INIT;
        run_sidecar_error(s, &e2);
        note("%s", e2.msg);
        /* No JVM yet: the container restarted and its JVM is still starting, or it runs
         * something else for a while. Once the recording has run, that is waited out. */
        if (t->ever_ready && s->pr.err == CT_ERR_NO_JVM && !sig_interrupted())
            set_state(t, "waiting-jvm");
        else
            rec_end(t, "failed", ct_error_exit(s->pr.err));
    } else if (rc == 0 && !s->pr.done && !sig_interrupted()) {
        char oom[256];
        if (run_out_of_memory(s, oom, sizeof oom)) {
            /* the next window would most likely meet the same end */
            note("%s: the sidecar %s", t->label, oom);
            rec_end(t, "failed", FLAME_EXIT_ERROR);
        } else if (s->target_removed) {
            rec_end(t, "was removed", FLAME_EXIT_NO_CONTAINER);
        } else {
            note("%s stopped: waiting for it to start again (%s ends the recording)", t->label,
                 t->link && t->link->reg ? "docker flame stop" : "Ctrl-C");
            set_state(t, "waiting");
        }
    }
    reg_save(t);
    t->s = NULL;
    run_result_free(&r);
    return rc;
}

/* Sleep until the next look, or until an interrupt wakes us. */
static void nap(long ms)
{
    struct pollfd pf = {.fd = sig_wake_fd(), .events = POLLIN};
    if (poll(&pf, 1, (int)ms) > 0)
        sig_drain_wake();
}

/* The engine answers again after an outage, or a run failed halfway: our sidecars that are
 * still there (stopped by the engine's restart, or left running by --live-restore) belong to
 * no live session of ours any more: remove them (a running one is stopped with SIGTERM first,
 * so it restores its target). They carry this process's run id as a label (plugin/run/spec.h). */
static void sweep(rec_target *t, engine *e)
{
    flame_err err = FLAME_ERR_INIT;
    unsigned n = 0;
    if (sweep_owned(e, spec_run_id(), &n, &err) < 0)
        note("%s: %s (docker flame gc removes it later)", t->label, err.msg);
    else if (n)
        note("%s: removed %u sidecar%s the interruption left behind", t->label, n,
             n == 1 ? "" : "s");
}

/* The first look found the container: say what is recorded, where, and how it ends. */
static void announce(const rec_target *t)
{
    const rec_args *a = t->a;
    if (t->link && t->link->reg)
        note("recording %s into %s in %.0f-s windows at %lld Hz; `docker flame stop %s` ends it",
             t->label, store_name(t->st), (double)a->rec.interval_ms / 1000,
             (long long)a->rec.frequency, t->arg);
    else
        note("recording %s into %s in %.0f-s windows at %lld Hz; Ctrl-C stops", t->label,
             store_name(t->st), (double)a->rec.interval_ms / 1000, (long long)a->rec.frequency);
}

/* Until an interrupt or the end of the container: record it while it runs, wait while it does
 * not (the engine is asked once a second), wait for the engine while it does not answer. */
static int record_loop(const ep_globals *g, engine *e, rec_target *t, flame_err *err)
{
    bool engine_down = false, dirty = false;
    long retry_ms = 1000;
    for (bool first = true; !sig_interrupted() && !t->ended; first = false) {
        int p = probe(e, t->arg, err);
        if (p == -2) {
            if (first || err->code != FLAME_EXIT_ENGINE)
                return -1;
            if (!engine_down)
                note("%s: the Docker engine does not answer (%s): waiting for it", t->label,
                     err->msg);
            engine_down = dirty = true;
            set_state(t, "engine-down");
            *err = (flame_err)FLAME_ERR_INIT;
            nap(1000);
            continue;
        }
        if (engine_down) {
            engine_down = false;
            note("%s: the Docker engine answers again", t->label);
        }
        if (dirty) {
            sweep(t, e);
            dirty = false;
        }
        if (first && p >= 0)
            announce(t);
        if (p == -1 && first)
            return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                              "no such container: %s (see `docker ps -a`)", t->arg);
        if (p == -1) {
            rec_end(t, "was removed", FLAME_EXIT_NO_CONTAINER);
            break;
        }
        if (p == 0) {
            if (strcmp(t->state, "waiting") != 0)
                note("%s is not running: waiting for it to start (%s ends the recording)", t->label,
                     t->link && t->link->reg ? "docker flame stop" : "Ctrl-C");
            set_state(t, "waiting");
            rec_ready(t);
            nap(1000);
            continue;
        }
        set_state(t, "starting");
        uint64_t before = t->handed;
        int rc = record_once(g, e, t, err);
        if (t->handed > before)
            retry_ms = 1000;
        if (rc < 0) {
            if (sig_interrupted() || !t->ever_ready)
                return -1;
            /* Once it has run: the engine going away mid-run, the container stopping between
             * the look above and its sidecar's start, are waited out like a stopped container. */
            note("%s: %s", t->label, err->msg);
            *err = (flame_err)FLAME_ERR_INIT;
            dirty = true;
        }
        if (!t->ended && !strcmp(t->state, "waiting-jvm") && !sig_interrupted()) {
            nap(retry_ms);
            retry_ms = retry_ms * 2 > REC_RETRY_MAX_MS ? REC_RETRY_MAX_MS : retry_ms * 2;
        } else if (rc < 0) {
            nap(1000);
        }
    }
    return 0;
}

/* "HH:MM" of a time, local, for the closing hint. */
static void hhmm(int64_t ms, char *buf, size_t cap)
{
    time_t tt = (time_t)(ms / 1000);
    struct tm tm;
    if (!localtime_r(&tt, &tm) || !strftime(buf, cap, "%H:%M", &tm))
        snprintf(buf, cap, "1h");
}

int rec_run(const ep_globals *g, const rec_args *a, const char *arg, rec_link *link)
{
    /* static: the queue is large, and there is one recorder per process */
    static rec_target t;
    t = (rec_target){.a = a, .arg = arg, .link = link};
    pthread_mutex_init(&t.qm, NULL);
    pthread_cond_init(&t.qc, NULL);
    flame_err err = FLAME_ERR_INIT;
    bool full_id = strlen(arg) == 64 && strspn(arg, "0123456789abcdef") == 64;
    snprintf(t.label, sizeof t.label, "%.*s", full_id ? 12 : 255, arg);
    if (gethostname(t.host, sizeof t.host - 1) < 0)
        snprintf(t.host, sizeof t.host, "unknown");
    int64_t t0 = wall_ms();
    engine *e = NULL;
    bool model_ready = false, looped = false;
    int rc = stored_open(a->store, &t.st, &err);
    if (rc == 0) {
        int mr = top_model_init(&t.m, 1, false);
        model_ready = true; /* init sets what free needs first, even when it fails */
        if (mr < 0)
            rc = flame_fail_errno(&err, FLAME_EXIT_ERROR, errno ? errno : ENOMEM, "record");
        t.m.on_window = store_window_cb;
        t.m.on_window_ctx = &t;
    }
    if (rc == 0) {
        int pe = pthread_create(&t.writer, NULL, writer_main, &t);
        if (pe)
            rc = flame_fail_errno(&err, FLAME_EXIT_ERROR, pe, "record: cannot start its writer");
        t.writer_on = pe == 0;
    }
    if (rc == 0)
        rc = engine_open(g, &e, &err);
    if (rc == 0) {
        looped = true;
        rc = record_loop(g, e, &t, &err);
    }

    /* the stream has ended (each session joins its stream thread): the queue is all there is */
    writer_finish(&t);
    int exit_code = 0;
    if (rc < 0 && err.code != FLAME_EXIT_INTERRUPTED)
        exit_code = cli_fail("record", &err);
    if (!exit_code)
        exit_code = t.exit_code;
    if (looped && t.m.lat_n && getenv("DOCKER_FLAME_TOP_STATS"))
        note("%s: stream: windows arrived at most %.0f ms after they ended (mean %.0f ms)", t.label,
             t.m.lat_max, t.m.lat_sum / (double)t.m.lat_n);
    if (t.st && looped && t.ever_ready) {
        flame_err fe = FLAME_ERR_INIT;
        if (t.spooled && store_flush(t.st, &fe) != 0)
            note("%s: %s", t.label, fe.msg);
        char since[16];
        hhmm(t0, since, sizeof since);
        char w[32], sm[160];
        const char *type = rec_type(&a->rec);
        bool cpu = !strcmp(type, "cpu");
        rec_counts(&a->rec, t.by_mode, sm, sizeof sm);
        note("%s: %s window%s, %s stored in %s%s; see them with: docker flame show "
             "%s%s%s --since %s",
             t.label, count_grouped((double)t.windows, w, sizeof w), t.windows == 1 ? "" : "s", sm,
             store_name(t.st), t.failed ? " (some windows could not be stored)" : "", t.label,
             cpu ? "" : " --mode ", cpu ? "" : type, since);
        if (t.failed && !exit_code)
            exit_code = FLAME_EXIT_STORE;
    }
    if (link && link->reg) {
        snprintf(t.state, sizeof t.state, "ended");
        snprintf(link->reg->e.reason, sizeof link->reg->e.reason, "%.255s",
                 !exit_code ? "stopped"
                 : t.why[0] ? t.why
                            : err.msg);
        link->reg->e.exit_code = exit_code;
        reg_save(&t);
    }
    if (model_ready)
        top_model_free(&t.m);
    store_close(t.st);
    engine_free(e);
    pthread_cond_destroy(&t.qc);
    pthread_mutex_destroy(&t.qm);
    return exit_code;
}
