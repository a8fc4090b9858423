/* The SQLite backend's dictionary of stacks (store/sqlite_impl.h): a handle reads the chunks it
 * has not seen (all of them after a rewrite: a new generation), stores the chunk of what a put
 * adds, and keeps it in shape: the stacks no window uses dropped (the ids renumbered, every
 * window's pairs rewritten) when they are many, many small chunks rewritten into large ones. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* A rewritten dictionary is stored in chunks of about this many bytes (before deflate): few
 * rows, each deflated with all the context a chunk can give. */
#define SQ_CHUNK_RAW (1u << 20)

/* A dictionary error: damaged (the chunk did not fit), out of memory, or full. */
int sq_dict_fail(sq *q, int rc, flame_err *err)
{
    if (rc == -1)
        return store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (its dictionary of stacks)",
                          q->path);
    if (errno == E2BIG)
        return store_fail(err, STORE_ERR_IO,
                          "%s: the dictionary of stacks is full (%u stacks): keep less of the "
                          "store (docker flame prune --retain 6h)",
                          q->path, q->d.nstacks);
    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
}

int sq_dict_sync(sq *q, flame_err *err)
{
    int64_t gen;
    if (sq_int(q, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'dict_generation'", &gen,
               err) < 0)
        return -1;
    if (gen != q->dict_gen) { /* rewritten (or never read): from the start */
        dict_reset(&q->d);
        q->dict_last = 0;
        q->dict_gen = gen;
    }
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q, "SELECT id, chunk FROM dict WHERE id > ?1 ORDER BY id", &st, err) < 0)
        return -1;
    sqlite3_bind_int64(st, 1, q->dict_last);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int r = dict_apply(&q->d, sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1));
        if (r < 0) {
            /* what was applied stays; the next sync starts from the start */
            q->dict_gen = -1;
            return sq_dict_fail(q, r, err);
        }
        q->dict_last = sqlite3_column_int64(st, 0);
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(q, err, rc, "reading the dictionary");
}

/* The dictionary was rewritten: a new generation, so every handle reads it again. */
static int bump_generation(sq *q, flame_err *err)
{
    return sq_exec(q,
                   "INSERT OR REPLACE INTO meta VALUES('dict_generation', CAST(coalesce((SELECT"
                   " CAST(value AS INTEGER) FROM meta WHERE key = 'dict_generation'), 0) + 1 AS"
                   " TEXT))",
                   err);
}

static int insert_chunk(void *ctx, const uint8_t *chunk, size_t len)
{
    sqlite3_stmt *ins = ctx;
    sqlite3_reset(ins);
    sqlite3_bind_blob(ins, 1, chunk, (int)len, SQLITE_STATIC);
    return sqlite3_step(ins) == SQLITE_DONE ? 0 : 1;
}

/* Replace the stored chunks by d in large ones, a new generation (in the caller's transaction);
 * this handle reads it back at its next sync. */
int sq_dict_rewrite(sq *q, const dict *d, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *ins = NULL;
    if (sq_exec(q, "DELETE FROM dict", err) < 0 ||
        sq_prepare(q, "INSERT INTO dict(chunk) VALUES(?1)", &ins, err) < 0)
        return -1;
    int rc = dict_encode_all(d, SQ_CHUNK_RAW, insert_chunk, ins);
    if (rc < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc > 0)
        return sq_fail(q, err, sqlite3_errcode(q->db), "storing the dictionary");
    if (bump_generation(q, err) < 0)
        return -1;
    q->dict_gen = -1;
    return 0;
}

/* The ids a window's pairs name, mapped through map (old id -> new id, ascending with the old),
 * re-encoded into *blob (malloc'd). 0, -1 damaged or out of memory (err set). */
