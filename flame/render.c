/* The interactive SVG flame graph (flamegraph.pl's options and geometry), streamed: stacks are
 * sorted frame by frame, merged in one pass and every frame is written as soon as it closes,
 * so memory is the profile plus one open frame per depth. Frames narrower than minwidth are
 * pruned. Every name is sanitised (UTF-8, XML-valid characters) and escaped (escape.c);
 * colours come from palette.c. */
#include "flame/render.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/escape.h"
#include "flame/frame.h"
#include "flame/palette.h"
#include "flame/profile_impl.h"
#include "flame/render_js.h"

void render_opts_default(render_opts *o)
{
    *o = (render_opts){
        .title = NULL, /* "Flame Graph", "Icicle Graph" or "Flame Chart" */
        .countname = "samples",
        .nametype = "Function:",
        .colors = "hot",
        .fonttype = "Verdana",
        .fontsize = 12,
        .fontwidth = 0.59,
        .minwidth = 0.1,
        .width = 1200,
        .height = 16,
        .embed_folded = true,
        .embed_limit = RENDER_EMBED_LIMIT,
        .factor = 1,
    };
}

/* ---- text ---------------------------------------------------------------------------------- */

/* "1234567.4" -> "1,234,567" */
static void thousands(char *buf, size_t cap, double v)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%.0f", v);
    if (n < 0 || (size_t)n >= sizeof tmp || n > 40) {
        snprintf(buf, cap, "%s", n > 0 && (size_t)n < sizeof tmp ? tmp : "?");
        return;
    }
    int neg = tmp[0] == '-';
    size_t k = 0;
    for (int i = 0; i < n && k + 2 < cap; i++) {
        buf[k++] = tmp[i];
        int left = n - 1 - i;
        if (i >= neg && left > 0 && left % 3 == 0)
            buf[k++] = ',';
    }
    buf[k] = '\0';
}

/* ---- the merge walk ------------------------------------------------------------------------ */

typedef struct open_frame {
    uint32_t rank;
    float self; /* diff_noise: self samples of both columns (in the padding: the walk's frames
                 * stay 24 bytes; a float is exact to 2^24 samples, plenty for a noise estimate) */
    double start, delta;
} open_frame;

typedef struct svg_ctx {
    const profile *p;
    const render_opts *o;
    const prof_view *v;
    FILE *out; /* NULL in the measuring pass */
    palette pal;
    bool diff;
    double timemax;      /* the 100% figure */
    double min_samples;  /* narrower frames are pruned */
    double widthpertime; /* pixels per sample */
    double maxdelta;
    int imageheight, ypad1, ypad2;
    uint32_t maxdepth; /* deepest kept frame (root = 0) */
    uint32_t *colours; /* per rank, bit 31 = computed */
    uint8_t *cls;      /* per rank: 1 + its palette_class(), 0 = not yet (legend only) */
    unsigned classes;  /* the classes of the frames drawn (bit per palette_class()) */
    int legend_h;      /* pixels of the legend row under the title, 0 = none */
    palette_file *cp;
    palette_rng rr;
    open_frame *open;
    size_t nopen, open_cap;
    double pos;
} svg_ctx;

#define COLOUR_SET 0x80000000u

static uint32_t name_colour(svg_ctx *c, uint32_t rank)
{
    if (c->colours[rank] & COLOUR_SET)
        return c->colours[rank] & 0xffffff;
    uint32_t id = c->v->by_rank[rank];
    const char *s = prof_name_str(c->p, id);
    size_t n = c->p->names[id].len;
    const palette_entry *e = c->cp ? palette_file_find(c->cp, s, n) : NULL;
    uint32_t col = e ? e->colour : palette_colour(c->pal, c->o, s, n, &c->rr);
    c->colours[rank] = col | COLOUR_SET;
    return col;
}

