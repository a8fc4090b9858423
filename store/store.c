/* The profile store's front (store/store.h): the URL picks a backend, every call goes through
 * here, and here lives the spool of a remote store: windows the server did not take are kept in
 * a local SQLite store, bounded in size, and sent with the next successful put. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"

#include "common/cleanup.h"
#include "store/sqlite_impl.h"
#include "store/store_impl.h"

/* Spooled windows sent per successful put (and per round of store_flush): enough to catch up
 * after an outage within minutes, few enough that one put stays short. */
#define DRAIN_BATCH 64
#define DRAIN_ROUNDS 4
/* How long store_flush waits for another process that sends the same spool (a round is a few
 * requests, each bounded by the put timeout). */
#define FLUSH_LOCK_WAIT_MS 60000

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

static int open_mode(const char *url, bool readonly, store **out, flame_err *err)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    s->readonly = readonly;
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
        rc = !path ? -1 : readonly ? 0 : make_parent(path, err);
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

int store_open(const char *url, store **out, flame_err *err)
{
    return open_mode(url, false, out, err);
}

int store_open_read(const char *url, store **out, flame_err *err)
{
    return open_mode(url, true, out, err);
}

/* ---- URLs as typed ---- */

/* Is the %XX-encoded value v (n bytes) an absolute path: does it decode to a leading '/'? */
static bool abs_value(const char *v, size_t n)
{
    if (n >= 3 && v[0] == '%')
        return v[1] == '2' && (v[2] == 'f' || v[2] == 'F');
    return n > 0 && v[0] == '/';
}

/* cwd %XX-encoded where a URL needs it */
static void put_encoded(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char k = (unsigned char)*s;
        if ((k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || (k >= '0' && k <= '9') ||
            strchr("/._~-", k))
            fputc(k, f);
        else
            fprintf(f, "%%%02X", k);
    }
}

int store_url_absolute(const char *url, const char *cwd, char **out)
{
    *out = NULL;
    if (!url)
        return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    const char *sep = strstr(url, "://");
    if (!sep) { /* a plain path */
        if (url[0] && url[0] != '/')
            fprintf(f, "%s/", cwd);
        fputs(url, f);
    } else if (scheme_is(url, sep, "sqlite")) {
        const char *path = sep + 3;
        fwrite(url, 1, (size_t)(path - url), f);
        if (path[0] && path[0] != '/')
            fprintf(f, "%s/", cwd);
        fputs(path, f);
    } else {
        /* ClickHouse: the file paths among the parameters (spool=off is no path) */
        const char *q = strchr(sep + 3 + strcspn(sep + 3, "/?"), '?');
        fwrite(url, 1, q ? (size_t)(q + 1 - url) : strlen(url), f);
        for (q = q ? q + 1 : NULL; q && *q;) {
            size_t n = strcspn(q, "&");
            const char *eq = memchr(q, '=', n);
            size_t kl = eq ? (size_t)(eq - q) : n, vl = eq ? n - kl - 1 : 0;
            bool path =
                eq &&
                ((kl == 5 && !strncmp(q, "spool", 5) && !(vl == 3 && !strncmp(eq + 1, "off", 3))) ||
                 (kl == 13 && !strncmp(q, "password_file", 13)));
            if (path && vl && !abs_value(eq + 1, vl)) {
                fwrite(q, 1, kl + 1, f);
                put_encoded(f, cwd);
                fputc('/', f);
                fwrite(eq + 1, 1, vl, f);
            } else {
                fwrite(q, 1, n, f);
            }
            q += n;
            if (*q)
                fputc(*q++, f);
        }
    }
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || !text) {
        free(text);
        return -1;
    }
    *out = text;
    return 0;
}

int store_url_scrub(char *url)
{
    char *sep = strstr(url, "://");
    if (!sep || !(scheme_is(url, sep, "clickhouse") || scheme_is(url, sep, "clickhouses")))
        return 0;
    char *p = sep + 3, *at = memrchr(p, '@', strcspn(p, "/?"));
    char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
    if (!colon || colon + 1 == at)
        return 0;
    /* "user:SECRET@host..." -> "user:*@host...", the bytes freed at the end zeroed */
    size_t tail = strlen(at), old = strlen(url);
    colon[1] = '*';
    memmove(colon + 2, at, tail + 1);
    size_t now = strlen(url);
    memset(url + now, 0, old - now);
    return 1;
}

