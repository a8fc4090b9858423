/* `docker flame record CONTAINER...`: continuous profiling in the foreground. Each container gets
 * the ordinary sidecar (plugin/session.c) running the contract's `top` verb, which streams one
 * window of folded stacks per --window; every completed window is stored, as it completes, in
 * the profile store (store/store.h) with its labels, until Ctrl-C, and the window the Ctrl-C cut
 * short is stored too. A window in which nothing ran is stored as empty, never skipped: `show
 * --timeline` then shows the quiet time as quiet, not as a gap. docs/STORE.md has the store. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/contract.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/engine.h"
#include "plugin/opts.h"
#include "plugin/proto.h"
#include "plugin/session.h"
#include "plugin/sidecar.h"
#include "plugin/signals.h"
#include "plugin/stored.h"
#include "plugin/top.h"

/* Always-on defaults: 10-s windows (what the store's compaction and `show` are sized for) at
 * 49 Hz, half the one-shot rate: a window still holds ~490 samples per busy core, and the
 * sampling cost halves (docs/STORE.md). */
#define REC_WINDOW_MS 10000
#define REC_FREQUENCY REC_DEFAULT_HZ
#define REC_MAX_TARGETS 16

static const char usage_head[] =
    "Usage: docker flame record [OPTIONS] CONTAINER...\n"
    "\n"
    "Record the JVMs of each CONTAINER continuously, window after window, into the profile\n"
    "store, until Ctrl-C (the window cut short by it is kept). Later, any time range can be\n"
    "drawn (docker flame show), compared (docker flame diff web@14:00..14:05 web@-5m) or\n"
    "listed (docker flame ls). A window in which nothing ran is stored as empty.\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame record web api                   # 10-s windows into the default store\n"
    "  docker flame record web --window 30s -F 19\n"
    "  docker flame show web --since 15m -o web.svg  # meanwhile, or later\n"
    "\n"
    "Exit status: 0 stopped by Ctrl-C, 1 error, 2 bad command line, 3 no such container,\n"
    "4 no JVM, 5 attach failed, 6 perf refused, 7 the store cannot be used.\n";

typedef struct rec_args {
    uint64_t window_ms;
    int64_t frequency, pid;
    const char *store;
    bool no_inline, quiet, help;
    args_operands in;
} rec_args;

#define F(field, T) ARG_FIELD(rec_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "window", .shrt = 'w', .kind = ARG_DURATION, .off = F(window_ms, uint64_t),
     .meta = "DURATION", .help = "length of each stored window (default 10s; 1s to 60s)",
     .lo = 1000, .hi = CT_INTERVAL_MAX_MS},
    {.lng = "frequency", .shrt = 'F', .kind = ARG_INT, .off = F(frequency, int64_t), .meta = "HZ",
     .help = "samples per second per CPU (default 49)", .lo = 1, .hi = CT_FREQ_MAX},
    {.lng = "pid", .kind = ARG_INT, .off = F(pid, int64_t), .meta = "PID",
     .help = "only this JVM (pid in the container)", .lo = 1, .hi = CT_PID_MAX},
    {.lng = "no-inline", .kind = ARG_FLAG, .off = F(no_inline, bool),
     .help = "do not show methods inlined by the JIT as frames"},
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = F(quiet, bool),
     .help = "no line per stored window"},
    STORED_STORE_SPEC(F(store, const char *)),
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_record_grammar = CLI_VERB("docker flame record", specs, F(in, args_operands));
// clang-format on
#undef F

/* One recorded container: its window model, fed by its session's stream thread, and its own
 * store handle (a handle serves one thread at a time). */
enum rec_state { REC_WAITING, REC_LIVE, REC_ENDED };

typedef struct rec_target {
    top_model m;
    sess *s;
    store *st;
    const rec_args *a;
    const char *host;
    profile *empty;   /* the stacks of a window in which nothing ran */
    bool model_ready; /* top_model_init done: top_model_free is due */
    enum rec_state state;
    char label[256]; /* for messages: the container's name once known, else what the user typed */
    int exit_code;   /* why its recording ended, when not by Ctrl-C */
    uint64_t windows, samples, spooled, failed;
} rec_target;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* top_model.on_window: the stream thread, with the session's and the model's locks held. */
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
    const profile *p = w->p ? w->p : t->empty;
    double total = profile_total(p);
    const char *jv = t->s->pr.njvms > 0 ? t->s->pr.jvms[0].java_version : "";
    store_window sw = {.host = t->host,
                       .container_id = t->s->target_id,
                       .container_name = t->s->name,
                       .image = t->s->image,
                       .jvm_pid = t->a->pid,
                       .jvm_version = jv,
                       .start_ms = end - len,
                       .end_ms = end,
                       .frequency = t->a->frequency,
                       .samples = total > 0 ? (uint64_t)total : 0,
                       .stacks = p};
    flame_err err = FLAME_ERR_INIT;
    int rc = store_put(t->st, &sw, &err);
    if (rc < 0) {
        /* The recording goes on: the next window may fit (a full disk freed, a lock gone). */
        t->failed++;
        fprintf(stderr, "docker flame record: %s: window %llu not stored: %s\n", t->s->name,
                (unsigned long long)(t->windows + t->failed), err.msg);
        return;
    }
    t->windows++;
    t->samples += sw.samples;
    if (rc == 1) {
        t->spooled++;
        fprintf(stderr, "docker flame record: %s: window %lld kept in the local spool: %s\n",
                t->s->name, (long long)(t->windows + t->failed + 1), err.msg);
    } else if (!t->a->quiet) {
        fprintf(stderr, "docker flame record: %s: window %lld stored (%.1f s, %llu samples)\n",
                t->s->name, (long long)t->windows, (double)len / 1000,
                (unsigned long long)sw.samples);
    }
}

