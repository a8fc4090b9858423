/* docker-flame: the Docker CLI plugin. Dispatches the CLI plugin protocol (metadata, global
 * flags before "flame"), the verbs (profile, fold, render, diff, merge, gc), prints errors and
 * picks exit codes (common/err.h). Everything else lives in the modules. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "plugin/endpoint.h"
#include "plugin/engine.h"
#include "plugin/opts.h"
#include "plugin/output.h"
#include "plugin/session.h"
#include "plugin/top.h"
#include "flame/profile.h"
#include "plugin/cmd.h"

#define URL "https://github.com/docker-flame/docker-flame"

static void usage(FILE *f)
{
    fputs("Usage:  docker flame [OPTIONS] CONTAINER [CONTAINER...] [-- CMD [ARG...]]\n"
          "        docker flame fold|render|diff|merge|gc [ARGS...]\n"
          "\n"
          "Profile the JVMs running in a container with perf, from a sidecar container that\n"
          "shares its PID namespace, and write an interactive flame graph (SVG). Nothing is\n"
          "installed in or restarted in the container; the sidecar is removed afterwards.\n"
          "\n"
          "Options:\n"
          "  -d, --duration DURATION  how long to record (default 30s; 0 = until Ctrl-C;\n"
          "                           e.g. 10, 45s, 2m, 1m30s)\n"
          "  -F, --frequency HZ       samples per second per CPU (default 99)\n"
          "      --pid PID            profile only this JVM (pid as seen inside the container)\n"
          "  -o, --output FILE        output file (default "
          "flame-<container>-<YYYYmmdd-HHMMSS>.svg);\n"
          "                           with several containers: an existing directory\n"
          "      --format FORMAT      svg, folded or speedscope; repeatable (file extension per\n"
          "                           format: .svg .folded .speedscope.json)\n"
          "      --title TEXT         SVG title (default: the container name)\n"
          "      --colors PALETTE     SVG palette (default java)\n"
          "      --minwidth W         omit frames narrower than W pixels (or W% of the total)\n"
          "      --no-inline          do not show methods inlined by the JIT as frames\n"
          "      --signatures         keep Java parameter lists and return types\n"
          "  -q, --quiet              no progress and no summary\n"
          "  -h, --help               this help\n"
          "  -v, --version            print the version\n"
          "\n"
          "  -- CMD [ARG...]          run CMD on this host while profiling; recording starts\n"
          "                           before CMD and stops when it exits (no -d needed)\n"
          "\n"
          "Ctrl-C stops recording early and still writes the flame graph; a second Ctrl-C aborts.\n"
          "\n"
          "Other commands:\n"
          "  fold     fold `perf script` output into folded stacks\n"
          "  render   render folded stacks (or a docker-flame SVG) as SVG / speedscope\n"
          "  diff     differential flame graph of two profiles (files or running containers)\n"
          "  merge    merge profiles\n"
          "  gc       remove sidecar containers left behind (e.g. after `kill -9`); --all also\n"
          "           removes running ones\n"
          "  top      live view of the hottest Java methods (docker flame top --help)\n"
          "\n"
          "Examples:\n"
          "  docker flame web                         # 30 s, writes flame-web-<time>.svg\n"
          "  docker flame -d 10 -o web.svg web\n"
          "  docker flame -d 0 web                    # until Ctrl-C\n"
          "  docker flame --format svg --format folded -o out/web web\n"
          "  docker flame web api -o profiles/        # both at the same time, one file each\n"
          "  docker flame web -- ab -n 100000 http://localhost:8080/   # profile under load\n"
          "  docker --context prod flame web          # any engine docker can reach\n"
          "\n"
          "Exit codes: 0 ok, 1 error, 2 usage, 3 no such container / not running, 4 no JVM,\n"
          "5 attach refused, 6 perf not permitted or unsupported, 125 engine error or sidecar\n"
          "image unavailable, 130 aborted.\n",
          f);
}

static int print_metadata(void)
{
    /* The CLI calls this for `docker help`, `docker info` ...: answer without the engine. */
    printf("{\"SchemaVersion\":\"0.1.0\",\"Vendor\":\"docker-flame\",\"Version\":\"%s\","
           "\"ShortDescription\":\"Profile the JVMs in a container as a flame graph\","
           "\"URL\":\"%s\"}\n",
           FLAME_VERSION, URL);
    return 0;
}

static int fail(const flame_err *err)
{
    fprintf(stderr, "docker flame: %s\n", err->msg[0] ? err->msg : "failed");
    return err->code ? err->code : FLAME_EXIT_ERROR;
}

