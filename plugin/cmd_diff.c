/* `docker flame diff`: two profiles (folded files, docker-flame SVGs, running containers) in,
 * a differential flame graph and its mirror out, plus the movers summary on stdout. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/args.h"
#include "common/atomic.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "flame/diff.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/graph.h"
#include "plugin/inputs.h"
#include "plugin/out/jsonw.h"
#include "plugin/out/output.h"

static const char usage_head[] =
    "Usage:  docker flame diff [OPTIONS] BEFORE AFTER [-o diff.svg]\n"
    "\n"
    "Compare two profiles. BEFORE and AFTER are each a folded file (\"a;b;c 12\" lines), an SVG\n"
    "written by docker flame (it carries its data), - for standard input, a stored range\n"
    "CONTAINER[:PID]@SINCE..UNTIL (windows the recorder kept, from the store of\n"
    "$DOCKER_FLAME_STORE: every JVM of the container, or the one of pid PID; times as in docker\n"
    "flame show --help; ..UNTIL left out = until now), or a running\n"
    "container: two containers are profiled at the same time for the same window; a container\n"
    "and a file: the container is profiled and compared with the file.\n"
    "\n"
    "Writes two differential flame graphs (difffolded.pl + flamegraph.pl semantics):\n"
    "  diff.svg         widths = AFTER; red = grew, blue = shrank (self change of each frame)\n"
    "  diff.mirror.svg  widths = BEFORE, same colours: shows the stacks that vanished, which have\n"
    "                   no width in diff.svg\n"
    "and prints the methods whose share of the samples grew or shrank most: one line per method\n"
    "whatever the JIT made of it (inlined code split by host below it), with the noise of two\n"
    "profiles of this size. Stacks that differ only in what the JIT made of a frame are matched\n"
    "as one (--exact keeps them apart).\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame diff before.folded after.folded            # diff.svg, diff.mirror.svg\n"
    "  docker flame diff web-v1.svg web-v2.svg -o web.svg\n"
    "  docker flame diff app-mysql app-postgres -d 60 -o db.svg   # two running containers\n"
    "  docker flame diff baseline.folded web --inclusive        # a container against a file\n"
    "  docker flame diff web@-2h..-1h web@-1h                   # the last hour against the one\n"
    "  docker flame diff web@13:00..13:05 web@14:00..14:05      #   before; stored ranges\n"
    "  docker flame diff -s --no-normalize a.folded b.folded -o ab.folded\n"
    "  docker flame diff a.svg b.svg --summary-json movers.json   # for scripts\n"
    "\n"
    "Environment: DOCKER_FLAME_TIMINGS=1 prints where the time went (load, union, write).\n"
    "\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line; profiling containers\n"
    "uses the exit codes of docker flame (3 no container, 4 no JVM, ...).\n";

typedef struct diff_args {
    graph_opts g;
    const char *output;
    int fmt, normalize, mode;
    uint64_t duration_ms;
    diff_opts dopt;
    diff_movers_opts mopt;
    bool single, ignore_units, help;
    const char *summary_json;
    int64_t top;
    args_operands in;
} diff_args;

/* The formats a differential can be written in (speedscope has no notion of one): the parser's
 * choice index is mapped to the output format after parsing (diff_fmt). */
static const char *const diff_fmt_names[] = {"svg", "folded", "pprof", NULL};
static const int diff_fmt[] = {FMT_SVG, FMT_FOLDED, FMT_PPROF};

