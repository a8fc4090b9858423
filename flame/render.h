/* The interactive SVG flame graph (flamegraph.pl-compatible options, streamed out). Its
 * palettes: flame/palette.h; the speedscope export: flame/speedscope.h. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"
#include "flame/profile.h"

typedef struct render_opts {
    const char *title, *subtitle, *countname, *nametype, *colors, *bgcolors, *notes;
    const char *fonttype;
    double fontsize, fontwidth, minwidth; /* minwidth in pixels, or percent when minwidth_pct */
    bool minwidth_pct;
    int width, height; /* image width; frame height */
    bool hash, reverse, inverted, flamechart, negate, random, embed_folded;
    /* Differential of sample counts: a frame whose self change is within the noise of its
     * counts (under a standard error, sqrt(before + after)) is drawn white, fading in up to
     * three standard errors, so an unchanged program's diff is near white. Off: flamegraph.pl's
     * colours (the change relative to the largest, however small). */
    bool diff_noise;
    const char *palette_file; /* consistent palette (read + written); NULL = off */
    /* what the counts are when not CPU samples ("alloc", docs/MODES.md): written into the SVG
     * as a comment, `<!-- docker-flame profile-type: alloc -->`, which diff and merge read
     * back (render_svg_ptype) to refuse mixing types; NULL = cpu, nothing written */
    const char *ptype;
    double total, factor; /* total: override the 100% figure (0 = sum) */
    /* The embedded folded data is left out (with a comment saying so) when it would exceed this
     * many bytes: a browser opens a 1M-stack graph in 2 s without it, 5 s with its 66 MB.
     * 0 = no limit. */
    size_t embed_limit;
} render_opts;
#define RENDER_EMBED_LIMIT ((size_t)32 << 20)

void render_opts_default(render_opts *o); /* flamegraph.pl defaults, embed_folded = true,
                                           embed_limit = RENDER_EMBED_LIMIT */
int render_svg(const profile *p, const render_opts *o, FILE *out, flame_err *err);
#define RENDER_PTYPE_MARK "<!-- docker-flame profile-type: "
/* The profile type an SVG's head (its first bytes, NUL-terminated) says, into out (a word of
 * [a-z_]); "" when it says none (cpu, or not ours). */
void render_svg_ptype(const char *head, char *out, size_t cap);
