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
#include <stdint.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"

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

bool atomic_is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* The kernel's protected_symlinks rule (fs/namei.c may_follow_link), applied whether the sysctl
 * is on or not, and to devices and FIFOs too (protected_fifos covers only O_CREAT): an entry of a
 * sticky world-writable directory (/tmp, /dev/shm) is trusted when it is ours or the directory
 * owner's. Another user can plant anything there, under any name we may be asked to write. */
static bool trusted_entry(const struct stat *dir, const struct stat *st)
{
    if (st->st_uid == geteuid())
        return true;
    if ((dir->st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH))
        return true;
    return dir->st_uid == st->st_uid;
}

static int untrusted(const char *path, const struct stat *st, const char *what, flame_err *err)
{
    return flame_fail(err, FLAME_EXIT_ERROR,
                      "will not write %s: it is %s owned by another user (uid %u) in a "
                      "world-writable sticky directory, which the kernel's protected_symlinks "
                      "rule does not trust; remove it or choose another -o",
                      path, what, (unsigned)st->st_uid);
}

/* A name for a temporary file nobody can guess: getrandom, not the pid or the time. */
static void random_chars(char *out, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[32];
    if (n > sizeof r)
        n = sizeof r;
    if (getrandom(r, n, 0) != (ssize_t)n) { /* no entropy yet: the clock, still O_EXCL below */
        uint64_t t = (uint64_t)(mono_s() * 1e9);
        for (size_t i = 0; i < n; i++)
            r[i] = (unsigned char)(t >> (i * 5));
    }
    for (size_t i = 0; i < n; i++)
        out[i] = abc[r[i] % (sizeof abc - 1)];
}

/* mkostemp in a directory given by its fd: ".<base>.XXXXXX", created O_EXCL (a link or file of
 * that name is never opened), mode 0600. The fd, or -1 with errno. */
