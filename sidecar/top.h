/* flame-sidecar `top`: record in windows and stream each window's folded stacks while the next
 * one records (docs/TOP.md). The JVM discovery, injection, attach and undo are record mode's
 * (main.c); this file only adds the windowed loop and the hardened processing child. */
#pragma once
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "sidecar/sidecar.h"

typedef struct sc_top_env {
    sc_jvm *jvms;
    const int *ns_fd;
    int n;
    int interval_ms;
    bool inline_frames, signatures;
    long t0; /* monotonic ms of the sidecar's start (window start_ms is relative to it) */
    /* record mode's perf launcher: pipe-format data on *out_fd, "stop" on *ctl_fd */
    int (*spawn)(void *ctx, int *out_fd, int *ctl_fd, pid_t *pid, flame_err *err);
    void *ctx;
    const char *(*root_for_pid)(void *ctx, long pid); /* NULL with one JVM */
    volatile sig_atomic_t *stop, *abort;
} sc_top_env;

/* Runs until *stop. Returns 0, or <0 with err ("perf_denied ..." when perf records nothing).
 * The caller undoes the target afterwards, exactly as after `record`. */
int sc_top_run(const sc_top_env *env, flame_err *err);
