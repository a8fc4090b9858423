/* The profile store's front (store/store.h): the URL picks a backend and every call goes through
 * here: to the backend, and for a remote store to its spool (spool.c) when the server does not
 * take a put. Calls go one way: store.c -> {sqlite, clickhouse, spool} -> store_util. */
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
            path = def = store_data_path("profiles.db", err);
        rc = path ? store_make_parent(path, err) : -1;
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
    store_handle_free(s);
}

const char *store_name(const store *s)
{
    return s->name ? s->name : "store";
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
        spool_drain(s, DRAIN_ROUNDS, &quiet);
        return 0;
    }
    if (!spool_on(s) || (err->detail != STORE_ERR_UNREACHABLE && err->detail != STORE_ERR_SERVER))
        return -1;
    return spool_keep(s, w, n, err);
}

int store_put(store *s, const store_window *w, flame_err *err)
{
    return store_put_many(s, w, 1, err);
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

int store_flush(store *s, flame_err *err)
{
    return spool_flush(s, err);
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