static int temp_at(int dfd, const char *base, char *name, size_t cap)
{
    for (int tries = 0; tries < 100; tries++) {
        char rnd[7] = {0};
        random_chars(rnd, 6);
        if ((size_t)snprintf(name, cap, ".%.200s.%s", base, rnd) >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Under sudo the user wants their own file, not root's. */
static int chown_sudo(int fd, const char *path, flame_err *err)
{
    const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
    if (geteuid() == 0 && su && sg && *su && *sg &&
        fchown(fd, (uid_t)strtoul(su, NULL, 10), (gid_t)strtoul(sg, NULL, 10)) != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "chown %s to the sudo user", path);
    return 0;
}

/* The entry base of the directory dfd gets fn's output: a temporary file next to it, fsync,
 * renameat over it (a rename replaces the entry itself and never follows anything). path is
 * what messages call it. */
static int replace_at(int dfd, const char *base, const char *path, atomic_writer_fn fn, void *ctx,
                      flame_err *err)
{
    char tmp[300];
    int fd = temp_at(dfd, base, tmp, sizeof tmp);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    /* the temporary is 0600; give the file the mode a plain create would have */
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
    if (rc == 0)
        rc = chown_sudo(fd, path, err);
    if (close(fd) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (rc == 0 && renameat(dfd, tmp, dfd, base) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (rc < 0)
        unlinkat(dfd, tmp, 0);
    return rc;
}

/* A device, FIFO or socket the user named as the output (-o /dev/null, -o /dev/stdout, a named
 * pipe) is written in place: a temporary file renamed over it would replace /dev/null itself
 * with a regular file, and a stream has no half-written state to protect anyway. fd: opened
 * for writing (O_NOCTTY: a terminal must not become our controlling terminal; no O_CREAT, no
 * O_TRUNC: it exists and is not ours to recreate). */
static int write_stream(int fd, const char *path, atomic_writer_fn fn, void *ctx, flame_err *err)
{
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    int rc = write_through_thread(fd, true, path, fn, ctx, err);
    if (close(fd) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    return rc;
}

/* "/a/b/c" -> "/a/b" and "c"; "c" -> "." and "c"; "/c" -> "/" and "c". dir is malloc'd. */
static int split_path(const char *path, char **dir, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    *dir = !slash          ? strdup(".")
           : slash == path ? strdup("/")
                           : strndup(path, (size_t)(slash - path));
    return *dir ? 0 : -1;
}

/* What a trusted symbolic link names, as the kernel resolves it (openat follows it, with the
 * kernel's own rules for any further link; we never read the link ourselves): a regular file is
 * replaced atomically in its own directory (the link stays a link), a device or pipe is written
 * in place (/dev/stdout), a link to nothing yet creates the file it names. */
static int write_through_link(int dfd, const char *base, const char *path, atomic_writer_fn fn,
                              void *ctx, flame_err *err)
{
    _cleanup_close_ int fd = openat(dfd, base, O_PATH | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        int c = openat(dfd, base, O_WRONLY | O_CREAT | O_NOCTTY | O_CLOEXEC, 0666);
        if (c >= 0)
            close(c);
        fd = openat(dfd, base, O_PATH | O_CLOEXEC);
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (S_ISDIR(st.st_mode))
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot write %s: it is a directory", path);
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if (!S_ISREG(st.st_mode)) /* the very object the kernel resolved, opened for writing */
        return write_stream(open(self, O_WRONLY | O_NOCTTY | O_CLOEXEC), path, fn, ctx, err);
    /* The file's own directory and name, as the kernel knows them; checked to be the same file
     * once that directory is open, so nothing can move in between. */
    char real[4096];
    ssize_t n = readlink(self, real, sizeof real - 1);
    if (n <= 0 || real[0] != '/')
        return flame_fail_errno(err, FLAME_EXIT_ERROR, n < 0 ? errno : ENOENT,
                                "cannot write %s: where its link leads is unknown", path);
    real[n] = 0;
    _cleanup_free_ char *rdir = NULL;
    const char *rbase;
    if (split_path(real, &rdir, &rbase) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    _cleanup_close_ int rdfd = open(rdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat rs;
    if (rdfd < 0 || fstatat(rdfd, rbase, &rs, AT_SYMLINK_NOFOLLOW) != 0 || rs.st_dev != st.st_dev ||
        rs.st_ino != st.st_ino)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "cannot write %s: the file its link names moved while it was opened",
                          path);
    return replace_at(rdfd, rbase, path, fn, ctx, err);
}

/* The output path's last entry, looked at without following it: *dfd its directory (opened
 * once: everything after is relative to it, by name), base its name, st what it is (st_mode 0:
 * nothing yet). Refused here: a directory, and another user's link, FIFO or device in a sticky
 * world-writable directory. */
static int look_at(const char *path, int *dfd, char **dir, const char **base, struct stat *st,
                   flame_err *err)
{
    *dfd = -1;
    memset(st, 0, sizeof *st);
    if (split_path(path, dir, base) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot write %s: it is a directory", path);
    struct stat ds;
    *dfd = open(*dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*dfd < 0 || fstat(*dfd, &ds) != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (fstatat(*dfd, *base, st, AT_SYMLINK_NOFOLLOW) != 0) {
        memset(st, 0, sizeof *st);
        if (errno != ENOENT)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
        return 0;
    }
    if (S_ISDIR(st->st_mode))
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot write %s: it is a directory", path);
    if (!S_ISREG(st->st_mode) && !trusted_entry(&ds, st))
        return untrusted(path, st,
                         S_ISLNK(st->st_mode)    ? "a symbolic link"
                         : S_ISFIFO(st->st_mode) ? "a named pipe"
                                                 : "a device or socket",
                         err);
    return 0;
}

int atomic_check(const char *path, flame_err *err)
{
    _cleanup_free_ char *dir = NULL;
    _cleanup_close_ int dfd = -1;
    const char *base;
    struct stat st;
    return look_at(path, &dfd, &dir, &base, &st, err);
}

int atomic_write_file(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err)
{
    _cleanup_free_ char *dir = NULL;
    _cleanup_close_ int dfd = -1;
    const char *base;
    struct stat st;
    if (look_at(path, &dfd, &dir, &base, &st, err) < 0)
        return -1;
    if (!st.st_mode || S_ISREG(st.st_mode)) /* a new file, or one to replace */
        return replace_at(dfd, base, path, fn, ctx, err);
    if (S_ISLNK(st.st_mode))
        return write_through_link(dfd, base, path, fn, ctx, err);
    /* O_NOFOLLOW: the entry checked above, not a link put in its place since */
    return write_stream(openat(dfd, base, O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC), path, fn,
                        ctx, err);
}

int atomic_write_new(const char *dir, const char *stem, const char *ext, atomic_writer_fn fn,
                     void *ctx, char **made, flame_err *err)
{
    *made = NULL;
    _cleanup_free_ char *tmpl = NULL;
    if (asprintf(&tmpl, "%s/%s-XXXXXX%s", dir, stem, ext) < 0) {
        tmpl = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* O_CREAT|O_EXCL with a name nobody can guess: nothing planted is ever opened */
    int fd = mkostemps(tmpl, (int)strlen(ext), O_CLOEXEC);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot create a file in %s", dir);
    int rc = write_through_thread(fd, false, tmpl, fn, ctx, err);
    if (rc == 0 && fsync(fd) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", tmpl);
    if (rc == 0)
        rc = chown_sudo(fd, tmpl, err);
    if (close(fd) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", tmpl);
    if (rc < 0) {
        unlink(tmpl);
        return rc;
    }
    *made = tmpl;
    tmpl = NULL;
    return 0;
}