#define F(field, T) ARG_FIELD(diff_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    OUT_OUTPUT_SPEC(F(output, const char *), "FILE",
                    "diff.svg (default); FILE.folded or FILE.txt writes 'stack BEFORE\n"
                    "AFTER' lines instead (what difffolded.pl prints); FILE.pb.gz\n"
                    "writes pprof (AFTER, and BEFORE negated as go tool pprof\n"
                    "-diff_base does); - = stdout"),
    OUT_FORMAT_SPEC(F(fmt, int),
                    "svg, folded or pprof (default: from the extension of FILE)",
                    diff_fmt_names, 0),
    {.lng = "single", .kind = ARG_FLAG, .off = F(single, bool),
     .help = "write only FILE, not the mirrored graph"},
    {.lng = "normalize", .shrt = 'n', .kind = ARG_FLAG, .off = F(normalize, int), .flags = ARG_SET,
     .set = DIFF_NORM_ON,
     .help = "scale BEFORE to AFTER's total (default when the totals differ;\ncounts are "
     "truncated to integers as difffolded.pl -n does)"},
    {.lng = "normalise", .kind = ARG_FLAG, .off = F(normalize, int), .flags = ARG_SET | ARG_HIDDEN,
     .set = DIFF_NORM_ON},
    {.lng = "no-normalize", .kind = ARG_FLAG, .off = F(normalize, int), .flags = ARG_SET,
     .set = DIFF_NORM_OFF, .help = "compare raw counts"},
    {.lng = "no-normalise", .kind = ARG_FLAG, .off = F(normalize, int),
     .flags = ARG_SET | ARG_HIDDEN, .set = DIFF_NORM_OFF},
    {.lng = "strip-hex", .shrt = 's', .kind = ARG_FLAG, .off = F(dopt.strip_hex, bool),
     .help = "turn every 0x1234abcd in frame names into 0x... (difffolded.pl -s)"},
    {.lng = "exact", .kind = ARG_FLAG, .off = F(dopt.exact, bool),
     .help = "match stacks exactly as folded (default: as read, stacks that differ\nonly in what "
     "the JIT made of a frame, compiled, inlined or interpreted,\nare one)"},
    {.lng = "top", .kind = ARG_INT, .off = F(top, int64_t), .meta = "N",
     .help = "movers to list each way (10); 0 = no summary", .lo = 0, .hi = 100000},
    {.lng = "inclusive", .kind = ARG_FLAG, .off = F(mopt.inclusive, bool),
     .help = "movers by total (inclusive) share instead of self share"},
    {.lng = "all-frames", .kind = ARG_FLAG, .off = F(mopt.all_frames, bool),
     .help = "movers among all frames, not only Java methods"},
    {.lng = "ignore-units", .kind = ARG_FLAG, .off = F(ignore_units, bool),
     .help = "compare even if one profile counts samples and the other periods"},
    {.lng = "summary-json", .kind = ARG_STR, .off = F(summary_json, const char *),
     .meta = "FILE", .help = "also write the totals, movers and files as JSON to FILE\n"
     "(- = stdout; docs/SUMMARY.md)", .complete = "file"},
    INPUTS_MODE_SPEC(F(mode, int), "the profile type of the stored inputs (CONTAINER@SINCE..UNTIL):\n"
                     "cpu (default), wall, offcpu, alloc or lock"),
    INPUTS_DURATION_SPEC(F(duration_ms, uint64_t)),
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on

const args_verb cmd_diff_grammar = GRAPH_VERB("docker flame diff", specs, diff_args);
#undef F

/* "dir/diff.svg" -> "dir/diff.mirror.svg"; no extension -> "NAME.mirror". Caller frees. */
static char *mirror_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    char *s = NULL;
    if (dot && dot != (slash ? slash + 1 : path)) {
        if (asprintf(&s, "%.*s.mirror%s", (int)(dot - path), path, dot) < 0)
            return NULL;
    } else if (asprintf(&s, "%s.mirror", path) < 0) {
        return NULL;
    }
    return s;
}

typedef struct mirror_job {
    const char *path;
    out_job job;
    flame_err err;
    int rc;
} mirror_job;

static void *mirror_thread(void *ud)
{
    mirror_job *m = ud;
    m->rc = out_write(m->path, &m->job, &m->err);
    return NULL;
}

enum { NAME_COLS_MAX = 70, HOSTS_SHOWN = 3 };

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (s[i] & 0xc0) != 0x80;
    return c;
}

static bool lower_start(const char *s)
{
    return *s >= 'a' && *s <= 'z';
}

/* A long Java name made to fit: its package abbreviated to initials, as loggers print it
 * (org.h2.mvstore.MVMap.binarySearch -> o.h.m.MVMap.binarySearch), since the class and the
 * method are what tells it apart. NULL when that does not apply (no lower-case package part in
 * front); caller frees. */
static char *abbreviate(const char *s, size_t width)
{
    size_t n = strlen(s);
    if (utf8_chars(s, n) <= width || !lower_start(s))
        return NULL;
    char *b = malloc(n + 1);
    if (!b)
        return NULL;
    size_t o = 0;
    const char *p = s;
    /* package parts: lower-case identifiers followed by '.' or '/' */
    while (lower_start(p)) {
        const char *e = p;
        while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_')
            e++;
        if (*e != '.' && *e != '/')
            break;
        b[o++] = *p;
        b[o++] = *e;
        p = e + 1;
    }
    strcpy(b + o, p);
    return b;
}

