/* `docker flame [OPTIONS] CONTAINER...`: the profile verb. Output names are fixed before
 * anything starts, the run (plugin/run/run.h) profiles every container at the same time, then
 * each profile is written in every format asked for and summarised; a failed container does not
 * cost the others their profile. Its descriptor (flame_profile_verb) is here, not in the table of
 * plugin/verbs.c: it has no name, and its --help (plugin/usage.c) lists that table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/err.h"
#include "flame/frame.h"
#include "flame/methods.h"
#include "flame/profile.h"
#include "plugin/cmd.h"
#include "plugin/cli.h"
#include "plugin/engine/engine.h"
#include "plugin/opts.h"
#include "plugin/out/output.h"
#include "plugin/run/progress.h"
#include "plugin/run/run.h"
#include "plugin/run/signals.h"
#include "plugin/stored.h"
#include "plugin/summary.h"
#include "plugin/usage.h"
#include "plugin/verbs.h"
#include "plugin/inputs.h"

/* The self samples of every Java method (what the "top Java methods" lines are part of). */
static double java_self(const profile *p)
{
    methods_opts mo = {.java_only = true, .measure = METHODS_SELF};
    methods *m = methods_new(&mo);
    double sum = 0;
    size_t n = 0;
    if (m && methods_add(m, p, NULL) == 0)
        for (const methods_row *r = methods_rows(m, &n); n > 0; r++, n--)
            sum += r->self;
    methods_free(m);
    return sum;
}

/* The leaves of a mode's profile (the classes allocated, the monitors' classes), summed. */
#define LEAVES_MAX 256
struct leaves {
    char *name[LEAVES_MAX];
    double v[LEAVES_MAX];
    size_t n;
};

static int add_leaf(void *ctx, const char *stack, size_t len, double count)
{
    struct leaves *l = ctx;
    const char *leaf = stack;
    for (size_t i = 0; i < len; i++)
        if (stack[i] == ';')
            leaf = stack + i + 1;
    size_t ln = (size_t)(stack + len - leaf);
    ln = frame_strip_annotation(leaf, ln);
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->name[i]) == ln && !memcmp(l->name[i], leaf, ln)) {
            l->v[i] += count;
            return 0;
        }
    if (l->n == LEAVES_MAX || !(l->name[l->n] = strndup(leaf, ln)))
        return 0; /* the summary shows the largest few: a rare one more does not matter */
    l->v[l->n++] = count;
    return 0;
}

/* One line per mode other than cpu: its total in its unit, its top leaves (the allocated
 * classes, the contended monitors' classes). */
static unsigned refused_modes(const proto *p)
{
    unsigned r = 0;
    for (size_t ji = 0; ji < p->njvms; ji++)
        r |= p->jvms[ji].refused;
    return r;
}

/* A mode a JVM refused (another agent holds the allocation sampler, our agent not loaded): one
 * line per JVM and mode, even with -q, and FLAME_EXIT_PERF ("not permitted"); 0 when none. */
static int say_refused(const run_target *s, unsigned modes)
{
    const proto *p = &s->pr;
    int rc = 0;
    for (size_t ji = 0; ji < p->njvms && ji < 16; ji++) {
        const ct_jvm *jv = &p->jvms[ji];
        unsigned r = jv->refused & modes;
        if (!r)
            continue;
        char names[64], why[512];
        ct_modes_name(r, names, sizeof names);
        proto_sanitize(jv->refused_why, why, sizeof why); /* the sidecar's, about the target */
        fprintf(stderr, "docker flame: %s: --mode %s refused in JVM pid %u: %s\n", s->name, names,
                jv->nspid, why[0] ? why : "(no reason given)");
        rc = FLAME_EXIT_PERF;
    }
    return rc;
}

