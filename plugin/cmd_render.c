/* `docker flame render`: folded stacks (or a docker-flame SVG) in, an SVG flame graph,
 * speedscope JSON, pprof or folded text out. Options follow flamegraph.pl's names. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/args.h"
#include "flame/palette.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/graph.h"
#include "plugin/out/output.h"

static const char usage_head[] =
    "Usage:  docker flame render [OPTIONS] [FILE|-] > graph.svg\n"
    "\n"
    "Draw an interactive flame graph from folded stacks: one line per stack, frames from the\n"
    "root to the leaf separated by ';', then a count (\"main;work;compute 42\"). Two counts per\n"
    "line (\"stack BEFORE AFTER\") make a differential graph: widths are AFTER, frames that grew\n"
    "are red, frames that shrank blue. FILE may also be an SVG written by docker flame, which\n"
    "carries its data: re-render it with other options, or turn it back into folded text.\n"
    "Without FILE (or with -), reads standard input.\n"
    "\n"
    "Options (names as in flamegraph.pl; -opt and --opt both work):\n";

static const char usage_tail[] =
    "\n"
    "Palettes: hot (default), java, mem, io, wakeup, chain, js, perl, red, green, blue, aqua,\n"
    "yellow, purple, orange. java: green = Java (JIT _[j] or a Java-looking name), aqua =\n"
    "inlined _[i], purple = interpreted _[int], yellow = C++, orange = kernel _[k], red =\n"
    "other native code.\n"
    "\n"
    "Examples:\n"
    "  docker flame render stacks.folded > cpu.svg\n"
    "  docker flame render --colors java --title 'web, 30 s' stacks.folded -o web.svg\n"
    "  docker flame render --format speedscope cpu.svg > cpu.speedscope.json\n"
    "  docker flame render --format folded cpu.svg > cpu.folded\n"
    "  docker flame render --format pprof -o cpu.pb.gz cpu.folded   # go tool pprof cpu.pb.gz\n"
    "\n"
    "In the graph: click a frame to zoom, \"Reset Zoom\" to go back, Ctrl-F (or F3) to search\n"
    "with a regular expression (\"ic\" or Ctrl-I toggles case), the matched share shows bottom\n"
    "right. The URL keeps the search (?s=) and the zoom (?x=&y=).\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line.\n";

typedef struct render_args {
    render_opts o;
    graph_opts g;
    int fmt;
    const char *output;
    double embed_mb;
    int64_t height; /* render_opts.height is an int */
    int64_t hz;     /* pprof: the sampling frequency the counts were taken at */
    args_operands in;
    bool help;
} render_args;

/* --bgcolors' named values, for completion (a #rrggbb is valid too) */
static const char *const bgcolor_names[] = {"yellow", "blue", "green", "grey", NULL};

static int store_bgcolors(void *base, const arg_val *v, flame_err *err)
{
    if (!palette_bgcolor_valid(v->str))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "--bgcolors: \"%.64s\" is not yellow, blue, green, grey or #rrggbb",
                          v->str);
    ((render_args *)base)->o.bgcolors = v->str;
    return 0;
}

static int store_cp(void *base, const arg_val *v, flame_err *err)
{
    (void)v, (void)err;
    ((render_args *)base)->o.palette_file = "palette.map";
    return 0;
}

static int store_no_embed(void *base, const arg_val *v, flame_err *err)
{
    (void)v, (void)err;
    ((render_args *)base)->o.embed_folded = false;
    return 0;
}

