/* serve's cache (plugin/web/web_cache.c) on a real SQLite store: a side's windows merged as show
 * merges them, a range merged once and then shared, the least recently used range dropped first
 * (never one a request holds), a range that may still grow merged again, the call tree kept
 * with its range (and a replaced one still readable by whoever holds it), the store handles
 * bounded ("busy"), and a range asked by many threads at once merged once. Under ASan/UBSan. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flame/calltree.h"
#include "plugin/web/web_cache.h"
#include "tests/unit/store_helpers.h"
#include "tests/unit/tap.h"

#define T0 1795534200000LL
#define NOW (T0 + 86400000LL) /* a day later: every test range is in the past */

static const char *db;

static void make_store(void)
{
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    db = strdup(in_scratch("serve.db"));
    profile *a = folded("main;work;a 5\nmain;work;b 3\n");
    profile *b = folded("main;work;a 2\nmain;idle 4\n");
    profile *c = folded("main;api;x 7\n");
    profile *d = folded("main;api;y 1\n");
    store_window w[] = {window_of("web", 1, T0, a), window_of("web", 1, T0 + 10000, b),
                        window_of("api", 7, T0, c), window_of("api", 7, T0 + 3600000, d)};
    if (store_open(db, &s, &e) < 0 || store_put_many(s, w, 4, &e) < 0) {
        printf("Bail out! store: %s\n", e.msg);
        exit(1);
    }
    store_close(s);
    profile_free(a), profile_free(b), profile_free(c), profile_free(d);
}

static web_cache *cache(size_t entries, unsigned handles, int64_t wait_ms, int64_t fresh_ms)
{
    web_cache_opts o = {.store_url = db,
                        .entries = entries,
                        .handles = handles,
                        .wait_ms = wait_ms,
                        .fresh_ms = fresh_ms};
    web_cache *c = NULL;
    flame_err e = FLAME_ERR_INIT;
    if (web_cache_new(&o, &c, &e) < 0) {
        printf("Bail out! web_cache_new: %s\n", e.msg);
        exit(1);
    }
    return c;
}

static web_side side(const char *c1, const char *c2, int64_t since, int64_t until)
{
    web_side s = {.since_ms = since, .until_ms = until, .has_since = true, .has_until = true};
    if (c1)
        s.container[s.ncontainers++] = c1;
    if (c2)
        s.container[s.ncontainers++] = c2;
    return s;
}

static const web_merged *get(web_cache *c, const web_side *s)
{
    const web_merged *m = NULL;
    flame_err e = FLAME_ERR_INIT;
    if (web_cache_merged(c, s, NOW, &m, &e) < 0)
        printf("# web_cache_merged: %s\n", e.msg);
    return m;
}

static uint64_t merges_of(web_cache *c)
{
    uint64_t h, m;
    web_cache_stats(c, &h, &m);
    return m;
}

static uint64_t hits_of(web_cache *c)
{
    uint64_t h, m;
    web_cache_stats(c, &h, &m);
    return h;
}

static void test_merges(void)
{
    web_cache *c = cache(8, 4, 0, 0);
    is_str(web_cache_store_name(c), db, "the store named by its path");
    web_side web = side("web", NULL, T0, T0 + 20000);
    const web_merged *m = get(c, &web);
    ok(m && m->p, "web's two windows merged");
    char *t = m ? folded_text(m->p) : NULL;
    is_str(t, "main;idle 4\nmain;work;a 7\nmain;work;b 3\n", "as show merges them");
    free(t);
    is_int(m ? m->info.windows : 0, 2, "two windows said");
    is_int(m ? m->info.samples : 0, 14, "their samples");
    is_int(merges_of(c), 1, "one merge");
    const web_merged *again = get(c, &web);
    ok(again == m, "the same range again: the same merge, shared");
    is_int(merges_of(c), 1, "no second merge");
    is_int(hits_of(c), 1, "one hit");
    web_cache_release(c, again);
    web_cache_release(c, m);

    web_side both = side("web", "api", T0, T0 + 20000);
    m = get(c, &both);
    t = m ? folded_text(m->p) : NULL;
    is_str(t, "main;api;x 7\nmain;idle 4\nmain;work;a 7\nmain;work;b 3\n",
           "two containers: each one's windows added");
    free(t);
    is_int(merges_of(c), 2, "another side, another merge");
    web_cache_release(c, m);

    web_side all = side(NULL, NULL, T0, T0 + 7200000);
    m = get(c, &all);
    is_num(m ? profile_total(m->p) : -1, 22, "no container: every window of the range");
    web_cache_release(c, m);

    web_side later = side("web", NULL, T0 + 20000, T0 + 40000);
    m = get(c, &later);
    ok(m && m->p && profile_total(m->p) == 0 && m->info.windows == 0,
       "a range with nothing stored: an empty profile, no windows");
    web_cache_release(c, m);

    /* the key is everything the store is asked: the pid and the host make other ranges */
    web_side pid = web;
    pid.pid = 2;
    m = get(c, &pid);
    ok(m && profile_total(m->p) == 0, "another pid: another range (nothing stored for it)");
    web_cache_release(c, m);
    web_side host = web;
    host.host = "host-a";
    m = get(c, &host);
    is_num(m ? profile_total(m->p) : -1, 14, "the host named: its windows");
    web_cache_release(c, m);
    is_int(merges_of(c), 6, "each a merge of its own");
    web_cache_free(c);
}