/* Frame names come from the profiled container: never send control bytes to a terminal. A long
 * name gets its package abbreviated, then, if that is not enough, loses its start: the end is
 * the class and method. */
static void print_name(FILE *out, const char *s, int width)
{
    _cleanup_free_ char *abbr = abbreviate(s, (size_t)width);
    if (abbr)
        s = abbr;
    size_t n = strlen(s);
    int shown = 0;
    if (utf8_chars(s, n) > (size_t)width) {
        fputs("...", out);
        for (size_t drop = utf8_chars(s, n) - (size_t)(width - 3); drop; drop--) {
            s++; /* a whole UTF-8 sequence */
            while ((*s & 0xc0) == 0x80)
                s++;
        }
        shown = 3;
    }
    for (; *s; s++) {
        shown += (*s & 0xc0) != 0x80;
        putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
    }
    for (; shown < width; shown++)
        putc(' ', out);
}

static void print_numbers(FILE *out, const diff_mover *m)
{
    fprintf(out, "  %7.2f%%  %7.2f%%  %+8.2f", m->before_pct, m->after_pct, m->delta_pts);
    if (!isnan(m->noise_pts)) {
        char b[32];
        int l = snprintf(b, sizeof b, "±%.2f", m->noise_pts); /* '±' is two bytes, one column */
        fprintf(out, "%*s%s", l < 9 ? 9 - l : 1, "", b);
    }
    putc('\n', out);
}

/* One method a line (net: whatever the JIT made of it), and under it where its self time ran
 * when some of it was inlined: the hosts that changed most. */
