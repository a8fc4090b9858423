/* The profile store's front (store/store.h): the URL picks a backend, every call goes through
 * here, and here lives the spool of a remote store: windows the server did not take are kept in
 * a local SQLite store, bounded in size, and sent with the next successful put. */
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
#include "store/sqlite_impl.h"
#include "store/store_impl.h"

/* Spooled windows sent per successful put (and per round of store_flush): enough to catch up
 * after an outage within minutes, few enough that one put stays short. */
#define DRAIN_BATCH 64
#define DRAIN_ROUNDS 4

int store_fail(flame_err *err, int detail, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = detail == STORE_ERR_URL ? FLAME_EXIT_USAGE : FLAME_EXIT_STORE;
    err->detail = detail;
    return -1;
}

void store_policy_default(store_policy *p)
{
    *p = (store_policy){.retain_ms = STORE_RETAIN_DEFAULT_MS,
                        .level = {{3600LL * 1000, 60LL * 1000}, {86400LL * 1000, 600LL * 1000}}};
}

/* mkdir -p of path's directory (private: profiles show what the code does) */
static int make_parent(const char *path, flame_err *err)
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
static char *data_path(const char *file, flame_err *err)
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
    return data_path(file, err);
}

static bool scheme_is(const char *url, const char *sep, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(sep - url) == n && !strncmp(url, name, n);
}

char *store_file_of(const char *url)
{
    const char *sep = url ? strstr(url, "://") : NULL;
    if (sep && !scheme_is(url, sep, "sqlite"))
        return NULL;
    const char *path = sep ? sep + 3 : url;
    flame_err err = FLAME_ERR_INIT;
    return path && *path ? strdup(path) : data_path("profiles.db", &err);
}

