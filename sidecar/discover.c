/* Finding HotSpot JVMs in the shared PID namespace by reading /proc. Every /proc entry may vanish
 * or be reused while we read it (ENOENT/ESRCH are normal), and everything in it is attacker
 * controlled text: parse bounded, never trust a length. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/hostproc.h"
#include "sidecar/sidecar.h"

/* pure */
static const char *line_value(const char *buf, size_t len, const char *key, size_t *vlen)
{
    size_t klen = strlen(key);
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if ((size_t)(le - p) > klen && memcmp(p, key, klen) == 0) {
            *vlen = (size_t)(le - p - (ptrdiff_t)klen);
            return p + klen;
        }
        p = le + 1;
    }
    return NULL;
}

/* Parse up to n unsigned decimal fields separated by blanks. Returns how many were read. */
static int parse_fields(const char *v, size_t len, unsigned long long *f, int n)
{
    int k = 0;
    size_t i = 0;
    while (k < n) {
        while (i < len && (v[i] == ' ' || v[i] == '\t'))
            i++;
        if (i >= len || !isdigit((unsigned char)v[i]))
            break;
        unsigned long long x = 0;
        while (i < len && isdigit((unsigned char)v[i])) {
            if (x > 0xffffffffull)
                return k; /* absurd value: stop here */
            x = x * 10 + (unsigned)(v[i] - '0');
            i++;
        }
        f[k++] = x;
    }
    return k;
}

int sc_parse_status(const char *buf, size_t len, sc_status *out, flame_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t vl;
    unsigned long long f[8];
    const char *v = line_value(buf, len, "Name:", &vl);
    if (v) {
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        size_t n = vl < sizeof(out->name) - 1 ? vl : sizeof(out->name) - 1;
        for (size_t i = 0; i < n; i++) /* comm is attacker chosen: keep it printable */
            out->name[i] =
                (v[i] >= 0x20 && v[i] < 0x7f && v[i] != '"' && v[i] != '\\') ? v[i] : '?';
    }
    if (!(v = line_value(buf, len, "PPid:", &vl)) || parse_fields(v, vl, f, 1) != 1)
        return flame_fail(err, FLAME_EXIT_ERROR, "status: no PPid");
    out->ppid = (pid_t)f[0];
    if (!(v = line_value(buf, len, "Uid:", &vl)) || parse_fields(v, vl, f, 4) < 2)
        return flame_fail(err, FLAME_EXIT_ERROR, "status: no Uid");
    out->uid = (uid_t)f[1]; /* real, EFFECTIVE, saved, fs: HotSpot compares the euid */
    if (!(v = line_value(buf, len, "Gid:", &vl)) || parse_fields(v, vl, f, 4) < 2)
        return flame_fail(err, FLAME_EXIT_ERROR, "status: no Gid");
    out->gid = (gid_t)f[1];
    if (!(v = line_value(buf, len, "Tgid:", &vl)) || parse_fields(v, vl, f, 1) != 1)
        return flame_fail(err, FLAME_EXIT_ERROR, "status: no Tgid");
    out->pid = (pid_t)f[0];
    /* NStgid lists the pid in every namespace from ours down to the process's own: the last
     * one names the attach files (.attach_pid<N>, .java_pid<N>, perf-<N>.map). Kernels < 4.1
     * lack the line: then the pid is the same as ours. */
    out->nspid = out->pid;
    if ((v = line_value(buf, len, "NStgid:", &vl))) {
        int k = parse_fields(v, vl, f, 8);
        if (k < 1)
            return flame_fail(err, FLAME_EXIT_ERROR, "status: bad NStgid");
        out->nspid = (pid_t)f[k - 1];
    }
    if (out->pid <= 0 || out->nspid <= 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "status: bad pid");
    return 0;
}

