/* Sidecars left behind, found by their labels (plugin/run/spec.h) and removed: `docker flame gc`
 * (plugin/cmd_gc.c) decides which, from their owners; a recorder sweeps its own run's after an
 * engine restart (plugin/record_loop.c). */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "common/err.h"
#include "plugin/engine/engine.h"

/* Every sidecar container of the engine, running or not (GET /containers/json, by label). */
int sweep_list(engine *e, json_t **list, flame_err *err);

/* What sweep_remove() did besides removing the sidecar. */
typedef struct sweep_done {
    bool was_running; /* it was stopped with SIGTERM first, so it restored its target */
    /* It had been SIGKILLed ("Exited (137)"), so it could not undo its work in its target: a
     * restore sidecar was run there (target: the target's id). */
    bool restore_tried, restored;
    const char *target;    /* points into the listed container's labels */
    flame_err restore_err; /* why the restore failed */
} sweep_done;

/* Remove one listed sidecar c (an element of sweep_list's array): SIGTERM first when it runs,
 * then the restore of its target when it was SIGKILLed. Nothing is printed. */
int sweep_remove(engine *e, json_t *c, sweep_done *d, flame_err *err);

/* Remove every sidecar whose run label is run_id (spec_run_id(): this process), whatever its
 * state (a recorder sweeping what an engine restart left of its own runs); *removed counts them. */
int sweep_owned(engine *e, const char *run_id, unsigned *removed, flame_err *err);
