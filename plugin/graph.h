/* The graph options that every verb drawing a flame graph shares (profile, render, diff, merge):
 * one option table for common/args.c (a group of args_verb) and how the values become render_opts.
 */
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

/* The table, for a group of args_verb (its off = the offset of a graph_opts in the verb's
 * struct). */
#define GRAPH_NSPECS 5
extern const arg_spec graph_specs[GRAPH_NSPECS];
/* The grammar of a verb that draws flame graphs: its own table, then the graph options; its
 * struct (type T) holds them in a graph_opts g and its operands in an args_operands in. */
#define GRAPH_VERB(vname, table, T)                                                                \
    {                                                                                              \
        .name = vname, .specs = table, .nspecs = sizeof table / sizeof *table,                     \
        .groups = {{graph_specs, GRAPH_NSPECS, offsetof(T, g)}}, .operands_off = offsetof(T, in)   \
    }
/* Defaults, then the options given. */
void graph_apply(const graph_opts *g, render_opts *ro);
/* "0.5%" / "0.1": minwidth in percent or pixels; -1 on bad syntax. */
int graph_parse_minwidth(const char *s, double *v, bool *pct);