/* One frame: title (name, count, share), rect, label. depth 0 is the root "all". */
static void emit_frame(svg_ctx *c, const char *name, size_t len, uint32_t depth, double start,
                       double end, double delta, uint32_t colour)
{
    FILE *out = c->out;
    const render_opts *o = c->o;
    double w = end - start;
    double x1 = 10 + start * c->widthpertime, x2 = 10 + end * c->widthpertime;
    double y1, y2;
    int fh = o->height;
    if (o->inverted) {
        y1 = c->ypad1 + (double)depth * fh;
        y2 = c->ypad1 + (double)(depth + 1) * fh - 1;
    } else {
        y1 = c->imageheight - c->ypad2 - (double)(depth + 1) * fh + 1;
        y2 = c->imageheight - c->ypad2 - (double)depth * fh;
    }
    char num[64], pos[64], wid[64];
    thousands(num, sizeof num, w * o->factor);
    prof_format_count(pos, sizeof pos, start);
    prof_format_count(wid, sizeof wid, w);
    size_t shown = depth ? frame_strip_annotation(name, len) : len;
    /* white labels where they read better than black (the saturated blue of a big shrink) */
    fprintf(out, "<g data-s=\"%s\" data-w=\"%s\"", pos, wid);
    fputs(palette_dark(colour) ? " class=\"w\"><title>" : "><title>", out);
    escape_xml(out, name, shown, SIZE_MAX);
    fprintf(out, " (%s ", num);
    escape_xml_str(out, o->countname);
    if (depth == 0)
        fputs(", 100%", out);
    else
        fprintf(out, ", %.2f%%", 100 * w / c->timemax);
    if (c->diff && depth > 0) {
        double d = (o->negate ? -1 : 1) * 100 * delta / c->timemax;
        fprintf(out, "; %s%.2f%%", d > 0 ? "+" : "", d == 0 ? 0.0 : d);
    }
    fprintf(out,
            ")</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.2f\">",
            x1, y1, x2 - x1, y2 - y1, colour >> 16, (colour >> 8) & 255, colour & 255, x1 + 3,
            3 + (y1 + y2) / 2);
    size_t chars = (size_t)((x2 - x1) / (o->fontsize * o->fontwidth));
    if (chars >= 3) {
        size_t have = escape_utf8_chars(name, shown);
        if (have <= chars) {
            escape_xml(out, name, shown, SIZE_MAX);
        } else {
            escape_xml(out, name, shown, chars - 2);
            fputs("..", out);
        }
    }
    fputs("</text></g>\n", out);
}

/* How much of a frame's change to colour (diff_noise): none within one standard error of its
 * self counts (two Poisson counts: their difference varies by sqrt(before + after)), all of it
 * from three on. */
static double significance(const svg_ctx *c, const open_frame *f)
{
    if (!c->o->diff_noise || f->self <= 0)
        return 1;
    double z = fabs(f->delta) / sqrt(f->self);
    return z <= 1 ? 0 : z >= 3 ? 1 : (z - 1) / 2;
}

/* A frame closes: prune it or count it (measuring pass) or write it. */
static void close_frame(svg_ctx *c, uint32_t depth, const open_frame *f, double end)
{
    if (end - f->start < c->min_samples)
        return;
    if (!c->out) {
        if (depth > c->maxdepth)
            c->maxdepth = depth;
        if (c->cls && !c->cls[f->rank]) {
            uint32_t id = c->v->by_rank[f->rank];
            c->cls[f->rank] =
                1 + (uint8_t)palette_class(c->pal, prof_name_str(c->p, id), c->p->names[id].len);
            c->classes |= 1u << (c->cls[f->rank] - 1);
        }
        return;
    }
    uint32_t colour;
    if (c->diff)
        colour = palette_diff_colour((c->o->negate ? -f->delta : f->delta) * significance(c, f),
                                     c->maxdelta);
    else
        colour = name_colour(c, f->rank);
    uint32_t id = c->v->by_rank[f->rank];
    emit_frame(c, prof_name_str(c->p, id), c->p->names[id].len, depth, f->start, end, f->delta,
               colour);
}

