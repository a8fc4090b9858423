/* Helpers of the store's unit tests: a scratch directory removed at the end, windows made of a
 * few folded stacks, and the totals of a profile; a look at a store's file with SQLite itself
 * (a count, a version) and SQL run on it to make a store of another shape (a dropped column,
 * an older version). Header-only, one test program each. */
#pragma once
#include <ftw.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame/profile.h"
#include "store/store.h"
#include "tests/unit/render_test_util.h"

static char scratch[256];

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static void scratch_make(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/flame-store-test.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void scratch_remove(void)
{
    if (scratch[0])
        nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* scratch/name, in a static buffer (one at a time) */
static inline const char *in_scratch(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", scratch, name);
    return p;
}

/* A profile of "stack count" lines separated by '\n'. */
static inline profile *folded(const char *text)
{
    profile *p = profile_new();
    flame_err e = FLAME_ERR_INIT;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (n && profile_add_line(p, l, n, &e) < 0) {
            printf("# bad test line: %.*s\n", (int)n, l);
            exit(1);
        }
        l += n + (nl ? 1 : 0);
    }
    return p;
}

/* A window of container name (id "<name>-id"), JVM pid, from start for 10 s. */
static inline store_window window_of(const char *name, int64_t pid, int64_t start_ms,
                                     const profile *p)
{
    static char ids[8][80];
    static int k;
    char *id = ids[k++ % 8];
    snprintf(id, 80, "%s-0123456789abcdef", name);
    return (store_window){.host = "host-a",
                          .container_id = id,
                          .container_name = name,
                          .image = "eclipse-temurin:17",
                          .jvm_pid = pid,
                          .jvm_version = "17.0.9",
                          .start_ms = start_ms,
                          .end_ms = start_ms + 10000,
                          .frequency = 99,
                          .samples = (uint64_t)profile_total(p),
                          .stacks = p};
}

/* The folded text of p (sorted), malloc'd. */
static inline char *folded_text(const profile *p)
{
    return out_str(out_folded, p, NULL, NULL);
}

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