/* entries=2: the third range drops the least recently used one that nobody holds */
static void test_lru(void)
{
    web_cache *c = cache(2, 4, 0, 0);
    web_side a = side("web", NULL, T0, T0 + 10000), b = side("api", NULL, T0, T0 + 10000),
             x = side("web", NULL, T0, T0 + 20000);
    web_cache_release(c, get(c, &a));
    web_cache_release(c, get(c, &b));
    web_cache_release(c, get(c, &a)); /* a is now the most recent */
    is_int(merges_of(c), 2, "two ranges merged, one asked twice");
    web_cache_release(c, get(c, &x)); /* b goes */
    is_int(merges_of(c), 3, "a third range merged");
    web_cache_release(c, get(c, &a));
    is_int(merges_of(c), 3, "the recently used one was kept");
    web_cache_release(c, get(c, &b));
    is_int(merges_of(c), 4, "the least recently used one was dropped (merged again)");

    /* a held range is never dropped, even the least recently used: the table grows past its
     * size meanwhile, and the range goes when released */
    const web_merged *held = get(c, &a);
    const web_merged *hb = get(c, &b);
    uint64_t before = merges_of(c);
    const web_merged *hx = get(c, &x); /* every entry held: nothing can go */
    is_int(merges_of(c), before + 1, "a range merged while every other one is held");
    char *t = held ? folded_text(held->p) : NULL;
    is_str(t, "main;work;a 5\nmain;work;b 3\n", "the held ranges are intact");
    free(t);
    web_cache_release(c, hx);
    web_cache_release(c, hb);
    web_cache_release(c, held);
    web_side y = side("api", NULL, T0, T0 + 7200000);
    web_cache_release(c, get(c, &y)); /* back to two entries */
    before = merges_of(c);
    web_cache_release(c, get(c, &y));
    is_int(merges_of(c), before, "the newest range is kept after the table shrank");
    web_cache_free(c);
}

/* a range that reaches into the last minutes may still get windows: kept fresh_ms only */
static void test_fresh(void)
{
    web_cache *c = cache(8, 4, 0, 1);
    web_side recent = side("web", NULL, T0, NOW);
    const web_merged *m = NULL;
    flame_err e = FLAME_ERR_INIT;
    web_cache_merged(c, &recent, NOW, &m, &e);
    const web_merged *held = NULL;
    struct timespec ms2 = {0, 2000000};
    nanosleep(&ms2, NULL);
    web_cache_merged(c, &recent, NOW, &held, &e);
    ok(held == m, "an expired range someone holds is still shared");
    web_cache_release(c, held);
    web_cache_release(c, m);
    nanosleep(&ms2, NULL);
    web_cache_merged(c, &recent, NOW, &m, &e);
    is_int(merges_of(c), 2, "expired and released: merged again");
    web_cache_release(c, m);
    web_side past = side("web", NULL, T0, T0 + 20000);
    web_cache_release(c, get(c, &past));
    nanosleep(&ms2, NULL);
    web_cache_release(c, get(c, &past));
    is_int(merges_of(c), 3, "a range in the past never expires");
    web_cache_free(c);
}

static const calltree *tree(web_cache *c, const web_merged *m, size_t nodes, const char *path)
{
    calltree_opts o = {.max_nodes = nodes, .path = path};
    const calltree *t = NULL;
    flame_err e = FLAME_ERR_INIT;
    if (web_cache_tree(c, m, &o, &t, &e) < 0)
        printf("# web_cache_tree: %s\n", e.msg);
    return t;
}

