/* Option parsing for the profile verb (getopt-free: options and container names interleave the
 * way docker's own commands allow, and "--" starts the load command). */
#include "plugin/opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fmt_names[FMT_COUNT] = {"svg", "folded", "speedscope"};
static const char *fmt_exts[FMT_COUNT] = {".svg", ".folded", ".speedscope.json"};

const char *opts_format_name(int f)
{
    return f >= 0 && f < FMT_COUNT ? fmt_names[f] : "?";
}
const char *opts_format_ext(int f)
{
    return f >= 0 && f < FMT_COUNT ? fmt_exts[f] : "";
}

void opts_init(flame_opts *o)
{
    memset(o, 0, sizeof *o);
    o->duration_s = 30;
    o->frequency = 99;
    o->colors = "java";
}

void opts_clear(flame_opts *o)
{
    free(o->containers);
    o->containers = NULL;
}

int opts_parse_duration(const char *s, double *out, flame_err *err)
{
    const char *p = s;
    double total = 0;
    bool any = false;
    if (!*p)
        goto bad;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || v < 0 || !isfinite(v))
            goto bad;
        p = end;
        double mul;
        if (!strncmp(p, "ms", 2)) {
            mul = 0.001;
            p += 2;
        } else if (*p == 's') {
            mul = 1;
            p++;
        } else if (*p == 'm') {
            mul = 60;
            p++;
        } else if (*p == 'h') {
            mul = 3600;
            p++;
        } else if (!*p && !any) {
            mul = 1; /* a bare number is seconds */
        } else {
            goto bad;
        }
        total += v * mul;
        any = true;
    }
    if (total > 7 * 24 * 3600.0)
        return flame_fail(err, FLAME_EXIT_USAGE, "duration %s is longer than a week", s);
    *out = total;
    return 0;
bad:
    return flame_fail(err, FLAME_EXIT_USAGE,
                      "invalid duration \"%s\": use e.g. 30, 30s, 500ms, 2m, 1m30s (0 = until "
                      "Ctrl-C)",
                      s);
}

/* Match "--name", "--name=v", "-x", "-xv". Sets *val when the value is inline. */
static bool match(const char *a, const char *shrt, const char *lng, const char **val)
{
    *val = NULL;
    size_t n = strlen(lng);
    if (!strncmp(a, lng, n) && (a[n] == 0 || a[n] == '=')) {
        if (a[n] == '=')
            *val = a + n + 1;
        return true;
    }
    if (shrt && !strncmp(a, shrt, 2)) {
        if (a[2])
            *val = a[2] == '=' ? a + 3 : a + 2;
        return true;
    }
    return false;
}

static int need_value(int argc, char **argv, int *i, const char **val, const char *flag,
                      flame_err *err)
{
    if (*val)
        return 0;
    if (*i + 1 >= argc)
        return flame_fail(err, FLAME_EXIT_USAGE, "flag needs an argument: %s", flag);
    *val = argv[++*i];
    return 0;
}

static int parse_long(const char *v, long lo, long hi, const char *flag, long *out, flame_err *err)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < lo || n > hi)
        return flame_fail(err, FLAME_EXIT_USAGE, "invalid %s \"%s\": want a number from %ld to %ld",
                          flag, v, lo, hi);
    *out = n;
    return 0;
}

int opts_parse(int argc, char **argv, flame_opts *o, flame_err *err)
{
    o->containers = calloc((size_t)argc + 1, sizeof *o->containers);
    if (!o->containers)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        if (!strcmp(a, "--")) {
            o->cmd = argv + i + 1;
            o->ncmd = argc - i - 1;
            if (o->ncmd == 0)
                return flame_fail(err, FLAME_EXIT_USAGE, "\"--\" must be followed by a command");
            break;
        }
        if (a[0] != '-' || !a[1]) {
            o->containers[o->ncontainers++] = argv[i];
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->help = true;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
            o->version = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--no-inline")) {
            o->no_inline = true;
        } else if (!strcmp(a, "--signatures")) {
            o->signatures = true;
        } else if (match(a, "-d", "--duration", &v)) {
            if (need_value(argc, argv, &i, &v, "--duration", err) < 0 ||
                opts_parse_duration(v, &o->duration_s, err) < 0)
                return -1;
            o->duration_set = true;
        } else if (match(a, "-F", "--frequency", &v)) {
            if (need_value(argc, argv, &i, &v, "--frequency", err) < 0 ||
                parse_long(v, 1, 10000, "--frequency", &n, err) < 0)
                return -1;
            o->frequency = (int)n;
        } else if (match(a, NULL, "--pid", &v)) {
            if (need_value(argc, argv, &i, &v, "--pid", err) < 0 ||
                parse_long(v, 1, 0x3fffffff, "--pid", &n, err) < 0)
                return -1;
            o->pid = n;
        } else if (match(a, "-o", "--output", &v)) {
            if (need_value(argc, argv, &i, &v, "--output", err) < 0)
                return -1;
            if (!*v)
                return flame_fail(err, FLAME_EXIT_USAGE, "--output needs a file name");
            o->output = v;
        } else if (match(a, NULL, "--format", &v)) {
            if (need_value(argc, argv, &i, &v, "--format", err) < 0)
                return -1;
            /* Repeatable, and "svg,folded" is accepted too. */
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            char *save = NULL;
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int f = -1;
                for (int k = 0; k < FMT_COUNT; k++)
                    if (!strcmp(t, fmt_names[k]))
                        f = k;
                if (f < 0)
                    return flame_fail(err, FLAME_EXIT_USAGE,
                                      "unknown --format \"%s\": use svg, folded or speedscope", t);
                if (!o->formats[f])
                    o->nformats++;
                o->formats[f] = true;
            }
        } else if (match(a, NULL, "--title", &v)) {
            if (need_value(argc, argv, &i, &v, "--title", err) < 0)
                return -1;
            o->title = v;
        } else if (match(a, NULL, "--colors", &v)) {
            if (need_value(argc, argv, &i, &v, "--colors", err) < 0)
                return -1;
            o->colors = v;
        } else if (match(a, NULL, "--minwidth", &v)) {
            if (need_value(argc, argv, &i, &v, "--minwidth", err) < 0)
                return -1;
            char *end;
            errno = 0;
            double mw = strtod(v, &end);
            bool pct = *end == '%';
            if (end == v || errno || mw < 0 || !isfinite(mw) || (pct ? end[1] : *end))
                return flame_fail(err, FLAME_EXIT_USAGE,
                                  "invalid --minwidth \"%s\": pixels (0.1) or percent (0.5%%)", v);
            o->minwidth = mw;
            o->minwidth_pct = pct;
            o->minwidth_set = true;
        } else {
            return flame_fail(err, FLAME_EXIT_USAGE, "unknown flag: %s (see `docker flame --help`)",
                              a);
        }
    }
    if (o->help || o->version)
        return 0;
    if (!o->nformats) {
        o->formats[FMT_SVG] = true;
        o->nformats = 1;
    }
    if (o->ncontainers == 0)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "no container given: docker flame [OPTIONS] CONTAINER [CONTAINER...] "
                          "(see `docker flame --help`)");
    /* With a load command and no -d, profile exactly as long as the command runs. */
    if (o->cmd && !o->duration_set)
        o->duration_s = 0;
    return 0;
}
