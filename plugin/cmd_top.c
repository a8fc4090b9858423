/* `docker flame top [OPTIONS] CONTAINER`: a live view of the hottest methods (docs/TOP.md). The
 * sidecar runs the contract's `top` verb through the ordinary run (plugin/run/run.h), so
 * every exit path (q, Ctrl-C, SIGHUP, the container stopping) goes through its undo list; the
 * model and the screen are plugin/top_model.c and plugin/top_screen.c. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
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
#include "plugin/run/proto.h"
#include "plugin/run/run.h"
#include "plugin/run/signals.h"
#include "plugin/summary.h"
#include "plugin/top.h"
#include "plugin/inputs.h"

typedef struct top_args {
    ct_args rec;    /* the sidecar's `top`: interval, frequency, pid, sampling, no-inline, kernel */
    int record_fmt; /* --record's format, from its extension (folded by default) */
    uint64_t window_ms;
    const char *record, *container, *summary_json;
    bool shared_pid, help;
    args_operands ops;
} top_args;

#define F(field, T) ARG_FIELD(top_args, field, T)
// clang-format off
static const arg_spec top_specs[] = {
    {.lng = "interval", .shrt = 'i', .kind = ARG_DURATION, .off = F(rec.interval_ms, uint64_t),
     .meta = "DURATION", .help = "refresh interval (default 1s)", .lo = CT_INTERVAL_MIN_MS,
     .hi = CT_INTERVAL_MAX_MS},
    {.lng = "window", .shrt = 'w', .kind = ARG_DURATION, .off = F(window_ms, uint64_t),
     .meta = "DURATION", .help = "sliding window the shares are computed over (default 5s)",
     .lo = CT_INTERVAL_MIN_MS, .hi = (double)CT_INTERVAL_MAX_MS * TOP_MAX_WINDOWS},
    {.lng = "frequency", .shrt = 'F', .kind = ARG_INT, .off = F(rec.frequency, int64_t), .meta = "HZ",
     .help = "sampling frequency (default 99)", .lo = 1, .hi = CT_FREQ_MAX},
    {.lng = "pid", .shrt = 'p', .kind = ARG_INT, .off = F(rec.pid, int64_t), .meta = "PID",
     .help = "only this JVM (pid in the container)", .lo = 1, .hi = CT_PID_MAX},
    {.lng = "sampling", .kind = ARG_CHOICE, .off = F(rec.sampling, int), .meta = "HOW",
     .help = "auto, cpu or thread (as for docker flame)", .choices = ct_sampling_names},
    {.lng = "record", .kind = ARG_STR, .off = F(record, const char *), .meta = "FILE",
     .help = "on exit, write every stack seen: folded text, or the format\nFILE's extension "
     "names (.svg, .json, .pb.gz: as for -o)", .complete = "file"},
    {.lng = "summary-json", .kind = ARG_STR, .off = F(summary_json, const char *),
     .meta = "FILE", .help = "on exit, write a summary (samples, JVMs, top methods) as JSON\n"
     "to FILE (docs/SUMMARY.md)", .complete = "file"},
    {.lng = "no-inline", .kind = ARG_FLAG, .off = F(rec.no_inline, bool),
     .help = "do not split inlined Java frames"},
    {.lng = "kernel", .kind = ARG_FLAG, .off = F(rec.kernel, bool),
     .help = "kernel stacks too, marked _[k] (as for docker flame: the sidecar\n"
     "gets CAP_SYSLOG to read kernel symbols, dropped before it looks\nat the target)"},
    {.lng = "shared-pid", .kind = ARG_FLAG, .off = F(shared_pid, bool),
     .help = "a container that shares another's PID namespace (as for\ndocker flame)"},
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on
const args_verb cmd_top_grammar = {.name = "docker flame top",
                                   .specs = top_specs,
                                   .nspecs = sizeof top_specs / sizeof *top_specs,
                                   .groups = {CT_RECORD_GROUP(F(rec, ct_args))},
                                   .operands_off = F(ops, args_operands)};
#undef F

static void top_usage(FILE *f)
{
    fprintf(f, "Usage:  docker flame top [OPTIONS] CONTAINER\n\n"
               "A live view of the hottest Java methods in the container's JVM(s): CPU samples\n"
               "per second, or with --mode the bytes allocated (alloc), the time waited for\n"
               "locks (lock) or off CPU (offcpu), or on + off CPU (wall), per second.\n\n"
               "Options:\n");
    args_help(&cmd_top_grammar, f);
    fprintf(f, "\nKeys: q quit, s/t sort by self/total, j Java-only/all frames, p pause,\n"
               "Up/Down + Enter show a method's callers (Esc back).\n"
               "When stdout is not a terminal, a plain snapshot is printed every interval.\n\n"
               "Exit status: 0 quit (q, Ctrl-C), 1 error, 2 bad command line, 3 no such container\n"
               "(or it stopped), 4 no JVM, 5 attach refused, 6 perf not permitted or unsupported,\n"
               "125 the engine failed, 130 aborted.\n");
}

/* The run's line hook's context: the model, and whether the screen owns the terminal. */
typedef struct top_hook {
    top_model *m;
    bool tty;
} top_hook;

/* The run's line hook: the model takes T and F lines (plugin/top.h). The sidecar's warnings
 * (what the view does without: lock's java.util.concurrent waits, broken Java stacks ...) go
 * to stderr as they come when stdout has plain snapshots; the run keeps them too, and the
 * screen's are printed once it is gone (flame_cmd_top). */
static int top_line(void *ctx, const run_target *t, const char *line, size_t len)
{
    top_hook *h = ctx;
    if (len > 2 && line[0] == 'W' && !h->tty) {
        char raw[1024], clean[1024];
        snprintf(raw, sizeof raw, "%.*s", (int)(len - 2 < 1000 ? len - 2 : 1000), line + 2);
        proto_sanitize(raw, clean, sizeof clean);
        char name[160];
        proto_sanitize(t && t->name[0] ? t->name : "top", name, sizeof name);
        fprintf(stderr, "docker flame top: %s: warning: %s\n", name, clean);
    }
    return top_model_line(h->m, line, len);
}

/* The warnings the screen hid while it ran, once it is gone. */
static void print_warnings(const run_target *s)
{
    char name[160];
    proto_sanitize(s->name[0] ? s->name : "top", name, sizeof name);
    for (size_t i = 0; i < s->pr.nwarn; i++) {
        char clean[1024];
        proto_sanitize(s->pr.warnings[i], clean, sizeof clean);
        fprintf(stderr, "docker flame top: %s: warning: %s\n", name, clean);
    }
    if (s->pr.dropped_warn)
        fprintf(stderr, "docker flame top: %s: (%zu more warnings)\n", name, s->pr.dropped_warn);
}

static int parse_args(int argc, char **argv, top_args *a, flame_err *err)
{
    *a = (top_args){.window_ms = 5000};
    ct_args_default(&a->rec, CT_TOP); /* 1-s windows at 99 Hz */
    a->rec.duration_ms = 0;           /* until stopped */
    if (args_parse(&cmd_top_grammar, argc - 1, argv + 1, a, NULL, err) < 0)
        return -1;
    if (a->help)
        return 1;
    if (a->ops.n == 0)
        return args_error(&cmd_top_grammar, err,
                          "which container? usage: docker flame top [OPTIONS] CONTAINER");
    if (a->ops.n > 1)
        return args_error(&cmd_top_grammar, err, "one container at a time");
    a->container = a->ops.v[0];
    if (a->record &&
        (a->record_fmt = out_format(a->record, -1, OUT_ALL_FORMATS, FMT_FOLDED, err)) < 0)
        return -1;
    if (a->summary_json && !strcmp(a->summary_json, "-"))
        return args_error(&cmd_top_grammar, err,
                          "--summary-json: give a file (standard output is top's view)");
    /* One profile type per view (its unit per second: samples, bytes, ns): the sidecar sends a
     * window's stacks of that type, as it does for record. Two types would mean two tables in
     * two units on one screen, and --record one file of one unit: refused, and `record` stores
     * several (docs/TOP.md "Modes"). */
    unsigned modes = CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_WALL) |
                     CT_MODE_BIT(CT_MODE_OFFCPU) | CT_MODE_BIT(CT_MODE_ALLOC) |
                     CT_MODE_BIT(CT_MODE_LOCK);
    if (ct_modes_check(&a->rec, modes, "docker flame top", err) < 0)
        return -1;
    if (__builtin_popcount(ct_modes_of(&a->rec)) > 1)
        return args_error(&cmd_top_grammar, err,
                          "--mode: top shows one of cpu, wall, offcpu, alloc and lock at a time "
                          "(wall is on CPU + off CPU already): give one, run two, or store "
                          "several with docker flame record --mode");
    if (a->rec.kernel && a->rec.sampling == CT_SAMPLING_THREAD)
        return args_error(&cmd_top_grammar, err,
                          "--kernel needs per-CPU sampling: drop --sampling thread");
    if (a->window_ms < a->rec.interval_ms)
        a->window_ms = a->rec.interval_ms;
    if ((double)a->window_ms / (double)a->rec.interval_ms > TOP_MAX_WINDOWS - 0.5)
        return args_error(&cmd_top_grammar, err, "--window is at most %d intervals",
                          TOP_MAX_WINDOWS);
    return 0;
}

