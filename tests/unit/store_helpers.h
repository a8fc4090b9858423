/* What the store's unit tests share: a look at a store's file with SQLite itself, beside the
 * store's own code (a count, a version), and SQL run on it to make a store of another shape (a
 * dropped column, an older version). Static inline: each test uses some of them. */
#pragma once
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

/* One integer from sql on the file at path, opened read-only (so looking never changes the
 * file): the first column of the first row, 0 when there is no row, -1 when it fails (said on a
 * TAP comment line). */
static inline int64_t sql_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        int rc = sqlite3_step(st);
        n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : rc == SQLITE_DONE ? 0 : -1;
        sqlite3_finalize(st);
    } else {
        printf("# %s: %s\n", sql, db ? sqlite3_errmsg(db) : "out of memory");
    }
    sqlite3_close(db);
    return n;
}

/* Run sql (statements without results) on the file at path: SQLITE_OK, or the error code (said
 * on a TAP comment line). */
static inline int sql_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char *msg = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        printf("# %s: %s\n", sql, msg ? msg : db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc;
}
