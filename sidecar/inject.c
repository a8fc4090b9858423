/* Making the agent visible inside the target without restarting it. Preferred: mount injection,
 * a read-only detached clone of our /opt/docker-flame/agent moved onto a fresh private directory
 * in the target's /tmp (needs the new mount API: open_tree/move_mount >= 5.2, mount_setattr
 * >= 5.12). Fallback: copy the .so into the target's /tmp as the JVM's user. Both are undone. */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"

#define AGENT_MAX (64 << 20)

struct inject_args {
    sc_jvm *j;
    int tree_fd; /* mount: detached agent tree; copy: the agent .so opened read-only */
};

static int open_target_tmp(void)
{
    /* After setns(CLONE_NEWNS) our cwd is the target's root: resolve "tmp" beneath it. */
    return sc_open_beneath(AT_FDCWD, "tmp", O_PATH | O_DIRECTORY, 0);
}

/* Child, in the target's mount ns, still root with CAP_SYS_ADMIN. */
static int mount_child(void *arg, sc_reply *reply)
{
    (void)reply;
    struct inject_args *a = arg;
    _cleanup_close_ int tmp = open_target_tmp();
    if (tmp < 0)
        return tmp;
    /* The mount point is created as the JVM's user (fsuid/fsgid only: CAP_SYS_ADMIN stays for
     * move_mount), so root never creates anything in the target; mode 0755 so the JVM can
     * traverse into the mount. Changing fsuid away from 0 also drops the DAC override caps. */
    setfsgid(a->j->st.gid);
    setfsuid(a->j->st.uid);
    if (mkdirat(tmp, a->j->inject_dir, 0755) < 0)
        return -errno;
    /* Open what we just created without following anything: a racing rename + symlink swap in
     * the (world-writable) /tmp cannot redirect the mount elsewhere. */
    _cleanup_close_ int dir = sc_open_beneath(tmp, a->j->inject_dir, O_PATH | O_DIRECTORY, 0);
    struct stat st;
    int rc = 0;
    if (dir < 0)
        rc = dir;
    else if (fstat(dir, &st) < 0)
        rc = -errno;
    else if (!S_ISDIR(st.st_mode) || st.st_uid != a->j->st.uid)
        rc = -EXDEV;
    else if (move_mount(a->tree_fd, "", dir, "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        rc = -errno;
    if (rc < 0)
        unlinkat(tmp, a->j->inject_dir, AT_REMOVEDIR);
    return rc;
}

static int umount_child(void *arg, sc_reply *reply)
{
    (void)reply;
    struct inject_args *a = arg;
    _cleanup_close_ int tmp = open_target_tmp();
    if (tmp < 0)
        return tmp;
    if (fchdir(tmp) < 0)
        return -errno;
    /* A mount point cannot be renamed away (EBUSY), so the name still designates our mount;
     * UMOUNT_NOFOLLOW refuses a symlink planted there anyway. MNT_DETACH: the JVM keeps its
     * mapping of the agent (a loaded library cannot be unloaded), the path disappears now. */
    int rc = 0;
    if (umount2(a->j->inject_dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL &&
        errno != ENOENT)
        rc = -errno;
    setfsgid(a->j->st.gid);
    setfsuid(a->j->st.uid);
    if (unlinkat(tmp, a->j->inject_dir, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
        rc = -errno;
    return rc;
}

/* Child, in the target's mount ns, AS the JVM's user (no capabilities). */
static int copy_child(void *arg, sc_reply *reply)
{
    (void)reply;
    struct inject_args *a = arg;
    _cleanup_close_ int tmp = open_target_tmp();
    if (tmp < 0)
        return tmp;
    struct statvfs vfs;
    /* A noexec /tmp (read-only rootfs + tmpfs /tmp) cannot dlopen a copy: say so early. */
    if (fstatvfs(tmp, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
        return -ENOEXEC;
    if (mkdirat(tmp, a->j->inject_dir, 0700) < 0)
        return -errno;
    _cleanup_close_ int dir = sc_open_beneath(tmp, a->j->inject_dir, O_PATH | O_DIRECTORY, 0);
    if (dir < 0)
        return dir;
    _cleanup_close_ int out =
        sc_open_beneath(dir, SC_AGENT_NAME, O_WRONLY | O_CREAT | O_EXCL, 0700);
    if (out < 0) /* EEXIST is kept for a directory that existed before (sc_inject) */
        return out == -EEXIST ? -ENOTEMPTY : out;
    char buf[65536];
    off_t off = 0;
    for (;;) {
        ssize_t n = TEMP_FAILURE_RETRY(pread(a->tree_fd, buf, sizeof(buf), off));
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        if (off + n > AGENT_MAX)
            return -EFBIG;
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(out, buf + w, (size_t)(n - w)));
            if (k <= 0)
                return k < 0 ? -errno : -EIO;
            w += k;
        }
        off += n;
    }
    if (fchmod(out, 0500) < 0)
        return -errno;
    return 0;
}

static int uncopy_child(void *arg, sc_reply *reply)
{
    (void)reply;
    struct inject_args *a = arg;
    _cleanup_close_ int tmp = open_target_tmp();
    if (tmp < 0)
        return tmp;
    _cleanup_close_ int dir = sc_open_beneath(tmp, a->j->inject_dir, O_PATH | O_DIRECTORY, 0);
    if (dir >= 0)
        unlinkat(dir, SC_AGENT_NAME, 0);
    if (unlinkat(tmp, a->j->inject_dir, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

static int random_name(char *out, size_t cap)
{
    unsigned char r[8];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        return -1;
    snprintf(out, cap, ".docker-flame-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
             r[4], r[5], r[6], r[7]);
    return 0;
}

static int inject_mount(sc_jvm *j, int ns_fd, flame_err *err)
{
    /* A detached copy of our agent directory: it is not attached anywhere yet, so nobody in
     * our namespace sees it, and it carries its own mount flags. */
    _cleanup_close_ int tree =
        (int)open_tree(AT_FDCWD, SC_AGENT_DIR, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0)
        return flame_fail_errno(err, -errno, errno, "open_tree %s", SC_AGENT_DIR);
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
        /* mount_setattr is newer (5.12) than open_tree and some seccomp profiles (Docker 20.10)
         * do not know it. The clone inherits our read-only rootfs flag: accept that, refuse a
         * writable clone. */
        int e = errno;
        struct statvfs vfs;
        if (fstatvfs(tree, &vfs) < 0 || !(vfs.f_flag & ST_RDONLY))
            return flame_fail_errno(err, -e, e, "mount_setattr(RDONLY) and the source is writable");
    }
    struct inject_args a = {j, tree};
    int rc = sc_in_target(ns_fd, false, 0, 0, mount_child, &a, 10000, NULL);
    if (rc < 0)
        return flame_fail_errno(err, rc, -rc, "mount the agent into the target's /tmp");
    j->inject = CT_INJECTED_MOUNT;
    return 0;
}

static int inject_copy(sc_jvm *j, int ns_fd, flame_err *err)
{
    _cleanup_close_ int so = open(SC_AGENT_DIR "/" SC_AGENT_NAME, O_RDONLY | O_CLOEXEC);
    if (so < 0)
        return flame_fail_errno(err, -errno, errno, "open %s/%s", SC_AGENT_DIR, SC_AGENT_NAME);
    struct inject_args a = {j, so};
    int rc = sc_in_target(ns_fd, true, j->st.uid, j->st.gid, copy_child, &a, 10000, NULL);
    if (rc == -ENOEXEC)
        return flame_fail(err, rc,
                          "the target's /tmp is mounted noexec: a copied agent cannot be loaded");
    if (rc < 0) {
        /* leave nothing half-made behind -- but a directory that was there already (EEXIST at
         * mkdir: another sidecar's copy under the stable name, or the target's) is not ours */
        if (rc != -EEXIST)
            sc_in_target(ns_fd, true, j->st.uid, j->st.gid, uncopy_child, &a, 10000, NULL);
        return flame_fail_errno(err, rc, -rc, "copy the agent into the target's /tmp");
    }
    j->inject = CT_INJECTED_COPY;
    return 0;
}

/* The agent's stable name: ".docker-flame-" + 16 hex digits of an FNV-1a hash of the agent
 * file, the same for every sidecar of one docker-flame build. Why it matters: the JVM's dlopen()
 * returns an already-loaded library when the path it is given is the one that library was
 * loaded by (glibc compares names before opening anything). A random directory per profile
 * made every profile load one more copy of the agent into the JVM -- 5 more mappings and one
 * more JVMTI environment each time, for the JVM's lifetime (a JVM cannot unload an agent). With
 * the stable path, the second and later profiles re-arm the copy loaded by the first. Only the
 * contents count, so another build's agent gets another name and never meets this one. */
static int stable_name(char *out, size_t cap)
{
    static char name[64];
    if (!name[0]) {
        _cleanup_close_ int fd = open(SC_AGENT_DIR "/" SC_AGENT_NAME, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        uint64_t h = 0xcbf29ce484222325ull;
        unsigned char buf[65536];
        off_t off = 0;
        for (;;) {
            ssize_t n = TEMP_FAILURE_RETRY(pread(fd, buf, sizeof(buf), off));
            if (n < 0)
                return -errno;
            if (n == 0)
                break;
            if ((off += n) > AGENT_MAX)
                return -EFBIG;
            for (ssize_t i = 0; i < n; i++)
                h = (h ^ buf[i]) * 0x100000001b3ull;
        }
        snprintf(name, sizeof(name), ".docker-flame-%016llx", (unsigned long long)h);
    }
    snprintf(out, cap, "%s", name);
    return 0;
}

static int inject_as(sc_jvm *j, int ns_fd, enum ct_injected how, flame_err *err)
{
    snprintf(j->agent_path, sizeof(j->agent_path), "/tmp/%s/%s", j->inject_dir, SC_AGENT_NAME);
    if (how == CT_INJECTED_MOUNT)
        return inject_mount(j, ns_fd, err);
    return inject_copy(j, ns_fd, err);
}

int sc_inject(sc_jvm *j, int ns_fd, enum ct_injected how, flame_err *err)
{
    /* The stable name first. Taken already (EEXIST: another sidecar profiling this JVM right
     * now, a mount left by a killed sidecar, or a directory the target planted to force
     * this): a fresh random name, i.e. one more copy of the agent, as a first profile gets.
     * The target can only make us do that; mkdirat/open-beneath refuse anything it planted. */
    if (stable_name(j->inject_dir, sizeof(j->inject_dir)) == 0) {
        int rc = inject_as(j, ns_fd, how, err);
        if (rc == 0 || err->code != -EEXIST)
            return rc;
        *err = (flame_err)FLAME_ERR_INIT;
    }
    if (random_name(j->inject_dir, sizeof(j->inject_dir)) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "getrandom");
    return inject_as(j, ns_fd, how, err);
}

int sc_inject_undo(sc_jvm *j, int ns_fd, flame_err *err)
{
    struct inject_args a = {j, -1};
    int rc = 0;
    switch (j->inject) {
    case CT_INJECTED_MOUNT:
        rc = sc_in_target(ns_fd, false, 0, 0, umount_child, &a, 10000, NULL);
        break;
    case CT_INJECTED_COPY:
        rc = sc_in_target(ns_fd, true, j->st.uid, j->st.gid, uncopy_child, &a, 10000, NULL);
        break;
    case CT_INJECTED_NONE:
    case CT_INJECTED_COUNT:
        return 0;
    }
    if (rc < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, -rc, "remove the agent %s from pid %d",
                                j->inject_dir, (int)j->st.pid);
    j->inject = CT_INJECTED_NONE;
    return 0;
}
