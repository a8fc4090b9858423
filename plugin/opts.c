/* The profile verb's options: one table for common/args.c, which also writes them into
 * `docker flame --help`. Limits are the contract's (common/contract.h), so the sidecar accepts
 * whatever passes here. */
#include "plugin/opts.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/contract.h"
#include "plugin/cli.h"

#define F(field, T) ARG_FIELD(flame_opts, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "duration", .shrt = 'd', .kind = ARG_DURATION, .off = F(rec.duration_ms, uint64_t),
     .meta = "DURATION",
     .help = "how long to record (default 30s; 0 = until Ctrl-C;\ne.g. 10, 45s, 500ms, 2m, 1m30s)",
     .lo = 0, .hi = CT_DURATION_MAX_MS},
    {.lng = "frequency", .shrt = 'F', .kind = ARG_INT, .off = F(rec.frequency, int64_t), .meta = "HZ",
     .help = "samples per second per CPU (default 99)", .lo = 1, .hi = CT_FREQ_MAX},
    {.lng = "pid", .kind = ARG_INT, .off = F(rec.pid, int64_t), .meta = "PID",
     .help = "profile only this JVM (pid as seen inside the container)", .lo = 1, .hi = CT_PID_MAX},
    OUT_OUTPUT_SPEC(F(output, const char *), "FILE",
                    "output file (default flame-<container>-<YYYYmmdd-HHMMSS>.svg);\n"
                    "with several containers: an existing directory"),
    OUT_FORMAT_SPEC(F(formats, unsigned),
                    "svg, folded, speedscope or pprof; repeatable (default: from\n"
                    "the extension of -o, else svg; file extension per format:\n"
                    ".svg .folded .speedscope.json .pb.gz)",
                    out_fmt_names, ARG_LIST),
    {.lng = "sampling", .kind = ARG_CHOICE, .off = F(rec.sampling, int), .meta = "HOW",
     .help = "cpu: one event per CPU, filtered to the container (cheap);\nthread: one event per "
     "JVM thread (costs busy servers 10-50 %);\nauto (default): cpu, else thread with a warning",
     .choices = ct_sampling_names},
    {.lng = "kernel", .kind = ARG_FLAG, .off = F(rec.kernel, bool),
     .help = "kernel stacks too (system calls, page faults, network),\n"
     "marked _[k]; gives the sidecar CAP_SYSLOG to read kernel\nsymbols, dropped before it looks at the target;\n"
     "per-CPU sampling only"},
    {.lng = "no-inline", .kind = ARG_FLAG, .off = F(rec.no_inline, bool),
     .help = "do not show methods inlined by the JIT as frames"},
    {.lng = "shared-pid", .kind = ARG_FLAG, .off = F(shared_pid, bool),
     .help = "profile a container that shares another's PID namespace\n(--pid host, "
     "--pid container:X; refused without it):\nonly its own processes are recorded"},
    {.lng = "signatures", .kind = ARG_FLAG, .off = F(rec.signatures, bool),
     .help = "keep Java parameter lists and return types"},
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = F(quiet, bool),
     .help = "no progress and no summary (on a terminal, one line for a\nrecording of a minute or more)"},
    {.lng = "summary-json", .kind = ARG_STR, .off = F(summary_json, const char *), .meta = "FILE",
     .help = "also write the summary as JSON to FILE (- = stdout;\ndocs/SUMMARY.md)",
     .complete = "file"},
    CLI_HELP_SPEC(F(help, bool)),
    {.lng = "version", .shrt = 'v', .kind = ARG_FLAG, .off = F(version, bool),
     .help = "print the version"},
};
// clang-format on

const args_verb opts_grammar = {
    .name = "docker flame",
    .specs = specs,
    .nspecs = sizeof specs / sizeof *specs,
    .groups = {CT_RECORD_GROUP(F(rec, ct_args)), {graph_specs, GRAPH_NSPECS, F(graph, graph_opts)}},
    .operands_off = F(containers, args_operands)};
#undef F

void opts_help(FILE *out)
{
    args_help(&opts_grammar, out);
}

/* duration_ms before parsing: "not given" (the default is chosen after, see opts_parse) */
#define DURATION_UNSET UINT64_MAX

void opts_init(flame_opts *o)
{
    memset(o, 0, sizeof *o);
    ct_args_default(&o->rec, CT_RECORD); /* 30 s at 99 Hz */
    o->graph.colors = "java";
}

int opts_parse(int argc, char **argv, flame_opts *o, flame_err *err)
{
    int rest = -1;
    uint64_t dflt = o->rec.duration_ms;
    o->rec.duration_ms = DURATION_UNSET;
    if (args_parse(&opts_grammar, argc, argv, o, &rest, err) < 0)
        return -1;
    o->duration_set = o->rec.duration_ms != DURATION_UNSET;
    if (!o->duration_set)
        o->rec.duration_ms = dflt;
    if (o->help || o->version)
        return 0;
    if (rest >= 0) {
        o->cmd = argv + rest;
        o->ncmd = argc - rest;
        if (o->ncmd == 0)
            return args_error(&opts_grammar, err, "\"--\" must be followed by a command");
    }
    /* the one rule (plugin/out/output.h): a known extension of -o decides without --format, and
     * must agree with it */
    unsigned fm = 0;
    if (out_formats(o->output, o->formats, OUT_ALL_FORMATS, FMT_SVG, &fm, err) < 0)
        return -1;
    o->formats = fm;
    o->nformats = __builtin_popcount(o->formats);
    if (o->containers.n == 0)
        return args_error(&opts_grammar, err,
                          "no container given: docker flame [OPTIONS] CONTAINER [CONTAINER...]");
    if (ct_modes_check(&o->rec, OPTS_MODES, "docker flame", err) < 0)
        return -1;
    /* cpu, wall and offcpu in any combination: one wall recording, split by each sample's
     * thread state (docs/MODES.md "Several modes in one run") */
    unsigned perf_modes =
        ct_modes_of(&o->rec) &
        (CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_WALL) | CT_MODE_BIT(CT_MODE_OFFCPU));
    bool off = perf_modes & (CT_MODE_BIT(CT_MODE_WALL) | CT_MODE_BIT(CT_MODE_OFFCPU));
    if (off && o->rec.sampling == CT_SAMPLING_THREAD)
        return args_error(&opts_grammar, err,
                          "--mode %s needs per-CPU sampling: drop --sampling thread",
                          perf_modes & CT_MODE_BIT(CT_MODE_WALL) ? "wall" : "offcpu");
    if (o->rec.offcpu_min_ms && !off)
        return args_error(&opts_grammar, err, "--offcpu-min goes with --mode offcpu or wall");
    /* Kernel stacks come from our per-CPU recorder only (perf's per-thread recorder runs
     * unprivileged, where paranoid 2 forbids kernel samples). */
    if (o->rec.kernel && o->rec.sampling == CT_SAMPLING_THREAD)
        return args_error(&opts_grammar, err,
                          "--kernel needs per-CPU sampling: drop --sampling thread");
    /* With a load command and no -d, profile exactly as long as the command runs. */
    if (o->cmd && !o->duration_set)
        o->rec.duration_ms = 0;
    return 0;
}
