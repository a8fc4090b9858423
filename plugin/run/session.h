/* Inside a run (plugin/run/run.h is its face): one sess per target (its sidecar's undo list:
 * created, started, removed, and its attach stream, read by a thread) and the run's own state
 * (the interrupts: first Ctrl-C = stop early and still deliver, second or SIGTERM = abort, counted
 * by plugin/run/signals.c; the load command). The run: plugin/run/session.c; one sidecar's steps:
 * plugin/run/sidecar.c. Only plugin/run/ includes this header (`make check-layers`). */
#pragma once
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "plugin/engine/demux.h"
#include "plugin/engine/engine.h"
#include "plugin/run/progress.h"
#include "plugin/run/proto.h"
#include "plugin/run/run.h"

#define SESS_TAIL 16 /* sidecar stderr lines kept for error messages */

typedef struct sess {
    run_target *t; /* what the verb reads back, in the run's result */
    /* undo list */
    bool created, started, removed;
    /* attach stream (thread) */
    engine *e;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock; /* guards everything below it, and t->pr and t's times */
    pthread_cond_t cond;
    bool attached, stream_done;
    int stream_rc;
    flame_err stream_err;
    demux dx;
    char tail[SESS_TAIL][256];
    unsigned tail_n;
    volatile sig_atomic_t cancel;
    bool stop_sent;
    bool debug;
    run_line_fn line_hook; /* the request's: sees each stdout line first (lock held) */
    void *hook_ctx;
} sess;

typedef struct run_ctx {
    engine *e;
    const run_req *req;
    run_result *res;
    sess *s; /* [n] */
    int n;
    progress pg;
    pid_t cmd_pid; /* the load command, 0 before it starts */
    bool aborted;
    bool stuck; /* aborted because a sidecar ignored the stop */
    bool early; /* aborted because the interrupt came before any sidecar recorded */
    bool image_imported;
    char image_id[80]; /* the sidecar image checked by image_ensure: sidecars are made from it */
} run_ctx;
