/* common/args.c: the one command-line grammar, its value checks, its messages and --help. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "tests/unit/plugin_test_tap.h"

enum { A_QUIET, A_VERBOSE, A_NAME, A_COUNT, A_RATIO, A_TIME, A_FMT, A_TITLE };
static const char *fmts[] = {"svg", "folded", "speedscope", NULL};
static const arg_spec specs[] = {
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .id = A_QUIET, .help = "be quiet"},
    {.lng = "verbose", .shrt = 'v', .kind = ARG_FLAG, .id = A_VERBOSE, .help = "say more"},
    {.lng = "name", .shrt = 'n', .kind = ARG_STR, .id = A_NAME, .meta = "NAME", .help = "a name"},
    {.lng = "count",
     .shrt = 'c',
     .kind = ARG_INT,
     .id = A_COUNT,
     .meta = "N",
     .help = "how many",
     .lo = 1,
     .hi = 10},
    {.lng = "ratio",
     .kind = ARG_NUM,
     .id = A_RATIO,
     .meta = "R",
     .help = "a ratio",
     .lo = 0,
     .hi = 1},
    {.lng = "time",
     .shrt = 'd',
     .kind = ARG_DURATION,
     .id = A_TIME,
     .meta = "DURATION",
     .help = "how long\nsecond line",
     .lo = 0,
     .hi = 3600000},
    {.lng = "format",
     .kind = ARG_CHOICE,
     .id = A_FMT,
     .meta = "F",
     .help = "formats",
     .choices = fmts,
     .flags = ARG_LIST},
    {.lng = "title", .kind = ARG_STR, .id = A_TITLE, .help = "hidden", .flags = ARG_HIDDEN},
};

typedef struct got {
    int quiet, verbose, fmts, operands;
    const char *name, *ops[8];
    long long count;
    double ratio;
    uint64_t ms;
} got;

static int on_opt(void *ctx, const arg_spec *s, const arg_val *v, flame_err *err)
{
    (void)err;
    got *g = ctx;
    switch (s->id) {
    case A_QUIET:
        g->quiet++;
        break;
    case A_VERBOSE:
        g->verbose++;
        break;
    case A_NAME:
    case A_TITLE:
        g->name = v->str;
        break;
    case A_COUNT:
        g->count = v->i;
        break;
    case A_RATIO:
        g->ratio = v->num;
        break;
    case A_TIME:
        g->ms = v->ms;
        break;
    case A_FMT:
        g->fmts |= 1 << v->choice;
        break;
    default:
        break;
    }
    return 0;
}

static int on_operand(void *ctx, const char *op, flame_err *err)
{
    (void)err;
    got *g = ctx;
    if (g->operands < 8)
        g->ops[g->operands] = op;
    g->operands++;
    return 0;
}

static int run(unsigned flags, got *g, flame_err *err, int *rest, int argc, ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    memset(g, 0, sizeof *g);
    *err = (flame_err)FLAME_ERR_INIT;
    args_verb v = {.name = "tool verb",
                   .specs = specs,
                   .nspecs = sizeof specs / sizeof *specs,
                   .flags = flags};
    return args_parse(&v, argc, argv, on_opt, on_operand, g, rest, err);
}

int main(void)
{
    got g;
    flame_err err;
    int rest;
    ok(run(0, &g, &err, NULL, 7, "-qv", "a", "--name", "x", "-c5", "b", "--ratio=0.25") == 0 &&
           g.quiet == 1 && g.verbose == 1 && !strcmp(g.name, "x") && g.count == 5 &&
           g.ratio == 0.25 && g.operands == 2 && !strcmp(g.ops[1], "b"),
       "clustered flags, --name VALUE, -cVALUE, --opt=VALUE, interleaved operands");
    ok(run(0, &g, &err, NULL, 2, "-n", "y") == 0 && !strcmp(g.name, "y"), "-n VALUE");
    ok(run(0, &g, &err, NULL, 1, "-n=z") == 0 && !strcmp(g.name, "z"), "-n=VALUE");
    ok(run(0, &g, &err, NULL, 1, "-") == 0 && g.operands == 1, "a lone '-' is an operand (stdin)");
    ok(run(0, &g, &err, &rest, 4, "a", "--", "-q", "x") == 0 && rest == 2 && g.quiet == 0,
       "with rest: \"--\" ends the parse, rest points after it");
    ok(run(0, &g, &err, &rest, 1, "a") == 0 && rest == -1, "with rest: -1 without \"--\"");
    ok(run(0, &g, &err, NULL, 3, "--", "-q", "x") == 0 && g.operands == 2 && !g.quiet,
       "without rest: what follows \"--\" is operands");
    ok(run(ARGS_STOP_AT_OPERAND, &g, &err, NULL, 3, "a", "-q", "b") == 0 && g.operands == 3 &&
           !g.quiet,
       "ARGS_STOP_AT_OPERAND: options end at the first operand");
    ok(run(ARGS_SINGLE_DASH_LONG, &g, &err, NULL, 2, "-name", "w") == 0 && !strcmp(g.name, "w"),
       "ARGS_SINGLE_DASH_LONG: -name works like --name");
    ok(run(0, &g, &err, NULL, 2, "-name", "w") == 0 && !strcmp(g.name, "ame") && g.operands == 1,
       "without it, -name is -n with the value \"ame\" (getopt's reading)");
    ok(run(0, &g, &err, NULL, 1, "--nam") < 0 && strstr(err.msg, "unknown flag: --nam"),
       "no abbreviations of long names");
    ok(run(0, &g, &err, NULL, 1, "--name") < 0 && strstr(err.msg, "needs an argument: --name"),
       "a missing value is named");
    ok(run(0, &g, &err, NULL, 1, "--quiet=yes") < 0 && strstr(err.msg, "takes no value"),
       "a flag with a value is refused");
    ok(run(0, &g, &err, NULL, 2, "--name", "") < 0 && strstr(err.msg, "non-empty"),
       "an empty string value is refused");
    ok(run(0, &g, &err, NULL, 2, "-c", "11") < 0 && strstr(err.msg, "from 1 to 10") &&
           err.code == FLAME_EXIT_USAGE && strstr(err.msg, "see `tool verb --help`"),
       "an int out of range: usage error naming the range and the help (%s)", err.msg);
    ok(run(0, &g, &err, NULL, 2, "-c", "3x") < 0, "an int with junk is refused");
    ok(run(0, &g, &err, NULL, 2, "--ratio", "nan") < 0, "NaN is not a number here");
    ok(run(0, &g, &err, NULL, 2, "--ratio", "1.5") < 0, "a number out of range");
    ok(run(0, &g, &err, NULL, 2, "--format", "svg,folded") == 0 && g.fmts == 3,
       "a choice list calls back per element");
    ok(run(0, &g, &err, NULL, 2, "--format", "svg,png") < 0 &&
           strstr(err.msg, "unknown value \"png\": use svg, folded, speedscope"),
       "an unknown choice names the choices (%s)", err.msg);
    ok(run(0, &g, &err, NULL, 2, "--format", ",") < 0, "an empty choice list is refused");
    ok(run(0, &g, &err, NULL, 2, "-d", "1m30s") == 0 && g.ms == 90000, "-d 1m30s");
    ok(run(0, &g, &err, NULL, 2, "-d", "2h") < 0 && strstr(err.msg, "want 0 to 1h"),
       "a duration over the limit names it (%s)", err.msg);
    ok(run(0, &g, &err, NULL, 1, "--title=t") == 0 && !strcmp(g.name, "t"), "hidden options parse");

    uint64_t ms;
    struct {
        const char *s;
        long long ms;
    } d[] = {{"30", 30000},  {"45s", 45000},  {"500ms", 500},    {"1m30s", 90000},
             {"1.5s", 1500}, {"2h", 7200000}, {"7d", 604800000}, {"0", 0},
             {"abc", -1},    {"-5", -1},      {"5x", -1},        {"30 s", -1},
             {"", -1},       {".5s", -1},     {"1s2", -1},       {"1e3", -1}};
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) {
        int r = args_duration_ms(d[i].s, &ms);
        ok(d[i].ms < 0 ? r < 0 : (r == 0 && ms == (uint64_t)d[i].ms), "duration \"%s\" -> %lld",
           d[i].s, d[i].ms);
    }
    uint64_t samples[] = {0, 1, 999, 1000, 60000, 90500, 3600000, 604800001};
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        char buf[64];
        args_format_duration(samples[i], buf, sizeof buf);
        ok(args_duration_ms(buf, &ms) == 0 && ms == samples[i],
           "format %llu ms as \"%s\" reads back", (unsigned long long)samples[i], buf);
    }

    char *help = NULL;
    size_t hl = 0;
    FILE *f = open_memstream(&help, &hl);
    args_verb v = {.name = "tool verb", .specs = specs, .nspecs = sizeof specs / sizeof *specs};
    args_help(&v, f);
    fclose(f);
    ok(strstr(help, "-q, --quiet") && strstr(help, "-d, --time DURATION") &&
           strstr(help, "--ratio R") && strstr(help, "second line") && !strstr(help, "--title"),
       "--help lists every option but the hidden ones, with its value and every help line");
    free(help);
    return tap_done();
}
