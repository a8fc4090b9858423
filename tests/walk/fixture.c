/* Recorded samples: see fixture.h. */
#include "tests/walk/fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE 64

ssize_t __real_pread(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off);

static int cap_fd = -1, rep_fd = -1;
static const wf_fixture *rep;
static uint64_t misses, served;
static int trace = -1;   /* WALK_TRACE, WALK_DUMP: looked up once */
static size_t *ov_order; /* overlays by address */
static uint32_t ov_max;  /* the longest overlay */
static uint32_t cur_sample;
static wf_range *logv, *failv;
static size_t n_log, cap_log, n_failv, cap_failv;

static void log_bytes(uint64_t addr, const void *b, size_t len)
{
    if (n_log == cap_log) {
        size_t nc = cap_log ? cap_log * 2 : 4096;
        wf_range *nv = realloc(logv, nc * sizeof *nv);
        if (!nv)
            return;
        logv = nv;
        cap_log = nc;
    }
    unsigned char *d = malloc(len);
    if (!d)
        return;
    memcpy(d, b, len);
    logv[n_log++] = (wf_range){.addr = addr, .len = (uint32_t)len, .from = cur_sample, .data = d};
}

void wf_at(uint32_t sample)
{
    cur_sample = sample;
}

/* Serve [off, off+len) from the recorded ranges: all of it, or nothing. The newest overlay that
 * covers it and was seen by this sample or an earlier one wins over the first content. */
