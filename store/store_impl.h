/* Inside the profile store: what a backend (store/sqlite*.c, store/clickhouse*.c) provides, the
 * handle they share, and (store_util.h) the helpers every part uses. Only store/ and its tests
 * include this. */
#pragma once
#include <stdbool.h>
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
    char *name;    /* store_name() */
    bool readonly; /* store_open_read: nothing is created, migrated or written */
    /* a reader's spool: only its windows are counted (ls), which every version can answer, so
     * an older one (left by an older recorder) is not refused */
    bool any_version;
    /* ClickHouse only: the local SQLite spool for windows the server did not take (opened when
     * first needed), its path ("" = none) and bound in bytes */
    store *spool;
    char *spool_path;
    uint64_t spool_max;
    /* SQLite only: windows a put could not store because another process held the store past
     * the busy timeout (copies), stored before the next put's windows or by store_flush */
    store_window *pending;
    size_t npending;
    /* ClickHouse: until when (mono ms) puts go straight to the spool, the server having been
     * unreachable (a hung server costs one put's timeout per STORE_DOWN_MS, not one per window) */
    int64_t down_until_ms;
    char down_why[sizeof((flame_err *)0)->msg];
};
#define STORE_DOWN_MS 30000
/* Windows kept in memory at most (a minute and more of 1-s windows, ten of 10-s ones: the
 * longest a prune slice or a checkpoint holds the store is far shorter). */
#define STORE_PENDING_MAX 64

/* Backends: fill s->ops, s->impl (s->name and s->readonly are set by the caller). */
int sq_open(store *s, const char *path, flame_err *err);
int ch_open(store *s, const char *url, flame_err *err);
