/* Hour rollups of a SQLite store (docs/STORE.md, "Hour rollups"): per JVM (source) and hour, the
 * sum of the pairs of every window that starts in that hour, with what the readers count of them
 * (windows, samples, first start, last end, sampling rates). A reader of a range adds the rollups
 * of the whole hours inside it and the raw windows only at its edges: the same counts as adding
 * every window, read from a few rows. Triggers on `windows` delete the rollup of any hour whose
 * windows change (a put, a late window, compaction's buckets, retention, the dictionary's
 * renumbering), whoever writes, older docker-flames included; compaction builds the missing
 * ones again. So a rollup is never stale, and an hour without one is read from its windows. */
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* hours (source, hour) rolled up per write transaction: a put waits for a slice at most */
#define ROLLUP_SLICE 16

/* The table, its key (source, hour, the windows' profile type) and the triggers that keep it
 * true (an hour's rollups of every type go with any change of its windows). The triggers use no
 * function at all (trusted_schema is off). */
static const char rollup_schema[] =
    "CREATE TABLE rollups(id INTEGER PRIMARY KEY, source INTEGER NOT NULL,"
    " hour_ms INTEGER NOT NULL, type TEXT NOT NULL DEFAULT 'cpu', windows INTEGER NOT NULL,"
    " samples INTEGER NOT NULL, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,"
    " hz_min INTEGER NOT NULL, hz_max INTEGER NOT NULL, pairs BLOB NOT NULL,"
    " UNIQUE(source, hour_ms, type));"
    "CREATE TRIGGER rollups_put AFTER INSERT ON windows BEGIN DELETE FROM rollups"
    " WHERE source = NEW.source AND hour_ms = NEW.start_ms - NEW.start_ms % 3600000; END;"
    "CREATE TRIGGER rollups_delete AFTER DELETE ON windows BEGIN DELETE FROM rollups"
    " WHERE source = OLD.source AND hour_ms = OLD.start_ms - OLD.start_ms % 3600000; END;"
    "CREATE TRIGGER rollups_update AFTER UPDATE ON windows BEGIN DELETE FROM rollups"
    " WHERE source = OLD.source AND hour_ms = OLD.start_ms - OLD.start_ms % 3600000;"
    " DELETE FROM rollups"
    " WHERE source = NEW.source AND hour_ms = NEW.start_ms - NEW.start_ms % 3600000; END;";

#define HAVE_TABLE "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rollups'"

int sq_rollup_have(sq *q, bool *have, flame_err *err)
{
    int64_t n;
    if (sq_int(q, HAVE_TABLE, &n, err) < 0)
        return -1;
    *have = n > 0;
    return 0;
}

int sq_rollup_schema(sq *q, flame_err *err)
{
    bool have;
    if (sq_rollup_have(q, &have, err) < 0)
        return -1;
    if (have) /* the usual case: no write lock taken */
        return 0;
    if (sq_begin(q, err) < 0)
        return -1;
    /* again under the lock: another process may have made it meanwhile */
    int rc = sq_rollup_have(q, &have, err);
    if (rc == 0 && !have)
        rc = sq_exec(q, rollup_schema, err);
    if (rc < 0) {
        sq_rollback(q);
        return -1;
    }
    return sq_commit(q, err);
}

typedef struct hour {
    int64_t source, hour;
    char type[16]; /* a stored type is one of store_type_of()'s names, far shorter */
} hour;

/* The (source, hour) of windows that started in an hour that has ended, with no rollup. */
static int find_hours(sq *q, int64_t cut, hour **out, size_t *n, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q,
                   "SELECT DISTINCT w.source, w.start_ms - w.start_ms % 3600000, w.type"
                   " FROM windows w WHERE w.start_ms < ?1 AND NOT EXISTS (SELECT 1 FROM rollups r"
                   "  WHERE r.source = w.source AND r.type = w.type"
                   "  AND r.hour_ms = w.start_ms - w.start_ms % 3600000)",
                   &st, err) < 0)
        return -1;
    sqlite3_bind_int64(st, 1, cut);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        hour *rows = sq_rows_grow(*out, *n, &cap, sizeof **out, err);
        if (!rows)
            return -1;
        *out = rows;
        hour *h = &rows[(*n)++];
        *h = (hour){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), ""};
        const char *t = (const char *)sqlite3_column_text(st, 2);
        /* a type no writer of ours stores is left to the windows (never rolled up) */
        if (!t || strlen(t) >= sizeof h->type) {
            (*n)--;
            continue;
        }
        strcpy(h->type, t);
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(q, err, rc, "reading windows");
}

