/* `docker flame render`: folded stacks (or a docker-flame SVG) in, an SVG flame graph,
 * speedscope JSON or folded text out. Options follow flamegraph.pl's names. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "plugin/cmd.h"
#include "plugin/cli.h"

#include "common/atomic.h"
#include "flame/profile.h"
#include "flame/render.h"

static const char usage_text[] =
    "Usage: docker flame render [OPTIONS] [FILE|-] > graph.svg\n"
    "\n"
    "Draw an interactive flame graph from folded stacks: one line per stack, frames from the\n"
    "root to the leaf separated by ';', then a count (\"main;work;compute 42\"). Two counts per\n"
    "line (\"stack BEFORE AFTER\") make a differential graph: widths are AFTER, frames that grew\n"
    "are red, frames that shrank blue. FILE may also be an SVG written by docker flame, which\n"
    "carries its data: re-render it with other options, or turn it back into folded text.\n"
    "Without FILE (or with -), reads standard input.\n"
    "\n"
    "Output:\n"
    "  --format FMT        svg (default), speedscope (JSON for speedscope.app), folded\n"
    "  -o, --output FILE   write FILE (atomically) instead of standard output\n"
    "  --no-embed          do not embed the folded data in the SVG (smaller; cannot be re-read)\n"
    "  --embed-limit MB    embed the data only when it takes at most MB megabytes (32; 0 = any)\n"
    "\n"
    "Graph (names as in flamegraph.pl; -opt and --opt both work):\n"
    "  --title TEXT        title (default \"Flame Graph\", \"Icicle Graph\", \"Flame Chart\")\n"
    "  --subtitle TEXT     second title line\n"
    "  --width PX          image width (1200)\n"
    "  --height PX         frame height (16)\n"
    "  --minwidth PX|N%    omit frames narrower than PX pixels or N% of the total (0.1)\n"
    "  --fonttype FONT     font family (Verdana)\n"
    "  --fontsize PX       font size (12)\n"
    "  --fontwidth RATIO   average character width / font size, to cut labels (0.59)\n"
    "  --countname UNIT    unit shown in tooltips (samples)\n"
    "  --nametype TEXT     prefix of the details line (Function:)\n"
    "  --colors PALETTE    hot (default), java, mem, io, wakeup, chain, js, perl, red, green,\n"
    "                      blue, aqua, yellow, purple, orange. java: green = Java (JIT _[j] or a\n"
    "                      Java-looking name), aqua = inlined _[i], yellow = C++, orange =\n"
    "                      kernel _[k], red = other native code\n"
    "  --bgcolors COLOR    yellow, blue, green, grey or #rrggbb\n"
    "  --hash              colours by name hash (similar names, similar colours)\n"
    "  --random            random colours (not reproducible)\n"
    "  --cp                consistent palette: read and update ./palette.map\n"
    "  --palette-file F    same with another file\n"
    "  --reverse           reverse stacks (leaf at the bottom): merges callers of hot leaves\n"
    "  --inverted          icicle graph (root at the top)\n"
    "  --flamechart        keep input order (time order) instead of sorting\n"
    "  --negate            differential: swap red/blue and the sign of the change\n"
    "  --notes TEXT        add a note to the SVG source\n"
    "  --total N           width of 100% in counts (to compare graphs); ignored if too small\n"
    "  --factor N          multiply counts in tooltips (e.g. samples to ms)\n"
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
    OPT_TITLE = 256,
    OPT_SUBTITLE,
    OPT_WIDTH,
    OPT_HEIGHT,
    OPT_MINWIDTH,
    OPT_FONTTYPE,
    OPT_FONTSIZE,
    OPT_FONTWIDTH,
    OPT_COUNTNAME,
    OPT_NAMETYPE,
    OPT_COLORS,
    OPT_BGCOLORS,
    OPT_HASH,
    OPT_RANDOM,
    OPT_CP,
    OPT_PALETTE_FILE,
    OPT_REVERSE,
    OPT_INVERTED,
    OPT_FLAMECHART,
    OPT_NEGATE,
    OPT_NOTES,
    OPT_TOTAL,
    OPT_FACTOR,
    OPT_FORMAT,
    OPT_NO_EMBED,
    OPT_EMBED_LIMIT,
    OPT_HELP,
};

static const struct option long_opts[] = {
    {"title", required_argument, NULL, OPT_TITLE},
    {"subtitle", required_argument, NULL, OPT_SUBTITLE},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"height", required_argument, NULL, OPT_HEIGHT},
    {"minwidth", required_argument, NULL, OPT_MINWIDTH},
    {"fonttype", required_argument, NULL, OPT_FONTTYPE},
    {"fontsize", required_argument, NULL, OPT_FONTSIZE},
    {"fontwidth", required_argument, NULL, OPT_FONTWIDTH},
    {"countname", required_argument, NULL, OPT_COUNTNAME},
    {"nametype", required_argument, NULL, OPT_NAMETYPE},
    {"colors", required_argument, NULL, OPT_COLORS},
    {"colours", required_argument, NULL, OPT_COLORS},
    {"bgcolors", required_argument, NULL, OPT_BGCOLORS},
    {"hash", no_argument, NULL, OPT_HASH},
    {"random", no_argument, NULL, OPT_RANDOM},
    {"cp", no_argument, NULL, OPT_CP},
    {"palette-file", required_argument, NULL, OPT_PALETTE_FILE},
    {"reverse", no_argument, NULL, OPT_REVERSE},
    {"inverted", no_argument, NULL, OPT_INVERTED},
    {"flamechart", no_argument, NULL, OPT_FLAMECHART},
    {"negate", no_argument, NULL, OPT_NEGATE},
    {"notes", required_argument, NULL, OPT_NOTES},
    {"total", required_argument, NULL, OPT_TOTAL},
    {"factor", required_argument, NULL, OPT_FACTOR},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"no-embed", no_argument, NULL, OPT_NO_EMBED},
    {"embed-limit", required_argument, NULL, OPT_EMBED_LIMIT},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

typedef enum out_format { FMT_SVG, FMT_SPEEDSCOPE, FMT_FOLDED } out_format;

static int write_output(const profile *p, const render_opts *o, out_format fmt, const char *name,
                        FILE *out, flame_err *err)
{
    switch (fmt) {
    case FMT_SVG:
        return render_svg(p, o, out, err);
    case FMT_SPEEDSCOPE:
        return export_speedscope(p, name, out, err);
    case FMT_FOLDED:
        return profile_write_folded(p, out, err);
    }
    return flame_fail(err, FLAME_EXIT_ERROR, "unknown format");
}

typedef struct write_ctx {
    const profile *p;
    const render_opts *o;
    out_format fmt;
    const char *name;
} write_ctx;

static int write_cb(void *ctx, FILE *out, flame_err *err)
{
    const write_ctx *w = ctx;
    return write_output(w->p, w->o, w->fmt, w->name, out, err);
}

/* A reader never sees half a graph; a failed render leaves an older graph in place. */
static int write_file(const profile *p, const render_opts *o, out_format fmt, const char *name,
                      const char *path, flame_err *err)
{
    write_ctx w = {p, o, fmt, name};
    return atomic_write_file(path, write_cb, &w, err);
}

