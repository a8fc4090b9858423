/* `docker flame host --timeline FILE.svg` (docs/HOST.md "The timeline"): per CPU, which
 * container ran in each bucket (the one with most samples there), a legend of the containers'
 * colours, and below, each container's CPU over time in cores, scaled to its CPU limit with the
 * limit drawn; a time axis in seconds under both. Interactive like the flame graph: hovering a
 * cell shows container, thread, tid/vtid in the details line; clicking a cell or a legend entry
 * highlights its container everywhere (click again: all). Every name is the targets':
 * XML-escaped, and the script reads them from attributes. */
#include "plugin/host_timeline.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flame/escape.h"

#define W 1200
#define LEFT 190
#define RIGHT 70 /* the limits' labels */
#define PW (W - LEFT - RIGHT)
#define CPU_H 18
#define ROW_H 46 /* a container's row: plot and gap */
#define PLOT_H 36
#define AXIS_H 30
#define MAX_BUCKETS 2000

typedef struct cell {
    uint32_t cpu, b, row, tid;
} cell;

static int by_cell(const void *a, const void *b)
{
    const cell *x = a, *y = b;
    if (x->cpu != y->cpu)
        return x->cpu < y->cpu ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* ---- colours: a categorical palette, by row order ---- */

/* Well-separated hues (Tableau 10's order, then lighter ones): the table's order puts the
 * busiest containers first, so they get the most distinct colours. Past the last, they repeat. */
static const char *const hues[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                   "#edc948", "#76b7b2", "#ff9da7", "#9c755f", "#a0cbe8",
                                   "#ffbe7d", "#8cd17d", "#d37295", "#86bcb6"};
#define NHUES (sizeof hues / sizeof *hues)

static bool is_host(const char *name)
{
    return !strcmp(name, "host");
}

static bool is_exited(const char *name)
{
    return !strcmp(name, "(exited)") || !strcmp(name, "unknown");
}

static const char *row_colour(const tl_input *in, int r)
{
    const char *name = in->row_name(in->ctx, r);
    if (is_host(name))
        return "#969696";
    if (is_exited(name))
        return "#d2d2d2";
    int k = 0;
    for (int i = 0; i < r; i++) {
        const char *o = in->row_name(in->ctx, i);
        k += !is_host(o) && !is_exited(o);
    }
    return hues[(size_t)k % NHUES];
}

/* ---- CPU limits ---- */

/* CPUs in a cpuset list "0-2,5"; -1 when it does not parse. */
static long cpuset_count(const char *s)
{
    long n = 0;
    while (*s) {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (e == s || a < 0)
            return -1;
        if (*e == '-') {
            s = e + 1;
            b = strtol(s, &e, 10);
            if (e == s || b < a)
                return -1;
        }
        n += b - a + 1;
        if (*e == ',')
            e++;
        else if (*e)
            return -1;
        s = e;
    }
    return n;
}

double host_timeline_quota_cores(long long nano_cpus, long long cpu_quota, long long cpu_period,
                                 const char *cpuset)
{
    double q = 0;
    if (nano_cpus > 0)
        q = (double)nano_cpus / 1e9;
    if (cpu_quota > 0) {
        double c = (double)cpu_quota / (double)(cpu_period > 0 ? cpu_period : 100000);
        q = q > 0 && q < c ? q : c;
    }
    long n = cpuset && *cpuset ? cpuset_count(cpuset) : -1;
    if (n > 0 && (q == 0 || (double)n < q))
        q = (double)n;
    return q;
}

/* The smallest of 1, 2, 2.5, 5 x 10^k at or above x (a row's scale when it has no limit). */
static double nice_ceil(double x)
{
    if (!(x > 0))
        return 1;
    double p = pow(10, floor(log10(x)));
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (m[i] * p >= x * (1 - 1e-9))
            return m[i] * p;
    return 10 * p;
}

/* ---- the time axis ---- */

/* Ticks: the smallest step giving at most 12 of them over span_ms. */
static double tick_step(double span_s)
{
    static const double steps[] = {0.1, 0.2, 0.5, 1,   2,   5,    10,   15,  30,
                                   60,  120, 300, 600, 900, 1800, 3600, 7200};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        if (span_s / steps[i] <= 12)
            return steps[i];
    return 14400;
}

static void axis(FILE *f, double y, double span_s, double px_per_s, bool labels)
{
    double step = tick_step(span_s);
    fprintf(f, "<g class=\"axis\"><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", LEFT, y,
            LEFT + PW, y);
    for (double t = 0; t <= span_s + 1e-9; t += step) {
        double x = LEFT + t * px_per_s;
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>", x, y, x, y + 4);
        if (labels)
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g s</text>", x, y + 16,
                    t);
    }
    fputs("</g>\n", f);
}

