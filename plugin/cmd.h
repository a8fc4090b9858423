/* The verbs of `docker flame`, each a main() for itself (plugin/cli.h): it returns the process
 * exit code and prints its own messages. The pure ones (fold, render, diff and merge on files)
 * need no engine and also form build/libflamecmd.a, so this header includes nothing that needs
 * jansson or libcurl: the engine verbs get Docker's global flags only (plugin/engine/endpoint.h).
 */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/args.h"
#include "common/err.h"
#include "flame/profile.h"
#include "plugin/engine/endpoint.h"

int flame_cmd_fold(int argc, char **argv);
int flame_cmd_render(int argc, char **argv);

/* `diff` and `merge` accept running containers as inputs besides files. The plugin supplies the
 * way to profile them; pure callers (tests) pass NULL and only files are accepted. */
typedef struct flame_profiler {
    /* Is `arg` a running container on the engine? (called only when `arg` is not a file) */
    int (*is_container)(void *ctx, const char *arg);
    /* Profile the n containers AT THE SAME TIME for duration_ms (one sidecar each); fill out[i]
     * (caller frees with profile_free). Progress goes to stderr. */
    int (*profile)(void *ctx, const char *const *containers, size_t n, uint64_t duration_ms,
                   profile **out, flame_err *err);
    void *ctx;
    /* A stored range "CONTAINER@SINCE..UNTIL" (plugin/stored.c) of profile type `type` (NULL =
     * cpu): 1 and *out (caller frees) when arg is one, 0 when it is not; NULL = no profile
     * store. */
    int (*stored)(void *ctx, const char *arg, const char *type, profile **out, flame_err *err);
} flame_profiler;

int flame_cmd_diff(int argc, char **argv, const flame_profiler *prof);
int flame_cmd_merge(int argc, char **argv, const flame_profiler *prof);

/* The verbs that talk to the engine; g: Docker's global flags. */
int flame_cmd_profile(const ep_globals *g, int argc, char **argv);
int flame_cmd_gc(const ep_globals *g, int argc, char **argv);
int flame_cmd_top(const ep_globals *g, int argc, char **argv);
/* `docker flame host`: every container of the host on the CPU (plugin/cmd_host.c). */
int flame_cmd_host(const ep_globals *g, int argc, char **argv);
/* `docker flame record`: continuous profiling into the store (plugin/cmd_record.c). */
int flame_cmd_record(const ep_globals *g, int argc, char **argv);
/* `docker flame ps` and `stop`: the background recordings (plugin/cmd_ps.c). */
int flame_cmd_ps(const ep_globals *g, int argc, char **argv);
int flame_cmd_stop(const ep_globals *g, int argc, char **argv);
/* The profile store's verbs (plugin/cmd_show.c, cmd_ls.c, cmd_prune.c): no engine needed (g is
 * unused; the signature is the verb table's). */
int flame_cmd_show(const ep_globals *g, int argc, char **argv);
int flame_cmd_ls(const ep_globals *g, int argc, char **argv);
int flame_cmd_prune(const ep_globals *g, int argc, char **argv);
/* `docker flame serve`: the store in a browser (plugin/cmd_serve.c, plugin/web/). */
int flame_cmd_serve(const ep_globals *g, int argc, char **argv);
/* Each verb's option table and operands (common/args.h): its parser, its --help, and the shell
 * completion of plugin/complete.c read the same grammar. The profile verb's is opts_grammar. */
extern const args_verb cmd_fold_grammar, cmd_render_grammar, cmd_diff_grammar, cmd_merge_grammar,
    cmd_gc_grammar, cmd_top_grammar, cmd_show_grammar, cmd_record_grammar, cmd_ls_grammar,
    cmd_prune_grammar, cmd_ps_grammar, cmd_stop_grammar, cmd_host_grammar, cmd_serve_grammar;