bool sc_maps_find_libjvm(const char *buf, size_t len, char *path, size_t cap)
{
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* partial line: the caller feeds the rest with the next chunk */
        /* The path is the text after the 5th field; we want one ending in "/libjvm.so". */
        const char *slash = memchr(p, '/', (size_t)(nl - p));
        static const char suffix[] = "/libjvm.so";
        size_t sl = sizeof(suffix) - 1;
        if (slash && (size_t)(nl - slash) >= sl && memcmp(nl - sl, suffix, sl) == 0) {
            size_t n = (size_t)(nl - slash);
            if (n >= cap)
                n = cap - 1;
            memcpy(path, slash, n);
            path[n] = 0;
            return true;
        }
        p = nl + 1;
    }
    return false;
}

int sc_flag_preserve_fp(const char *opts, size_t len, char sep, int prev)
{
    static const char on[] = "-XX:+PreserveFramePointer", off[] = "-XX:-PreserveFramePointer";
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && opts[j] != sep && !(sep == ' ' && opts[j] == '\t'))
            j++;
        size_t n = j - i;
        if (n == sizeof(on) - 1 && memcmp(opts + i, on, n) == 0)
            prev = 1;
        else if (n == sizeof(off) - 1 && memcmp(opts + i, off, n) == 0)
            prev = 0;
        i = j + 1;
    }
    return prev;
}

int sc_parse_release(const char *buf, size_t len, char *ver, size_t cap)
{
    size_t vl;
    const char *v = line_value(buf, len, "JAVA_VERSION=", &vl);
    ver[0] = 0;
    if (!v)
        return -1;
    if (vl && *v == '"')
        v++, vl--;
    size_t n = 0;
    while (
        n < vl && n + 1 < cap &&
        (isalnum((unsigned char)v[n]) || v[n] == '.' || v[n] == '_' || v[n] == '-' || v[n] == '+'))
        n++;
    memcpy(ver, v, n);
    ver[n] = 0;
    if (!isdigit((unsigned char)ver[0]))
        return -1;
    int major = atoi(ver);
    if (major == 1 && ver[1] == '.') /* "1.8.0_392" -> 8 */
        major = atoi(ver + 2);
    return major > 0 && major < 1000 ? major : -1;
}

void sc_main_class(const char *cmdline, char *out, size_t cap)
{
    out[0] = 0;
    const char *p = strchr(cmdline, ' '); /* skip argv[0] */
    bool skip_next = false, jar = false;
    while (p && *p) {
        while (*p == ' ')
            p++;
        size_t l = strcspn(p, " ");
        if (!l)
            break;
        if (skip_next) {
            skip_next = false;
        } else if (l == 4 && !memcmp(p, "-jar", 4)) {
            jar = true;
        } else if (*p == '-') {
            static const char *const with_value[] = {
                "-cp",           "-classpath",  "--class-path", "-p",
                "--module-path", "--add-opens", "--add-exports"};
            for (size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
                if (l == strlen(with_value[i]) && !memcmp(p, with_value[i], l))
                    skip_next = true;
        } else {
            const char *name = p;
            if (jar) { /* basename of the jar */
                const char *sl = memrchr(p, '/', l);
                if (sl) {
                    l -= (size_t)(sl + 1 - p);
                    name = sl + 1;
                }
            }
            size_t o = 0;
            for (size_t i = 0; i < l && o + 1 < cap; i++)
                if (name[i] != ';')
                    out[o++] = name[i];
            out[o] = 0;
            return;
        }
        p += l;
    }
}

/* ---- I/O side ---- */

ssize_t sc_read_bounded(int dirfd, const char *path, char *buf, size_t cap)
{
    _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf + got, cap - 1 - got));
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = 0;
    return (ssize_t)got;
}

