/* `docker flame render`: folded stacks (or a docker-flame SVG) in, an SVG flame graph,
 * speedscope JSON or folded text out. Options follow flamegraph.pl's names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/args.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/graph.h"
#include "plugin/output.h"

static const char usage_head[] =
    "Usage: docker flame render [OPTIONS] [FILE|-] > graph.svg\n"
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
    "inlined _[i], yellow = C++, orange = kernel _[k], red = other native code.\n"
    "\n"
    "Examples:\n"
    "  docker flame render stacks.folded > cpu.svg\n"
    "  docker flame render --colors java --title 'web, 30 s' stacks.folded -o web.svg\n"
    "  docker flame render --format speedscope cpu.svg > cpu.speedscope.json\n"
    "  docker flame render --format folded cpu.svg > cpu.folded\n"
    "\n"
    "In the graph: click a frame to zoom, \"Reset Zoom\" to go back, Ctrl-F (or F3) to search\n"
    "with a regular expression (\"ic\" or Ctrl-I toggles case), the matched share shows bottom\n"
    "right. The URL keeps the search (?s=) and the zoom (?x=&y=).\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line.\n";

enum {
    R_FORMAT,
    R_OUTPUT,
    R_NO_EMBED,
    R_EMBED_LIMIT,
    R_SUBTITLE,
    R_HEIGHT,
    R_FONTTYPE,
    R_FONTSIZE,
    R_FONTWIDTH,
    R_COUNTNAME,
    R_NAMETYPE,
    R_BGCOLORS,
    R_HASH,
    R_RANDOM,
    R_CP,
    R_PALETTE_FILE,
    R_REVERSE,
    R_INVERTED,
    R_FLAMECHART,
    R_NEGATE,
    R_NOTES,
    R_TOTAL,
    R_FACTOR,
    R_HELP,
};

static const arg_spec specs[] = {
    {.lng = "format",
     .kind = ARG_CHOICE,
     .id = R_FORMAT,
     .meta = "FMT",
     .help = "svg (default), speedscope (JSON for speedscope.app), folded",
     .choices = out_fmt_names},
    {.lng = "output",
     .shrt = 'o',
     .kind = ARG_STR,
     .id = R_OUTPUT,
     .meta = "FILE",
     .help = "write FILE (atomically) instead of standard output",
     .complete = "file"},
    {.lng = "no-embed",
     .kind = ARG_FLAG,
     .id = R_NO_EMBED,
     .help = "do not embed the folded data in the SVG (smaller; cannot be re-read)"},
    {.lng = "embed-limit",
     .kind = ARG_NUM,
     .id = R_EMBED_LIMIT,
     .meta = "MB",
     .help = "embed the data only when it takes at most MB megabytes (32; 0 = any)",
     .lo = 0,
     .hi = 1 << 20},
    {.lng = "subtitle",
     .kind = ARG_STR,
     .id = R_SUBTITLE,
     .meta = "TEXT",
     .help = "second title line"},
    {.lng = "height",
     .kind = ARG_INT,
     .id = R_HEIGHT,
     .meta = "PX",
     .help = "frame height (16)",
     .lo = 2,
     .hi = 10000},
    {.lng = "fonttype",
     .kind = ARG_STR,
     .id = R_FONTTYPE,
     .meta = "FONT",
     .help = "font family (Verdana)"},
    {.lng = "fontsize",
     .kind = ARG_NUM,
     .id = R_FONTSIZE,
     .meta = "PX",
     .help = "font size (12)",
     .lo = 1,
     .hi = 500},
    {.lng = "fontwidth",
     .kind = ARG_NUM,
     .id = R_FONTWIDTH,
     .meta = "RATIO",
     .help = "average character width / font size, to cut labels (0.59)",
     .lo = 0.01,
     .hi = 10},
    {.lng = "countname",
     .kind = ARG_STR,
     .id = R_COUNTNAME,
     .meta = "UNIT",
     .help = "unit shown in tooltips (samples)"},
    {.lng = "nametype",
     .kind = ARG_STR,
     .id = R_NAMETYPE,
     .meta = "TEXT",
     .help = "prefix of the details line (Function:)"},
    {.lng = "bgcolors",
     .kind = ARG_STR,
     .id = R_BGCOLORS,
     .meta = "COLOR",
     .help = "yellow, blue, green, grey or #rrggbb"},
    {.lng = "hash",
     .kind = ARG_FLAG,
     .id = R_HASH,
     .help = "colours by name hash (similar names, similar colours)"},
    {.lng = "random",
     .kind = ARG_FLAG,
     .id = R_RANDOM,
     .help = "random colours (not reproducible)"},
    {.lng = "cp",
     .kind = ARG_FLAG,
     .id = R_CP,
     .help = "consistent palette: read and update ./palette.map"},
    {.lng = "palette-file",
     .kind = ARG_STR,
     .id = R_PALETTE_FILE,
     .meta = "F",
     .help = "same with another file",
     .complete = "file"},
    {.lng = "reverse",
     .kind = ARG_FLAG,
     .id = R_REVERSE,
     .help = "reverse stacks (leaf at the bottom): merges callers of hot leaves"},
    {.lng = "inverted",
     .shrt = 'i',
     .kind = ARG_FLAG,
     .id = R_INVERTED,
     .help = "icicle graph (root at the top)"},
    {.lng = "flamechart",
     .kind = ARG_FLAG,
     .id = R_FLAMECHART,
     .help = "keep input order (time order) instead of sorting"},
    {.lng = "negate",
     .kind = ARG_FLAG,
     .id = R_NEGATE,
     .help = "differential: swap red/blue and the sign of the change"},
    {.lng = "notes",
     .kind = ARG_STR,
     .id = R_NOTES,
     .meta = "TEXT",
     .help = "add a note to the SVG source"},
    {.lng = "total",
     .kind = ARG_NUM,
     .id = R_TOTAL,
     .meta = "N",
     .help = "width of 100% in counts (to compare graphs); ignored if too small",
     .lo = 0,
     .hi = 1e300},
    {.lng = "factor",
     .kind = ARG_NUM,
     .id = R_FACTOR,
     .meta = "N",
     .help = "multiply counts in tooltips (e.g. samples to ms)",
     .lo = 1e-300,
     .hi = 1e300},
    {.lng = "help", .shrt = 'h', .kind = ARG_FLAG, .id = R_HELP, .help = "this help"},
};

static const args_verb verb = {.name = "docker flame render",
                               .specs = specs,
                               .nspecs = sizeof specs / sizeof *specs,
                               .flags = ARGS_SINGLE_DASH_LONG,
                               .shared = graph_specs,
                               .nshared = GRAPH_NSPECS};

typedef struct render_args {
    render_opts o;
    graph_opts g;
    int fmt;
    const char *output, *input, *extra;
    bool help;
} render_args;

static int on_opt(void *ctx, const arg_spec *s, const arg_val *v, flame_err *err)
{
    render_args *a = ctx;
    render_opts *o = &a->o;
    int g = graph_opt(&a->g, s, v, err);
    if (g != 0)
        return g < 0 ? -1 : 0;
    switch (s->id) {
    case R_FORMAT:
        a->fmt = v->choice;
        break;
    case R_OUTPUT:
        a->output = v->str;
        break;
    case R_NO_EMBED:
        o->embed_folded = false;
        break;
    case R_EMBED_LIMIT:
        o->embed_limit = (size_t)(v->num * 1048576);
        break;
    case R_SUBTITLE:
        o->subtitle = v->str;
        break;
    case R_HEIGHT:
        o->height = (int)v->i;
        break;
    case R_FONTTYPE:
        o->fonttype = v->str;
        break;
    case R_FONTSIZE:
        o->fontsize = v->num;
        break;
    case R_FONTWIDTH:
        o->fontwidth = v->num;
        break;
    case R_COUNTNAME:
        o->countname = v->str;
        break;
    case R_NAMETYPE:
        o->nametype = v->str;
        break;
    case R_BGCOLORS:
        if (!render_bgcolor_valid(v->str))
            return flame_fail(err, FLAME_EXIT_USAGE,
                              "--bgcolors: \"%.64s\" is not yellow, blue, green, grey or #rrggbb",
                              v->str);
        o->bgcolors = v->str;
        break;
    case R_HASH:
        o->hash = true;
        break;
    case R_RANDOM:
        o->random = true;
        break;
    case R_CP:
        o->palette_file = "palette.map";
        break;
    case R_PALETTE_FILE:
        o->palette_file = v->str;
        break;
    case R_REVERSE:
        o->reverse = true;
        break;
    case R_INVERTED:
        o->inverted = true;
        break;
    case R_FLAMECHART:
        o->flamechart = true;
        break;
    case R_NEGATE:
        o->negate = true;
        break;
    case R_NOTES:
        o->notes = v->str;
        break;
    case R_TOTAL:
        o->total = v->num;
        break;
    case R_FACTOR:
        o->factor = v->num;
        break;
    case R_HELP:
        a->help = true;
        break;
    default:
        break;
    }
    return 0;
}

static int on_operand(void *ctx, const char *operand, flame_err *err)
{
    render_args *a = ctx;
    if (a->input)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "one input file at most, got \"%.100s\" too (see `%s --help`)", operand,
                          verb.name);
    a->input = operand;
    return 0;
}

int flame_cmd_render(int argc, char **argv)
{
    render_args a = {.fmt = FMT_SVG};
    render_opts_default(&a.o);
    flame_err err = FLAME_ERR_INIT;
    if (args_parse(&verb, argc - 1, argv + 1, on_opt, on_operand, &a, NULL, &err) < 0)
        return cli_fail("render", &err);
    if (a.help) {
        fputs(usage_head, stdout);
        args_help(&verb, stdout);
        fputs(usage_tail, stdout);
        return FLAME_EXIT_OK;
    }
    /* the graph options over the render defaults, the others as set */
    render_opts o = a.o;
    render_opts go;
    graph_apply(&a.g, &go);
    o.title = a.g.title ? go.title : o.title;
    o.colors = go.colors;
    o.width = go.width;
    o.minwidth = go.minwidth;
    o.minwidth_pct = go.minwidth_pct;
    const char *input = a.input ? a.input : "-";
    if (strcmp(input, "-") == 0 && isatty(STDIN_FILENO))
        return cli_usage_error("render", "%s",
                               "no input: give a folded file, or pipe folded stacks in");

    profile *p = profile_new();
    if (!p) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        return cli_fail("render", &err);
    }
    profile_keep_order(p, o.flamechart);
    int rc = profile_load_path(p, input, &err);
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
        out_job job = {.p = p, .fmt = a.fmt, .ro = &o, .name = name};
        rc = out_write(a.output ? a.output : "-", &job, &err);
    }
    profile_free(p);
    return rc < 0 ? cli_fail("render", &err) : FLAME_EXIT_OK;
}
