/* What the ClickHouse spool asks of a SQLite store: its oldest windows read back whole (labels
 * and a profile each) to be sent on, their deletion once sent, and a bound on its size that drops
 * the oldest windows first (the newest are the ones a user is about to look at). */
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

void sq_batch_free(sq_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        profile_free((profile *)b->w[i].stacks);
        free(b->labels[i]);
    }
    free(b->w);
    free(b->labels);
    free(b->ids);
    *b = (sq_batch){0};
}

/* Labels of row st (columns 1..6, the type 13) into one block; w's strings point into it. */
static char *copy_labels(sqlite3_stmt *st, store_window *w)
{
    static const int cols[] = {1, 2, 3, 4, 6, 13};
    size_t len = 0;
    for (int i = 0; i < 6; i++)
        len += (size_t)sqlite3_column_bytes(st, cols[i]) + 1;
    char *block = malloc(len), *o = block;
    if (!block)
        return NULL;
    const char **dst[] = {&w->host,  &w->container_id, &w->container_name,
                          &w->image, &w->jvm_version,  &w->type};
    for (int i = 0; i < 6; i++) {
        const unsigned char *t = sqlite3_column_text(st, cols[i]);
        size_t n = (size_t)sqlite3_column_bytes(st, cols[i]);
        if (n)
            memcpy(o, t, n);
        o[n] = 0;
        *dst[i] = o;
        o += n + 1;
    }
    return block;
}

static int read_window(sq *q, sqlite3_stmt *st, sq_batch *b, flame_err *err)
{
    size_t i = b->n;
    store_window *w = &b->w[i];
    *w = (store_window){.jvm_pid = sqlite3_column_int64(st, 5),
                        .start_ms = sqlite3_column_int64(st, 7),
                        .end_ms = sqlite3_column_int64(st, 8),
                        .frequency = sqlite3_column_int64(st, 9),
                        .samples = (uint64_t)sqlite3_column_int64(st, 10),
                        .uid = (uint64_t)sqlite3_column_int64(st, 12)};
    b->ids[i] = sqlite3_column_int64(st, 0);
    profile *p = profile_new();
    b->labels[i] = copy_labels(st, w);
    w->stacks = p;
    b->n++; /* owned by the batch from here on, whatever follows */
    if (!p || !b->labels[i])
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    pairs_buf pb = {0};
    int rc = sq_decode(q, st, 11, &pb, err);
    if (rc == 0)
        rc = sq_add_stacks(q, pb.p, pb.n, p, err);
    pairs_buf_free(&pb);
    return rc;
}

int sq_take(store *s, size_t max, sq_batch *out, flame_err *err)
{
    sq *q = sq_of(s);
    *out = (sq_batch){0};
    out->w = calloc(max, sizeof *out->w);
    out->labels = calloc(max, sizeof *out->labels);
    out->ids = calloc(max, sizeof *out->ids);
    if (!out->w || !out->labels || !out->ids)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_exec(q, "BEGIN", err) < 0)
        return -1;
    int rc = sq_dict_sync(q, err);
    if (rc == 0)
        rc = sq_prepare(q,
                        "SELECT w.id, s.host, s.container_id, s.container_name, s.image,"
                        " s.jvm_pid, s.jvm_version, w.start_ms, w.end_ms, w.frequency,"
                        " w.samples, w.pairs, w.uid, w.type FROM windows w JOIN sources s"
                        " ON s.id = w.source"
                        " ORDER BY w.start_ms, w.id LIMIT ?1",
                        &st, err);
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, (int64_t)max);
        int r;
        while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW)
            rc = read_window(q, st, out, err);
        if (rc == 0 && r != SQLITE_DONE)
            rc = sq_fail(q, err, r, "reading the spool");
    }
    sq_rollback(q);
    return rc;
}

/* Delete windows by id (one transaction), then the stacks they leave unused. */
static int drop_where(sq *q, const char *sql, const int64_t *vals, size_t n, uint64_t *gone,
                      flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *del = NULL;
    if (sq_begin(q, err) < 0)
        return -1;
    int rc = sq_prepare(q, sql, &del, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_reset(del);
        sqlite3_bind_int64(del, 1, vals[i]);
        int r = sqlite3_step(del);
        rc = r == SQLITE_DONE ? 0 : sq_fail(q, err, r, "deleting from the spool");
        if (gone)
            *gone += rc == 0 ? (uint64_t)sqlite3_changes(q->db) : 0;
    }
    if (rc < 0) {
        sq_rollback(q);
        return -1;
    }
    if (sq_commit(q, err) < 0)
        return -1;
    return sq_gc_stacks(q, NULL, err);
}

int sq_drop(store *s, const int64_t *ids, size_t n, flame_err *err)
{
    return drop_where(sq_of(s), "DELETE FROM windows WHERE id = ?1", ids, n, NULL, err);
}

int sq_count(store *s, uint64_t *windows, flame_err *err)
{
    sq *q = sq_of(s);
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q, "SELECT count(*) FROM windows", &st, err) < 0)
        return -1;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW)
        return sq_fail(q, err, rc, "reading the spool");
    *windows = (uint64_t)sqlite3_column_int64(st, 0);
    return 0;
}

int sq_shrink(store *s, uint64_t max, uint64_t *dropped, flame_err *err)
{
    sq *q = sq_of(s);
    uint64_t used, windows; /* used: the data, not the file (its fixed pages are not ours) */
    while (sq_usage(q, &used, NULL, err) == 0 && sq_count(s, &windows, err) == 0) {
        if (used <= max || windows == 0)
            return 0;
        /* the oldest tenth at a time: few passes, and never more than needed by much */
        int64_t k = (int64_t)(windows / 10 + 1);
        if (drop_where(q,
                       "DELETE FROM windows WHERE id IN (SELECT id FROM windows"
                       " ORDER BY start_ms, id LIMIT ?1)",
                       &k, 1, dropped, err) < 0)
            return -1;
        sq_release_space(q);
    }
    return -1;
}
