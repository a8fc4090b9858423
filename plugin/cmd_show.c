/* `docker flame show`: the windows the recorder stored for some containers over a time range,
 * merged into one flame graph (any format, every graph option), or with --timeline the picture
 * of samples per window over time, to see when the CPU went up before choosing a range. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/args.h"
#include "common/cleanup.h"
#include "flame/render.h"
#include "flame/timeline.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/graph.h"
#include "plugin/inputs.h"
#include "plugin/out/output.h"
#include "plugin/stored.h"
#include "store/when.h"

static const char usage_head[] =
    "Usage:  docker flame show [OPTIONS] [CONTAINER...] [--since TIME] [--until TIME]\n"
    "\n"
    "What were the JVMs doing at 14:05? The recorder keeps profiling windows (e.g. 10 s each)\n"
    "in a profile store; show merges the windows of a time range into one flame graph. A\n"
    "CONTAINER is a name or an id (prefix); none = every container in the store. Each JVM of\n"
    "a container is stored apart: CONTAINER merges them, CONTAINER:PID is the one of that pid\n"
    "(`docker flame ls` lists them). A window counts when it overlaps the range. --timeline\n"
    "draws samples per window over time instead, one row per JVM: look at it first to find\n"
    "when the CPU went up.\n"
    "\n"
    "TIME is a time of today (14:03, 14:03:30, local time), a date and time (2026-11-24T14:03,\n"
    "2026-11-24T14:03:00Z, RFC 3339), or a time ago (15m, 2h, 1d, 1h30m, now).\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame show web --since 14:03 --until 14:07 -o web.svg\n"
    "  docker flame show web --since 2h --timeline -o busy.svg     # when was it busy?\n"
    "  docker flame show web api --since 30m --format folded -o - | grep Order\n"
    "  docker flame show web:7 --since 1h                          # only web's JVM of pid 7\n"
    "  docker flame show web --mode wall --since 30m     # what record --mode wall stored\n"
    "  docker flame show --store clickhouse://ch:8123/flame --host node-3 web --since 1d\n"
    "Stored ranges are inputs of diff and merge too: docker flame diff web@-2h..-1h web@-1h\n"
    "(one JVM: web:7@-1h; another type: diff --mode wall web@-2h..-1h web@-1h)\n"
    "\n"
    "Exit status: 0 ok, 1 error, 2 bad command line, 7 the store cannot be used (server\n"
    "unreachable, damaged file, written by a newer docker-flame), 8 nothing stored in the range\n"
    "(or no store there yet).\n";

typedef struct show_args {
    graph_opts g;
    const char *output, *since, *until, *store, *host;
    int fmt, mode;
    int64_t pid;
    bool timeline, help;
    args_operands in;
    /* the operands: container (name or id prefix) and JVM (0 = every one, or --pid) */
    char (*name)[256];
    int64_t *jvm;
} show_args;

#define F(field, T) ARG_FIELD(show_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "since", .kind = ARG_STR, .off = F(since, const char *), .meta = "TIME",
     .help = "start of the range (default: 1h ago)"},
    {.lng = "until", .kind = ARG_STR, .off = F(until, const char *), .meta = "TIME",
     .help = "end of the range (default: now)"},
    OUT_OUTPUT_SPEC(F(output, const char *), "FILE",
                    "output file (default flame-<container>-<since>.svg, or\ntimeline-...); - = "
                    "standard output"),
    OUT_FORMAT_SPEC(F(fmt, int),
                    "svg, folded, speedscope or pprof (default: from the extension\n"
                    "of -o, else svg)",
                    out_fmt_names, 0),
    {.lng = "timeline", .kind = ARG_FLAG, .off = F(timeline, bool),
     .help = "draw samples per window over time (SVG) instead"},
    {.lng = "pid", .kind = ARG_INT, .off = F(pid, int64_t), .meta = "PID",
     .help = "only this JVM (pid inside the container) of each\ncontainer; CONTAINER:PID picks one "
             "of one", .lo = 1, .hi = 1 << 22},
    INPUTS_MODE_SPEC(F(mode, int), "the profile type to show: cpu (default), wall, offcpu,\n"
                     "alloc or lock (what record --mode stored)"),
    STORED_HOST_SPEC(F(host, const char *)),
    STORED_STORE_SPEC(F(store, const char *)),
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on
#undef F
const args_verb cmd_show_grammar = GRAPH_VERB("docker flame show", specs, show_args);

/* What the output is about, for titles: "web", "web+api", "all containers". */
static void label_of(const show_args *a, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < a->in.n && o + 1 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "+" : "", a->in.v[i]);
    if (!a->in.n)
        snprintf(buf, cap, "all containers");
}