int sq_remap_pairs(sq *q, pairs_buf *b, const uint32_t *map, uint32_t n, uint8_t **blob,
                   size_t *len, flame_err *err)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->p[i].id > n || !map[b->p[i].id])
            return store_fail(err, STORE_ERR_CORRUPT,
                              "%s: damaged store (a window names stack %llu, which is missing)",
                              q->path, (unsigned long long)b->p[i].id);
        b->p[i].id = map[b->p[i].id];
    }
    b->n = pairs_normalize(b->p, b->n);
    *blob = malloc(pairs_bound(b->n));
    *len = *blob ? pairs_encode(b->p, b->n, *blob) : 0;
    if (!*len) {
        free(*blob);
        *blob = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    return 0;
}

/* Rewrite each window's pairs through map (table: where they are; cols: id, pairs). */
static int remap_windows(sq *q, const uint32_t *map, uint32_t n, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *sel = NULL, *upd = NULL;
    if (sq_prepare(q, "SELECT id, pairs FROM windows", &sel, err) < 0 ||
        sq_prepare(q, "UPDATE windows SET pairs = ?2 WHERE id = ?1", &upd, err) < 0)
        return -1;
    pairs_buf b = {0};
    int rc = 0, r;
    while (rc == 0 && (r = sqlite3_step(sel)) == SQLITE_ROW) {
        uint8_t *blob = NULL;
        size_t len = 0;
        rc = sq_decode(q, sel, 1, &b, err);
        if (rc == 0)
            rc = sq_remap_pairs(q, &b, map, n, &blob, &len, err);
        if (rc == 0) {
            sqlite3_reset(upd);
            sqlite3_bind_int64(upd, 1, sqlite3_column_int64(sel, 0));
            sqlite3_bind_blob(upd, 2, blob, (int)len, SQLITE_STATIC);
            if ((r = sqlite3_step(upd)) != SQLITE_DONE)
                rc = sq_fail(q, err, r, "rewriting windows");
        }
        free(blob);
    }
    pairs_buf_free(&b);
    if (rc == 0 && r != SQLITE_DONE)
        rc = sq_fail(q, err, r, "reading windows");
    return rc;
}

/* What a window row is, to tell whether the row with its id is still the one decoded: its
 * columns but the pairs (their length stands for them). st's columns 1 to 7. */
static uint64_t row_key(sqlite3_stmt *st)
{
    uint64_t h = 1469598103934665603ull;
    for (int c = 1; c <= 7; c++) {
        h ^= (uint64_t)sqlite3_column_int64(st, c);
        h *= 1099511628211ull;
    }
    return h;
}

#define ROW_COLS "id, source, start_ms, end_ms, level, samples, uid, length(pairs)"

typedef struct seen_row {
    int64_t id;
    uint64_t key;
} seen_row;

typedef struct gc_ctx {
    sq *q;
    uint8_t *used; /* bit per stack id 1..n */
    uint32_t n, live;
    pairs_buf b;
    seen_row *seen; /* the windows decoded in phase 1, in id order */
    size_t nseen, cap;
    flame_err *err;
} gc_ctx;

static bool is_used(const gc_ctx *g, uint32_t id)
{
    return g->used[id / 8] & (1u << (id % 8));
}

static void set_used(gc_ctx *g, uint32_t id)
{
    if (!is_used(g, id))
        g->live++;
    g->used[id / 8] |= (uint8_t)(1u << (id % 8));
}

/* The stacks g->b names marked; a window naming one the dictionary lacks is damage: never free
 * what it might name. */
static int mark(gc_ctx *g)
{
    for (size_t i = 0; i < g->b.n; i++) {
        uint64_t id = g->b.p[i].id;
        if (id > g->n)
            return store_fail(g->err, STORE_ERR_CORRUPT,
                              "%s: damaged store (a window names stack %llu, which is missing)",
                              g->q->path, (unsigned long long)id);
        set_used(g, (uint32_t)id);
    }
    return 0;
}

/* Phase 1, in a read transaction (writers go on meanwhile): every window decoded, the stacks it
 * uses marked, each row remembered by its id and key. */
