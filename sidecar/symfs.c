/* The target's own shared libraries, for perf script's --symfs (docs/SIDECAR.md "Native
 * frames"). After recording, still privileged, for every file-backed executable mapping of a
 * JVM: copy the MAPPED INODE (the kernel's /proc/<pid>/map_files/<start>-<end> magic link, no
 * path lookup in the target, so a symlink or a library replaced on disk after it was mapped
 * changes nothing) to SC_SYMFS + the path the kernel names for the mapping. Only bytes are
 * copied as root; the ELF is parsed later by perf script, unprivileged, under seccomp. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/session.h"

/* ---- copying, privileged ---- */

/* A copy's name below SC_SYMFS: the mapping's path, or (host) its inode's prefix + the path. */
#define NAME_MAX_ (SC_INODE_PREFIX_MAX + SC_SYMFS_PATH_MAX + 1)

/* What was copied so far in this sidecar run (all JVMs share SC_SYMFS). */
typedef struct copied {
    char path[SC_SYMFS_PATH_MAX + 1]; /* the mapping's path (messages) */
    char name[NAME_MAX_];             /* where it is below SC_SYMFS */
    uint64_t dev, ino;
    bool conflict; /* two different inodes under this name: no copy (never a wrong name) */
    char build_id[2 * SC_BUILD_ID_MAX + 1];
} copied;
static copied tab[SC_SYMFS_FILES_MAX];
static int n_tab;
static uint64_t total_bytes;

static copied *find(const char *name)
{
    for (int i = 0; i < n_tab; i++)
        if (strcmp(tab[i].name, name) == 0)
            return &tab[i];
    return NULL;
}

/* The name of m's copy below SC_SYMFS into buf (NAME_MAX_ bytes). */
static void copy_name(const sc_symfs_map *m, bool by_inode, char *buf)
{
    int n = by_inode ? sc_inode_prefix(buf, NAME_MAX_, m->dev_major, m->dev_minor, m->ino) : 0;
    snprintf(buf + (n > 0 ? n : 0), NAME_MAX_ - (size_t)(n > 0 ? n : 0), "%s", m->path);
}

/* mkdir -p of the directories of path (our own tmpfs: nothing of the target's in it). */
static int mkdirs_for(const char *path)
{
    char buf[sizeof(SC_SYMFS) + NAME_MAX_ + 32];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

static int copy_fd(int in, int out, uint64_t size)
{
    char buf[1 << 16];
    uint64_t done = 0;
    while (done < size) {
        size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
        ssize_t n = TEMP_FAILURE_RETRY(read(in, buf, want));
        if (n < 0)
            return -errno;
        if (n == 0)
            break; /* truncated meanwhile: perf rejects what is not a whole ELF */
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(out, buf + w, (size_t)(n - w)));
            if (k < 0)
                return -errno;
            w += k;
        }
        done += (uint64_t)n;
    }
    return 0;
}

/* The mapped file of m, opened for reading: *fd and *st. 1 when it is a regular file within
 * the bounds, 0 skipped (*why), <0 -errno. */