int flame_cmd_render(int argc, char **argv)
{
    render_opts o;
    render_opts_default(&o);
    out_format fmt = FMT_SVG;
    const char *output = NULL;
    double v;
    optind = 0; /* this may be one verb among several in one process: restart getopt */
    opterr = 0;
    int c;
    while ((c = getopt_long_only(argc, argv, "+o:hi", long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_TITLE:
            o.title = optarg;
            break;
        case OPT_SUBTITLE:
            o.subtitle = optarg;
            break;
        case OPT_WIDTH:
            if (!cli_parse_num(optarg, 40, 1000000, &v) || v != floor(v))
                return cli_usage_error(
                    "render", "--width: '%s' is not a width in pixels (40..1000000)", optarg);
            o.width = (int)v;
            break;
        case OPT_HEIGHT:
            if (!cli_parse_num(optarg, 2, 10000, &v) || v != floor(v))
                return cli_usage_error(
                    "render", "--height: '%s' is not a frame height in pixels (2..10000)", optarg);
            o.height = (int)v;
            break;
        case OPT_MINWIDTH: {
            size_t l = strlen(optarg);
            char buf[64];
            bool pct = l > 0 && optarg[l - 1] == '%';
            snprintf(buf, sizeof buf, "%.*s", (int)(pct ? l - 1 : l), optarg);
            if (l >= sizeof buf || !cli_parse_num(buf, 0, pct ? 100 : 1e9, &v))
                return cli_usage_error(
                    "render", "--minwidth: '%s' is not pixels (0.1) or a percentage (0.5%%)",
                    optarg);
            o.minwidth = v;
            o.minwidth_pct = pct;
            break;
        }
        case OPT_FONTTYPE:
            o.fonttype = optarg;
            break;
        case OPT_FONTSIZE:
            if (!cli_parse_num(optarg, 1, 500, &v))
                return cli_usage_error("render",
                                       "--fontsize: '%s' is not a size in pixels (1..500)", optarg);
            o.fontsize = v;
            break;
        case OPT_FONTWIDTH:
            if (!cli_parse_num(optarg, 0.01, 10, &v))
                return cli_usage_error("render", "--fontwidth: '%s' is not a ratio (0.01..10)",
                                       optarg);
            o.fontwidth = v;
            break;
        case OPT_COUNTNAME:
            o.countname = optarg;
            break;
        case OPT_NAMETYPE:
            o.nametype = optarg;
            break;
        case OPT_COLORS:
            if (!render_palette_valid(optarg))
                return cli_usage_error(
                    "render",
                    "--colors: unknown palette '%s' (hot java mem io wakeup chain "
                    "js perl red green blue aqua yellow purple orange)",
                    optarg);
            o.colors = optarg;
            break;
        case OPT_BGCOLORS:
            if (!render_bgcolor_valid(optarg))
                return cli_usage_error(
                    "render", "--bgcolors: '%s' is not yellow, blue, green, grey or #rrggbb",
                    optarg);
            o.bgcolors = optarg;
            break;
        case OPT_HASH:
            o.hash = true;
            break;
        case OPT_RANDOM:
            o.random = true;
            break;
        case OPT_CP:
            o.palette_file = "palette.map";
            break;
        case OPT_PALETTE_FILE:
            o.palette_file = optarg;
            break;
        case OPT_REVERSE:
            o.reverse = true;
            break;
        case 'i':
        case OPT_INVERTED:
            o.inverted = true;
            break;
        case OPT_FLAMECHART:
            o.flamechart = true;
            break;
        case OPT_NEGATE:
            o.negate = true;
            break;
        case OPT_NOTES:
            o.notes = optarg;
            break;
        case OPT_TOTAL:
            if (!cli_parse_num(optarg, 0, 1e300, &v))
                return cli_usage_error("render", "--total: '%s' is not a count", optarg);
            o.total = v;
            break;
        case OPT_FACTOR:
            if (!cli_parse_num(optarg, 1e-300, 1e300, &v))
                return cli_usage_error("render", "--factor: '%s' is not a positive number", optarg);
            o.factor = v;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "svg") == 0)
                fmt = FMT_SVG;
            else if (strcmp(optarg, "speedscope") == 0)
                fmt = FMT_SPEEDSCOPE;
            else if (strcmp(optarg, "folded") == 0)
                fmt = FMT_FOLDED;
            else
                return cli_usage_error("render", "--format: '%s' is not svg, speedscope or folded",
                                       optarg);
            break;
        case 'o':
            output = optarg;
            break;
        case OPT_NO_EMBED:
            o.embed_folded = false;
            break;
        case OPT_EMBED_LIMIT:
            if (!cli_parse_num(optarg, 0, 1 << 20, &v))
                return cli_usage_error(
                    "render", "--embed-limit: '%s' is not a size in MB (0 = no limit)", optarg);
            o.embed_limit = (size_t)(v * 1048576);
            break;
        case 'h':
        case OPT_HELP:
            fputs(usage_text, stdout);
            return FLAME_EXIT_OK;
        case '?':
        default:
            if (optopt && optopt < 256)
                return cli_usage_error("render", "unknown or incomplete option '-%s'",
                                       (char[]){(char)optopt, 0});
            return cli_usage_error("render", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind > 1)
        return cli_usage_error("render", "one input file at most, got '%s' too", argv[optind + 1]);
    const char *input = optind < argc ? argv[optind] : "-";
    if (strcmp(input, "-") == 0 && isatty(STDIN_FILENO))
        return cli_usage_error("render", "%s",
                               "no input: give a folded file, or pipe folded stacks in");

    flame_err err = FLAME_ERR_INIT;
    profile *p = profile_new();
    if (!p) {
        fputs("docker flame render: out of memory\n", stderr);
        return FLAME_EXIT_ERROR;
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
        if (output)
            rc = write_file(p, &o, fmt, name, output, &err);
        else
            rc = write_output(p, &o, fmt, name, stdout, &err);
    }
    profile_free(p);
    if (rc < 0) {
        fprintf(stderr, "docker flame render: %s\n", err.msg);
        return err.code ? err.code : FLAME_EXIT_ERROR;
    }
    return FLAME_EXIT_OK;
}