/* Merge one stack (ranks frames[0..n)) into the open frames: frames past the common prefix
 * close, the new ones open at the current position. */
static int walk_stack(svg_ctx *c, const uint32_t *frames, uint32_t n, double count, double before)
{
    size_t common = 0;
    while (common < c->nopen && common < n && c->open[common].rank == frames[common])
        common++;
    while (c->nopen > common) {
        c->nopen--;
        close_frame(c, (uint32_t)c->nopen + 1, &c->open[c->nopen], c->pos);
    }
    if (n > c->open_cap) {
        size_t cap = c->open_cap ? c->open_cap : 64;
        while (cap < n)
            cap *= 2;
        open_frame *q = realloc(c->open, cap * sizeof *q);
        if (!q)
            return -1;
        c->open = q;
        c->open_cap = cap;
    }
    for (size_t i = common; i < n; i++)
        c->open[i] = (open_frame){frames[i], 0, c->pos, 0};
    c->nopen = n;
    c->pos += count;
    c->open[n - 1].delta += count - before;
    if (c->o->diff_noise)
        c->open[n - 1].self += (float)(count + before);
    if (!c->out && fabs(count - before) > c->maxdelta)
        c->maxdelta = fabs(count - before);
    return 0;
}

static int walk(svg_ctx *c, bool use_seq)
{
    const profile *p = c->p;
    c->nopen = 0;
    c->pos = 0;
    if (use_seq) {
        for (size_t k = 0; k < p->nseq; k++) {
            const prof_seq *q = &p->seq[k];
            const prof_stack *st = &p->stacks[q->stack];
            if (walk_stack(c, c->v->seq + st->off, st->depth, q->count, q->before) < 0)
                return -1;
        }
    } else {
        for (uint32_t k = 0; k < p->nstacks; k++) {
            const prof_stack *st = &p->stacks[c->v->order[k]];
            if (walk_stack(c, c->v->seq + st->off, st->depth, st->count, st->before) < 0)
                return -1;
        }
    }
    while (c->nopen > 0) {
        c->nopen--;
        close_frame(c, (uint32_t)c->nopen + 1, &c->open[c->nopen], c->pos);
    }
    return 0;
}

/* ---- the document ---------------------------------------------------------------------- */

/* The entries of the legend: what the colours of this graph mean. */
typedef struct legend_entry {
    uint32_t rgb;
    const char *text;
} legend_entry;

static size_t legend_entries(const svg_ctx *c, legend_entry *e)
{
    size_t n = 0;
    if (c->diff) {
        e[n++] = (legend_entry){palette_diff_colour(1, 1), "grew"};
        e[n++] = (legend_entry){palette_diff_colour(-1, 1), "shrank"};
        e[n++] = (legend_entry){palette_diff_colour(0, 1),
                                c->o->diff_noise ? "no change, or within noise (self; deeper = "
                                                   "larger)"
                                                 : "no change (self; deeper = larger)"};
        return n;
    }
    /* the java palette's classes, in this order, those the graph shows */
    static const palette order[] = {PAL_GREEN,  PAL_AQUA, PAL_PURPLE,
                                    PAL_YELLOW, PAL_RED,  PAL_ORANGE};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (c->classes & (1u << order[i]) && palette_class_meaning(c->pal, order[i]))
            e[n++] = (legend_entry){palette_class_rgb(order[i]),
                                    palette_class_meaning(c->pal, order[i])};
    return n;
}

