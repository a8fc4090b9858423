/* `docker flame top` (docs/TOP.md): the same sidecar as profiling (plugin/run/run.h), run with
 * the contract's `top` verb, streams one window of folded stacks per interval (T, F..., P). The
 * model (top_model.c) keeps the last windows as profiles, fed by the stream thread; the screen
 * (top_screen.c) aggregates them with flame/methods and draws them (ncurses on a terminal, plain
 * snapshots otherwise); the verb (cmd_top.c) ties them to the ordinary sidecar lifecycle. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/contract.h"
#include "flame/methods.h"
#include "flame/profile.h"

#define TOP_MAX_WINDOWS 120
#define TOP_MAX_STACKS 200000 /* per window: a hostile sidecar cannot make us grow without end */

typedef struct top_win {
    long long id, start_ms, ms, end_mono_ms;
    /* this window's stacks per mode (F lines: cpu, M lines: their mode; NULL until the first):
     * one mode for top, one or several for record (--mode cpu,alloc) */
    profile *p[CT_MODE_COUNT];
    size_t stacks;
} top_win;

typedef struct top_model {
    pthread_mutex_t lock; /* guards everything below */
    int k;                /* windows in the sliding window */
    top_win ring[TOP_MAX_WINDOWS];
    int nring; /* filled slots, newest at (head - 1) */
    int head;
    top_win cur;
    bool in_win;
    unsigned gen; /* completed windows so far */
    int jvms;
    long long total_samples, skipped;
    double last_latency_ms; /* T arrival minus the window's end (same host clocks) */
    double lat_sum, lat_max;
    long long lat_n;
    profile *rec; /* --record: every stack seen, or NULL */
    bool ended;   /* E or D seen */
    int wake[2];  /* the screen's wake-up pipe */
    /* Each completed window, as it completes (stream thread, lock held); NULL = none. The
     * recorder (plugin/record_loop.c) stores it. */
    void (*on_window)(void *ctx, const top_win *w);
    void *on_window_ctx;
} top_model;

/* k windows; with_record: keep every stack for --record. 0 or -1 (out of resources). */
int top_model_init(top_model *m, int k, bool with_record);
void top_model_free(top_model *m);
/* The session's line hook (stream thread): 1 = consumed (T, F); 0 = the protocol parser has it
 * too (V, J, P, W, E, D). Malformed T/F lines are ignored: the stream is not trusted, but a bad
 * window must not end the view. */
int top_model_line(void *ctx, const char *line, size_t len);
/* The completed windows in the ring, aggregated into t (caller holds m->lock). */
int top_model_aggregate(const top_model *m, methods *t, double *span_ms, int *wins, flame_err *err);

/* The screen: runs until *main_done (a thread). */
typedef struct top_ui {
    top_model *m;
    const char *container;
    double interval_s, window_s;
    bool tty, by_total, java_only, paused;
    int mode;     /* enum ct_mode: the unit of the counts (samples, bytes, ns) */
    bool callers; /* showing the callers of `focus` */
    char focus[512];
    int sel, scroll;
    methods *tab;
    double span_ms;
    int wins;
    double t0;
    volatile bool main_done; /* run_profile returned */
    bool quit_sent;
    const char *status; /* "stopping ..." */
} top_ui;
void *top_screen_main(void *arg);
void top_screen_start(void); /* ncurses on (the terminal is restored by top_screen_end) */
void top_screen_end(void);