static int check_args(rec_args *a, flame_err *err)
{
    if (a->in.n == 0)
        return args_error(&cmd_record_grammar, err,
                          "which container? usage: docker flame record [OPTIONS] CONTAINER...");
    if (a->in.n > REC_MAX_TARGETS)
        return args_error(&cmd_record_grammar, err, "at most %d containers in one recording",
                          REC_MAX_TARGETS);
    return 0;
}

/* "HH:MM" of now, local time, for the closing hint. */
static void hhmm(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(buf, cap, "%H:%M", &tm))
        snprintf(buf, cap, "1h");
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

static void rec_end(rec_target *t, const char *why)
{
    t->state = REC_ENDED;
    fprintf(stderr, "docker flame record: %s %s: its recording ends\n", t->label, why);
}

/* One run of the ordinary session over the live targets, until Ctrl-C or until every one of
 * them has stopped; then what became of each. */
static int record_once(const ep_globals *g, engine *e, rec_args *a, rec_target *t, size_t n,
                       flame_err *err)
{
    sess ss[REC_MAX_TARGETS];
    rec_target *who[REC_MAX_TARGETS];
    flame_opts o;
    opts_init(&o);
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].state != REC_LIVE)
            continue;
        ss[live] = (sess){.arg = a->in.v[i], .line_hook = top_model_line, .hook_ctx = &t[i].m};
        t[i].s = &ss[live];
        who[live] = &t[i];
        o.containers.v[live++] = a->in.v[i];
    }
    o.containers.n = (int)live;
    o.duration_ms = 0;
    o.frequency = a->frequency;
    o.pid = a->pid;
    o.no_inline = a->no_inline;
    o.quiet = true; /* one line per window instead of the progress bar */
    o.top = true;
    o.interval_ms = a->window_ms;
    o.last_window = true;
    run_ctx r = {.e = e, .o = &o, .s = ss, .n = (int)live, .debug = g->debug};
    r.tm.t0 = mono_s();
    progress_init(&r.pg, stderr, true);
    int rc = run_profile(&r, err);
    for (size_t k = 0; k < live; k++) {
        sess *s = &ss[k];
        rec_target *tk = who[k];
        if (s->name[0])
            snprintf(tk->label, sizeof tk->label, "%s", s->name);
        const char *arg = tk->label;
        if (s->pr.failed) {
            char text[1024];
            proto_sanitize(s->pr.err_text ? s->pr.err_text : "", text, sizeof text);
            fprintf(stderr, "docker flame: record %s: %s: %s\n", arg, ct_error_name(s->pr.err),
                    text);
            if (!tk->exit_code)
                tk->exit_code = ct_error_exit(s->pr.err);
            rec_end(tk, "failed");
        } else if (rc == 0 && !s->pr.done && !sess_interrupted()) {
            if (s->target_removed) {
                rec_end(tk, "was removed");
                tk->exit_code = FLAME_EXIT_NO_CONTAINER;
            } else {
                tk->state = REC_WAITING;
                fprintf(stderr,
                        "docker flame record: %s stopped: waiting for it to start again "
                        "(Ctrl-C ends the recording)\n",
                        arg);
            }
        }
        tk->s = NULL;
        sess_clear(s);
    }
    return rc;
}

/* Until Ctrl-C or until no target is left: record the running targets, wait for the stopped
 * ones (a container started again, or created again under the same name, is recorded anew; the
 * engine is asked once a second), end the removed ones. */
