/* Writing windows into a ClickHouse store (schema 2, docs/STORE.md): one row per window, its
 * (stack, count) pairs as arrays of small numbers. A stack is named in a window by a small id
 * that this handle numbers itself (1, 2, 3, ... in order of first sight) under a random "run" key:
 * the handle is the run's only writer, so no coordination with other writers is needed, and the
 * ids of a window, sorted, differ by small gaps. The run's dictionary (run, id) -> stack hash and
 * the stack texts are sent before the first window that uses them. Why small numbers: 18.16
 * compresses with LZ4 only (no column codecs), which does little for 64-bit hashes or for the
 * zero high bytes of wide integers; gaps and counts as low bytes, with the rest in nearly-zero
 * arrays beside, compress to ~1.3 bytes a pair (docs/BENCHMARKS.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "store/chtext.h"
#include "store/clickhouse_impl.h"

/* Stacks numbered by one run; past it the handle starts a new run: the map stays at ~25 MB
 * (2M slots of 12 bytes; ~50 MB if one batch goes past it; CH_ID_MAX bounds that). */
#define CH_RUN_MAX_IDS ((size_t)1 << 20)

/* A new run: a random key and an empty dictionary. */
static void run_new(ch *c)
{
    uint64_t r = 0;
    /* the key only has to differ from every other writer's: getrandom, else time and pid */
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
    }
    c->run = r + (r == 0);
    if (c->id_cap)
        memset(c->id_keys, 0, c->id_cap * sizeof *c->id_keys);
    c->id_n = 0;
}

static void ch_run_forget(ch *c)
{
    c->run = 0; /* the next put starts a new run */
}

/* The id of stack key k in this run (0 = not numbered yet). */
static uint32_t id_of(const ch *c, uint64_t k)
{
    if (!c->id_cap)
        return 0;
    for (size_t i = k & (c->id_cap - 1); c->id_keys[i]; i = (i + 1) & (c->id_cap - 1))
        if (c->id_keys[i] == k)
            return c->id_vals[i];
    return 0;
}

static int id_add(ch *c, uint64_t k, uint32_t id)
{
    if ((c->id_n + 1) * 2 > c->id_cap) {
        size_t nc = c->id_cap ? c->id_cap * 2 : 4096, oc = c->id_cap;
        uint64_t *nk = calloc(nc, sizeof *nk), *ok = c->id_keys;
        uint32_t *nv = malloc(nc * sizeof *nv), *ov = c->id_vals;
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        c->id_keys = nk;
        c->id_vals = nv;
        c->id_cap = nc;
        c->id_n = 0;
        for (size_t i = 0; i < oc; i++)
            if (ok[i])
                id_add(c, ok[i], ov[i]);
        free(ok);
        free(ov);
    }
    size_t i = k & (c->id_cap - 1);
    while (c->id_keys[i])
        i = (i + 1) & (c->id_cap - 1);
    c->id_keys[i] = k;
    c->id_vals[i] = id;
    c->id_n++;
    return 0;
}

typedef struct pair {
    uint32_t id;
    uint64_t count;
} pair;

typedef struct put_ctx {
    ch *c;
    FILE *stacks, *dict; /* the bodies of the stack texts and of the dictionary rows */
    pair *pairs;         /* the window's */
    size_t n, cap;
    char *cut;
    flame_err *err;
} put_ctx;

static int put_stack(void *ud, const char *stack, size_t len, double count)
{
    put_ctx *p = ud;
    ch *c = p->c;
    if (!(count >= 0.5))
        return 0;
    if (len > STORE_MAX_STACK && !p->cut && !(p->cut = malloc(STORE_MAX_STACK)))
        return flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    const char *text;
    len = stack_bound(stack, len, p->cut, &text);
    uint64_t key = stack_key(text, len);
    key += key == 0; /* 0 marks a free slot of the map */
    uint32_t id = id_of(c, key);
    if (!id) {
        if (c->id_n + 1 >= CH_ID_MAX) /* one put of 16M new stacks: refused, not stored wrong */
            return flame_fail(p->err, FLAME_EXIT_ERROR, "too many distinct stacks in one put");
        id = (uint32_t)c->id_n + 1;
        if (id_add(c, key, id) < 0)
            return flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
        fprintf(p->stacks, "%llu\t", (unsigned long long)key);
        ch_tsv_put(p->stacks, text, len);
        fputc('\n', p->stacks);
        fprintf(p->dict, "%llu\t%u\t%llu\n", (unsigned long long)c->run, id,
                (unsigned long long)key);
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 1024;
        pair *np = realloc(p->pairs, nc * sizeof *np);
        if (!np)
            return flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
        p->pairs = np;
        p->cap = nc;
    }
    /* a count past what the arrays hold is capped (2^40 samples: never in practice) */
    p->pairs[p->n++] =
        (pair){id, count >= (double)CH_COUNT_MAX ? CH_COUNT_MAX - 1 : (uint64_t)llround(count)};
    return 0;
}

