/* atomic_write_file: temp file + fsync + rename, the one way outputs are written.
 *
 * The bytes reach the file through a second thread: the caller formats into one 4 MB buffer
 * while the thread writes the other (a 1M-stack diff is ~500 MB of text, and write(2) costs
 * about as much CPU as formatting it). Past 32 MB the thread writes with O_DIRECT: the disk
 * reads our two buffers, which are used over and over, instead of the kernel copying every byte
 * into page-cache pages allocated for it — on the VMs we measure on, touching that much fresh
 * memory is most of the cost of a big output (docs/BENCHMARKS.md has the figures). The first 32 MB
 * (all of a typical SVG) stay buffered, so a graph the user opens next is read from memory.
 * Filesystems without O_DIRECT (EINVAL) are written buffered throughout. */
#include "common/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

enum {
    OUT_BUF = 4 << 20,          /* each of the two buffers */
    OUT_STDIO = 64 << 10,       /* stdio's buffer in front of them: small fputs/putc batch up */
    OUT_DIRECT_FROM = 32 << 20, /* O_DIRECT from this offset on */
    OUT_ALIGN = 4096,           /* O_DIRECT: buffer address, length and offset multiples of it */
};

/* Double buffer between the formatting thread (the caller) and the writing thread. A buffer is
 * free when it is neither queued for nor being written by the writer. */
typedef struct async_out {
    int fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *buf[2];
    size_t len[2];
    int cur;    /* the buffer the caller fills */
    int queued; /* waiting for the writer, or -1 */
    int busy;   /* being written, or -1 */
    bool done;  /* no more buffers will come */
    int err;    /* first write error (errno), reported by the next write or the close */
    /* writer thread only */
    off_t pos;
    bool direct, no_direct; /* O_DIRECT on; O_DIRECT refused by the filesystem */
    bool stream;            /* a pipe or device: plain write(), no offsets, no O_DIRECT */
} async_out;

static bool set_direct(async_out *a, bool on)
{
    int fl = fcntl(a->fd, F_GETFL);
    if (fl < 0 || fcntl(a->fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) < 0)
        return false;
    a->direct = on;
    return true;
}

/* Write one buffer at a->pos: direct when it is a whole aligned block past OUT_DIRECT_FROM,
 * buffered otherwise (and for good once the filesystem refuses O_DIRECT). 0 or an errno. */
static int write_block(async_out *a, const char *p, size_t n)
{
    bool aligned = n % OUT_ALIGN == 0 && a->pos % OUT_ALIGN == 0;
    if (a->direct && !aligned && !set_direct(a, false))
        return errno;
    if (!a->direct && aligned && !a->no_direct && !a->stream && a->pos >= OUT_DIRECT_FROM &&
        !set_direct(a, true))
        a->no_direct = true;
    while (n > 0) {
        /* pwrite on a pipe fails with ESPIPE: streams take write() */
        ssize_t w = a->stream ? write(a->fd, p, n) : pwrite(a->fd, p, n, a->pos);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EINVAL && a->direct) {
            /* O_DIRECT accepted by fcntl but not by this filesystem's writes */
            a->no_direct = true;
            if (!set_direct(a, false))
                return errno;
            continue;
        }
        if (w < 0)
            return errno;
        p += w;
        n -= (size_t)w;
        a->pos += w;
    }
    return 0;
}

static void *writer_main(void *ud)
{
    async_out *a = ud;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->queued < 0 && !a->done)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->queued < 0)
            break;
        int b = a->busy = a->queued;
        a->queued = -1;
        bool failed = a->err != 0;
        pthread_mutex_unlock(&a->mu);
        int e = failed ? 0 : write_block(a, a->buf[b], a->len[b]);
        pthread_mutex_lock(&a->mu);
        if (e && !a->err)
            a->err = e;
        a->len[b] = 0;
        a->busy = -1;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Queue the filled buffer for the writer and wait until the other one is free to fill. */
static int hand_over(async_out *a)
{
    pthread_mutex_lock(&a->mu);
    while (a->queued >= 0)
        pthread_cond_wait(&a->cv, &a->mu);
    a->queued = a->cur;
    a->cur ^= 1;
    pthread_cond_broadcast(&a->cv);
    while (a->queued == a->cur || a->busy == a->cur)
        pthread_cond_wait(&a->cv, &a->mu);
    int e = a->err;
    pthread_mutex_unlock(&a->mu);
    return e;
}

static ssize_t cookie_write(void *cookie, const char *p, size_t n)
{
    async_out *a = cookie;
    size_t done = 0;
    while (done < n) {
        size_t room = OUT_BUF - a->len[a->cur], k = n - done < room ? n - done : room;
        memcpy(a->buf[a->cur] + a->len[a->cur], p + done, k);
        a->len[a->cur] += k;
        done += k;
        int e = a->len[a->cur] == OUT_BUF ? hand_over(a) : 0;
        if (e) {
            /* fopencookie(3): 0 on error, never negative (glibc mis-counts its buffer on -1) */
            errno = e;
            return 0;
        }
    }
    return (ssize_t)n;
}

