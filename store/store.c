/* The profile store's front (store/store.h): the URL picks a backend and every call goes through
 * here: to the backend, and for a remote store to its spool (spool.c) when the server does not
 * take a put. Calls go one way: store.c -> {sqlite, clickhouse, spool} -> store_util. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "store/spool.h"
#include "store/sqlite_impl.h"
#include "store/store_impl.h"

/* Rounds of spooled windows sent after a successful put (spool.c: 64 a round). */
#define DRAIN_ROUNDS 4

void store_policy_default(store_policy *p)
{
    *p = (store_policy){.retain_ms = STORE_RETAIN_DEFAULT_MS,
                        .level = {{3600LL * 1000, 60LL * 1000}, {86400LL * 1000, 600LL * 1000}}};
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
    return path && *path ? strdup(path) : store_data_path("profiles.db", &err);
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
            path = def = store_data_path("profiles.db", err);
        rc = !path ? -1 : readonly ? 0 : store_make_parent(path, err);
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
    store_handle_free(s);
}

const char *store_name(const store *s)
{
    return s->name ? s->name : "store";
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
    if (server_down(s)) {
        store_fail(err, STORE_ERR_UNREACHABLE, "%s (tried again in %lld s)", s->down_why,
                   (long long)((s->down_until_ms - mono_ms()) / 1000 + 1));
        return spool_keep(s, w, n, err);
    }
    if (put_with_pending(s, w, n, err) == 0) {
        s->down_until_ms = 0;
        flame_err quiet = FLAME_ERR_INIT; /* the window is in: a failed catch-up waits */
        spool_drain(s, DRAIN_ROUNDS, &quiet);
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
    return spool_keep(s, w, n, err);
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
    if (server_down(s)) { /* it would only wait for the same timeout again */
        uint64_t left = 0;
        int rc = spool_waiting(s, &left, err);
        if (rc < 0 || left == 0)
            return rc;
        return store_fail(err, STORE_ERR_UNREACHABLE, "%s: %llu windows wait in %s", s->down_why,
                          (unsigned long long)left, s->spool_path);
    }
    return spool_flush(s, err);
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
    return spool_waiting(s, &out->spooled, err) < 0 ? -1 : 0;
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
