/* Inside the SQLite backend (store/sqlite.c: schema, put, stack collection; sqlite_read.c:
 * readers; sqlite_compact.c: retention, compaction; sqlite_spool.c: what the ClickHouse spool
 * needs). Also read by the unit tests. */
#pragma once
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/dict.h"
#include "store/store_impl.h"

typedef struct sq {
    sqlite3 *db;
    char *path;
    /* the store's dictionary as far as this handle has read it (sq_dict_sync): the chunks up to
     * row dict_last, of the dictionary's generation dict_gen (a rewrite starts a new one) */
    dict d;
    int64_t dict_gen, dict_last;
    int busy_ms;   /* how long a writer waits for another */
    bool has_type; /* windows has its type column (a version 2 store read as it is has not) */
} sq;

static inline void sq_finalizep(sqlite3_stmt **st)
{
    sqlite3_finalize(*st); /* NULL-safe */
}
#define _cleanup_stmt_ __attribute__((cleanup(sq_finalizep)))

static inline sq *sq_of(store *s)
{
    return s->impl;
}

/* how long a writer waits for another (a put takes milliseconds; a compaction slice too) */
#define SQ_BUSY_MS 10000

/* ---- sqlite_db.c: the plumbing ---- */

/* err from a SQLite result code: damaged file, disk full, busy ... named as such. */
int sq_fail(sq *q, flame_err *err, int rc, const char *what);
/* Prepare sql into *st (0 or sq_fail). */
int sq_prepare(sq *q, const char *sql, sqlite3_stmt **st, flame_err *err);
/* Run sql without results. */
int sq_exec(sq *q, const char *sql, flame_err *err);
/* BEGIN IMMEDIATE (waits for other writers up to the busy timeout); COMMIT; ROLLBACK (quiet). */
int sq_begin(sq *q, flame_err *err);
int sq_commit(sq *q, flame_err *err);
void sq_rollback(sq *q);
/* Room for row n of a growing array of rows of size bytes (rows NULL and *cap 0 at first; n at
 * most *cap): doubled from 256 rows when full. The array (moved, or rows as it was), or NULL
 * with err (out of memory, a size that would overflow) and rows untouched (the caller frees
 * it). */
void *sq_rows_grow(void *rows, size_t n, size_t *cap, size_t size, flame_err *err);
/* Append add[0..k) to the growing array *pairs of *n (room for *cap; doubled past what is
 * needed): the pairs of one more window summed later by compaction and the rollups. 0, or -1
 * with err (out of memory, a size that would overflow; *pairs untouched). */
int sq_pairs_append(store_pair **pairs, size_t *n, size_t *cap, const store_pair *add, size_t k,
                    flame_err *err);

/* ---- sqlite.c: the face, opening, versions, puts ---- */

/* One schema step: the SQL that brings a store from version - 1 to version, then (when not
 * NULL) fn, in the same transaction. */
typedef struct sq_step {
    int version;
    const char *sql;
    int (*fn)(sq *q, flame_err *err);
} sq_step;
#define SQ_SCHEMA_VERSION 3
/* The oldest version a reader reads: version 2 lacks only the windows' type column, and its
 * windows are all cpu (docs/STORE.md, "Profile types"). */
#define SQ_READ_MIN 2
/* Bring the database to the last step's version inside one write transaction; a store whose
 * version is above it fails with STORE_ERR_NEWER. Exposed so tests can run other step lists. */
int sq_migrate(sq *q, const sq_step *steps, size_t n, flame_err *err);

/* Whether windows has its type column (q->has_type). */
int sq_check_type(sq *q, flame_err *err);
/* One integer from a query without parameters (0 when it gives no row). (sqlite_db.c) */
int sq_int(sq *q, const char *sql, int64_t *out, flame_err *err);

/* More chunks in the dictionary than this (a put's new stacks make one): compaction rewrites
 * them into large ones (about a third smaller: docs/STORE.md). */
#define SQ_CHUNKS_MAX 32

/* ---- sqlite_read.c ---- */
int sq_profile(store *s, const store_query *qq, profile *out, store_info *info, flame_err *err);
int sq_timeline(store *s, const store_query *qq, store_series_list *out, flame_err *err);
int sq_list(store *s, const store_query *qq, store_listing *out, flame_err *err);
/* Add the stacks of pairs (stack ids, counts) into out (the dictionary synced). */
int sq_add_stacks(sq *q, const store_pair *pairs, size_t n, profile *out, flame_err *err);

