/* A whole small file read from /proc (or any directory fd), bounded and never through a symlink
 * (sidecar.h). A leaf: every phase and the recorder read the target's /proc with it, so it
 * depends on none of them. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"

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