/* Every stack seen, in the format of --record's extension (folded without a known one). */
static int write_record(const char *path, int fmt, const char *name, const profile *p,
                        pprof_meta *pm, int mode, flame_err *err)
{
    render_opts ro;
    render_opts_default(&ro);
    inputs_apply_mode(mode, &ro, pm); /* the unit, the SVG's type mark, pprof's value type */
    ro.colors = "java";
    ro.title = name;
    ro.embed_folded = true;
    out_job j = {.p = p, .fmt = fmt, .ro = &ro, .name = name, .pm = pm};
    if (out_write(path, &j, err) < 0)
        return flame_wrap(err, "--record");
    return 0;
}

int flame_cmd_top(const ep_globals *g, int argc, char **argv)
{
    flame_err err = FLAME_ERR_INIT;
    top_args a;
    int pr = parse_args(argc, argv, &a, &err);
    if (pr == 1) {
        top_usage(stdout);
        return 0;
    }
    if (pr < 0)
        return cli_fail("top", &err);
    /* The stream thread (through the run's line hook) and the screen thread read and write it;
     * both are joined before this function returns (run_profile(), pthread_join() below). */
    top_model m;
    if (top_model_init(&m, (int)((double)a.window_ms / (double)a.rec.interval_ms + 0.5),
                       a.record != NULL || a.summary_json != NULL) < 0) {
        flame_fail_errno(&err, FLAME_EXIT_ERROR, errno, "top");
        return cli_fail("top", &err);
    }

    bool tty = isatty(1) && isatty(0) && getenv("TERM");
    top_hook hook = {.m = &m, .tty = tty};
    run_req req = {.sidecar = a.rec,
                   .targets = &a.container,
                   .n = 1,
                   .shared_pid = a.shared_pid,
                   .quiet = true, /* the view is the progress */
                   .debug = g->debug,
                   .t0 = mono_s(),
                   .line_hook = top_line,
                   .hook_ctx = &hook};
    run_result r;
    if (run_result_init(&r, &req, &err) < 0) {
        top_model_free(&m);
        return cli_fail("top", &err);
    }
    const run_target *s = &r.t[0];
    time_t started = time(NULL);

    /* a full container id is 64 hex digits: show docker's short form */
    char shown[16];
    const char *cname = a.container;
    if (strlen(cname) == 64 && strspn(cname, "0123456789abcdef") == 64) {
        snprintf(shown, sizeof shown, "%.12s", cname);
        cname = shown;
    }
    top_ui u = {.m = &m,
                .container = cname,
                .interval_s = (double)a.rec.interval_ms / 1000,
                .window_s = (double)a.window_ms / 1000,
                .tty = tty,
                .java_only = true,
                .mode = (int)__builtin_ctz(ct_modes_of(&a.rec)),
                .t0 = mono_s()};
    engine *e = NULL;
    int rc = engine_open(g, &e, &err);
    pthread_t ui;
    bool ui_started = false;
    if (rc == 0) {
        if (u.tty)
            top_screen_start();
        /* The UI thread must not take the session's signals: the main thread's loop does. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        ui_started = pthread_create(&ui, NULL, top_screen_main, &u) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        rc = run_profile(e, &req, &r, &err);
    }
    u.main_done = true;
    if (ui_started)
        pthread_join(ui, NULL);
    if (u.tty) {
        top_screen_end();
        print_warnings(s);
    }

    int exit_code = 0;
    if (rc < 0 && err.code != FLAME_EXIT_INTERRUPTED) {
        exit_code = cli_fail("top", &err);
    } else if (s->pr.failed) {
        flame_err e2 = FLAME_ERR_INIT;
        run_sidecar_error(s, &e2);
        exit_code = cli_fail("top", &e2);
    } else if (rc == 0 && !s->pr.done && !u.quit_sent && !sig_interrupted()) {
        char oom[256];
        if (run_out_of_memory(s, oom, sizeof oom))
            fprintf(stderr, "docker flame: top %s: the sidecar %s\n", s->name, oom);
        else
            fprintf(stderr,
                    "docker flame: top %s: the sidecar ended without finishing (did the "
                    "container stop?)\n",
                    s->name);
        exit_code = FLAME_EXIT_ERROR;
    }
    bool recorded = false;
    if (m.rec && a.record) {
        flame_err e2 = FLAME_ERR_INIT;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        double ran = mono_s() - r.tm.t0;
        pprof_meta pm = {.hz = (double)a.rec.frequency,
                         .time_ns =
                             (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - (int64_t)(ran * 1e9),
                         .duration_ns = (int64_t)(ran * 1e9),
                         .container = s->name,
                         .layout = m.jvms > 1 ? PPROF_JVM_THEN_THREAD : PPROF_THREAD_FIRST};
        if (write_record(a.record, a.record_fmt, s->name[0] ? s->name : a.container, m.rec, &pm,
                         u.mode, &e2) < 0) {
            fprintf(stderr, "docker flame: %s\n", e2.msg);
            if (!exit_code)
                exit_code = e2.code ? e2.code : FLAME_EXIT_ERROR;
        } else {
            char n[32];
            fprintf(stderr, "docker flame: wrote %s (%s %s)\n", a.record,
                    count_grouped(profile_total(m.rec), n, sizeof n), ct_mode(u.mode)->unit);
            recorded = true;
        }
    }
    if (a.summary_json) {
        flame_err e2 = FLAME_ERR_INIT;
        sum_top st = {.container = s->name[0] ? s->name : a.container,
                      .pr = &s->pr,
                      .p = m.rec,
                      .windows = m.gen,
                      .record = recorded ? a.record : NULL,
                      .started = started,
                      .seconds = mono_s() - r.tm.t0,
                      .frequency = a.rec.frequency,
                      .exit_code = exit_code,
                      .mode = u.mode};
        if (summary_write_top(a.summary_json, &st, &e2) < 0) {
            fprintf(stderr, "docker flame: %s\n", e2.msg);
            if (!exit_code)
                exit_code = e2.code ? e2.code : FLAME_EXIT_ERROR;
        }
    }
    if (getenv("DOCKER_FLAME_TOP_STATS"))
        fprintf(stderr,
                "docker flame: top stats: windows %u, samples %lld, skipped %lld, refresh lag "
                "last %.0f ms, mean %.0f ms, max %.0f ms\n",
                m.gen, m.total_samples, m.skipped, m.last_latency_ms,
                m.lat_n ? m.lat_sum / (double)m.lat_n : 0, m.lat_max);
    run_result_free(&r);
    engine_free(e);
    top_model_free(&m);
    methods_free(u.tab);
    return exit_code;
}
