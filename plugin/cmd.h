/* Sub-commands that are pure code: `docker flame fold|render|diff|merge`. Each returns the
 * process exit code and prints its own error line (it is a main() for its verb). */
#pragma once
#include <stddef.h>

#include "common/err.h"
#include "flame/profile.h"

int flame_cmd_fold(int argc, char **argv);
int flame_cmd_render(int argc, char **argv);

/* `diff` and `merge` accept running containers as inputs besides files. The plugin supplies the
 * way to profile them; pure callers (tests) pass NULL and only files are accepted. */
typedef struct flame_profiler {
    /* Is `arg` a running container on the engine? (called only when `arg` is not a file) */
    int (*is_container)(void *ctx, const char *arg);
    /* Profile the n containers AT THE SAME TIME for duration_s seconds (one sidecar each);
     * fill out[i] (caller frees with profile_free). Progress goes to stderr. */
    int (*profile)(void *ctx, const char *const *containers, size_t n, double duration_s,
                   profile **out, flame_err *err);
    void *ctx;
} flame_profiler;

int flame_cmd_diff(int argc, char **argv, const flame_profiler *prof);
int flame_cmd_merge(int argc, char **argv, const flame_profiler *prof);