typedef struct sum {
    store_pair *pairs;
    size_t n, cap;
    pairs_buf one;
} sum;

/* One hour's rollup (in the caller's write transaction, so no window changes meanwhile). */
static int roll_one(sq *q, const hour *h, sum *m, uint64_t *built, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *sel = NULL, *ins = NULL;
    if (sq_prepare(q,
                   "SELECT start_ms, end_ms, frequency, samples, pairs FROM windows"
                   " WHERE source = ?1 AND start_ms >= ?2 AND start_ms < ?2 + " STORE_STR(
                       SQ_HOUR_MS) " AND type = ?3",
                   &sel, err) < 0 ||
        sq_prepare(q,
                   "INSERT OR REPLACE INTO rollups(source, hour_ms, type, windows, samples,"
                   " first_ms, last_ms, hz_min, hz_max, pairs)"
                   " VALUES(?1, ?2, ?10, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                   &ins, err) < 0)
        return -1;
    sqlite3_bind_int64(sel, 1, h->source);
    sqlite3_bind_int64(sel, 2, h->hour);
    sqlite3_bind_text(sel, 3, h->type, -1, SQLITE_STATIC);
    store_info info = {0};
    m->n = 0;
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        if (sq_decode(q, sel, 4, &m->one, err) < 0)
            return -1;
        if (sq_pairs_append(&m->pairs, &m->n, &m->cap, m->one.p, m->one.n, err) < 0)
            return -1;
        /* what a reader counts of each window, counted the same way */
        int64_t hz = sqlite3_column_int64(sel, 2);
        store_info_add(&info, 1, (uint64_t)sqlite3_column_int64(sel, 3), hz, hz,
                       sqlite3_column_int64(sel, 0), sqlite3_column_int64(sel, 1));
    }
    if (rc != SQLITE_DONE)
        return sq_fail(q, err, rc, "reading windows");
    if (!info.windows) /* gone meanwhile */
        return 0;
    m->n = pairs_normalize(m->pairs, m->n);
    _cleanup_free_ uint8_t *blob = malloc(pairs_bound(m->n));
    size_t len = blob ? pairs_encode(m->pairs, m->n, blob) : 0;
    if (!len)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int64_t vals[] = {h->source,     h->hour,      (int64_t)info.windows, (int64_t)info.samples,
                      info.first_ms, info.last_ms, info.hz_min,           info.hz_max};
    for (int i = 0; i < 8; i++)
        sqlite3_bind_int64(ins, i + 1, vals[i]);
    sqlite3_bind_blob(ins, 9, blob, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(ins, 10, h->type, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(ins)) != SQLITE_DONE)
        return sq_fail(q, err, rc, "storing a rollup");
    (*built)++;
    return 0;
}

int sq_rollup_build(sq *q, int64_t now_ms, uint64_t *built, flame_err *err)
{
    _cleanup_free_ hour *h = NULL;
    size_t n = 0;
    bool have;
    if (sq_rollup_have(q, &have, err) < 0)
        return -1;
    if (!have) /* made by the writer's open; a handle opened before may not see it */
        return 0;
    if (find_hours(q, now_ms / SQ_HOUR_MS * SQ_HOUR_MS, &h, &n, err) < 0)
        return -1;
    sum m = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += ROLLUP_SLICE) {
        if ((rc = sq_begin(q, err)) < 0)
            break;
        for (size_t k = i; rc == 0 && k < n && k < i + ROLLUP_SLICE; k++)
            rc = roll_one(q, &h[k], &m, built, err);
        if (rc == 0)
            rc = sq_commit(q, err);
        else
            sq_rollback(q);
    }
    free(m.pairs);
    pairs_buf_free(&m.one);
    return rc;
}