static int gc_mark_all(gc_ctx *g)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(g->q, "SELECT " ROW_COLS ", pairs FROM windows ORDER BY id", &st, g->err) < 0)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sq_decode(g->q, st, 8, &g->b, g->err) < 0 || mark(g) < 0)
            return -1;
        if (g->nseen == g->cap) {
            size_t nc = g->cap ? g->cap * 2 : 1024;
            seen_row *ns = realloc(g->seen, nc * sizeof *ns);
            if (!ns)
                return flame_fail(g->err, FLAME_EXIT_ERROR, "out of memory");
            g->seen = ns;
            g->cap = nc;
        }
        g->seen[g->nseen++] = (seen_row){sqlite3_column_int64(st, 0), row_key(st)};
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(g->q, g->err, rc, "reading windows");
}

/* Phase 2, under the write lock: the windows written since phase 1 (a put, a compaction's
 * bucket, a row whose id was taken again) are decoded too, the others only looked at. */
static int gc_mark_new(gc_ctx *g)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL, *one = NULL;
    if (sq_prepare(g->q, "SELECT " ROW_COLS " FROM windows ORDER BY id", &st, g->err) < 0 ||
        sq_prepare(g->q, "SELECT pairs FROM windows WHERE id = ?1", &one, g->err) < 0)
        return -1;
    size_t k = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        while (k < g->nseen && g->seen[k].id < id)
            k++;
        if (k < g->nseen && g->seen[k].id == id && g->seen[k].key == row_key(st))
            continue;
        sqlite3_reset(one);
        sqlite3_bind_int64(one, 1, id);
        if ((rc = sqlite3_step(one)) != SQLITE_ROW)
            return sq_fail(g->q, g->err, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc,
                           "reading windows");
        if (sq_decode(g->q, one, 0, &g->b, g->err) < 0 || mark(g) < 0)
            return -1;
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(g->q, g->err, rc, "reading windows");
}

/* Grow the marks to the dictionary's n stacks now; the stacks added since phase 1 count as used
 * (a put that added them stored windows naming them). */
static int gc_grow(gc_ctx *g, uint32_t n)
{
    if (n <= g->n)
        return 0;
    uint8_t *nu = realloc(g->used, (size_t)n / 8 + 1);
    if (!nu)
        return flame_fail(g->err, FLAME_EXIT_ERROR, "out of memory");
    memset(nu + g->n / 8 + 1, 0, (size_t)n / 8 - g->n / 8);
    g->used = nu;
    uint32_t from = g->n + 1;
    g->n = n;
    for (uint32_t id = from; id <= n; id++)
        set_used(g, id);
    return 0;
}

/* Is there work: no window left (the dictionary goes), a quarter of the stacks unused (renumber:
 * every window rewritten, so not for a few), many small chunks (rewritten into large ones)? */
enum gc_work { GC_NONE, GC_DROP, GC_RENUMBER, GC_CHUNKS };
static enum gc_work gc_work(const gc_ctx *g, int64_t windows, int64_t chunks)
{
    uint32_t dead = g->n - g->live;
    if (chunks == 0)
        return GC_NONE;
    if (windows == 0)
        return GC_DROP;
    if (dead > 0 && (uint64_t)dead * 4 >= g->n)
        return GC_RENUMBER;
    return chunks > SQ_CHUNKS_MAX ? GC_CHUNKS : GC_NONE;
}

/* The dictionary of the stacks marked used, ids renumbered densely in their order; every
 * window's pairs rewritten through the map. In the caller's write transaction. */
static int renumber(gc_ctx *g)
{
    sq *q = g->q;
    flame_err *err = g->err;
    dict nd;
    dict_init(&nd);
    _cleanup_free_ uint32_t *map = calloc((size_t)g->n + 1, sizeof *map);
    _cleanup_free_ char *text = NULL;
    size_t cap = 0, len;
    int rc = map ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (uint32_t id = 1; rc == 0 && id <= g->n; id++) {
        if (!is_used(g, id))
            continue;
        int t = dict_stack_text(&q->d, id, &text, &cap, &len);
        if (t < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        else if (t == 0)
            rc = store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (stack %u has no text)",
                            q->path, id);
        else if (dict_add_stack(&nd, text, len, &map[id]) < 0)
            rc = sq_dict_fail(q, -2, err);
    }
    if (rc == 0)
        rc = remap_windows(q, map, g->n, err);
    if (rc == 0)
        rc = sq_dict_rewrite(q, &nd, err);
    dict_free(&nd);
    return rc;
}

