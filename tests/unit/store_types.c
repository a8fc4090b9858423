/* Profile types in the SQLite store (store/store.h: store_window.type, store_query.type): each
 * window keeps its type, readers select one (cpu by default), ls lists each type, compaction
 * never merges two types, the spool's copy keeps it, a bad type is refused; and a store of
 * version 2 (no type column) is read as all-cpu by a reader that changes nothing, then migrated by
 * a writer (its windows cpu), as is a store of version 3 that lacks the column. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/store.h"
#include "tests/unit/store_helpers.h"
#include "tests/unit/tap.h"

#define T0 1795534200000LL /* 2026-11-24 15:30:00 UTC, a whole minute */
#define MIN (60LL * 1000)
#define HOUR (60 * MIN)

/* The merged folded text of container's windows of type (NULL: the default) in [since, until). */
static char *query_type(store *s, const char *type, int64_t since, int64_t until, store_info *info)
{
    store_query q = {.container = "web", .since_ms = since, .until_ms = until, .type = type};
    profile *p = profile_new();
    flame_err e = FLAME_ERR_INIT;
    *info = (store_info){0};
    char *t = store_profile(s, &q, p, info, &e) == 0 ? folded_text(p) : NULL;
    if (!t)
        printf("# %s\n", e.msg);
    profile_free(p);
    return t;
}

static int put_typed(store *s, const char *type, int64_t start, const char *text)
{
    profile *p = folded(text);
    store_window w = window_of("web", 1, start, p);
    w.type = type;
    flame_err e = FLAME_ERR_INIT;
    int rc = store_put(s, &w, &e);
    if (rc != 0)
        printf("# put %s: %s\n", type ? type : "(null)", e.msg);
    profile_free(p);
    return rc;
}

/* "type:windows" of each entry of the listing, in its order, e.g. "cpu:2 wall:1 ". */
static char *types_listed(store *s)
{
    static char out[256];
    store_listing l = {0};
    flame_err e = FLAME_ERR_INIT;
    out[0] = 0;
    if (store_list(s, NULL, &l, &e) < 0) {
        printf("# ls: %s\n", e.msg);
        return out;
    }
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s:%llu ", l.e[i].type,
                              (unsigned long long)l.e[i].windows);
    store_listing_free(&l);
    return out;
}

static char *slurp_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    return b;
}

static void test_types(void)
{
    const char *path = in_scratch("types.db");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    is_int(store_open(path, &s, &e), 0, "a new store (%s)", e.msg);
    ok(put_typed(s, NULL, T0, "main;burn 7\n") == 0 &&
           put_typed(s, "cpu", T0 + 10000, "main;burn 3\n") == 0 &&
           put_typed(s, "wall", T0, "main;sleep 4000000\nmain;burn 70000\n") == 0 &&
           put_typed(s, "offcpu", T0, "main;read 900\n") == 0,
       "windows of cpu (no type and \"cpu\"), wall and offcpu at the same time");
    store_info info;
    char *t = query_type(s, NULL, T0, T0 + MIN, &info);
    ok(t && !strcmp(t, "main;burn 10\n") && info.windows == 2,
       "a query without a type reads the cpu windows alone (%s)", t ? t : "");
    free(t);
    t = query_type(s, "wall", T0, T0 + MIN, &info);
    ok(t && !strcmp(t, "main;burn 70000\nmain;sleep 4000000\n") && info.windows == 1,
       "--type wall reads the wall window alone (%s)", t ? t : "");
    free(t);
    t = query_type(s, "alloc", T0, T0 + MIN, &info);
    ok(t && !*t && info.windows == 0, "a type never stored: nothing");
    free(t);
    is_str(types_listed(s), "cpu:2 offcpu:1 wall:1 ", "ls: an entry per type");

    store_query q = {.container = "web", .since_ms = T0, .until_ms = T0 + MIN, .type = "wall"};
    store_series_list tl = {0};
    ok(store_timeline(s, &q, &tl, &e) == 0 && tl.n == 1 && tl.series[0].n == 1 &&
           tl.series[0].pts[0].samples == 4070000,
       "the timeline of wall: its one window");
    store_timeline_free(&tl);

    ok(put_typed(s, "Wall", T0, "main;x 1\n") < 0 && put_typed(s, "wall; DROP", T0, "x 1\n") < 0,
       "a type that is not a lowercase word is refused");

    /* compaction merges windows an hour old into minutes: never two types into one */
    store_close(s);
    s = NULL;
    path = in_scratch("types-compact.db");
    store_open(path, &s, &e);
    int64_t old = T0 - 2 * HOUR;
    for (int i = 0; i < 6; i++) {
        put_typed(s, "cpu", old + i * 10000, "main;burn 2\n");
        put_typed(s, "wall", old + i * 10000, "main;sleep 500\n");
    }
    store_policy pol;
    store_policy_default(&pol);
    pol.retain_ms = 0;
    store_compact_stats st = {0};
    is_int(store_compact(s, T0, &pol, &st, &e), 0, "compaction (%s)", e.msg);
    is_int(st.buckets, 2, "two buckets: a minute of cpu, a minute of wall");
    t = query_type(s, NULL, old, old + MIN, &info);
    ok(t && !strcmp(t, "main;burn 12\n") && info.windows == 1, "cpu's bucket holds cpu (%s)",
       t ? t : "");
    free(t);
    t = query_type(s, "wall", old, old + MIN, &info);
    ok(t && !strcmp(t, "main;sleep 3000\n") && info.windows == 1, "wall's holds wall (%s)",
       t ? t : "");
    free(t);
    store_close(s);
}

