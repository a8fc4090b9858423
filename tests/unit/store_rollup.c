/* The SQLite store's hour rollups (store/sqlite_rollup.c, docs/STORE.md "Hour rollups"): two
 * stores get the same windows, one keeps rollups (built by compaction), the other has none (as
 * an older store); every query (ranges that cut hours, whole hours, inside one hour; by
 * container, JVM, host) must give the same folded text and the same counts from both, after the
 * rollups are built, after a late window lands in a rolled-up hour, after compaction into
 * buckets, and after retention that renumbers the dictionary. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tests/unit/store_helpers.h"
#include "tests/unit/tap.h"

#define MIN (60LL * 1000)
#define HOUR (60 * MIN)
#define T 1795532400000LL /* 2026-11-24 15:00:00 UTC, a whole hour */
#define NOW (T + 6 * HOUR)
#define STEP (170 * 1000LL) /* windows of 170 s: some cross an hour's end */

/* Window i of a JVM: a few recurring stacks and one of its own (retention frees those). */
static store_window make(const char *name, int64_t pid, const char *host, int64_t start, int i)
{
    char text[256];
    snprintf(text, sizeof text, "main;loop;f%d %d\nmain;gc %d\nmain;%s;u%d 1\n", i % 7, 1 + i % 5,
             1 + i % 3, name, i);
    store_window w = window_of(name, pid, start, folded(text));
    w.host = host;
    w.end_ms = start + STEP;
    w.frequency = i % 11 ? 99 : 49;
    w.samples = (uint64_t)profile_total(w.stacks) + (uint64_t)(i % 2);
    return w;
}

static void put_both(store *a, store *b, const store_window *w)
{
    flame_err e = FLAME_ERR_INIT;
    if (store_put(a, w, &e) < 0 || store_put(b, w, &e) < 0)
        printf("# put: %s\n", e.msg);
    profile_free((profile *)w->stacks);
}

typedef struct sel {
    const char *container, *host;
    int64_t pid;
} sel;

static const sel sels[] = {
    {NULL, NULL, 0}, {"web", NULL, 0}, {"web", NULL, 2}, {"web2", NULL, 0}, {NULL, "host-b", 0},
};
static const int64_t ranges[][2] = {
    {0, INT64_MAX},                          /* everything */
    {T + 17 * MIN, T + 3 * HOUR + 23 * MIN}, /* cuts two hours */
    {T + HOUR, T + 3 * HOUR},                /* whole hours exactly */
    {T + 10 * MIN, T + 50 * MIN},            /* inside one hour */
    {T + 59 * MIN, T + 2 * HOUR + MIN},      /* one whole hour and two edges */
    {T + 2 * HOUR, T + 2 * HOUR + 1},        /* one ms */
    {T - 3 * HOUR, T + 4 * HOUR + 1},        /* from before the first window */
};

static char *text_of(store *s, const sel *x, const int64_t r[2], store_info *info)
{
    store_query q = {.container = x->container,
                     .host = x->host,
                     .jvm_pid = x->pid,
                     .since_ms = r[0],
                     .until_ms = r[1]};
    profile *p = profile_new();
    flame_err e = FLAME_ERR_INIT;
    *info = (store_info){0};
    char *t = store_profile(s, &q, p, info, &e) == 0 ? folded_text(p) : NULL;
    if (!t)
        printf("# %s\n", e.msg);
    profile_free(p);
    return t;
}

/* Every selection x range from both stores: how many differ (text or counts). */
static int differences(store *ref, store *roll, int *nonempty)
{
    int bad = 0;
    *nonempty = 0;
    for (size_t k = 0; k < sizeof sels / sizeof *sels; k++)
        for (size_t j = 0; j < sizeof ranges / sizeof *ranges; j++) {
            store_info a, b;
            char *ta = text_of(ref, &sels[k], ranges[j], &a);
            char *tb = text_of(roll, &sels[k], ranges[j], &b);
            bool same = ta && tb && !strcmp(ta, tb) && a.windows == b.windows &&
                        a.samples == b.samples && a.hz_min == b.hz_min && a.hz_max == b.hz_max &&
                        (!a.windows || (a.first_ms == b.first_ms && a.last_ms == b.last_ms));
            if (!same) {
                printf("# differs: %s host %s pid %lld [%lld, %lld): %llu/%llu windows, "
                       "%llu/%llu samples\n",
                       sels[k].container ? sels[k].container : "*",
                       sels[k].host ? sels[k].host : "*", (long long)sels[k].pid,
                       (long long)ranges[j][0], (long long)ranges[j][1],
                       (unsigned long long)a.windows, (unsigned long long)b.windows,
                       (unsigned long long)a.samples, (unsigned long long)b.samples);
                bad++;
            }
            *nonempty += ta && *ta;
            free(ta);
            free(tb);
        }
    return bad;
}

