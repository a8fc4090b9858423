/* The SQLite store (store/sqlite*.c through store/store.h): windows in, the merged profile of a
 * range out (by container name, id prefix, host, JVM), stacks stored once, empty windows, the
 * timeline and the listing, hostile labels and stacks kept as bytes, compaction that keeps every
 * count, retention that takes the stacks only old windows used, and the URL forms. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tests/unit/tap.h"
#include "tests/unit/store_helpers.h"

#define T0 1795534200000LL /* 2026-11-24 15:30:00 UTC, a whole minute */
#define MIN (60LL * 1000)
#define HOUR (60 * MIN)

static int64_t count_rows(const char *path, const char *table)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    char sql[128];
    int64_t n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

/* The merged folded text of a query, or NULL on error. */
static char *query(store *s, const char *container, int64_t since, int64_t until, store_info *info)
{
    store_query q = {.container = container, .since_ms = since, .until_ms = until};
    profile *p = profile_new();
    flame_err e = FLAME_ERR_INIT;
    *info = (store_info){0};
    char *t = store_profile(s, &q, p, info, &e) == 0 ? folded_text(p) : NULL;
    if (!t)
        printf("# %s\n", e.msg);
    profile_free(p);
    return t;
}

static void test_put_and_query(void)
{
    const char *path = in_scratch("deep/dir/profiles.db");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    is_int(store_open(path, &s, &e), 0, "open creates the file and its directories");
    is_str(store_name(s), path, "named by its path");
    profile *a = folded("main;work;a 5\nmain;work;b 3\n");
    profile *b = folded("main;work;a 2\nmain;idle 4\n");
    profile *c = folded("main;api;x 7\n");
    store_window w[] = {window_of("web", 1, T0, a), window_of("web", 1, T0 + 10000, b),
                        window_of("api", 7, T0, c)};
    w[1].frequency = 49; /* the rate changed between two recordings */
    is_int(store_put_many(s, w, 3, &e), 0, "three windows stored");
    store_info info;
    char *t = query(s, "web", T0, T0 + 20000, &info);
    is_str(t, "main;idle 4\nmain;work;a 7\nmain;work;b 3\n", "web: two windows summed");
    free(t);
    ok(info.windows == 2 && info.samples == 14 && info.first_ms == T0 && info.last_ms == T0 + 20000,
       "info: windows, samples, first and last");
    ok(info.hz_min == 49 && info.hz_max == 99, "info: the windows' rates, lowest and highest");
    free(query(s, "api", T0, T0 + 20000, &info));
    ok(info.hz_min == 99 && info.hz_max == 99, "info: one rate");
    t = query(s, "web", T0 + 12000, T0 + 13000, &info);
    is_str(t, "main;idle 4\nmain;work;a 2\n", "a range inside one window: that window");
    free(t);
    t = query(s, "web", T0 + 20000, T0 + 30000, &info);
    ok(t && !*t && info.windows == 0, "a range after every window: nothing");
    free(t);
    t = query(s, "api-0123", T0, T0 + 20000, &info);
    is_str(t, "main;api;x 7\n", "by container id prefix");
    free(t);
    t = query(s, "api", T0 - 60000, T0 + 1, &info);
    is_str(t, "main;api;x 7\n", "a range that overlaps the window's start");
    free(t);
    t = query(s, NULL, 0, INT64_MAX, &info);
    ok(t && strstr(t, "main;api;x 7") && strstr(t, "main;work;a 7"), "every container");
    free(t);
    store_query q = {.container = "web", .host = "host-b", .since_ms = 0, .until_ms = INT64_MAX};
    profile *p = profile_new();
    info = (store_info){0};
    store_profile(s, &q, p, &info, &e);
    ok(info.windows == 0, "another host: nothing");
    q = (store_query){.container = "api", .jvm_pid = 8, .since_ms = 0, .until_ms = INT64_MAX};
    store_profile(s, &q, p, &info, &e);
    ok(info.windows == 0 && profile_stacks(p) == 0, "another JVM pid: nothing");
    profile_free(p);
    is_int(count_rows(path, "stacks"), 4, "stacks stored once (4 distinct among 5)");

    /* a JVM that did nothing: an empty window still counts as a window */
    profile *none = profile_new();
    store_window idle = window_of("quiet", 1, T0, none);
    idle.samples = 0;
    is_int(store_put(s, &idle, &e), 0, "an empty window is stored");
    t = query(s, "quiet", T0, T0 + 10000, &info);
    ok(t && !*t && info.windows == 1, "and found, with no stacks");
    free(t);

    store_series_list tl = {0};
    q = (store_query){.container = "web", .since_ms = 0, .until_ms = INT64_MAX};
    is_int(store_timeline(s, &q, &tl, &e), 0, "timeline");
    ok(tl.n == 1 && tl.series[0].n == 2 && tl.series[0].pts[0].samples == 8 &&
           tl.series[0].pts[1].samples == 6 && tl.series[0].pts[1].start_ms == T0 + 10000 &&
           !strcmp(tl.series[0].container_name, "web") && tl.series[0].jvm_pid == 1,
       "one series, its windows in order");
    store_timeline_free(&tl);

    store_listing ls = {0};
    is_int(store_list(s, NULL, &ls, &e), 0, "listing");
    ok(ls.n == 3 && ls.stacks == 4 && ls.disk_bytes > 0, "three containers, four stacks");
    int web = -1;
    for (size_t i = 0; i < ls.n; i++)
        if (!strcmp(ls.e[i].container_name, "web"))
            web = (int)i;
    ok(web >= 0 && ls.e[web].windows == 2 && ls.e[web].samples == 14 && ls.e[web].first_ms == T0 &&
           ls.e[web].last_ms == T0 + 20000 && !strcmp(ls.e[web].image, "eclipse-temurin:17") &&
           ls.e[web].bytes > 0,
       "web's entry");
    store_listing_free(&ls);
    store_close(s);
    profile_free(a);
    profile_free(b);
    profile_free(c);
    profile_free(none);
}