/* Read /proc/<pid>/maps in chunks (bounded) looking for libjvm.so. */
static bool maps_libjvm(int piddir, char *path, size_t cap)
{
    _cleanup_close_ int fd = openat(piddir, "maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[16384];
    size_t have = 0, total = 0;
    for (;;) {
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf + have, sizeof(buf) - have));
        if (n <= 0)
            return false;
        have += (size_t)n;
        total += (size_t)n;
        if (sc_maps_find_libjvm(buf, have, path, cap))
            return true;
        if (total > SC_MAPS_MAX)
            return false;
        /* keep the partial last line for the next round */
        char *last = memrchr(buf, '\n', have);
        size_t keep = last ? have - (size_t)(last + 1 - buf) : 0;
        if (keep == sizeof(buf)) /* one absurdly long line: drop it */
            keep = 0;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
}

/* The JDK's `release` file, read through the process's root without following its symlinks
 * out of it: RESOLVE_IN_ROOT confines absolute and .. links to /proc/<pid>/root. */
static void read_java_version(int piddir, sc_jvm *j)
{
    j->java_major = -1;
    snprintf(j->java_version, sizeof(j->java_version), "unknown");
    _cleanup_close_ int root = openat(piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return;
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", j->libjvm);
    /* <home>/lib/server/libjvm.so (9+) or <home>/jre/lib/amd64/server/libjvm.so (8) */
    for (int up = 0; up < 5; up++) {
        char *s = strrchr(dir, '/');
        if (!s || s == dir)
            return;
        *s = 0;
        if (up < 2)
            continue;
        char rel[600], buf[4096];
        snprintf(rel, sizeof(rel), "%s/release", dir + 1);
        struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
                               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        _cleanup_close_ int fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));
        if (fd < 0)
            continue;
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf) - 1));
        if (n <= 0)
            continue;
        buf[n] = 0;
        j->java_major = sc_parse_release(buf, (size_t)n, j->java_version, sizeof(j->java_version));
        if (j->java_major > 0)
            return;
        snprintf(j->java_version, sizeof(j->java_version), "unknown");
    }
}

/* Options from the environment the JVM reads (JAVA_TOOL_OPTIONS before the command line,
 * JDK_JAVA_OPTIONS inserted by the launcher, _JAVA_OPTIONS after it). */
static int env_fp(const char *env, size_t len, const char *key, int prev)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < len;) {
        size_t e = strnlen(env + i, len - i);
        if (e > kl && memcmp(env + i, key, kl) == 0 && env[i + kl] == '=')
            prev = sc_flag_preserve_fp(env + i + kl + 1, e - kl - 1, ' ', prev);
        i += e + 1;
    }
    return prev;
}

static bool has_arg(const char *args, size_t len, const char *arg)
{
    size_t al = strlen(arg);
    for (size_t i = 0; i < len;) {
        size_t e = strnlen(args + i, len - i);
        if (e == al && memcmp(args + i, arg, al) == 0)
            return true;
        i += e + 1;
    }
    return false;
}

