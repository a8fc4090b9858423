/* The HotSpot dynamic attach protocol, written from its documented behaviour: create
 * .attach_pid<nspid>, send SIGQUIT, wait for the JVM's /tmp/.java_pid<nspid> unix socket,
 * send "1\0<cmd>\0<a0>\0<a1>\0<a2>\0", read "<status>\n<output>". All of it runs in a child
 * that joined the target's mount namespace and IS the JVM's user: HotSpot only accepts peers
 * with its own euid/egid, and anything the child creates belongs to that user. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/sidecar.h"

ssize_t sc_attach_request(char *buf, size_t cap, const char *cmd, const char *a0, const char *a1,
                          const char *a2)
{
    const char *parts[] = {"1", cmd, a0 ? a0 : "", a1 ? a1 : "", a2 ? a2 : ""};
    size_t o = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        size_t l = strlen(parts[i]);
        if (o + l + 1 > cap)
            return -1;
        memcpy(buf + o, parts[i], l + 1); /* with its NUL: the protocol's separator */
        o += l + 1;
    }
    return (ssize_t)o;
}

static void printable(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
        out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    while (o && out[o - 1] == ' ')
        o--;
    out[o] = 0;
}

/* Parse an optionally signed decimal int at p (bounded by end); returns false if none. */
static bool parse_int(const char *p, const char *end, int *v)
{
    bool neg = false;
    if (p < end && *p == '-')
        neg = true, p++;
    if (p >= end || !isdigit((unsigned char)*p))
        return false;
    long x = 0;
    while (p < end && isdigit((unsigned char)*p) && x < 1000000000L)
        x = x * 10 + (*p++ - '0');
    *v = (int)(neg ? -x : x);
    return true;
}

int sc_attach_parse_reply(const char *buf, size_t len, bool is_load, int *status, char *msg,
                          size_t cap)
{
    msg[0] = 0;
    const char *end = buf + len, *nl = memchr(buf, '\n', len);
    const char *lend = nl ? nl : end;
    if (!parse_int(buf, lend, status))
        return -1;
    /* the status line holds only the number */
    const char *q = buf + (*buf == '-');
    while (q < lend && isdigit((unsigned char)*q))
        q++;
    if (q != lend)
        return -1;
    const char *text = nl ? nl + 1 : end;
    printable(text, (size_t)(end - text), msg, cap);
    if (*status != 0)
        return 1;
    if (!is_load)
        return 0;
    /* JDK 21+ answers 0 for `load` and reports the agent's result as "return code: N" in the
     * text; JDK 9-20 print the agent's return value as a bare number after the status. */
    static const char rc_key[] = "return code: ";
    const char *r = memmem(text, (size_t)(end - text), rc_key, sizeof(rc_key) - 1);
    int v;
    if (r && parse_int(r + sizeof(rc_key) - 1, end, &v)) {
        *status = v;
        return v == 0 ? 0 : 1;
    }
    const char *t = text;
    while (t < end && isspace((unsigned char)*t))
        t++;
    if (parse_int(t, end, &v)) {
        *status = v;
        return v == 0 ? 0 : 1;
    }
    /* Status 0 followed by text that is neither form (a listener streaming junk): not an
     * answer from HotSpot, so not a loaded agent. */
    return t == end ? 0 : -1;
}

struct attach_args {
    sc_jvm *j;
    int timeout_ms;
    char req[4096];
    size_t req_len;
};

/* The socket exists, is a socket (lstat: no symlink) and belongs to the JVM's user. */
static bool socket_ready(int tmp, const char *name, uid_t uid)
{
    struct stat st;
    return fstatat(tmp, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
           st.st_uid == uid;
}

static int connect_jvm(sc_jvm *j, const char *name)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/%s", name);
    /* We are the JVM's user here, without capabilities: a swapped path can only lead us to
     * what that user may reach anyway. The peer check below makes sure it is the JVM. */
    if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(s);
        return -e;
    }
    struct ucred cr;
    socklen_t cl = sizeof(cr);
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.pid != j->st.pid) {
        close(s);
        return -EPERM;
    }
    return s;
}

