/* What the user sees while profiling: one updating line on a TTY (elapsed/remaining, samples,
 * JVMs), plain periodic lines when stderr is not a TTY, nothing with -q; and the end summary. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "plugin/run/proto.h"

enum progress_state { PS_STARTING, PS_RECORDING, PS_PROCESSING, PS_DONE, PS_FAILED };

typedef struct progress_item {
    const char *name;
    enum progress_state state;
    long long elapsed_ms, duration_ms, samples, jvms;
} progress_item;

typedef struct progress {
    FILE *out;
    bool tty, quiet, shown;
    double last_plain; /* monotonic seconds of the last plain line */
    double interval;   /* plain lines: seconds between them */
    char last[1024];   /* TTY: the line on screen */
} progress;

void progress_init(progress *pg, FILE *out, bool quiet);
/* Redraw (TTY) or print a plain line when due (force: print now). now = monotonic seconds. */
void progress_update(progress *pg, const progress_item *items, int n, double now, bool force);
/* Clear the TTY line so that normal output can follow. */
void progress_clear(progress *pg);
/* A line of its own ("docker flame: stopping (Ctrl-C again to abort)"), TTY-safe. */
void progress_note(progress *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Format "1m05s" / "12s" into buf. */
void progress_fmt_secs(double s, char *buf, size_t n);
