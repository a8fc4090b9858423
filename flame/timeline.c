/* The timeline picture (flame/timeline.h). Plain SVG with a <title> on every bar: the browser's
 * own tooltip is the hover, no script needed, and the file stays small: bars are summed per
 * pixel column, so a week of 10-s windows draws as many bars as the picture is wide. */
#include "flame/timeline.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flame/escape.h"

#define PAD_L 64
#define PAD_R 24
#define TOP 44
#define ROW_H 92 /* label line, plot, gap */
#define PLOT_H 60
#define AXIS_H 40

typedef struct bar {
    int64_t start, end;
    double samples, secs; /* secs: recorded time (gaps between windows excluded) */
    size_t windows;
} bar;

typedef struct geom {
    int64_t from, to;
    double x0, x1; /* plot area in pixels */
} geom;

static double x_of(const geom *g, int64_t t)
{
    return g->x0 + (g->x1 - g->x0) * (double)(t - g->from) / (double)(g->to - g->from);
}

/* A label or title as XML text: at most max bytes of it (a label, not a novel). */
static void xml_text(FILE *out, const char *s, size_t max)
{
    escape_xml(out, s, strnlen(s, max), SIZE_MAX);
}

enum tfmt { T_FULL, T_CLOCK, T_HM, T_DAY };

static void fmt_time(int64_t ms, enum tfmt f, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    /* literal formats, one each: the compiler checks them */
    switch (f) {
    case T_FULL:
        strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
        break;
    case T_CLOCK:
        strftime(buf, cap, "%H:%M:%S", &tm);
        break;
    case T_HM:
        strftime(buf, cap, "%H:%M", &tm);
        break;
    case T_DAY:
        strftime(buf, cap, "%m-%d %H:%M", &tm);
        break;
    }
}

/* Windows summed per pixel column. Returns the number of bars in *out (malloc'd), -1 on OOM. */
static long make_bars(const tl_series *s, const geom *g, bar **out)
{
    bar *b = malloc((s->n ? s->n : 1) * sizeof *b);
    if (!b)
        return -1;
    long nb = 0;
    long col = -1;
    for (size_t i = 0; i < s->n; i++) {
        const tl_point *p = &s->pts[i];
        if (p->end_ms <= g->from || p->start_ms >= g->to || p->end_ms <= p->start_ms)
            continue;
        long c = (long)floor(x_of(g, p->start_ms));
        double secs = (double)(p->end_ms - p->start_ms) / 1000;
        if (nb && c == col) {
            bar *last = &b[nb - 1];
            last->end = p->end_ms > last->end ? p->end_ms : last->end;
            last->samples += p->samples;
            last->secs += secs;
            last->windows++;
            continue;
        }
        b[nb++] = (bar){p->start_ms, p->end_ms, p->samples, secs, 1};
        col = c;
    }
    *out = b;
    return nb;
}

/* A bar's height: its values per second, or scaled into the options' rate unit. */
static double rate_of(const tl_opts *o, const bar *b)
{
    double r = b->secs > 0 ? b->samples / b->secs : 0;
    return o->rate_unit ? r * o->rate_scale : r;
}

static void draw_bar(FILE *out, const geom *g, const tl_opts *o, const bar *b, double y_base,
                     double ymax, const char *name)
{
    double xa = fmax(x_of(g, b->start), g->x0), xb = fmin(x_of(g, b->end), g->x1);
    double rate = rate_of(o, b);
    double h = rate / ymax * PLOT_H;
    char t0[32], t1[32];
    fmt_time(b->start, T_FULL, t0, sizeof t0);
    fmt_time(b->end, T_CLOCK, t1, sizeof t1);
    fprintf(out, "<rect class=\"b\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
            xa, y_base - h - 1, fmax(xb - xa, 1), h + 1);
    xml_text(out, name, 512);
    fprintf(out, ": %s to %s, %.0f ", t0, t1, b->samples);
    xml_text(out, o->unit ? o->unit : "samples", 64);
    if (o->rate_unit) {
        fprintf(out, " (%.2f ", rate);
        xml_text(out, o->rate_unit, 64);
    } else {
        fprintf(out, " (%.1f/s", rate);
    }
    if (b->windows > 1)
        fprintf(out, ", %zu windows", b->windows);
    fputs(")</title></rect>\n", out);
}

/* Ticks on the time axis: the smallest of these steps giving at most 10 labels, aligned in
 * local time (an hour tick falls on the hour of the user's clock). */
