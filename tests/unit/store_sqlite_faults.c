/* The SQLite store when things go wrong: schema steps applied once and in order, a store of a
 * newer version refused, damaged and foreign files named as such in one line, two writers and a
 * reader at once, a writer killed (-9) in the middle of its writes and a disk that fills up: the
 * store stays whole and loses at most the window being written. A put that finds the store held
 * past the busy timeout is kept and stored later; prune decodes the store without holding the
 * write lock and checkpoints without waiting for readers. Also the spool's calls. */
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "store/sqlite_impl.h"
#include "tests/unit/tap.h"
#include "tests/unit/store_helpers.h"

#define T0 1795534200000LL

static int sql(const char *path, const char *q)
{
    sqlite3 *db;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, q, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

static bool integrity_ok(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    bool good = false;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK) {
        good = sqlite3_step(st) == SQLITE_ROW &&
               !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return good;
}

/* A window whose profile has `stacks` distinct stacks (distinct per seed). */
static profile *many_stacks(int stacks, int seed)
{
    profile *p = profile_new();
    char buf[200];
    for (int i = 0; i < stacks; i++) {
        int n = snprintf(buf, sizeof buf, "main;svc%d;handler%d;leaf%d", seed % 7, i, seed);
        profile_add(p, buf, (size_t)n, 1 + i % 5, PROFILE_ONE_COLUMN);
    }
    return p;
}

static int put_n(const char *path, const char *name, int n, int stacks, int64_t start)
{
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    if (store_open(path, &s, &e) < 0)
        return printf("# %s\n", e.msg), -1;
    int done = 0;
    for (int i = 0; i < n; i++) {
        profile *p = many_stacks(stacks, i);
        store_window w = window_of(name, 1, start + (int64_t)i * 10000, p);
        int rc = store_put(s, &w, &e);
        profile_free(p);
        if (rc < 0) {
            printf("# put %d: %s\n", i, e.msg);
            break;
        }
        done++;
    }
    store_close(s);
    return done;
}

static uint64_t windows_of(const char *path, flame_err *e)
{
    store *s = NULL;
    store_info info = {0};
    store_query q = {.since_ms = 0, .until_ms = INT64_MAX};
    profile *p = profile_new();
    if (store_open(path, &s, e) == 0 && store_profile(s, &q, p, &info, e) < 0)
        info.windows = UINT64_MAX;
    store_close(s);
    profile_free(p);
    return info.windows;
}

static void test_migration(void)
{
    const char *path = in_scratch("steps.db");
    sq q = {.path = (char *)path};
    sqlite3_open(path, &q.db);
    flame_err e = FLAME_ERR_INIT;
    const sq_step v1[] = {{1,
                           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                           "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES(1)",
                           NULL}};
    const sq_step v2[] = {v1[0], {2, "ALTER TABLE t ADD COLUMN b INTEGER DEFAULT 7", NULL}};
    is_int(sq_migrate(&q, v1, 1, &e), 0, "a new file gets step 1");
    is_int(sq_migrate(&q, v1, 1, &e), 0, "again: nothing to do");
    is_int(sq_migrate(&q, v2, 2, &e), 0, "a version 1 store gets step 2 only");
    int64_t b = 0, rows = 0;
    sq_int(&q, "SELECT b FROM t", &b, &e);
    sq_int(&q, "SELECT count(*) FROM t", &rows, &e);
    ok(b == 7 && rows == 1, "step 1 ran once, step 2 after it");
    int64_t v = 0;
    sq_int(&q, "SELECT value FROM meta WHERE key = 'schema_version'", &v, &e);
    is_int(v, 2, "version 2 recorded");
    e = (flame_err)FLAME_ERR_INIT;
    ok(sq_migrate(&q, v1, 1, &e) < 0 && e.detail == STORE_ERR_NEWER, "a reader of version 1 "
                                                                     "refuses it");
    const sq_step broken[] = {v2[0], v2[1], {3, "CREATE TABLE t(a)", NULL}};
    ok(sq_migrate(&q, broken, 3, &e) < 0, "a failing step fails");
    sq_int(&q, "SELECT value FROM meta WHERE key = 'schema_version'", &v, &e);
    is_int(v, 2, "and changes nothing");
    sqlite3_close(q.db);

    path = in_scratch("newer.db");
    is_int(put_n(path, "web", 1, 3, T0), 1, "a store");
    sql(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    store *s = NULL;
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_open(path, &s, &e) < 0 && e.code == FLAME_EXIT_STORE && e.detail == STORE_ERR_NEWER &&
           strstr(e.msg, "newer docker-flame") && !strchr(e.msg, '\n'),
       "a store of a newer version: one line, exit %d (%s)", FLAME_EXIT_STORE, e.msg);
}

static void test_damage(void)
{
    const char *path = in_scratch("garbage.db");
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 4096; i++)
        fputc("not a database "[i % 15], f);
    fclose(f);
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    ok(store_open(path, &s, &e) < 0 && e.code == FLAME_EXIT_STORE &&
           e.detail == STORE_ERR_CORRUPT && !strchr(e.msg, '\n'),
       "a file that is not SQLite: one line (%s)", e.msg);
    path = in_scratch("other.db");
    sql(path, "CREATE TABLE songs(title TEXT)");
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_open(path, &s, &e) < 0 && e.detail == STORE_ERR_CORRUPT &&
           strstr(e.msg, "not a docker-flame store"),
       "another program's SQLite file (%s)", e.msg);

    /* pages overwritten in the middle of a real store */
    path = in_scratch("damaged.db");
    put_n(path, "web", 200, 50, T0);
    struct stat st;
    stat(path, &st);
    f = fopen(path, "r+");
    for (long off = 8192; off + 4096 < st.st_size; off += 3 * 4096) {
        fseek(f, off + 100, SEEK_SET);
        for (int i = 0; i < 2000; i++)
            fputc(i * 7, f);
    }
    fclose(f);
    e = (flame_err)FLAME_ERR_INIT;
    uint64_t n = windows_of(path, &e);
    ok(n == UINT64_MAX || e.code, "a damaged store fails to read");
    ok(e.detail == STORE_ERR_CORRUPT && e.code == FLAME_EXIT_STORE && !strchr(e.msg, '\n'),
       "named as damaged, in one line (%s)", e.msg);
}