static void print_mode_summary(const run_target *s, enum ct_mode m)
{
    const ct_mode_info *mi = ct_mode(m);
    const profile *pr = proto_profile(&s->pr, m);
    char b1[32];
    if (!pr && (refused_modes(&s->pr) & CT_MODE_BIT(m)))
        return; /* said by say_refused() */
    if (!pr) {
        fprintf(stderr, "%s: %s: nothing recorded (%s)\n", s->name, mi->name,
                m == CT_MODE_LOCK ? "no thread waited for a monitor or a lock"
                                  : "no sample in the recording");
        return;
    }
    double total = profile_total(pr);
    fprintf(stderr, "%s: %s: %s %s in %zu stacks", s->name, mi->what,
            count_grouped(total, b1, sizeof b1), mi->unit, profile_stacks(pr));
    /* the sidecar's samples (wall, offcpu): each lost one is an interval missing from the
     * totals, so say so rather than let them look whole */
    if ((m == CT_MODE_WALL || m == CT_MODE_OFFCPU) && s->pr.have_summary && s->pr.summary.lost)
        fprintf(stderr, " (%s samples lost: the recorder fell behind, the totals are short)",
                count_grouped((double)s->pr.summary.lost, b1, sizeof b1));
    fputc('\n', stderr);
    struct leaves l = {.n = 0};
    profile_each_stack(pr, add_leaf, &l);
    fprintf(stderr, "  top %s:\n", m == CT_MODE_ALLOC ? "classes allocated" : "classes waited for");
    for (int k = 0; k < 5 && total > 0; k++) {
        size_t best = l.n;
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i] >= 0 && (best == l.n || l.v[i] > l.v[best]))
                best = i;
        if (best == l.n)
            break;
        char clean[160];
        proto_sanitize(l.name[best], clean, sizeof clean); /* the target's names */
        fprintf(stderr, "    %5.1f%%  %s\n", l.v[best] * 100 / total, clean);
        l.v[best] = -1;
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.name[i]);
}

static void print_summary(const run_target *s, const flame_opts *o,
                          char *const paths[CT_MODE_COUNT][FMT_COUNT])
{
    if (o->quiet)
        return;
    const proto *p = &s->pr;
    unsigned modes = ct_modes_of(&o->rec);
    for (int m = CT_MODE_CPU + 1; m < CT_MODE_COUNT; m++)
        if (modes & CT_MODE_BIT(m))
            print_mode_summary(s, (enum ct_mode)m);
    if (!(modes & CT_MODE_BIT(CT_MODE_CPU)))
        goto files;
    double total = p->prof ? profile_total(p->prof) : 0;
    char b1[32], b2[32];
    fprintf(stderr, "%s: %s samples", s->name, count_grouped(total, b1, sizeof b1));
    const ct_summary *sum = &p->summary;
    if (p->have_summary && sum->sampling[0]) {
        char how[8], filt[8];
        proto_sanitize(sum->sampling, how, sizeof how);
        proto_sanitize(sum->filter, filt, sizeof filt);
        fprintf(stderr, " (sampled per %s%s%s)", !strcmp(how, "cpu") ? "CPU" : how,
                *filt && strcmp(filt, "pid") ? ", filter " : "",
                *filt && strcmp(filt, "pid") ? filt : "");
    }
    if (p->have_summary && sum->walks > 0) {
        fprintf(stderr, ", %.1f%% of stacks walked to the thread's root",
                100.0 * (double)sum->walk_status[0] / (double)sum->walks);
        if (ct_walk_cut(sum))
            fprintf(stderr, " (%llu cut)", (unsigned long long)ct_walk_cut(sum));
    }
    if (p->have_summary && sum->jit_leaf_samples > 0)
        fprintf(stderr, ", %.0f%% of %s JIT samples have Java names", sum->named_share * 100,
                count_grouped((double)sum->jit_leaf_samples, b2, sizeof b2));
    if (p->have_summary && sum->lost)
        fprintf(stderr, ", %s lost", count_grouped((double)sum->lost, b2, sizeof b2));
    fputc('\n', stderr);
    /* One line per JVM the sidecar found (all of it container data: sanitised). */
    for (size_t ji = 0; ji < p->njvms && ji < 16; ji++) {
        const ct_jvm *jv = &p->jvms[ji];
        char ver[32], why[256];
        proto_sanitize(jv->java_version[0] ? jv->java_version : "?", ver, sizeof ver);
        proto_sanitize(jv->reason, why, sizeof why);
        fprintf(stderr, "  JVM pid %u (java %s, names via %s)%s%s\n", jv->nspid, ver,
                ct_attach_name(jv->attach), *why ? ": " : "", why);
    }
    if (total > 0) {
        const char *names[5];
        double counts[5];
        size_t n = methods_top_self(p->prof, 5, true, names, counts);
        if (n)
            fprintf(stderr, "  top Java methods (self time):\n");
        for (size_t i = 0; i < n; i++) {
            char clean[160];
            proto_sanitize(names[i], clean, sizeof clean);
            /* drop the annotation: _[j]/_[i] (the folder's), _[int] (interpreted) */
            clean[frame_strip_annotation(clean, strlen(clean))] = 0;
            fprintf(stderr, "    %5.1f%%  %s\n", counts[i] * 100 / total, clean);
        }
        /* where the rest went, when Java methods are not most of it (a quiet server: the JIT
         * compiler, GC, idle I/O threads) */
        double other = total - java_self(p->prof);
        if (n && other > total * 0.2)
            fprintf(stderr,
                    "    %5.1f%%  outside Java methods (JIT compiler, GC, VM and native "
                    "code)\n",
                    other * 100 / total);
    }
files:
    for (int m = 0; m < CT_MODE_COUNT; m++)
        for (int f = 0; f < FMT_COUNT; f++)
            if (paths[m][f])
                fprintf(stderr, "  wrote %s\n", paths[m][f]);
    for (size_t i = 0; i < p->nwarn; i++) {
        char clean[512];
        proto_sanitize(p->warnings[i], clean, sizeof clean);
        fprintf(stderr, "  warning: %s\n", clean);
    }
    if (p->dropped_warn)
        fprintf(stderr, "  (%zu more warnings)\n", p->dropped_warn);
}

