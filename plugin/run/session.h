/* One profiling run: one sess per target (its sidecar's undo list: created, started, removed, and
 * its attach stream, read by a thread), the interrupts (first Ctrl-C = stop early and still
 * render, second or SIGTERM = abort: plugin/run/signals.c counts them) and the optional load
 * command. The run itself: plugin/run/session.c; one sidecar's steps: plugin/run/sidecar.c. */
#pragma once
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "plugin/engine/demux.h"
#include "plugin/engine/engine.h"
#include "plugin/opts.h"
#include "plugin/run/progress.h"
#include "plugin/run/proto.h"

#define SESS_TAIL 16 /* sidecar stderr lines kept for error messages */

typedef struct sess {
    const char *arg; /* the container as the user named it */
    char *target_id;
    char name[256];  /* target name without docker's leading '/' */
    char image[256]; /* the target's Config.Image, as the engine reports it (a label only) */
    char *sidecar_id;
    /* undo list */
    bool created, started, removed;
    /* attach stream (thread) */
    engine *e;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock; /* guards everything below it */
    pthread_cond_t cond;
    bool attached, stream_done;
    int stream_rc;
    flame_err stream_err;
    proto pr;
    demux dx;
    char tail[SESS_TAIL][256];
    unsigned tail_n;
    double t_attached, t_first_p, t_first_f, t_done;
    long long first_p_elapsed_ms; /* elapsed_ms of the first P line (recording start estimate) */
    volatile sig_atomic_t cancel;
    long exit_status;      /* sidecar's exit code, -1 unknown */
    bool oom_killed;       /* the engine says the kernel's OOM killer ended a process of it */
    long long memory;      /* its memory limit, bytes (plugin/spec.h) */
    long target_exit;      /* >= 0: the target stopped during the run, with this exit code */
    bool target_removed;   /* ... and was removed (target_exit is then 0) */
    bool restored;         /* its sidecar was killed; a restore sidecar undid its work */
    char restore_why[200]; /* host: the first container that could not be restored, and why */
    bool stop_sent;
    bool debug;
    /* top: sees each stdout line first (stream thread, lock held); 1 = consumed */
    int (*line_hook)(void *ctx, const char *line, size_t len);
    void *hook_ctx;
} sess;

typedef struct run_times {
    double t0, ping, inspect, image, create, start, rec_start, rec_end, streams_done, removed;
} run_times;

typedef struct run_ctx {
    engine *e;
    const flame_opts *o;
    sess *s;
    int n;
    bool debug;
    progress pg;
    run_times tm;
    /* load command (`-- CMD ARGS...`) */
    pid_t cmd_pid;
    int cmd_status; /* wait status */
    bool cmd_done;
    flame_err cmd_error; /* it could not be started (code set) */
    /* interrupts */
    int interrupts;
    bool aborted;
    bool stuck; /* aborted because a sidecar ignored the stop */
    bool early; /* aborted because the interrupt came before any sidecar recorded */
    bool image_imported;
    char image_id[80]; /* the sidecar image checked by image_ensure: sidecars are made from it */
} run_ctx;

/* The sidecar's E line (s->pr.failed) in the words every verb uses ("no JVM in container web:
 * ..."), never the protocol's code alone; returns <0 with err set, err->code its exit code. */
int sess_sidecar_error(const sess *s, flame_err *err);
/* Can `-- CMD` be run: found in $PATH (or the path given) and executable? Checked before anything
 * is created, so a typo fails at once (exit 2) instead of after a useless profile. */
int sess_cmd_check(const char *cmd, flame_err *err);
/* Inspect targets, ensure image, create + attach + start sidecars, follow them to the end,
 * remove them. On return every sidecar is removed (or reported as left behind in err).
 * Returns 0 when every sidecar finished (each sess then carries its proto), -1 otherwise. */
int run_profile(run_ctx *r, flame_err *err);
/* Why did this sidecar not deliver a profile (its E line, its stream, its target that stopped,
 * its exit; stopping: the user stopped it early)? 0 when it did; else the exit code, err filled. */
int run_failure(const sess *s, bool stopping, flame_err *err);
