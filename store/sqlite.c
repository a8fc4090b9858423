/* The SQLite backend of the profile store: opening (WAL, busy timeout, schema versions), storing
 * windows in one transaction, disk usage and the collection of unused stacks. Tables and
 * encoding: docs/STORE.md. Readers are in sqlite_read.c, compaction in sqlite_compact.c, the
 * spool's needs in sqlite_spool.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* "flam": PRAGMA application_id, so a SQLite file of another program is not taken for ours */
#define SQ_APP_ID 0x666c616d
/* how long a writer waits for another (a put takes milliseconds; a compaction slice too) */
#define SQ_BUSY_MS 10000
/* pages a slice of incremental_vacuum gives back (4 MiB of 16-KiB pages) */
#define SQ_VACUUM_SLICE "256"
/* the WAL file is cut to this size when it is reset (it grows to hold what a reader keeps
 * from being checkpointed) */
#define SQ_WAL_KEEP "4194304"

static const sq_step schema[] = {
    {1, "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;"
        "CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL UNIQUE,"
        " folded BLOB NOT NULL);"
        "CREATE TABLE sources(id INTEGER PRIMARY KEY, host TEXT NOT NULL,"
        " container_id TEXT NOT NULL, container_name TEXT NOT NULL, image TEXT NOT NULL,"
        " jvm_pid INTEGER NOT NULL, jvm_version TEXT NOT NULL,"
        " UNIQUE(host, container_id, container_name, image, jvm_pid, jvm_version));"
        "CREATE TABLE windows(id INTEGER PRIMARY KEY, source INTEGER NOT NULL,"
        " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, frequency INTEGER NOT NULL,"
        " samples INTEGER NOT NULL, level INTEGER NOT NULL, pairs BLOB NOT NULL);"
        "CREATE INDEX windows_by_source ON windows(source, start_ms);"},
};

int sq_fail(sq *q, flame_err *err, int rc, const char *what)
{
    const char *why = q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return store_fail(err, STORE_ERR_CORRUPT,
                          "%s: not a docker-flame store, or a damaged one (%s: %s)", q->path, what,
                          why);
    case SQLITE_FULL:
        return store_fail(err, STORE_ERR_IO, "%s: disk full (%s)", q->path, what);
    case SQLITE_IOERR: /* ENOSPC comes as SQLITE_FULL; EFBIG, EIO and the like come here */
        return store_fail(err, STORE_ERR_IO, "%s: write error, is the disk full? (%s: %s)", q->path,
                          what, why);
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        return store_fail(err, STORE_ERR_IO, "%s: %s: %s", q->path, what, why);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return store_fail(err, STORE_ERR_BUSY,
                          "%s: %s: another process held the store for more than %.3g s", q->path,
                          what, q->busy_ms / 1000.0);
    case SQLITE_NOMEM:
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    default:
        return store_fail(err, STORE_ERR_IO, "%s: %s: %s", q->path, what, why);
    }
}

int sq_prepare(sq *q, const char *sql, sqlite3_stmt **st, flame_err *err)
{
    int rc = sqlite3_prepare_v2(q->db, sql, -1, st, NULL);
    return rc == SQLITE_OK ? 0 : sq_fail(q, err, rc, "reading the store");
}

int sq_exec(sq *q, const char *sql, flame_err *err)
{
    int rc = sqlite3_exec(q->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sq_fail(q, err, rc, "updating the store");
}

int sq_begin(sq *q, flame_err *err)
{
    return sq_exec(q, "BEGIN IMMEDIATE", err);
}

int sq_commit(sq *q, flame_err *err)
{
    int rc = sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    sq_rollback(q);
    return sq_fail(q, err, rc, "committing");
}

void sq_rollback(sq *q)
{
    if (!sqlite3_get_autocommit(q->db))
        sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
}

int sq_int(sq *q, const char *sql, int64_t *out, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q, sql, &st, err) < 0)
        return -1;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(q, err, rc, "reading the store");
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return 0;
}

