/* The SQLite backend's readers: the windows of a query merged into one profile (counts summed
 * by stack id, then each stack's text made once from the dictionary), the timeline of samples
 * per window, and the listing of what the store holds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* ---- readers ---- */

/* The windows of a query: ?1 since, ?2 until, ?3 container, ?4 host, ?5 pid, ?6 the longest
 * window (so the index on start_ms bounds the scan), ?7 the shortest id prefix, ?8 the profile
 * type (NULL = every type). "@W" is the windows table: a version 2 store read as it is has no
 * type column, and its windows are all cpu. */
#define SQ_SOURCE                                                                                  \
    " AND (?3 IS NULL OR s.container_name = ?3 OR s.container_id = ?3"                             \
    "  OR (length(?3) >= ?7 AND substr(s.container_id, 1, length(?3)) = ?3))"                      \
    " AND (?4 IS NULL OR s.host = ?4) AND (?5 = 0 OR s.jvm_pid = ?5)"
#define SQ_FROM                                                                                    \
    " FROM @W w JOIN sources s ON s.id = w.source"                                                 \
    " WHERE w.start_ms < ?2 AND w.start_ms > ?1 - ?6 AND w.end_ms > ?1" SQ_SOURCE                  \
    " AND (?8 IS NULL OR w.type = ?8)"
/* The hour rollups of the whole hours [?9, ?10) of the query's JVMs and type, and the windows
 * of the query that none of them holds (rollups are made only by a writer, which gives the
 * windows their type column first). */
#define SQ_ROLLUPS                                                                                 \
    " FROM rollups w JOIN sources s ON s.id = w.source"                                            \
    " WHERE w.type = ?8 AND w.hour_ms >= ?9 AND w.hour_ms < ?10" SQ_SOURCE
#define SQ_NOT_ROLLED                                                                              \
    " AND NOT (w.start_ms >= ?9 AND w.start_ms < ?10 AND EXISTS (SELECT 1 FROM rollups r"          \
    "  WHERE r.source = w.source AND r.hour_ms = w.start_ms - w.start_ms % 3600000"                \
    "  AND r.type = w.type))"

/* sql holds SQ_FROM (its "@W" becomes the windows table) or SQ_ROLLUPS; all_types: a NULL
 * type means every type (else cpu). */
static int prepare_query(sq *q, const char *sql, const store_query *qq, bool all_types,
                         sqlite3_stmt **st, flame_err *err)
{
    const char *at = strstr(sql, "@W"),
               *table = q->has_type ? "windows" : "(SELECT *, 'cpu' AS type FROM windows)";
    _cleanup_free_ char *text = malloc(strlen(sql) + strlen(table) + 1);
    if (!text)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (at)
        sprintf(text, "%.*s%s%s", (int)(at - sql), sql, table, at + 2);
    else
        strcpy(text, sql);
    if (sq_prepare(q, text, st, err) < 0)
        return -1;
    sqlite3_bind_int64(*st, 1, qq ? qq->since_ms : 0);
    sqlite3_bind_int64(*st, 2, qq ? qq->until_ms : INT64_MAX);
    if (qq && qq->container)
        sqlite3_bind_text(*st, 3, qq->container, -1, SQLITE_STATIC);
    if (qq && qq->host)
        sqlite3_bind_text(*st, 4, qq->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(*st, 5, qq ? qq->jvm_pid : 0);
    sqlite3_bind_int64(*st, 6, STORE_MAX_WINDOW_MS);
    sqlite3_bind_int64(*st, 7, STORE_ID_PREFIX_MIN);
    const char *type = qq ? qq->type : NULL;
    if (type || !all_types)
        sqlite3_bind_text(*st, 8, store_type_of(type), -1, SQLITE_STATIC);
    return 0;
}

static int add_text(profile *out, const void *text, int len, uint64_t count, int64_t id, sq *q,
                    flame_err *err)
{
    if (len > 0 && profile_add(out, text, (size_t)len, (double)count, PROFILE_ONE_COLUMN) == 0)
        return 0;
    if (len > 0 && errno == ENOMEM)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    return store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (stack %lld is not a stack)",
                      q->path, (long long)id);
}