/* --summary-json: what print_summary() says for every container, and the run's outcome
 * (plugin/summary.c). Returns 0 or the exit code of a failed write. */
static int write_summary_json(const flame_opts *o, const run_result *r, bool ran, time_t when,
                              double t_written, int exit_code,
                              char *paths[][CT_MODE_COUNT][FMT_COUNT], const flame_err *terr)
{
    flame_err err = FLAME_ERR_INIT;
    size_t n = (size_t)r->n;
    _cleanup_free_ sum_target *t = calloc(n ? n : 1, sizeof *t);
    if (!t || !terr || !r->t) {
        flame_fail(&err, FLAME_EXIT_ERROR, "--summary-json: out of memory");
        return cli_fail("", &err);
    }
    for (size_t i = 0; i < n; i++)
        t[i] = (sum_target){.s = &r->t[i],
                            .paths = terr[i].code ? NULL : paths[i], /* written, every mode's */
                            .error = terr[i].code ? terr[i].msg : NULL,
                            .exit_code = terr[i].code};
    sum_profile sp = {.o = o,
                      .r = ran ? r : NULL,
                      .started = when,
                      .t_written = t_written,
                      .exit_code = exit_code,
                      .error = !ran && terr[0].code ? terr[0].msg : NULL,
                      .t = t,
                      .n = n};
    if (summary_write_profile(o->summary_json, &sp, &err) < 0)
        return cli_fail("", &err);
    return 0;
}

/* -q on a terminal, for a recording of a minute or more (or until Ctrl-C): one line, so a silent
 * terminal is not taken for a hung one. Without a terminal (scripts, CI) -q stays silent. */