/* The schema version of the open database: 0 = empty file; -1 with err: not ours. */
static int read_version(sq *q, int64_t *version, flame_err *err)
{
    int64_t app, tables;
    if (sq_int(q, "PRAGMA application_id", &app, err) < 0 ||
        sq_int(q, "SELECT count(*) FROM sqlite_master", &tables, err) < 0)
        return -1;
    if (app == 0 && tables == 0) {
        *version = 0;
        return 0;
    }
    if (app != SQ_APP_ID)
        return store_fail(err, STORE_ERR_CORRUPT,
                          "%s: a SQLite database, but not a docker-flame store", q->path);
    if (sq_int(q, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'", version,
               err) < 0)
        return -1;
    if (*version <= 0)
        return store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (no schema version)", q->path);
    return 0;
}

int sq_migrate(sq *q, const sq_step *steps, size_t n, flame_err *err)
{
    int64_t have;
    int want = n ? steps[n - 1].version : 0;
    if (read_version(q, &have, err) < 0)
        return -1;
    if (have == want) /* the usual case: no write lock taken */
        return 0;
    if (sq_begin(q, err) < 0)
        return -1;
    /* again under the lock: another process may have created or upgraded it meanwhile */
    int rc = read_version(q, &have, err);
    if (rc == 0 && have > want)
        rc = store_fail(err, STORE_ERR_NEWER,
                        "%s: written by a newer docker-flame (store version %lld, this one reads "
                        "up to %d): upgrade docker-flame",
                        q->path, (long long)have, want);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (steps[i].version > have)
            rc = sq_exec(q, steps[i].sql, err);
    if (rc == 0 && have < want) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "PRAGMA application_id = %d;"
                 "INSERT OR REPLACE INTO meta VALUES('schema_version', '%d'),"
                 " ('written_by', 'docker-flame %s')",
                 SQ_APP_ID, want, FLAME_VERSION);
        rc = sq_exec(q, sql, err);
    }
    if (rc < 0) {
        sq_rollback(q);
        return -1;
    }
    return sq_commit(q, err);
}

static void sq_close(store *s)
{
    sq *q = sq_of(s);
    if (!q)
        return;
    sqlite3_close_v2(q->db);
    free(q->path);
    free(q);
}

/* ---- put ---- */

typedef struct put_ctx {
    sq *q;
    sqlite3_stmt *find, *ins;
    store_pair *pairs;
    size_t n, cap;
    char *cut; /* STORE_MAX_STACK bytes, for a stack that must be cut */
    flame_err *err;
} put_ctx;

/* The id of a stack's text, added when new. The key is a hash: on the (improbable) case of two
 * texts with one key, the next free key is taken, so a stack is never taken for another. */
static int stack_id(put_ctx *c, const char *s, size_t n, int64_t *id)
{
    uint64_t key = stack_key(s, n);
    for (int probe = 0; probe < 16; probe++, key = (key + 1) & INT64_MAX) {
        sqlite3_reset(c->find);
        sqlite3_bind_int64(c->find, 1, (int64_t)key);
        int rc = sqlite3_step(c->find);
        if (rc == SQLITE_ROW) {
            const void *b = sqlite3_column_blob(c->find, 1);
            if ((size_t)sqlite3_column_bytes(c->find, 1) == n && (n == 0 || !memcmp(b, s, n))) {
                *id = sqlite3_column_int64(c->find, 0);
                return 0;
            }
            continue;
        }
        if (rc != SQLITE_DONE)
            return sq_fail(c->q, c->err, rc, "looking up a stack");
        sqlite3_reset(c->ins);
        sqlite3_bind_int64(c->ins, 1, (int64_t)key);
        sqlite3_bind_blob(c->ins, 2, s, (int)n, SQLITE_STATIC);
        if ((rc = sqlite3_step(c->ins)) != SQLITE_DONE)
            return sq_fail(c->q, c->err, rc, "storing a stack");
        *id = sqlite3_last_insert_rowid(c->q->db);
        return 0;
    }
    return store_fail(c->err, STORE_ERR_CORRUPT, "%s: too many stacks share one key", c->q->path);
}

