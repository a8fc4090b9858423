/* Bounded reads of the target's memory: see wread.h. */
#include "sidecar/recorder/wread.h"

#include <errno.h>
#include <unistd.h>

int sc_wr_read(sc_wread *r, uint64_t addr, void *buf, size_t len)
{
    if (len == 0 || addr < 4096 || addr >= SC_WR_USER_TOP || len > SC_WR_USER_TOP - addr)
        return -1;
    r->reads++;
    r->bytes += len;
    ssize_t n;
    do
        n = pread(r->fd, buf, len, (off_t)addr);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)len) {
        r->faults++;
        return -1;
    }
    return 0;
}