int store_open(const char *url, store **out, flame_err *err)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    const char *sep = url ? strstr(url, "://") : NULL;
    int rc;
    if (sep && (scheme_is(url, sep, "clickhouse") || scheme_is(url, sep, "clickhouses"))) {
        rc = ch_open(s, url, err);
    } else if (sep && !scheme_is(url, sep, "sqlite")) {
        rc = store_fail(err, STORE_ERR_URL,
                        "unknown store \"%.*s://\": give a file path, sqlite:///path or "
                        "clickhouse://host:8123/db",
                        (int)(sep - url < 32 ? sep - url : 32), url);
    } else {
        _cleanup_free_ char *def = NULL;
        const char *path = sep ? sep + 3 : url;
        if (!path || !*path)
            path = def = data_path("profiles.db", err);
        rc = path ? make_parent(path, err) : -1;
        if (rc == 0 && !(s->name = strdup(path)))
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        if (rc == 0)
            rc = sq_open(s, path, err);
    }
    if (rc < 0) {
        store_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

void store_close(store *s)
{
    if (!s)
        return;
    store_close(s->spool);
    if (s->ops)
        s->ops->close(s);
    free(s->name);
    free(s->spool_path);
    free(s);
}

const char *store_name(const store *s)
{
    return s->name ? s->name : "store";
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
    return 0;
}

/* ---- the spool ---- */

static bool spool_on(const store *s)
{
    return s->spool_path && s->spool_path[0];
}

/* Open the spool when it is needed: always to write into it, only when its file exists to
 * read from it (no empty file made by every put). 1 open, 0 none, -1 error. */
static int spool_open(store *s, bool create, flame_err *err)
{
    if (s->spool)
        return 1;
    if (!spool_on(s) || (!create && access(s->spool_path, F_OK) != 0))
        return 0;
    if (make_parent(s->spool_path, err) < 0)
        return -1;
    store *sp = calloc(1, sizeof *sp);
    if (!sp || !(sp->name = strdup(s->spool_path))) {
        free(sp);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (sq_open(sp, s->spool_path, err) < 0) {
        store_close(sp);
        return flame_wrap(err, "spool");
    }
    s->spool = sp;
    return 1;
}

/* Send up to rounds batches from the spool. 0 = sent (or nothing to send), -1 = stopped. */
static int drain(store *s, int rounds, flame_err *err)
{
    int rc = spool_open(s, false, err);
    for (int r = 0; rc > 0 && r < rounds; r++) {
        sq_batch b;
        rc = sq_take(s->spool, DRAIN_BATCH, &b, err);
        if (rc == 0 && b.n == 0) {
            sq_batch_free(&b);
            return 0;
        }
        if (rc == 0)
            rc = s->ops->put(s, b.w, b.n, err);
        if (rc == 0)
            rc = sq_drop(s->spool, b.ids, b.n, err);
        sq_batch_free(&b);
        if (rc == 0)
            rc = 1;
    }
    return rc < 0 ? -1 : 0;
}

static int spool_put(store *s, const store_window *w, size_t n, flame_err *err)
{
    uint64_t dropped = 0, waiting = 0;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    flame_err e2 = FLAME_ERR_INIT;
    if (spool_open(s, true, &e2) < 0 || sq_shrink(s->spool, s->spool_max, &dropped, &e2) < 0 ||
        s->spool->ops->put(s->spool, w, n, &e2) < 0 || sq_count(s->spool, &waiting, &e2) < 0) {
        *err = e2;
        return flame_wrap(err, "%s (and the local spool failed)", why);
    }
    store_fail(err, STORE_ERR_UNREACHABLE, "%s; kept in %s (%llu windows waiting%s)", why,
               s->spool_path, (unsigned long long)waiting,
               dropped ? ", the oldest dropped to stay under spool_max" : "");
    return 1;
}

int store_put_many(store *s, const store_window *win, size_t n, flame_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (store_check_window(&win[i], err) < 0)
            return -1;
    /* each window's uid is set here, once: the spool keeps it, the server gets it each time */
    _cleanup_free_ store_window *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; i < n; i++) {
        w[i] = win[i];
        if (!w[i].uid)
            w[i].uid = store_uid();
    }
    if (s->ops->put(s, w, n, err) == 0) {
        flame_err quiet = FLAME_ERR_INIT; /* the window is in: a failed catch-up waits */
        drain(s, DRAIN_ROUNDS, &quiet);
        return 0;
    }
    if (!spool_on(s) || (err->detail != STORE_ERR_UNREACHABLE && err->detail != STORE_ERR_SERVER))
        return -1;
    return spool_put(s, w, n, err);
}

int store_put(store *s, const store_window *w, flame_err *err)
{
    return store_put_many(s, w, 1, err);
}

int store_flush(store *s, flame_err *err)
{
    for (;;) {
        uint64_t left = 0;
        int rc = spool_open(s, false, err);
        if (rc <= 0)
            return rc;
        if (sq_count(s->spool, &left, err) < 0)
            return -1;
        if (left == 0)
            return 0;
        if (drain(s, 1, err) < 0)
            return -1;
    }
}

/* ---- readers ---- */

int store_profile(store *s, const store_query *q, profile *out, store_info *info, flame_err *err)
{
    return s->ops->profile(s, q, out, info, err);
}

int store_timeline(store *s, const store_query *q, store_series_list *out, flame_err *err)
{
    return s->ops->timeline(s, q, out, err);
}

int store_list(store *s, const store_query *q, store_listing *out, flame_err *err)
{
    if (s->ops->list(s, q, out, err) < 0)
        return -1;
    int sp = spool_open(s, false, err);
    return sp <= 0 ? sp : sq_count(s->spool, &out->spooled, err);
}

int store_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *stats,
                  flame_err *err)
{
    store_compact_stats local = {0};
    store_policy def;
    if (!pol) {
        store_policy_default(&def);
        pol = &def;
    }
    for (int i = 0; i < STORE_LEVELS; i++)
        if (pol->level[i].bucket_ms < 0 || pol->level[i].bucket_ms > STORE_MAX_WINDOW_MS)
            return flame_fail(err, FLAME_EXIT_USAGE, "compaction buckets are at most %lld min long",
                              STORE_MAX_WINDOW_MS / 60000);
    return s->ops->compact(s, now_ms, pol, stats ? stats : &local, err);
}

int store_prune(store *s, int64_t now_ms, int64_t retain_ms, store_compact_stats *stats,
                flame_err *err)
{
    store_policy p = {.retain_ms = retain_ms};
    return store_compact(s, now_ms, &p, stats, err);
}

/* ---- what the backends fill ---- */

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
    const char *in[] = {e->host, e->container_id, e->container_name, e->image, e->jvm_version};
    char **out[] = {&c.host, &c.container_id, &c.container_name, &c.image, &c.jvm_version};
    if (dup_labels(in, out, 5) < 0)
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