void store_close(store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->npending; i++)
        store_window_free(&s->pending[i]);
    free(s->pending);
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
    if (!s->readonly && make_parent(s->spool_path, err) < 0)
        return -1;
    store *sp = calloc(1, sizeof *sp);
    if (!sp || !(sp->name = strdup(s->spool_path))) {
        free(sp);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    sp->readonly = s->readonly;
    if (sq_open(sp, s->spool_path, err) < 0) {
        store_close(sp);
        return flame_wrap(err, "spool");
    }
    s->spool = sp;
    return 1;
}

/* The spool is sent by one process at a time: an exclusive flock on <spool>.lock, held from
 * reading a batch to deleting it once sent (two recorders of one server share the spool; without
 * it both sent the same windows). A file of its own: SQLite's own locks on the spool are fcntl
 * locks, which flock may be on some file systems. Returns the locked fd, -2 when another process
 * holds it past wait_ms, -1 with err on failure. */
static int drain_lock(const store *s, int wait_ms, flame_err *err)
{
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s.lock", s->spool_path) < 0) {
        path = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return store_fail(err, STORE_ERR_IO, "spool: cannot open %s: %s", path, strerror(errno));
    int64_t deadline = mono_ms() + wait_ms;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if ((e != EWOULDBLOCK && e != EINTR) || (e == EWOULDBLOCK && mono_ms() >= deadline)) {
            close(fd);
            if (e == EWOULDBLOCK)
                return -2;
            return store_fail(err, STORE_ERR_IO, "spool: cannot lock %s: %s", path, strerror(e));
        }
        poll(NULL, 0, 20);
    }
    return fd;
}

/* Send up to rounds batches from the spool, holding its drain lock. 0 = sent (or nothing to
 * send), -1 = stopped. */