/* Faint vertical lines at the ticks, from y0 to y1. */
static void grid(FILE *f, double y0, double y1, double span_s, double px_per_s)
{
    double step = tick_step(span_s);
    fputs("<g class=\"grid\">", f);
    for (double t = step; t <= span_s + 1e-9; t += step)
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>", LEFT + t * px_per_s,
                y0, LEFT + t * px_per_s, y1);
    fputs("</g>\n", f);
}

static const proto_task *task_of(const tl_input *in, uint32_t tid)
{
    for (size_t i = 0; i < in->ntasks; i++) /* a few hundred threads: linear is fine per cell */
        if (in->tasks[i].tid == tid)
            return &in->tasks[i];
    return NULL;
}

static const char *js =
    "var hl=null;function det(t){document.getElementById('details').textContent=t;}"
    "function over(e){var g=e.target;if(g.getAttribute('data-t')!==null)"
    "det(g.getAttribute('data-t'));}"
    "function click(e){var c=e.target.getAttribute('data-c');if(c===null)return;"
    "hl=(hl===c)?null:c;var r=document.querySelectorAll('[data-c]');"
    "for(var i=0;i<r.length;i++){var m=hl===null||r[i].getAttribute('data-c')===hl;"
    "r[i].setAttribute('opacity',m?'1':'0.2');r[i].classList.toggle('hl',hl!==null&&m);}"
    "document.getElementById('highlight').textContent=hl===null?'':'highlighted: '+hl;}"
    "document.addEventListener('mouseover',over);document.addEventListener('click',click);";

/* The rest of a cell's <rect> after `data-c="`: its container, its tooltip (the details line
 * and the native title), escaped. */
static void cell_end(FILE *f, const char *name, const char *tip)
{
    escape_xml_str(f, name);
    fprintf(f, "\" data-t=\"");
    escape_xml_str(f, tip);
    fprintf(f, "\"><title>");
    escape_xml_str(f, tip);
    fprintf(f, "</title></rect>\n");
}

/* The legend: a swatch and the name of each row, as many to a line as fit; returns its height.
 * With f NULL only measures. Entries carry data-c, so a click highlights that container. */
static int legend(FILE *f, const tl_input *in, int top)
{
    double x = LEFT, y = top;
    if (f && in->nrows)
        fprintf(f,
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"rgb(90,90,90)\">"
                "colours:</text>\n<g id=\"legend\">\n",
                LEFT - 8, y + 11);
    for (int r = 0; r < in->nrows; r++) {
        const char *name = in->row_name(in->ctx, r);
        size_t chars = escape_utf8_chars(name, strlen(name));
        double w = 12 + 4 + 7.2 * (double)(chars > 26 ? 26 : chars) + 18;
        if (x > LEFT && x + w > LEFT + PW) {
            x = LEFT;
            y += 18;
        }
        if (f) {
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" rx=\"2\" fill=\"%s\" "
                    "data-c=\"",
                    x, y + 1, row_colour(in, r));
            cell_end(f, name, name);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 16, y + 11);
            escape_xml(f, name, strlen(name), 26);
            fputs("</text>\n", f);
        }
        x += w;
    }
    if (f && in->nrows)
        fputs("</g>\n", f);
    return in->nrows ? (int)(y - top) + 18 : 0;
}

