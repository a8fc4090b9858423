/* `docker flame record`: one recorder per container (plugin/record_loop.c), run in the
 * foreground (one process per container) or detached (plugin/cmd_record.c), its state kept in
 * the registry of background recordings (plugin/recordings.h) for `ps` and `stop`. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "common/args.h"
#include "plugin/engine/endpoint.h"
#include "plugin/recordings.h"

typedef struct rec_args {
    uint64_t window_ms;
    int64_t frequency, pid;
    const char *store;
    bool no_inline, quiet, detach, shared_pid, help;
    args_operands in;
} rec_args;

/* How a detached recorder tells the command that started it how it went, and where its
 * messages go afterwards. All optional (-1 / NULL in the foreground). */
typedef struct rec_link {
    int ready_fd; /* gets one byte 'R' once the recording runs (or waits for its container) */
    int log_fd;   /* becomes stderr once ready */
    rec_reg *reg; /* the registry entry kept up to date */
} rec_link;

/* Record container `arg` until an interrupt, its removal, or a failure; returns the exit code
 * (messages printed on stderr). */
int rec_run(const ep_globals *g, const rec_args *a, const char *arg, rec_link *link);
