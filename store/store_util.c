/* What every part of the profile store shares (store/store_util.h): the error of a failure, a
 * window's checks and uid, where a store's files go, the handle's end, the bounds put on what a
 * container gave us, and the builders of the readers' answers (timelines, listings, the shares
 * of ls's sizes). A leaf: it calls nothing else of store/, so the backends (sqlite*.c,
 * clickhouse*.c) and the spool (spool.c) can use it without calling back into the front. */
#include "store/store_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "store/store_impl.h"

int store_fail(flame_err *err, int detail, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = detail == STORE_ERR_URL       ? FLAME_EXIT_USAGE
                : detail == STORE_ERR_MISSING ? FLAME_EXIT_EMPTY
                                              : FLAME_EXIT_STORE;
    err->detail = detail;
    return -1;
}

/* mkdir -p of path's directory (private: profiles show what the code does) */
int store_make_parent(const char *path, flame_err *err)
{
    _cleanup_free_ char *d = strdup(path);
    if (!d)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (char *p = d + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(d, 0700) < 0 && errno != EEXIST)
            return store_fail(err, STORE_ERR_IO, "cannot create %s: %s", d, strerror(errno));
        *p = '/';
    }
    return 0;
}

/* $XDG_DATA_HOME/docker-flame/<file>, or ~/.local/share/docker-flame/<file>. Caller frees. */
char *store_data_path(const char *file, flame_err *err)
{
    const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    char *p = NULL;
    int r;
    if (x && x[0] == '/')
        r = asprintf(&p, "%s/docker-flame/%s", x, file);
    else if (home && home[0] == '/')
        r = asprintf(&p, "%s/.local/share/docker-flame/%s", home, file);
    else
        return store_fail(err, STORE_ERR_IO, "no HOME or XDG_DATA_HOME: give --store PATH"), NULL;
    if (r < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory"), NULL;
    return p;
}

char *store_spool_default(const char *tag, flame_err *err)
{
    char file[160];
    size_t o = (size_t)snprintf(file, sizeof file, "spool-");
    for (const char *t = tag; *t && o < sizeof file - 5; t++) /* a file name, nothing else */
        file[o++] = (*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9') ? *t : '_';
    snprintf(file + o, sizeof file - o, ".db");
    return store_data_path(file, err);
}

uint64_t store_uid(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        /* early in boot: the time and the pid still differ from one window to the next */
        static uint64_t n;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = ((uint64_t)ts.tv_sec * 1000000007u) ^ ((uint64_t)ts.tv_nsec << 20) ^
            ((uint64_t)getpid() << 40) ^ ++n;
    }
    return r ? r : 1;
}

int store_check_window(const store_window *w, flame_err *err)
{
    if (!w->stacks || profile_is_diff(w->stacks))
        return flame_fail(err, FLAME_EXIT_ERROR, "a window needs a single-column profile");
    if (w->start_ms < 0 || w->end_ms <= w->start_ms ||
        w->end_ms - w->start_ms > STORE_MAX_WINDOW_MS)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "a window must start at or after 1970 and last 1 ms to 1 day (%lld "
                          "to %lld)",
                          (long long)w->start_ms, (long long)w->end_ms);
    if (w->frequency < 0 || w->jvm_pid < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "a window's frequency and pid are >= 0");
    const char *t = store_type_of(w->type);
    size_t tl = strspn(t, "abcdefghijklmnopqrstuvwxyz");
    if (tl == 0 || t[tl] || tl >= STORE_MAX_TYPE)
        return flame_fail(err, FLAME_EXIT_ERROR, "a window's type is a lowercase word");
    return 0;
}

const char *store_type_of(const char *type)
{
    return type && *type ? type : "cpu";
}

static bool same(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

/* Copies of n strings (NULL = "") in one block; *out[0] is the block (free it alone). */
static int dup_labels(const char *const *in, char **const *out, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += strlen(in[i] ? in[i] : "") + 1;
    char *block = malloc(len);
    if (!block)
        return -1;
    for (int i = 0; i < n; i++) {
        *out[i] = block;
        block = stpcpy(block, in[i] ? in[i] : "") + 1;
    }
    return 0;
}

int store_timeline_add(store_series_list *t, const char *host, const char *container_id,
                       const char *container_name, int64_t jvm_pid, const store_point *pt)
{
    store_series *last = t->n ? &t->series[t->n - 1] : NULL;
    if (!last || last->jvm_pid != jvm_pid || !same(last->host, host) ||
        !same(last->container_id, container_id)) {
        store_series *ns = realloc(t->series, (t->n + 1) * sizeof *ns);
        if (!ns)
            return -1;
        t->series = ns;
        last = &ns[t->n];
        *last = (store_series){.jvm_pid = jvm_pid};
        const char *in[] = {host, container_id, container_name};
        char **out[] = {&last->host, &last->container_id, &last->container_name};
        if (dup_labels(in, out, 3) < 0)
            return -1;
        t->n++;
    }
    /* doubling growth: a day of 10-s windows is 8640 points */
    if ((last->n & (last->n - 1)) == 0) {
        store_point *np = realloc(last->pts, (last->n ? last->n * 2 : 1) * sizeof *np);
        if (!np)
            return -1;
        last->pts = np;
    }
    last->pts[last->n++] = *pt;
    return 0;
}

void store_timeline_free(store_series_list *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->series[i].host); /* the block of its labels */
        free(t->series[i].pts);
    }
    free(t->series);
    *t = (store_series_list){0};
}