/* One row under the title: a swatch and a few words per colour, centred. */
static void legend(svg_ctx *c)
{
    legend_entry e[8];
    size_t n = c->legend_h ? legend_entries(c, e) : 0;
    if (n == 0)
        return;
    const render_opts *o = c->o;
    double fs = o->fontsize, cw = fs * o->fontwidth, gap = fs * 1.5, total = 0;
    for (size_t i = 0; i < n; i++)
        total += fs + 4 + strlen(e[i].text) * cw + (i + 1 < n ? gap : 0);
    double x = (o->width - total) / 2, y = c->ypad1 - c->legend_h;
    fputs("<g id=\"legend\">", c->out);
    for (size_t i = 0; i < n; i++) {
        fprintf(c->out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%g\" height=\"%g\" rx=\"2\" "
                "fill=\"rgb(%u,%u,%u)\" stroke=\"rgb(160,160,160)\" stroke-width=\"0.5\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%s</text>",
                x, y + 1, fs, fs - 2, e[i].rgb >> 16, (e[i].rgb >> 8) & 255, e[i].rgb & 255,
                x + fs + 4, y + fs - 2, e[i].text);
        x += fs + 4 + strlen(e[i].text) * cw + gap;
    }
    fputs("</g>\n", c->out);
}

void render_svg_ptype(const char *head, char *out, size_t cap)
{
    const char *m = strstr(head, RENDER_PTYPE_MARK);
    size_t k = 0;
    if (m)
        for (const char *q = m + strlen(RENDER_PTYPE_MARK);
             ((*q >= 'a' && *q <= 'z') || *q == '_') && k + 1 < cap; q++)
            out[k++] = *q;
    if (cap)
        out[k] = 0;
}

static void header(svg_ctx *c, const char *title)
{
    FILE *out = c->out;
    const render_opts *o = c->o;
    int w = o->width, h = c->imageheight;
    const char *bg1, *bg2;
    palette_background(o, c->pal, &bg1, &bg2);
    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init(evt)\" "
            "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" "
            "xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
            "<!-- Flame graph stack visualization written by docker-flame " FLAME_VERSION
            ". Interactive: click a frame to zoom, Ctrl-F to search. -->\n",
            w, h, w, h);
    if (o->ptype && *o->ptype) {
        char pt[32];
        size_t k = 0;
        for (const char *q = o->ptype; *q && k + 1 < sizeof pt; q++)
            if ((*q >= 'a' && *q <= 'z') || *q == '_')
                pt[k++] = *q;
        pt[k] = 0;
        fprintf(out, RENDER_PTYPE_MARK "%s -->\n", pt);
    }
    if (o->notes && *o->notes) {
        fputs("<!-- NOTES: ", out);
        escape_xml_comment(out, o->notes);
        fputs(" -->\n", out);
    }
    fprintf(out,
            "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
            "<stop stop-color=\"%s\" offset=\"5%%\"/><stop stop-color=\"%s\" offset=\"95%%\"/>"
            "</linearGradient></defs>\n",
            bg1, bg2);
    fputs("<style type=\"text/css\"><![CDATA[\ntext { font-family:", out);
    escape_css_font(out, o->fonttype);
    fprintf(out,
            "; font-size:%gpx; fill:rgb(0,0,0); }\n"
            "#search, #ignorecase { opacity:0.5; cursor:pointer; }\n"
            "#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { opacity:1; }\n"
            "#subtitle { text-anchor:middle; fill:rgb(160,160,160); }\n"
            "#title { text-anchor:middle; font-size:%gpx; }\n"
            "#unzoom { cursor:pointer; }\n"
            "#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n"
            ".hide { display:none; }\n"
            "#frames > g.w:not(.m) > text { fill:rgb(255,255,255); }\n"
            "#legend text { fill:rgb(60,60,60); }\n"
            ".parent { opacity:0.5; }\n"
            "]]></style>\n",
            o->fontsize, o->fontsize + 5);
    char total[64];
    prof_format_count(total, sizeof total, c->timemax);
    fprintf(out,
            "<script type=\"text/ecmascript\"><![CDATA[\n"
            "var cfg = {xpad: 10, fontsize: %g, fontwidth: %g, inverted: %s, total: %s, "
            "searchcolor: \"rgb(230,0,230)\", nametype: ",
            o->fontsize, o->fontwidth, o->inverted ? "true" : "false", total);
    escape_js_string(out, o->nametype);
    fputs("};\n", out);
    fputs(render_js, out);
    fputs("]]></script>\n", out);
    fprintf(out,
            "<rect x=\"0.0\" y=\"0\" width=\"%d.0\" height=\"%d.0\" fill=\"url(#background)\"/>\n",
            w, h);
    fprintf(out, "<text id=\"title\" x=\"%.2f\" y=\"%g\">", w / 2.0, o->fontsize * 2);
    escape_xml_str(out, title);
    fputs("</text>\n", out);
    if (o->subtitle && *o->subtitle) {
        fprintf(out, "<text id=\"subtitle\" x=\"%.2f\" y=\"%g\">", w / 2.0, o->fontsize * 4);
        escape_xml_str(out, o->subtitle);
        fputs("</text>\n", out);
    }
    legend(c);
    fprintf(out,
            "<text id=\"details\" x=\"10\" y=\"%g\"> </text>\n"
            "<text id=\"unzoom\" x=\"10\" y=\"%g\" class=\"hide\">Reset Zoom</text>\n"
            "<text id=\"search\" x=\"%d\" y=\"%g\">Search</text>\n"
            "<text id=\"ignorecase\" x=\"%d\" y=\"%g\">ic</text>\n"
            "<text id=\"matched\" x=\"%d\" y=\"%g\" class=\"hide\"> </text>\n"
            "<g id=\"frames\">\n",
            h - c->ypad2 / 2.0, o->fontsize * 2, w - 10 - 100, o->fontsize * 2, w - 10 - 16,
            o->fontsize * 2, w - 10 - 100, h - c->ypad2 / 2.0);
}

