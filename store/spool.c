/* The local spool of a remote store (store/spool.h): windows the server did not take are kept in
 * a SQLite store of their own, bounded in size (the oldest go first), and sent, with the uids
 * they were given, by later successful puts and by store_flush. The spool is driven from here:
 * store.c calls in, this file calls the SQLite backend's spool calls (sqlite_spool.c) and the
 * remote backend's put (through the handle's ops). */
#include "store/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "store/sqlite_impl.h"
#include "store/store_impl.h"

/* Spooled windows sent per round: enough to catch up after an outage within minutes, few
 * enough that one put stays short. */
#define DRAIN_BATCH 64
/* How long spool_flush waits for another process that sends the same spool (a round is a few
 * requests, each bounded by the put timeout). */
#define FLUSH_LOCK_WAIT_MS 60000

bool spool_on(const store *s)
{
    return s->spool_path && s->spool_path[0];
}

/* Open the spool when it is needed: always to write into it, only when its file exists to
 * read from it (no empty file made by every put). 1 open, 0 none, -1 error. */
static int spool_open(store *s, bool create, flame_err *err)
{
    if (s->spool)
        return 1;
    if (!spool_on(s) || (!create && access(s->spool_path, F_OK) != 0))
        return 0;
    if (!s->readonly && store_make_parent(s->spool_path, err) < 0)
        return -1;
    store *sp = calloc(1, sizeof *sp);
    if (!sp || !(sp->name = strdup(s->spool_path))) {
        free(sp);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    sp->readonly = sp->any_version = s->readonly;
    if (sq_open(sp, s->spool_path, err) < 0) {
        store_handle_free(sp);
        return flame_wrap(err, "spool");
    }
    s->spool = sp;
    return 1;
}

/* The spool is sent by one process at a time: an exclusive flock on <spool>.lock, held from
 * reading a batch to deleting it once sent (two recorders of one server share the spool; without
 * it both sent the same windows). A file of its own: SQLite's own locks on the spool are fcntl
 * locks, which flock may be on some file systems. Returns the locked fd, -2 when another process
 * holds it past wait_ms, -1 with err on failure. */
static int drain_lock(const store *s, int wait_ms, flame_err *err)
{
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s.lock", s->spool_path) < 0) {
        path = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return store_fail(err, STORE_ERR_IO, "spool: cannot open %s: %s", path, strerror(errno));
    int64_t deadline = mono_ms() + wait_ms;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if ((e != EWOULDBLOCK && e != EINTR) || (e == EWOULDBLOCK && mono_ms() >= deadline)) {
            close(fd);
            if (e == EWOULDBLOCK)
                return -2;
            return store_fail(err, STORE_ERR_IO, "spool: cannot lock %s: %s", path, strerror(e));
        }
        poll(NULL, 0, 20);
    }
    return fd;
}

/* Send up to rounds batches from the spool, holding its drain lock. 0 = sent (or nothing to
 * send), -1 = stopped. */
static int drain_locked(store *s, int rounds, flame_err *err)
{
    int rc = 1;
    for (int r = 0; rc > 0 && r < rounds; r++) {
        sq_batch b;
        rc = sq_take(s->spool, DRAIN_BATCH, &b, err);
        if (rc == 0 && b.n == 0) {
            sq_batch_free(&b);
            return 0;
        }
        if (rc == 0)
            rc = s->ops->put(s, b.w, b.n, err);
        if (rc == 0)
            rc = sq_drop(s->spool, b.ids, b.n, err);
        sq_batch_free(&b);
        if (rc == 0)
            rc = 1;
    }
    return rc < 0 ? -1 : 0;
}

int spool_drain(store *s, int rounds, flame_err *err)
{
    int rc = spool_open(s, false, err);
    if (rc <= 0)
        return rc;
    int fd = drain_lock(s, 0, err);
    if (fd == -2)
        return 0; /* being sent: by the time we could, it would be sent */
    if (fd < 0)
        return -1;
    rc = drain_locked(s, rounds, err);
    close(fd);
    return rc;
}

/* The windows a failed put could not store, into the spool (err: why the put failed). */
int spool_keep(store *s, const store_window *w, size_t n, flame_err *err)
{
    uint64_t dropped = 0, waiting = 0;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    flame_err e2 = FLAME_ERR_INIT;
    if (spool_open(s, true, &e2) < 0 || sq_shrink(s->spool, s->spool_max, &dropped, &e2) < 0 ||
        s->spool->ops->put(s->spool, w, n, &e2) < 0 || sq_count(s->spool, &waiting, &e2) < 0) {
        *err = e2;
        return flame_wrap(err, "%s (and the local spool failed)", why);
    }
    store_fail(err, STORE_ERR_UNREACHABLE, "%s; kept in %s (%llu windows waiting%s)", why,
               s->spool_path, (unsigned long long)waiting,
               dropped ? ", the oldest dropped to stay under spool_max" : "");
    return 1;
}

int spool_flush(store *s, flame_err *err)
{
    int rc = spool_open(s, false, err);
    if (rc <= 0)
        return rc;
    int fd = drain_lock(s, FLUSH_LOCK_WAIT_MS, err);
    if (fd == -2)
        return store_fail(err, STORE_ERR_UNREACHABLE,
                          "%s: another process has been sending the spool for %d s: it sends what "
                          "waits",
                          s->spool_path, FLUSH_LOCK_WAIT_MS / 1000);
    if (fd < 0)
        return -1;
    for (;;) {
        uint64_t left = 0;
        if ((rc = sq_count(s->spool, &left, err)) < 0 || left == 0 ||
            (rc = drain_locked(s, 1, err)) < 0)
            break;
    }
    close(fd);
    return rc;
}

int spool_waiting(store *s, uint64_t *n, flame_err *err)
{
    int rc = spool_open(s, false, err);
    return rc <= 0 ? rc : sq_count(s->spool, n, err);
}