static int put_stack(void *ud, const char *stack, size_t len, double count)
{
    put_ctx *c = ud;
    if (!(count >= 0.5)) /* rounds to no sample (or NaN): nothing to keep */
        return 0;
    if (len > STORE_MAX_STACK && !c->cut && !(c->cut = malloc(STORE_MAX_STACK)))
        return flame_fail(c->err, FLAME_EXIT_ERROR, "out of memory");
    const char *text;
    len = stack_bound(stack, len, c->cut, &text);
    int64_t id = 0;
    if (stack_id(c, text, len, &id) < 0)
        return -1;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        store_pair *np = realloc(c->pairs, nc * sizeof *np);
        if (!np)
            return flame_fail(c->err, FLAME_EXIT_ERROR, "out of memory");
        c->pairs = np;
        c->cap = nc;
    }
    c->pairs[c->n].id = (uint64_t)id;
    c->pairs[c->n++].count = count >= 9e18 ? (uint64_t)9e18 : (uint64_t)llround(count);
    return 0;
}

static int bind_labels(sqlite3_stmt *st, const store_window *w)
{
    const char *labels[] = {w->host, w->container_id, w->container_name, w->image};
    char buf[STORE_MAX_LABEL];
    for (int i = 0; i < 4; i++) {
        label_copy(buf, labels[i]);
        sqlite3_bind_text(st, i + 1, buf, -1, SQLITE_TRANSIENT);
    }
    label_copy(buf, w->jvm_version);
    sqlite3_bind_int64(st, 5, w->jvm_pid);
    return sqlite3_bind_text(st, 6, buf, -1, SQLITE_TRANSIENT);
}