int sq_add_stacks(sq *q, const store_pair *pairs, size_t n, profile *out, flame_err *err)
{
    _cleanup_free_ char *text = NULL;
    size_t cap = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t id = pairs[i].id;
        int t = id <= UINT32_MAX ? dict_stack_text(&q->d, (uint32_t)id, &text, &cap, &len) : 0;
        if (t < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        if (t == 0)
            return store_fail(err, STORE_ERR_CORRUPT,
                              "%s: damaged store (a window names stack %llu, which is missing)",
                              q->path, (unsigned long long)id);
        if (add_text(out, text, (int)len, pairs[i].count, (int64_t)id, q, err) < 0)
            return -1;
    }
    return 0;
}

/* Add the pairs of every row of st (column 0; then samples, first start, last end, lowest and
 * highest rate, windows) into acc. */
static int sum_rows(sq *q, sqlite3_stmt *st, uint64_t *acc, int64_t maxid, store_info *info,
                    flame_err *err)
{
    int rc;
    pairs_buf b = {0};
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sq_decode(q, st, 0, &b, err) < 0 || (b.n && b.p[b.n - 1].id > (uint64_t)maxid)) {
            pairs_buf_free(&b);
            return err->code ? -1
                             : store_fail(err, STORE_ERR_CORRUPT,
                                          "%s: damaged store (a window names no stack)", q->path);
        }
        for (size_t i = 0; i < b.n; i++)
            acc[b.p[i].id] += b.p[i].count;
        store_info_add(info, (uint64_t)sqlite3_column_int64(st, 6),
                       (uint64_t)sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 4),
                       sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 2),
                       sqlite3_column_int64(st, 3));
    }
    pairs_buf_free(&b);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, err, rc, "reading windows");
}

static int sum_windows(sq *q, const store_query *qq, profile *out, store_info *info, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL, *roll = NULL;
    bool have = false;
    store_query all = {.until_ms = INT64_MAX};
    if (!qq)
        qq = &all;
    if (sq_dict_sync(q, err) < 0 || sq_rollup_have(q, &have, err) < 0)
        return -1;
    /* the whole hours inside [since, until): their windows all overlap the range */
    int64_t since = qq->since_ms > 0 ? qq->since_ms : 0;
    int64_t h0 = since / SQ_HOUR_MS * SQ_HOUR_MS, h1 = qq->until_ms / SQ_HOUR_MS * SQ_HOUR_MS;
    if (h0 < since)
        h0 += SQ_HOUR_MS;
    /* a store without the type column (a version 2 one, read as it is) has no rollups */
    bool use = have && q->has_type && h0 < h1;
    if (prepare_query(q,
                      use ? "SELECT w.pairs, w.samples, w.start_ms, w.end_ms, w.frequency,"
                            " w.frequency, 1" SQ_FROM SQ_NOT_ROLLED
                          : "SELECT w.pairs, w.samples, w.start_ms, w.end_ms, w.frequency,"
                            " w.frequency, 1" SQ_FROM,
                      qq, false, &st, err) < 0)
        return -1;
    if (use) {
        if (prepare_query(q,
                          "SELECT w.pairs, w.samples, w.first_ms, w.last_ms, w.hz_min, w.hz_max,"
                          " w.windows" SQ_ROLLUPS,
                          qq, false, &roll, err) < 0)
            return -1;
        sqlite3_stmt *both[] = {st, roll};
        for (int i = 0; i < 2; i++) {
            sqlite3_bind_int64(both[i], 9, h0);
            sqlite3_bind_int64(both[i], 10, h1);
        }
    }
    int64_t maxid = q->d.nstacks;
    /* counts by stack id: ids are dense (the dictionary's), so an array is the map; the sums
     * are the same whichever rows (windows, rollups) bring them */
    _cleanup_free_ uint64_t *acc = calloc((size_t)maxid + 1, sizeof *acc);
    if (!acc)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if ((use && sum_rows(q, roll, acc, maxid, info, err) < 0) ||
        sum_rows(q, st, acc, maxid, info, err) < 0)
        return -1;
    size_t n = 0;
    for (int64_t id = 1; id <= maxid; id++)
        n += acc[id] != 0;
    _cleanup_free_ store_pair *pairs = malloc((n ? n : 1) * sizeof *pairs);
    if (!pairs)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    n = 0;
    for (int64_t id = 1; id <= maxid; id++)
        if (acc[id])
            pairs[n++] = (store_pair){(uint64_t)id, acc[id]};
    return sq_add_stacks(q, pairs, n, out, err);
}

