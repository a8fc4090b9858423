/* Retention and compaction of a SQLite store: windows past the retention are deleted, older
 * windows are merged per JVM into coarser buckets (merging only adds counts: a bucket's profile
 * is exactly the sum of its windows'), the dictionary loses the stacks nothing uses any more and
 * is rewritten in large chunks (sq_gc_stacks), and the free pages go back to the file system.
 * Work is committed in slices so a recorder writing meanwhile waits for a slice, never for the
 * whole run. */
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* buckets merged per transaction */
#define SLICE 128

/* a bucket of one JVM's windows of one profile type (types are never merged together) */
typedef struct group {
    int64_t source, bucket;
    char type[STORE_MAX_TYPE];
} group;

static int retain(sq *q, int64_t cutoff, store_compact_stats *st, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *del = NULL;
    if (sq_begin(q, err) < 0)
        return -1;
    int rc = sq_prepare(q, "DELETE FROM windows WHERE end_ms <= ?1", &del, err);
    if (rc == 0) {
        sqlite3_bind_int64(del, 1, cutoff);
        int r = sqlite3_step(del);
        rc = r == SQLITE_DONE ? 0 : sq_fail(q, err, r, "deleting old windows");
    }
    uint64_t gone = rc == 0 ? (uint64_t)sqlite3_changes(q->db) : 0;
    if (rc == 0)
        rc = sq_commit(q, err);
    else
        sq_rollback(q);
    if (rc < 0)
        return -1;
    st->deleted += gone; /* the stacks they alone used: sq_compact's collection at the end */
    return 0;
}

/* The buckets with windows below `level` that lie wholly before cut. */
static int find_groups(sq *q, int64_t cut, int64_t size, int level, group **out, size_t *n,
                       flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q,
                   "SELECT DISTINCT source, start_ms / ?1, type FROM windows"
                   " WHERE level < ?2 AND start_ms < ?3",
                   &st, err) < 0)
        return -1;
    sqlite3_bind_int64(st, 1, size);
    sqlite3_bind_int(st, 2, level);
    sqlite3_bind_int64(st, 3, cut);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        group *rows = sq_rows_grow(*out, *n, &cap, sizeof **out, err);
        if (!rows)
            return -1;
        *out = rows;
        group *g = &rows[(*n)++];
        *g = (group){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) * size, ""};
        snprintf(g->type, sizeof g->type, "%s", (const char *)sqlite3_column_text(st, 2));
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(q, err, rc, "reading windows");
}

typedef struct merge {
    store_pair *pairs;
    size_t n, cap;
    pairs_buf one; /* the window being added */
    int64_t start, end, freq, samples, rows, below;
} merge;

static int merge_row(sq *q, merge *m, sqlite3_stmt *st, int level, flame_err *err)
{
    if (sq_decode(q, st, 5, &m->one, err) < 0)
        return -1;
    if (sq_pairs_append(&m->pairs, &m->n, &m->cap, m->one.p, m->one.n, err) < 0)
        return -1;
    int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
    m->start = m->rows && m->start < s ? m->start : s;
    m->end = m->rows && m->end > e ? m->end : e;
    int64_t f = sqlite3_column_int64(st, 2);
    m->freq = f > m->freq ? f : m->freq;
    m->samples += sqlite3_column_int64(st, 3);
    m->below += sqlite3_column_int(st, 4) < level;
    m->rows++;
    return 0;
}