#define HOUR1 "SELECT count(*) FROM rollups WHERE hour_ms = 1795536000000" /* T + 1 h */
#define ORPHANS                                                                                    \
    "SELECT count(*) FROM rollups r WHERE NOT EXISTS (SELECT 1 FROM windows w WHERE"               \
    " w.source = r.source AND w.start_ms - w.start_ms % 3600000 = r.hour_ms)"

static void test_rollups(void)
{
    char ref_path[512], roll_path[512];
    snprintf(ref_path, sizeof ref_path, "%s", in_scratch("ref.db"));
    snprintf(roll_path, sizeof roll_path, "%s", in_scratch("roll.db"));
    store *ref = NULL, *roll = NULL;
    flame_err e = FLAME_ERR_INIT;
    if (store_open(ref_path, &ref, &e) < 0 || store_open(roll_path, &roll, &e) < 0) {
        printf("# open: %s\n", e.msg);
        ok(0, "open the stores");
        return;
    }
    /* the reference: a store without rollups, as an older docker-flame left it */
    is_int(sql_exec(ref_path, "DROP TRIGGER rollups_put; DROP TRIGGER rollups_delete;"
                              " DROP TRIGGER rollups_update; DROP TABLE rollups"),
           SQLITE_OK, "a store without rollups (as an older one)");
    int i = 0;
    for (int64_t t = T; t + STEP <= T + 5 * HOUR; t += STEP, i++) {
        store_window w = make("web", t < T + 2 * HOUR ? 1 : 2, "host-a", t, i);
        put_both(ref, roll, &w);
        w = make("web2", 5, "host-a", t + 7000, i + 1000);
        put_both(ref, roll, &w);
        w = make("api", 9, "host-b", t + 3000, i + 2000);
        put_both(ref, roll, &w);
    }
    int nonempty, n = (int)(sizeof sels / sizeof *sels * sizeof ranges / sizeof *ranges);

    store_policy only = {0}; /* no retention, no buckets: the rollups alone */
    store_compact_stats st = {0};
    is_int(store_compact(roll, NOW, &only, &st, &e), 0, "compaction builds the rollups");
    /* 3 sources of web (pid 1: hours 0-1, pid 2: 2-4), web2 and api: 5 hours each */
    is_int(st.rollups, 15, "one rollup per JVM and hour");
    is_int(sql_int(roll_path, "SELECT count(*) FROM rollups WHERE type = 'cpu'"), 15,
           "stored, of type cpu");
    is_int(differences(ref, roll, &nonempty), 0, "%d queries: the same text and counts", n);
    ok(nonempty > n / 2, "most of them not empty (%d)", nonempty);

    /* the reader adds the rollups (not the windows) of whole hours: a rollup's count doctored
     * shows in the sum, and only where whole hours are read */
    store_info a, b;
    const int64_t whole[2] = {T + HOUR, T + 3 * HOUR}, inside[2] = {T + 10 * MIN, T + 50 * MIN};
    sql_exec(roll_path, "UPDATE rollups SET samples = samples + 1000");
    free(text_of(ref, &sels[0], whole, &a));
    free(text_of(roll, &sels[0], whole, &b));
    is_int(b.samples - a.samples, 6000, "two whole hours of 3 JVMs are read from 6 rollups");
    free(text_of(ref, &sels[0], inside, &a));
    free(text_of(roll, &sels[0], inside, &b));
    is_int(b.samples, a.samples, "a range inside an hour reads windows");
    sql_exec(roll_path, "UPDATE rollups SET samples = samples - 1000");

    /* a late window (a spool sent after an outage) into a rolled-up hour */
    int64_t h1 = sql_int(roll_path, HOUR1);
    store_window late = make("web", 1, "host-a", T + HOUR + 7 * MIN + 3000, 9999);
    put_both(ref, roll, &late);
    is_int(sql_int(roll_path, HOUR1), h1 - 1, "a late window drops its hour's rollup");
    is_int(differences(ref, roll, &nonempty), 0, "%d queries after it: the same", n);
    st = (store_compact_stats){0};
    is_int(store_compact(roll, NOW, &only, &st, &e), 0, "the next compaction");
    is_int(st.rollups, 1, "builds that one again");
    is_int(differences(ref, roll, &nonempty), 0, "%d queries: the same", n);

    /* compaction into 1-minute buckets (windows older than 1 h) on both */
    store_policy pol;
    store_policy_default(&pol);
    pol.retain_ms = 0;
    st = (store_compact_stats){0};
    store_compact_stats rst = {0};
    is_int(store_compact(roll, NOW, &pol, &st, &e) | store_compact(ref, NOW, &pol, &rst, &e), 0,
           "compaction into buckets");
    ok(st.buckets > 0 && st.buckets == rst.buckets, "merged windows (%llu buckets)",
       (unsigned long long)st.buckets);
    is_int(st.rollups, 15, "and rolled their hours up again");
    is_int(differences(ref, roll, &nonempty), 0, "%d queries on buckets: the same", n);

    /* retention: the first 2.5 h go, and with them most stacks: the dictionary is renumbered */
    pol.retain_ms = NOW - (T + 2 * HOUR + 30 * MIN);
    st = (store_compact_stats){0};
    rst = (store_compact_stats){0};
    is_int(store_compact(roll, NOW, &pol, &st, &e) | store_compact(ref, NOW, &pol, &rst, &e), 0,
           "retention");
    ok(st.deleted > 0 && st.stacks_freed > 0, "deleted windows (%llu) and stacks (%llu)",
       (unsigned long long)st.deleted, (unsigned long long)st.stacks_freed);
    is_int(sql_int(roll_path, ORPHANS), 0, "no rollup of an hour without windows");
    is_int(differences(ref, roll, &nonempty), 0, "%d queries after retention: the same", n);
    ok(nonempty > 0, "and something is left (%d)", nonempty);

    /* a reader (nothing written) reads them the same */
    store *rd = NULL;
    is_int(store_open_read(roll_path, &rd, &e), 0, "opened for reading");
    is_int(differences(ref, rd, &nonempty), 0, "%d queries by a reader: the same", n);
    store_close(rd);
    store_close(ref);
    store_close(roll);

    /* a writer's open brings the table back to a store without it */
    is_int(store_open(ref_path, &ref, &e), 0, "a writer opens the store without rollups");
    is_int(sql_int(ref_path, "SELECT count(*) FROM sqlite_master WHERE name = 'rollups'"), 1,
           "and makes the table");
    store_close(ref);
}