static int source_id(sq *q, const store_window *w, int64_t *id, flame_err *err)
{
    _cleanup_stmt_ sqlite3_stmt *ins = NULL, *sel = NULL;
    if (sq_prepare(q,
                   "INSERT OR IGNORE INTO sources(host, container_id, container_name, image,"
                   " jvm_pid, jvm_version) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                   &ins, err) < 0 ||
        sq_prepare(q,
                   "SELECT id FROM sources WHERE host = ?1 AND container_id = ?2 AND"
                   " container_name = ?3 AND image = ?4 AND jvm_pid = ?5 AND jvm_version = ?6",
                   &sel, err) < 0)
        return -1;
    bind_labels(ins, w);
    bind_labels(sel, w);
    int rc = sqlite3_step(ins);
    if (rc != SQLITE_DONE)
        return sq_fail(q, err, rc, "storing the labels");
    if ((rc = sqlite3_step(sel)) != SQLITE_ROW)
        return sq_fail(q, err, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "reading the labels");
    *id = sqlite3_column_int64(sel, 0);
    return 0;
}

static int put_one(put_ctx *c, const store_window *w, sqlite3_stmt *win)
{
    int64_t src = 0;
    if (store_check_window(w, c->err) < 0 || source_id(c->q, w, &src, c->err) < 0)
        return -1;
    c->n = 0;
    if (profile_each_stack(w->stacks, put_stack, c) != 0)
        return c->err->code ? -1 : flame_fail(c->err, FLAME_EXIT_ERROR, "out of memory");
    c->n = pairs_normalize(c->pairs, c->n);
    _cleanup_free_ uint8_t *blob = malloc(pairs_bound(c->n));
    size_t len = blob ? pairs_encode(c->pairs, c->n, blob) : 0;
    if (!len)
        return flame_fail(c->err, FLAME_EXIT_ERROR, "out of memory");
    sqlite3_reset(win);
    sqlite3_bind_int64(win, 1, src);
    sqlite3_bind_int64(win, 2, w->start_ms);
    sqlite3_bind_int64(win, 3, w->end_ms);
    sqlite3_bind_int64(win, 4, w->frequency);
    sqlite3_bind_int64(win, 5, (int64_t)w->samples);
    sqlite3_bind_blob(win, 6, blob, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(win);
    return rc == SQLITE_DONE ? 0 : sq_fail(c->q, c->err, rc, "storing the window");
}

static int sq_put(store *s, const store_window *w, size_t n, flame_err *err)
{
    sq *q = sq_of(s);
    put_ctx c = {.q = q, .err = err};
    _cleanup_stmt_ sqlite3_stmt *win = NULL;
    int rc = sq_begin(q, err);
    if (rc == 0)
        rc = sq_prepare(q, "SELECT id, folded FROM stacks WHERE hash = ?1", &c.find, err);
    if (rc == 0)
        rc = sq_prepare(q, "INSERT INTO stacks(hash, folded) VALUES(?1, ?2)", &c.ins, err);
    if (rc == 0)
        rc = sq_prepare(q,
                        "INSERT INTO windows(source, start_ms, end_ms, frequency, samples, level,"
                        " pairs) VALUES(?1, ?2, ?3, ?4, ?5, 0, ?6)",
                        &win, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_one(&c, &w[i], win);
    sqlite3_finalize(c.find);
    sqlite3_finalize(c.ins);
    free(c.pairs);
    free(c.cut);
    if (rc < 0) {
        sq_rollback(q);
        return -1;
    }
    return sq_commit(q, err);
}

int sq_usage(sq *q, uint64_t *data, uint64_t *disk, flame_err *err)
{
    int64_t pages, page_size, bytes;
    if (sq_int(q, "PRAGMA page_count", &pages, err) < 0 ||
        sq_int(q, "PRAGMA page_size", &page_size, err) < 0)
        return -1;
    /* what the windows hold, whatever the page size and the tables' fixed pages: length() of a
     * blob reads its header, not its bytes */
    if (data && sq_int(q,
                       "SELECT (SELECT coalesce(sum(length(pairs)), 0) FROM windows) +"
                       " (SELECT coalesce(sum(length(folded)), 0) FROM stacks)",
                       &bytes, err) < 0)
        return -1;
    _cleanup_free_ char *wal = NULL;
    struct stat st;
    uint64_t wal_bytes = 0;
    if (asprintf(&wal, "%s-wal", q->path) >= 0 && stat(wal, &st) == 0)
        wal_bytes = (uint64_t)st.st_size;
    else if (!wal)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (data)
        *data = (uint64_t)bytes;
    if (disk)
        *disk = (uint64_t)(pages * page_size) + wal_bytes;
    return 0;
}

/* ---- stacks no window uses, free pages ---- */

/* What a window row is, to tell whether the row with its id is still the one decoded: its
 * columns but the pairs (their length stands for them). */
static uint64_t row_key(sqlite3_stmt *st)
{
    uint64_t h = 1469598103934665603ull;
    for (int c = 1; c <= 6; c++) {
        h ^= (uint64_t)sqlite3_column_int64(st, c);
        h *= 1099511628211ull;
    }
    return h;
}

typedef struct seen_row {
    int64_t id;
    uint64_t key;
} seen_row;

typedef struct gc_ctx {
    sq *q;
    uint8_t *used; /* bit per stack id up to maxid */
    int64_t maxid;
    pairs_buf b;
    seen_row *seen; /* the windows decoded, in id order */
    size_t nseen, cap;
    flame_err *err;
} gc_ctx;

static void mark(gc_ctx *g, const pairs_buf *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->p[i].id <= (uint64_t)g->maxid)
            g->used[b->p[i].id / 8] |= (uint8_t)(1u << (b->p[i].id % 8));
}

/* Phase 1, in a read transaction (writers go on meanwhile): every window decoded, the stacks
 * they use marked, each row remembered by its id and key. A damaged window fails the whole
 * collection: never free what it might name. */
static int gc_mark_all(gc_ctx *g)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(g->q,
                   "SELECT id, source, start_ms, end_ms, level, samples, length(pairs), pairs"
                   " FROM windows ORDER BY id",
                   &st, g->err) < 0)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sq_decode(g->q, st, 7, &g->b, g->err) < 0)
            return -1;
        mark(g, &g->b);
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
    if (sq_prepare(g->q,
                   "SELECT id, source, start_ms, end_ms, level, samples, length(pairs)"
                   " FROM windows ORDER BY id",
                   &st, g->err) < 0 ||
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
        if (sq_decode(g->q, one, 0, &g->b, g->err) < 0)
            return -1;
        mark(g, &g->b);
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(g->q, g->err, rc, "reading windows");
}