static void quiet_note(const flame_opts *o)
{
    if (!o->quiet || o->cmd || (o->rec.duration_ms && o->rec.duration_ms < 60000) ||
        !isatty(STDERR_FILENO))
        return;
    char d[32] = "";
    if (o->rec.duration_ms)
        progress_fmt_secs((double)o->rec.duration_ms / 1000, d, sizeof d);
    fprintf(stderr, "docker flame: recording ");
    for (int i = 0; i < o->containers.n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", o->containers.v[i]);
    fprintf(stderr, " %s%s; Ctrl-C stops early and still writes the graph\n",
            o->rec.duration_ms ? "for " : "until Ctrl-C", d);
}

/* Where the time went (-D or DOCKER_FLAME_TIMINGS=1): the tool's own overhead around the
 * recording itself. Recording start = first P line's arrival minus its elapsed_ms. */
static void print_timings(const run_result *r, double t_written)
{
    double ms[RUN_TIMINGS];
    run_timings_ms(r, t_written, ms);
    fprintf(stderr,
            "docker flame: timings (ms): ping %.0f, inspect %.0f, image %.0f, create %.0f, "
            "attach+start %.0f, start->recording %.0f, recording %.0f, recording->profile "
            "%.0f, profile stream %.0f, remove %.0f, write %.0f, total %.0f\n",
            ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], ms[6], ms[7], ms[8], ms[9], ms[10], ms[11]);
    for (int i = 0; i < r->n; i++) {
        const proto *p = &r->t[i].pr;
        if (!p->have_summary)
            continue;
        /* the sidecar's own phases and its CapEff per privilege phase (docs/HARDENING.md
         * "Privileges"), as the JSON objects of its S line */
        fprintf(stderr, "docker flame: sidecar timings (ms) %s: {", r->t[i].name);
        for (int ph = 0; ph < CT_PH_COUNT; ph++)
            fprintf(stderr, "%s\"%s\":%llu", ph ? "," : "", ct_phase_name((enum ct_phase)ph),
                    (unsigned long long)p->summary.timings_ms[ph]);
        fprintf(stderr, "}\ndocker flame: sidecar caps %s: {", r->t[i].name);
        for (int ph = 0; ph < CT_CAPS_COUNT; ph++) {
            char clean[24];
            proto_sanitize(p->summary.caps[ph], clean, sizeof clean);
            fprintf(stderr, "%s\"%s\":\"%s\"", ph ? "," : "",
                    ct_cap_phase_name((enum ct_cap_phase)ph), clean);
        }
        fputc('}', stderr);
        fputc('\n', stderr);
        char how[8], filt[8];
        proto_sanitize(p->summary.sampling, how, sizeof how);
        proto_sanitize(p->summary.filter, filt, sizeof filt);
        fprintf(stderr, "docker flame: sidecar sampling %s: %s %s\n", r->t[i].name, how, filt);
    }
}

/* Ctrl-C/SIGTERM while the files are written: abort (the temp file goes, nothing is renamed).
 * ctx: the event count when the recording ended. */
static bool events_since_follow(void *ctx)
{
    return sig_event_count() != *(const unsigned *)ctx;
}

/* What a pprof file says beyond the stacks: the rate, when the recording started (estimated as
 * for print_timings: the first P line's arrival minus its elapsed_ms, on the wall clock), how
 * long it ran, and where the frames hold the JVM and thread (the sidecar roots stacks at
 * "java-<pid> <Main>" only when it found several JVMs: docs/SIDECAR.md). */
static void pprof_meta_of(const run_target *s, const flame_opts *o, time_t when, enum ct_mode m,
                          pprof_meta *pm)
{
    const proto *p = &s->pr;
    const ct_mode_info *mi = ct_mode(m);
    *pm = (pprof_meta){.hz = (double)o->rec.frequency,
                       .time_ns = (int64_t)when * 1000000000,
                       .duration_ns = (int64_t)p->prog.elapsed_ms * 1000000,
                       .container = s->name,
                       .layout = p->njvms > 1 ? PPROF_JVM_THEN_THREAD : PPROF_THREAD_FIRST};
    if (p->njvms == 1)
        pm->jvm_pid = (long)p->jvms[0].nspid;
    if (m != CT_MODE_CPU) { /* docs/MODES.md "pprof" */
        pm->type0 = mi->type0;
        pm->unit0 = mi->unit0;
        pm->type1 = mi->type1;
        pm->unit1 = mi->unit1;
        pm->period_type = mi->period_type;
        pm->period_unit = mi->period_unit;
        pm->first = p->mprof0[m];
        /* alloc: the interval asked for (the default one is raised while allocations are
         * fast; the weights are bytes whatever it was) */
        pm->period = m != CT_MODE_ALLOC          ? 1
                     : o->rec.alloc_interval > 0 ? o->rec.alloc_interval
                                                 : CT_ALLOC_INTERVAL;
    }
    if (s->t_first_p) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        double ago = mono_s() - (s->t_first_p - (double)s->first_p_elapsed_ms / 1000);
        pm->time_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - (int64_t)(ago * 1e9);
    }
}

/* One container's profile in every format asked for; a file that cannot be written is saved
 * in $TMPDIR instead (and still reported). Returns 0 or the exit code of the first failure;
 * paths[f] of a file not written is freed and NULL. */