static void describe(int piddir, sc_jvm *j)
{
    _cleanup_free_ char *buf = malloc(SC_CMDLINE_MAX);
    if (!buf)
        return;
    ssize_t n = sc_read_bounded(piddir, "cmdline", buf, SC_CMDLINE_MAX);
    size_t len = n > 0 ? (size_t)n : 0;
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < sizeof(j->cmdline); i++) {
        unsigned char c = (unsigned char)buf[i];
        j->cmdline[o++] = c == 0 ? ' ' : (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    while (o && j->cmdline[o - 1] == ' ')
        o--;
    j->cmdline[o] = 0;
    int fp = -1;
    j->attach_disabled = has_arg(buf, len, "-XX:+DisableAttachMechanism");
    /* environ needs PTRACE_MODE_READ; unreadable is fine (best effort). */
    _cleanup_free_ char *env = malloc(SC_CMDLINE_MAX);
    ssize_t en = env ? sc_read_bounded(piddir, "environ", env, SC_CMDLINE_MAX) : -1;
    if (en > 0) {
        fp = env_fp(env, (size_t)en, "JAVA_TOOL_OPTIONS", fp);
        fp = env_fp(env, (size_t)en, "JDK_JAVA_OPTIONS", fp);
    }
    fp = sc_flag_preserve_fp(buf, len, '\0', fp);
    if (en > 0)
        fp = env_fp(env, (size_t)en, "_JAVA_OPTIONS", fp);
    j->preserve_fp = fp == 1;
}

int sc_cgroup_is(int dirfd, const char *path, const char *target)
{
    char buf[SC_HOST_CGROUP_MAX], id[SC_HOST_ID_LEN + 1];
    ssize_t n = sc_read_bounded(dirfd, path, buf, sizeof buf);
    if (n <= 0)
        return -1; /* gone (a live process always has a cgroup line) */
    return sc_cgroup_innermost(buf, (size_t)n, id) == 1 && !strcmp(id, target);
}

bool sc_pidfd_alive(int pidfd)
{
    /* a pidfd polls readable once its process has exited (no permission needed, unlike a
     * signal 0, which we could not send to another uid without CAP_KILL) */
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return pidfd >= 0 && poll(&p, 1, 0) == 0;
}

int sc_find_jvms(sc_jvm *out, int cap, char *seen, size_t seen_cap, const char *target,
                 flame_err *err)
{
    _cleanup_close_ int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "open /proc");
    DIR *d = fdopendir(dup(procfd));
    if (!d)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "read /proc");
    pid_t self = getpid();
    int found = 0;
    size_t so = 0;
    seen[0] = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *e;
        long pid = strtol(de->d_name, &e, 10);
        if (*e || pid <= 0)
            continue;
        if (pid == self)
            continue;
        /* Every read below goes through this directory: it stays bound to the process it was
         * opened for (a pid reused meanwhile gets a new one), so all of it is one process's. */
        _cleanup_close_ int piddir = openat(procfd, de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (piddir < 0)
            continue; /* exited meanwhile */
        char sbuf[SC_STATUS_MAX];
        ssize_t n = sc_read_bounded(piddir, "status", sbuf, sizeof(sbuf));
        if (n <= 0)
            continue;
        sc_status st;
        flame_err ignored = FLAME_ERR_INIT;
        if (sc_parse_status(sbuf, (size_t)n, &st, &ignored) < 0)
            continue;
        if (st.ppid == self) /* our own children (perf, attach helpers) */
            continue;
        /* Only the target's own processes: whatever else shares the namespace (another sidecar,
         * a container started --pid container:<target>, an nsenter, or everything of the host
         * or of the donor container when the target joined theirs) is neither listed, looked
         * at, nor attached. */
        if (target && sc_cgroup_is(piddir, "cgroup", target) != 1)
            continue;
        if (so + 1 < seen_cap) {
            int w = snprintf(seen + so, seen_cap - so, "%s%ld %s", so ? ", " : "", pid, st.name);
            if (w > 0)
                so = (size_t)w + so < seen_cap ? so + (size_t)w : seen_cap - 1;
        }
        char libjvm[512];
        /* A HotSpot JVM maps libjvm.so; a process merely NAMED java is not one. */
        if (!maps_libjvm(piddir, libjvm, sizeof(libjvm)))
            continue;
        if (found >= cap)
            continue;
        sc_jvm *j = &out[found];
        memset(j, 0, sizeof(*j));
        j->st = st;
        snprintf(j->libjvm, sizeof(j->libjvm), "%s", libjvm);
        describe(piddir, j);
        read_java_version(piddir, j);
        /* A handle on this very process for what follows (its mount namespace, the attach
         * signal): checked against piddir, which still names the process we read. */
        j->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        if (j->pidfd >= 0 && faccessat(piddir, "stat", F_OK, 0) < 0) {
            close(j->pidfd); /* it exited and the pid went to another process */
            continue;
        }
        found++;
    }
    closedir(d);
    return found;
}