/* Merge one bucket's windows into one row of `level` (in the caller's transaction). */
static int merge_bucket(sq *q, const group *g, int64_t size, int level, merge *m,
                        store_compact_stats *st, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *sel = NULL, *del = NULL, *ins = NULL;
    const char *where = " FROM windows WHERE source = ?1 AND start_ms >= ?2 AND start_ms < ?3"
                        " AND level <= ?4 AND type = ?5";
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT start_ms, end_ms, frequency, samples, level, pairs%s", where);
    if (sq_prepare(q, sql, &sel, err) < 0)
        return -1;
    snprintf(sql, sizeof sql, "DELETE%s", where);
    if (sq_prepare(q, sql, &del, err) < 0 ||
        sq_prepare(q,
                   "INSERT INTO windows(source, start_ms, end_ms, frequency, samples, level,"
                   " uid, pairs, type) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                   &ins, err) < 0)
        return -1;
    sqlite3_stmt *both[] = {sel, del};
    for (int i = 0; i < 2; i++) {
        sqlite3_bind_int64(both[i], 1, g->source);
        sqlite3_bind_int64(both[i], 2, g->bucket);
        sqlite3_bind_int64(both[i], 3, g->bucket + size);
        sqlite3_bind_int(both[i], 4, level);
        sqlite3_bind_text(both[i], 5, g->type, -1, SQLITE_STATIC);
    }
    *m = (merge){.pairs = m->pairs, .cap = m->cap, .one = m->one};
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW)
        if (merge_row(q, m, sel, level, err) < 0)
            return -1;
    if (rc != SQLITE_DONE)
        return sq_fail(q, err, rc, "reading windows");
    if (m->below == 0) /* another compaction did it meanwhile */
        return 0;
    m->n = pairs_normalize(m->pairs, m->n);
    _cleanup_free_ uint8_t *blob = malloc(pairs_bound(m->n));
    size_t len = blob ? pairs_encode(m->pairs, m->n, blob) : 0;
    if (!len)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if ((rc = sqlite3_step(del)) != SQLITE_DONE)
        return sq_fail(q, err, rc, "merging windows");
    int64_t vals[] = {g->source,           m->start, m->end, m->freq, m->samples, level,
                      (int64_t)store_uid()};
    for (int i = 0; i < 7; i++)
        sqlite3_bind_int64(ins, i + 1, vals[i]);
    sqlite3_bind_blob(ins, 8, blob, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(ins, 9, g->type, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(ins)) != SQLITE_DONE)
        return sq_fail(q, err, rc, "merging windows");
    st->merged += (uint64_t)m->rows;
    st->buckets++;
    return 0;
}

static int compact_level(sq *q, int64_t cutoff, int64_t size, int level, store_compact_stats *st,
                         flame_err *err)
{
    _cleanup_free_ group *g = NULL;
    size_t n = 0;
    if (find_groups(q, cutoff / size * size, size, level, &g, &n, err) < 0)
        return -1;
    merge m = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += SLICE) {
        if ((rc = sq_begin(q, err)) < 0)
            break;
        for (size_t k = i; rc == 0 && k < n && k < i + SLICE; k++)
            rc = merge_bucket(q, &g[k], size, level, &m, st, err);
        if (rc == 0)
            rc = sq_commit(q, err);
        else
            sq_rollback(q);
    }
    free(m.pairs);
    pairs_buf_free(&m.one);
    return rc;
}

int sq_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *st,
               flame_err *err)
{
    sq *q = sq_of(s);
    if (sq_usage(q, NULL, &st->disk_before, err) < 0)
        return -1;
    if (pol->retain_ms > 0 && retain(q, now_ms - pol->retain_ms, st, err) < 0)
        return -1;
    /* coarsest first: a window old enough for 10-minute buckets is merged once, not twice */
    for (int i = STORE_LEVELS - 1; i >= 0; i--) {
        const store_level *l = &pol->level[i];
        if (l->bucket_ms > 0 &&
            compact_level(q, now_ms - l->age_ms, l->bucket_ms, i + 1, st, err) < 0)
            return -1;
    }
    /* the dictionary: when windows went, or when it is in many small chunks (each put adds
     * one); otherwise reading every window to learn that nothing is unused is not worth it */
    int64_t chunks;
    if (sq_int(q, "SELECT count(*) FROM dict", &chunks, err) < 0)
        return -1;
    if ((st->deleted || chunks > SQ_CHUNKS_MAX) && sq_gc_stacks(q, &st->stacks_freed, err) < 0)
        return -1;
    /* the hour rollups last: merging buckets and renumbering the dictionary drop the rollups
     * of the hours they change (the triggers), which are built again here */
    if (sq_rollup_build(q, now_ms, &st->rollups, err) < 0)
        return -1;
    sq_release_space(q);
    return sq_usage(q, NULL, &st->disk_after, err);
}