static void print_mover_table(FILE *out, const char *head, const diff_mover *m, size_t n, int w)
{
    fprintf(out, "  %s\n", head);
    if (n == 0) {
        fputs("    (none)\n", out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        fputs("    ", out);
        print_name(out, m[i].name, w);
        print_numbers(out, &m[i]);
        /* one host: always inlined there, nothing to split */
        for (size_t k = 0; m[i].nhosts > 1 && k < m[i].nhosts && k < HOSTS_SHOWN; k++) {
            const diff_mover *h = &m[i].hosts[k];
            fputs(h->name ? "      inlined into " : "      not inlined", out);
            if (h->name)
                print_name(out, h->name, w - 15);
            else
                fprintf(out, "%*s", w - 13, "");
            print_numbers(out, h);
        }
        if (m[i].nhosts > HOSTS_SHOWN)
            fprintf(out, "      (%zu more: --summary-json lists them)\n",
                    m[i].nhosts - HOSTS_SHOWN);
    }
}

/* The methods that grew and shrank most (names owned by the diff). */
typedef struct movers {
    diff_mover *g, *s;
    size_t ng, ns;
} movers;

static void movers_free(movers *m)
{
    free(m->g);
    free(m->s);
}

static int find_movers(diff *d, const diff_movers_opts *o, size_t n, movers *m, flame_err *err)
{
    m->g = calloc(n ? n : 1, sizeof *m->g);
    m->s = calloc(n ? n : 1, sizeof *m->s);
    if (!m->g || !m->s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    return diff_movers(d, o, n, m->g, &m->ng, m->s, &m->ns, err);
}

/* The movers summary as aligned text. */
static int print_movers(const movers *m, const diff_movers_opts *o, const char *unit, FILE *out,
                        flame_err *err)
{
    const diff_mover *g = m->g, *s = m->s;
    size_t ng = m->ng, ns = m->ns;
    int w = 24;
    for (size_t i = 0; i < ng + ns; i++) {
        const diff_mover *x = i < ng ? &g[i] : &s[i - ng];
        size_t l = utf8_chars(x->name, strlen(x->name));
        for (size_t k = 0; x->nhosts > 1 && k < x->nhosts && k < HOSTS_SHOWN; k++)
            if (x->hosts[k].name && utf8_chars(x->hosts[k].name, strlen(x->hosts[k].name)) + 15 > l)
                l = utf8_chars(x->hosts[k].name, strlen(x->hosts[k].name)) + 15;
        if (l > (size_t)w)
            w = l > NAME_COLS_MAX ? NAME_COLS_MAX : (int)l;
    }
    fprintf(out, "%s share of %s (%% of each profile's %s):\n",
            o->inclusive ? "Inclusive (total)" : "Self",
            o->all_frames ? "all frames" : "Java methods", unit);
    bool noise = ng + ns > 0 && !isnan(ng ? g[0].noise_pts : s[0].noise_pts);
    fprintf(out, "    %-*s  %8s  %8s  %8s%s\n", w, "", "before", "after", "pts",
            noise ? "   noise" : "");
    print_mover_table(out, "grew most:", g, ng, w);
    print_mover_table(out, "shrank most:", s, ns, w);
    if (noise)
        fputs("(noise: two standard errors of the change at these sample counts; a change "
              "within it can be chance)\n",
              out);
    if (fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write summary");
    return 0;
}

/* --summary-json (docs/SUMMARY.md): the totals, the movers as printed, the files written. */
typedef struct diff_summary {
    const diff_args *a;
    const input *in;
    diff *d;
    const movers *mv;
    int fmt;
    const char *output, *mirror;
    time_t started;
    const double *t;
} diff_summary;

static void json_shares(jsonw *w, const diff_mover *m)
{
    jsonw_num(w, "before_pct", m->before_pct);
    jsonw_num(w, "after_pct", m->after_pct);
    jsonw_num(w, "delta_pts", m->delta_pts);
    if (isnan(m->noise_pts))
        jsonw_null(w, "noise_pts");
    else
        jsonw_num(w, "noise_pts", m->noise_pts);
}

static void json_movers(jsonw *w, const char *key, const diff_mover *m, size_t n)
{
    jsonw_array(w, key);
    for (size_t i = 0; i < n; i++) {
        jsonw_object(w, NULL);
        jsonw_str(w, "name", m[i].name);
        json_shares(w, &m[i]);
        if (m[i].nhosts) {
            jsonw_array(w, "hosts");
            for (size_t k = 0; k < m[i].nhosts; k++) {
                jsonw_object(w, NULL);
                jsonw_str(w, "inlined_into", m[i].hosts[k].name); /* NULL: not inlined */
                json_shares(w, &m[i].hosts[k]);
                jsonw_end(w);
            }
            jsonw_end(w);
        }
        jsonw_end(w);
    }
    jsonw_end(w);
}

static void json_file(jsonw *w, const char *fmt, const char *path, const char *widths)
{
    jsonw_object(w, NULL);
    jsonw_str(w, "format", fmt);
    jsonw_str(w, "path", path);
    jsonw_str(w, "widths", widths);
    jsonw_end(w);
}

static int write_summary(void *ctx, FILE *f, flame_err *err)
{
    const diff_summary *ds = ctx;
    jsonw w;
    jsonw_init(&w, f);
    jsonw_object(&w, NULL);
    jsonw_summary_header(&w, "diff", ds->started);
    jsonw_int(&w, "exit_code", 0);
    const char *side[2] = {"before", "after"};
    for (int i = 0; i < 2; i++) {
        jsonw_object(&w, side[i]);
        jsonw_str(&w, "input", ds->in[i].arg);
        jsonw_num(&w, "samples", i ? diff_total_after(ds->d) : diff_total_before(ds->d));
        jsonw_end(&w);
    }
    jsonw_bool(&w, "normalized", diff_normalized(ds->d));
    size_t merged;
    jsonw_str(&w, "matched", ds->a->dopt.exact ? "exact" : "as read");
    jsonw_num(&w, "stacks_matched", diff_matched(ds->d, &merged) ? (double)merged : 0);
    jsonw_object(&w, "movers");
    jsonw_str(&w, "by", ds->a->mopt.inclusive ? "inclusive" : "self");
    jsonw_str(&w, "frames", ds->a->mopt.all_frames ? "all" : "java");
    jsonw_int(&w, "limit", ds->a->top);
    json_movers(&w, "grew", ds->mv->g, ds->mv->ng);
    json_movers(&w, "shrank", ds->mv->s, ds->mv->ns);
    jsonw_end(&w);
    jsonw_array(&w, "files");
    json_file(&w, out_fmt_name(ds->fmt), ds->output, "after");
    if (ds->mirror)
        json_file(&w, out_fmt_name(ds->fmt), ds->mirror, "before");
    jsonw_end(&w);
    jsonw_object(&w, "timings_ms");
    const char *names[4] = {"load", "union", "summary", "write"};
    for (int i = 0; i < 4; i++)
        jsonw_num(&w, names[i], (double)(long long)((ds->t[i + 1] - ds->t[i]) * 1000 + 0.5));
    jsonw_num(&w, "total", (double)(long long)((ds->t[4] - ds->t[0]) * 1000 + 0.5));
    jsonw_end(&w);
    jsonw_end(&w);
    if (fflush(f) != 0 || ferror(f))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return 0;
}

int flame_cmd_diff(int argc, char **argv, const flame_profiler *prof)
{
    const char *vname = "diff";
    diff_args a = {
        .fmt = -1, .mode = -1, .duration_ms = 30000, .top = 10, .normalize = DIFF_NORM_AUTO};
    flame_err err = FLAME_ERR_INIT;
    int rc = cli_parse(vname, &cmd_diff_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (rc >= 0)
        return rc;
    a.dopt.normalize = (enum diff_norm)a.normalize;
    if (a.in.n != 2)
        return cli_usage_error(vname, "expected two profiles, BEFORE and AFTER (got %d)", a.in.n);
    /* speedscope has no notion of a differential: a .json name is refused */
    int fmt = out_format(a.output, a.fmt >= 0 && a.fmt < 3 ? diff_fmt[a.fmt] : -1,
                         1u << FMT_SVG | 1u << FMT_FOLDED | 1u << FMT_PPROF, FMT_SVG, &err);
    if (fmt < 0)
        return cli_fail(vname, &err);
    /* no -o: diff.svg, or diff.folded / diff.pb.gz for the format asked for */
    char dflt[32];
    snprintf(dflt, sizeof dflt, "diff%s", out_fmt_ext(fmt));
    const char *output = a.output ? a.output : dflt;
    if (a.summary_json && !strcmp(a.summary_json, "-") && !strcmp(output, "-"))
        return cli_usage_error(vname, "-o - and --summary-json - both want standard output");

    double t[5] = {mono_s()};
    time_t started = time(NULL);
    input in[2] = {{.arg = a.in.v[0]}, {.arg = a.in.v[1]}};
    rc = inputs_load(in, 2, prof, a.duration_ms, a.mode >= 0 ? ct_mode_names[a.mode] : NULL, &err);
    t[1] = mono_s();
    if (rc == 0)
        rc = inputs_check_plain(&in[0], &err);
    if (rc == 0)
        rc = inputs_check_plain(&in[1], &err);
    if (rc == 0 && !a.ignore_units)
        rc = inputs_check_units(&in[0], &in[1], &err);
    if (rc < 0) {
        inputs_free(in, 2);
        return cli_fail(vname, &err);
    }
    diff *d = NULL;
    rc = diff_new(in[0].p, in[1].p, &a.dopt, &d, &err);
    in[0].p = in[1].p = NULL; /* consumed */
    if (rc < 0)
        return cli_fail(vname, &err);
    t[2] = mono_s();
    if (diff_normalized(d)) {
        char b1[64], b2[64];
        fprintf(stderr,
                "docker flame diff: note: totals differ (%s %s, %s %s): %s scaled to %s's total "
                "(counts truncated, as difffolded.pl -n); --no-normalize compares raw counts\n",
                in[0].arg, count_grouped(diff_total_before(d), b1, sizeof b1), in[1].arg,
                count_grouped(diff_total_after(d), b2, sizeof b2), in[0].arg, in[1].arg);
    }
    size_t merged;
    if (diff_matched(d, &merged)) {
        char b1[64];
        fprintf(stderr,
                "docker flame diff: note: frames that differ only in what the JIT made of them "
                "(compiled, inlined, interpreted) are matched as one%s%s%s; --exact keeps them "
                "apart\n",
                merged ? " (" : "", merged ? count_grouped((double)merged, b1, sizeof b1) : "",
                merged ? (merged == 1 ? " stack joined another)" : " stacks joined others)") : "");
    }
    movers mv = {0};
    if (find_movers(d, &a.mopt, (size_t)a.top, &mv, &err) < 0) {
        movers_free(&mv);
        diff_free(d);
        return cli_fail(vname, &err);
    }
    if (a.top > 0) {
        /* with -o - the profile owns stdout: the summary goes to stderr */
        FILE *sout = strcmp(output, "-") == 0 || (a.summary_json && !strcmp(a.summary_json, "-"))
                         ? stderr
                         : stdout;
        char b1[64], b2[64];
        /* an alloc or lock diff counts bytes or ns: say so, as its graph does */
        int m = inputs_mode(in, 2);
        const char *unit = m > CT_MODE_CPU ? ct_mode((enum ct_mode)m)->unit : "samples";
        fprintf(sout, "%s -> %s (totals %s -> %s%s%s)\n", in[0].arg, in[1].arg,
                count_grouped(diff_total_before(d), b1, sizeof b1),
                count_grouped(diff_total_after(d), b2, sizeof b2), m > CT_MODE_CPU ? " " : "",
                m > CT_MODE_CPU ? unit : "");
        if (print_movers(&mv, &a.mopt, unit, sout, &err) < 0) {
            movers_free(&mv);
            diff_free(d);
            return cli_fail(vname, &err);
        }
    }

    t[3] = mono_s();
    render_opts ro;
    graph_apply(&a.g, &ro);
    _cleanup_free_ char *title = NULL, *sub = NULL, *sub_m = NULL, *mpath = NULL;
    if (!a.g.title && asprintf(&title, "Flame diff: %s -> %s", in[0].arg, in[1].arg) < 0)
        title = NULL;
    if (asprintf(&sub, "widths: %s; red = grew, blue = shrank (self change)", in[1].arg) < 0)
        sub = NULL;
    if (asprintf(&sub_m, "widths: %s (mirror: shows what vanished); red = grew, blue = shrank",
                 in[0].arg) < 0)
        sub_m = NULL;
    if (title)
        ro.title = title;
    ro.subtitle = sub;
    ro.diff_noise = diff_counts_samples(d); /* noise drawn white */
    _cleanup_free_ char *comment = NULL;
    if (asprintf(&comment, "diff: %s -> %s", in[0].arg, in[1].arg) < 0)
        comment = NULL;
    pprof_meta pm = {.comment = comment};
    inputs_apply_mode(inputs_mode(in, 2), &ro, &pm); /* bytes, ns: docs/MODES.md */
    out_job job = {.p = diff_view(d, false), .fmt = fmt, .ro = &ro, .name = "diff", .pm = &pm};
    /* no mirror next to a device or pipe (-o /dev/null: there is no "/dev/null.mirror") */
    bool mirror =
        !a.single && fmt == FMT_SVG && strcmp(output, "-") != 0 && !atomic_is_special(output);
    render_opts rm = ro;
    rm.negate = true; /* "after before" swapped back: red still means grew */
    rm.subtitle = sub_m;
    mirror_job mj = {
        .path = mirror ? (mpath = mirror_path(output)) : NULL,
        .job = {.p = mirror ? diff_view(d, true) : NULL, .fmt = fmt, .ro = &rm, .name = "diff"},
        .err = FLAME_ERR_INIT};
    if (mirror && (!mpath || !mj.job.p)) {
        rc = flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
    } else {
        /* the two graphs are independent: render and write them on two threads */
        pthread_t th;
        bool threaded = mirror && pthread_create(&th, NULL, mirror_thread, &mj) == 0;
        rc = out_write(output, &job, &err);
        if (threaded)
            pthread_join(th, NULL);
        else if (mirror)
            mirror_thread(&mj);
        if (rc == 0 && mirror && mj.rc < 0) {
            err = mj.err;
            rc = -1;
        }
    }
    t[4] = mono_s();
    if (rc == 0 && a.summary_json) {
        diff_summary ds = {.a = &a,
                           .in = in,
                           .d = d,
                           .mv = &mv,
                           .fmt = fmt,
                           .output = output,
                           .mirror = mirror ? mpath : NULL,
                           .started = started,
                           .t = t};
        if (out_write_with(a.summary_json, write_summary, &ds, &err) < 0)
            rc = flame_wrap(&err, "--summary-json");
    }
    movers_free(&mv);
    diff_free(d);
    if (rc < 0)
        return cli_fail(vname, &err);
    inputs_print_timings(vname, "union", t);
    if (mirror)
        fprintf(stderr, "docker flame diff: wrote %s (widths: %s) and %s (widths: %s)\n", output,
                in[1].arg, mpath, in[0].arg);
    else
        fprintf(stderr, "docker flame diff: wrote %s\n", output);
    return FLAME_EXIT_OK;
}
