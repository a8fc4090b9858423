/* Opening a SQLite store that may not be ours: a reader (store_open_read: show, ls, diff, a Tab)
 * writes nothing, not even a pragma, to another program's database, an empty file or a store;
 * a missing one is not created; the application id is looked at before anything else, by
 * writers too; and a store's schema is data, never code (trusted_schema off). */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/sqlite_impl.h"
#include "tests/unit/store_helpers.h"
#include "tests/unit/tap.h"

#define T0 1795534200000LL

static int sql(const char *path, const char *q)
{
    sqlite3 *db;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, q, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

/* The first column of the first row of q, as text (static buffer). */
static const char *sql_text(const char *path, const char *q)
{
    static char out[256];
    sqlite3 *db;
    sqlite3_stmt *st;
    out[0] = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return out;
}

/* The file's bytes (malloc'd), *n its size; NULL when it cannot be read. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int k;
    while ((k = fgetc(f)) != EOF)
        fputc(k, m);
    fclose(m);
    fclose(f);
    *n = len;
    return buf;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_foreign(void)
{
    char path[512], wal[520];
    snprintf(path, sizeof path, "%s", in_scratch("songs.db"));
    snprintf(wal, sizeof wal, "%s-wal", path);
    sql(path, "PRAGMA journal_mode = DELETE; CREATE TABLE songs(title TEXT);"
              "INSERT INTO songs VALUES('a')");
    size_t n0 = 0, n1 = 0;
    char *before = slurp(path, &n0);
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    ok(store_open_read(path, &s, &e) < 0 && e.code == FLAME_EXIT_STORE &&
           e.detail == STORE_ERR_CORRUPT && strstr(e.msg, "not a docker-flame store"),
       "another program's database, opened to read: refused (%s)", e.msg);
    char *after = slurp(path, &n1);
    ok(before && after && n0 == n1 && !memcmp(before, after, n0), "its bytes are untouched");
    free(after);
    is_str(sql_text(path, "PRAGMA journal_mode"), "delete", "its journal mode too (not WAL)");
    ok(!exists(wal), "no WAL file made beside it");

    /* a writer (the recorder, prune) looks at the application id before any pragma as well */
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_open(path, &s, &e) < 0 && e.detail == STORE_ERR_CORRUPT,
       "opened to write: refused too (%s)", e.msg);
    after = slurp(path, &n1);
    ok(before && after && n0 == n1 && !memcmp(before, after, n0), "its bytes are untouched");
    free(after);
    is_str(sql_text(path, "PRAGMA journal_mode"), "delete", "still not WAL");
    is_str(sql_text(path, "SELECT group_concat(name) FROM sqlite_master"), "songs",
           "no table of ours in it");
    free(before);
}

static void test_empty_and_missing(void)
{
    const char *path = in_scratch("empty.db");
    fclose(fopen(path, "w"));
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    ok(store_open_read(path, &s, &e) < 0 && e.code == FLAME_EXIT_STORE &&
           strstr(e.msg, "an empty file, not a docker-flame store") && !strchr(e.msg, '\n'),
       "an empty file, opened to read: refused (%s)", e.msg);
    struct stat st;
    ok(stat(path, &st) == 0 && st.st_size == 0, "and it stays empty");

    char missing[512];
    snprintf(missing, sizeof missing, "%s", in_scratch("sub/p.db"));
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_open_read(missing, &s, &e) < 0 && e.detail == STORE_ERR_MISSING &&
           e.code == FLAME_EXIT_EMPTY && strstr(e.msg, "no store there"),
       "a missing store, opened to read: nothing stored, exit %d (%s)", FLAME_EXIT_EMPTY, e.msg);
    ok(!exists(in_scratch("sub")), "neither it nor its directory is made");
    e = (flame_err)FLAME_ERR_INIT;
    setenv("XDG_DATA_HOME", in_scratch("xdg"), 1);
    ok(store_open_read(NULL, &s, &e) < 0 && e.detail == STORE_ERR_MISSING,
       "the default store, not there yet: the same (%s)", e.msg);
    ok(!exists(in_scratch("xdg")), "its directory is not made either");
}

static void test_ours(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s", in_scratch("ours.db"));
    store *w = NULL, *r = NULL;
    flame_err e = FLAME_ERR_INIT;
    profile *p = folded("main;a 3\nmain;b 2");
    store_window win = window_of("web", 1, T0, p);
    is_int(store_open(path, &w, &e), 0, "a store");
    is_int(store_put(w, &win, &e), 0, "a window in it");
    store_close(w);
    size_t n0 = 0, n1 = 0;
    char *before = slurp(path, &n0);
    is_int(store_open_read(path, &r, &e), 0, "opened to read");
    profile *out = profile_new();
    store_info info = {0};
    store_query q = {.since_ms = 0, .until_ms = INT64_MAX};
    ok(store_profile(r, &q, out, &info, &e) == 0 && info.windows == 1 && profile_total(out) == 5,
       "and read");
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_put(r, &win, &e) < 0 && e.detail == STORE_ERR_IO, "a put through it fails (%s)",
       e.msg);
    store_close(r);
    char *after = slurp(path, &n1);
    ok(before && after && n0 == n1 && !memcmp(before, after, n0), "the file is untouched");
    free(before);
    free(after);
    profile_free(out);
    profile_free(p);
}

/* A store whose schema calls a function that is not innocuous (a view made by someone else in
 * place of our table): never run, with trusted_schema off; the read fails instead. */
static void test_schema_is_data(void)
{
    const char *path = in_scratch("hostile.db");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    profile *p = folded("main;a 3");
    store_window win = window_of("web", 1, T0, p);
    store_open(path, &s, &e);
    store_put(s, &win, &e);
    store_close(s);
    profile_free(p);
    is_int(sql(path, "ALTER TABLE sources RENAME TO real_sources;"
                     "CREATE VIEW sources AS SELECT *, fts5_source_id() AS x FROM real_sources"),
           SQLITE_OK, "a store with a view that calls fts5_source_id() in place of a table");
    for (int reader = 0; reader < 2; reader++) {
        e = (flame_err)FLAME_ERR_INIT;
        int rc = reader ? store_open_read(path, &s, &e) : store_open(path, &s, &e);
        profile *out = profile_new();
        store_info info = {0};
        store_query q = {.since_ms = 0, .until_ms = INT64_MAX};
        if (rc == 0)
            rc = store_profile(s, &q, out, &info, &e);
        ok(rc < 0 && strstr(e.msg, "unsafe use of fts5_source_id"),
           "%s: the view's function is refused (%s)", reader ? "a reader" : "a writer", e.msg);
        store_close(s);
        profile_free(out);
    }
}

int main(void)
{
    scratch_make();
    test_foreign();
    test_empty_and_missing();
    test_ours();
    test_schema_is_data();
    scratch_remove();
    return tap_done();
}
