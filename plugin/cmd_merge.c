/* `docker flame merge`: several profiles (files, SVGs, running containers) added into one. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "flame/diff.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/graph.h"
#include "plugin/inputs.h"
#include "plugin/out/output.h"

static const char usage_head[] =
    "Usage:  docker flame merge [OPTIONS] INPUT INPUT... -o OUT\n"
    "\n"
    "Add several profiles into one: several runs of one configuration, runs at several\n"
    "frequencies, several containers. Rare code paths caught by one run show up in the sum.\n"
    "Each INPUT is a folded file, an SVG written by docker flame, - for standard input, a\n"
    "stored range CONTAINER[:PID]@SINCE..UNTIL (see docker flame diff --help), or a running\n"
    "container (all containers are profiled at the same time). The result can be given to\n"
    "docker flame diff.\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame merge run1.folded run2.folded run3.folded -o all.svg\n"
    "  docker flame merge --normalize r99hz.svg r997hz.svg -o all.folded\n"
    "  docker flame merge web-1 web-2 web-3 -d 20 -o web.json   # three replicas, one profile\n"
    "  docker flame merge web-1@-1h web-2@-1h -o replicas.svg   # stored: the last hour of two\n"
    "\n"
    "Environment: DOCKER_FLAME_TIMINGS=1 prints where the time went (load, sum, write).\n"
    "\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line.\n";

typedef struct merge_args {
    graph_opts g;
    const char *output;
    int fmt, mode;
    uint64_t duration_ms;
    bool normalize, exact, help;
    args_operands in;
} merge_args;

#define F(field, T) ARG_FIELD(merge_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    OUT_OUTPUT_SPEC(F(output, const char *), "OUT",
                    "required; the format follows the extension: .svg (flame graph with\n"
                    "its data), .folded or .txt (folded stacks), .json (speedscope),\n"
                    ".pb.gz (pprof)"),
    OUT_FORMAT_SPEC(F(fmt, int),
                    "svg, folded, speedscope or pprof, for an OUT without a known\n"
                    "extension (one that names another format is refused)",
                    out_fmt_names, 0),
    {.lng = "normalize", .kind = ARG_FLAG, .off = F(normalize, bool),
     .help = "scale every input to the same total before adding, so each run\nweighs the same "
     "(counts rounded; without it, longer runs weigh more)"},
    {.lng = "normalise", .kind = ARG_FLAG, .off = F(normalize, bool), .flags = ARG_HIDDEN},
    {.lng = "exact", .kind = ARG_FLAG, .off = F(exact, bool),
     .help = "add up only stacks that are equal as folded (default: as read, a\nframe the JIT "
     "compiled in one input and inlined in another is one)"},
    INPUTS_MODE_SPEC(F(mode, int), "the profile type of the stored inputs (CONTAINER@SINCE..UNTIL):\n"
                     "cpu (default), wall, offcpu, alloc or lock"),
    INPUTS_DURATION_SPEC(F(duration_ms, uint64_t)),
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on

const args_verb cmd_merge_grammar = GRAPH_VERB("docker flame merge", specs, merge_args);
#undef F

int flame_cmd_merge(int argc, char **argv, const flame_profiler *prof)
{
    const char *vname = "merge";
    merge_args a = {.fmt = -1, .mode = -1, .duration_ms = 30000, .g = {.colors = "java"}};
    flame_err err = FLAME_ERR_INIT;
    int rc = cli_parse(vname, &cmd_merge_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (rc >= 0)
        return rc;
    size_t n = (size_t)a.in.n;
    if (n < 1)
        return cli_usage_error(vname, "no profiles to merge");
    if (!a.output)
        return cli_usage_error(vname, "-o OUT is required (all.svg, all.folded or all.json)");
    int fmt = out_format(a.output, a.fmt, OUT_ALL_FORMATS, -1, &err);
    if (fmt < 0)
        return cli_fail(vname, &err);
    _cleanup_free_ input *in = calloc(n, sizeof *in);
    _cleanup_free_ profile **ps = calloc(n, sizeof *ps);
    if (!in || !ps) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        return cli_fail(vname, &err);
    }
    for (size_t i = 0; i < n; i++)
        in[i].arg = a.in.v[i];
    double t[5] = {mono_s()};
    rc = inputs_load(in, n, prof, a.duration_ms, a.mode >= 0 ? ct_mode_names[a.mode] : NULL, &err);
    t[1] = mono_s();
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = inputs_check_plain(&in[i], &err);
    if (rc < 0) {
        inputs_free(in, n);
        return cli_fail(vname, &err);
    }
    for (size_t i = 0; i < n; i++) {
        ps[i] = in[i].p;
        in[i].p = NULL;
    }
    profile *sum = NULL;
    if (diff_merge(ps, n, a.normalize, a.exact, &sum, &err) < 0)
        return cli_fail(vname, &err);
    t[2] = t[3] = mono_s();
    render_opts ro;
    graph_apply(&a.g, &ro);
    /* a merged SVG is meant to be read back (diff it later): always carry the data, however
     * big (the render default leaves out more than RENDER_EMBED_LIMIT bytes) */
    ro.embed_limit = 0;
    _cleanup_free_ char *title = NULL;
    const char *inputs = n == 1 ? "input" : "inputs";
    if (!a.g.title && asprintf(&title, "Merged profile (%zu %s%s)", n, inputs,
                               a.normalize ? ", each weighted the same" : "") >= 0)
        ro.title = title;
    char total[32], sub[96];
    snprintf(sub, sizeof sub, "%s samples from %zu profile%s",
             count_grouped(profile_total(sum), total, sizeof total), n, n == 1 ? "" : "s");
    ro.subtitle = sub;
    char comment[96];
    snprintf(comment, sizeof comment, "merged from %zu profile%s%s", n, n == 1 ? "" : "s",
             a.normalize ? ", each weighted the same" : "");
    pprof_meta pm = {.comment = comment};
    inputs_apply_mode(inputs_mode(in, n), &ro, &pm); /* bytes, ns: docs/MODES.md */
    if (inputs_mode(in, n) > CT_MODE_CPU) {
        snprintf(sub, sizeof sub, "%s %s from %zu profile%s",
                 count_grouped(profile_total(sum), total, sizeof total), ro.countname, n,
                 n == 1 ? "" : "s");
    }
    out_job job = {.p = sum, .fmt = fmt, .ro = &ro, .name = "merged", .pm = &pm};
    rc = out_write(a.output, &job, &err);
    profile_free(sum);
    if (rc < 0)
        return cli_fail(vname, &err);
    t[4] = mono_s();
    inputs_print_timings(vname, "sum", t);
    fprintf(stderr, "docker flame merge: wrote %s (%zu %s, %s %s)\n", a.output, n, inputs, total,
            inputs_mode(in, n) > CT_MODE_CPU ? ro.countname : "samples");
    return FLAME_EXIT_OK;
}
