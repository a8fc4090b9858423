/* A window split by JVM (plugin/record_split.h). The root frame is the sidecar's
 * (sidecar/jvm.c: "java-<pid>" and, when its command line names one, " <main class>"); only
 * stacks of a window with several JVMs carry it, so only those are looked at: with one JVM, the
 * first frame is a thread's name, which the target chooses. */
#include "plugin/record_split.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The pid a root frame names ("java-123" or "java-123 Main"), or 0 when it is none. */
static int64_t root_pid(const char *s, size_t len)
{
    if (len < 6 || memcmp(s, "java-", 5))
        return 0;
    int64_t pid = 0;
    size_t i = 5;
    for (; i < len && s[i] >= '0' && s[i] <= '9' && pid <= CT_PID_MAX; i++)
        pid = pid * 10 + (s[i] - '0');
    if (i == 5 || pid > CT_PID_MAX || (i < len && s[i] != ' '))
        return 0;
    return pid;
}

typedef struct split_ctx {
    rec_part *parts;
    size_t n; /* parts[n - 1] is the pid-0 one */
} split_ctx;

static int add_stack(void *ud, const char *stack, size_t len, double count)
{
    split_ctx *c = ud;
    const char *semi = memchr(stack, ';', len);
    int64_t pid = semi ? root_pid(stack, (size_t)(semi - stack)) : 0;
    rec_part *to = &c->parts[c->n - 1];
    for (size_t k = 0; pid && k + 1 < c->n; k++)
        if (c->parts[k].pid == pid) {
            to = &c->parts[k];
            break;
        }
    if (to->pid) { /* the JVM's own stack: without the frame that named it */
        len -= (size_t)(semi + 1 - stack);
        stack = semi + 1;
    }
    if (!len)
        return 0;
    if (!to->p && !(to->p = profile_new()))
        return -1;
    /* a stack profile_add refuses (too deep, say) is left out; only a lack of memory stops */
    if (profile_add(to->p, stack, len, count, PROFILE_ONE_COLUMN) < 0 && errno == ENOMEM)
        return -1;
    return 0;
}

static int copy_stack(void *ud, const char *stack, size_t len, double count)
{
    if (profile_add(ud, stack, len, count, PROFILE_ONE_COLUMN) < 0 && errno == ENOMEM)
        return -1;
    return 0;
}

void rec_split_free(rec_part *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        profile_free(parts[i].p);
}

int rec_split(const profile *p, const ct_jvm *jvms, size_t n, int64_t pid0, rec_part *out,
              size_t *nout, flame_err *err)
{
    *nout = 0;
    if (n > REC_SPLIT_MAX - 1)
        n = REC_SPLIT_MAX - 1;
    if (n <= 1) { /* one JVM (or none announced): its window as it is */
        out[0] = (rec_part){n ? (int64_t)jvms[0].pid : pid0, n ? jvms[0].java_version : "",
                            profile_new()};
        *nout = 1;
        if (!out[0].p || (p && profile_each_stack(p, copy_stack, out[0].p) != 0)) {
            rec_split_free(out, 1);
            *nout = 0;
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        out[k] = (rec_part){(int64_t)jvms[k].pid, jvms[k].java_version, profile_new()};
    out[n] = (rec_part){0, "", NULL}; /* made when a stack of no known JVM comes */
    split_ctx c = {out, n + 1};
    bool oom = false;
    for (size_t k = 0; k < n; k++)
        oom |= !out[k].p;
    if (!oom && p && profile_each_stack(p, add_stack, &c) != 0)
        oom = true;
    if (oom) {
        rec_split_free(out, n + 1);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    *nout = out[n].p ? n + 1 : n;
    return 0;
}