int sq_profile(store *s, const store_query *qq, profile *out, store_info *info, flame_err *err)
{
    sq *q = sq_of(s);
    /* one read transaction: a compaction running meanwhile cannot change the dictionary
     * between reading the windows and naming their stacks */
    if (sq_exec(q, "BEGIN", err) < 0)
        return -1;
    int rc = sum_windows(q, qq, out, info, err);
    sq_rollback(q);
    return rc;
}

int sq_timeline(store *s, const store_query *qq, store_series_list *out, flame_err *err)
{
    sq *q = sq_of(s);
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (prepare_query(q,
                      "SELECT s.host, s.container_id, s.container_name, s.jvm_pid, w.start_ms,"
                      " w.end_ms, w.samples, w.frequency" SQ_FROM
                      " ORDER BY s.host, s.container_id, s.jvm_pid, w.start_ms",
                      qq, false, &st, err) < 0)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_point pt = {.start_ms = sqlite3_column_int64(st, 4),
                          .end_ms = sqlite3_column_int64(st, 5),
                          .samples = (uint64_t)sqlite3_column_int64(st, 6),
                          .frequency = sqlite3_column_int64(st, 7)};
        if (store_timeline_add(out, (const char *)sqlite3_column_text(st, 0),
                               (const char *)sqlite3_column_text(st, 1),
                               (const char *)sqlite3_column_text(st, 2),
                               sqlite3_column_int64(st, 3), &pt) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(q, err, rc, "reading windows");
}

/* Bytes a window row takes beyond its pairs (the row's numbers, its index entry): what ls
 * counts as the window's own, with the pairs. */
#define SQ_ROW_BYTES 32

int sq_list(store *s, const store_query *qq, store_listing *out, flame_err *err)
{
    sq *q = sq_of(s);
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    store_query all = {.container = qq ? qq->container : NULL,
                       .host = qq ? qq->host : NULL,
                       .since_ms = 0,
                       .until_ms = INT64_MAX,
                       .jvm_pid = qq ? qq->jvm_pid : 0,
                       .type = qq ? qq->type : NULL};
    int64_t own_all, stacks;
    uint64_t disk;
    /* one read transaction: the shares below are of the same store as the rows */
    if (sq_exec(q, "BEGIN", err) < 0)
        return -1;
    int rc = sq_int(q,
                    "SELECT coalesce(sum(length(pairs)), 0) + " STORE_STR(
                        SQ_ROW_BYTES) " * count(*) FROM windows",
                    &own_all, err);
    if (rc == 0)
        rc = sq_usage(q, NULL, &disk, err);
    /* the dictionary's stacks: the last chunk's header says how many (no chunk read whole) */
    if (rc == 0)
        rc = sq_dict_count(q, &stacks, err);
    if (rc == 0)
        rc = prepare_query(q,
                           "SELECT s.host, s.container_id, s.container_name, s.image,"
                           " min(w.start_ms), max(w.end_ms), count(*), sum(w.samples),"
                           " sum(length(w.pairs)) + " STORE_STR(
                               SQ_ROW_BYTES) " * count(*), s.jvm_pid, s.jvm_version,"
                                             " w.type" SQ_FROM
                                             " GROUP BY s.host, s.container_id, s.container_name,"
                                             " s.image, s.jvm_pid, s.jvm_version, w.type"
                                             " ORDER BY max(w.end_ms) DESC, s.jvm_pid, w.type",
                           &all, true, &st, err);
    store_share share = {.total = (uint64_t)own_all, .disk = disk};
    int r = SQLITE_DONE;
    while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
        store_entry e = {(char *)sqlite3_column_text(st, 0),
                         (char *)sqlite3_column_text(st, 1),
                         (char *)sqlite3_column_text(st, 2),
                         (char *)sqlite3_column_text(st, 3),
                         sqlite3_column_int64(st, 4),
                         sqlite3_column_int64(st, 5),
                         (uint64_t)sqlite3_column_int64(st, 6),
                         (uint64_t)sqlite3_column_int64(st, 7),
                         store_share_of(&share, (uint64_t)sqlite3_column_int64(st, 8)),
                         sqlite3_column_int64(st, 9),
                         (char *)sqlite3_column_text(st, 10),
                         (char *)sqlite3_column_text(st, 11)};
        if (store_listing_add(out, &e) < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (rc == 0 && r != SQLITE_DONE)
        rc = sq_fail(q, err, r, "reading windows");
    sq_rollback(q);
    if (rc < 0)
        return -1;
    out->stacks = (uint64_t)stacks;
    out->disk_bytes = disk;
    return 0;
}