/* The output path: -o, else <prefix>-<label>-<since as YYYYmmdd-HHMMSS>[.<mode>].svg, the mode
 * when it is not cpu (as a profile of that mode names its files: docs/MODES.md) (caller frees). */
static char *default_path(const show_args *a, const char *prefix, const char *ext, int64_t since_ms)
{
    if (a->output)
        return strdup(a->output);
    char mext[48];
    snprintf(mext, sizeof mext, "%s%s%s", a->mode > CT_MODE_CPU ? "." : "",
             a->mode > CT_MODE_CPU ? ct_mode_names[a->mode] : "", ext);
    return stored_file_name(prefix, (const char *const *)a->in.v, a->in.n, since_ms, mext);
}

static int show_profile(const show_args *a, store *s, store_query q, flame_err *err)
{
    store_info info = {0};
    _cleanup_free_ char *path = NULL;
    profile *p = profile_new();
    int rc = p ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (int i = 0; rc == 0 && i < (a->in.n ? a->in.n : 1); i++) {
        uint64_t before = info.windows;
        q.container = a->in.n ? a->name[i] : NULL;
        q.jvm_pid = a->in.n ? a->jvm[i] : a->pid;
        rc = store_profile(s, &q, p, &info, err);
        if (rc == 0 && a->in.n > 1 && info.windows == before)
            fprintf(stderr, "docker flame show: note: nothing stored for %s in that range\n",
                    a->in.v[i]);
    }
    q.container = a->in.n == 1 ? a->name[0] : NULL;
    q.jvm_pid = a->in.n == 1 ? a->jvm[0] : a->pid;
    if (rc == 0 && info.windows == 0)
        rc = stored_nothing(s, &q, err);
    /* the one description of a stored range's output, shared with serve's exports */
    stored_job j;
    stored_job_init(&j, p, a->fmt, (const char *const *)a->in.v, a->in.n, &q, &info, &a->g);
    if (rc == 0 && profile_stacks(p) == 0)
        rc = flame_fail(err, FLAME_EXIT_EMPTY,
                        "%s: %llu windows stored from %s, but no samples in them (the JVMs "
                        "were idle)",
                        j.label, (unsigned long long)info.windows, j.range);
    if (rc == 0 && info.missing)
        fprintf(stderr,
                "docker flame show: warning: %llu samples left out: their stacks are "
                "missing from the store\n",
                (unsigned long long)info.missing);
    if (rc == 0 && !(path = default_path(a, "flame", out_fmt_ext(a->fmt), q.since_ms)))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0 && a->fmt == FMT_PPROF && info.hz_min && info.hz_min != info.hz_max)
        fprintf(stderr,
                "docker flame show: note: the range mixes windows recorded at %lld to %lld Hz; "
                "the pprof period says %lld Hz\n",
                (long long)info.hz_min, (long long)info.hz_max, (long long)info.hz_max);
    if (rc == 0)
        rc = out_write(path, &j.job, err);
    if (rc == 0)
        fprintf(stderr, "docker flame show: wrote %s (%s, %s)\n", path, j.sub, j.range);
    profile_free(p);
    return rc;
}

typedef struct tl_job {
    tl_series *series;
    size_t n;
    tl_opts o;
} tl_job;

static int write_timeline(void *ctx, FILE *f, flame_err *err)
{
    tl_job *j = ctx;
    return timeline_render(j->series, j->n, &j->o, f, err);
}

