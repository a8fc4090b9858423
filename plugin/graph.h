/* The graph options that every verb drawing a flame graph shares (profile, render, diff, merge):
 * one option table for common/args.c (args_verb.shared) and how the values become render_opts. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "common/args.h"
#include "common/err.h"
#include "flame/render.h"

typedef struct graph_opts {
    const char *title, *colors;
    double minwidth;
    bool minwidth_pct, minwidth_set;
    int width;
} graph_opts;

/* ids GRAPH_ID_BASE.. are the table's; a verb's own ids stay below */
#define GRAPH_ID_BASE 1000
#define GRAPH_NSPECS 5
extern const arg_spec graph_specs[GRAPH_NSPECS];

/* 1 when s was one of the graph options (stored in g), 0 when not, -1 (err) when refused. */
int graph_opt(graph_opts *g, const arg_spec *s, const arg_val *v, flame_err *err);
/* Defaults, then the options given. */
void graph_apply(const graph_opts *g, render_opts *ro);
/* "0.5%" / "0.1": minwidth in percent or pixels; -1 on bad syntax. */
int graph_parse_minwidth(const char *s, double *v, bool *pct);