static int drain_locked(store *s, int rounds, flame_err *err)
{
    int rc = 1;
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

/* After a put: send some of the spool, unless another process sends it right now. */
static int drain(store *s, int rounds, flame_err *err)
{
    int rc = spool_open(s, false, err);
    if (rc <= 0)
        return rc;
    int fd = drain_lock(s, 0, err);
    if (fd == -2)
        return 0; /* being sent: by the time we could, it would be sent */
    if (fd < 0)
        return -1;
    rc = drain_locked(s, rounds, err);
    close(fd);
    return rc;
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

static int dup_labels(const char *const *in, char **const *out, int n);

/* ---- windows kept in memory (SQLite busy) ---- */

static int copy_stack(void *ud, const char *stack, size_t len, double count)
{
    return profile_add(ud, stack, len, count, PROFILE_ONE_COLUMN) < 0 ? -1 : 0;
}

int store_window_copy(const store_window *w, store_window *out)
{
    *out = *w;
    char *block = NULL;
    const char *in[] = {w->host, w->container_id, w->container_name, w->image, w->jvm_version};
    char **dst[] = {&block, (char **)&out->container_id, (char **)&out->container_name,
                    (char **)&out->image, (char **)&out->jvm_version};
    profile *p = profile_new();
    if (!p || dup_labels(in, dst, 5) < 0 || profile_each_stack(w->stacks, copy_stack, p) != 0) {
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

/* Keep copies of w (the put of which found the store busy) for the next put. The oldest go
 * beyond STORE_PENDING_MAX. Returns 1 with err a warning, or -1. */
static int keep_pending(store *s, const store_window *w, size_t n, flame_err *err)
{
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    size_t dropped = 0;
    if (!s->pending && !(s->pending = calloc(STORE_PENDING_MAX, sizeof *s->pending)))
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (s->npending == STORE_PENDING_MAX) {
            store_window_free(&s->pending[0]);
            memmove(s->pending, s->pending + 1, (STORE_PENDING_MAX - 1) * sizeof *s->pending);
            s->npending--;
            dropped++;
        }
        if (store_window_copy(&w[i], &s->pending[s->npending]) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        s->npending++;
    }
    store_fail(err, STORE_ERR_BUSY,
               "%s; kept in memory, stored with the next window (%zu waiting%s)", why, s->npending,
               dropped ? ", the oldest dropped" : "");
    return 1;
}

/* The windows kept in memory and w, in one put (the kept ones first: time order). */
static int put_with_pending(store *s, const store_window *w, size_t n, flame_err *err)
{
    if (!s->npending)
        return s->ops->put(s, w, n, err);
    store_window *all = malloc((s->npending + n) * sizeof *all);
    if (!all)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    memcpy(all, s->pending, s->npending * sizeof *all);
    if (n)
        memcpy(all + s->npending, w, n * sizeof *all);
    int rc = s->ops->put(s, all, s->npending + n, err);
    free(all);
    if (rc == 0) {
        for (size_t i = 0; i < s->npending; i++)
            store_window_free(&s->pending[i]);
        s->npending = 0;
    }
    return rc;
}

/* The server was unreachable moments ago: the put goes to the spool without trying it. */
static bool server_down(const store *s)
{
    return spool_on(s) && s->down_until_ms && mono_ms() < s->down_until_ms;
}

int store_put_many(store *s, const store_window *w, size_t n, flame_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (store_check_window(&w[i], err) < 0)
            return -1;
    if (server_down(s)) {
        store_fail(err, STORE_ERR_UNREACHABLE, "%s (tried again in %lld s)", s->down_why,
                   (long long)((s->down_until_ms - mono_ms()) / 1000 + 1));
        return spool_put(s, w, n, err);
    }
    if (put_with_pending(s, w, n, err) == 0) {
        s->down_until_ms = 0;
        flame_err quiet = FLAME_ERR_INIT; /* the window is in: a failed catch-up waits */
        drain(s, DRAIN_ROUNDS, &quiet);
        return 0;
    }
    /* SQLite held by another process (a prune, a checkpoint) longer than the busy timeout: the
     * window waits in memory for the next put instead of being lost */
    if (err->detail == STORE_ERR_BUSY)
        return keep_pending(s, w, n, err);
    if (!spool_on(s) || (err->detail != STORE_ERR_UNREACHABLE && err->detail != STORE_ERR_SERVER))
        return -1;
    if (err->detail == STORE_ERR_UNREACHABLE) {
        s->down_until_ms = mono_ms() + STORE_DOWN_MS;
        snprintf(s->down_why, sizeof s->down_why, "%s", err->msg);
    }
    return spool_put(s, w, n, err);
}

int store_put(store *s, const store_window *w, flame_err *err)
{
    return store_put_many(s, w, 1, err);
}

int store_flush(store *s, flame_err *err)
{
    if (s->npending) {
        size_t n = s->npending;
        if (put_with_pending(s, NULL, 0, err) < 0)
            return flame_wrap(err, "%zu window%s kept in memory not stored", n, n == 1 ? "" : "s");
    }
    int rc = spool_open(s, false, err);
    if (rc <= 0)
        return rc;
    if (server_down(s)) { /* it would only wait for the same timeout again */
        uint64_t left = 0;
        sq_count(s->spool, &left, err);
        return store_fail(err, STORE_ERR_UNREACHABLE, "%s: %llu windows wait in %s", s->down_why,
                          (unsigned long long)left, s->spool_path);
    }
    int fd = drain_lock(s, FLUSH_LOCK_WAIT_MS, err);
    if (fd == -2)
        return store_fail(err, STORE_ERR_UNREACHABLE,
                          "%s: another process has been sending the spool for %d s: it sends what "
                          "waits",
                          s->spool_path, FLUSH_LOCK_WAIT_MS / 1000);
    if (fd < 0)
        return -1;
    for (;;) {
        uint64_t left = 0;
        if ((rc = sq_count(s->spool, &left, err)) < 0 || left == 0 ||
            (rc = drain_locked(s, 1, err)) < 0)
            break;
    }
    close(fd);
    return rc;
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
    const char *in[] = {e->host, e->container_id, e->container_name, e->image};
    char **out[] = {&c.host, &c.container_id, &c.container_name, &c.image};
    if (dup_labels(in, out, 4) < 0)
        return -1;
    ne[l->n++] = c;
    return 0;
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
