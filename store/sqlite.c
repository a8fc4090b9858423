/* The SQLite backend of the profile store: its face (the ops of a handle), opening (WAL, busy
 * timeout, schema versions and the migration of older stores) and storing windows in one
 * transaction with the stacks they bring to the dictionary (store/dict.h). Tables and encoding:
 * docs/STORE.md. The plumbing is in sqlite_db.c, the dictionary's in sqlite_dict.c, readers in
 * sqlite_read.c, compaction in sqlite_compact.c, the spool's needs in sqlite_spool.c; calls go
 * one way: sqlite.c -> {read, compact} -> dict -> db. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "store/sqlite_impl.h"

/* "flam": PRAGMA application_id, so a SQLite file of another program is not taken for ours */
#define SQ_APP_ID 0x666c616d
/* the WAL file is cut to this size when it is reset (it grows to hold what a reader keeps
 * from being checkpointed; without a limit it keeps its largest size: 16 MiB or more beside a
 * store of a few) */
#define SQ_WAL_KEEP "1048576"

static int migrate_2(sq *q, flame_err *err);
static int add_type(sq *q, flame_err *err);

static const sq_step schema[] = {
    /* version 1: a stack's whole text in a row of its own (stacks), windows naming them */
    {1,
     "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;"
     "CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL UNIQUE,"
     " folded BLOB NOT NULL);"
     "CREATE TABLE sources(id INTEGER PRIMARY KEY, host TEXT NOT NULL,"
     " container_id TEXT NOT NULL, container_name TEXT NOT NULL, image TEXT NOT NULL,"
     " jvm_pid INTEGER NOT NULL, jvm_version TEXT NOT NULL,"
     " UNIQUE(host, container_id, container_name, image, jvm_pid, jvm_version));"
     "CREATE TABLE windows(id INTEGER PRIMARY KEY, source INTEGER NOT NULL,"
     " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, frequency INTEGER NOT NULL,"
     " samples INTEGER NOT NULL, level INTEGER NOT NULL, pairs BLOB NOT NULL);"
     "CREATE INDEX windows_by_source ON windows(source, start_ms);",
     NULL},
    /* version 2: the dictionary of frames and prefix-sharing stacks in chunks (dict), windows
     * with a stable id (uid); migrate_2 moves version 1's stacks and windows over */
    {2,
     "CREATE TABLE dict(id INTEGER PRIMARY KEY, chunk BLOB NOT NULL);"
     "CREATE TABLE windows2(id INTEGER PRIMARY KEY, source INTEGER NOT NULL,"
     " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, frequency INTEGER NOT NULL,"
     " samples INTEGER NOT NULL, level INTEGER NOT NULL, uid INTEGER NOT NULL,"
     " pairs BLOB NOT NULL);",
     migrate_2},
    /* version 3: each window's profile type (cpu, wall, offcpu, alloc, lock); the windows of
     * older versions are cpu. add_type looks for the column itself, so a store that reached
     * this version by another path (another branch's step of the same number) gets it too. */
    {3, "", add_type},
};

/* The schema version of the open database: 0 = empty file; -1 with err: not ours. */
static int read_version(sq *q, int64_t *version, flame_err *err)
{
    int64_t app = 0, tables = 0;
    /* one statement, so one snapshot: as two, another process creating the store between them
     * (two writers opening a new spool at once) made an empty id and its tables, "not ours" */
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    if (sq_prepare(q,
                   "SELECT (SELECT application_id FROM pragma_application_id()),"
                   " (SELECT count(*) FROM sqlite_master)",
                   &st, err) < 0)
        return -1;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW)
        return sq_fail(q, err, rc, "reading the store's version");
    app = sqlite3_column_int64(st, 0);
    tables = sqlite3_column_int64(st, 1);
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
        if (steps[i].version > have) {
            rc = sq_exec(q, steps[i].sql, err);
            if (rc == 0 && steps[i].fn)
                rc = steps[i].fn(q, err);
        }
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
    dict_free(&q->d);
    free(q->path);
    free(q);
}

/* Version 1 to 2: version 1's stack texts become the dictionary (ids renumbered densely, in
 * their old order), each window's pairs are rewritten with the new ids into the new windows
 * table (with a uid), and the old tables go. One transaction (sq_migrate's): all or nothing. */