int sq_gc_stacks(sq *q, uint64_t *freed, flame_err *err)
{
    gc_ctx g = {.q = q, .err = err};
    int64_t windows = 0, chunks = 0, gen;
    uint64_t gone = 0;
    /* phase 1 reads one snapshot (WAL: writers are not held up by it) */
    int rc = sq_exec(q, "BEGIN", err);
    if (rc == 0)
        rc = sq_dict_sync(q, err);
    gen = q->dict_gen;
    g.n = q->d.nstacks;
    if (rc == 0)
        rc = sq_int(q, "SELECT count(*) FROM windows", &windows, err);
    if (rc == 0)
        rc = sq_int(q, "SELECT count(*) FROM dict", &chunks, err);
    if (rc == 0 && !(g.used = calloc((size_t)g.n / 8 + 1, 1)))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0 && windows > 0)
        rc = gc_mark_all(&g);
    sq_rollback(q);
    /* phase 2, only when there is work: the write lock, the rows written meanwhile looked at */
    if (rc == 0 && gc_work(&g, windows, chunks) != GC_NONE) {
        rc = sq_begin(q, err);
        if (rc == 0)
            rc = sq_dict_sync(q, err);
        /* rewritten by another process meanwhile: its ids are not the ones marked */
        bool same = rc == 0 && q->dict_gen == gen;
        if (same)
            rc = gc_grow(&g, q->d.nstacks);
        if (same && rc == 0)
            rc = gc_mark_new(&g);
        if (same && rc == 0)
            rc = sq_int(q, "SELECT count(*) FROM windows", &windows, err);
        if (same && rc == 0)
            rc = sq_int(q, "SELECT count(*) FROM dict", &chunks, err);
        enum gc_work w = same && rc == 0 ? gc_work(&g, windows, chunks) : GC_NONE;
        if (w == GC_DROP) {
            rc = sq_exec(q, "DELETE FROM dict", err);
            if (rc == 0)
                rc = bump_generation(q, err);
            q->dict_gen = -1;
            gone = g.n;
        } else if (w == GC_RENUMBER) {
            rc = renumber(&g);
            gone = g.n - g.live;
        } else if (w == GC_CHUNKS) {
            rc = sq_dict_rewrite(q, &q->d, err);
        }
        if (rc == 0)
            rc = sq_commit(q, err);
        else
            sq_rollback(q);
    }
    pairs_buf_free(&g.b);
    free(g.used);
    free(g.seen);
    if (rc == 0 && freed)
        *freed += gone;
    return rc;
}

int sq_dict_store_new(sq *q, flame_err *err)
{
    if (!dict_dirty(&q->d))
        return 0;
    _cleanup_stmt_ sqlite3_stmt *ins = NULL;
    uint8_t *blob = NULL;
    size_t len = 0;
    int rc = sq_prepare(q, "INSERT INTO dict(chunk) VALUES(?1)", &ins, err);
    if (rc == 0 && dict_encode(&q->d, &blob, &len) < 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0 && insert_chunk(ins, blob, len) != 0)
        rc = sq_fail(q, err, sqlite3_errcode(q->db), "storing stacks");
    if (rc == 0)
        q->dict_last = sqlite3_last_insert_rowid(q->db);
    free(blob);
    return rc;
}

int sq_dict_count(sq *q, int64_t *stacks, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    *stacks = 0;
    /* the first 40 bytes hold the header (a format byte and six varints) */
    if (sq_prepare(q, "SELECT substr(chunk, 1, 40) FROM dict ORDER BY id DESC LIMIT 1", &st, err) <
        0)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return sq_fail(q, err, rc, "reading the dictionary");
    dict_span sp;
    if (dict_chunk_span(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), &sp) < 0)
        return sq_dict_fail(q, -1, err);
    *stacks = (int64_t)sp.first_stack + sp.nstacks - 1;
    return 0;
}
