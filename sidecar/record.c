/* Recording (one-shot profile): the recorder of sampler.c for the duration, its pipe-format
 * output teed into SC_WORK_DATA while sidecar/recorder/perfstream.c counts samples for the P lines.
 * With per-CPU sampling a JVM that starts in the container during the recording is sampled anyway;
 * it is found here and gets the agent like the others, so its frames have names too. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/recorder/recorder.h"
#include "sidecar/session.h"

#define RESCAN_MS 1000 /* how often the set of processes is looked at while recording */
#define SETTLE_MS                                                                                  \
    5000                   /* after it changed, JVMs are looked for this long (a new JVM maps      \
                              libjvm.so and installs its SIGQUIT handler a little after exec) */
#define FULL_SCAN_MS 10000 /* and once in a while anyway (a process that exec()s into java) */

typedef struct rec_ctx {
    sc_session *s;
    int64_t last_p, last_scan, last_full, hot_until;
    uint64_t pid_sig;
} rec_ctx;

/* A signature of the set of pids in our /proc (the target's namespace): a JVM scan reads every
 * process's maps, so it runs only when this changed recently (measured: the scan otherwise
 * costs the sidecar more CPU than the per-CPU recorder). */
static uint64_t pid_set_sig(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    uint64_t h = 1469598103934665603ull;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
            h = (h ^ strtoull(de->d_name, NULL, 10)) * 1099511628211ull;
    closedir(d);
    return h;
}

static bool known(const sc_session *s, pid_t pid)
{
    for (int k = 0; k < s->n; k++)
        if (s->jvms[k].st.pid == pid)
            return true;
    return false;
}

/* Has the JVM installed its SIGQUIT handler yet (SigCgt in its status)? Before that our attach
 * signal would kill it (the default action), so a JVM still starting up waits for the next scan. */
static bool quit_handled(pid_t pid)
{
    char path[64], buf[SC_STATUS_MAX];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (sc_read_bounded(AT_FDCWD, path, buf, sizeof buf) <= 0)
        return false;
    const char *p = strstr(buf, "\nSigCgt:");
    if (!p)
        return false;
    unsigned long long mask = strtoull(p + 8, NULL, 16);
    return (mask >> (SIGQUIT - 1)) & 1;
}

static void adopt_new_jvms(sc_session *s)
{
    static sc_jvm found[SC_MAX_JVMS];
    char seen[256];
    flame_err e = FLAME_ERR_INIT;
    int n = sc_find_jvms(found, SC_MAX_JVMS, seen, sizeof seen, s->target, &e);
    for (int i = 0; i < n; i++) {
        if (s->n >= SC_MAX_JVMS || *s->stop || known(s, found[i].st.pid) ||
            !quit_handled(found[i].st.pid)) {
            if (found[i].pidfd >= 0)
                close(found[i].pidfd);
            continue;
        }
        int k = s->n++;
        s->jvms[k] = found[i];
        sc_open_ns(s, k);
        if (s->ns_fd[k] < 0)
            sc_warn("pid %d: %s", (int)s->jvms[k].st.pid, s->jvms[k].reason);
        else
            sc_prepare_jvm(s, k);
        sc_announce_jvm(s, k);
    }
}

static void on_tick(void *ctx, int64_t elapsed, const sc_perfstream *ps)
{
    rec_ctx *c = ctx;
    sc_session *s = c->s;
    if (elapsed - c->last_p >= 1000) {
        c->last_p = elapsed;
        sc_out_progress((uint64_t)elapsed, s->o.duration_ms, ps->samples, s->n);
    }
    /* Per-thread events cover only the JVMs given at the start: nothing to gain there. */
    if (s->sampling == CT_SAMPLING_CPU && !s->o.pid && s->o.verb != CT_HOST &&
        elapsed - c->last_scan >= RESCAN_MS) {
        c->last_scan = elapsed;
        uint64_t sig = pid_set_sig();
        if (sig != c->pid_sig)
            c->hot_until = elapsed + SETTLE_MS;
        c->pid_sig = sig;
        if (elapsed < c->hot_until || elapsed - c->last_full >= FULL_SCAN_MS) {
            c->last_full = elapsed;
            adopt_new_jvms(s);
        }
    }
}

int sc_record(sc_session *s, flame_err *err)
{
    _cleanup_close_ int data = sc_work_create(SC_WORK_DATA, O_WRONLY, 0644);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "create %s", SC_WORK_DATA);
    rec_ctx c = {.s = s, .pid_sig = pid_set_sig()};
    s->interp = true;
    s->interp_window = -1;
    sc_run run = {.data_fd = data,
                  .duration_ms = (int64_t)s->o.duration_ms,
                  .grace_ms = 10000,
                  .live = true,
                  .extra_fd = -1,
                  .on_tick = on_tick,
                  .ctx = &c};
    sc_run_result res;
    int rc = sc_sampler_run(s, &run, &res, err);
    snprintf(s->filter, sizeof s->filter, "%s", res.filter);
    s->boottime = res.boottime;
    s->samples = res.ps.samples;
    s->lost = res.ps.lost;
    s->t[CT_PH_RECORD] = (uint64_t)res.ms;
    sc_out_progress((uint64_t)res.ms, s->o.duration_ms, res.ps.samples, s->n);
    if (rc == 0 && res.write_errno)
        sc_warn("storing the recording failed (%s): the profile ends there",
                strerror(res.write_errno));
    /* SIGKILL is never ours to send it: the memory limit (or the target's root) ended it */
    if (rc == 0 && !*s->abort && WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGKILL)
        return sc_fail_killed(err, "the recorder", SIGKILL);
    return rc;
}