static int migrate_2(sq *q, flame_err *err)
{
    int64_t maxid;
    dict nd;
    dict_init(&nd);
    _cleanup_stmt_ sqlite3_stmt *st = NULL, *sel = NULL, *ins = NULL;
    if (sq_int(q, "SELECT coalesce(max(id), 0) FROM stacks", &maxid, err) < 0)
        return -1;
    if (maxid < 0 || maxid >= (int64_t)DICT_MAX_STACKS)
        return store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (stack ids)", q->path);
    _cleanup_free_ uint32_t *map = calloc((size_t)maxid + 1, sizeof *map);
    if (!map)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int rc = sq_prepare(q, "SELECT id, folded FROM stacks ORDER BY id", &st, err), r = SQLITE_DONE;
    while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *text = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        uint32_t nid;
        if (id < 1 || id > maxid || !len)
            rc = store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (stack %lld)", q->path,
                            (long long)id);
        else if (dict_add_stack(&nd, text, len, &nid) < 0)
            rc = sq_dict_fail(q, -2, err);
        else
            map[id] = nid;
    }
    if (rc == 0 && r != SQLITE_DONE)
        rc = sq_fail(q, err, r, "reading stacks");
    if (rc == 0)
        rc = sq_dict_rewrite(q, &nd, err);
    dict_free(&nd);
    if (rc == 0)
        rc = sq_prepare(q,
                        "SELECT id, source, start_ms, end_ms, frequency, samples, level, pairs"
                        " FROM windows ORDER BY id",
                        &sel, err);
    if (rc == 0)
        rc = sq_prepare(q,
                        "INSERT INTO windows2(id, source, start_ms, end_ms, frequency, samples,"
                        " level, uid, pairs) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        &ins, err);
    pairs_buf b = {0};
    while (rc == 0 && (r = sqlite3_step(sel)) == SQLITE_ROW) {
        uint8_t *blob = NULL;
        size_t len = 0;
        rc = sq_decode(q, sel, 7, &b, err);
        if (rc == 0)
            rc = sq_remap_pairs(q, &b, map, (uint32_t)maxid, &blob, &len, err);
        if (rc == 0) {
            sqlite3_reset(ins);
            for (int c = 0; c < 7; c++)
                sqlite3_bind_int64(ins, c + 1, sqlite3_column_int64(sel, c));
            sqlite3_bind_int64(ins, 8, (int64_t)store_uid());
            sqlite3_bind_blob(ins, 9, blob, (int)len, SQLITE_STATIC);
            if ((r = sqlite3_step(ins)) != SQLITE_DONE)
                rc = sq_fail(q, err, r, "rewriting windows");
            else
                r = SQLITE_ROW;
        }
        free(blob);
    }
    pairs_buf_free(&b);
    if (rc == 0 && r != SQLITE_DONE)
        rc = sq_fail(q, err, r, "reading windows");
    if (rc == 0)
        rc = sq_exec(q,
                     "DROP TABLE windows; DROP TABLE stacks;"
                     " ALTER TABLE windows2 RENAME TO windows;"
                     " CREATE INDEX windows_by_source ON windows(source, start_ms)",
                     err);
    return rc;
}

int sq_check_type(sq *q, flame_err *err)
{
    int64_t n;
    if (sq_int(q, "SELECT count(*) FROM pragma_table_info('windows') WHERE name = 'type'", &n,
               err) < 0)
        return -1;
    q->has_type = n > 0;
    return 0;
}

/* The type column of windows, when it is missing (in the caller's transaction). */
static int add_type(sq *q, flame_err *err)
{
    if (sq_check_type(q, err) < 0)
        return -1;
    if (q->has_type)
        return 0;
    if (sq_exec(q, "ALTER TABLE windows ADD COLUMN type TEXT NOT NULL DEFAULT 'cpu'", err) < 0)
        return -1;
    q->has_type = true;
    return 0;
}

/* ---- put ---- */

typedef struct put_ctx {
    sq *q;
    store_pair *pairs;
    size_t n, cap;
    char *cut; /* STORE_MAX_STACK bytes, for a stack that must be cut */
    flame_err *err;
} put_ctx;

static int put_stack(void *ud, const char *stack, size_t len, double count)
{
    put_ctx *c = ud;
    if (!(count >= 0.5)) /* rounds to no sample (or NaN): nothing to keep */
        return 0;
    if (len > STORE_MAX_STACK && !c->cut && !(c->cut = malloc(STORE_MAX_STACK)))
        return flame_fail(c->err, FLAME_EXIT_ERROR, "out of memory");
    const char *text;
    len = store_stack_bound(stack, len, c->cut, &text);
    uint32_t id = 0;
    if (dict_add_stack(&c->q->d, text, len, &id) < 0)
        return errno == EINVAL ? 0 /* an empty stack: not a stack */
                               : sq_dict_fail(c->q, -2, c->err);
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        store_pair *np = realloc(c->pairs, nc * sizeof *np);
        if (!np)
            return flame_fail(c->err, FLAME_EXIT_ERROR, "out of memory");
        c->pairs = np;
        c->cap = nc;
    }
    c->pairs[c->n].id = id;
    c->pairs[c->n++].count = count >= 9e18 ? (uint64_t)9e18 : (uint64_t)llround(count);
    return 0;
}

