/* The verb table (plugin/verbs.h). */
#include "plugin/verbs.h"

#include <string.h>

#include "plugin/cmd.h"
#include "plugin/run/profiler.h"
#include "plugin/stored.h"

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
