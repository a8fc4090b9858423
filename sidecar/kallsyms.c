/* A bounded, checked copy of /proc/kallsyms for `--kernel` (kallsyms.h). */
#include "sidecar/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"

/* One line: "<hex address> <type> <name>[\t[module]]". */
static bool parse_line(const char *p, const char *end, uint64_t *addr, const char **name,
                       size_t *nlen)
{
    uint64_t a = 0;
    int digits = 0;
    for (; p < end && *p != ' '; p++, digits++) {
        int c = (unsigned char)*p, v;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v = c - 'A' + 10;
        else
            return false;
        if (digits >= 16)
            return false;
        a = a << 4 | (uint64_t)v;
    }
    /* " T " then the name */
    if (!digits || end - p < 4 || p[0] != ' ' || p[2] != ' ')
        return false;
    p += 3;
    const char *n = p;
    while (p < end && *p != '\t' && *p != ' ')
        p++;
    *addr = a;
    *name = n;
    *nlen = (size_t)(p - n);
    return true;
}

int sc_kallsyms_check(const char *buf, size_t len, bool truncated, uint64_t *text, flame_err *err)
{
    *text = 0;
    if (truncated)
        return flame_fail(err, FLAME_EXIT_PERF, "/proc/kallsyms is larger than %u MiB",
                          SC_KALLSYMS_MAX >> 20);
    uint64_t stext = 0;
    unsigned long long shown = 0, lines = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        uint64_t a;
        const char *name;
        size_t n;
        if (parse_line(p, e, &a, &name, &n)) {
            lines++;
            shown += a != 0;
            if (n == 5 && !memcmp(name, "_text", 5) && !*text)
                *text = a;
            else if (n == 6 && !memcmp(name, "_stext", 6) && !stext)
                stext = a;
        }
        p = nl ? nl + 1 : end;
    }
    if (!lines)
        return flame_fail(err, FLAME_EXIT_PERF, "/proc/kallsyms lists no symbol");
    if (!shown)
        return flame_fail(err, FLAME_EXIT_PERF,
                          "the kernel hides its symbol addresses from the sidecar (every "
                          "/proc/kallsyms address reads 0)");
    if (!*text)
        *text = stext;
    if (!*text)
        return flame_fail(err, FLAME_EXIT_PERF, "/proc/kallsyms has no _text symbol");
    return 0;
}

int sc_kallsyms_drop_syslog(flame_err *err)
{
    /* PRIVILEGE: lowering our own permitted set needs no capability; CapBnd keeps SYSLOG, which
     * NO_NEW_PRIVS and the later drop to uid 65534 make unusable. */
    cap_value_t syslog = CAP_SYSLOG;
    _cleanup_cap_ cap_t c = cap_get_proc();
    if (!c || cap_set_flag(c, CAP_EFFECTIVE, 1, &syslog, CAP_CLEAR) < 0 ||
        cap_set_flag(c, CAP_PERMITTED, 1, &syslog, CAP_CLEAR) < 0 ||
        cap_set_flag(c, CAP_INHERITABLE, 1, &syslog, CAP_CLEAR) < 0 || cap_set_proc(c) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "drop CAP_SYSLOG");
    return 0;
}

int sc_kallsyms_copy(uid_t reader, int *fd, uint64_t *text, flame_err *err)
{
    *fd = -1;
    /* PRIVILEGE: the kernel decides at open(2), from this file's credentials, whether reads
     * show addresses (kallsyms_show_value): with perf_event_paranoid > 1 or kptr_restrict 1
     * that takes CAP_SYSLOG, which the sidecar holds only with --kernel and only until
     * sc_harden(). kptr_restrict 2 hides them from everyone. */
    _cleanup_close_ int in = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return flame_fail_errno(err, FLAME_EXIT_PERF, errno, "open /proc/kallsyms");
    _cleanup_free_ char *buf = malloc((size_t)SC_KALLSYMS_MAX + 1);
    if (!buf)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t len = 0;
    /* /proc/kallsyms reports size 0: read to EOF, one byte past the bound to see a cut */
    while (len <= SC_KALLSYMS_MAX) {
        ssize_t r = read(in, buf + len, (size_t)SC_KALLSYMS_MAX + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return flame_fail_errno(err, FLAME_EXIT_PERF, errno, "read /proc/kallsyms");
        if (r == 0)
            break;
        len += (size_t)r;
    }
    bool cut = len > SC_KALLSYMS_MAX;
    if (sc_kallsyms_check(buf, cut ? SC_KALLSYMS_MAX : len, cut, text, err) < 0)
        return -1;
    /* No name anywhere: the symbol table with real addresses is what kptr_restrict and
     * CAP_SYSLOG keep from the target. Owned by the reader (created with its fsuid, which no
     * directory permission is needed for), 0600, and sealed: nothing can change it after. */
    setfsgid(reader);
    setfsuid(reader);
    int out = memfd_create("kallsyms", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int e = errno;
    struct stat st;
    if (out >= 0 && (fchmod(out, 0600) < 0 || fstat(out, &st) < 0 || st.st_uid != reader))
        e = errno ? errno : EPERM, close(out), out = -1;
    setfsuid(0);
    setfsgid(0);
    if (out < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "memfd_create kallsyms");
    for (size_t off = 0; off < len;) {
        ssize_t w = write(out, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            e = w < 0 ? errno : ENOSPC;
            close(out);
            return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "write the kallsyms copy");
        }
        off += (size_t)w;
    }
    if (fcntl(out, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        e = errno;
        close(out);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "seal the kallsyms copy");
    }
    *fd = out;
    return 0;
}