static void test_hostile(void)
{
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(in_scratch("hostile.db"), &s, &e);
    const char *name = "web'); DROP TABLE windows; --\n\t<svg>\x01";
    profile *p = profile_new();
    const char *evil = "x;<script>alert(1)</script>;'\"\\";
    profile_add(p, evil, strlen(evil), 3, PROFILE_ONE_COLUMN);
    size_t big = STORE_MAX_STACK + 500;
    char *huge = malloc(big);
    for (size_t i = 0; i < big; i++)
        huge[i] = i % 64 == 63 ? ';' : 'q';
    profile_add(p, huge, big, 2, PROFILE_ONE_COLUMN);
    free(huge);
    store_window w = window_of(name, 1, T0, p);
    w.host = name;
    is_int(store_put(s, &w, &e), 0, "hostile labels and stacks are stored");
    store_info info;
    char *t = query(s, name, T0, T0 + 1000, &info);
    ok(t && strstr(t, "x;<script>alert(1)</script>;'\"\\ 3\n"), "a hostile stack comes back as is");
    ok(t && strstr(t, ";[truncated] 2\n"), "a too long stack is cut, its samples kept");
    free(t);
    store_listing ls = {0};
    store_list(s, NULL, &ls, &e);
    ok(ls.n == 1 && !strcmp(ls.e[0].container_name, name) && !strcmp(ls.e[0].host, name),
       "hostile labels come back as bytes");
    store_listing_free(&ls);
    store_window bad = w;
    bad.end_ms = bad.start_ms;
    ok(store_put(s, &bad, &e) < 0 && e.code == FLAME_EXIT_ERROR, "an empty time span is refused");
    bad.end_ms = bad.start_ms + STORE_MAX_WINDOW_MS + 1;
    ok(store_put(s, &bad, &e) < 0, "a window longer than a day is refused");
    store_close(s);
    profile_free(p);
}

/* 10-s windows from start for `hours`, each with 6 stacks of which 1 is the window's own. */
static void fill(store *s, int64_t start, int hours, const char *name)
{
    flame_err e = FLAME_ERR_INIT;
    int n = hours * 360;
    store_window *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++) {
        char text[400];
        snprintf(text, sizeof text,
                 "main;loop;a 3\nmain;loop;b 2\nmain;io 1\nmain;gc %d\nmain;x 1\nmain;w%d 1\n",
                 1 + i % 4, i);
        w[i] = window_of(name, 1, start + (int64_t)i * 10000, folded(text));
    }
    if (store_put_many(s, w, (size_t)n, &e) < 0)
        printf("# fill: %s\n", e.msg);
    for (int i = 0; i < n; i++)
        profile_free((profile *)w[i].stacks);
    free(w);
}