static int open_engine(const ep_globals *g, engine **e, flame_err *err)
{
    ep_endpoint ep;
    int rc = ep_resolve(g, &ep, err);
    if (rc == 0)
        rc = engine_new(&ep, g->debug, e, err);
    ep_endpoint_clear(&ep);
    if (rc == 0 && (rc = engine_ping(*e, err)) < 0) {
        engine_free(*e);
        *e = NULL;
    }
    return rc;
}

/* ---- the summary ---- */

static void print_summary(const sess *s, const flame_opts *o, char *const paths[FMT_COUNT])
{
    if (o->quiet)
        return;
    const proto *p = &s->pr;
    double total = p->prof ? profile_total(p->prof) : 0;
    fprintf(stderr, "%s: %.0f samples", s->name, total);
    json_t *sum = p->summary;
    json_t *share = json_object_get(sum, "named_share");
    json_t *jit = json_object_get(sum, "jit_leaf_samples");
    if (json_is_number(share) && json_is_integer(jit) && json_integer_value(jit) > 0)
        fprintf(stderr, ", %.0f%% of %lld JIT samples have Java names",
                json_number_value(share) * 100, (long long)json_integer_value(jit));
    long long lost = json_is_integer(json_object_get(sum, "lost"))
                         ? (long long)json_integer_value(json_object_get(sum, "lost"))
                         : 0;
    if (lost)
        fprintf(stderr, ", %lld lost", lost);
    fputc('\n', stderr);
    /* One line per JVM the sidecar found (all of it container data: sanitised). */
    size_t ji;
    json_t *jv;
    json_array_foreach(p->jvms, ji, jv)
    {
        char ver[32], att[32], why[256];
        proto_sanitize(json_string_value(json_object_get(jv, "java_version")) ?: "?", ver,
                       sizeof ver);
        proto_sanitize(json_string_value(json_object_get(jv, "attach")) ?: "?", att, sizeof att);
        proto_sanitize(json_string_value(json_object_get(jv, "reason")) ?: "", why, sizeof why);
        json_t *fp = json_object_get(jv, "preserve_frame_pointer");
        fprintf(stderr, "  JVM pid %lld (java %s, names via %s%s)%s%s\n",
                (long long)json_integer_value(json_object_get(jv, "nspid")), ver, att,
                json_is_false(fp) ? ", no PreserveFramePointer" : "", *why ? ": " : "", why);
        if (ji >= 15)
            break;
    }
    if (total > 0) {
        const char *names[5];
        double counts[5];
        size_t n = profile_top_self(p->prof, 5, true, names, counts);
        if (n)
            fprintf(stderr, "  top Java methods (self time):\n");
        for (size_t i = 0; i < n; i++) {
            char clean[160];
            proto_sanitize(names[i], clean, sizeof clean);
            size_t cl = strlen(clean); /* drop the folder's _[j]/_[i] annotation */
            if (cl > 4 && clean[cl - 4] == '_' && clean[cl - 3] == '[' && clean[cl - 1] == ']')
                clean[cl - 4] = 0;
            fprintf(stderr, "    %5.1f%%  %s\n", counts[i] * 100 / total, clean);
        }
    }
    for (int f = 0; f < FMT_COUNT; f++)
        if (paths[f])
            fprintf(stderr, "  wrote %s\n", paths[f]);
    for (size_t i = 0; i < p->nwarn; i++) {
        char clean[512];
        proto_sanitize(p->warnings[i], clean, sizeof clean);
        fprintf(stderr, "  warning: %s\n", clean);
    }
    if (p->dropped_warn)
        fprintf(stderr, "  (%zu more warnings)\n", p->dropped_warn);
}