/* Flush the last buffer and stop the writer; the first write error, or 0. */
static int async_finish(async_out *a, pthread_t t)
{
    pthread_mutex_lock(&a->mu);
    while (a->queued >= 0)
        pthread_cond_wait(&a->cv, &a->mu);
    if (a->len[a->cur] > 0)
        a->queued = a->cur;
    a->done = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(t, NULL);
    return a->err;
}

/* The generator writes into an async FILE on fd; 0 or <0 with err set (naming path). */
static int write_through_thread(int fd, bool stream, const char *path, atomic_writer_fn fn,
                                void *ctx, flame_err *err)
{
    async_out a = {.fd = fd, .queued = -1, .busy = -1, .stream = stream};
    if (posix_memalign((void **)&a.buf[0], OUT_ALIGN, OUT_BUF) != 0)
        a.buf[0] = NULL;
    if (posix_memalign((void **)&a.buf[1], OUT_ALIGN, OUT_BUF) != 0)
        a.buf[1] = NULL;
    if (!a.buf[0] || !a.buf[1]) {
        free(a.buf[0]);
        free(a.buf[1]);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    cookie_io_functions_t io = {.write = cookie_write};
    FILE *f = fopencookie(&a, "w", io);
    /* The writer starts with every signal blocked: the caller's signal handling (Ctrl-C in the
     * plugin) must keep happening on the caller's thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    bool started = f && pthread_create(&t, NULL, writer_main, &a) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int rc;
    if (!started) {
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : ENOMEM, "cannot write %s",
                              path);
    } else {
        setvbuf(f, NULL, _IOFBF, OUT_STDIO);
        rc = fn(ctx, f, err);
        int flush_errno = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
        /* the writer's errno is the cause of a failed flush, when it has one */
        int e = async_finish(&a, t);
        if (rc == 0 && (e || flush_errno))
            rc = flame_fail_errno(err, FLAME_EXIT_ERROR, e ? e : flush_errno, "cannot write %s",
                                  path);
    }
    if (f) {
        if (rc < 0)
            __fpurge(f); /* a failed output is discarded: the writer is gone, do not feed it */
        fclose(f);
    }
    pthread_cond_destroy(&a.cv);
    pthread_mutex_destroy(&a.mu);
    free(a.buf[0]);
    free(a.buf[1]);
    return rc;
}

/* A device, FIFO or socket given as the output (-o /dev/null, -o /dev/stdout, a named pipe): it
 * is written in place. A temporary file renamed over it would replace /dev/null itself with a
 * regular file; and there is no half-written state to protect in a stream anyway. */
static int write_special(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err)
{
    /* O_NOCTTY: a terminal device must not become our controlling terminal; no O_CREAT, no
     * O_TRUNC: it exists and is not ours to recreate */
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    int rc = write_through_thread(fd, true, path, fn, ctx, err);
    if (close(fd) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    return rc;
}

bool atomic_is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static int write_atomic(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err);

/* The path a symbolic link names, relative to the link's directory; NULL when unreadable. */
static char *link_target(const char *path)
{
    char buf[4096];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = 0;
    const char *slash = strrchr(path, '/');
    char *out = NULL;
    if (buf[0] == '/' || !slash)
        return strdup(buf);
    if (asprintf(&out, "%.*s/%s", (int)(slash - path), path, buf) < 0)
        return NULL;
    return out;
}

static int write_file(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err, int depth)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot write %s: it is a directory", path);
    if (atomic_is_special(path))
        return write_special(path, fn, ctx, err);
    /* A symbolic link (-o /dev/stdout redirected to a file, a link a user keeps to the latest
     * graph) stays a link: the file it names is replaced, never the link itself. */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        _cleanup_free_ char *target = link_target(path);
        if (!target || depth >= 8) /* e.g. a pipe behind /proc/self/fd: write through it */
            return write_special(path, fn, ctx, err);
        return write_file(target, fn, ctx, err, depth + 1);
    }
    return write_atomic(path, fn, ctx, err);
}

int atomic_write_file(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err)
{
    return write_file(path, fn, ctx, err, 0);
}

static int write_atomic(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err)
{
    _cleanup_free_ char *tmp = NULL;
    const char *slash = strrchr(path, '/');
    if (asprintf(&tmp, "%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0, path,
                 slash ? slash + 1 : path) < 0) {
        tmp = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    /* mkostemp creates 0600; give the file the mode a plain create would have. */
    mode_t um = umask(0);
    umask(um);
    int rc = 0;
    if (fchmod(fd, 0666 & ~um) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (rc == 0)
        rc = write_through_thread(fd, false, path, fn, ctx, err);
    /* fsync before rename: after a crash the name points at the whole file or the old one. */
    if (rc == 0 && fsync(fd) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    /* Under sudo the user wants their own file, not root's. */
    const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
    if (rc == 0 && geteuid() == 0 && su && sg && *su && *sg &&
        fchown(fd, (uid_t)strtoul(su, NULL, 10), (gid_t)strtoul(sg, NULL, 10)) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "chown %s to the sudo user", path);
    if (close(fd) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (rc < 0)
        unlink(tmp);
    return rc;
}
