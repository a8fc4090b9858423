/* The timeline picture: samples per second of each recorded window over time, one row per JVM
 * (SVG, hover shows the window and its count), so a user sees when the CPU went up before
 * choosing a range for a flame graph. Pure: names come from containers and are escaped here. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

typedef struct tl_point {
    int64_t start_ms, end_ms; /* unix ms, start < end */
    double samples;
} tl_point;

typedef struct tl_series {
    const char *name; /* any bytes: escaped, invalid UTF-8 replaced */
    const tl_point *pts;
    size_t n; /* in time order */
} tl_series;

typedef struct tl_opts {
    const char *title;      /* NULL = "Samples per second" */
    int width;              /* 0 = 1200 */
    int64_t from_ms, to_ms; /* the time axis; from == to: the data's extent */
    /* What a point's value counts (NULL = "samples"; "ns" for a wall or off-CPU time) and what
     * a bar's height is: rate_unit NULL = the values per second ("/s"), else the values per
     * second times rate_scale, in rate_unit (ns: 1e-9, "threads": ns per ns of wall time). */
    const char *unit, *rate_unit;
    double rate_scale;
} tl_opts;

/* Windows narrower than a pixel are summed into one bar per pixel column, so the picture stays
 * at most a few thousand elements whatever the range. Times are labelled in local time. */
int timeline_render(const tl_series *s, size_t n, const tl_opts *o, FILE *out, flame_err *err);