/* Why did this sidecar not deliver a profile? Returns the exit code, err filled. */
static int session_failure(const sess *s, bool stopping, flame_err *err)
{
    const proto *p = &s->pr;
    char text[1024];
    if (p->err_code[0]) {
        proto_sanitize(p->err_text ? p->err_text : "", text, sizeof text);
        int code = proto_err_exit(p->err_code);
        if (!strcmp(p->err_code, "no_jvm"))
            flame_fail(err, code, "no JVM in container %s: %s", s->name, text);
        else if (!strcmp(p->err_code, "no_pid"))
            flame_fail(err, code, "no JVM with --pid in container %s: %s", s->name, text);
        else if (!strcmp(p->err_code, "attach") || !strcmp(p->err_code, "inject"))
            flame_fail(err, code, "the JVM in %s refused the attach: %s", s->name, text);
        else if (!strcmp(p->err_code, "perf_denied"))
            flame_fail(err, code, "perf is not permitted on this engine's host: %s", text);
        else if (!strcmp(p->err_code, "perf_unsupported"))
            flame_fail(err, code, "perf is not supported by this kernel: %s", text);
        else
            flame_fail(err, code, "profiling %s failed (%s): %s", s->name, p->err_code, text);
        return code;
    }
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

/* Where the time went (-D or DOCKER_FLAME_TIMINGS=1): the tool's own overhead around the
 * recording itself. Recording start = first P line's arrival minus its elapsed_ms. */
static void print_timings(const run_ctx *r, double t_written)
{
    const run_times *t = &r->tm;
    double rec_start = 0, rec_end = 0, first_f = 0;
    for (int i = 0; i < r->n; i++) {
        const sess *s = &r->s[i];
        if (s->t_first_p) {
            double st = s->t_first_p - (double)s->first_p_elapsed_ms / 1000;
            double en = st + (double)s->pr.elapsed_ms / 1000;
            if (st > rec_start)
                rec_start = st;
            if (en > rec_end)
                rec_end = en;
        }
        if (s->t_first_f > first_f)
            first_f = s->t_first_f;
    }
    fprintf(stderr,
            "docker flame: timings (ms): ping %.0f, inspect %.0f, image %.0f, create %.0f, "
            "attach+start %.0f, start->recording %.0f, recording %.0f, recording->profile "
            "%.0f, profile stream %.0f, remove %.0f, write %.0f, total %.0f\n",
            (t->ping - t->t0) * 1000, (t->inspect - t->ping) * 1000, (t->image - t->inspect) * 1000,
            (t->create - t->image) * 1000, (t->start - t->create) * 1000,
            rec_start ? (rec_start - t->start) * 1000 : 0,
            rec_start ? (rec_end - rec_start) * 1000 : 0,
            first_f && rec_end ? (first_f - rec_end) * 1000 : 0,
            first_f ? (t->streams_done - first_f) * 1000 : 0, (t->removed - t->streams_done) * 1000,
            (t_written - t->removed) * 1000, (t_written - t->t0) * 1000);
    for (int i = 0; i < r->n; i++) {
        json_t *tm = json_object_get(r->s[i].pr.summary, "timings_ms");
        if (!tm)
            continue;
        _cleanup_free_ char *js = json_dumps(tm, JSON_COMPACT);
        char clean[1024];
        proto_sanitize(js ? js : "", clean, sizeof clean);
        fprintf(stderr, "docker flame: sidecar timings (ms) %s: %s\n", r->s[i].name, clean);
        /* CapEff per phase as the sidecar measured it (docs/HARDENING.md "Privileges") */
        json_t *caps = json_object_get(r->s[i].pr.summary, "caps");
        _cleanup_free_ char *cj = caps ? json_dumps(caps, JSON_COMPACT) : NULL;
        if (cj) {
            proto_sanitize(cj, clean, sizeof clean);
            fprintf(stderr, "docker flame: sidecar caps %s: %s\n", r->s[i].name, clean);
        }
    }
}

/* ---- profile verb ---- */

static unsigned g_events_at_follow_end;
/* Ctrl-C/SIGTERM while the files are written: abort (the temp file goes, nothing is renamed). */
static bool events_since_follow(void)
{
    return sess_event_count() != g_events_at_follow_end;
}

static int cmd_profile(const ep_globals *g, int argc, char **argv)
{
    flame_err err = FLAME_ERR_INIT;
    flame_opts o;
    opts_init(&o);
    double t0 = sess_now();
    if (opts_parse(argc, argv, &o, &err) < 0) {
        opts_clear(&o);
        return fail(&err);
    }
    if (o.help) {
        usage(stdout);
        opts_clear(&o);
        return 0;
    }
    if (o.version) {
        printf("docker-flame version %s\n", FLAME_VERSION);
        opts_clear(&o);
        return 0;
    }
    /* Output names are fixed before anything is started: a bad -o fails before the engine. */
    time_t when = time(NULL);
    char *paths[64][FMT_COUNT];
    if (o.ncontainers > 64) {
        opts_clear(&o);
        flame_fail(&err, FLAME_EXIT_USAGE, "at most 64 containers at once");
        return fail(&err);
    }
    memset(paths, 0, sizeof paths);
    int rc = 0;
    for (int i = 0; i < o.ncontainers && rc == 0; i++)
        rc = out_paths(&o, o.containers[i], o.ncontainers, when, paths[i], &err);

    engine *e = NULL;
    sess *ss = calloc((size_t)o.ncontainers, sizeof *ss);
    run_ctx r = {.o = &o, .s = ss, .n = o.ncontainers, .debug = g->debug};
    r.tm.t0 = t0;
    progress_init(&r.pg, stderr, o.quiet);
    int exit_code = 0;
    if (!ss)
        rc = flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0)
        rc = open_engine(g, &e, &err);
    /* after the engine (its errors come first), before any sidecar: a read-only or missing
     * output dir fails now, not after the whole profile */
    for (int i = 0; i < o.ncontainers && rc == 0; i++)
        for (int f = 0; f < FMT_COUNT && rc == 0; f++)
            if (paths[i][f])
                rc = out_check_dir(paths[i][f], &err);
    r.tm.ping = sess_now();
    r.e = e;
    for (int i = 0; ss && i < o.ncontainers; i++)
        ss[i].arg = o.containers[i];
    if (rc == 0)
        rc = run_profile(&r, &err);
    g_events_at_follow_end = sess_event_count();
    if (rc < 0)
        exit_code = fail(&err);

    /* Outputs, per container: a failed sidecar does not cost the others their profile. */
    if (rc == 0) {
        for (int i = 0; i < r.n; i++) {
            sess *s = &ss[i];
            flame_err e2 = FLAME_ERR_INIT;
            if (session_failure(s, r.interrupts > 0 || r.cmd_done, &e2)) {
                int c = fail(&e2);
                if (!exit_code)
                    exit_code = c;
                continue;
            }
            /* Default names use the container's name, known only after the inspect. */
            char *np[FMT_COUNT];
            if (out_paths(&o, s->name, o.ncontainers, when, np, &e2) == 0) {
                for (int f = 0; f < FMT_COUNT; f++) {
                    free(paths[i][f]);
                    paths[i][f] = np[f];
                }
            }
            char subtitle[256], date[64];
            struct tm tm;
            localtime_r(&when, &tm);
            strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
            snprintf(subtitle, sizeof subtitle, "%.0f samples at %d Hz, %s",
                     profile_total(s->pr.prof), o.frequency, date);
            out_render rr = {.prof = s->pr.prof,
                             .o = &o,
                             .name = s->name,
                             .subtitle = subtitle,
                             .cancelled = events_since_follow};
            bool wrote_all = true;
            for (int f = 0; f < FMT_COUNT; f++) {
                if (!paths[i][f])
                    continue;
                int w = out_write_saved(f, &paths[i][f], &rr, &e2);
                if (w > 0) { /* saved elsewhere: still an error, but the profile is kept */
                    int c = fail(&e2);
                    if (!exit_code)
                        exit_code = c;
                } else if (w < 0) {
                    if (!e2.msg[0])
                        flame_fail(&e2, FLAME_EXIT_INTERRUPTED, "aborted while writing %s",
                                   paths[i][f]);
                    int c = fail(&e2);
                    if (!exit_code)
                        exit_code = c;
                    free(paths[i][f]);
                    paths[i][f] = NULL;
                    wrote_all = false;
                }
            }
            (void)wrote_all;
            print_summary(s, &o, paths[i]);
        }
        if (r.cmd_pid > 0 && r.cmd_done) {
            int st = r.cmd_status;
            if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
                fprintf(stderr, "docker flame: %s failed: exit status %d\n", o.cmd[0],
                        WEXITSTATUS(st));
                if (!exit_code)
                    exit_code = FLAME_EXIT_ERROR;
            } else if (WIFSIGNALED(st)) {
                fprintf(stderr, "docker flame: %s was killed by signal %d\n", o.cmd[0],
                        WTERMSIG(st));
                if (!exit_code)
                    exit_code = FLAME_EXIT_ERROR;
            }
        }
    }
    if (g->debug || getenv("DOCKER_FLAME_TIMINGS"))
        if (rc == 0)
            print_timings(&r, sess_now());
    for (int i = 0; ss && i < o.ncontainers; i++)
        sess_clear(&ss[i]);
    for (int i = 0; i < o.ncontainers && i < 64; i++)
        for (int f = 0; f < FMT_COUNT; f++)
            free(paths[i][f]);
    free(ss);
    engine_free(e);
    opts_clear(&o);
    return exit_code;
}