static int by_id(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* "[lo...]\t[hi...]": each value x as x % 256 and x / 256 (CH_IDS, CH_COUNTS). gaps: the
 * ids' differences (the first from 0), else the counts. */
static void put_arrays(FILE *f, const pair *v, size_t n, bool gaps)
{
    for (int half = 0; half < 2; half++) {
        fputs(half ? "\t[" : "[", f);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = gaps ? v[i].id - (i ? v[i - 1].id : 0) : v[i].count;
            fprintf(f, i ? ",%llu" : "%llu", (unsigned long long)(half ? x >> 8 : x & 255));
        }
        fputc(']', f);
    }
}

static int put_window(put_ctx *p, FILE *rows, const store_window *w)
{
    const char *labels[] = {w->host, w->container_id, w->container_name, w->image};
    char buf[STORE_MAX_LABEL];
    for (int i = 0; i < 4; i++) {
        label_copy(buf, labels[i]);
        ch_tsv_put(rows, buf, strlen(buf));
        fputc('\t', rows);
    }
    label_copy(buf, w->jvm_version);
    fprintf(rows, "%lld\t", (long long)w->jvm_pid);
    ch_tsv_put(rows, buf, strlen(buf));
    fprintf(rows, "\t%lld\t%lld\t%lld\t%llu\t0\t%llu\t", (long long)w->start_ms,
            (long long)w->end_ms, (long long)w->frequency, (unsigned long long)w->samples,
            (unsigned long long)p->c->run);
    p->n = 0;
    if (profile_each_stack(w->stacks, put_stack, p) != 0)
        return p->err->code ? -1 : flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    /* a stack seen twice in one profile (it cannot be, but the ids must be distinct) would
     * only add: sorted by id, equal ids merged */
    qsort(p->pairs, p->n, sizeof *p->pairs, by_id);
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (m && p->pairs[m - 1].id == p->pairs[i].id)
            p->pairs[m - 1].count += p->pairs[i].count;
        else
            p->pairs[m++] = p->pairs[i];
    }
    put_arrays(rows, p->pairs, m, true);
    fputc('\t', rows);
    put_arrays(rows, p->pairs, m, false);
    fputc('\n', rows);
    return 0;
}

static int put_requests(store *s, const store_window *w, size_t n, flame_err *err);

int ch_put(store *s, const store_window *w, size_t n, flame_err *err)
{
    ch *c = ch_of(s);
    c->timeout_s = CH_PUT_TIMEOUT_S; /* every request of a put, ch_ready's included */
    int rc = put_requests(s, w, n, err);
    c->timeout_s = CH_READ_TIMEOUT_S;
    return rc;
}

static int put_requests(store *s, const store_window *w, size_t n, flame_err *err)
{
    ch *c = ch_of(s);
    if (ch_ready(s, err) < 0)
        return -1;
    if (!c->run || c->id_n >= CH_RUN_MAX_IDS)
        run_new(c);
    char *sbody = NULL, *dbody = NULL, *rbody = NULL;
    size_t slen = 0, dlen = 0, rlen = 0;
    put_ctx p = {.c = c, .err = err};
    p.stacks = open_memstream(&sbody, &slen);
    p.dict = open_memstream(&dbody, &dlen);
    FILE *rows = open_memstream(&rbody, &rlen);
    int rc = p.stacks && p.dict && rows ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_window(&p, rows, &w[i]);
    /* Every stream is closed (no short-circuit: a failed one must not leak the others). */
    bool bad = false;
    FILE *streams[] = {p.stacks, p.dict, rows};
    for (size_t k = 0; k < sizeof streams / sizeof *streams; k++)
        if (streams[k])
            bad |= (ferror(streams[k]) | fclose(streams[k])) != 0;
    if (rc == 0 && (bad || !sbody || !dbody || !rbody))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* texts, then the dictionary, then the windows: a window never names an id the server
     * cannot resolve yet (a text sent twice, after a retry, is merged away by
     * ReplacingMergeTree) */
    if (rc == 0 && slen)
        rc = ch_post(s, "INSERT INTO stacks (stack_hash, folded) FORMAT TabSeparated", sbody, slen,
                     NULL, err);
    if (rc == 0 && dlen)
        rc = ch_post(s, "INSERT INTO stack_ids (run, id, stack_hash) FORMAT TabSeparated", dbody,
                     dlen, NULL, err);
    if (rc == 0)
        rc = ch_post(s, "INSERT INTO windows (" CH_WINDOW_COLS ") FORMAT TabSeparated", rbody, rlen,
                     NULL, err);
    /* which of the new ids arrived is unknown: the next put numbers afresh in a new run (the
     * windows stored so far keep theirs, complete) */
    if (rc < 0)
        ch_run_forget(c);
    free(sbody);
    free(dbody);
    free(rbody);
    free(p.pairs);
    free(p.cut);
    return rc;
}
