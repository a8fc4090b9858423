/* Writing windows into a ClickHouse store (schema 3, docs/STORE.md): one row per window, its
 * (stack, count) pairs as arrays of small numbers. A stack is named in a window by a small id of
 * this handle's dictionary (store/dict.h: frames once, stacks as prefix-sharing paths), numbered
 * 1, 2, 3, ... in order of first sight under a random "run" key: the handle is the run's only
 * writer, so no coordination with other writers is needed, and the ids of a window, sorted,
 * differ by small gaps. What a put adds to the dictionary goes first, as one chunk (a row of
 * dict), then the windows. Why small numbers: 18.16 compresses with LZ4 only (no column codecs),
 * which does little for 64-bit hashes or for the zero high bytes of wide integers; gaps and
 * counts as low bytes, with the rest in nearly-zero arrays beside, compress to ~1.3 bytes a pair
 * (docs/BENCHMARKS.md). */
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

/* A run ends at this many stacks (the handle's dictionary stays at ~30 MB), or after a day: a
 * reader fetches the dictionaries of the runs in its range, so a run should not span a week;
 * and compaction deletes the dictionary of a run no window names any more. */
#define CH_RUN_MAX_STACKS ((uint32_t)1 << 20)
#define CH_RUN_MAX_MS (86400LL * 1000)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
    dict_reset(&c->d);
    c->seq = 0;
    c->run_start_ms = now_ms();
}

typedef struct pair {
    uint32_t id;
    uint64_t count;
} pair;

typedef struct put_ctx {
    ch *c;
    pair *pairs; /* the window's */
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
    len = store_stack_bound(stack, len, p->cut, &text);
    uint32_t id = 0;
    if (dict_add_stack(&c->d, text, len, &id) < 0) {
        if (errno == EINVAL) /* an empty stack: not a stack */
            return 0;
        return errno == E2BIG ? flame_fail(p->err, FLAME_EXIT_ERROR, "too many distinct stacks")
                              : flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (id >= CH_ID_MAX) /* one put of 16M new stacks: refused, not stored wrong */
        return flame_fail(p->err, FLAME_EXIT_ERROR, "too many distinct stacks in one put");
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
        store_label_copy(buf, labels[i]);
        ch_tsv_put(rows, buf, strlen(buf));
        fputc('\t', rows);
    }
    store_label_copy(buf, w->jvm_version);
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
    fprintf(rows, "\t%llu\t%s\n", (unsigned long long)(w->uid ? w->uid : store_uid()),
            store_type_of(w->type)); /* [a-z]: store_check_window */
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
    if (!c->run || c->d.nstacks >= CH_RUN_MAX_STACKS || now_ms() - c->run_start_ms >= CH_RUN_MAX_MS)
        run_new(c);
    char *rbody = NULL, *dbody = NULL;
    size_t rlen = 0, dlen = 0;
    put_ctx p = {.c = c, .err = err};
    FILE *rows = open_memstream(&rbody, &rlen);
    int rc = rows ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_window(&p, rows, &w[i]);
    if (rows && (ferror(rows) | fclose(rows)) != 0 && rc == 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* the stacks new to the run: one chunk, "run seq stacks at chunk" */
    if (rc == 0 && dict_dirty(&c->d)) {
        uint8_t *chunk = NULL;
        size_t clen = 0;
        FILE *f = open_memstream(&dbody, &dlen);
        if (!f || dict_encode(&c->d, &chunk, &clen) < 0) {
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        } else {
            fprintf(f, "%llu\t%u\t%u\t%lld\t", (unsigned long long)c->run, c->seq,
                    c->d.nstacks - c->d.mark_stacks, (long long)now_ms());
            ch_tsv_put(f, (const char *)chunk, clen);
            fputc('\n', f);
        }
        if (f && (ferror(f) | fclose(f)) != 0 && rc == 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        free(chunk);
    }
    if (rc == 0 && !rbody)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* the dictionary's chunk, then the windows: a window never names an id the server cannot
     * resolve (a chunk sent twice, after a retry, is one (run, seq): readers take it once) */
    if (rc == 0 && dlen)
        rc = ch_post(s, "INSERT INTO dict (run, seq, stacks, at, chunk) FORMAT TabSeparated", dbody,
                     dlen, NULL, err);
    if (rc == 0)
        rc = ch_post(s, "INSERT INTO windows (" CH_WINDOW_COLS ") FORMAT TabSeparated", rbody, rlen,
                     NULL, err);
    if (rc == 0 && dlen) {
        dict_mark(&c->d);
        c->seq++;
    }
    /* which of the new ids arrived is unknown: the next put numbers afresh in a new run (the
     * windows stored so far keep theirs, complete) */
    if (rc < 0)
        c->run = 0;
    free(rbody);
    free(dbody);
    free(p.pairs);
    free(p.cut);
    return rc;
}