/* ---- diff/merge: profiling containers for plugin/cmd_diff.c ---- */

typedef struct prof_ctx {
    const ep_globals *g;
    engine *e;
} prof_ctx;

static int prof_engine(prof_ctx *c, flame_err *err)
{
    return c->e ? 0 : open_engine(c->g, &c->e, err);
}

static int prof_is_container(void *ud, const char *arg)
{
    prof_ctx *c = ud;
    flame_err err = FLAME_ERR_INIT;
    if (prof_engine(c, &err) < 0)
        return 0;
    _cleanup_free_ char *esc = engine_escape(arg);
    json_t *j = NULL;
    long st = 0;
    int rc = esc ? engine_json(c->e, "GET", NULL, &j, &st, &err, "/containers/%s/json", esc) : -1;
    json_decref(j);
    return rc == 0;
}

static int prof_profile(void *ud, const char *const *containers, size_t n, double duration_s,
                        profile **out, flame_err *err)
{
    prof_ctx *c = ud;
    if (prof_engine(c, err) < 0)
        return -1;
    flame_opts o;
    opts_init(&o);
    o.duration_s = duration_s;
    sess *ss = calloc(n, sizeof *ss);
    if (!ss)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    run_ctx r = {.e = c->e, .o = &o, .s = ss, .n = (int)n, .debug = c->g->debug};
    progress_init(&r.pg, stderr, false);
    for (size_t i = 0; i < n; i++)
        ss[i].arg = containers[i];
    int rc = run_profile(&r, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (session_failure(&ss[i], r.interrupts > 0, err)) {
            rc = -1;
            break;
        }
        out[i] = steal_pointer(&ss[i].pr.prof);
    }
    for (size_t i = 0; i < n; i++)
        sess_clear(&ss[i]);
    free(ss);
    return rc;
}

