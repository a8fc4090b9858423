/* `docker flame host --timeline FILE.svg` (docs/HOST.md "The timeline"): per CPU, which
 * container ran in each bucket (the one with most samples there), and below, each container's CPU
 * over time in cores. Interactive like the flame graph: hovering a cell shows container, thread,
 * tid/vtid in the details line; clicking a cell highlights its container everywhere (click again:
 * all). Every name is the targets': XML-escaped, and the script reads them from attributes. */
#include "plugin/host_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "flame/escape.h"

#define W 1200
#define LEFT 190
#define PW (W - LEFT - 20)
#define CPU_H 18
#define ROW_H 26
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

static void color(const char *name, char *out, size_t cap)
{
    if (!strcmp(name, "host")) {
        snprintf(out, cap, "rgb(150,150,150)");
        return;
    }
    if (!strcmp(name, "unknown")) {
        snprintf(out, cap, "rgb(210,210,210)");
        return;
    }
    unsigned h = 2166136261u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    snprintf(out, cap, "hsl(%u,%u%%,%u%%)", h % 360, 55 + (h >> 9) % 30, 45 + (h >> 17) % 15);
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
    "function over(e){var g=e.target;if(g.getAttribute('data-c')!==null)"
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

    int cpu_top = 70, rows_top = cpu_top + (int)ncpu * CPU_H + 40;
    int height = rows_top + in->nrows * ROW_H + 40;
    double bw = (double)PW / nb;
    fprintf(f,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n"
            "<style>text{font-family:Verdana,sans-serif;font-size:12px}"
            ".hl{stroke:black;stroke-width:0.5}</style>\n"
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
        char col[48], tip[512];
        color(name, col, sizeof col);
        snprintf(tip, sizeof tip,
                 "%s | %s tid %u (vtid %u) | CPU %u, %.2f-%.2f s, %zu of %zu samples", name,
                 t && t->tcomm[0] ? t->tcomm : "?", tid, t ? t->vtid : 0, c[i].cpu,
                 (double)c[i].b * (double)bucket / 1000,
                 (double)(c[i].b + 1) * (double)bucket / 1000, best_row_n, total);
        fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" data-c=\"",
                LEFT + c[i].b * bw, cpu_top + (int)c[i].cpu * CPU_H, bw < 0.5 ? 0.5 : bw, CPU_H - 2,
                col);
        cell_end(f, name, tip);
        i = j;
    }
    fprintf(f,
            "</g>\n<text x=\"%d\" y=\"%d\" fill=\"rgb(90,90,90)\">CPU of each container "
            "(cores; full height = %u)</text>\n<g id=\"rows\">\n",
            LEFT, rows_top - 10, ncpu);
    double per_core = (double)(in->frequency ? in->frequency : 99) * (double)bucket / 1000;
    for (int r = 0; r < in->nrows; r++) {
        const char *name = in->row_name(in->ctx, r);
        char col[48], tip[512];
        color(name, col, sizeof col);
        int y = rows_top + r * ROW_H;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LEFT - 8, y + 17);
        escape_xml(f, name, strlen(name), 26);
        fprintf(f, "</text>\n");
        for (uint32_t b = 0; b < nb; b++) {
            double cores = load[(size_t)r * nb + b] / per_core;
            if (cores <= 0)
                continue;
            double h = (ROW_H - 4) * (cores > ncpu ? 1.0 : cores / ncpu);
            snprintf(tip, sizeof tip, "%s | %.2f cores | %.2f-%.2f s", name, cores,
                     (double)b * (double)bucket / 1000, (double)(b + 1) * (double)bucket / 1000);
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                    "data-c=\"",
                    LEFT + b * bw, y + (ROW_H - 2) - h, bw < 0.5 ? 0.5 : bw, h, col);
            cell_end(f, name, tip);
        }
    }
    fprintf(f, "</g>\n<script type=\"text/ecmascript\"><![CDATA[%s]]></script>\n</svg>\n", js);
    free(c);
    free(load);
    return ferror(f) ? flame_fail(err, FLAME_EXIT_ERROR, "write the timeline") : 0;
}