static int attach_child(void *arg, sc_reply *reply)
{
    struct attach_args *a = arg;
    sc_jvm *j = a->j;
    int64_t deadline = mono_ms() + a->timeout_ms;
    _cleanup_close_ int tmp = sc_open_beneath(AT_FDCWD, "tmp", O_PATH | O_DIRECTORY, 0);
    if (tmp < 0)
        return tmp;
    char sock[64], trigger[64];
    snprintf(sock, sizeof(sock), ".java_pid%d", (int)j->st.nspid);
    snprintf(trigger, sizeof(trigger), ".attach_pid%d", (int)j->st.nspid);
    int s = socket_ready(tmp, sock, j->st.uid) ? connect_jvm(j, sock) : -ENOENT;
    /* Another process serves the JVM's socket name: refuse before any signal. A SIGQUIT now
     * would make a JVM whose listener already runs print a thread dump (HotSpot dumps when the
     * socket file exists, and the squatter's does). A dead JVM's leftover socket is refused
     * (ECONNREFUSED), not served, so only squatting ends here. */
    if (s == -EPERM)
        return s;
    if (s < 0) {
        /* The listener is not running yet: ask for it. HotSpot starts it on SIGQUIT only when
         * .attach_pid<pid> exists (in its cwd or /tmp) and is owned by its euid; without the
         * file SIGQUIT would just print a thread dump. O_EXCL|O_NOFOLLOW: never reuse or
         * follow something planted there. */
        int tf = sc_open_beneath(tmp, trigger, O_WRONLY | O_CREAT | O_EXCL, 0600);
        bool created = tf >= 0;
        if (tf >= 0)
            close(tf);
        /* Something else already has the trigger's name. A regular file of the JVM's user is a
         * leftover of an earlier attach and harmless; anything else (a symlink planted by the
         * target, a FIFO, another user's file) is refused: HotSpot would stat() through a link,
         * and without a listener our SIGQUIT would only make the JVM print a thread dump. */
        struct stat tst;
        if (!created && fstatat(tmp, trigger, &tst, AT_SYMLINK_NOFOLLOW) < 0)
            return tf; /* could not create it (read-only /tmp...): SIGQUIT would only dump */
        if (!created && (!S_ISREG(tst.st_mode) || tst.st_uid != j->st.uid))
            return -EEXIST;
        /* Through the pidfd taken at discovery when there is one: the signal reaches that very
         * process, or none (ESRCH) if it exited, never another that got its pid since. */
        int sent = j->pidfd >= 0 ? (int)syscall(SYS_pidfd_send_signal, j->pidfd, SIGQUIT, NULL, 0)
                                 : kill(j->st.pid, SIGQUIT);
        if (sent < 0) {
            s = -errno;
        } else {
            s = -ETIMEDOUT;
            bool squatted = false;
            while (mono_ms() < deadline) {
                if (socket_ready(tmp, sock, j->st.uid) && (s = connect_jvm(j, sock)) >= 0)
                    break;
                /* Once a foreign process was seen serving the name, that is the answer, not
                 * whatever the last try met while the squatter took the name back (ENOENT,
                 * ECONNREFUSED): the caller must not go on to a second attach and SIGQUIT. */
                squatted |= s == -EPERM;
                if (squatted)
                    s = -EPERM;
                /* No event to wait on across namespaces for a file we cannot watch cheaply:
                 * poll briefly, bounded by the deadline. */
                struct timespec ts = {0, 20 * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
        if (created)
            unlinkat(tmp, trigger, 0);
        if (s < 0)
            return s;
    }
    _cleanup_close_ int fd = s;
    for (size_t w = 0; w < a->req_len;) {
        ssize_t n = TEMP_FAILURE_RETRY(send(fd, a->req + w, a->req_len - w, MSG_NOSIGNAL));
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        w += (size_t)n;
    }
    /* Bounded in size and time: a hostile listener may answer garbage, nothing, or forever. */
    size_t got = 0;
    while (got < SC_ATTACH_REPLY_MAX) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, reply->text + got, SC_ATTACH_REPLY_MAX - got));
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got == 0)
        return -ENODATA; /* accepted, then silence until the deadline (or closed) */
    reply->len = got;
    return 0;
}

int sc_attach_command(sc_jvm *j, int ns_fd, int timeout_ms, const char *cmd, const char *a0,
                      const char *a1, const char *a2, char *out, size_t cap, int *status,
                      flame_err *err)
{
    struct attach_args a = {.j = j};
    a.timeout_ms = timeout_ms;
    ssize_t l = sc_attach_request(a.req, sizeof(a.req), cmd, a0, a1, a2);
    if (l < 0)
        return flame_fail(err, FLAME_EXIT_ATTACH, "attach request too long");
    a.req_len = (size_t)l;
    _cleanup_free_ sc_reply *reply = malloc(sizeof *reply);
    if (!reply)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int rc =
        sc_in_target(ns_fd, true, j->st.uid, j->st.gid, attach_child, &a, timeout_ms + 2000, reply);
    if (rc == -ETIMEDOUT)
        return flame_fail(err, FLAME_EXIT_ATTACH,
                          "pid %d: no attach socket /tmp/.java_pid%d within %d ms (attach "
                          "disabled, or the JVM is hung)",
                          (int)j->st.pid, (int)j->st.nspid, timeout_ms);
    if (rc == -EEXIST)
        return flame_fail(err, FLAME_EXIT_ATTACH,
                          "pid %d: no attach socket, and /tmp/.attach_pid%d in the target is not "
                          "ours (a symlink or foreign file planted there): refused to use it, no "
                          "SIGQUIT sent",
                          (int)j->st.pid, (int)j->st.nspid);
    if (rc == -ENODATA)
        return flame_fail(err, FLAME_EXIT_ATTACH,
                          "pid %d: the listener on /tmp/.java_pid%d answered nothing within %d ms",
                          (int)j->st.pid, (int)j->st.nspid, timeout_ms);
    if (rc == -EPERM)
        return flame_fail(err, FLAME_EXIT_ATTACH,
                          "pid %d: no attach socket of the JVM: /tmp/.java_pid%d is served by "
                          "another process (SO_PEERCRED): refused, not talked to",
                          (int)j->st.pid, (int)j->st.nspid);
    if (rc < 0)
        return flame_fail_errno(err, FLAME_EXIT_ATTACH, -rc, "pid %d: attach", (int)j->st.pid);
    int st = 0;
    int r = sc_attach_parse_reply(reply->text, reply->len, strcmp(cmd, "load") == 0, &st, out, cap);
    if (status)
        *status = st;
    if (r < 0)
        return flame_fail(err, FLAME_EXIT_ATTACH, "pid %d: malformed attach answer",
                          (int)j->st.pid);
    return r;
}