static int write_outputs(const run_target *s, const flame_opts *o, time_t when, enum ct_mode m,
                         char *paths[FMT_COUNT], unsigned *events_at_follow_end)
{
    char subtitle[256], date[64], title[512];
    struct tm tm;
    localtime_r(&when, &tm);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    char n[32];
    const ct_mode_info *mi = ct_mode(m);
    const profile *prof = proto_profile(&s->pr, m);
    if (!prof) { /* said by print_summary(); an empty graph would say nothing */
        for (int f = 0; f < FMT_COUNT; f++) {
            free(paths[f]);
            paths[f] = NULL;
        }
        return 0;
    }
    if (m == CT_MODE_CPU)
        snprintf(subtitle, sizeof subtitle, "%s samples at %lld Hz, %s",
                 count_grouped(profile_total(prof), n, sizeof n), (long long)o->rec.frequency,
                 date);
    else
        snprintf(subtitle, sizeof subtitle, "%s: %s %s (sampled), %s", mi->what,
                 count_grouped(profile_total(prof), n, sizeof n), mi->unit, date);
    render_opts ro;
    graph_apply(&o->graph, &ro);
    if (m == CT_MODE_CPU)
        snprintf(title, sizeof title, "%s", o->graph.title ? o->graph.title : s->name);
    else
        snprintf(title, sizeof title, "%s - %s (%s)", o->graph.title ? o->graph.title : s->name,
                 mi->what, mi->unit);
    ro.title = title;
    ro.subtitle = subtitle;
    ro.countname = mi->unit; /* tooltips: "(1,234 bytes, 5.1%)" */
    ro.ptype = m == CT_MODE_CPU ? NULL : mi->name;
    ro.embed_folded = true; /* `docker flame diff` reads SVGs back */
    pprof_meta pm;
    pprof_meta_of(s, o, when, m, &pm);
    int exit_code = 0;
    for (int f = 0; f < FMT_COUNT; f++) {
        if (!paths[f])
            continue;
        out_job job = {.p = prof,
                       .fmt = f,
                       .ro = &ro,
                       .name = s->name,
                       .pm = &pm,
                       .cancelled = events_since_follow,
                       .cancel_ctx = events_at_follow_end};
        flame_err e2 = FLAME_ERR_INIT;
        int w = out_write_saved(&paths[f], &job, &e2);
        if (w > 0) { /* saved elsewhere: still an error, but the profile is kept */
            int c = cli_fail("", &e2);
            if (!exit_code)
                exit_code = c;
        } else if (w < 0) {
            if (!e2.msg[0])
                flame_fail(&e2, FLAME_EXIT_INTERRUPTED, "aborted while writing %s", paths[f]);
            int c = cli_fail("", &e2);
            if (!exit_code)
                exit_code = c;
            free(paths[f]);
            paths[f] = NULL;
        }
    }
    return exit_code;
}

