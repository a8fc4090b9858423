/* The verb table (plugin/verbs.h). */
#include "plugin/verbs.h"

#include <stdio.h>
#include <string.h>

#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/run/profiler.h"
#include "plugin/stored.h"
#include "plugin/usage.h"

/* `docker flame help [VERB]` and `docker flame version`, as `docker help` and `docker version`
 * are: verbs, never a container to look up (a container really named so is profiled with an
 * option before it, `docker flame -d 30s help`, or by its id). */
typedef struct help_args {
    bool help;
    args_operands ops;
} help_args;
#define F(field, T) ARG_FIELD(help_args, field, T)
static const arg_spec help_specs[] = {CLI_HELP_SPEC(F(help, bool))};
static const args_verb cmd_help_grammar =
    CLI_VERB("docker flame help", help_specs, F(ops, args_operands));
static const args_verb cmd_version_grammar =
    CLI_VERB("docker flame version", help_specs, ARGS_NO_OPERANDS);
#undef F

static int run_help(const ep_globals *g, int argc, char **argv)
{
    help_args a = {0};
    flame_err err = FLAME_ERR_INIT;
    if (args_parse(&cmd_help_grammar, argc - 1, argv + 1, &a, NULL, &err) < 0)
        return cli_fail("help", &err);
    if (a.help) {
        printf("Usage:  docker flame help [VERB]\n\nThe help of docker flame, or of one VERB "
               "(what VERB --help prints).\n\nExit status: 0 ok, 2 no such verb.\n");
        return 0;
    }
    if (a.ops.n == 0) {
        flame_usage(stdout);
        return 0;
    }
    const flame_verb *v = flame_verb_find(a.ops.v[0]);
    if (!v || a.ops.n > 1) {
        flame_fail(&err, FLAME_EXIT_USAGE, "%s: no such command (see `docker flame --help`)",
                   a.ops.v[a.ops.n > 1 && v ? 1 : 0]);
        return cli_fail("help", &err);
    }
    char *args[] = {(char *)v->name, "--help", NULL};
    return v->run(g, 2, args);
}

static int run_version(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    help_args a = {0};
    flame_err err = FLAME_ERR_INIT;
    if (args_parse(&cmd_version_grammar, argc - 1, argv + 1, &a, NULL, &err) < 0)
        return cli_fail("version", &err);
    if (a.help) {
        printf("Usage:  docker flame version\n\nPrint docker-flame's version (as docker flame "
               "--version).\n\nExit status: 0.\n");
        return 0;
    }
    printf("docker-flame version %s\n", FLAME_VERSION);
    return 0;
}

/* diff and merge with this plugin's container profiler and the profile store as inputs. */
static int with_profiler(const ep_globals *g, int (*fn)(int, char **, const flame_profiler *),
                         int argc, char **argv)
{
    profiler c = {.g = g};
    flame_profiler pr = {.is_container = profiler_is_container,
                         .profile = profiler_profile,
                         .stored = stored_input,
                         .ctx = &c};
    int rc = fn(argc, argv, &pr);
    profiler_close(&c);
    return rc;
}
static int run_diff(const ep_globals *g, int argc, char **argv)
{
    return with_profiler(g, flame_cmd_diff, argc, argv);
}
static int run_merge(const ep_globals *g, int argc, char **argv)
{
    return with_profiler(g, flame_cmd_merge, argc, argv);
}
static int run_fold(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    return flame_cmd_fold(argc, argv);
}
static int run_render(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    return flame_cmd_render(argc, argv);
}

// clang-format off
const flame_verb flame_verbs[] = {
    {"fold", run_fold, &cmd_fold_grammar, OPS_FILE,
     "fold `perf script` output into folded stacks"},
    {"render", run_render, &cmd_render_grammar, OPS_FILE,
     "render folded stacks (or a docker-flame SVG) as SVG / speedscope / pprof"},
    {"diff", run_diff, &cmd_diff_grammar, OPS_INPUT,
     "differential flame graph of two profiles (files or running containers)"},
    {"merge", run_merge, &cmd_merge_grammar, OPS_INPUT, "merge profiles"},
    {"gc", flame_cmd_gc, &cmd_gc_grammar, OPS_NONE,
     "remove sidecar containers left behind (e.g. after `kill -9`); --all also\n"
     "removes running ones"},
    {"top", flame_cmd_top, &cmd_top_grammar, OPS_RUNNING,
     "live view of the hottest Java methods (docker flame top --help)"},
    {"host", flame_cmd_host, &cmd_host_grammar, OPS_NONE,
     "which containers are on the CPU, and what each runs (docker flame host\n"
     "--help)"},
    {"record", flame_cmd_record, &cmd_record_grammar, OPS_RUNNING,
     "record continuously into the profile store, window after window;\n"
     "--detach: in the background"},
    {"ps", flame_cmd_ps, &cmd_ps_grammar, OPS_NONE, "the background recordings"},
    {"stop", flame_cmd_stop, &cmd_stop_grammar, OPS_NONE, "end a background recording"},
    {"show", flame_cmd_show, &cmd_show_grammar, OPS_STORED,
     "flame graph (or --timeline) of the windows the recorder stored"},
    {"ls", flame_cmd_ls, &cmd_ls_grammar, OPS_STORED, "what the profile store holds"},
    {"prune", flame_cmd_prune, &cmd_prune_grammar, OPS_NONE,
     "delete old windows and merge older ones in the profile store"},
    {"help", run_help, &cmd_help_grammar, OPS_NONE,
     "this help; docker flame help VERB: that verb's"},
    {"version", run_version, &cmd_version_grammar, OPS_NONE, "print docker-flame's version"},
};
// clang-format on
const size_t flame_nverbs = sizeof flame_verbs / sizeof *flame_verbs;

const flame_verb *flame_verb_find(const char *name)
{
    for (size_t v = 0; v < flame_nverbs; v++)
        if (!strcmp(name, flame_verbs[v].name))
            return &flame_verbs[v];
    return NULL;
}