#define F(field, T) ARG_FIELD(render_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    OUT_FORMAT_SPEC(F(fmt, int),
                    "svg, speedscope (JSON for speedscope.app), folded, pprof\n"
                    "(gzip'd profile.proto for go tool pprof); default: from the\n"
                    "extension of -o, else svg",
                    out_fmt_names, 0),
    OUT_OUTPUT_SPEC(F(output, const char *), "FILE",
                    "write FILE (atomically) instead of standard output"),
    {.lng = "frequency", .kind = ARG_INT, .off = F(hz, int64_t), .meta = "HZ",
     .help = "pprof: samples per second the counts were taken at, for its\ncpu/nanoseconds "
     "values (99, docker flame's default)", .lo = 1, .hi = 1000000},
    {.lng = "no-embed", .kind = ARG_FLAG, .store = store_no_embed,
     .help = "do not embed the folded data in the SVG (smaller; cannot be re-read)"},
    {.lng = "embed-limit", .kind = ARG_NUM, .off = F(embed_mb, double), .meta = "MB",
     .help = "embed the data only when it takes at most MB megabytes (32; 0 = any)", .lo = 0,
     .hi = 1 << 20},
    {.lng = "subtitle", .kind = ARG_STR, .off = F(o.subtitle, const char *), .meta = "TEXT",
     .help = "second title line"},
    {.lng = "height", .kind = ARG_INT, .off = F(height, int64_t), .meta = "PX",
     .help = "frame height (16)", .lo = 2, .hi = 10000},
    {.lng = "fonttype", .kind = ARG_STR, .off = F(o.fonttype, const char *), .meta = "FONT",
     .help = "font family (Verdana)"},
    {.lng = "fontsize", .kind = ARG_NUM, .off = F(o.fontsize, double), .meta = "PX",
     .help = "font size (12)", .lo = 1, .hi = 500},
    {.lng = "fontwidth", .kind = ARG_NUM, .off = F(o.fontwidth, double), .meta = "RATIO",
     .help = "average character width / font size, to cut labels (0.59)", .lo = 0.01, .hi = 10},
    {.lng = "countname", .kind = ARG_STR, .off = F(o.countname, const char *), .meta = "UNIT",
     .help = "unit shown in tooltips (samples)"},
    {.lng = "nametype", .kind = ARG_STR, .off = F(o.nametype, const char *), .meta = "TEXT",
     .help = "prefix of the details line (Function:)"},
    {.lng = "bgcolors", .kind = ARG_STR, .store = store_bgcolors, .meta = "COLOR",
     .choices = bgcolor_names,
     .help = "yellow, blue, green, grey or #rrggbb"},
    {.lng = "hash", .kind = ARG_FLAG, .off = F(o.hash, bool),
     .help = "colours by name hash (similar names, similar colours)"},
    {.lng = "random", .kind = ARG_FLAG, .off = F(o.random, bool),
     .help = "random colours (not reproducible)"},
    {.lng = "cp", .kind = ARG_FLAG, .store = store_cp,
     .help = "consistent palette: read and update ./palette.map"},
    {.lng = "palette-file", .kind = ARG_STR, .off = F(o.palette_file, const char *), .meta = "F",
     .help = "same with another file", .complete = "file"},
    {.lng = "reverse", .kind = ARG_FLAG, .off = F(o.reverse, bool),
     .help = "reverse stacks (leaf at the bottom): merges callers of hot leaves"},
    {.lng = "inverted", .kind = ARG_FLAG, .off = F(o.inverted, bool),
     .help = "icicle graph (root at the top)"},
    /* -i was --inverted here while it is --interval in top: the short form is gone from the help
     * and completion, the old spelling still works (as the single-dash long option "-i") */
    {.lng = "i", .kind = ARG_FLAG, .off = F(o.inverted, bool), .flags = ARG_HIDDEN},
    {.lng = "flamechart", .kind = ARG_FLAG, .off = F(o.flamechart, bool),
     .help = "keep input order (time order) instead of sorting"},
    {.lng = "negate", .kind = ARG_FLAG, .off = F(o.negate, bool),
     .help = "differential: swap red/blue and the sign of the change"},
    {.lng = "notes", .kind = ARG_STR, .off = F(o.notes, const char *), .meta = "TEXT",
     .help = "add a note to the SVG source"},
    {.lng = "total", .kind = ARG_NUM, .off = F(o.total, double), .meta = "N",
     .help = "width of 100% in counts (to compare graphs); ignored if too small", .lo = 0,
     .hi = 1e300},
    {.lng = "factor", .kind = ARG_NUM, .off = F(o.factor, double), .meta = "N",
     .help = "multiply counts in tooltips (e.g. samples to ms)", .lo = 1e-300, .hi = 1e300},
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on

const args_verb cmd_render_grammar = {.name = "docker flame render",
                                      .specs = specs,
                                      .nspecs = sizeof specs / sizeof *specs,
                                      .flags = ARGS_SINGLE_DASH_LONG,
                                      .shared = graph_specs,
                                      .nshared = GRAPH_NSPECS,
                                      .shared_off = F(g, graph_opts),
                                      .operands_off = F(in, args_operands)};
#undef F

int flame_cmd_render(int argc, char **argv)
{
    render_args a = {.fmt = -1, .embed_mb = -1};
    render_opts_default(&a.o);
    flame_err err = FLAME_ERR_INIT;
    int rc =
        cli_parse("render", &cmd_render_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (rc >= 0)
        return rc;
    if (a.in.n > 1) {
        args_error(&cmd_render_grammar, &err, "one input file at most, got \"%.100s\" too",
                   a.in.v[1]);
        return cli_fail("render", &err);
    }
    a.fmt = out_format(a.output, a.fmt, OUT_ALL_FORMATS, FMT_SVG, &err);
    if (a.fmt < 0)
        return cli_fail("render", &err);
    if (a.embed_mb >= 0)
        a.o.embed_limit = (size_t)(a.embed_mb * 1048576);
    if (a.height)
        a.o.height = (int)a.height;
    /* the graph options over the render defaults, the others as set */
    render_opts o = a.o;
    render_opts go;
    graph_apply(&a.g, &go);
    o.title = a.g.title ? go.title : o.title;
    o.colors = go.colors;
    o.width = go.width;
    o.minwidth = go.minwidth;
    o.minwidth_pct = go.minwidth_pct;
    const char *input = a.in.n ? a.in.v[0] : "-";
    if (strcmp(input, "-") == 0 && isatty(STDIN_FILENO))
        return cli_usage_error("render", "%s",
                               "no input: give a folded file, or pipe folded stacks in");

    profile *p = profile_new();
    if (!p) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        return cli_fail("render", &err);
    }
    profile_keep_order(p, o.flamechart);
    rc = profile_load_path(p, input, &err);
    if (rc == 0 && o.total > 0 && o.total < profile_total(p))
        fprintf(stderr,
                "docker flame render: warning: --total %g is less than the profile's total "
                "%g; using the profile's total\n",
                o.total, profile_total(p));
    const char *base = strrchr(input, '/');
    const char *name = o.title                   ? o.title
                       : strcmp(input, "-") == 0 ? "stdin"
                       : base                    ? base + 1
                                                 : input;
    if (rc == 0) {
        pprof_meta pm = {.hz = (double)a.hz, .comment = name};
        out_job job = {.p = p, .fmt = a.fmt, .ro = &o, .name = name, .pm = &pm};
        rc = out_write(a.output ? a.output : "-", &job, &err);
    }
    profile_free(p);
    return rc < 0 ? cli_fail("render", &err) : FLAME_EXIT_OK;
}
