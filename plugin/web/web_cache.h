/* What serve's handlers share: store handles (a store handle is one thread's: a small pool,
 * opened on demand), a bound on the merges running at a time (each reads a whole range: SQLite's
 * pages or a ClickHouse query), and the merged profiles of recent ranges, so zooming, searching,
 * the table and the sandwich of one range read one merge. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "flame/calltree.h"
#include "flame/profile.h"
#include "plugin/web/web_query.h"
#include "store/store.h"

typedef struct web_cache web_cache;

/* The store is opened for reading (NULL = the default file) up to handles times at once. */
typedef struct web_cache_opts {
    const char *store_url;
    size_t entries;   /* ranges kept merged (8) */
    unsigned handles; /* store handles (4) */
    unsigned merges;  /* merges at a time (2) */
    int64_t wait_ms;  /* longest wait for a handle or a merge slot, then "busy" (30 s) */
    /* A range that ends less than this before now may still get windows (the recorder writes
     * each as it ends): its merge is kept only this long (10 s). */
    int64_t fresh_ms;
} web_cache_opts;

/* A merged range: read-only, shared by the requests that hold it. */
typedef struct web_merged {
    profile *p; /* single column; empty when nothing is stored in the range */
    store_info info;
} web_merged;

int web_cache_new(const web_cache_opts *o, web_cache **out, flame_err *err);
void web_cache_free(web_cache *c); /* NULL-safe; no request may be running */
/* The store's name for people (store_name: no password). */
const char *web_cache_store_name(web_cache *c);

/* A store handle for this thread until web_cache_put. Waits for one; FLAME_EXIT_STORE with
 * detail STORE_ERR_UNREACHABLE and "busy" when none comes within wait_ms. */
int web_cache_get(web_cache *c, store **s, flame_err *err);
/* broken: an error came from it (a ClickHouse connection gone, a SQLite error): close it. */
void web_cache_put(web_cache *c, store *s, bool broken);

/* The merge of one side's windows (show's: each container's windows added into one profile),
 * from the cache or merged now (one merge slot, one handle). Release it when done. */
int web_cache_merged(web_cache *c, const web_side *side, int64_t now_ms, const web_merged **out,
                     flame_err *err);
void web_cache_release(web_cache *c, const web_merged *m);
/* The call tree of a merged range m (held) with options o, built now or the one built last for m
 * with the same options (zoom, hover-driven re-queries and searches of one view rebuild
 * nothing). Release it before m. */
int web_cache_tree(web_cache *c, const web_merged *m, const calltree_opts *o, const calltree **out,
                   flame_err *err);
void web_cache_tree_release(web_cache *c, const calltree *t);
/* Hits and merges so far (tests, the bench). */
void web_cache_stats(web_cache *c, uint64_t *hits, uint64_t *merges);
