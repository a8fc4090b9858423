/* The shared graph options (plugin/graph.h). */
#include "plugin/graph.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame/palette.h"

static int store_colors(void *base, const arg_val *v, flame_err *err)
{
    if (!palette_valid(v->str))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "--colors: unknown palette \"%.64s\": use hot, java, mem, io, wakeup, "
                          "chain, js, perl, red, green, blue, aqua, yellow, purple or orange",
                          v->str);
    ((graph_opts *)base)->colors = v->str;
    return 0;
}

static int store_minwidth(void *base, const arg_val *v, flame_err *err)
{
    graph_opts *g = base;
    if (graph_parse_minwidth(v->str, &g->minwidth, &g->minwidth_pct) < 0)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "--minwidth: \"%.64s\" is not pixels (0.1) or a percentage (0.5%%)",
                          v->str);
    g->minwidth_set = true;
    return 0;
}

#define F(field, T) ARG_FIELD(graph_opts, field, T)
// clang-format off
const arg_spec graph_specs[GRAPH_NSPECS] = {
    {.lng = "title", .kind = ARG_STR, .off = F(title, const char *), .meta = "TEXT",
     .help = "graph title (default: the container or input name)"},
    {.lng = "colors", .kind = ARG_STR, .store = store_colors, .meta = "PALETTE",
     .choices = palette_names,
     .help = "palette: java (default for profiles), hot, mem, io, wakeup,\nchain, js, perl, red, "
     "green, blue, aqua, yellow, purple, orange"},
    {.lng = "colours", .kind = ARG_STR, .store = store_colors, .flags = ARG_HIDDEN,
     .choices = palette_names},
    {.lng = "minwidth", .kind = ARG_STR, .store = store_minwidth, .meta = "W",
     .help = "omit frames narrower than W pixels (0.1) or W% of the total"},
    {.lng = "width", .kind = ARG_INT, .off = F(width, int64_t), .meta = "PX",
     .help = "image width (1200)", .lo = 40, .hi = 1000000},
};
// clang-format on
#undef F

int graph_parse_minwidth(const char *s, double *v, bool *pct)
{
    char *end;
    errno = 0;
    double mw = strtod(s, &end);
    bool p = *end == '%';
    if (end == s || errno || mw < 0 || !isfinite(mw) || (p ? end[1] : *end) || (p && mw > 100))
        return -1;
    *v = mw;
    *pct = p;
    return 0;
}

void graph_apply(const graph_opts *g, render_opts *ro)
{
    render_opts_default(ro);
    if (g->title)
        ro->title = g->title;
    if (g->colors)
        ro->colors = g->colors;
    if (g->width)
        ro->width = (int)g->width;
    if (g->minwidth_set) {
        ro->minwidth = g->minwidth;
        ro->minwidth_pct = g->minwidth_pct;
    }
}