static void test_compact(void)
{
    const char *path = in_scratch("compact.db");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    int64_t start = T0 - 30 * HOUR, now = T0;
    fill(s, start, 30, "web");
    store_info before, after;
    char *t0 = query(s, "web", 0, INT64_MAX, &before);
    is_int(before.windows, 30 * 360, "30 h of 10-s windows");
    store_policy pol;
    store_policy_default(&pol);
    pol.retain_ms = 0;
    store_compact_stats st = {0};
    is_int(store_compact(s, now, &pol, &st, &e), 0, "compaction");
    char *t1 = query(s, "web", 0, INT64_MAX, &after);
    ok(t0 && t1 && !strcmp(t0, t1), "the merged profile is the same to the count");
    is_int(after.samples, before.samples, "window totals kept");
    /* the last hour stays 10-s, 1 h to 1 d old goes to minutes, older to 10 minutes */
    int64_t want = 360 + 23 * 60 + 6 * 6;
    is_int(after.windows, want, "buckets: %lld windows", (long long)want);
    is_int(st.merged, 30 * 360 - 360, "merged windows counted");
    is_int(st.buckets, 23 * 60 + 6 * 6, "buckets counted");
    ok(st.disk_after < st.disk_before, "the file shrank (%llu -> %llu bytes)",
       (unsigned long long)st.disk_before, (unsigned long long)st.disk_after);
    store_info r;
    free(query(s, "web", now - 2 * HOUR, now - 2 * HOUR + MIN, &r));
    is_int(r.windows, 1, "a minute 2 h ago: one 1-min bucket");
    free(query(s, "web", now - 26 * HOUR, now - 26 * HOUR + MIN, &r));
    ok(r.windows == 1 && r.last_ms - r.first_ms == 10 * MIN, "26 h ago: a 10-min bucket");
    st = (store_compact_stats){0};
    is_int(store_compact(s, now, &pol, &st, &e), 0, "a second run");
    ok(st.merged == 0 && st.buckets == 0, "has nothing left to merge");

    int64_t stacks_before = count_rows(path, "stacks");
    st = (store_compact_stats){0};
    is_int(store_prune(s, now, 2 * HOUR, &st, &e), 0, "prune to 2 h");
    free(query(s, "web", 0, INT64_MAX, &r));
    ok(r.first_ms >= now - 2 * HOUR - 10000, "nothing older than 2 h is left");
    ok(st.deleted > 0 && st.stacks_freed > 0, "windows and the stacks only they used are gone");
    is_int(count_rows(path, "stacks"), stacks_before - (int64_t)st.stacks_freed,
           "stacks table matches");
    char *t2 = query(s, "web", now - HOUR, now, &r);
    ok(t2 && strstr(t2, "main;loop;a"), "what is left reads");
    free(t0);
    free(t1);
    free(t2);
    store_close(s);
}

static void test_urls(void)
{
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    char url[600];
    snprintf(url, sizeof url, "sqlite://%s", in_scratch("url.db"));
    is_int(store_open(url, &s, &e), 0, "sqlite:///path");
    is_str(s ? store_name(s) : "", in_scratch("url.db"), "named by the path");
    store_close(s);
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_open("mysql://db/x", &s, &e) < 0 && e.code == FLAME_EXIT_USAGE &&
           strstr(e.msg, "unknown store") && !strchr(e.msg, '\n'),
       "an unknown scheme: a usage error, one line");
    setenv("XDG_DATA_HOME", in_scratch("xdg"), 1);
    is_int(store_open(NULL, &s, &e), 0, "the default store");
    char want[600];
    snprintf(want, sizeof want, "%s/docker-flame/profiles.db", in_scratch("xdg"));
    is_str(s ? store_name(s) : "", want, "in $XDG_DATA_HOME/docker-flame");
    store_close(s);
    unsetenv("XDG_DATA_HOME");
}

int main(void)
{
    scratch_make();
    test_put_and_query();
    test_hostile();
    test_compact();
    test_urls();
    scratch_remove();
    return tap_done();
}