/* ---- sqlite_db.c (more of the plumbing) ---- */
/* The pairs of column col of row st into b (a damaged blob: STORE_ERR_CORRUPT). */
int sq_decode(sq *q, sqlite3_stmt *st, int col, pairs_buf *b, flame_err *err);
/* The bytes of data (windows' pairs and the dictionary: what the spool's bound counts) and on
 * disk (the file and its WAL); either may be NULL. */
int sq_usage(sq *q, uint64_t *data, uint64_t *disk, flame_err *err);
/* Give free pages back to the file system, in slices, and checkpoint without waiting for
 * readers (best effort). */
void sq_release_space(sq *q);
/* How long a write waits for another process's (tests shorten it). */
void sq_busy_timeout(sq *q, int ms);

/* ---- sqlite_dict.c: the dictionary of stacks ---- */
/* Read the dictionary's chunks this handle has not seen yet (all of them after a rewrite), in
 * the caller's transaction. */
int sq_dict_sync(sq *q, flame_err *err);
/* How many stacks the dictionary holds (read from its last chunk's header). */
int sq_dict_count(sq *q, int64_t *stacks, flame_err *err);
/* Store what q->d has had added since its mark as one chunk (in the caller's transaction). */
int sq_dict_store_new(sq *q, flame_err *err);
/* Replace the stored chunks by d in large ones, a new generation (in the caller's transaction);
 * q reads it back at its next sync. */
int sq_dict_rewrite(sq *q, const dict *d, flame_err *err);
/* b's ids mapped through map (old id -> new id, ascending with the old; n old ids), encoded
 * into *blob (malloc'd, its length in *len). 0, -1 damaged or out of memory (err set). */
int sq_remap_pairs(sq *q, pairs_buf *b, const uint32_t *map, uint32_t n, uint8_t **blob,
                   size_t *len, flame_err *err);
/* A dictionary error: rc -1 damaged, else out of memory or full (errno E2BIG). */
int sq_dict_fail(sq *q, int rc, flame_err *err);
/* The dictionary without the stacks no window uses, when they are many (at least a quarter of
 * it), or empty when no window is left; else rewritten in large chunks when it is in many small
 * ones. Outside any transaction: the windows are decoded in a read transaction (writers go on),
 * then a write transaction looks again only at the windows written meanwhile and does the work
 * (a renumbering rewrites every window's pairs under it). *freed (may be NULL) counts the
 * stacks gone. */
int sq_gc_stacks(sq *q, uint64_t *freed, flame_err *err);

/* ---- sqlite_rollup.c: hour rollups (docs/STORE.md, "Hour rollups") ---- */
#define SQ_HOUR_MS 3600000
/* A window belongs to the hour of its start: start_ms - start_ms % 3600000 in SQL (start_ms >= 0:
 * store_check_window), written out in the triggers, compaction and the readers. */
/* Whether the store has its rollups table (an older store, or a reader's, may not). */
int sq_rollup_have(sq *q, bool *have, flame_err *err);
/* A writer's open: the table and its triggers when the store has none (detected by the table,
 * not by the schema version: other steps may come in any order). */
int sq_rollup_schema(sq *q, flame_err *err);
/* The rollups of every (JVM, hour) that has ended before now_ms and has none; *built counts. */
int sq_rollup_build(sq *q, int64_t now_ms, uint64_t *built, flame_err *err);

/* ---- sqlite_compact.c ---- */
int sq_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *st,
               flame_err *err);

/* ---- sqlite_spool.c: windows read back whole, to be sent on ---- */
typedef struct sq_batch {
    store_window *w;
    char **labels; /* each window's label strings, one block */
    int64_t *ids;
    size_t n;
} sq_batch;
/* The oldest max windows, with their labels and stacks. */
int sq_take(store *s, size_t max, sq_batch *out, flame_err *err);
void sq_batch_free(sq_batch *b);
/* Delete these windows (and the stacks nothing uses any more). */
int sq_drop(store *s, const int64_t *ids, size_t n, flame_err *err);
/* Windows stored. */
int sq_count(store *s, uint64_t *windows, flame_err *err);
/* Delete the oldest windows until what is in use fits in max bytes; *dropped counts them. */
int sq_shrink(store *s, uint64_t max, uint64_t *dropped, flame_err *err);
