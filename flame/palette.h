/* Colours of a flame graph: flamegraph.pl's palettes, the differential scale, backgrounds, and
 * the consistent palette file (--cp), for render.c; command lines validate palette and
 * background names here. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "flame/render.h"

typedef enum palette {
    PAL_HOT,
    PAL_MEM,
    PAL_IO,
    PAL_WAKEUP,
    PAL_CHAIN,
    PAL_JAVA,
    PAL_JS,
    PAL_PERL,
    PAL_RED,
    PAL_GREEN,
    PAL_BLUE,
    PAL_AQUA,
    PAL_YELLOW,
    PAL_PURPLE,
    PAL_ORANGE,
} palette;

/* A palette by its flamegraph.pl name, or -1. */
int palette_parse(const char *s);
/* Validation helpers for command lines. */
bool palette_valid(const char *name);
extern const char *const palette_names[];  /* "hot", "mem", ..., NULL: the palettes */
bool palette_bgcolor_valid(const char *s); /* yellow blue green grey or #rrggbb */

/* --random's generator (xorshift; seeded by the renderer). */
typedef struct palette_rng {
    uint64_t s;
} palette_rng;

/* Colours are 0xRRGGBB. */
uint32_t palette_rgb(double r, double g, double b);
/* The colour of frame name s[0..n) in palette pal (render options: --hash, --random). */
uint32_t palette_colour(palette pal, const render_opts *o, const char *s, size_t n,
                        palette_rng *rr);
/* The flat hue a frame name gets in pal: one of the flat palettes (PAL_RED ... PAL_ORANGE) for
 * the palettes that classify names (java, js, perl, wakeup, chain), pal itself for the others.
 * What the legend of a graph explains. */
palette palette_class(palette pal, const char *s, size_t n);
/* What a class means in pal (java: "compiled", "inlined", "interpreted", "C++ (JVM)", "native",
 * "kernel"), NULL when it says nothing (hot, mem, ...: shades for telling frames apart). */
const char *palette_class_meaning(palette pal, palette cls);
/* A representative colour of a flat hue: the middle of its shades. */
uint32_t palette_class_rgb(palette cls);
/* Text on a fill: true when white reads better than black (WCAG contrast of the two), as on
 * the saturated blue of a differential's largest shrink. */
bool palette_dark(uint32_t rgb);
/* Differential: red grew, blue shrank, white unchanged; saturation relative to the largest
 * change of any frame. */
uint32_t palette_diff_colour(double delta, double maxdelta);
/* The two background gradient colours for --bgcolors (or the palette's default). */
void palette_background(const render_opts *o, palette pal, const char **c1, const char **c2);

/* The palette file: lines "name->rgb(r,g,b)", sorted by name. */
typedef struct palette_entry {
    char *name;
    size_t len;
    uint32_t colour;
} palette_entry;

typedef struct palette_file {
    palette_entry *e;
    size_t n, cap;
} palette_file;

/* A missing file is an empty palette (it is created on write). Malformed lines are skipped. */
int palette_file_read(palette_file *f, const char *path, flame_err *err);
const palette_entry *palette_file_find(const palette_file *f, const char *s, size_t n);
int palette_file_add(palette_file *f, const char *name, size_t len, uint32_t colour);
/* Written atomically, so a crash never leaves half a palette. */
int palette_file_write(palette_file *f, const char *path, flame_err *err);
void palette_file_free(palette_file *f);
