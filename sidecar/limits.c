/* The sidecar container's limits (plugin/spec.c; docs/SIDECAR.md "Limits") as the kernel applies
 * them: a process of ours killed by a signal we did not send was, in practice, the memory
 * cgroup's OOM killer. Its count is read from our own cgroup (mounted read-only by the engine:
 * memory.events on cgroup v2, memory.oom_control on v1) to say so in the one error line, with
 * the limit and how to raise it, instead of passing a cut profile for a whole one. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/session.h"

/* "key N" in a small cgroup file, -1 when absent. */
static long long cg_value(const char *path, const char *key)
{
    char buf[4096];
    ssize_t n = sc_read_bounded(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return -1;
    size_t kl = strlen(key);
    for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, kl) && p[kl] == ' ')
            return strtoll(p + kl + 1, NULL, 10);
    return -1;
}

static long long cg_number(const char *path)
{
    char buf[64];
    ssize_t n = sc_read_bounded(AT_FDCWD, path, buf, sizeof buf);
    return n > 0 && buf[0] >= '0' && buf[0] <= '9' ? strtoll(buf, NULL, 10) : -1;
}

long long sc_oom_kills(void)
{
    long long v = cg_value("/sys/fs/cgroup/memory.events", "oom_kill");
    return v >= 0 ? v : cg_value("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill");
}

int sc_fail_killed(flame_err *err, const char *what, int sig)
{
    if (sig == SIGKILL && sc_oom_kills() > 0) {
        long long lim = cg_number("/sys/fs/cgroup/memory.max");
        if (lim < 0)
            lim = cg_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
        char l[48] = "its limit";
        if (lim > 0 && lim < (1ll << 50))
            snprintf(l, sizeof l, "its limit, %lld MiB", lim >> 20);
        return sc_fail(err, CT_ERR_INTERNAL,
                       "%s was killed: the sidecar ran out of memory (%s); nothing of it is kept. "
                       "Give it more with DOCKER_FLAME_SIDECAR_MEMORY (docs/SIDECAR.md \"Limits\")",
                       what, l);
    }
    return sc_fail(err, CT_ERR_INTERNAL, "%s was killed by signal %d (%s)", what, sig,
                   strsignal(sig));
}