static int show_timeline(const show_args *a, store *s, store_query q, flame_err *err)
{
    store_series_list tl = {0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < (a->in.n ? a->in.n : 1); i++) {
        q.container = a->in.n ? a->name[i] : NULL;
        q.jvm_pid = a->in.n ? a->jvm[i] : a->pid;
        rc = store_timeline(s, &q, &tl, err);
    }
    q.container = a->in.n == 1 ? a->name[0] : NULL;
    q.jvm_pid = a->in.n == 1 ? a->jvm[0] : a->pid;
    if (rc == 0 && tl.n == 0)
        rc = stored_nothing(s, &q, err);
    char label[160], range[96], title[300];
    label_of(a, label, sizeof label);
    stored_range_text(q.since_ms, q.until_ms, range, sizeof range);
    /* in the type's unit: samples per second; a wall or off-CPU time (ns) as the threads it
     * stands for, ns per ns of wall time (not "samples"); bytes per second */
    const ct_mode_info *mi = a->mode > CT_MODE_CPU ? ct_mode((enum ct_mode)a->mode) : NULL;
    bool ns = mi && !strcmp(mi->unit, "ns");
    if (!mi)
        snprintf(title, sizeof title, "Samples per second: %s, %s", label, range);
    else if (ns)
        snprintf(title, sizeof title, "%c%s in threads (ns per ns): %s, %s",
                 toupper((unsigned char)mi->what[0]), mi->what + 1, label, range);
    else
        snprintf(title, sizeof title, "%c%s, %s per second: %s, %s",
                 toupper((unsigned char)mi->what[0]), mi->what + 1, mi->unit, label, range);
    tl_job j = {.series = calloc(tl.n ? tl.n : 1, sizeof *j.series),
                .n = tl.n,
                .o = {.title = a->g.title ? a->g.title : title,
                      .width = (int)a->g.width,
                      .from_ms = q.since_ms,
                      .to_ms = q.until_ms,
                      .unit = mi ? mi->unit : NULL,
                      .rate_unit = ns ? "threads" : NULL,
                      .rate_scale = ns ? 1e-9 : 0}};
    if (rc == 0 && !j.series)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; rc == 0 && i < tl.n; i++) {
        const store_series *se = &tl.series[i];
        tl_point *pts = malloc((se->n ? se->n : 1) * sizeof *pts);
        char *name = NULL;
        char jvm[40] = "every JVM"; /* windows of a recorder that did not tell JVMs apart */
        if (se->jvm_pid)
            snprintf(jvm, sizeof jvm, "JVM %lld", (long long)se->jvm_pid);
        if (!pts || asprintf(&name, "%s, %s on %s", se->container_name, jvm, se->host) < 0) {
            free(pts);
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            break;
        }
        for (size_t k = 0; k < se->n; k++)
            pts[k] = (tl_point){se->pts[k].start_ms, se->pts[k].end_ms, (double)se->pts[k].samples};
        j.series[i] = (tl_series){name, pts, se->n};
    }
    _cleanup_free_ char *path = rc == 0 ? default_path(a, "timeline", ".svg", q.since_ms) : NULL;
    if (rc == 0 && !path)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0)
        rc = out_write_with(path, write_timeline, &j, err);
    if (rc == 0)
        fprintf(stderr, "docker flame show: wrote %s (%zu JVMs, %s)\n", path, tl.n, range);
    for (size_t i = 0; j.series && i < tl.n; i++) {
        free((char *)j.series[i].name);
        free((tl_point *)j.series[i].pts);
    }
    free(j.series);
    store_timeline_free(&tl);
    return rc;
}

int flame_cmd_show(const ep_globals *g, int argc, char **argv)
{
    (void)g; /* the store, not the engine */
    const char *vname = "show";
    show_args a = {.fmt = -1, .mode = -1, .g = {.colors = "java"}}; /* a profile of JVMs */
    flame_err err = FLAME_ERR_INIT;
    int done = cli_parse(vname, &cmd_show_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (done >= 0)
        return done;
    if (stored_hide_password(&a.store, &err) < 0)
        return cli_fail(vname, &err);
    if (a.timeline && a.fmt >= 0 && a.fmt != FMT_SVG)
        return cli_usage_error(vname, "--timeline draws an SVG: drop --format");
    /* the one rule (plugin/out/output.h), checked before the store is opened */
    a.fmt =
        out_format(a.output, a.fmt, a.timeline ? 1u << FMT_SVG : OUT_ALL_FORMATS, FMT_SVG, &err);
    if (a.fmt < 0)
        return cli_fail(vname, &err);
    store_query q = {
        .host = a.host, .jvm_pid = a.pid, .type = a.mode >= 0 ? ct_mode_names[a.mode] : NULL};
    if (stored_range(a.since, a.until, stored_now_ms(), 3600 * 1000, &q.since_ms, &q.until_ms,
                     &err) < 0)
        return cli_usage_error(vname, "%s", err.msg);
    _cleanup_free_ char(*names)[256] = calloc(a.in.n ? (size_t)a.in.n : 1, sizeof *names);
    _cleanup_free_ int64_t *jvms = calloc(a.in.n ? (size_t)a.in.n : 1, sizeof *jvms);
    if (!names || !jvms) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        return cli_fail(vname, &err);
    }
    a.name = names;
    a.jvm = jvms;
    for (int i = 0; i < a.in.n; i++) {
        if (stored_select(a.in.v[i], names[i], sizeof names[i], &jvms[i], &err) < 0)
            return cli_usage_error(vname, "%s", err.msg);
        if (jvms[i] && a.pid && jvms[i] != a.pid)
            return cli_usage_error(vname, "%s and --pid %lld name two JVMs: give one", a.in.v[i],
                                   (long long)a.pid);
        jvms[i] = jvms[i] ? jvms[i] : a.pid;
    }
    store *s = NULL;
    int rc = stored_open_read(a.store, &s, &err);
    if (rc == 0)
        rc = a.timeline ? show_timeline(&a, s, q, &err) : show_profile(&a, s, q, &err);
    store_close(s);
    return rc < 0 ? cli_fail(vname, &err) : FLAME_EXIT_OK;
}
