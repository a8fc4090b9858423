/* `docker flame record CONTAINER...`: continuous profiling in the foreground. Each container gets
 * the ordinary sidecar (plugin/session.c) running the contract's `top` verb, which streams one
 * window of folded stacks per --window; every completed window is stored, as it completes, in
 * the profile store (store/store.h) with its labels, until Ctrl-C, and the window the Ctrl-C cut
 * short is stored too. A window in which nothing ran is stored as empty, never skipped: `show
 * --timeline` then shows the quiet time as quiet, not as a gap. docs/STORE.md has the store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/clock.h"
#include "common/contract.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
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
#define REC_FREQUENCY 49
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
static const args_verb verb = CLI_VERB("docker flame record", specs, F(in, args_operands));
// clang-format on
#undef F

/* One recorded container: its window model, fed by its session's stream thread, and its own
 * store handle (a handle serves one thread at a time). */
typedef struct rec_target {
    top_model m;
    sess *s;
    store *st;
    const rec_args *a;
    const char *host;
    profile *empty;   /* the stacks of a window in which nothing ran */
    bool model_ready; /* top_model_init done: top_model_free is due */
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
        fprintf(stderr, "docker flame record: %s: window %lld not stored: %s\n", t->s->name,
                w->id + 1, err.msg);
        return;
    }
    t->windows++;
    t->samples += sw.samples;
    if (rc == 1) {
        t->spooled++;
        fprintf(stderr, "docker flame record: %s: window %lld kept in the local spool: %s\n",
                t->s->name, w->id + 1, err.msg);
    } else if (!t->a->quiet) {
        fprintf(stderr, "docker flame record: %s: window %lld stored (%.1f s, %llu samples)\n",
                t->s->name, w->id + 1, (double)len / 1000, (unsigned long long)sw.samples);
    }
}

static int check_args(rec_args *a, flame_err *err)
{
    if (a->in.n == 0)
        return args_error(&verb, err,
                          "which container? usage: docker flame record [OPTIONS] CONTAINER...");
    if (a->in.n > REC_MAX_TARGETS)
        return args_error(&verb, err, "at most %d containers in one recording", REC_MAX_TARGETS);
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

static int record_run(const ep_globals *g, rec_args *a, rec_target *t, sess *ss, size_t n,
                      flame_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (stored_open(a->store, &t[i].st, err) < 0)
            return -1;
        int mr = top_model_init(&t[i].m, 1, false);
        t[i].model_ready = true; /* init sets what free needs first, even when it fails */
        if (mr < 0 || !(t[i].empty = profile_new()))
            return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : ENOMEM, "record");
        t[i].m.on_window = store_window_cb;
        t[i].m.on_window_ctx = &t[i];
        ss[i] = (sess){.arg = a->in.v[i], .line_hook = top_model_line, .hook_ctx = &t[i].m};
        t[i].s = &ss[i];
    }
    fprintf(stderr,
            "docker flame record: recording %zu container%s into %s in %.0f-s windows at %lld Hz; "
            "Ctrl-C stops\n",
            n, n == 1 ? "" : "s", store_name(t[0].st), (double)a->window_ms / 1000,
            (long long)a->frequency);

    flame_opts o;
    opts_init(&o);
    for (size_t i = 0; i < n; i++)
        o.containers.v[i] = a->in.v[i];
    o.containers.n = (int)n;
    o.duration_ms = 0;
    o.frequency = a->frequency;
    o.pid = a->pid;
    o.no_inline = a->no_inline;
    o.quiet = true; /* one line per window instead of the progress bar */
    o.top = true;
    o.interval_ms = a->window_ms;
    o.last_window = true;

    run_ctx r = {.o = &o, .s = ss, .n = (int)n, .debug = g->debug};
    r.tm.t0 = mono_s();
    progress_init(&r.pg, stderr, true);
    engine *e = NULL;
    int rc = engine_open(g, &e, err);
    r.e = e;
    if (rc == 0)
        rc = run_profile(&r, err);
    engine_free(e);
    return rc;
}

int flame_cmd_record(const ep_globals *g, int argc, char **argv)
{
    rec_args a = {.window_ms = REC_WINDOW_MS, .frequency = REC_FREQUENCY};
    int rc = cli_parse("record", &verb, argc, argv, &a, &a.help, usage_head, usage_tail);
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
    sess ss[REC_MAX_TARGETS];
    memset(t, 0, sizeof t);
    memset(ss, 0, sizeof ss);
    for (size_t i = 0; i < n; i++)
        t[i] = (rec_target){.a = &a, .host = host};
    int64_t t0 = wall_ms();

    rc = record_run(g, &a, t, ss, n, &err);

    int exit_code = 0;
    if (rc < 0 && err.code != FLAME_EXIT_INTERRUPTED)
        exit_code = cli_fail("record", &err);
    for (size_t i = 0; i < n && ss[i].arg; i++) {
        sess *s = &ss[i];
        if (s->pr.failed && !exit_code) {
            char text[1024];
            proto_sanitize(s->pr.err_text ? s->pr.err_text : "", text, sizeof text);
            fprintf(stderr, "docker flame: record %s: %s: %s\n", s->name, ct_error_name(s->pr.err),
                    text);
            exit_code = ct_error_exit(s->pr.err);
        }
        if (rc == 0 && !s->pr.done && !s->pr.failed && !sess_interrupted() && !exit_code) {
            fprintf(stderr, "docker flame: record %s: the container stopped: its recording ended\n",
                    s->name[0] ? s->name : s->arg);
            exit_code = FLAME_EXIT_NO_CONTAINER;
        }
        if (t[i].st) {
            flame_err fe = FLAME_ERR_INIT;
            if (t[i].spooled && store_flush(t[i].st, &fe) != 0)
                fprintf(stderr, "docker flame record: %s: %s\n", s->name, fe.msg);
            char since[16];
            hhmm(t0, since, sizeof since);
            fprintf(stderr,
                    "docker flame record: %s: %llu window%s, %llu samples stored in %s%s; see "
                    "them with: docker flame show %s --since %s\n",
                    s->name[0] ? s->name : s->arg, (unsigned long long)t[i].windows,
                    t[i].windows == 1 ? "" : "s", (unsigned long long)t[i].samples,
                    store_name(t[i].st), t[i].failed ? " (some windows could not be stored)" : "",
                    s->name[0] ? s->name : s->arg, since);
            if (t[i].failed && !exit_code)
                exit_code = FLAME_EXIT_STORE;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (ss[i].arg)
            sess_clear(&ss[i]);
        if (t[i].model_ready)
            top_model_free(&t[i].m);
        profile_free(t[i].empty);
        store_close(t[i].st);
    }
    return exit_code;
}