/* Two profile types in the same hours of one JVM: each type has its own rollups, and a query
 * of one type reads neither the other's windows nor its rollups. */
static char *typed_text(store *s, const char *type, const int64_t r[2], store_info *info)
{
    store_query q = {.container = "mix", .since_ms = r[0], .until_ms = r[1], .type = type};
    profile *p = profile_new();
    flame_err e = FLAME_ERR_INIT;
    *info = (store_info){0};
    char *t = store_profile(s, &q, p, info, &e) == 0 ? folded_text(p) : NULL;
    if (!t)
        printf("# %s\n", e.msg);
    profile_free(p);
    return t;
}

static void test_types(void)
{
    char ref_path[512], roll_path[512];
    snprintf(ref_path, sizeof ref_path, "%s", in_scratch("tref.db"));
    snprintf(roll_path, sizeof roll_path, "%s", in_scratch("troll.db"));
    store *ref = NULL, *roll = NULL;
    flame_err e = FLAME_ERR_INIT;
    if (store_open(ref_path, &ref, &e) < 0 || store_open(roll_path, &roll, &e) < 0) {
        printf("# open: %s\n", e.msg);
        ok(0, "open the typed stores");
        return;
    }
    sql_exec(ref_path, "DROP TRIGGER rollups_put; DROP TRIGGER rollups_delete;"
                       " DROP TRIGGER rollups_update; DROP TABLE rollups");
    int i = 0;
    for (int64_t t = T; t + STEP <= T + 3 * HOUR; t += STEP, i++) {
        store_window w = make("mix", 3, "host-a", t, i);
        put_both(ref, roll, &w);
        w = make("mix", 3, "host-a", t + 5000, i + 500);
        w.type = "wall";
        put_both(ref, roll, &w);
    }
    store_policy only = {0};
    store_compact_stats st = {0};
    is_int(store_compact(roll, NOW, &only, &st, &e), 0, "compaction of cpu and wall windows");
    is_int(sql_int(roll_path, "SELECT count(*) FROM rollups WHERE type = 'wall'"), 3,
           "the wall windows' hours rolled up as wall");
    is_int(sql_int(roll_path, "SELECT count(*) FROM rollups WHERE type = 'cpu'"), 3,
           "the cpu windows' hours as cpu");
    const int64_t rs[][2] = {{T + HOUR, T + 3 * HOUR}, {T + 17 * MIN, T + 2 * HOUR + 5 * MIN}};
    const char *types[] = {"cpu", "wall"};
    int bad = 0;
    for (size_t k = 0; k < 2; k++)
        for (size_t j = 0; j < 2; j++) {
            store_info a, b;
            char *ta = typed_text(ref, types[k], rs[j], &a);
            char *tb = typed_text(roll, types[k], rs[j], &b);
            if (!ta || !tb || !*ta || strcmp(ta, tb) || a.windows != b.windows ||
                a.samples != b.samples) {
                printf("# %s [%lld, %lld): %llu/%llu windows, %llu/%llu samples\n", types[k],
                       (long long)rs[j][0], (long long)rs[j][1], (unsigned long long)a.windows,
                       (unsigned long long)b.windows, (unsigned long long)a.samples,
                       (unsigned long long)b.samples);
                bad++;
            }
            free(ta);
            free(tb);
        }
    is_int(bad, 0, "each type from rollups = from its windows alone (whole and cut hours)");
    store_close(ref);
    store_close(roll);
}

int main(void)
{
    scratch_make();
    test_rollups();
    test_types();
    scratch_remove();
    return tap_done();
}
