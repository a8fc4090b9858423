/* The SQLite backend's dictionary of stacks (store/sqlite_impl.h): a handle reads the chunks it
 * has not seen (all of them after a rewrite: a new generation), stores the chunk of what a put
 * adds, and keeps it in shape: the stacks no window uses dropped (the ids renumbered, every
 * window's pairs rewritten) when they are many, many small chunks rewritten into large ones. */
#include <errno.h>
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
                          "%s: the dictionary of stacks is full (%u stacks): prune the store "
                          "(docker flame prune)",
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

int sq_gc_stacks(sq *q, uint64_t *freed, flame_err *err)
{
    int64_t windows, chunks;
    if (sq_dict_sync(q, err) < 0 || sq_int(q, "SELECT count(*) FROM windows", &windows, err) < 0 ||
        sq_int(q, "SELECT count(*) FROM dict", &chunks, err) < 0)
        return -1;
    uint32_t n = q->d.nstacks;
    if (chunks == 0)
        return 0;
    if (windows == 0) { /* nothing left to name: the dictionary goes whole */
        if (sq_exec(q, "DELETE FROM dict", err) < 0 || bump_generation(q, err) < 0)
            return -1;
        q->dict_gen = -1;
        if (freed)
            *freed += n;
        return 0;
    }
    _cleanup_free_ uint8_t *used = calloc((size_t)n / 8 + 1, 1);
    _cleanup_stmt_ sqlite3_stmt *wins = NULL;
    if (!used)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (sq_prepare(q, "SELECT pairs FROM windows", &wins, err) < 0)
        return -1;
    int rc;
    uint32_t live = 0;
    pairs_buf b = {0};
    while ((rc = sqlite3_step(wins)) == SQLITE_ROW) {
        /* a damaged window fails the whole collection: never free what it might name */
        if (sq_decode(q, wins, 0, &b, err) < 0) {
            pairs_buf_free(&b);
            return -1;
        }
        for (size_t i = 0; i < b.n; i++) {
            uint64_t id = b.p[i].id;
            if (id > n) {
                pairs_buf_free(&b);
                return store_fail(err, STORE_ERR_CORRUPT,
                                  "%s: damaged store (a window names stack %llu, which is missing)",
                                  q->path, (unsigned long long)id);
            }
            if (!(used[id / 8] & (1u << (id % 8))))
                live++;
            used[id / 8] |= (uint8_t)(1u << (id % 8));
        }
    }
    pairs_buf_free(&b);
    if (rc != SQLITE_DONE)
        return sq_fail(q, err, rc, "reading windows");
    uint32_t dead = n - live;
    /* a quarter of the stacks unused: renumber what is left (every window rewritten, so not
     * for a few); else only many small chunks are worth a rewrite */
    if (!(dead > 0 && (uint64_t)dead * 4 >= n) && chunks <= SQ_CHUNKS_MAX)
        return 0;
    if (dead == 0 || (uint64_t)dead * 4 < n)
        return sq_dict_rewrite(q, &q->d, err);
    dict nd;
    dict_init(&nd);
    _cleanup_free_ uint32_t *map = calloc((size_t)n + 1, sizeof *map);
    _cleanup_free_ char *text = NULL;
    size_t cap = 0, len;
    rc = map ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (uint32_t id = 1; rc == 0 && id <= n; id++) {
        if (!(used[id / 8] & (1u << (id % 8))))
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
        rc = remap_windows(q, map, n, err);
    if (rc == 0)
        rc = sq_dict_rewrite(q, &nd, err);
    dict_free(&nd);
    if (rc == 0 && freed)
        *freed += dead;
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