struct map_args {
    sc_jvm *j;
    int out_fd;
    bool fetch;
    bool keep;  /* top: read from `from` on and leave the map to the agent */
    bool check; /* only say whether the name is free or a map we may replace */
    bool modes; /* the agent's .modes file instead of its map */
    long long from;
};

/* Copy in to out, at most SC_MAP_FILE_MAX bytes in all (*total counts them): a file in the
 * target may grow while we read it. 0, -EFBIG past the bound, -errno/-EIO on I/O errors. */
static int copy_bounded(int in, int out, long *total)
{
    char buf[65536];
    for (;;) {
        ssize_t n = TEMP_FAILURE_RETRY(read(in, buf, sizeof(buf)));
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        if ((unsigned long long)(*total + n) > SC_MAP_FILE_MAX)
            return -EFBIG;
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(out, buf + w, (size_t)(n - w)));
            if (k <= 0)
                return -EIO;
            w += k;
        }
        *total += n;
    }
}

/* Open a file of the target for reading: below dir, no symlinks (sc_open_beneath), O_NONBLOCK
 * so that a FIFO planted under that name cannot hang us, a regular file only, and no bigger than
 * SC_MAP_FILE_MAX (a sparse 2 GB file must not cost 256 MiB of copying before it is refused).
 * Returns the fd or -errno. */
