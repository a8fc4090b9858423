/* The SQLite store (store/sqlite*.c through store/store.h): windows in, the merged profile of a
 * range out (by container name, id prefix, host, JVM), stacks stored once, empty windows, the
 * timeline and the listing (each JVM a series, sizes that add up to the file), hostile labels
 * and stacks kept as bytes, compaction that keeps every count, retention that takes the stacks
 * only old windows used, deep varied stacks in a few bytes a window with the WAL kept small, a
 * store of version 1 (made by an older docker-flame) migrated whole, and the URL forms. */
#include <sys/stat.h>
#include <zlib.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/spool.h"
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

/* Distinct stacks in the store's dictionary (ls's footer). */
static int64_t stacks_of(store *s)
{
    store_listing l = {0};
    flame_err e = FLAME_ERR_INIT;
    int64_t n = store_list(s, NULL, &l, &e) == 0 ? (int64_t)l.stacks : -1;
    store_listing_free(&l);
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
    is_int(stacks_of(s), 4, "stacks stored once (4 distinct among 5)");

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
    ok(tl.n == 1 && tl.series[0].n == 2 && tl.series[0].pts[0].frequency == 99 &&
           tl.series[0].pts[1].frequency == 49,
       "with each window's sampling rate (the page's CPU in cores)");
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

    int64_t stacks_before = stacks_of(s);
    st = (store_compact_stats){0};
    is_int(store_prune(s, now, 2 * HOUR, &st, &e), 0, "prune to 2 h");
    free(query(s, "web", 0, INT64_MAX, &r));
    ok(r.first_ms >= now - 2 * HOUR - 10000, "nothing older than 2 h is left");
    ok(st.deleted > 0 && st.stacks_freed > 0, "windows and the stacks only they used are gone");
    is_int(stacks_of(s), stacks_before - (int64_t)st.stacks_freed, "the dictionary matches");
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

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A compiler's stack, from its number: a thread's frames, then a walk down a recursion of
 * visitors whose depth and turns the number decides (deep, varied, sharing long prefixes). */
static size_t deep_stack(char *buf, size_t cap, uint64_t k)
{
    static const char *const visit[] = {"com.sun.tools.javac.comp.Attr.visitBinary",
                                        "com.sun.tools.javac.comp.Attr.attribTree",
                                        "com.sun.tools.javac.comp.Attr.attribExpr",
                                        "com.sun.tools.javac.comp.Attr.visitApply",
                                        "com.sun.tools.javac.tree.JCTree$JCBinary.accept",
                                        "com.sun.tools.javac.comp.Attr.visitConditional",
                                        "com.sun.tools.javac.comp.Attr.visitLambda",
                                        "com.sun.tools.javac.comp.Resolve.resolveQualifiedMethod",
                                        "com.sun.tools.javac.comp.Infer.instantiateMethod",
                                        "com.sun.tools.javac.code.Types.isSubtype"};
    size_t o =
        (size_t)snprintf(buf, cap,
                         "compiler-0;java.lang.Thread.run;CompilerLoop.loop;CompilerLoop.round;"
                         "com.sun.tools.javac.api.JavacTaskImpl.call;"
                         "com.sun.tools.javac.main.JavaCompiler.compile;"
                         "com.sun.tools.javac.comp.Attr.attribClass");
    uint64_t h = k * 0x9e3779b97f4a7c15ull + 7;
    int depth = 10 + (int)(k % 50);
    for (int d = 0; d < depth && o + 120 < cap; d++) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        /* mostly the same turns at the same depth: the stacks share long prefixes */
        unsigned turn = (h >> 60) < 3 ? (unsigned)(h >> 33) % 10 : (unsigned)(d * 7 + k % 3) % 10;
        o += (size_t)snprintf(buf + o, cap - o, ";%s", visit[turn]);
    }
    o += (size_t)snprintf(buf + o, cap - o, ";leaf.M%llu.run", (unsigned long long)(k % 97));
    return o;
}