static void draw_axis(FILE *out, const geom *g, double y)
{
    static const int64_t steps[] = {1000,     2000,     5000,     10000,     15000,
                                    30000,    60000,    120000,   300000,    600000,
                                    900000,   1800000,  3600000,  7200000,   10800000,
                                    21600000, 43200000, 86400000, 172800000, 604800000};
    int64_t span = g->to - g->from, step = steps[sizeof steps / sizeof *steps - 1];
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        if (span / steps[i] <= 10) {
            step = steps[i];
            break;
        }
    time_t t = (time_t)(g->from / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    int64_t off = (int64_t)tm.tm_gmtoff * 1000;
    enum tfmt fmt = span > 86400000 ? T_DAY : step < 60000 ? T_CLOCK : T_HM;
    fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", g->x0,
            y, g->x1, y);
    for (int64_t k = ((g->from + off) / step + 1) * step - off; k < g->to; k += step) {
        char label[32];
        fmt_time(k, fmt, label, sizeof label);
        double x = x_of(g, k);
        fprintf(out,
                "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, y, x, y + 5, x, y + 18, label);
    }
}

/* The axis: the given one, else from the first window's start to the last one's end. */
static bool extent(const tl_series *s, size_t n, const tl_opts *o, geom *g)
{
    g->from = o->from_ms;
    g->to = o->to_ms;
    if (g->from < g->to)
        return true;
    bool any = false;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            if (!any || s[i].pts[k].start_ms < g->from)
                g->from = s[i].pts[k].start_ms;
            if (!any || s[i].pts[k].end_ms > g->to)
                g->to = s[i].pts[k].end_ms;
            any = true;
        }
    return any && g->from < g->to;
}

int timeline_render(const tl_series *s, size_t n, const tl_opts *o, FILE *out, flame_err *err)
{
    int width = o->width > 0 ? o->width : 1200;
    geom g = {.x0 = PAD_L, .x1 = width - PAD_R};
    bool any = extent(s, n, o, &g), points = false;
    for (size_t i = 0; i < n; i++)
        points |= s[i].n > 0;
    bar **bars = calloc(n ? n : 1, sizeof *bars);
    long *nb = calloc(n ? n : 1, sizeof *nb);
    double ymax = 0;
    int rc = bars && nb ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; rc == 0 && any && i < n; i++) {
        if ((nb[i] = make_bars(&s[i], &g, &bars[i])) < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        for (long k = 0; rc == 0 && k < nb[i]; k++)
            if (bars[i][k].secs > 0)
                ymax = fmax(ymax, rate_of(o, &bars[i][k]));
    }
    int height = TOP + (int)(n ? n : 1) * ROW_H + AXIS_H;
    if (rc == 0) {
        fprintf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
                "<style>rect.b{fill:#e8743b}rect.b:hover{fill:#b03a1e}"
                ".axis{stroke:#888}.zero{stroke:#ccc}text.name{font-weight:bold}</style>\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#fdfdf8\"/>\n"
                "<text x=\"%d\" y=\"26\" text-anchor=\"middle\" font-size=\"17\">",
                width, height, width, height, width / 2);
        xml_text(out, o->title ? o->title : "Samples per second", 1024);
        fputs("</text>\n", out);
        if (!any || !points)
            fprintf(out,
                    "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">nothing recorded in "
                    "this range</text>\n",
                    width / 2, TOP + ROW_H / 2);
    }
    ymax = ymax > 0 ? ymax : 1;
    for (size_t i = 0; rc == 0 && any && i < n; i++) {
        double top = TOP + (double)i * ROW_H, base = top + 18 + PLOT_H;
        fprintf(out, "<text class=\"name\" x=\"%d\" y=\"%.1f\">", PAD_L, top + 12);
        xml_text(out, s[i].name ? s[i].name : "", 512);
        fprintf(out, "</text>\n<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PAD_L - 6,
                base - PLOT_H + 10);
        if (o->rate_unit) {
            fprintf(out, "%.2f ", ymax);
            xml_text(out, o->rate_unit, 64);
        } else
            fprintf(out, "%.0f/s", ymax);
        fprintf(out,
                "</text><line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                "y2=\"%.1f\"/>\n",
                g.x0, base, g.x1, base);
        for (long k = 0; k < nb[i]; k++)
            draw_bar(out, &g, o, &bars[i][k], base, ymax, s[i].name ? s[i].name : "");
    }
    if (rc == 0 && any)
        draw_axis(out, &g, TOP + (double)(n ? n : 1) * ROW_H);
    if (rc == 0)
        fputs("</svg>\n", out);
    for (size_t i = 0; bars && i < n; i++)
        free(bars[i]);
    free(bars);
    free(nb);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "write error");
    return rc;
}