/* An upper bound of the embedded data's size, so the exact count (a pass over every stack) is
 * only needed near the limit. */
static size_t embed_bound(const profile *p)
{
    size_t digits = 1;
    for (uint32_t v = p->nnames; v >= 10; v /= 10)
        digits++;
    size_t bound = 256 + p->text_len / 3 * 4 + (size_t)p->nnames * 6;
    bound += p->ids_len * (digits + 1) + (size_t)p->nstacks * (6 + 2 * 26);
    return bound;
}

int render_svg(const profile *p, const render_opts *opts, FILE *out, flame_err *err)
{
    /* unset strings mean the defaults */
    render_opts fixed = *opts;
    const render_opts *o = &fixed;
    if (!fixed.countname)
        fixed.countname = "samples";
    if (!fixed.nametype)
        fixed.nametype = "Function:";
    if (!fixed.fonttype)
        fixed.fonttype = "Verdana";
    int pal = palette_parse(o->colors ? o->colors : "hot");
    if (pal < 0)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "unknown palette '%s' (hot mem io wakeup chain java js perl red green "
                          "blue aqua yellow purple orange)",
                          o->colors);
    if (o->width < 40 || o->width > 1000000 || o->height < 2 || o->height > 10000 ||
        !(o->fontsize > 0 && o->fontsize < 1000) || !(o->fontwidth > 0 && o->fontwidth < 100) ||
        !(o->minwidth >= 0) || !isfinite(o->minwidth) || !(o->factor > 0) || !isfinite(o->factor))
        return flame_fail(err, FLAME_EXIT_USAGE, "render options out of range");
    if (o->bgcolors && *o->bgcolors && !palette_bgcolor_valid(o->bgcolors))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "bad background '%s' (yellow, blue, green, grey or #rrggbb)",
                          o->bgcolors);
    if (profile_stacks(p) == 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "empty profile: nothing to draw");

    svg_ctx c = {.p = p, .o = o, .pal = (palette)pal, .diff = profile_is_diff(p), .maxdelta = 1};
    c.rr.s = o->random ? ((uint64_t)time(NULL) << 20 ^ (uint64_t)getpid()) | 1 : 1;
    double total = profile_total(p);
    c.timemax = o->total > total ? o->total : total;
    if (c.timemax <= 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "all counts are zero: nothing to draw");
    c.widthpertime = (o->width - 20) / c.timemax;
    c.min_samples = o->minwidth_pct ? c.timemax * o->minwidth / 100 : o->minwidth / c.widthpertime;

    bool use_seq = o->flamechart && p->keep_order && p->nseq > 0;
    prof_view v;
    if (prof_view_build(p, o->reverse, o->flamechart ? PROF_ORDER_INPUT : PROF_ORDER_FRAMES, &v) <
        0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    c.v = &v;
    _cleanup_free_ uint32_t *colours = calloc(p->nnames ? p->nnames : 1, sizeof *colours);
    _cleanup_free_ uint8_t *cls = NULL;
    palette_file cp = {0};
    int rc = -1;
    if (!colours) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    c.colours = colours;
    /* a legend of the classes drawn, for the palettes whose hues mean something (not with a
     * palette file: its colours are whatever it says) */
    if (!c.diff && !o->palette_file && palette_class_meaning(c.pal, PAL_GREEN) &&
        !(c.cls = cls = calloc(p->nnames ? p->nnames : 1, 1))) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    if (o->palette_file) {
        if (palette_file_read(&cp, o->palette_file, err) < 0)
            goto out;
        c.cp = &cp;
    }

    /* pass 1: which frames survive pruning, how deep, the largest change */
    if (walk(&c, use_seq) < 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    c.ypad1 = (int)(o->fontsize * 3);
    c.ypad2 = (int)(o->fontsize * 2 + 10);
    if (o->subtitle && *o->subtitle)
        c.ypad1 += (int)(o->fontsize * 2);
    legend_entry le[8];
    c.legend_h = 1; /* asks legend_entries() */
    c.legend_h = legend_entries(&c, le) ? (int)(o->fontsize * 1.5) : 0;
    c.ypad1 += c.legend_h;
    c.imageheight = (int)((c.maxdepth + 1) * (double)o->height) + c.ypad1 + c.ypad2;
    const char *title = o->title && *o->title ? o->title
                        : o->flamechart       ? "Flame Chart"
                        : o->inverted         ? "Icicle Graph"
                                              : "Flame Graph";

    /* pass 2: write */
    c.out = out;
    header(&c, title);
    if (walk(&c, use_seq) < 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    emit_frame(&c, "all", 3, 0, 0, profile_total(p), 0,
               c.diff ? palette_rgb(255, 255, 255) : palette_colour(c.pal, o, "all", 3, &c.rr));
    fputs("</g>\n", out);
    if (o->embed_folded) {
        const prof_view *sorted = o->reverse || o->flamechart ? NULL : &v;
        size_t size = 0;
        if (o->embed_limit && embed_bound(p) > o->embed_limit &&
            prof_write_embedded(p, sorted, NULL, &size, o->embed_limit, err) < 0)
            goto out;
        if (o->embed_limit && size > o->embed_limit)
            fprintf(out, PROF_DATA_OMITTED ": over the limit of %zu bytes -->\n", o->embed_limit);
        else if (prof_write_embedded(p, sorted, out, NULL, 0, err) < 0)
            goto out;
    }
    fputs("</svg>\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
        goto out;
    }
    if (o->palette_file) {
        /* remember every colour this graph used, keeping the file's other names */
        for (uint32_t r = 0; r < p->nnames; r++) {
            if (!(colours[r] & COLOUR_SET))
                continue;
            uint32_t id = v.by_rank[r];
            if (!palette_file_find(&cp, prof_name_str(p, id), p->names[id].len) &&
                palette_file_add(&cp, prof_name_str(p, id), p->names[id].len,
                                 colours[r] & 0xffffff) < 0) {
                flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                goto out;
            }
        }
        if (palette_file_write(&cp, o->palette_file, err) < 0)
            goto out;
    }
    rc = 0;
out:
    free(c.open);
    palette_file_free(&cp);
    prof_view_free(&v);
    return rc;
}
