/* The per-CPU recorder's synthesis from /proc (percpu.h): COMM and MMAP2 records for the
 * processes and mappings that existed before the recording started, so perf script can name them.
 */
#include "sidecar/recorder/percpu_impl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"
#include "sidecar/recorder/interp.h"

/* ---------------------------------------------------------------- synthesis from /proc */

int sc_percpu_parse_maps_line(const char *line, size_t len, sc_maps_entry *e, char *path,
                              size_t path_cap)
{
    /* start-end perms offset maj:min inode [spaces path]; every number hex but the inode. */
    char head[160];
    size_t i = 0;
    /* the fixed fields are short; copy them out to parse with sscanf safely */
    size_t hl = len < sizeof head - 1 ? len : sizeof head - 1;
    memcpy(head, line, hl);
    head[hl] = '\0';
    unsigned long long start, end, off, ino;
    unsigned maj, min;
    char perms[5];
    int used = 0;
    if (sscanf(head, "%llx-%llx %4s %llx %x:%x %llu%n", &start, &end, perms, &off, &maj, &min, &ino,
               &used) != 7 ||
        used <= 0 || end < start || strlen(perms) != 4)
        return -1;
    if (perms[2] != 'x')
        return 0;
    i = (size_t)used;
    while (i < len && line[i] == ' ')
        i++;
    size_t pl = len - i;
    if (path_cap == 0)
        return -1;
    if (pl > path_cap - 1)
        pl = path_cap - 1;
    memcpy(path, line + i, pl);
    path[pl] = '\0';
    for (size_t k = 0; k < pl; k++)
        if (path[k] == '\0')
            path[k] = '?'; /* cannot happen in procfs text; keep the string whole if it does */
    *e = (sc_maps_entry){.start = start,
                         .end = end,
                         .pgoff = off,
                         .ino = ino,
                         .maj = maj,
                         .min = min,
                         .prot = (perms[0] == 'r' ? 1u : 0) | (perms[1] == 'w' ? 2u : 0) | 4u,
                         .flags = perms[3] == 's' ? 1u : 2u}; /* MAP_SHARED : MAP_PRIVATE */
    return 1;
}

static size_t trailer(unsigned char *p, uint32_t pid, uint32_t tid)
{
    memset(p, 0, TRAILER_SIZE);
    put32(p, pid);
    put32(p + 4, tid); /* time 0: before every real record; cpu 0 */
    return TRAILER_SIZE;
}

static int synth_comm(sc_percpu *s, int fd, uint32_t pid, uint32_t tid, const char *comm,
                      flame_err *err)
{
    unsigned char r[8 + 8 + COMM_LEN + TRAILER_SIZE];
    size_t cl = strnlen(comm, COMM_LEN - 1);
    size_t body = 8 + ((cl + 1 + 7) & ~(size_t)7); /* pid, tid, comm NUL-padded to 8 */
    memset(r, 0, sizeof r);
    put32(r, PERF_RECORD_COMM);
    put32(r + 8, pid);
    put32(r + 12, tid);
    memcpy(r + 16, comm, cl);
    size_t size = 8 + body + trailer(r + 8 + body, pid, tid);
    put16(r + 6, (uint16_t)size);
    s->f.st.synthesized++;
    return sc_pc_emit(s, fd, r, size, err);
}