static int open_mapped(const sc_jvm *j, const sc_symfs_map *m, int *fd, struct stat *st,
                       const char **why)
{
    char link[96];
    snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)j->st.pid,
             (unsigned long long)m->start, (unsigned long long)m->end);
    /* PRIVILEGE: map_files is a directory of the JVM's user (mode 0500) and its magic links
     * need CAP_SYS_ADMIN. We hold no CAP_DAC_*, so the lookup is made with the JVM's fsuid
     * (CAP_SETUID; an fsuid change clears only the file-system capabilities, CAP_SYS_ADMIN
     * stays), which also means we read only what the JVM's user could read. The magic link
     * leads to the mapped file itself: no lookup of the target's path, no symlink of the
     * target followed, the inode that is mapped even when the path now names another file. */
    setfsgid(j->st.gid);
    setfsuid(j->st.uid);
    int r = 0;
    /* O_PATH first: opening a FIFO or a device for reading could block or act. */
    _cleanup_close_ int pfd = open(link, O_PATH | O_CLOEXEC);
    if (pfd < 0)
        r = -errno;
    else if (fstat(pfd, st) < 0)
        r = -errno;
    else if (!S_ISREG(st->st_mode))
        *why = "not a regular file";
    else if (st->st_ino != m->ino)
        *why = "not the inode the maps line names";
    else if ((uint64_t)st->st_size > SC_SYMFS_FILE_MAX)
        *why = "larger than the per-file bound";
    else if (total_bytes + (uint64_t)st->st_size > SC_SYMFS_TOTAL_MAX)
        *why = "over the total bound of the copies";
    else {
        /* the same link again, now for reading: checked to be the same regular file */
        struct stat st2;
        *fd = open(link, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (*fd < 0)
            r = -errno;
        else if (fstat(*fd, &st2) < 0 || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino) {
            close(*fd);
            *why = "changed while it was opened";
        } else
            r = 1;
    }
    setfsuid(0);
    setfsgid(0);
    return r;
}

/* Copy one mapping's inode to SC_SYMFS/name; 1 copied, 0 skipped (with *why), <0 -errno. */
static int copy_one(const sc_jvm *j, const sc_symfs_map *m, const char *name, const char **why,
                    uint64_t *bytes)
{
    char dst[sizeof(SC_SYMFS) + NAME_MAX_];
    struct stat st;
    int in = -1;
    int r = open_mapped(j, m, &in, &st, why);
    if (r <= 0)
        return r;
    _cleanup_close_ int fd = in;
    /* Only ELF files are worth the tmpfs space (a CDS archive is mapped executable too). Four
     * bytes compared: nothing of the target is parsed here. */
    char magic[4];
    if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0)
        return *why = "not an ELF file", 0;
    snprintf(dst, sizeof(dst), "%s%s", SC_SYMFS, name);
    if (mkdirs_for(dst) < 0)
        return -errno;
    _cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0)
        return -errno;
    r = copy_fd(fd, out, (uint64_t)st.st_size);
    if (r < 0) {
        unlink(dst);
        return r;
    }
    copied *c = &tab[n_tab++];
    snprintf(c->path, sizeof(c->path), "%s", m->path);
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->dev = st.st_dev;
    c->ino = st.st_ino;
    c->conflict = false;
    c->build_id[0] = '\0';
    total_bytes += (uint64_t)st.st_size;
    *bytes += (uint64_t)st.st_size;
    return 1;
}

/* The build-ids of the files fds[0..n) (our own copies), computed by a child that first drops
 * to nobody under seccomp (sc_harden): the ELF is the target's data, never parsed with
 * privilege. hex[i] is "" when unknown. Bounded: the child is killed after 10 s. */
static void build_ids(const int *fds, int n, char (*hex)[2 * SC_BUILD_ID_MAX + 1])
{
    enum { REC = 2 * SC_BUILD_ID_MAX + 1 };
    for (int i = 0; i < n; i++)
        hex[i][0] = '\0';
    int pfd[2];
    if (n <= 0 || pipe2(pfd, O_CLOEXEC) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        flame_err e = FLAME_ERR_INIT;
        if (sc_harden(&e) < 0)
            _exit(1);
        for (int i = 0; i < n; i++) {
            char h[REC] = "";
            struct stat st;
            if (fstat(fds[i], &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
                (uint64_t)st.st_size <= SC_SYMFS_FILE_MAX) {
                void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fds[i], 0);
                if (m != MAP_FAILED) {
                    sc_elf_build_id(m, (size_t)st.st_size, h);
                    munmap(m, (size_t)st.st_size);
                }
            }
            if (write(pfd[1], h, REC) != REC)
                _exit(1);
        }
        _exit(0);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return;
    }
    _cleanup_free_ char *buf = calloc((size_t)n, REC);
    size_t want = (size_t)n * REC, have = 0;
    int64_t deadline = mono_ms() + 10000;
    while (buf && have < want) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int64_t left = deadline - mono_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t k = TEMP_FAILURE_RETRY(read(pfd[0], buf + have, want - have));
        if (k <= 0)
            break;
        have += (size_t)k;
    }
    close(pfd[0]);
    kill(pid, SIGKILL); /* done or overdue: either way it ends here (our own child) */
    waitpid(pid, NULL, 0);
    for (int i = 0; buf && i < n && (size_t)(i + 1) * REC <= have; i++) {
        const char *h = buf + (size_t)i * REC;
        size_t l = strnlen(h, REC);
        bool ok = l < REC && l % 2 == 0;
        for (size_t k = 0; ok && k < l; k++)
            ok = (h[k] >= '0' && h[k] <= '9') || (h[k] >= 'a' && h[k] <= 'f');
        if (ok)
            memcpy(hex[i], h, l + 1);
    }
}