int store_listing_add(store_listing *l, const store_entry *e)
{
    store_entry *ne = realloc(l->e, (l->n + 1) * sizeof *ne);
    if (!ne)
        return -1;
    l->e = ne;
    store_entry c = *e;
    const char *in[] = {e->host,  e->container_id, e->container_name,
                        e->image, e->jvm_version,  store_type_of(e->type)};
    char **out[] = {&c.host, &c.container_id, &c.container_name, &c.image, &c.jvm_version, &c.type};
    if (dup_labels(in, out, 6) < 0)
        return -1;
    ne[l->n++] = c;
    return 0;
}

uint64_t store_share_of(store_share *s, uint64_t weight)
{
    if (!s->total)
        return 0;
    unsigned __int128 d = s->disk, t = s->total;
    uint64_t before = (uint64_t)((d * s->sum + t / 2) / t);
    s->sum += weight;
    uint64_t after = (uint64_t)((d * s->sum + t / 2) / t);
    return after - before;
}

void store_listing_free(store_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i].host); /* the block of its labels */
    free(l->e);
    *l = (store_listing){0};
}

void store_info_add(store_info *info, uint64_t windows, uint64_t samples, int64_t hz_min,
                    int64_t hz_max, int64_t start_ms, int64_t end_ms)
{
    /* a frequency of 0 (unknown) does not narrow the range */
    if (hz_min > 0 && (!info->hz_min || hz_min < info->hz_min))
        info->hz_min = hz_min;
    if (hz_max > info->hz_max)
        info->hz_max = hz_max;
    if (!info->windows || start_ms < info->first_ms)
        info->first_ms = start_ms;
    if (!info->windows || end_ms > info->last_ms)
        info->last_ms = end_ms;
    info->windows += windows;
    info->samples += samples;
}

static int copy_stack(void *ud, const char *stack, size_t len, double count)
{
    return profile_add(ud, stack, len, count, PROFILE_ONE_COLUMN) < 0 ? -1 : 0;
}

int store_window_copy(const store_window *w, store_window *out)
{
    *out = *w;
    char *block = NULL;
    const char *in[] = {w->host,  w->container_id, w->container_name,
                        w->image, w->jvm_version,  store_type_of(w->type)};
    char **dst[] = {&block,
                    (char **)&out->container_id,
                    (char **)&out->container_name,
                    (char **)&out->image,
                    (char **)&out->jvm_version,
                    (char **)&out->type};
    profile *p = profile_new();
    if (!p || dup_labels(in, dst, 6) < 0 || profile_each_stack(w->stacks, copy_stack, p) != 0) {
        free(block);
        profile_free(p);
        *out = (store_window){0};
        return -1;
    }
    out->host = block; /* the block of all five: freed through it */
    out->stacks = p;
    return 0;
}

void store_window_free(store_window *w)
{
    free((char *)w->host);
    profile_free((profile *)w->stacks);
    *w = (store_window){0};
}

void store_handle_free(store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->npending; i++)
        store_window_free(&s->pending[i]);
    free(s->pending);
    store_handle_free(s->spool);
    if (s->ops)
        s->ops->close(s);
    free(s->name);
    free(s->spool_path);
    free(s);
}

void store_label_copy(char *out, const char *in)
{
    size_t n = in ? strnlen(in, STORE_MAX_LABEL) : 0;
    if (n >= STORE_MAX_LABEL) {
        n = STORE_MAX_LABEL - 1;
        while (n > 0 && ((unsigned char)in[n] & 0xc0) == 0x80) /* not inside a UTF-8 sequence */
            n--;
    }
    if (n)
        memcpy(out, in, n);
    out[n] = 0;
}

size_t store_stack_bound(const char *s, size_t len, char *buf, const char **out)
{
    static const char mark[] = ";[truncated]";
    *out = s;
    if (len <= STORE_MAX_STACK)
        return len;
    size_t keep = STORE_MAX_STACK - sizeof mark;
    while (keep > 0 && s[keep] != ';')
        keep--;
    memcpy(buf, s, keep);
    /* no frame boundary at all: the stack becomes the mark alone, never an empty frame */
    const char *m = keep ? mark : mark + 1;
    memcpy(buf + keep, m, strlen(m));
    *out = buf;
    return keep + strlen(m);
}
