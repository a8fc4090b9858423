/* The profile verb's options: one table for common/args.c, which also writes them into
 * `docker flame --help`. Limits are the contract's (common/contract.h), so the sidecar accepts
 * whatever passes here. */
#include "plugin/opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/contract.h"

enum {
    O_DURATION,
    O_FREQUENCY,
    O_PID,
    O_OUTPUT,
    O_FORMAT,
    O_NO_INLINE,
    O_SIGNATURES,
    O_QUIET,
    O_HELP,
    O_VERSION
};

static const arg_spec specs[] = {
    {.lng = "duration",
     .shrt = 'd',
     .kind = ARG_DURATION,
     .id = O_DURATION,
     .meta = "DURATION",
     .help = "how long to record (default 30s; 0 = until Ctrl-C;\ne.g. 10, 45s, 500ms, 2m, 1m30s)",
     .lo = 0,
     .hi = CT_DURATION_MAX_MS},
    {.lng = "frequency",
     .shrt = 'F',
     .kind = ARG_INT,
     .id = O_FREQUENCY,
     .meta = "HZ",
     .help = "samples per second per CPU (default 99)",
     .lo = 1,
     .hi = CT_FREQ_MAX},
    {.lng = "pid",
     .kind = ARG_INT,
     .id = O_PID,
     .meta = "PID",
     .help = "profile only this JVM (pid as seen inside the container)",
     .lo = 1,
     .hi = CT_PID_MAX},
    {.lng = "output",
     .shrt = 'o',
     .kind = ARG_STR,
     .id = O_OUTPUT,
     .meta = "FILE",
     .help = "output file (default flame-<container>-<YYYYmmdd-HHMMSS>.svg);\nwith several "
             "containers: an existing directory",
     .complete = "file"},
    {.lng = "format",
     .kind = ARG_CHOICE,
     .id = O_FORMAT,
     .meta = "FORMAT",
     .help = "svg, folded or speedscope; repeatable (file extension per\nformat: .svg .folded "
             ".speedscope.json)",
     .choices = out_fmt_names,
     .flags = ARG_LIST},
    {.lng = "no-inline",
     .kind = ARG_FLAG,
     .id = O_NO_INLINE,
     .help = "do not show methods inlined by the JIT as frames"},
    {.lng = "signatures",
     .kind = ARG_FLAG,
     .id = O_SIGNATURES,
     .help = "keep Java parameter lists and return types"},
    {.lng = "quiet",
     .shrt = 'q',
     .kind = ARG_FLAG,
     .id = O_QUIET,
     .help = "no progress and no summary"},
    {.lng = "help", .shrt = 'h', .kind = ARG_FLAG, .id = O_HELP, .help = "this help"},
    {.lng = "version", .shrt = 'v', .kind = ARG_FLAG, .id = O_VERSION, .help = "print the version"},
};

static const args_verb verb = {.name = "docker flame",
                               .specs = specs,
                               .nspecs = sizeof specs / sizeof *specs,
                               .shared = graph_specs,
                               .nshared = GRAPH_NSPECS};

void opts_help(FILE *out)
{
    args_help(&verb, out);
}

void opts_init(flame_opts *o)
{
    memset(o, 0, sizeof *o);
    o->duration_ms = 30000;
    o->frequency = 99;
    o->graph.colors = "java";
    o->interval_ms = 1000;
}

void opts_clear(flame_opts *o)
{
    free(o->containers);
    o->containers = NULL;
}

static int on_opt(void *ctx, const arg_spec *s, const arg_val *v, flame_err *err)
{
    flame_opts *o = ctx;
    int g = graph_opt(&o->graph, s, v, err);
    if (g != 0)
        return g < 0 ? -1 : 0;
    switch (s->id) {
    case O_DURATION:
        o->duration_ms = v->ms;
        o->duration_set = true;
        break;
    case O_FREQUENCY:
        o->frequency = (uint32_t)v->i;
        break;
    case O_PID:
        o->pid = (uint32_t)v->i;
        break;
    case O_OUTPUT:
        o->output = v->str;
        break;
    case O_FORMAT:
        if (!o->formats[v->choice])
            o->nformats++;
        o->formats[v->choice] = true;
        break;
    case O_NO_INLINE:
        o->no_inline = true;
        break;
    case O_SIGNATURES:
        o->signatures = true;
        break;
    case O_QUIET:
        o->quiet = true;
        break;
    case O_HELP:
        o->help = true;
        break;
    case O_VERSION:
        o->version = true;
        break;
    default:
        break;
    }
    return 0;
}

static int on_operand(void *ctx, const char *operand, flame_err *err)
{
    (void)err;
    flame_opts *o = ctx;
    o->containers[o->ncontainers++] = (char *)operand;
    return 0;
}

int opts_parse(int argc, char **argv, flame_opts *o, flame_err *err)
{
    o->containers = calloc((size_t)argc + 1, sizeof *o->containers);
    if (!o->containers)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int rest = -1;
    if (args_parse(&verb, argc, argv, on_opt, on_operand, o, &rest, err) < 0)
        return -1;
    if (o->help || o->version)
        return 0;
    if (rest >= 0) {
        o->cmd = argv + rest;
        o->ncmd = argc - rest;
        if (o->ncmd == 0)
            return flame_fail(err, FLAME_EXIT_USAGE, "\"--\" must be followed by a command");
    }
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
        o->duration_ms = 0;
    return 0;
}