static void test_tree(void)
{
    web_cache *c = cache(8, 4, 0, 0);
    web_side web = side("web", NULL, T0, T0 + 20000);
    const web_merged *m = get(c, &web);
    const calltree *t1 = tree(c, m, 8192, NULL);
    ok(t1 && t1->n == 6, "the tree of the range: all, main, work, a, b, idle");
    is_num(t1 ? t1->node[0].total : -1, 14, "its total");
    const calltree *t2 = tree(c, m, 8192, NULL);
    ok(t2 == t1, "the same options again: the kept tree");
    web_cache_tree_release(c, t2);
    const calltree *t3 = tree(c, m, 8192, "");
    ok(t3 == t1, "an empty path is no path");
    web_cache_tree_release(c, t3);
    /* another budget replaces the kept tree; the one held stays whole until released */
    const calltree *small = tree(c, m, 2, NULL);
    ok(small && small != t1 && small->cut > 0, "another budget: another tree, cut");
    is_int(t1 ? t1->n : 0, 6, "the replaced tree is still readable by whoever holds it");
    is_num(t1 ? t1->node[t1->n - 1].total : -1, 3, "(its last node too: b, 3)");
    web_cache_tree_release(c, t1);
    const calltree *again = tree(c, m, 2, NULL);
    ok(again == small, "the newest tree is the kept one");
    web_cache_tree_release(c, again);
    web_cache_tree_release(c, small);
    const calltree *zoom = tree(c, m, 8192, "main;work");
    ok(zoom && zoom->path == 2, "a zoomed tree keeps its path");
    is_num(zoom ? zoom->node[0].total : -1, 10, "and is that subtree's");
    const calltree *z2 = tree(c, m, 8192, "main;work");
    ok(z2 == zoom, "the same zoom again: kept");
    web_cache_tree_release(c, z2);
    web_cache_tree_release(c, zoom);
    web_cache_release(c, m);
    /* a range dropped from the table frees its kept tree (ASan: no leak, no double free) */
    web_cache_free(c);
    c = cache(1, 4, 0, 0);
    m = get(c, &web);
    web_cache_tree_release(c, tree(c, m, 8192, NULL));
    web_cache_release(c, m);
    web_side api = side("api", NULL, T0, T0 + 20000);
    m = get(c, &api); /* drops web's range and its tree */
    const calltree *ta = tree(c, m, 8192, NULL);
    is_num(ta ? ta->node[0].total : -1, 7, "a new range, its own tree");
    web_cache_tree_release(c, ta);
    web_cache_release(c, m);
    web_cache_free(c);
}

static void test_handles(void)
{
    web_cache *c = cache(8, 1, 50, 0);
    store *s1 = NULL, *s2 = NULL;
    flame_err e = FLAME_ERR_INIT;
    is_int(web_cache_get(c, &s1, &e), 0, "a store handle");
    e = (flame_err)FLAME_ERR_INIT;
    ok(web_cache_get(c, &s2, &e) < 0 && e.code == FLAME_EXIT_STORE && strstr(e.msg, "busy"),
       "the only handle lent: busy after the wait");
    web_side web = side("web", NULL, T0, T0 + 20000);
    const web_merged *m = NULL;
    e = (flame_err)FLAME_ERR_INIT;
    ok(web_cache_merged(c, &web, NOW, &m, &e) < 0 && strstr(e.msg, "busy"),
       "a merge with no handle to read with: busy");
    web_cache_put(c, s1, false);
    is_int(web_cache_get(c, &s2, &e), 0, "given back: lent again");
    web_cache_put(c, s2, true); /* broken: closed, another opened on demand */
    m = get(c, &web);
    ok(m != NULL, "after a broken handle, a new one is opened");
    web_cache_release(c, m);
    /* the failed merge left no entry behind: it is merged now */
    is_int(merges_of(c), 2, "the failed merge counted, and the range merged after it");
    web_cache_free(c);
}

typedef struct {
    web_cache *c;
    const web_side *s;
    const web_merged *m;
} asker;

static void *ask(void *arg)
{
    asker *a = arg;
    a->m = get(a->c, a->s);
    const calltree *t = a->m ? tree(a->c, a->m, 3, NULL) : NULL;
    if (t && t->node[0].total != 14)
        a->m = NULL;
    web_cache_tree_release(a->c, t);
    return NULL;
}

static void test_threads(void)
{
    web_cache *c = cache(8, 4, 30000, 0);
    web_side web = side("web", NULL, T0, T0 + 20000);
    enum { N = 8 };
    pthread_t th[N];
    asker a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (asker){.c = c, .s = &web};
        pthread_create(&th[i], NULL, ask, &a[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    int same = 0;
    for (int i = 0; i < N; i++)
        same += a[i].m && a[i].m == a[0].m;
    is_int(same, N, "8 threads asking one range at once share one merge");
    is_int(merges_of(c), 1, "merged once");
    is_int(hits_of(c), N - 1, "the others waited for it");
    for (int i = 0; i < N; i++)
        web_cache_release(c, a[i].m);
    web_cache_free(c);
}

int main(void)
{
    scratch_make();
    make_store();
    test_merges();
    test_lru();
    test_fresh();
    test_tree();
    test_handles();
    test_threads();
    free((char *)db);
    scratch_remove();
    return tap_done();
}
