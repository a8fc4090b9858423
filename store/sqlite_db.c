/* The SQLite backend's plumbing (store/sqlite_impl.h): statements, transactions, errors named as
 * what they are (a damaged file, a full disk, a writer that held the store too long), one number
 * from a query, the bytes of data and on disk, a window's pairs read back, free pages given back.
 * Every other sqlite*.c calls here; this calls nothing of them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* pages a slice of incremental_vacuum gives back (4 MiB of 16-KiB pages) */
#define SQ_VACUUM_SLICE "256"

int sq_fail(sq *q, flame_err *err, int rc, const char *what)
{
    const char *why = q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return store_fail(err, STORE_ERR_CORRUPT,
                          "%s: not a docker-flame store, or a damaged one (%s: %s)", q->path, what,
                          why);
    case SQLITE_FULL:
        return store_fail(err, STORE_ERR_IO, "%s: disk full (%s)", q->path, what);
    case SQLITE_IOERR: /* ENOSPC comes as SQLITE_FULL; EFBIG, EIO and the like come here */
        return store_fail(err, STORE_ERR_IO, "%s: write error, is the disk full? (%s: %s)", q->path,
                          what, why);
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        return store_fail(err, STORE_ERR_IO, "%s: %s: %s", q->path, what, why);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return store_fail(err, STORE_ERR_BUSY,
                          "%s: %s: another process held the store for more than %.3g s", q->path,
                          what, q->busy_ms / 1000.0);
    case SQLITE_NOMEM:
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    default:
        return store_fail(err, STORE_ERR_IO, "%s: %s: %s", q->path, what, why);
    }
}

int sq_prepare(sq *q, const char *sql, sqlite3_stmt **st, flame_err *err)
{
    int rc = sqlite3_prepare_v2(q->db, sql, -1, st, NULL);
    return rc == SQLITE_OK ? 0 : sq_fail(q, err, rc, "reading the store");
}

int sq_exec(sq *q, const char *sql, flame_err *err)
{
    int rc = sqlite3_exec(q->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sq_fail(q, err, rc, "updating the store");
}

int sq_begin(sq *q, flame_err *err)
{
    return sq_exec(q, "BEGIN IMMEDIATE", err);
}

int sq_commit(sq *q, flame_err *err)
{
    int rc = sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    sq_rollback(q);
    return sq_fail(q, err, rc, "committing");
}

void sq_rollback(sq *q)
{
    if (!sqlite3_get_autocommit(q->db))
        sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
}

void *sq_rows_grow(void *rows, size_t n, size_t *cap, size_t size, flame_err *err)
{
    if (n < *cap && rows)
        return rows;
    size_t nc = *cap ? *cap * 2 : 256;
    void *p = NULL;
    /* a caller that skipped rows, or a size whose doubling would wrap: refused, not wrapped */
    if (size > 0 && n <= *cap && nc > *cap && nc <= SIZE_MAX / size)
        p = realloc(rows, nc * size);
    if (!p) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        return NULL;
    }
    *cap = nc;
    return p;
}

int sq_pairs_append(store_pair **pairs, size_t *n, size_t *cap, const store_pair *add, size_t k,
                    flame_err *err)
{
    if (*n + k > *cap) {
        size_t nc = (*n + k) * 2;
        store_pair *np =
            nc / 2 >= *n && nc <= SIZE_MAX / sizeof *np ? realloc(*pairs, nc * sizeof *np) : NULL;
        if (!np)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        *pairs = np;
        *cap = nc;
    }
    if (k)
        memcpy(*pairs + *n, add, k * sizeof *add);
    *n += k;
    return 0;
}

int sq_int(sq *q, const char *sql, int64_t *out, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q, sql, &st, err) < 0)
        return -1;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(q, err, rc, "reading the store");
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return 0;
}

int sq_usage(sq *q, uint64_t *data, uint64_t *disk, flame_err *err)
{
    int64_t pages, page_size, bytes;
    if (sq_int(q, "PRAGMA page_count", &pages, err) < 0 ||
        sq_int(q, "PRAGMA page_size", &page_size, err) < 0)
        return -1;
    /* what the windows hold, whatever the page size and the tables' fixed pages: length() of a
     * blob reads its header, not its bytes */
    if (data && sq_int(q,
                       "SELECT (SELECT coalesce(sum(length(pairs)), 0) FROM windows) +"
                       " (SELECT coalesce(sum(length(chunk)), 0) FROM dict)",
                       &bytes, err) < 0)
        return -1;
    _cleanup_free_ char *wal = NULL;
    struct stat st;
    uint64_t wal_bytes = 0;
    if (asprintf(&wal, "%s-wal", q->path) >= 0 && stat(wal, &st) == 0)
        wal_bytes = (uint64_t)st.st_size;
    else if (!wal)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (data)
        *data = (uint64_t)bytes;
    if (disk)
        *disk = (uint64_t)(pages * page_size) + wal_bytes;
    return 0;
}

int sq_decode(sq *q, sqlite3_stmt *st, int col, pairs_buf *b, flame_err *err)
{
    int rc = pairs_decode(sqlite3_column_blob(st, col), (size_t)sqlite3_column_bytes(st, col), b);
    if (rc == -2)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    return rc < 0 ? store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (a window's stacks)",
                               q->path)
                  : 0;
}

void sq_release_space(sq *q)
{
    /* Free pages go back to the file system a slice at a time (each its own short write
     * transaction: a put waits for a slice, not for all of it); then a checkpoint that never
     * waits: TRUNCATE with no busy handler, which is PASSIVE as soon as a reader or a writer
     * is in the way (with one, a TRUNCATE checkpoint waited for every reader, up to the busy
     * timeout, writers held back meanwhile). A WAL left long is reset by a later write once no
     * reader needs it, and journal_size_limit then cuts the file. Best effort. */
    int64_t free_pages = 0, before = -1;
    flame_err quiet = FLAME_ERR_INIT;
    while (sq_int(q, "PRAGMA freelist_count", &free_pages, &quiet) == 0 && free_pages > 0 &&
           free_pages != before) {
        before = free_pages;
        if (sqlite3_exec(q->db, "PRAGMA incremental_vacuum(" SQ_VACUUM_SLICE ")", NULL, NULL,
                         NULL) != SQLITE_OK)
            break;
    }
    sqlite3_busy_timeout(q->db, 0);
    sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(q->db, q->busy_ms);
}

void sq_busy_timeout(sq *q, int ms)
{
    q->busy_ms = ms;
    sqlite3_busy_timeout(q->db, ms);
}