static int record_loop(const ep_globals *g, engine *e, rec_args *a, rec_target *t, size_t n,
                       flame_err *err)
{
    for (bool first = true; !sess_interrupted(); first = false) {
        size_t live = 0, left = 0;
        for (size_t i = 0; i < n; i++) {
            if (t[i].state == REC_ENDED)
                continue;
            int p = probe(e, a->in.v[i], err);
            if (p == -2)
                return -1;
            if (p == -1 && first)
                return flame_fail(err, FLAME_EXIT_NO_CONTAINER,
                                  "no such container: %s (see `docker ps -a`)", a->in.v[i]);
            if (p == -1) {
                rec_end(&t[i], "was removed");
                t[i].exit_code = FLAME_EXIT_NO_CONTAINER;
                continue;
            }
            left++;
            if (p == 1) {
                t[i].state = REC_LIVE;
                live++;
            } else if (t[i].state != REC_WAITING) {
                t[i].state = REC_WAITING;
                fprintf(stderr,
                        "docker flame record: %s is not running: waiting for it to start "
                        "(Ctrl-C ends the recording)\n",
                        t[i].label);
            }
        }
        if (left == 0)
            return 0;
        if (live == 0) {
            /* Nothing to record now: sleep until the next look, or until a Ctrl-C wakes us. */
            struct pollfd pf = {.fd = sess_wake_fd(), .events = POLLIN};
            if (poll(&pf, 1, 1000) > 0)
                sess_drain_wake();
            continue;
        }
        if (record_once(g, e, a, t, n, err) < 0) {
            /* A target that stopped between the look above and its sidecar's start: the next
             * look finds it stopped (or gone) and waits for it; anything else ends it all. */
            if (err->code != FLAME_EXIT_NO_CONTAINER || sess_interrupted())
                return -1;
            fprintf(stderr, "docker flame record: %s\n", err->msg);
            *err = (flame_err)FLAME_ERR_INIT;
        }
    }
    return 0;
}

int flame_cmd_record(const ep_globals *g, int argc, char **argv)
{
    rec_args a = {.window_ms = REC_WINDOW_MS, .frequency = REC_FREQUENCY};
    int rc =
        cli_parse("record", &cmd_record_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (rc >= 0)
        return rc;
    flame_err err = FLAME_ERR_INIT;
    if (check_args(&a, &err) < 0)
        return cli_fail("record", &err);

    char host[256] = "";
    if (gethostname(host, sizeof host - 1) < 0)
        snprintf(host, sizeof host, "unknown");
    size_t n = (size_t)a.in.n;
    rec_target t[REC_MAX_TARGETS];
    memset(t, 0, sizeof t);
    int64_t t0 = wall_ms();
    engine *e = NULL;
    bool looped = false;
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        t[i] = (rec_target){.a = &a, .host = host};
        const char *arg = a.in.v[i];
        bool full_id = strlen(arg) == 64 && strspn(arg, "0123456789abcdef") == 64;
        snprintf(t[i].label, sizeof t[i].label, "%.*s", full_id ? 12 : 255, arg);
        if ((rc = stored_open(a.store, &t[i].st, &err)) < 0)
            break;
        int mr = top_model_init(&t[i].m, 1, false);
        t[i].model_ready = true; /* init sets what free needs first, even when it fails */
        if (mr < 0 || !(t[i].empty = profile_new()))
            rc = flame_fail_errno(&err, FLAME_EXIT_ERROR, errno ? errno : ENOMEM, "record");
        t[i].m.on_window = store_window_cb;
        t[i].m.on_window_ctx = &t[i];
    }
    if (rc == 0)
        rc = engine_open(g, &e, &err);
    if (rc == 0) {
        fprintf(stderr,
                "docker flame record: recording %zu container%s into %s in %.0f-s windows at "
                "%lld Hz; Ctrl-C stops\n",
                n, n == 1 ? "" : "s", store_name(t[0].st), (double)a.window_ms / 1000,
                (long long)a.frequency);
        looped = true;
        rc = record_loop(g, e, &a, t, n, &err);
    }

    int exit_code = 0;
    if (rc < 0 && err.code != FLAME_EXIT_INTERRUPTED)
        exit_code = cli_fail("record", &err);
    for (size_t i = 0; i < n; i++) {
        if (!exit_code && t[i].exit_code)
            exit_code = t[i].exit_code;
        if (!t[i].st || !looped)
            continue;
        flame_err fe = FLAME_ERR_INIT;
        if (t[i].spooled && store_flush(t[i].st, &fe) != 0)
            fprintf(stderr, "docker flame record: %s: %s\n", t[i].label, fe.msg);
        char since[16];
        hhmm(t0, since, sizeof since);
        fprintf(stderr,
                "docker flame record: %s: %llu window%s, %llu samples stored in %s%s; see "
                "them with: docker flame show %s --since %s\n",
                t[i].label, (unsigned long long)t[i].windows, t[i].windows == 1 ? "" : "s",
                (unsigned long long)t[i].samples, store_name(t[i].st),
                t[i].failed ? " (some windows could not be stored)" : "", t[i].label, since);
        if (t[i].failed && !exit_code)
            exit_code = FLAME_EXIT_STORE;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i].model_ready)
            top_model_free(&t[i].m);
        profile_free(t[i].empty);
        store_close(t[i].st);
    }
    engine_free(e);
    return exit_code;
}