static int synth_mmap2(sc_percpu *s, int fd, uint32_t pid, const sc_maps_entry *e, const char *path,
                       flame_err *err)
{
    unsigned char r[8 + 64 + SC_INODE_PREFIX_MAX + 4096 + 8 + TRAILER_SIZE];
    const char *name = path[0] ? path : "//anon"; /* perf's name for anonymous code: it then
                                                    looks symbols up in /tmp/perf-<pid>.map */
    char named[SC_INODE_PREFIX_MAX + 4096];
    if (s->o.inode_names && e->ino && path[0] == '/' && path[1] != '/') {
        int pl = sc_inode_prefix(named, sizeof named, e->maj, e->min, e->ino);
        snprintf(named + (pl > 0 ? pl : 0), sizeof named - (size_t)(pl > 0 ? pl : 0), "%s", path);
        name = named;
    }
    size_t nl = strnlen(name, sizeof named - 1);
    size_t body = 64 + ((nl + 1 + 7) & ~(size_t)7);
    memset(r, 0, 8 + body);
    put32(r, PERF_RECORD_MMAP2);
    put16(r + 4, PERF_RECORD_MISC_USER);
    put32(r + 8, pid);
    put32(r + 12, pid);
    put64(r + 16, e->start);
    put64(r + 24, e->end - e->start);
    put64(r + 32, e->pgoff);
    put32(r + 40, e->maj);
    put32(r + 44, e->min);
    put64(r + 48, e->ino);
    put64(r + 56, 0); /* ino_generation: unknown from /proc */
    put32(r + 64, e->prot);
    put32(r + 68, e->flags);
    memcpy(r + 72, name, nl);
    size_t size = 8 + body + trailer(r + 8 + body, pid, pid);
    put16(r + 6, (uint16_t)size);
    s->f.st.synthesized++;
    return sc_pc_emit(s, fd, r, size, err);
}

int sc_percpu_synth_anon(sc_percpu *s, int fd, pid_t pid, uint64_t start, uint64_t len,
                         flame_err *err)
{
    sc_maps_entry e = {.start = start, .end = start + len, .prot = 5, .flags = 2};
    if (synth_mmap2(s, fd, (uint32_t)pid, &e, "", err) < 0)
        return -1;
    return sc_pc_flush(s, fd, err);
}

static bool all_digits(const char *n)
{
    if (!*n)
        return false;
    for (; *n; n++)
        if (!isdigit((unsigned char)*n))
            return false;
    return true;
}

static int synth_threads(sc_percpu *s, int fd, int proc_dirfd, uint32_t pid, flame_err *err)
{
    char path[300], comm[64];
    snprintf(path, sizeof path, "%u/task", pid);
    int tfd = openat(proc_dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tfd < 0)
        return 0; /* gone */
    DIR *d = fdopendir(tfd);
    if (!d) {
        close(tfd);
        return 0;
    }
    int rc = 0, n = 0;
    struct dirent *de;
    while (rc == 0 && n < SC_PERCPU_MAX_THREADS && (de = readdir(d))) {
        if (!all_digits(de->d_name))
            continue;
        unsigned long tid = strtoul(de->d_name, NULL, 10);
        if (tid == 0 || tid > INT32_MAX || tid == pid)
            continue; /* the main thread's COMM was written with the process */
        snprintf(path, sizeof path, "%s/comm", de->d_name);
        ssize_t l = sc_read_bounded(dirfd(d), path, comm, sizeof comm);
        if (l < 0)
            continue;
        comm[strcspn(comm, "\n")] = '\0';
        rc = synth_comm(s, fd, pid, (uint32_t)tid, comm, err);
        n++;
    }
    closedir(d);
    return rc;
}

/* MMAP2 for every executable mapping in one process's maps text, read from mfd (opened while
 * privileged by sc_percpu_collect). Bounded: SC_PERCPU_MAPS_MAX bytes; only complete lines count,
 * a line that does not fit in the bound is the end. */
static int synth_maps(sc_percpu *s, int fd, int mfd, uint32_t pid, flame_err *err)
{
    _cleanup_free_ char *buf = malloc(SC_PERCPU_MAPS_MAX);
    if (!buf)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t have = 0;
    char name[4096];
    while (have < SC_PERCPU_MAPS_MAX) {
        ssize_t k = read(mfd, buf + have, SC_PERCPU_MAPS_MAX - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        have += (size_t)k;
    }
    size_t i = 0;
    while (i < have) {
        char *nl = memchr(buf + i, '\n', have - i);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (buf + i));
        sc_maps_entry e;
        if (sc_percpu_parse_maps_line(buf + i, len, &e, name, sizeof name) == 1) {
            sc_interp_note_map(s->o.interp, (pid_t)pid, e.start, e.end, e.pgoff, name);
            if (synth_mmap2(s, fd, pid, &e, name, err) < 0)
                return -1;
        }
        i += len + 1;
    }
    return 0;
}

