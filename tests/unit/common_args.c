/* common/args.c: the one command-line grammar, its value checks, its messages and --help. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "tests/unit/tap.h"

static const char *fmts[] = {"svg", "folded", "speedscope", NULL};

typedef struct got {
    bool quiet, verbose, help;
    int mode;
    const char *name, *title;
    int64_t count;
    double ratio;
    uint64_t ms;
    unsigned fmts;
    int one;
    args_operands ops;
} got;

static int store_upper(void *base, const arg_val *v, flame_err *err)
{
    if (v->str[0] < 'A' || v->str[0] > 'Z')
        return flame_fail(err, FLAME_EXIT_USAGE, "--upper: \"%s\" is not capitalised", v->str);
    ((got *)base)->title = v->str;
    return 0;
}

#define F(field, T) ARG_FIELD(got, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = F(quiet, bool), .help = "be quiet"},
    {.lng = "verbose", .shrt = 'v', .kind = ARG_FLAG, .off = F(verbose, bool), .help = "say more"},
    {.lng = "fast", .kind = ARG_FLAG, .off = F(mode, int), .flags = ARG_SET, .set = 7, .help = "mode 7"},
    {.lng = "name", .shrt = 'n', .kind = ARG_STR, .off = F(name, const char *), .meta = "NAME",
     .help = "a name"},
    {.lng = "count", .shrt = 'c', .kind = ARG_INT, .off = F(count, int64_t), .meta = "N",
     .help = "how many", .lo = 1, .hi = 10},
    {.lng = "ratio", .kind = ARG_NUM, .off = F(ratio, double), .meta = "R", .help = "a ratio",
     .lo = 0, .hi = 1},
    {.lng = "time", .shrt = 'd', .kind = ARG_DURATION, .off = F(ms, uint64_t), .meta = "DURATION",
     .help = "how long\nsecond line", .lo = 0, .hi = 3600000},
    {.lng = "format", .kind = ARG_CHOICE, .off = F(fmts, unsigned), .meta = "F", .help = "formats",
     .choices = fmts, .flags = ARG_LIST},
    {.lng = "one", .kind = ARG_CHOICE, .off = F(one, int), .meta = "F", .help = "one format",
     .choices = fmts},
    {.lng = "upper", .kind = ARG_STR, .store = store_upper, .meta = "T", .help = "checked"},
    {.lng = "title", .kind = ARG_STR, .off = F(title, const char *), .flags = ARG_HIDDEN},
};
// clang-format on

static args_verb verb(unsigned flags, size_t operands_off)
{
    return (args_verb){.name = "tool verb",
                       .specs = specs,
                       .nspecs = sizeof specs / sizeof *specs,
                       .flags = flags,
                       .operands_off = operands_off};
}

static int run(unsigned flags, got *g, flame_err *err, int *rest, int argc, ...)
{
    static char *argv[80];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    memset(g, 0, sizeof *g);
    g->one = -1;
    *err = (flame_err)FLAME_ERR_INIT;
    args_verb v = verb(flags, F(ops, args_operands));
    return args_parse(&v, argc, argv, g, rest, err);
}

int main(void)
{
    got g;
    flame_err err;
    int rest;
    ok(run(0, &g, &err, NULL, 7, "-qv", "a", "--name", "x", "-c5", "b", "--ratio=0.25") == 0 &&
           g.quiet && g.verbose && !strcmp(g.name, "x") && g.count == 5 && g.ratio == 0.25 &&
           g.ops.n == 2 && !strcmp(g.ops.v[1], "b"),
       "clustered flags, --name VALUE, -cVALUE, --opt=VALUE, interleaved operands");
    ok(run(0, &g, &err, NULL, 2, "-n", "y") == 0 && !strcmp(g.name, "y"), "-n VALUE");
    ok(run(0, &g, &err, NULL, 1, "-n=z") == 0 && !strcmp(g.name, "z"), "-n=VALUE");
    ok(run(0, &g, &err, NULL, 1, "-") == 0 && g.ops.n == 1, "a lone '-' is an operand (stdin)");
    ok(run(0, &g, &err, &rest, 4, "a", "--", "-q", "x") == 0 && rest == 2 && !g.quiet,
       "with rest: \"--\" ends the parse, rest points after it");
    ok(run(0, &g, &err, &rest, 1, "a") == 0 && rest == -1, "with rest: -1 without \"--\"");
    ok(run(0, &g, &err, NULL, 3, "--", "-q", "x") == 0 && g.ops.n == 2 && !g.quiet,
       "without rest: what follows \"--\" is operands");
    ok(run(ARGS_STOP_AT_OPERAND, &g, &err, NULL, 3, "a", "-q", "b") == 0 && g.ops.n == 3 &&
           !g.quiet,
       "ARGS_STOP_AT_OPERAND: options end at the first operand");
    ok(run(ARGS_SINGLE_DASH_LONG, &g, &err, NULL, 2, "-name", "w") == 0 && !strcmp(g.name, "w"),
       "ARGS_SINGLE_DASH_LONG: -name works like --name");
    ok(run(0, &g, &err, NULL, 2, "-name", "w") == 0 && !strcmp(g.name, "ame") && g.ops.n == 1,
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
    ok(run(0, &g, &err, NULL, 2, "--format", "svg,folded") == 0 && g.fmts == 3u,
       "a choice list calls back per element");
    ok(run(0, &g, &err, NULL, 2, "--format", "svg,png") < 0 &&
           strstr(err.msg, "unknown value \"png\": use svg, folded, speedscope"),
       "an unknown choice names the choices (%s)", err.msg);
    ok(run(0, &g, &err, NULL, 2, "--format", ",") < 0, "an empty choice list is refused");
    ok(run(0, &g, &err, NULL, 2, "-d", "1m30s") == 0 && g.ms == 90000, "-d 1m30s");
    ok(run(0, &g, &err, NULL, 2, "-d", "2h") < 0 && strstr(err.msg, "want 0 to 1h"),
       "a duration over the limit names it (%s)", err.msg);
    ok(run(0, &g, &err, NULL, 1, "--title=t") == 0 && !strcmp(g.title, "t"),
       "hidden options parse");

    ok(run(0, &g, &err, NULL, 1, "--fast") == 0 && g.mode == 7, "ARG_SET stores its value");
    ok(run(0, &g, &err, NULL, 2, "--one", "folded") == 0 && g.one == 1,
       "a single choice: its index");
    ok(run(0, &g, &err, NULL, 2, "--upper", "Web") == 0 && !strcmp(g.title, "Web"),
       "a store() function takes the value");
    ok(run(0, &g, &err, NULL, 2, "--upper", "web") < 0 && strstr(err.msg, "not capitalised") &&
           strstr(err.msg, "see `tool verb --help`") && !strchr(err.msg, '\n'),
       "... and its refusal is one line with the verb's hint (%s)", err.msg);
    {
        static char *many[70];
        for (int i = 0; i < 70; i++)
            many[i] = "x";
        memset(&g, 0, sizeof g);
        err = (flame_err)FLAME_ERR_INIT;
        args_verb v = verb(0, F(ops, args_operands));
        ok(args_parse(&v, 70, many, &g, NULL, &err) < 0 && strstr(err.msg, "too many"),
           "operands are bounded (%s)", err.msg);
        args_verb none = verb(0, ARGS_NO_OPERANDS);
        ok(args_parse(&none, 1, many, &g, NULL, &err) < 0 && strstr(err.msg, "unexpected argument"),
           "a verb without operands refuses one");
    }
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
    args_verb v = verb(0, ARGS_NO_OPERANDS);
    args_help(&v, f);
    fclose(f);
    ok(strstr(help, "-q, --quiet") && strstr(help, "-d, --time DURATION") &&
           strstr(help, "--ratio R") && strstr(help, "second line") && !strstr(help, "--title"),
       "--help lists every option but the hidden ones, with its value and every help line");
    free(help);

    /* Shared tables (groups): their offsets are relative to the struct each names. */
    typedef struct grp {
        int64_t hz;
        bool deep;
    } grp;
    typedef struct two {
        bool quiet;
        grp a, b;
    } two;
    static const arg_spec g1[] = {{.lng = "hz",
                                   .shrt = 'F',
                                   .kind = ARG_INT,
                                   .off = offsetof(grp, hz),
                                   .meta = "HZ",
                                   .help = "rate",
                                   .lo = 1,
                                   .hi = 100}};
    static const arg_spec g2[] = {
        {.lng = "deep", .kind = ARG_FLAG, .off = offsetof(grp, deep), .help = "deep"}};
    static const arg_spec own[] = {
        {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = offsetof(two, quiet), .help = "q"}};
    args_verb gv = {.name = "tool group",
                    .specs = own,
                    .nspecs = 1,
                    .groups = {{g1, 1, offsetof(two, a)}, {g2, 1, offsetof(two, b)}},
                    .operands_off = ARGS_NO_OPERANDS};
    two t = {0};
    char *gargv[] = {"-q", "-F", "42", "--deep"};
    err = (flame_err)FLAME_ERR_INIT;
    ok(args_parse(&gv, 4, gargv, &t, NULL, &err) == 0 && t.quiet && t.a.hz == 42 && !t.b.hz &&
           t.b.deep && !t.a.deep,
       "two groups: each option lands in the struct its group names (%s)", err.msg);
    ok(args_spec(&gv, 0) == &own[0] && args_spec(&gv, 1) == &g1[0] && args_spec(&gv, 2) == &g2[0] &&
           !args_spec(&gv, 3),
       "args_spec walks the verb's own table, then each group in order");
    ok(args_find_long(&gv, "deep", 4) == &g2[0] && args_find_short(&gv, 'F') == &g1[0],
       "options of a group are found by name");
    f = open_memstream(&help, &hl);
    args_help(&gv, f);
    fclose(f);
    char *pq = strstr(help, "--quiet"), *ph = strstr(help, "--hz HZ"), *pd = strstr(help, "--deep");
    ok(pq && ph && pd && pq < ph && ph < pd, "--help lists the groups' options after the verb's");
    free(help);
    return tap_done();
}