static int cmd_with_profiler(const ep_globals *g, int (*fn)(int, char **, const flame_profiler *),
                             int argc, char **argv)
{
    prof_ctx c = {.g = g};
    flame_profiler pr = {.is_container = prof_is_container, .profile = prof_profile, .ctx = &c};
    int rc = fn(argc, argv, &pr);
    engine_free(c.e);
    return rc;
}

static int cmd_gc(const ep_globals *g, int argc, char **argv)
{
    bool all = false;
    flame_err err = FLAME_ERR_INIT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a")) {
            all = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("Usage:  docker flame gc [--all]\n\nRemove sidecar containers left behind by "
                   "docker flame (label %s).\nSidecars whose docker-flame process is "
                   "alive are kept unless --all (running ones are\nstopped with SIGTERM first so "
                   "they restore the target).\n",
                   "com.docker-flame.sidecar=1");
            return 0;
        } else {
            flame_fail(&err, FLAME_EXIT_USAGE, "gc: unknown argument %s", argv[i]);
            return fail(&err);
        }
    }
    engine *e = NULL;
    if (open_engine(g, &e, &err) < 0)
        return fail(&err);
    int rc = sess_gc(e, all, &err);
    engine_free(e);
    return rc < 0 ? fail(&err) : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "docker-cli-plugin-metadata"))
        return print_metadata();
    flame_err err = FLAME_ERR_INIT;
    ep_globals g;
    ep_globals_init(&g);
    int i;
    if (ep_parse_globals(argc, argv, &g, &i, &err) < 0)
        return fail(&err);
    /* `docker help flame` runs us as `docker-flame help flame`. */
    if (i < argc && !strcmp(argv[i], "help")) {
        usage(stdout);
        return 0;
    }
    if (i < argc && !strcmp(argv[i], "flame"))
        i++;
    int ac = argc - i;
    char **av = argv + i;
    if (ac == 0) {
        usage(stderr);
        return FLAME_EXIT_USAGE;
    }
    if (sess_signals_install(&err) < 0)
        return fail(&err);
    sess_plugin_socket_connect();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        flame_fail(&err, FLAME_EXIT_ERROR, "cannot initialise libcurl");
        return fail(&err);
    }
    const char *verb = av[0];
    int rc;
    if (!strcmp(verb, "fold"))
        rc = flame_cmd_fold(ac, av);
    else if (!strcmp(verb, "render"))
        rc = flame_cmd_render(ac, av);
    else if (!strcmp(verb, "diff"))
        rc = cmd_with_profiler(&g, flame_cmd_diff, ac, av);
    else if (!strcmp(verb, "merge"))
        rc = cmd_with_profiler(&g, flame_cmd_merge, ac, av);
    else if (!strcmp(verb, "gc"))
        rc = cmd_gc(&g, ac, av);
    else if (!strcmp(verb, "top"))
        rc = top_cmd(&g, open_engine, ac, av);
    else
        rc = cmd_profile(&g, ac, av);
    curl_global_cleanup();
    return rc;
}