/* The stacks up to maxid that no window of phase 1 uses. */
static int gc_candidates(gc_ctx *g, int64_t **dead, size_t *n)
{
    _cleanup_stmt_ sqlite3_stmt *ids = NULL;
    if (sq_prepare(g->q, "SELECT id FROM stacks WHERE id <= ?1", &ids, g->err) < 0)
        return -1;
    sqlite3_bind_int64(ids, 1, g->maxid);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(ids)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(ids, 0);
        if (id < 0 || (g->used[id / 8] & (1u << (id % 8))))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            int64_t *nd = realloc(*dead, cap * sizeof *nd);
            if (!nd)
                return flame_fail(g->err, FLAME_EXIT_ERROR, "out of memory");
            *dead = nd;
        }
        (*dead)[(*n)++] = id;
    }
    return rc == SQLITE_DONE ? 0 : sq_fail(g->q, g->err, rc, "reading stacks");
}

int sq_gc_stacks(sq *q, uint64_t *freed, flame_err *err)
{
    gc_ctx g = {.q = q, .err = err};
    _cleanup_free_ int64_t *dead = NULL;
    _cleanup_stmt_ sqlite3_stmt *del = NULL;
    size_t n = 0, gone = 0;
    /* phase 1 reads one snapshot (WAL: writers are not held up by it) */
    int rc = sq_exec(q, "BEGIN", err);
    if (rc == 0)
        rc = sq_int(q, "SELECT coalesce(max(id), 0) FROM stacks", &g.maxid, err);
    if (rc == 0 && !(g.used = calloc((size_t)g.maxid / 8 + 1, 1)))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0)
        rc = gc_mark_all(&g);
    if (rc == 0)
        rc = gc_candidates(&g, &dead, &n);
    sq_rollback(q);
    /* phase 2, only when there is something to free: a short write transaction */
    if (rc == 0 && n > 0) {
        rc = sq_begin(q, err);
        if (rc == 0)
            rc = gc_mark_new(&g);
        if (rc == 0)
            rc = sq_prepare(q, "DELETE FROM stacks WHERE id = ?1", &del, err);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (g.used[dead[i] / 8] & (1u << (dead[i] % 8)))
                continue; /* taken again by a window written meanwhile */
            sqlite3_reset(del);
            sqlite3_bind_int64(del, 1, dead[i]);
            int r = sqlite3_step(del);
            rc = r == SQLITE_DONE ? 0 : sq_fail(q, err, r, "deleting stacks");
            gone++;
        }
        sqlite3_finalize(del);
        del = NULL;
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

int sq_decode(sq *q, sqlite3_stmt *st, int col, pairs_buf *b, flame_err *err)
{
    int rc = pairs_decode(sqlite3_column_blob(st, col), (size_t)sqlite3_column_bytes(st, col), b);
    if (rc == -2)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    return rc < 0 ? store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (a window's stacks)",
                               q->path)
                  : 0;
}

void sq_release_space(sq *q)
{
    /* Free pages go back to the file system a slice at a time (each its own short write
     * transaction: a put waits for a slice, not for all of it); then a checkpoint that never
     * waits: TRUNCATE with no busy handler, which is PASSIVE as soon as a reader or a writer
     * is in the way (with one, a TRUNCATE checkpoint waited for every reader, up to the busy
     * timeout, writers held back meanwhile). A WAL left long is reset by a later write once no
     * reader needs it, and journal_size_limit then cuts the file. Best effort. */
    int64_t free_pages = 0, before = -1;
    flame_err quiet = FLAME_ERR_INIT;
    while (sq_int(q, "PRAGMA freelist_count", &free_pages, &quiet) == 0 && free_pages > 0 &&
           free_pages != before) {
        before = free_pages;
        if (sqlite3_exec(q->db, "PRAGMA incremental_vacuum(" SQ_VACUUM_SLICE ")", NULL, NULL,
                         NULL) != SQLITE_OK)
            break;
    }
    sqlite3_busy_timeout(q->db, 0);
    sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(q->db, q->busy_ms);
}

