/* The container profiler of `diff` and `merge` (their running-container inputs): each container
 * is profiled by one ordinary run (plugin/run/session.c), all of them at the same time, over one
 * window. The functions have flame_profiler's shapes (plugin/cmd.h); plugin/verbs.c ties them to
 * the verbs. The engine is opened at the first use. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "flame/profile.h"
#include "plugin/engine/endpoint.h"
#include "plugin/engine/engine.h"

typedef struct profiler {
    const ep_globals *g;
    engine *e; /* NULL until first needed */
} profiler;

/* Is arg a container of the engine (called only when arg is not a file)? 1 or 0. */
int profiler_is_container(void *ctx, const char *arg);
/* Profile the n containers at the same time for duration_ms; out[i] (caller frees). Progress
 * goes to stderr. */
int profiler_profile(void *ctx, const char *const *containers, size_t n, uint64_t duration_ms,
                     profile **out, flame_err *err);
/* Close its engine. */
void profiler_close(profiler *p);