int sc_percpu_collect(sc_percpu *s, int proc_dirfd, flame_err *err)
{
    int dfd = openat(proc_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "read /proc");
    }
    struct dirent *de;
    char path[64];
    while (s->n_maps < SC_PERCPU_MAX_PROCS && (de = readdir(d))) {
        if (!all_digits(de->d_name))
            continue;
        unsigned long pid = strtoul(de->d_name, NULL, 10);
        if (pid == 0 || pid > INT32_MAX || tracked(&s->f, (uint32_t)pid))
            continue;
        snprintf(path, sizeof path, "%lu/maps", pid);
        /* PRIVILEGE: another user's maps need PTRACE_MODE_READ (CAP_SYS_PTRACE, still held);
         * the kernel checks it here, at open, and reading the fd later needs nothing more. So
         * the text of the target is parsed only after the privilege drop. */
        int mfd = openat(proc_dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (mfd < 0)
            continue; /* vanished, or a kernel thread's empty maps: nothing to name */
        s->maps_pid[s->n_maps] = (pid_t)pid;
        s->maps_fd[s->n_maps++] = mfd;
    }
    closedir(d);
    return 0;
}

/* The kernel's mapping as perf itself announces it: PERF_RECORD_MMAP, pid -1, named
 * "[kernel.kallsyms]_text" with pgoff = the address of _text (perf's relocation reference), so
 * perf script places kernel addresses in [kernel.kallsyms] and names them from --kallsyms. */
static int synth_kernel_mmap(sc_percpu *s, int fd, uint64_t text, flame_err *err)
{
    static const char name[] = "[kernel.kallsyms]_text";
    unsigned char r[8 + 32 + sizeof name + 8 + TRAILER_SIZE];
    size_t body = 32 + ((sizeof name + 7) & ~(size_t)7);
    memset(r, 0, sizeof r);
    put32(r, PERF_RECORD_MMAP);
    put16(r + 4, PERF_RECORD_MISC_KERNEL);
    put32(r + 8, UINT32_MAX); /* pid -1: the kernel */
    put64(r + 16, text);
    put64(r + 24, UINT64_MAX - text);
    put64(r + 32, text);
    memcpy(r + 40, name, sizeof name);
    size_t size = 8 + body + trailer(r + 8 + body, UINT32_MAX, 0);
    put16(r + 6, (uint16_t)size);
    s->f.st.synthesized++;
    return sc_pc_emit(s, fd, r, size, err);
}

int sc_percpu_synthesize(sc_percpu *s, int proc_dirfd, int fd, flame_err *err)
{
    int rc = s->o.kernel_text ? synth_kernel_mmap(s, fd, s->o.kernel_text, err) : 0;
    char path[64], comm[64];
    for (int k = 0; k < s->n_maps; k++) {
        uint32_t pid = (uint32_t)s->maps_pid[k];
        snprintf(path, sizeof path, "%u/comm", pid);
        /* only the target's processes: nothing of another's (its names, its mappings) is
         * written, its maps text (opened while privileged) is closed unread */
        if (rc == 0 && sc_percpu_filter_is_target(&s->f, pid, 0) &&
            sc_read_bounded(proc_dirfd, path, comm, sizeof comm) >= 0) {
            comm[strcspn(comm, "\n")] = '\0';
            if ((rc = synth_comm(s, fd, pid, pid, comm, err)) == 0 &&
                (rc = synth_maps(s, fd, s->maps_fd[k], pid, err)) == 0)
                rc = synth_threads(s, fd, proc_dirfd, pid, err);
        }
        close(s->maps_fd[k]);
    }
    s->n_maps = 0;
    if (rc == 0)
        rc = sc_pc_flush(s, fd, err);
    return rc;
}
