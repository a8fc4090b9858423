/* Acting inside the target: a forked child that joins the target's mount namespace and (mostly)
 * becomes the JVM's own user before touching anything there. Results come back through a pipe;
 * every wait is bounded. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/sidecar.h"

int sc_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
    /* Never follow the target's symlinks, magic links or .. out of dirfd: a hostile JVM user
     * can plant any of them in /tmp while we work. */
    struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
                           .mode = (flags & O_CREAT) ? mode : 0,
                           .resolve =
                               RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH};
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    return fd < 0 ? -errno : fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = TEMP_FAILURE_RETRY(write(fd, p, len));
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static __attribute__((noreturn)) void child_main(int wfd, int ns_fd, bool as_user, uid_t uid,
                                                 gid_t gid, sc_child_fn fn, void *arg)
{
    int rc;
    /* The child's own reply buffer (a fresh fork: nothing shared with the parent's). */
    static sc_reply reply;
    reply.len = 0;
    /* Die with the parent: a child left behind inside the target's namespace must not linger. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* setns(CLONE_NEWNS) needs CAP_SYS_ADMIN and a single-threaded caller (we are: fresh fork
     * of a single-threaded process). It also resets our root and cwd to the target's root. */
    if (ns_fd >= 0 && setns(ns_fd, CLONE_NEWNS) < 0) {
        rc = -errno;
        goto out;
    }
    if (as_user) {
        /* Become the JVM's user for good: HotSpot only accepts attach peers with its own
         * euid/egid, and files we create in the target must belong to it, not to root.
         * Order matters: groups and gid first, while we still hold CAP_SETGID. */
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
            setresuid(uid, uid, uid) < 0) {
            rc = -errno;
            goto out;
        }
        /* A JVM running as root keeps us at uid 0, where setresuid leaves the capabilities in
         * place: clear them explicitly, so even then we act with no more than the JVM's uid. */
        /* Raw capset (not libcap): this file is also linked into the fuzz harness without
         * libcap. Version 3, all sets empty. */
        struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct none[2] = {{0, 0, 0}, {0, 0, 0}};
        if (syscall(SYS_capset, &hdr, none) < 0) {
            rc = -EPERM;
            goto out;
        }
        /* The euid change already cleared "dumpable"; make sure the JVM user cannot ptrace us
         * and steal the fds we inherited. */
        prctl(PR_SET_DUMPABLE, 0);
    }
    rc = fn(arg, &reply);
out:
    if (write_all(wfd, &rc, sizeof(rc)) == 0) {
        uint32_t l = (uint32_t)(reply.len <= SC_ATTACH_REPLY_MAX ? reply.len : 0);
        if (write_all(wfd, &l, sizeof(l)) == 0)
            write_all(wfd, reply.text, l);
    }
    _exit(0); /* never exit(): stdio buffers belong to the parent */
}

static int read_full(int fd, void *buf, size_t len, int64_t deadline)
{
    char *p = buf;
    while (len) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? -ETIMEDOUT : -errno;
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, p, len));
        if (n <= 0)
            return n == 0 ? -EPIPE : -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sc_in_target(int ns_fd, bool as_user, uid_t uid, gid_t gid, sc_child_fn fn, void *arg,
                 int timeout_ms, sc_reply *reply)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return -e;
    }
    if (pid == 0) {
        close(p[0]);
        child_main(p[1], ns_fd, as_user, uid, gid, fn, arg);
    }
    close(p[1]);
    _cleanup_close_ int rfd = p[0];
    int64_t deadline = mono_ms() + timeout_ms;
    int rc = 0;
    uint32_t l = 0;
    static sc_reply discard; /* a reply nobody asked for is read and dropped */
    sc_reply *rp = reply ? reply : &discard;
    rp->len = 0;
    int r = read_full(rfd, &rc, sizeof(rc), deadline);
    if (r == 0)
        r = read_full(rfd, &l, sizeof(l), deadline);
    if (r == 0 && l <= SC_ATTACH_REPLY_MAX && (r = read_full(rfd, rp->text, l, deadline)) == 0)
        rp->len = l;
    rp->text[rp->len] = 0;
    if (r < 0) {
        kill(pid, SIGKILL); /* stuck (e.g. on a hostile FIFO): bounded wait, then kill */
        rc = r;
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return rc;
}