/* A window of `samples` samples of deep stacks drawn (Zipf) from `pool` possible ones. */
static profile *deep_window(int samples, uint64_t pool)
{
    profile *p = profile_new();
    char buf[8192];
    for (int i = 0; i < samples; i++) {
        double u = (double)(next_rand() >> 11) / 9007199254740992.0;
        uint64_t k = (uint64_t)((double)pool * u * u * u); /* most samples in few stacks */
        size_t n = deep_stack(buf, sizeof buf, k);
        profile_add(p, buf, n, 1, PROFILE_ONE_COLUMN);
    }
    return p;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Deep varied stacks: a window costs its pairs and the few stacks it brings, not their texts;
 * and the WAL beside the file stays small while a writer has it open. */
static void test_deep(void)
{
    const char *path = in_scratch("deep.db");
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    uint64_t wal_max = 0, before = 0, text = 0;
    int64_t t = T0;
    for (int i = 0; i < 240; i++, t += 10000) {
        profile *p = deep_window(400, 20000);
        store_window w = window_of("javac", 1, t, p);
        if (store_put(s, &w, &e) < 0)
            printf("# put: %s\n", e.msg);
        profile_free(p);
        uint64_t ws = file_size(wal);
        wal_max = ws > wal_max ? ws : wal_max;
        if (i == 119)
            before = file_size(path) + ws;
    }
    uint64_t after = file_size(path) + file_size(wal);
    store_info info;
    char *all = query(s, "javac", T0, t, &info);
    for (const char *l = all; l && *l; l = strchr(l, '\n') + 1) {
        const char *sp = memrchr(l, ' ', (size_t)(strchr(l, '\n') - l));
        text += sp ? (uint64_t)(sp - l) : 0;
    }
    ok(all && info.windows == 240, "240 windows of deep stacks read back");
    int64_t stacks = stacks_of(s);
    ok(after - before <= 120 * 2048,
       "the second 20 minutes: %llu bytes a window (goal <= 2048; %lld distinct stacks of %llu "
       "bytes of text in all)",
       (unsigned long long)(after - before) / 120, (long long)stacks, (unsigned long long)text);
    ok(after * 20 < text, "the whole store (%llu bytes) is a small part of its stacks' text",
       (unsigned long long)after);
    ok(wal_max <= (2u << 20), "the WAL stays small while the writer works (%llu bytes at most)",
       (unsigned long long)wal_max);
    free(all);
    store_close(s);
}

/* Each JVM of a container is a series of its own; ls's sizes add up to the file. */
static void test_jvms_and_sizes(void)
{
    const char *path = in_scratch("jvms.db");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    profile *a = folded("main;a 5\n"), *b = folded("main;b 3\n"), *c = deep_window(300, 5000);
    store_window w[] = {window_of("web", 7, T0, a), window_of("web", 9, T0, b),
                        window_of("api", 1, T0, c), window_of("web", 7, T0 + 10000, a)};
    w[1].jvm_version = "21.0.2";
    is_int(store_put_many(s, w, 4, &e), 0, "two JVMs of web, one of api");
    store_info info;
    store_query q = {.container = "web", .jvm_pid = 9, .since_ms = 0, .until_ms = INT64_MAX};
    profile *p = profile_new();
    store_profile(s, &q, p, &info, &e);
    char *t = folded_text(p);
    is_str(t, "main;b 3\n", "web's JVM 9 alone");
    free(t);
    profile_free(p);
    t = query(s, "web", 0, INT64_MAX, &info);
    is_str(t, "main;a 10\nmain;b 3\n", "web: both JVMs merged");
    free(t);
    store_listing l = {0};
    is_int(store_list(s, NULL, &l, &e), 0, "listing");
    int web7 = -1, web9 = -1;
    uint64_t sum = 0;
    for (size_t i = 0; i < l.n; i++) {
        sum += l.e[i].bytes;
        if (!strcmp(l.e[i].container_name, "web") && l.e[i].jvm_pid == 7)
            web7 = (int)i;
        if (!strcmp(l.e[i].container_name, "web") && l.e[i].jvm_pid == 9)
            web9 = (int)i;
    }
    ok(l.n == 3 && web7 >= 0 && web9 >= 0, "a line per JVM: web 7, web 9, api");
    ok(web7 >= 0 && l.e[web7].windows == 2 && !strcmp(l.e[web7].jvm_version, "17.0.9") &&
           web9 >= 0 && l.e[web9].windows == 1 && !strcmp(l.e[web9].jvm_version, "21.0.2"),
       "each with its windows and its JVM's version");
    is_int(sum, l.disk_bytes, "the sizes add up to the store on disk (%llu bytes)",
           (unsigned long long)l.disk_bytes);
    ok(l.disk_bytes >= file_size(path), "which is the file (and its WAL)");
    store_listing_free(&l);
    store_close(s);
    profile_free(a);
    profile_free(b);
    profile_free(c);
}

/* A gzip'd file into the scratch dir (0 or -1). */
static int gunzip_to(const char *gz, const char *out)
{
    gzFile in = gzopen(gz, "rb");
    FILE *o = fopen(out, "wb");
    char buf[65536];
    int n, rc = in && o ? 0 : -1;
    while (rc == 0 && (n = gzread(in, buf, sizeof buf)) > 0)
        rc = fwrite(buf, 1, (size_t)n, o) == (size_t)n ? 0 : -1;
    if (in)
        gzclose(in);
    if (o)
        fclose(o);
    return rc;
}

static char *slurp_n(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = 0;
    if (len)
        *len = b ? (size_t)n : 0;
    fclose(f);
    return b;
}

static char *slurp(const char *path)
{
    return slurp_n(path, NULL);
}

/* A store of version 1, made by docker-flame 8525bde (tests/data/store/make-old.sh): opened, it
 * is migrated and reads exactly as the old code read it. */
static void test_old_store(void)
{
    const char *data = "tests/data"; /* prove runs from the top of the tree */
    char gz[600], want_path[600], web_path[600];
    snprintf(gz, sizeof gz, "%s/store/sqlite-v1.db.gz", data);
    const char *path = in_scratch("v1.db");
    char db[600];
    snprintf(db, sizeof db, "%s", path);
    snprintf(want_path, sizeof want_path, "%s", in_scratch("old.folded"));
    snprintf(web_path, sizeof web_path, "%s", in_scratch("old-web.folded"));
    char src[600];
    snprintf(src, sizeof src, "%s/store/old.folded.gz", data);
    int got_files = gunzip_to(gz, db) == 0 && gunzip_to(src, want_path) == 0;
    snprintf(src, sizeof src, "%s/store/old-web.folded.gz", data);
    got_files = got_files && gunzip_to(src, web_path) == 0;
    ok(got_files, "the version 1 store and what the old code read from it");
    int64_t v1_windows = count_rows(db, "windows"), v1_stacks = count_rows(db, "stacks");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    /* a reader neither migrates nor reads it: one line saying what upgrades it */
    size_t nbytes = 0, nafter = 0;
    char *bytes = slurp_n(db, &nbytes);
    ok(store_open_read(db, &s, &e) < 0 && e.detail == STORE_ERR_OLDER &&
           e.code == FLAME_EXIT_STORE && strstr(e.msg, "a store of version 1") &&
           strstr(e.msg, "docker flame prune --retain 0 --no-compact"),
       "a reader refuses it, exit 7, naming what upgrades it (%s)", e.msg);
    store_close(s);
    s = NULL;
    char *after = slurp_n(db, &nafter);
    ok(bytes && after && nbytes == nafter && !memcmp(bytes, after, nbytes) &&
           count_rows(db, "stacks") == v1_stacks,
       "and leaves it as it was");
    /* the same file as a ClickHouse store's spool (left by an older recorder): ls only counts
     * what waits in it, which it can, whatever its version (no request is made) */
    char url[700];
    snprintf(url, sizeof url, "clickhouse://127.0.0.1:1/flame?spool=%s", db);
    uint64_t waiting = 0;
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_open_read(url, &s, &e) == 0 && spool_waiting(s, &waiting, &e) == 0 &&
           (int64_t)waiting == v1_windows,
       "as an older recorder's spool, a reader counts its %lld windows (%llu; %s)",
       (long long)v1_windows, (unsigned long long)waiting, e.msg);
    store_close(s);
    s = NULL;
    char *again = slurp_n(db, &nafter);
    ok(again && nbytes == nafter && !memcmp(bytes, again, nbytes), "and leaves it as it was too");
    free(again);
    free(bytes);
    free(after);
    e = (flame_err)FLAME_ERR_INIT;
    is_int(store_open(db, &s, &e), 0, "a writer opens it (%s)", e.msg);
    char *want = slurp(want_path), *want_web = slurp(web_path);
    const int64_t since = 1795593600000LL, until = since + 2 * HOUR; /* 08:00 to 10:00 UTC */
    store_info info;
    char *t = query(s, NULL, since, until, &info);
    ok(t && want && !strcmp(t, want), "every container reads as before, to the count (%zu bytes)",
       t ? strlen(t) : 0);
    free(t);
    t = query(s, "web", since, until, &info);
    ok(t && want_web && !strcmp(t, want_web), "web alone too");
    free(t);
    ok(count_rows(db, "windows") == v1_windows && count_rows(db, "stacks") == -1,
       "the same %lld windows; the old stacks table is gone", (long long)v1_windows);
    is_int(stacks_of(s), v1_stacks, "its %lld stacks are in the dictionary", (long long)v1_stacks);
    int64_t v = 0;
    sqlite3 *h;
    sqlite3_stmt *st;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    is_int(v, 3, "the store says version 3 now");
    /* and it goes on: new windows of a stack it had and of a new one */
    profile *p = folded("a;new;stack 4\n");
    store_window w = window_of("web", 1, until - 10000, p);
    is_int(store_put(s, &w, &e), 0, "a new window goes in");
    t = query(s, "web", until - 10000, until, &info);
    ok(t && strstr(t, "a;new;stack 4\n"), "and reads back");
    free(t);
    profile_free(p);
    free(want);
    free(want_web);
    store_close(s);
}

int main(void)
{
    scratch_make();
    test_put_and_query();
    test_hostile();
    test_compact();
    test_deep();
    test_jvms_and_sizes();
    test_old_store();
    test_urls();
    scratch_remove();
    return tap_done();
}