static ssize_t serve(void *buf, size_t len, uint64_t off)
{
    const wf_fixture *f = rep;
    const wf_range *best = NULL;
    if (ov_order) {
        /* the overlays starting at or before off, back to the longest one's reach */
        size_t lo = 0, hi = f->n_overlays;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (f->overlays[ov_order[mid]].addr <= off)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i-- > 0;) {
            const wf_range *o = &f->overlays[ov_order[i]];
            if (o->addr + ov_max < off)
                break;
            if (o->from <= cur_sample && o->addr + o->len >= off + len &&
                (!best || o->from > best->from || (o->from == best->from && o > best)))
                best = o;
        }
    } else {
        for (uint32_t i = f->n_overlays; i-- > 0 && !best;) { /* newest first */
            const wf_range *o = &f->overlays[i];
            if (o->from <= cur_sample && o->addr <= off && o->addr + o->len >= off + len)
                best = o;
        }
    }
    if (best) {
        memcpy(buf, best->data + (off - best->addr), len);
        return (ssize_t)len;
    }
    uint32_t lo = 0, hi = f->n_ranges;
    while (lo < hi) { /* the first range ending after off */
        uint32_t mid = lo + (hi - lo) / 2;
        if (f->ranges[mid].addr + f->ranges[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t got = 0;
    for (uint32_t i = lo; i < f->n_ranges && got < len; i++) {
        const wf_range *r = &f->ranges[i];
        uint64_t at = off + got;
        if (r->addr > at)
            break;
        size_t k = (size_t)(r->addr + r->len - at);
        if (k > len - got)
            k = len - got;
        memcpy((unsigned char *)buf + got, r->data + (at - r->addr), k);
        got += k;
    }
    if (got < len) {
        /* a read that failed while capturing too is no miss */
        for (uint32_t i = 0; i < f->n_fails; i++)
            if (f->fails[i].addr == off && f->fails[i].len == len) {
                errno = EIO;
                return -1;
            }
        misses++;
        if (trace & 2)
            printf("# replay: no recorded bytes for [%#llx, +%zu)\n", (unsigned long long)off, len);
        errno = EIO;
        return -1;
    }
    return (ssize_t)len;
}

static uint64_t poke_addr;
static int64_t poke_delta;

void wf_poke(uint64_t addr, int64_t delta)
{
    poke_addr = addr;
    poke_delta = delta;
}

ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off)
{
    if (rep && fd == rep_fd) {
        served++;
        if (trace < 0)
            trace = (getenv("WALK_TRACE") ? 1 : 0) | (getenv("WALK_DUMP") ? 2 : 0);
        if (trace & 1)
            fprintf(stderr, "read %#llx %zu\n", (unsigned long long)off, len);
        ssize_t n = serve(buf, len, (uint64_t)off);
        if (n == (ssize_t)len && poke_addr && poke_addr >= (uint64_t)off &&
            poke_addr + 8 <= (uint64_t)off + len) {
            int64_t v;
            memcpy(&v, (unsigned char *)buf + (poke_addr - (uint64_t)off), 8);
            v += poke_delta;
            memcpy((unsigned char *)buf + (poke_addr - (uint64_t)off), &v, 8);
        }
        return n;
    }
    ssize_t n = __real_pread(fd, buf, len, off);
    if (fd == cap_fd && n != (ssize_t)len && len) {
        if (n_failv == cap_failv) {
            size_t nc = cap_failv ? cap_failv * 2 : 256;
            wf_range *nv = realloc(failv, nc * sizeof *nv);
            if (nv) {
                failv = nv;
                cap_failv = nc;
            }
        }
        if (n_failv < cap_failv)
            failv[n_failv++] = (wf_range){.addr = (uint64_t)off, .len = (uint32_t)len};
    }
    if (fd == cap_fd && n == (ssize_t)len && len) {
        /* whole 64-byte lines around it when they are readable: a little slack for replays */
        uint64_t a = (uint64_t)off & ~(uint64_t)(LINE - 1);
        uint64_t e = ((uint64_t)off + len + LINE - 1) & ~(uint64_t)(LINE - 1);
        unsigned char *wide = malloc((size_t)(e - a));
        if (wide && __real_pread(fd, wide, (size_t)(e - a), (off_t)a) == (ssize_t)(e - a))
            log_bytes(a, wide, (size_t)(e - a));
        else
            log_bytes((uint64_t)off, buf, len);
        free(wide);
    }
    return n;
}

void wf_capture_start(int fd)
{
    cap_fd = fd;
}

static const wf_fixture *sort_f;
static int by_overlay_addr(const void *a, const void *b)
{
    const wf_range *x = &sort_f->overlays[*(const size_t *)a],
                   *y = &sort_f->overlays[*(const size_t *)b];
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void wf_replay(int fd, const wf_fixture *f)
{
    rep_fd = fd;
    rep = f;
    misses = 0;
    /* an index of the overlays by address (the newest covering one wins, found by from) */
    free(ov_order);
    ov_order = f->n_overlays ? malloc(f->n_overlays * sizeof *ov_order) : NULL;
    ov_max = 0;
    for (uint32_t i = 0; ov_order && i < f->n_overlays; i++) {
        ov_order[i] = i;
        if (f->overlays[i].len > ov_max)
            ov_max = f->overlays[i].len;
    }
    sort_f = f;
    if (ov_order)
        qsort(ov_order, f->n_overlays, sizeof *ov_order, by_overlay_addr);
}

uint64_t wf_replay_misses(void)
{
    return misses;
}

uint64_t wf_replay_reads(void)
{
    return served;
}

typedef struct order {
    uint64_t addr;
    size_t idx;
} order;

/* by address, then by the order of the reads: the first content seen wins */
static int by_addr(const void *a, const void *b)
{
    const order *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int wf_capture_ranges(wf_fixture *f)
{
    wf_range *v = malloc((n_log ? n_log : 1) * sizeof *v);
    order *ord = malloc((n_log ? n_log : 1) * sizeof *ord);
    if (!v || !ord) {
        free(v);
        free(ord);
        return -1;
    }
    for (size_t i = 0; i < n_log; i++)
        ord[i] = (order){.addr = logv[i].addr, .idx = i};
    qsort(ord, n_log, sizeof *ord, by_addr);
    /* merge: walk in address order keeping a current range; bytes already covered are kept */
    size_t n = 0;
    for (size_t k = 0; k < n_log; k++) {
        const wf_range *r = &logv[ord[k].idx];
        if (n && v[n - 1].addr + v[n - 1].len >= r->addr) {
            wf_range *c = &v[n - 1];
            uint64_t end = c->addr + c->len, rend = r->addr + r->len;
            if (rend <= end)
                continue;
            unsigned char *d = realloc(c->data, (size_t)(rend - c->addr));
            if (!d)
                continue;
            memcpy(d + (end - c->addr), r->data + (end - r->addr), (size_t)(rend - end));
            c->data = d;
            c->len = (uint32_t)(rend - c->addr);
        } else {
            unsigned char *d = malloc(r->len);
            if (!d)
                continue;
            memcpy(d, r->data, r->len);
            v[n++] = (wf_range){.addr = r->addr, .len = r->len, .data = d};
        }
    }
    free(ord);
    f->ranges = v;
    f->n_ranges = (uint32_t)n;
    /* reads whose bytes differ from what the memory held as of their sample (the first
     * content and the overlays so far): overlays, in the order they were read */
    f->overlays = calloc(n_log + 1, sizeof *f->overlays);
    f->n_overlays = 0;
    const wf_fixture *saved = rep;
    rep = f;
    uint32_t saved_at = cur_sample;
    for (size_t i = 0; f->overlays && i < n_log; i++) {
        const wf_range *r = &logv[i];
        unsigned char *tmp = malloc(r->len);
        if (!tmp)
            continue;
        cur_sample = r->from;
        if (serve(tmp, r->len, r->addr) == (ssize_t)r->len && memcmp(tmp, r->data, r->len) == 0) {
            free(tmp);
            continue;
        }
        memcpy(tmp, r->data, r->len);
        f->overlays[f->n_overlays++] =
            (wf_range){.addr = r->addr, .len = r->len, .from = r->from, .data = tmp};
    }
    rep = saved;
    cur_sample = saved_at;
    f->fails = calloc(n_failv + 1, sizeof *f->fails);
    f->n_fails = 0;
    for (size_t i = 0; f->fails && i < n_failv; i++) {
        bool seen = false;
        for (uint32_t k = 0; k < f->n_fails && !seen; k++)
            seen = f->fails[k].addr == failv[i].addr && f->fails[k].len == failv[i].len;
        if (!seen)
            f->fails[f->n_fails++] = failv[i];
    }
    misses = 0;
    return 0;
}

/* ---- the file ---- */

static int put(FILE *o, const void *p, size_t n)
{
    return fwrite(p, 1, n, o) == n ? 0 : -1;
}

int wf_write(const char *path, const wf_fixture *f)
{
    FILE *o = fopen(path, "wb");
    if (!o)
        return -1;
    int rc = put(o, "FLWALK3\n", 8) | put(o, &f->pid, 4) | put(o, &f->n_maps, 4);
    for (uint32_t i = 0; i < f->n_maps; i++) {
        const wf_map *m = &f->maps[i];
        uint16_t l = (uint16_t)strnlen(m->path, sizeof m->path - 1);
        rc |= put(o, &m->start, 8) | put(o, &m->end, 8) | put(o, &m->pgoff, 8) | put(o, &l, 2) |
              put(o, m->path, l);
    }
    rc |= put(o, &f->n_threads, 4);
    for (uint32_t i = 0; i < f->n_threads; i++)
        rc |= put(o, &f->threads[i].tid, 4) | put(o, f->threads[i].comm, 16);
    rc |= put(o, &f->n_ranges, 4);
    for (uint32_t i = 0; i < f->n_ranges; i++)
        rc |= put(o, &f->ranges[i].addr, 8) | put(o, &f->ranges[i].len, 4) |
              put(o, f->ranges[i].data, f->ranges[i].len);
    rc |= put(o, &f->n_overlays, 4);
    for (uint32_t i = 0; i < f->n_overlays; i++)
        rc |= put(o, &f->overlays[i].addr, 8) | put(o, &f->overlays[i].len, 4) |
              put(o, &f->overlays[i].from, 4) | put(o, f->overlays[i].data, f->overlays[i].len);
    rc |= put(o, &f->n_fails, 4);
    for (uint32_t i = 0; i < f->n_fails; i++)
        rc |= put(o, &f->fails[i].addr, 8) | put(o, &f->fails[i].len, 4);
    rc |= put(o, &f->n_samples, 4);
    for (uint32_t i = 0; i < f->n_samples; i++)
        rc |= put(o, &f->samples[i].len, 4) | put(o, &f->samples[i].pass, 4) |
              put(o, f->samples[i].rec, f->samples[i].len);
    if (fclose(o) != 0)
        rc = -1;
    return rc;
}

static int get(FILE *in, void *p, size_t n)
{
    return fread(p, 1, n, in) == n ? 0 : -1;
}

int wf_read(const char *path, wf_fixture *f)
{
    *f = (wf_fixture){0};
    size_t pl = strlen(path);
    FILE *in;
    bool gz = pl > 3 && !strcmp(path + pl - 3, ".gz");
    if (gz) {
        char cmd[4200];
        if (strchr(path, '\'') || pl > 4000)
            return -1;
        snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
        in = popen(cmd, "r");
    } else {
        in = fopen(path, "rb");
    }
    if (!in)
        return -1;
    char magic[8];
    int rc = get(in, magic, 8) | (memcmp(magic, "FLWALK3\n", 8) ? -1 : 0) | get(in, &f->pid, 4) |
             get(in, &f->n_maps, 4);
    if (rc || f->n_maps > 100000 || !(f->maps = calloc(f->n_maps + 1, sizeof *f->maps)))
        goto bad;
    for (uint32_t i = 0; i < f->n_maps; i++) {
        wf_map *m = &f->maps[i];
        uint16_t l;
        if (get(in, &m->start, 8) | get(in, &m->end, 8) | get(in, &m->pgoff, 8) | get(in, &l, 2) ||
            l >= sizeof m->path || get(in, m->path, l))
            goto bad;
    }
    if (get(in, &f->n_threads, 4) || f->n_threads > 100000 ||
        !(f->threads = calloc(f->n_threads + 1, sizeof *f->threads)))
        goto bad;
    for (uint32_t i = 0; i < f->n_threads; i++)
        if (get(in, &f->threads[i].tid, 4) | get(in, f->threads[i].comm, 16))
            goto bad;
    if (get(in, &f->n_ranges, 4) || f->n_ranges > 10000000 ||
        !(f->ranges = calloc(f->n_ranges + 1, sizeof *f->ranges)))
        goto bad;
    for (uint32_t i = 0; i < f->n_ranges; i++) {
        wf_range *r = &f->ranges[i];
        if (get(in, &r->addr, 8) | get(in, &r->len, 4) || r->len > (64u << 20) ||
            !(r->data = malloc(r->len ? r->len : 1)) || get(in, r->data, r->len))
            goto bad;
    }
    if (get(in, &f->n_overlays, 4) || f->n_overlays > 10000000 ||
        !(f->overlays = calloc(f->n_overlays + 1, sizeof *f->overlays)))
        goto bad;
    for (uint32_t i = 0; i < f->n_overlays; i++) {
        wf_range *r = &f->overlays[i];
        if (get(in, &r->addr, 8) | get(in, &r->len, 4) | get(in, &r->from, 4) ||
            r->len > (64u << 20) || !(r->data = malloc(r->len ? r->len : 1)) ||
            get(in, r->data, r->len))
            goto bad;
    }
    if (get(in, &f->n_fails, 4) || f->n_fails > 10000000 ||
        !(f->fails = calloc(f->n_fails + 1, sizeof *f->fails)))
        goto bad;
    for (uint32_t i = 0; i < f->n_fails; i++)
        if (get(in, &f->fails[i].addr, 8) | get(in, &f->fails[i].len, 4))
            goto bad;
    if (get(in, &f->n_samples, 4) || f->n_samples > 1000000 ||
        !(f->samples = calloc(f->n_samples + 1, sizeof *f->samples)))
        goto bad;
    for (uint32_t i = 0; i < f->n_samples; i++) {
        wf_sample *s = &f->samples[i];
        if (get(in, &s->len, 4) | get(in, &s->pass, 4) || s->len > 65535 ||
            !(s->rec = malloc(s->len ? s->len : 1)) || get(in, s->rec, s->len))
            goto bad;
    }
    if (gz ? pclose(in) != 0 : fclose(in) != 0) {
        wf_free(f);
        return -1;
    }
    return 0;
bad:
    if (gz)
        pclose(in);
    else
        fclose(in);
    wf_free(f);
    errno = EINVAL;
    return -1;
}

void wf_free(wf_fixture *f)
{
    for (uint32_t i = 0; f->ranges && i < f->n_ranges; i++)
        free(f->ranges[i].data);
    for (uint32_t i = 0; f->overlays && i < f->n_overlays; i++)
        free(f->overlays[i].data);
    free(f->overlays);
    free(f->fails);
    for (uint32_t i = 0; f->samples && i < f->n_samples; i++)
        free(f->samples[i].rec);
    free(f->maps);
    free(f->threads);
    free(f->ranges);
    free(f->samples);
    *f = (wf_fixture){0};
}

const char *wf_comm(const wf_fixture *f, uint32_t tid)
{
    for (uint32_t i = 0; i < f->n_threads; i++)
        if (f->threads[i].tid == tid)
            return f->threads[i].comm;
    return "";
}