/* Debug symbols from the TARGET's /usr/lib/debug/.build-id/<xx>/<rest>.debug for each library
 * copied for this JVM (tab[first..n_tab)), fetched as the JVM's user without following
 * symlinks, and kept only when its own build-id is the library's: then put where perf script
 * looks for a separate debug file by the library's path, <symfs>/usr/lib/debug/<path>.debug
 * (perf checks no build-id there for /proc-synthesized mappings, so we did). */
static void fetch_debug(sc_jvm *j, int ns, int first, sc_symfs_stats *s)
{
    int fds[SC_SYMFS_FILES_MAX];
    char(*hex)[2 * SC_BUILD_ID_MAX + 1] = calloc(SC_SYMFS_FILES_MAX, sizeof *hex);
    int idx[SC_SYMFS_FILES_MAX], n = 0;
    char dst[sizeof(SC_SYMFS) + NAME_MAX_ + 32];
    if (!hex)
        return;
    for (int i = first; i < n_tab; i++) {
        snprintf(dst, sizeof(dst), "%s%s", SC_SYMFS, tab[i].name);
        if ((fds[n] = open(dst, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0)
            idx[n++] = i;
    }
    build_ids(fds, n, hex);
    int m = 0;
    for (int k = 0; k < n; k++) {
        close(fds[k]);
        copied *c = &tab[idx[k]];
        snprintf(c->build_id, sizeof(c->build_id), "%s", hex[k]);
        if (strlen(c->build_id) < 4)
            continue;
        char src[128];
        snprintf(src, sizeof(src), "/usr/lib/debug/.build-id/%.2s/%s.debug", c->build_id,
                 c->build_id + 2);
        snprintf(dst, sizeof(dst), "%s/usr/lib/debug%s.debug", SC_SYMFS, c->name);
        int fd = mkdirs_for(dst) == 0
                     ? open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)
                     : -1;
        if (fd < 0)
            continue;
        flame_err err = FLAME_ERR_INIT;
        struct stat st;
        if (sc_fetch_file(j, ns, src, fd, &err) < 0 || fstat(fd, &st) < 0 ||
            (uint64_t)st.st_size > SC_SYMFS_FILE_MAX ||
            total_bytes + (uint64_t)st.st_size > SC_SYMFS_TOTAL_MAX) {
            close(fd);
            unlink(dst);
            continue; /* none (the usual case), or over the bounds */
        }
        close(fd);
        total_bytes += (uint64_t)st.st_size;
        idx[m++] = idx[k];
    }
    /* the fetched debug files' own build-ids must be the libraries' */
    n = 0;
    for (int k = 0; k < m; k++) {
        snprintf(dst, sizeof(dst), "%s/usr/lib/debug%s.debug", SC_SYMFS, tab[idx[k]].name);
        fds[n] = open(dst, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        idx[n] = idx[k];
        n += fds[n] >= 0;
    }
    build_ids(fds, n, hex);
    for (int k = 0; k < n; k++) {
        close(fds[k]);
        copied *c = &tab[idx[k]];
        if (strcmp(hex[k], c->build_id) == 0) {
            s->debug++;
            continue;
        }
        snprintf(dst, sizeof(dst), "%s/usr/lib/debug%s.debug", SC_SYMFS, c->name);
        unlink(dst);
        sc_warn("pid %d: the target's debug file for %s has another build-id (%s): not used",
                (int)j->st.pid, c->path, hex[k][0] ? hex[k] : "none");
    }
    free(hex);
}

int sc_symfs_copy(sc_jvm *j, int ns, bool by_inode, sc_symfs_stats *out)
{
    sc_symfs_stats s = {0};
    int first = n_tab;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)j->st.pid);
    _cleanup_free_ char *buf = malloc(SC_MAPS_MAX + 1);
    if (!buf)
        return -ENOMEM;
    ssize_t len = sc_read_bounded(AT_FDCWD, path, buf, SC_MAPS_MAX + 1);
    if (len < 0)
        return (int)len;
    for (size_t i = 0; i < (size_t)len;) {
        char *nl = memchr(buf + i, '\n', (size_t)len - i);
        if (!nl)
            break; /* only whole lines */
        size_t l = (size_t)(nl - (buf + i));
        sc_symfs_map m;
        int r = sc_symfs_parse_line(buf + i, l, &m);
        i += l + 1;
        if (r == 2)
            s.unsafe++;
        if (r != 1)
            continue;
        char name[NAME_MAX_];
        copy_name(&m, by_inode, name);
        copied *c = find(name);
        if (c && by_inode)
            continue; /* that very inode (and name): copied already */
        if (c) {
            /* same name, another file (a library replaced between two JVMs' loads): the
             * synthesized mmap records carry no build-id, so perf could not tell them apart.
             * Neither is kept: an unnamed frame, never a wrongly named one. */
            struct stat st;
            int cfd = -1;
            const char *cwhy = NULL;
            memset(&st, 0, sizeof st); /* unknown (gone, refused): treated as another file */
            if (open_mapped(j, &m, &cfd, &st, &cwhy) == 1)
                close(cfd);
            if (!c->conflict && ((uint64_t)st.st_dev != c->dev || (uint64_t)st.st_ino != c->ino)) {
                c->conflict = true;
                char dst[sizeof(SC_SYMFS) + NAME_MAX_];
                snprintf(dst, sizeof(dst), "%s%s", SC_SYMFS, c->name);
                unlink(dst);
                s.conflicts++;
                /* Our own agent, two copies (another docker-flame build, or a profile that
                 * found the stable name taken: inject.c) both shown at /libflameagent.so,
                 * the path inside their detached mounts: a few agent frames unnamed, not
                 * worth a warning about the user's libraries. */
                if (strcmp(c->path, "/" SC_AGENT_NAME) != 0)
                    sc_warn("pid %d: %s names two different files (in this JVM or another one "
                            "profiled with it): its frames stay unnamed in both",
                            (int)j->st.pid, c->path);
            }
            continue;
        }
        if (n_tab >= SC_SYMFS_FILES_MAX) {
            s.skipped++;
            continue;
        }
        const char *why = NULL;
        r = copy_one(j, &m, name, &why, &s.bytes);
        if (r == 1)
            s.files++;
        else {
            s.skipped++;
            if (r < 0 || (why && strcmp(why, "not an ELF file") != 0))
                sc_warn("pid %d: %s stays unnamed: %s", (int)j->st.pid, m.path,
                        r < 0 ? strerror(-r) : why);
        }
    }
    if (ns >= 0 && n_tab > first)
        fetch_debug(j, ns, first, &s);
    if (s.unsafe)
        sc_warn("pid %d: %u executable mapping(s) with a name that cannot be used as a file name "
                "(escaped, control or non-ASCII bytes, . or .., over-long) stay unnamed",
                (int)j->st.pid, s.unsafe);
    *out = s;
    return 0;
}
