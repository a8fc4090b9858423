/* atomic_write_file: temp file + fsync + rename, the one way outputs are written. */
#include "common/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

int atomic_write_file(const char *path, atomic_writer_fn fn, void *ctx, flame_err *err)
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
    if (fchmod(fd, 0666 & ~um) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "cannot write %s", path);
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "cannot write %s", path);
    }
    int rc = fn(ctx, f, err);
    if (rc == 0 && (fflush(f) != 0 || ferror(f)))
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "writing %s", path);
    /* fsync before rename: after a crash the name points at the whole file or the old one. */
    if (rc == 0 && fsync(fileno(f)) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "writing %s", path);
    /* Under sudo the user wants their own file, not root's. */
    const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
    if (rc == 0 && geteuid() == 0 && su && sg && *su && *sg &&
        fchown(fileno(f), (uid_t)strtoul(su, NULL, 10), (gid_t)strtoul(sg, NULL, 10)) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "chown %s to the sudo user", path);
    if (fclose(f) != 0 && rc == 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "writing %s", path);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
    if (rc < 0)
        unlink(tmp);
    return rc;
}