/* A store as version 2 wrote it: this version's file without the type column. */
static void make_v2(const char *path, int version)
{
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    remove(path);
    store_open(path, &s, &e);
    put_typed(s, NULL, T0, "main;burn 5\nmain;gc 1\n");
    put_typed(s, NULL, T0 + 10000, "main;burn 5\n");
    store_close(s);
    char sql[200];
    snprintf(sql, sizeof sql,
             "ALTER TABLE windows DROP COLUMN type;"
             " UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
             version);
    sql_exec(path, sql);
}

static void test_v2(void)
{
    const char *p = in_scratch("v2.db");
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    make_v2(path, 2);
    ok(sql_int(path, "SELECT count(*) FROM pragma_table_info('windows') WHERE name = 'type'") == 0,
       "a version 2 store: windows without a type");
    size_t n0 = 0, n1 = 0;
    char *before = slurp_all(path, &n0);
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    is_int(store_open_read(path, &s, &e), 0, "a reader opens it as it is (%s)", e.msg);
    store_info info;
    char *t = query_type(s, NULL, T0, T0 + MIN, &info);
    ok(t && !strcmp(t, "main;burn 10\nmain;gc 1\n") && info.windows == 2,
       "its windows read as cpu (%s)", t ? t : "");
    free(t);
    t = query_type(s, "wall", T0, T0 + MIN, &info);
    ok(t && !*t && info.windows == 0, "and no wall");
    free(t);
    is_str(types_listed(s), "cpu:2 ", "ls lists them as cpu");
    store_close(s);
    s = NULL;
    char *after = slurp_all(path, &n1);
    ok(before && after && n0 == n1 && !memcmp(before, after, n0), "the reader left it as it was");
    free(before);
    free(after);

    is_int(store_open(path, &s, &e), 0, "a writer opens it (%s)", e.msg);
    is_int(sql_int(path, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"), 3,
           "version 3 now");
    is_int(sql_int(path, "SELECT count(*) FROM windows WHERE type = 'cpu'"), 2,
           "its old windows are cpu");
    put_typed(s, "wall", T0, "main;sleep 9\n");
    t = query_type(s, NULL, T0, T0 + MIN, &info);
    ok(t && !strcmp(t, "main;burn 10\nmain;gc 1\n"), "cpu reads as before");
    free(t);
    t = query_type(s, "wall", T0, T0 + MIN, &info);
    ok(t && !strcmp(t, "main;sleep 9\n"), "a new wall window beside them");
    free(t);
    store_close(s);

    /* version 3 without the column (another step numbered 3 got there first): a writer adds it */
    make_v2(path, 3);
    s = NULL;
    is_int(store_open(path, &s, &e), 0, "a version 3 store without the column opens (%s)", e.msg);
    is_int(sql_int(path, "SELECT count(*) FROM windows WHERE type = 'cpu'"), 2,
           "the writer added the column: its windows are cpu");
    store_close(s);
}

int main(void)
{
    scratch_make();
    test_types();
    test_v2();
    scratch_remove();
    return tap_done();
}