static void test_concurrency(void)
{
    const char *path = in_scratch("busy.db");
    is_int(put_n(path, "seed", 1, 5, T0), 1, "a store");
    pid_t w1 = fork();
    if (w1 == 0)
        _exit(put_n(path, "one", 150, 40, T0) == 150 ? 0 : 1);
    pid_t w2 = fork();
    if (w2 == 0)
        _exit(put_n(path, "two", 150, 40, T0) == 150 ? 0 : 1);
    pid_t r = fork();
    if (r == 0) {
        for (int i = 0; i < 40; i++) {
            flame_err e = FLAME_ERR_INIT;
            if (windows_of(path, &e) == UINT64_MAX) {
                printf("# reader: %s\n", e.msg);
                _exit(1);
            }
        }
        _exit(0);
    }
    int s1, s2, s3;
    waitpid(w1, &s1, 0);
    waitpid(w2, &s2, 0);
    waitpid(r, &s3, 0);
    ok(WIFEXITED(s1) && !WEXITSTATUS(s1) && WIFEXITED(s2) && !WEXITSTATUS(s2),
       "two writers at once: every put succeeded");
    ok(WIFEXITED(s3) && !WEXITSTATUS(s3), "a reader meanwhile: every read succeeded");
    flame_err e = FLAME_ERR_INIT;
    is_int(windows_of(path, &e), 301, "all 301 windows are there");
    ok(integrity_ok(path), "integrity_check: ok");
}

