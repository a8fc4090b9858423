/* The graph options that every verb drawing a flame graph shares (profile, render, diff, merge):
 * one option table for common/args.c (args_verb.shared) and how the values become render_opts. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/args.h"
#include "common/err.h"
#include "flame/render.h"

typedef struct graph_opts {
    const char *title, *colors;
    double minwidth;
    bool minwidth_pct, minwidth_set;
    int64_t width;
} graph_opts;

/* The table, for args_verb.shared (with shared_off = the offset of a graph_opts in the verb's
 * struct). */
#define GRAPH_NSPECS 5
extern const arg_spec graph_specs[GRAPH_NSPECS];
/* Defaults, then the options given. */
void graph_apply(const graph_opts *g, render_opts *ro);
/* "0.5%" / "0.1": minwidth in percent or pixels; -1 on bad syntax. */
int graph_parse_minwidth(const char *s, double *v, bool *pct);
