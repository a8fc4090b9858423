/* The sidecar's own files (docs/HARDENING.md "Who can reach the sidecar"). /tmp is a tmpfs of
 * the sidecar container; it is made 0711 (nobody else may create anything in it) and holds one
 * 0700 directory of root's, SC_PRIVATE_DIR, around the work directory SC_WORK_DIR where every
 * file of the run lives: the recording, the maps, the library copies, the window files. No path
 * leads into it for anyone but root. The unprivileged phases reach it through one descriptor
 * opened here while still root (sc_work_fd: lookups below a descriptor check only the
 * directories after it), and perf script, exec'd unprivileged, through /proc/self/fd/<it>
 * (sc_work_path). Every file is created by root with O_CREAT|O_EXCL|O_NOFOLLOW after an unlink:
 * a name found in place is never written through. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/session.h"

static int work_fd = -1;

/* An existing directory must be exactly what we would have made. */
static int own_dir(const char *path, mode_t mode, flame_err *err)
{
    if (mkdir(path, mode) == 0)
        return chmod(path, mode) < 0
                   ? flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "chmod %s", path)
                   : 0; /* whatever the umask */
    struct stat st;
    if (errno != EEXIST || lstat(path, &st) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno,
                                "create %s (the sidecar needs its own writable /tmp)", path);
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 07777) != mode)
        return flame_fail(err, FLAME_EXIT_ERROR, "%s exists and is not our 0%o directory", path,
                          (unsigned)mode);
    return 0;
}

int sc_work_setup(flame_err *err)
{
    struct stat st;
    if (lstat("/tmp", &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "/tmp is not a directory of root's");
    /* PRIVILEGE: none: we own it. The plugin mounts it 0711 already; a sidecar started another
     * way (docs/SIDECAR.md's docker run) gets it the same. */
    if ((st.st_mode & 07777) != 0711 && chmod("/tmp", 0711) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "chmod /tmp 0711");
    if (own_dir(SC_PRIVATE_DIR, 0700, err) < 0 || own_dir(SC_WORK_DIR, 0755, err) < 0)
        return -1;
    work_fd = open(SC_WORK_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (work_fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "open %s", SC_WORK_DIR);
    return 0;
}

int sc_work_fd(void)
{
    return work_fd;
}

int sc_work_create(const char *name, int flags, mode_t mode)
{
    unlinkat(work_fd, name, 0);
    return openat(work_fd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

int sc_work_open(const char *name, int flags)
{
    return openat(work_fd, name, flags | O_NOFOLLOW | O_CLOEXEC);
}

void sc_work_unlink(const char *name)
{
    unlinkat(work_fd, name, 0);
}

void sc_work_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/proc/self/fd/%d/%s", work_fd, name);
}