void sq_busy_timeout(sq *q, int ms)
{
    q->busy_ms = ms;
    sqlite3_busy_timeout(q->db, ms);
}

static const struct store_ops sq_ops = {sq_put,  sq_profile, sq_timeline,
                                        sq_list, sq_compact, sq_close};

/* Opened for reading: a docker-flame store of this very version, or nothing is done. */
static int check_readable(sq *q, flame_err *err)
{
    int64_t have;
    if (read_version(q, &have, err) < 0)
        return -1;
    if (have == 0)
        return store_fail(err, STORE_ERR_CORRUPT, "%s: an empty file, not a docker-flame store",
                          q->path);
    if (have > SQ_SCHEMA_VERSION)
        return store_fail(err, STORE_ERR_NEWER,
                          "%s: written by a newer docker-flame (store version %lld, this one reads "
                          "up to %d): upgrade docker-flame",
                          q->path, (long long)have, SQ_SCHEMA_VERSION);
    if (have < SQ_SCHEMA_VERSION)
        return store_fail(err, STORE_ERR_OLDER,
                          "%s: a store of version %lld, this docker-flame reads version %d: a "
                          "recorder upgrades it when it starts, or `docker flame prune --retain 0 "
                          "--no-compact --store %s` (deletes nothing)",
                          q->path, (long long)have, SQ_SCHEMA_VERSION, q->path);
    return 0;
}

int sq_open(store *s, const char *path, flame_err *err)
{
    sq *q = calloc(1, sizeof *q);
    if (!q || !(q->path = strdup(path))) {
        free(q);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    s->impl = q;
    s->ops = &sq_ops;
    struct stat st;
    if (s->readonly && stat(path, &st) < 0 && errno == ENOENT)
        return store_fail(err, STORE_ERR_MISSING,
                          "%s: no store there (docker flame record makes it)", path);
    int rc = sqlite3_open_v2(
        path, &q->db,
        s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(q, err, rc, "cannot open");
    sqlite3_extended_result_codes(q->db, 1);
    sqlite3_busy_timeout(q->db, q->busy_ms = SQ_BUSY_MS);
    /* A store may come from elsewhere (a copy, a shared disk): its schema is data, never code
     * (no function with side effects from a view or trigger of its making), and no statement
     * of ours may corrupt it whatever it holds. */
    sqlite3_db_config(q->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    sqlite3_db_config(q->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
#endif
    /* the application id first: another program's database is refused before anything in it
     * changes (a reader changes nothing at all) */
    int64_t have;
    if (s->readonly)
        return check_readable(q, err);
    if (read_version(q, &have, err) < 0)
        return -1;
    /* auto_vacuum only takes on a new file (before its first table): then compaction can give
     * pages back; WAL lets readers work while a writer writes and survives a killed writer;
     * synchronous=NORMAL in WAL mode loses no committed window to a crash of the process, only
     * (maybe) the last ones to a power cut, and never damages the file */
    /* 16 KiB pages: a window's blob is 1-3 KiB, and 4 KiB pages hold one or two of them with
     * the rest left empty (measured: 25 % more file per window than 16 KiB pages); taken only
     * by a new file, like auto_vacuum */
    if (sq_exec(q, "PRAGMA page_size = 16384", err) < 0 ||
        sq_exec(q, "PRAGMA auto_vacuum = INCREMENTAL", err) < 0 ||
        sq_exec(q, "PRAGMA journal_mode = WAL", err) < 0 ||
        sq_exec(q, "PRAGMA synchronous = NORMAL", err) < 0 ||
        sq_exec(q, "PRAGMA journal_size_limit = " SQ_WAL_KEEP, err) < 0)
        return -1;
    return sq_migrate(q, schema, sizeof schema / sizeof *schema, err);
}
