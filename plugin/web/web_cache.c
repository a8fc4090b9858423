/* serve's store handles, merge slots and merged ranges (plugin/web/web_cache.h). One mutex guards
 * it all; merges and store calls run outside it. */
#include "plugin/web/web_cache.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum ent_state { ENT_LOADING, ENT_READY };

/* A built call tree, shared by the requests that hold it and by its entry's slot. */
typedef struct tree_memo {
    calltree t; /* first: a calltree pointer is its memo's */
    size_t nodes;
    char *path;
    int refs;
} tree_memo;

typedef struct entry {
    char *key;
    enum ent_state state;
    web_merged m;
    int refs;
    uint64_t used;      /* LRU tick */
    int64_t expires_ms; /* 0 = never (a range in the past) */
    bool dropped;       /* out of the table: freed by its last release */
    tree_memo *tree;    /* the tree asked last, or NULL */
} entry;

struct web_cache {
    web_cache_opts o;
    char *url;
    char *name;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    store **idle;
    size_t nidle;
    unsigned open; /* handles opened (idle or lent) */
    unsigned merging;
    entry **ent;
    size_t nent;
    uint64_t tick, hits, merges;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait on the condition until deadline (CLOCK_REALTIME, pthread's default). false: timed out. */
static bool wait_until(web_cache *c, const struct timespec *deadline)
{
    return pthread_cond_timedwait(&c->cv, &c->mu, deadline) != ETIMEDOUT;
}

static struct timespec deadline_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

static int busy(flame_err *err, const char *what)
{
    flame_fail(err, FLAME_EXIT_STORE, "busy: %s; try again", what);
    err->detail = STORE_ERR_UNREACHABLE;
    return -1;
}

int web_cache_new(const web_cache_opts *o, web_cache **out, flame_err *err)
{
    web_cache *c = calloc(1, sizeof *c);
    if (!c)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    c->o = *o;
    if (!c->o.entries)
        c->o.entries = 8;
    if (!c->o.handles)
        c->o.handles = 4;
    if (!c->o.merges)
        c->o.merges = 2;
    if (!c->o.wait_ms)
        c->o.wait_ms = 30000;
    if (!c->o.fresh_ms)
        c->o.fresh_ms = 10000;
    c->url = o->store_url ? strdup(o->store_url) : NULL;
    c->idle = calloc(c->o.handles, sizeof *c->idle);
    c->ent = calloc(c->o.entries, sizeof *c->ent);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if ((o->store_url && !c->url) || !c->idle || !c->ent) {
        web_cache_free(c);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* one handle now: a store that cannot be opened fails the start, not the first request;
     * opened for reading: serve creates, migrates and writes nothing */
    store *s;
    if (store_open_read(c->url, &s, err) < 0) {
        web_cache_free(c);
        return -1;
    }
    c->name = strdup(store_name(s));
    c->idle[c->nidle++] = s;
    c->open = 1;
    if (!c->name) {
        web_cache_free(c);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    *out = c;
    return 0;
}

static void memo_unref(tree_memo *t)
{
    if (!t || --t->refs > 0)
        return;
    calltree_free(&t->t);
    free(t->path);
    free(t);
}

static void entry_free(entry *e)
{
    if (!e)
        return;
    memo_unref(e->tree); /* the slot's: every request released its tree before its range */
    profile_free(e->m.p);
    free(e->key);
    free(e);
}

void web_cache_free(web_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nidle; i++)
        store_close(c->idle[i]);
    for (size_t i = 0; i < c->nent; i++)
        entry_free(c->ent[i]);
    free(c->idle);
    free(c->ent);
    free(c->url);
    free(c->name);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

const char *web_cache_store_name(web_cache *c)
{
    return c->name;
}

int web_cache_get(web_cache *c, store **s, flame_err *err)
{
    struct timespec dl = deadline_in(c->o.wait_ms);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (c->nidle) {
            *s = c->idle[--c->nidle];
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
        if (c->open < c->o.handles) {
            c->open++;
            pthread_mutex_unlock(&c->mu);
            if (store_open_read(c->url, s, err) == 0)
                return 0;
            pthread_mutex_lock(&c->mu);
            c->open--;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
            return -1;
        }
        if (!wait_until(c, &dl)) {
            pthread_mutex_unlock(&c->mu);
            return busy(err, "every store connection is in use");
        }
    }
}

void web_cache_put(web_cache *c, store *s, bool broken)
{
    if (!s)
        return;
    pthread_mutex_lock(&c->mu);
    if (broken || c->nidle >= c->o.handles) {
        c->open--;
        pthread_mutex_unlock(&c->mu);
        store_close(s);
        pthread_mutex_lock(&c->mu);
    } else {
        c->idle[c->nidle++] = s;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The key of a side: everything store_profile is given, in order. */
static char *key_of(const web_side *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    fprintf(f, "%lld|%lld|%lld|%s|%s", (long long)s->since_ms, (long long)s->until_ms,
            (long long)s->pid, s->type ? s->type : "cpu", s->host ? s->host : "");
    /* a NUL cannot be in a value (web_query_decode refuses it): the separator */
    for (size_t i = 0; i < s->ncontainers; i++) {
        fputc('\x01', f);
        fputs(s->container[i], f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Drop e from the table (under the mutex); freed now or by its last release. */
static void drop(web_cache *c, size_t i)
{
    entry *e = c->ent[i];
    c->ent[i] = c->ent[--c->nent];
    if (e->refs)
        e->dropped = true;
    else
        entry_free(e);
}

/* Room for one more entry: the least recently used unheld one goes (or none: the table may grow
 * past its size while every entry is held; those go when released). */
static void make_room(web_cache *c)
{
    int64_t now = mono_ms();
    for (size_t i = 0; i < c->nent;)
        if (c->ent[i]->state == ENT_READY && !c->ent[i]->refs && c->ent[i]->expires_ms &&
            c->ent[i]->expires_ms <= now)
            drop(c, i);
        else
            i++;
    while (c->nent >= c->o.entries) {
        size_t victim = SIZE_MAX;
        for (size_t i = 0; i < c->nent; i++)
            if (c->ent[i]->state == ENT_READY && !c->ent[i]->refs &&
                (victim == SIZE_MAX || c->ent[i]->used < c->ent[victim]->used))
                victim = i;
        if (victim == SIZE_MAX)
            break;
        drop(c, victim);
    }
}

static int merge(web_cache *c, const web_side *side, web_merged *m, flame_err *err)
{
    store *s = NULL;
    if (web_cache_get(c, &s, err) < 0)
        return -1;
    m->p = profile_new();
    int rc = m->p ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    store_query q = {.host = side->host,
                     .since_ms = side->since_ms,
                     .until_ms = side->until_ms,
                     .jvm_pid = side->pid,
                     .type = side->type};
    for (size_t i = 0; rc == 0 && i < (side->ncontainers ? side->ncontainers : 1); i++) {
        q.container = side->ncontainers ? side->container[i] : NULL;
        rc = store_profile(s, &q, m->p, &m->info, err);
    }
    web_cache_put(c, s, rc < 0);
    if (rc < 0) {
        profile_free(m->p);
        m->p = NULL;
    }
    return rc;
}

int web_cache_merged(web_cache *c, const web_side *side, int64_t now_ms, const web_merged **out,
                     flame_err *err)
{
    char *key = key_of(side);
    if (!key)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    struct timespec dl = deadline_in(c->o.wait_ms);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        entry *e = NULL;
        for (size_t i = 0; i < c->nent && !e; i++)
            if (!strcmp(c->ent[i]->key, key))
                e = c->ent[i];
        if (e && e->state == ENT_READY && e->expires_ms && e->expires_ms <= mono_ms() && !e->refs) {
            for (size_t i = 0; i < c->nent; i++)
                if (c->ent[i] == e)
                    drop(c, i);
            e = NULL;
        }
        if (e && e->state == ENT_READY) {
            e->refs++;
            e->used = ++c->tick;
            c->hits++;
            pthread_mutex_unlock(&c->mu);
            free(key);
            *out = &e->m;
            return 0;
        }
        if (!e && c->merging < c->o.merges) {
            /* ours to merge: others asking for it wait for this one */
            make_room(c);
            e = calloc(1, sizeof *e);
            entry **grown =
                c->nent < c->o.entries ? c->ent : realloc(c->ent, (c->nent + 1) * sizeof *c->ent);
            if (!e || !grown) {
                free(e);
                pthread_mutex_unlock(&c->mu);
                free(key);
                return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            }
            c->ent = grown;
            e->key = key;
            e->state = ENT_LOADING;
            e->refs = 1;
            c->ent[c->nent++] = e;
            c->merging++;
            c->merges++;
            pthread_mutex_unlock(&c->mu);
            int rc = merge(c, side, &e->m, err);
            pthread_mutex_lock(&c->mu);
            c->merging--;
            if (rc < 0) {
                for (size_t i = 0; i < c->nent; i++)
                    if (c->ent[i] == e)
                        drop(c, i);
                e->refs--;
                if (e->dropped && !e->refs)
                    entry_free(e);
                pthread_cond_broadcast(&c->cv);
                pthread_mutex_unlock(&c->mu);
                return -1;
            }
            e->state = ENT_READY;
            e->used = ++c->tick;
            /* windows may still come for a range that reaches into the last minutes */
            if (side->until_ms > now_ms - STORE_MAX_WINDOW_MS / 60)
                e->expires_ms = mono_ms() + c->o.fresh_ms;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
            *out = &e->m;
            return 0;
        }
        if (!wait_until(c, &dl)) {
            pthread_mutex_unlock(&c->mu);
            free(key);
            return busy(err, "merges of other ranges are running");
        }
    }
}

void web_cache_release(web_cache *c, const web_merged *m)
{
    if (!m)
        return;
    entry *e = (entry *)((char *)m - offsetof(entry, m));
    pthread_mutex_lock(&c->mu);
    e->refs--;
    if (e->dropped && !e->refs)
        entry_free(e);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void web_cache_stats(web_cache *c, uint64_t *hits, uint64_t *merges)
{
    pthread_mutex_lock(&c->mu);
    *hits = c->hits;
    *merges = c->merges;
    pthread_mutex_unlock(&c->mu);
}

/* m is the web_merged inside an entry */
static entry *entry_of(const web_merged *m)
{
    return (entry *)((char *)m - offsetof(entry, m));
}

static bool same_path(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

int web_cache_tree(web_cache *c, const web_merged *m, const calltree_opts *o, const calltree **out,
                   flame_err *err)
{
    entry *e = entry_of(m);
    pthread_mutex_lock(&c->mu);
    tree_memo *t = e->tree;
    if (t && t->nodes == o->max_nodes && same_path(t->path, o->path)) {
        t->refs++;
        pthread_mutex_unlock(&c->mu);
        *out = &t->t;
        return 0;
    }
    pthread_mutex_unlock(&c->mu);
    /* built outside the lock: two requests may build the same tree, the later one is kept */
    t = calloc(1, sizeof *t);
    if (!t || (o->path && *o->path && !(t->path = strdup(o->path)))) {
        free(t);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    t->nodes = o->max_nodes;
    if (calltree_build(m->p, o, &t->t, err) < 0) {
        free(t->path);
        free(t);
        return -1;
    }
    /* the builder's array held the whole tree before the cut: what is kept needs less */
    calltree_node *fit = realloc(t->t.node, (t->t.n ? t->t.n : 1) * sizeof *fit);
    if (fit)
        t->t.node = fit;
    /* what the merge and the build freed (answers, dictionaries, the uncut tree: ~100 MB for a
     * day of 10 JVMs) back to the system, once the tree is made: glibc keeps it in its arenas
     * otherwise: after 8 cached ranges of a day of 10 JVMs, VmRSS 121-125 MB instead of 73-77 */
    malloc_trim(0);
    pthread_mutex_lock(&c->mu);
    t->refs = 2; /* the caller's and the slot's */
    memo_unref(e->tree);
    e->tree = t;
    pthread_mutex_unlock(&c->mu);
    *out = &t->t;
    return 0;
}

void web_cache_tree_release(web_cache *c, const calltree *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&c->mu);
    memo_unref((tree_memo *)t);
    pthread_mutex_unlock(&c->mu);
}
