/* One target and its sidecar (plugin/run/sidecar.c). The structs live in plugin/run/session.h;
 * every function here acts on one sess and leaves its undo flags (created, started, removed) true
 * to what exists on the engine. */
#pragma once
#include "plugin/run/session.h"

/* Inspect the target: id, name, running (exit 3 when missing or stopped). */
int sidecar_inspect_target(run_ctx *r, sess *s, flame_err *err);
int sidecar_create(run_ctx *r, sess *s, flame_err *err);
/* Attach to its output (a thread reads it from now on), then start it. */
int sidecar_start(run_ctx *r, sess *s, flame_err *err);
/* "SIGINT" (stop, still deliver) or "SIGTERM" (abort, restore the target). */
void sidecar_signal(run_ctx *r, sess *s, const char *sig);
/* Stop (gracefully when it still runs) and remove it; a sidecar we could not remove is named in
 * err with `docker flame gc`. */
int sidecar_remove(run_ctx *r, sess *s, flame_err *err);
/* Wait up to timeout_s for its stream thread, then cancel the transfer and join. */
void sidecar_join(sess *s, double timeout_s);
/* Did the target stop (or vanish) meanwhile? Sets s->target_exit; asks for up to ~2 s. */
void sidecar_target_gone_bounded(run_ctx *r, sess *s);
/* Creating or starting failed: say so in err when the target stopped since the inspect. */
int sidecar_explain_stopped_target(run_ctx *r, sess *s, flame_err *err);
/* A `flame-sidecar restore` sidecar that undoes what a SIGKILLed sidecar left in the target. */
int sidecar_restore_target(engine *e, const char *target_id, flame_err *err);
/* Does container id run: 1 yes, 0 no (stopped, or removed), -1 the engine did not say. */
int sidecar_target_running(engine *e, const char *id);
/* Was s's sidecar ended by the kernel's OOM killer (its container's memory limit)? Then buf is
 * what to say about it: "ran out of memory (its limit is N MiB; ...)". */
bool sidecar_out_of_memory(const sess *s, char *buf, size_t cap);
/* Free what a sess holds (joins its thread). */
void sess_clear(sess *s);