static void test_crash(void)
{
    const char *path = in_scratch("crash.db");
    is_int(put_n(path, "web", 1, 10, T0), 1, "a store");
    pid_t w = fork();
    if (w == 0) /* big windows: each put spends a while inside its transaction */
        _exit(put_n(path, "web", 1000000, 3000, T0 + 10000) > 0 ? 0 : 1);
    struct timespec ts = {0, 700 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(w, SIGKILL);
    int status;
    waitpid(w, &status, 0);
    ok(WIFSIGNALED(status), "the writer was killed in the middle of its writes");
    ok(integrity_ok(path), "integrity_check: ok");
    flame_err e = FLAME_ERR_INIT;
    uint64_t n = windows_of(path, &e);
    ok(n >= 2 && n != UINT64_MAX, "every committed window reads (%llu)", (unsigned long long)n);
    is_int(put_n(path, "web", 1, 10, T0 + 100 * 86400000LL), 1, "and the store takes more");
}

static void test_full_disk(void)
{
    const char *path = in_scratch("full.db");
    is_int(put_n(path, "web", 5, 200, T0), 5, "a store");
    struct stat st;
    stat(path, &st);
    pid_t w = fork();
    if (w == 0) {
        /* files may grow 256 KiB: the disk is "full" after a few windows */
        struct rlimit rl = {(rlim_t)st.st_size + (256 << 10), (rlim_t)st.st_size + (256 << 10)};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        store *s = NULL;
        flame_err e = FLAME_ERR_INIT;
        if (store_open(path, &s, &e) < 0)
            _exit(3);
        for (int i = 0; i < 10000; i++) {
            profile *p = many_stacks(400, 1000 + i);
            store_window win = window_of("web", 1, T0 + 60000 + (int64_t)i * 10000, p);
            int rc = store_put(s, &win, &e);
            profile_free(p);
            if (rc < 0) {
                printf("# full: %s\n", e.msg);
                _exit(e.code == FLAME_EXIT_STORE && e.detail == STORE_ERR_IO && !strchr(e.msg, '\n')
                          ? 0
                          : 4);
            }
        }
        _exit(5);
    }
    int status;
    waitpid(w, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "a full disk: the put fails with one line, exit %d", FLAME_EXIT_STORE);
    ok(integrity_ok(path), "integrity_check: ok");
    flame_err e = FLAME_ERR_INIT;
    uint64_t n = windows_of(path, &e);
    ok(n >= 5 && n != UINT64_MAX, "the windows before it read (%llu)", (unsigned long long)n);
}

static void test_spool_calls(void)
{
    const char *path = in_scratch("spool.db");
    put_n(path, "web", 30, 100, T0);
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    sq_batch b;
    is_int(sq_take(s, 10, &b, &e), 0, "take the oldest 10");
    ok(b.n == 10 && b.w[0].start_ms == T0 && !strcmp(b.w[0].container_name, "web") &&
           profile_stacks(b.w[0].stacks) == 100 && b.w[9].start_ms == T0 + 90000,
       "in order, with labels and stacks");
    is_int(sq_drop(s, b.ids, b.n, &e), 0, "drop them");
    sq_batch_free(&b);
    uint64_t n = 0, dropped = 0, used = 0;
    sq_count(s, &n, &e);
    is_int(n, 20, "20 left");
    sq_usage(sq_of(s), &used, NULL, &e);
    is_int(sq_shrink(s, used / 2, &dropped, &e), 0, "shrink to half");
    sq_count(s, &n, &e);
    ok(dropped > 0 && n + dropped == 20, "the oldest dropped (%llu)", (unsigned long long)dropped);
    sq_batch_free(&b);
    is_int(sq_take(s, 100, &b, &e), 0, "take the rest");
    ok(b.n == n && b.n && b.w[b.n - 1].start_ms == T0 + 290000, "the newest kept");
    sq_batch_free(&b);
    store_close(s);
}

/* A put while another connection holds the write lock past the (shortened) busy timeout: kept
 * in memory, stored with the next put, or by store_flush. */
static void test_busy_put(void)
{
    const char *path = in_scratch("held.db");
    is_int(put_n(path, "web", 1, 5, T0), 1, "a store");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    sq_busy_timeout(sq_of(s), 200);
    sqlite3 *other;
    sqlite3_open(path, &other);
    is_int(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK,
           "another process holds the write lock");
    profile *p = many_stacks(20, 1);
    store_window w = window_of("web", 1, T0 + 10000, p);
    e = (flame_err)FLAME_ERR_INIT;
    int rc = store_put(s, &w, &e);
    ok(rc == 1 && e.detail == STORE_ERR_BUSY && strstr(e.msg, "kept in memory") &&
           !strchr(e.msg, '\n'),
       "a put that waits out the busy timeout: kept, with a warning (%s)", e.msg);
    profile_free(p); /* the store kept a copy */
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    p = many_stacks(20, 2);
    w = window_of("web", 1, T0 + 20000, p);
    e = (flame_err)FLAME_ERR_INIT;
    is_int(store_put(s, &w, &e), 0, "the next put, the lock gone: stored");
    profile_free(p);
    is_int(windows_of(path, &e), 3, "with the kept window: 3 windows");
    /* kept, then the recording ends: store_flush stores it */
    sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    p = many_stacks(20, 3);
    w = window_of("web", 1, T0 + 30000, p);
    is_int(store_put(s, &w, &e), 1, "kept again");
    profile_free(p);
    e = (flame_err)FLAME_ERR_INIT;
    ok(store_flush(s, &e) < 0 && strstr(e.msg, "1 window kept in memory not stored"),
       "a flush while the lock is still held fails, saying what is lost (%s)", e.msg);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    e = (flame_err)FLAME_ERR_INIT;
    is_int(store_flush(s, &e), 0, "a flush once it is free");
    is_int(windows_of(path, &e), 4, "stores it: 4 windows");
    sqlite3_close(other);
    store_close(s);
    ok(integrity_ok(path), "integrity_check: ok");
}

/* Progress handler on prune's connection: the first time a statement that decodes the windows
 * runs, another connection stores a window (busy timeout 0). With the write lock held for the
 * decoding that put fails. */
typedef struct gc_probe {
    sqlite3 *db;
    store *other;
    const store_window *w;
    int tries, put_rc;
    char msg[sizeof((flame_err *)0)->msg];
} gc_probe;

static int gc_progress(void *ud)
{
    gc_probe *g = ud;
    if (g->tries)
        return 0;
    for (sqlite3_stmt *st = sqlite3_next_stmt(g->db, NULL); st; st = sqlite3_next_stmt(g->db, st)) {
        const char *q = sqlite3_sql(st);
        if (sqlite3_stmt_busy(st) && strstr(q, "pairs FROM windows") && !strstr(q, "WHERE")) {
            flame_err e = FLAME_ERR_INIT;
            g->tries++;
            g->put_rc = store_put(g->other, g->w, &e);
            snprintf(g->msg, sizeof g->msg, "%s", e.msg);
            break;
        }
    }
    return 0;
}

static void test_prune_lock(void)
{
    const char *path = in_scratch("prune.db");
    /* old windows whose stacks no newer window uses, and newer ones */
    is_int(put_n(path, "old", 200, 60, T0), 200, "200 old windows");
    is_int(put_n(path, "new", 50, 60, T0 + 86400000LL), 50, "50 newer ones");
    store *s = NULL, *o = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    store_open(path, &o, &e);
    sq_busy_timeout(sq_of(o), 0);
    /* the concurrent window uses a stack only the old windows use so far: once the old ones are
     * deleted it must survive the collection */
    profile *p = many_stacks(60, 150); /* the stacks of old window 150, and of no newer one */
    store_window w = window_of("late", 1, T0 + 2 * 86400000LL, p);
    gc_probe g = {.db = sq_of(s)->db, .other = o, .w = &w, .put_rc = -9};
    sqlite3_progress_handler(g.db, 100, gc_progress, &g);
    store_compact_stats st = {0};
    is_int(store_prune(s, T0 + 86400000LL, 3600000, &st, &e), 0, "prune the old windows");
    sqlite3_progress_handler(g.db, 0, NULL, NULL);
    ok(st.deleted == 200 && st.stacks_freed > 0, "200 deleted, %llu stacks freed",
       (unsigned long long)st.stacks_freed);
    is_int(g.tries, 1, "a put was tried while prune decoded the windows");
    is_int(g.put_rc, 0, "and stored at once (the write lock was free: %s)", g.msg);
    store_close(o);
    profile_free(p);
    /* the late window reads back whole: its stacks were not collected */
    store_info info = {0};
    store_query q = {.container = "late", .since_ms = 0, .until_ms = INT64_MAX};
    profile *back = profile_new();
    ok(store_profile(s, &q, back, &info, &e) == 0 && info.windows == 1 &&
           profile_stacks(back) == 60,
       "the window stored meanwhile kept every one of its 60 stacks (%zu)", profile_stacks(back));
    profile_free(back);
    store_close(s);
    ok(integrity_ok(path), "integrity_check: ok");
}

/* prune while a reader holds an old snapshot (a long `show`): the checkpoint does not wait for
 * it (a TRUNCATE checkpoint waited the whole busy timeout, writers held back meanwhile). */
static void test_prune_reader(void)
{
    const char *path = in_scratch("reader.db");
    is_int(put_n(path, "web", 100, 40, T0), 100, "a store");
    sqlite3 *reader;
    sqlite3_stmt *st;
    sqlite3_open(path, &reader);
    sqlite3_exec(reader, "BEGIN", NULL, NULL, NULL);
    sqlite3_prepare_v2(reader, "SELECT count(*) FROM windows", -1, &st, NULL);
    ok(sqlite3_step(st) == SQLITE_ROW, "a reader holds a snapshot");
    is_int(put_n(path, "web", 5, 40, T0 + 86400000LL), 5, "newer windows after it");
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_open(path, &s, &e);
    double t0 = mono_s();
    store_compact_stats cs = {0};
    is_int(store_prune(s, T0 + 86400000LL, 3600000, &cs, &e), 0, "prune");
    double took = mono_s() - t0;
    ok(took < 2.0, "without waiting for the reader (%.2f s; the busy timeout is 10 s)", took);
    sqlite3_finalize(st);
    sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(reader);
    store_close(s);
    ok(integrity_ok(path), "integrity_check: ok");
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* children print too */
    scratch_make();
    test_migration();
    test_damage();
    test_concurrency();
    test_crash();
    test_full_disk();
    test_spool_calls();
    test_busy_put();
    test_prune_lock();
    test_prune_reader();
    scratch_remove();
    return tap_done();
}