static int bind_labels(sqlite3_stmt *st, const store_window *w)
{
    const char *labels[] = {w->host, w->container_id, w->container_name, w->image};
    char buf[STORE_MAX_LABEL];
    for (int i = 0; i < 4; i++) {
        store_label_copy(buf, labels[i]);
        sqlite3_bind_text(st, i + 1, buf, -1, SQLITE_TRANSIENT);
    }
    store_label_copy(buf, w->jvm_version);
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

/* One window's row (its stacks are in the dictionary by now, or added to it here). */
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
    int64_t vals[] = {src,          w->start_ms,         w->end_ms,
                      w->frequency, (int64_t)w->samples, (int64_t)(w->uid ? w->uid : store_uid())};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_int64(win, i + 1, vals[i]);
    sqlite3_bind_blob(win, 7, blob, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(win, 8, store_type_of(w->type), -1, SQLITE_STATIC);
    int rc = sqlite3_step(win);
    return rc == SQLITE_DONE ? 0 : sq_fail(c->q, c->err, rc, "storing the window");
}

static int sq_put(store *s, const store_window *w, size_t n, flame_err *err)
{
    sq *q = sq_of(s);
    put_ctx c = {.q = q, .err = err};
    _cleanup_stmt_ sqlite3_stmt *win = NULL;
    int64_t last = q->dict_last;
    int rc = sq_begin(q, err);
    /* what other writers added to the dictionary first: the same stack gets the same id */
    if (rc == 0 && (rc = sq_dict_sync(q, err)) == 0)
        last = q->dict_last;
    if (rc == 0)
        rc = sq_prepare(q,
                        "INSERT INTO windows(source, start_ms, end_ms, frequency, samples, level,"
                        " uid, pairs, type) VALUES(?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8)",
                        &win, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_one(&c, &w[i], win);
    /* the stacks new to the dictionary: one chunk, before the commit that makes them count */
    if (rc == 0)
        rc = sq_dict_store_new(q, err);
    free(c.pairs);
    free(c.cut);
    if (rc == 0)
        rc = sq_commit(q, err);
    else
        sq_rollback(q);
    if (rc < 0) { /* nothing of it is stored: neither are its new stacks */
        dict_rollback(&q->d);
        q->dict_last = last;
        return -1;
    }
    dict_mark(&q->d);
    /* the WAL back into the file now (readers permitting), and cut to journal_size_limit:
     * without it, it grows to 1000 pages (16 MiB) before SQLite checkpoints on its own */
    sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return 0;
}

static const struct store_ops sq_ops = {sq_put,  sq_profile, sq_timeline,
                                        sq_list, sq_compact, sq_close};

/* Opened for reading: a docker-flame store of this very version, or nothing is done. */
static int check_readable(sq *q, bool any_version, flame_err *err)
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
    if (have < SQ_READ_MIN && !any_version)
        return store_fail(err, STORE_ERR_OLDER,
                          "%s: a store of version %lld, this docker-flame reads version %d: a "
                          "recorder upgrades it when it starts, or `docker flame prune --retain 0 "
                          "--no-compact --store %s` (deletes nothing)",
                          q->path, (long long)have, SQ_SCHEMA_VERSION, q->path);
    return any_version ? 0 : sq_check_type(q, err);
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
    dict_init(&q->d);
    q->dict_gen = -1;
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
        return check_readable(q, s->any_version, err);
    if (read_version(q, &have, err) < 0)
        return -1;
    /* auto_vacuum only takes on a new file (before its first table): then compaction can give
     * pages back; WAL lets readers work while a writer writes and survives a killed writer;
     * synchronous=NORMAL in WAL mode loses no committed window to a crash of the process, only
     * (maybe) the last ones to a power cut, and never damages the file */
    /* 16 KiB pages: a window's blob is 1-3 KiB, and 4 KiB pages hold one or two of them with
     * the rest left empty (measured: 25 % more file per window than 16 KiB pages); taken only
     * by a new file, like auto_vacuum */
    /* journal_size_limit: a WAL that was checkpointed is cut back to 1 MiB (without it the file
     * keeps its largest size: 16 MiB or more beside a store of a few) */
    if (sq_exec(q, "PRAGMA page_size = 16384", err) < 0 ||
        sq_exec(q, "PRAGMA auto_vacuum = INCREMENTAL", err) < 0 ||
        sq_exec(q, "PRAGMA journal_mode = WAL", err) < 0 ||
        sq_exec(q, "PRAGMA synchronous = NORMAL", err) < 0 ||
        sq_exec(q, "PRAGMA journal_size_limit = " SQ_WAL_KEEP, err) < 0)
        return -1;
    if (sq_migrate(q, schema, sizeof schema / sizeof *schema, err) < 0 || sq_check_type(q, err) < 0)
        return -1;
    if (!q->has_type) {
        /* a store of this version without the column (see add_type) */
        if (sq_begin(q, err) < 0)
            return -1;
        if (add_type(q, err) < 0) {
            sq_rollback(q);
            return -1;
        }
        if (sq_commit(q, err) < 0)
            return -1;
    }
    /* the hour rollups: a step that looks for its own table (not a schema version), and a
     * store without them reads the same, only slower: older docker-flames read and write it
     * as before, and their writes keep the rollups true (the triggers are the store's); made
     * after the type column, which the rollups are keyed by */
    return sq_rollup_schema(q, err);
}