int host_timeline_write(void *ctx, FILE *f, flame_err *err)
{
    const tl_input *in = ctx;
    uint64_t bucket = in->bucket_ms ? in->bucket_ms : 100;
    uint64_t span = in->record_ms ? in->record_ms : 1;
    for (size_t i = 0; i < in->ntl; i++)
        if (in->tl[i].ms + 1 > span)
            span = in->tl[i].ms + 1;
    if ((span + bucket - 1) / bucket > MAX_BUCKETS)
        bucket = (span + MAX_BUCKETS - 1) / MAX_BUCKETS; /* said in the subtitle */
    uint32_t nb = (uint32_t)((span + bucket - 1) / bucket);
    uint32_t ncpu = in->cpus ? (uint32_t)in->cpus : 1;
    for (size_t i = 0; i < in->ntl; i++)
        if (in->tl[i].cpu + 1 > ncpu)
            ncpu = in->tl[i].cpu + 1;
    cell *c = calloc(in->ntl ? in->ntl : 1, sizeof *c);
    double *load = calloc((size_t)in->nrows * nb + 1, sizeof *load);
    if (!c || !load) {
        free(c);
        free(load);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < in->ntl; i++) {
        const proto_task *t = task_of(in, in->tl[i].tid);
        int row = in->row_of(in->ctx, t ? t->key : "unknown");
        if (row < 0)
            continue;
        c[n++] =
            (cell){in->tl[i].cpu, (uint32_t)(in->tl[i].ms / bucket), (uint32_t)row, in->tl[i].tid};
        load[(size_t)row * nb + in->tl[i].ms / bucket] += 1;
    }
    qsort(c, n, sizeof *c, by_cell);

    /* the buckets span the axis: nb buckets of bucket ms */
    double span_s = (double)nb * (double)bucket / 1000, px_per_s = PW / span_s;
    int cpu_top = 64, cpu_bottom = cpu_top + (int)ncpu * CPU_H;
    int legend_top = cpu_bottom + AXIS_H + 6;
    int rows_top = legend_top + legend(NULL, in, legend_top) + 34;
    int rows_bottom = rows_top + in->nrows * ROW_H;
    int height = rows_bottom + AXIS_H + 30;
    double bw = (double)PW / nb;
    fprintf(f,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n"
            "<style>text{font-family:Verdana,sans-serif;font-size:12px}"
            ".hl{stroke:black;stroke-width:0.5}.axis line{stroke:rgb(120,120,120)}"
            ".axis text{fill:rgb(90,90,90);font-size:11px}.grid line{stroke:rgb(225,225,225)}"
            ".limit{stroke:rgb(200,30,30);stroke-width:1.2;stroke-dasharray:5,3}"
            ".base{stroke:rgb(200,200,200)}.scale{fill:rgb(110,110,110);font-size:11px}"
            "</style>\n"
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n"
            "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"17\">CPU timeline: which "
            "container ran when</text>\n"
            "<text x=\"%d\" y=\"40\" text-anchor=\"middle\" fill=\"rgb(90,90,90)\">%.1f s on %u "
            "CPUs, %llu ms buckets, %llu Hz; a cell: the container with most samples there</text>\n"
            "<text id=\"details\" x=\"10\" y=\"%d\"> </text>\n"
            "<text id=\"highlight\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
            W, height, W, height, W, height, W / 2, W / 2, (double)span / 1000, ncpu,
            (unsigned long long)bucket, (unsigned long long)in->frequency, height - 12, W - 10,
            height - 12);
    grid(f, cpu_top, cpu_bottom, span_s, px_per_s);
    grid(f, rows_top, rows_bottom, span_s, px_per_s);
    /* per CPU: the dominant container of each bucket */
    for (uint32_t cpu = 0; cpu < ncpu; cpu++)
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">CPU %u</text>\n", LEFT - 8,
                cpu_top + (int)cpu * CPU_H + 13, cpu);
    fprintf(f, "<g id=\"cpus\">\n");
    for (size_t i = 0; i < n;) {
        size_t j = i, best_row_at = i, best_row_n = 0;
        size_t total = 0;
        while (j < n && c[j].cpu == c[i].cpu && c[j].b == c[i].b)
            j++;
        total = j - i;
        for (size_t k = i; k < j;) { /* the row with most samples, then its busiest thread */
            size_t e = k;
            while (e < j && c[e].row == c[k].row)
                e++;
            if (e - k > best_row_n) {
                best_row_n = e - k;
                best_row_at = k;
            }
            k = e;
        }
        uint32_t row = c[best_row_at].row, tid = c[best_row_at].tid;
        size_t tid_n = 0;
        for (size_t k = best_row_at; k < j && c[k].row == row;) {
            size_t e = k;
            while (e < j && c[e].row == row && c[e].tid == c[k].tid)
                e++;
            if (e - k > tid_n) {
                tid_n = e - k;
                tid = c[k].tid;
            }
            k = e;
        }
        const char *name = in->row_name(in->ctx, (int)row);
        const proto_task *t = task_of(in, tid);
        char tip[512];
        snprintf(tip, sizeof tip,
                 "%s | %s tid %u (vtid %u) | CPU %u, %.2f-%.2f s, %zu of %zu samples", name,
                 t && t->tcomm[0] ? t->tcomm : "?", tid, t ? t->vtid : 0, c[i].cpu,
                 (double)c[i].b * (double)bucket / 1000,
                 (double)(c[i].b + 1) * (double)bucket / 1000, best_row_n, total);
        fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" data-c=\"",
                LEFT + c[i].b * bw, cpu_top + (int)c[i].cpu * CPU_H, bw < 0.5 ? 0.5 : bw, CPU_H - 2,
                row_colour(in, (int)row));
        cell_end(f, name, tip);
        i = j;
    }
    fputs("</g>\n", f);
    axis(f, cpu_bottom + 2, span_s, px_per_s, true);
    legend(f, in, legend_top);

    /* per container: its CPU in cores, the row scaled to its limit (the limit at 80 % of the
     * plot, so a bucket at the limit is seen to be at it) or, without one, to its own peak */
    double per_core = (double)(in->frequency ? in->frequency : 99) * (double)bucket / 1000;
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" fill=\"rgb(90,90,90)\">CPU of each container, in cores "
            "(each row to its own scale; dashed: its CPU limit)</text>\n<g id=\"rows\">\n",
            LEFT, rows_top - 10);
    for (int r = 0; r < in->nrows; r++) {
        const char *name = in->row_name(in->ctx, r);
        const char *col = row_colour(in, r);
        double limit = in->row_quota ? in->row_quota(in->ctx, r) : 0, peak = 0;
        for (uint32_t b = 0; b < nb; b++)
            peak = fmax(peak, load[(size_t)r * nb + b] / per_core);
        double scale = limit > 0 ? fmax(limit / 0.8, peak) : nice_ceil(peak);
        int y = rows_top + r * ROW_H;
        double base = y + PLOT_H;
        char tip[512], what[96];
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LEFT - 8, y + 14);
        escape_xml(f, name, strlen(name), 26);
        if (limit > 0)
            snprintf(what, sizeof what, "limit %.2f CPU, peak %.2f", limit, peak);
        else
            snprintf(what, sizeof what, "no CPU limit, peak %.2f", peak);
        fprintf(f,
                "</text>\n<text class=\"scale\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
                LEFT - 8, y + 29, what);
        fprintf(f, "<line class=\"base\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT,
                base, LEFT + PW, base);
        if (limit <= 0) /* the top of the row, in cores (with a limit, the limit says it) */
            fprintf(f, "<text class=\"scale\" x=\"%d\" y=\"%.1f\">%g cores</text>\n", LEFT + PW + 6,
                    base - PLOT_H + 8, scale);
        for (uint32_t b = 0; b < nb; b++) {
            double cores = load[(size_t)r * nb + b] / per_core;
            if (cores <= 0)
                continue;
            double h = PLOT_H * fmin(cores / scale, 1);
            snprintf(tip, sizeof tip, "%s | %.2f cores | %.2f-%.2f s", name, cores,
                     (double)b * (double)bucket / 1000, (double)(b + 1) * (double)bucket / 1000);
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                    "data-c=\"",
                    LEFT + b * bw, base - h, bw < 0.5 ? 0.5 : bw, h, col);
            cell_end(f, name, tip);
        }
        if (limit > 0) {
            double ly = base - PLOT_H * limit / scale;
            /* data-scale: the row's exact top in cores (the tooltips round cores to 0.01) */
            fprintf(f, "<line class=\"limit\" data-limit=\"%g\" data-scale=\"%.6g\" data-for=\"",
                    limit, scale);
            escape_xml_str(f, name);
            fprintf(f,
                    "\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\"/><text class=\"scale\" "
                    "x=\"%d\" y=\"%.2f\" fill=\"rgb(200,30,30)\">%g CPU</text>\n",
                    LEFT, ly, LEFT + PW, ly, LEFT + PW + 6, ly + 4, limit);
        }
    }
    fputs("</g>\n", f);
    axis(f, rows_bottom + 2, span_s, px_per_s, true);
    fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[%s]]></script>\n</svg>\n", js);
    free(c);
    free(load);
    return ferror(f) ? flame_fail(err, FLAME_EXIT_ERROR, "write the timeline") : 0;
}