int flame_cmd_profile(const ep_globals *g, int argc, char **argv)
{
    flame_err err = FLAME_ERR_INIT;
    flame_opts o;
    opts_init(&o);
    double t0 = mono_s();
    /* argv[0] is "flame" (the verb's own name, as for every verb) */
    if (opts_parse(argc - 1, argv + 1, &o, &err) < 0) {
        return cli_fail("", &err);
    }
    if (o.help) {
        flame_usage(stdout, flame_verbs, flame_nverbs);
        return 0;
    }
    if (o.version) {
        printf("docker-flame version %s\n", FLAME_VERSION);
        return 0;
    }
    if (o.summary_json && !strcmp(o.summary_json, "-") && o.output && !strcmp(o.output, "-")) {
        flame_fail(&err, FLAME_EXIT_USAGE,
                   "-o - and --summary-json - both want standard output (see `docker flame "
                   "--help`)");
        return cli_fail("", &err);
    }
    /* A load command that cannot start is refused before anything else (no profile at all). */
    if (o.cmd && run_cmd_check(o.cmd[0], &err) < 0)
        return cli_fail("", &err);
    /* Output names are fixed before anything is started: a bad -o fails before the engine. */
    time_t when = time(NULL);
    static char *paths[64][CT_MODE_COUNT][FMT_COUNT]; /* 64: args.h's ARGS_MAX_OPERANDS */
    memset(paths, 0, sizeof paths);
    unsigned modes = ct_modes_of(&o.rec);
    /* one mode: the names as ever; several, or not cpu: each name says its mode */
    bool infix = modes != CT_MODE_BIT(CT_MODE_CPU);
    if (__builtin_popcount(modes) > 1 && o.output && !strcmp(o.output, "-")) {
        flame_fail(&err, FLAME_EXIT_USAGE,
                   "-o -: standard output takes one mode, not %d (see `docker flame --help`)",
                   __builtin_popcount(modes));
        return cli_fail("", &err);
    }
    int rc = 0;
    for (int i = 0; i < o.containers.n && rc == 0; i++)
        for (int m = 0; m < CT_MODE_COUNT && rc == 0; m++)
            if (modes & CT_MODE_BIT(m))
                rc = out_paths_mode(o.output, o.formats, o.containers.v[i], o.containers.n, when,
                                    infix ? ct_mode((enum ct_mode)m)->name : NULL, paths[i][m],
                                    &err);

    engine *e = NULL;
    run_req req = {.sidecar = o.rec,
                   .targets = o.containers.v,
                   .n = o.containers.n,
                   .shared_pid = o.shared_pid,
                   .cmd = o.cmd,
                   .quiet = o.quiet,
                   .debug = g->debug,
                   .t0 = t0};
    run_result r;
    int exit_code = 0;
    if (run_result_init(&r, &req, &err) < 0)
        rc = -1;
    if (rc == 0)
        rc = engine_open(g, &e, &err);
    /* after the engine (its errors come first), before any sidecar: a read-only or missing
     * output dir fails now, not after the whole profile */
    for (int i = 0; i < o.containers.n && rc == 0; i++)
        for (int m = 0; m < CT_MODE_COUNT && rc == 0; m++)
            for (int f = 0; f < FMT_COUNT && rc == 0; f++)
                if (paths[i][m][f])
                    rc = out_check_dir(paths[i][m][f], &err);
    if (rc == 0) {
        quiet_note(&o);
        rc = run_profile(e, &req, &r, &err);
    }
    unsigned events_at_follow_end = sig_event_count();
    if (rc < 0)
        exit_code = cli_fail("", &err);
    /* each container's failure, for --summary-json */
    flame_err *terr = calloc((size_t)o.containers.n, sizeof *terr);
    for (int i = 0; terr && rc < 0 && i < o.containers.n; i++)
        terr[i] = err;

    /* Outputs, per container: a failed sidecar does not cost the others their profile. */
    if (rc == 0) {
        for (int i = 0; i < r.n; i++) {
            const run_target *s = &r.t[i];
            flame_err e2 = s->why;
            if (e2.code) {
                if (terr)
                    terr[i] = e2;
                int c = cli_fail("", &e2);
                if (!exit_code)
                    exit_code = c;
                continue;
            }
            for (int m = 0; m < CT_MODE_COUNT; m++) {
                if (!(modes & CT_MODE_BIT(m)))
                    continue;
                /* Default names use the container's name, known only after the inspect. */
                char *np[FMT_COUNT];
                if (out_paths_mode(o.output, o.formats, s->name, o.containers.n, when,
                                   infix ? ct_mode((enum ct_mode)m)->name : NULL, np, &e2) == 0) {
                    for (int f = 0; f < FMT_COUNT; f++) {
                        free(paths[i][m][f]);
                        paths[i][m][f] = np[f];
                    }
                }
                int c =
                    write_outputs(s, &o, when, (enum ct_mode)m, paths[i][m], &events_at_follow_end);
                if (c && !exit_code)
                    exit_code = c;
            }
            print_summary(s, &o, paths[i]);
            int c = say_refused(s, modes);
            if (c && !exit_code)
                exit_code = c;
        }
        if (r.cmd_done && r.cmd_error.code) {
            int c = cli_fail("", &r.cmd_error);
            if (!exit_code)
                exit_code = c;
        } else if (r.cmd_started && r.cmd_done) {
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
    double t_written = mono_s();
    if (g->debug || getenv("DOCKER_FLAME_TIMINGS"))
        if (rc == 0)
            print_timings(&r, t_written);
    if (o.summary_json) {
        int c = write_summary_json(&o, &r, rc == 0, when, t_written, exit_code, paths, terr);
        if (c && !exit_code)
            exit_code = c;
    }
    free(terr);
    for (int i = 0; i < o.containers.n && i < 64; i++)
        for (int m = 0; m < CT_MODE_COUNT; m++)
            for (int f = 0; f < FMT_COUNT; f++)
                free(paths[i][m][f]);
    run_result_free(&r);
    engine_free(e);
    return exit_code;
}

const flame_verb flame_profile_verb = {"", flame_cmd_profile, &opts_grammar, OPS_RUNNING,
                                       "profile the JVMs of containers"};