static int open_target_file(int dir, const char *rel)
{
    _cleanup_close_ int fd = sc_open_beneath(dir, rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    if ((unsigned long long)st.st_size > SC_MAP_FILE_MAX)
        return -EFBIG;
    return steal_fd(&fd);
}

/* The map's name in the target's /tmp: the agent's own (tagged), or HotSpot's perf-<pid>.map
 * for Compiler.perfmap (sidecar.h, map_tag). */
static void map_name(const sc_jvm *j, char *out, size_t cap)
{
    if (j->map_tag[0] && j->attach != CT_ATTACH_PERFMAP)
        snprintf(out, cap, "perf-%d.%s.map", (int)j->st.nspid, j->map_tag);
    else
        snprintf(out, cap, "perf-%d.map", (int)j->st.nspid);
}

static int map_child(void *arg, sc_reply *reply)
{
    (void)reply;
    struct map_args *a = arg;
    _cleanup_close_ int tmp = sc_open_beneath(AT_FDCWD, "tmp", O_PATH | O_DIRECTORY, 0);
    if (tmp < 0)
        return tmp;
    char name[64];
    map_name(a->j, name, sizeof name);
    if (a->modes) /* perf-<nspid>.<tag>.modes, beside the agent's map */
        snprintf(name, sizeof name, "perf-%d.%s.modes", (int)a->j->st.nspid, a->j->map_tag);
    long total = 0;
    if (a->fetch) {
        _cleanup_close_ int fd = open_target_file(tmp, name);
        if (fd < 0)
            return fd;
        if (a->from > 0 && lseek(fd, (off_t)a->from, SEEK_SET) < 0)
            return -errno;
        int rc = copy_bounded(fd, a->out_fd, &total);
        if (rc < 0)
            return rc;
    }
    if (a->keep)
        return (int)total;
    /* Remove only what can be the agent's or HotSpot's map: a regular file of the JVM's user.
     * A symlink, FIFO or foreign file planted under that name is the target's own: left alone. */
    struct stat ls;
    if (fstatat(tmp, name, &ls, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? (int)total : -errno;
    if (!S_ISREG(ls.st_mode) || ls.st_uid != a->j->st.uid)
        return a->fetch ? -EINVAL : -EEXIST;
    if (a->check)
        return 0;
    if (unlinkat(tmp, name, 0) < 0 && errno != ENOENT)
        return -errno;
    return (int)total;
}

int sc_fetch_map(sc_jvm *j, int ns_fd, int out_fd, flame_err *err)
{
    struct map_args a = {.j = j, .out_fd = out_fd, .fetch = true};
    int rc = sc_in_target(ns_fd, true, j->st.uid, j->st.gid, map_child, &a, 60000, NULL);
    char name[64];
    map_name(j, name, sizeof name);
    if (rc == -ELOOP || rc == -EINVAL || rc == -EFBIG || rc == -ENXIO)
        return flame_fail(err, FLAME_EXIT_ATTACH, "pid %d: /tmp/%s in the target refused: %s",
                          (int)j->st.pid, name,
                          rc == -ELOOP   ? "a symlink (not followed)"
                          : rc == -EFBIG ? "larger than 256 MiB"
                                         : "not a regular file");
    if (rc < 0)
        return flame_fail_errno(err, FLAME_EXIT_ATTACH, -rc, "pid %d: read /tmp/%s", (int)j->st.pid,
                                name);
    return rc;
}

int sc_fetch_modes(sc_jvm *j, int ns_fd, int out_fd, flame_err *err)
{
    if (!j->map_tag[0])
        return 0;
    struct map_args a = {.j = j, .out_fd = out_fd, .fetch = true, .modes = true};
    int rc = sc_in_target(ns_fd, true, j->st.uid, j->st.gid, map_child, &a, 60000, NULL);
    if (rc < 0)
        return flame_fail(err, FLAME_EXIT_ATTACH,
                          "pid %d: the agent's alloc/lock samples (/tmp/perf-%d.%s.modes): %s",
                          (int)j->st.pid, (int)j->st.nspid, j->map_tag,
                          rc == -ELOOP    ? "a symlink (not followed)"
                          : rc == -EFBIG  ? "larger than 256 MiB"
                          : rc == -EINVAL ? "not a regular file of the JVM's user"
                                          : strerror(-rc));
    return rc;
}

int sc_remove_modes(sc_jvm *j, int ns_fd)
{
    if (!j->map_tag[0])
        return 0;
    struct map_args a = {.j = j, .out_fd = -1, .modes = true};
    return sc_in_target(ns_fd, true, j->st.uid, j->st.gid, map_child, &a, 10000, NULL);
}

int sc_peek_map(const sc_jvm *j, int ns_fd, int out_fd, long long from, flame_err *err)
{
    struct map_args a = {
        .j = (sc_jvm *)j, .out_fd = out_fd, .fetch = true, .keep = true, .from = from};
    int rc = sc_in_target(ns_fd, true, j->st.uid, j->st.gid, map_child, &a, 10000, NULL);
    if (rc < 0) {
        char name[64];
        map_name(j, name, sizeof name);
        return flame_fail_errno(err, FLAME_EXIT_ATTACH, -rc, "pid %d: read /tmp/%s", (int)j->st.pid,
                                name);
    }
    return rc;
}

int sc_map_name_free(sc_jvm *j, int ns_fd)
{
    struct map_args a = {.j = j, .out_fd = -1, .check = true};
    return sc_in_target(ns_fd, true, j->st.uid, j->st.gid, map_child, &a, 10000, NULL);
}

int sc_remove_map(sc_jvm *j, int ns_fd)
{
    struct map_args a = {.j = j, .out_fd = -1, .fetch = false};
    return sc_in_target(ns_fd, true, j->st.uid, j->st.gid, map_child, &a, 10000, NULL);
}

struct file_args {
    const char *rel; /* path below the target's root, no leading '/' */
    int out_fd;
};

static int file_child(void *arg, sc_reply *reply)
{
    (void)reply;
    struct file_args *a = arg;
    /* As the JVM user, below the target's root (our cwd after setns), no symlinks at all: the
     * path comes from /proc/<pid>/maps, which shows resolved paths. */
    _cleanup_close_ int fd = open_target_file(AT_FDCWD, a->rel);
    if (fd < 0)
        return fd;
    long total = 0;
    return copy_bounded(fd, a->out_fd, &total);
}

int sc_fetch_file(sc_jvm *j, int ns_fd, const char *abs_path, int out_fd, flame_err *err)
{
    if (abs_path[0] != '/')
        return flame_fail(err, FLAME_EXIT_ERROR, "not an absolute path: %s", abs_path);
    struct file_args a = {abs_path + 1, out_fd};
    int rc = sc_in_target(ns_fd, true, j->st.uid, j->st.gid, file_child, &a, 30000, NULL);
    if (rc < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, -rc, "pid %d: copy %s", (int)j->st.pid,
                                abs_path);
    return 0;
}
