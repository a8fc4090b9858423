/* Inside the profile store: what a backend (store/sqlite*.c, store/clickhouse*.c) provides, the
 * handle they share, and the helpers every backend uses to fill timelines and listings. Only
 * store/ and its tests include this. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "store/codec.h"
#include "store/store.h"

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

/* The default spool of a remote store, named after tag (host, port, database): a file in the
 * data directory. Caller frees. */
char *store_spool_default(const char *tag, flame_err *err);
/* Fail with FLAME_EXIT_STORE and a detail (enum store_err). */
int store_fail(flame_err *err, int detail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Checks of a window before it is stored (both backends refuse the same things). */
int store_check_window(const store_window *w, flame_err *err);
/* A container id prefix matches from this many characters on (docker's short ids are 12). */
#define STORE_ID_PREFIX_MIN 4

/* Append a point to t: to the last series when it is the same (host, container id, JVM), else
 * to a new one. 0 or -1 (out of memory). */
int store_timeline_add(store_series_list *t, const char *host, const char *container_id,
                       const char *container_name, int64_t jvm_pid, const store_point *pt);
/* Append an entry (strings copied). */
int store_listing_add(store_listing *l, const store_entry *e);
/* Add windows (spanning start_ms to end_ms) to info. */
void store_info_add(store_info *info, uint64_t windows, uint64_t samples, int64_t hz_min,
                    int64_t hz_max, int64_t start_ms, int64_t end_ms);
