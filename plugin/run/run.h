/* One run of sidecars: the one entry point of every recording verb (profile, diff and merge's
 * containers, top, record, host). The verb fills a run request, whose `sidecar` is the sidecar's
 * own command line (common/contract.h) filled straight from the verb's option table; the run
 * inspects the targets, loads the sidecar image, creates and starts one sidecar per target,
 * follows them (interrupts, the load command, progress) and removes every sidecar it created on
 * every path before run_profile() returns; the verb then reads what came back per target. How:
 * plugin/run/session.c (the run) and plugin/run/sidecar.c (one sidecar), behind this header. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "common/contract.h"
#include "common/err.h"
#include "plugin/engine/engine.h"
#include "plugin/run/proto.h"

/* What one target's sidecar gave back. The strings and the stream are the run's (run_result_free
 * frees them); everything in `pr`, `name` and `image` came from a container: print it only through
 * proto_sanitize(). */
typedef struct run_target {
    const char *arg; /* the container as the user named it */
    char name[256];  /* its name once inspected, without docker's leading '/' */
    char image[256]; /* its Config.Image, as the engine reports it (a label only) */
    char *target_id, *sidecar_id;
    proto pr;              /* what its sidecar streamed: JVMs, progress, profile, summary, E, D */
    long exit_status;      /* its sidecar's exit code, -1 unknown */
    bool oom_killed;       /* the engine says the kernel's OOM killer ended a process of it */
    long long memory;      /* its memory limit, bytes (plugin/run/spec.h) */
    long target_exit;      /* >= 0: the target stopped during the run, with this exit code */
    bool target_removed;   /* ... and was removed (target_exit is then 0) */
    bool restored;         /* its sidecar was SIGKILLed; a restore sidecar undid its work */
    char restore_why[200]; /* host: the first container that could not be restored, and why */
    /* Why it delivered no profile (run_failure(): its E line, its stream, its target stopping, its
     * exit); code 0 = it delivered one. */
    flame_err why;
    /* When its stream did what (mono_s()), for the timings; the first P line's elapsed_ms. */
    double t_attached, t_first_p, t_first_f, t_done;
    long long first_p_elapsed_ms;
} run_target;

/* Sees each stdout line of a target's sidecar before the stream's parser, on that target's stream
 * thread with its lock held (top's and record's windows): 1 = consumed, 0 = parse it too. */
typedef int (*run_line_fn)(void *ctx, const run_target *t, const char *line, size_t len);

typedef struct run_req {
    ct_args sidecar;            /* what each sidecar does: the contract's verb and options */
    const char *const *targets; /* the containers as the user named them (CT_HOST: "host") */
    int n;
    /* --shared-pid: a target that shares a PID namespace (--pid host, --pid container:X) is
     * profiled (its sidecar keeps to its own processes) instead of refused */
    bool shared_pid;
    /* `-- CMD ARGS...`, NULL-terminated: started once every sidecar records, and when it exits
     * every sidecar is stopped; NULL = none */
    char **cmd;
    bool quiet; /* no progress line (its notes still) */
    bool debug; /* -D: the sidecars' stderr and the engine's refusals on ours */
    double t0;  /* mono_s() when the verb started, for the timings; 0 = when the run starts */
    run_line_fn line_hook; /* NULL = none */
    void *hook_ctx;
} run_req;

/* When each stage of the run ended (mono_s()): t0 (the verb's start), the engine answered, every
 * target inspected, the image there, every sidecar created, started, every stream ended, every
 * sidecar removed. */
typedef struct run_times {
    double t0, ping, inspect, image, create, start, rec_start, rec_end, streams_done, removed;
} run_times;

typedef struct run_result {
    run_target *t; /* [n], in the order of the request's targets */
    int n;
    run_times tm;
    int interrupts; /* 1: stopped early by the user (what was recorded is delivered); 2: aborted */
    bool cmd_started;    /* the load command was started ... */
    bool cmd_done;       /* ... and ended (or could not start: status 127) ... */
    int cmd_status;      /* ... with this wait status */
    flame_err cmd_error; /* it could not be started (code set) */
} run_result;

/* The targets as the request names them, nothing known yet (a verb that fails before the run can
 * still report each target), and tm.t0. 0, or -1 (out of memory) with err set; run_result_free()
 * after, in every case. */
int run_result_init(run_result *res, const run_req *req, flame_err *err);
void run_result_free(run_result *res);

/* Run it (res from run_result_init()). On return every sidecar is removed (or named in err with
 * `docker flame gc` when the engine would not remove it). 0 when every sidecar finished its
 * stream (each target's `pr` and `why` then say how), -1 with err when the run as a whole failed
 * (a target missing, the image unavailable, an abort: exit 130). */
int run_profile(engine *e, const run_req *req, run_result *res, flame_err *err);

/* Can `-- CMD` be run: found in $PATH (or the path given) and executable? Checked before anything
 * is created, so a typo fails at once (exit 2) instead of after a useless profile. */
int run_cmd_check(const char *cmd, flame_err *err);

/* t's sidecar's E line (t->pr.failed) in the words every verb uses ("no JVM in container web:
 * ..."), never the protocol's code alone; returns <0 with err set, err->code its exit code. */
int run_sidecar_error(const run_target *t, flame_err *err);

/* Was t's sidecar ended by the kernel's OOM killer (its container's memory limit)? Then buf is
 * what to say about it: "ran out of memory (its limit is N MiB; ...)". */
bool run_out_of_memory(const run_target *t, char *buf, size_t cap);

/* The tool's own time per stage, in ms (what -D / DOCKER_FLAME_TIMINGS=1 print): ping, inspect,
 * image, create, attach+start, start->recording, recording, recording->profile, profile stream,
 * remove, write, total. t_written: mono_s() once the verb wrote its files. */
enum { RUN_TIMINGS = 12 };
extern const char *const run_timing_names[RUN_TIMINGS];
void run_timings_ms(const run_result *res, double t_written, double out[RUN_TIMINGS]);
