/* Inside the profile store: what a backend (store/sqlite*.c, store/clickhouse*.c) provides, the
 * handle they share, and (store_util.h) the helpers every part uses. Only store/ and its tests
 * include this. */
#pragma once
#include <stdint.h>

#include "store/pairs.h"
#include "store/store.h"
#include "store/store_util.h"

struct store_ops {
    int (*put)(store *s, const store_window *w, size_t n, flame_err *err);
    int (*profile)(store *s, const store_query *q, profile *out, store_info *info, flame_err *err);
    int (*timeline)(store *s, const store_query *q, store_series_list *out, flame_err *err);
    int (*list)(store *s, const store_query *q, store_listing *out, flame_err *err);
    int (*compact)(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *st,
                   flame_err *err);
    void (*close)(store *s);
};

struct store {
    const struct store_ops *ops;
    void *impl;
    char *name; /* store_name() */
    /* ClickHouse only: the local SQLite spool for windows the server did not take (opened when
     * first needed), its path ("" = none) and bound in bytes */
    store *spool;
    char *spool_path;
    uint64_t spool_max;
};

/* Backends: fill s->ops, s->impl (s->name is set by the caller). */
int sq_open(store *s, const char *path, flame_err *err);
int ch_open(store *s, const char *url, flame_err *err);
