/* Recording: perf record of every JVM, as nobody with CAP_SYS_PTRACE only, its pipe-format
 * output teed into SC_WORK_DATA while sidecar/perfstream.c counts samples for the P lines. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/session.h"

int sc_spawn_perf(const sc_session *s, int *out_fd, int *ctl_fd, pid_t *pid, flame_err *err)
{
    char pids[SC_MAX_JVMS * 12] = "", freq[16];
    for (int k = 0; k < s->n; k++)
        snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d", k ? "," : "",
                 (int)s->jvms[k].st.pid);
    snprintf(freq, sizeof(freq), "%lld", (long long)s->o.frequency);
    int p[2], c[2];
    if (pipe2(p, O_CLOEXEC) < 0 || pipe2(c, O_CLOEXEC) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    *pid = fork();
    if (*pid < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "fork");
    if (*pid == 0) {
        dup2(p[1], 1);
        dup2(c[0], 3); /* perf's --control fd: we stop it by writing "stop" (see below) */
        /* The recorder needs only CAP_SYS_PTRACE (perf_event_open on another user's process
         * passes ptrace_may_access; perf_event_paranoid=2 then limits it to user-space samples,
         * all we want). Become nobody keeping just that one, via the ambient set so it
         * survives exec. If that fails we stop: never record with more than we planned. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setgroups(0, NULL) < 0 ||
            setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            _exit(126);
        cap_t keep = cap_from_text("cap_sys_ptrace=eip");
        if (!keep || cap_set_proc(keep) < 0 || cap_set_ambient(CAP_SYS_PTRACE, CAP_SET) < 0)
            _exit(126);
        /* Changing uid reset the parent-death signal: set it again so perf dies with us. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("HOME", "/tmp", 1);
        /* --no-buffering: perf is woken for every sample, so samples stream out at once
         * (first sample and progress lines without multi-second buffer bursts); at ~100 Hz the
         * cost is negligible. */
        execl(SC_PERF, "perf", "record", "-q", "-N", "--no-buffering", "--control", "fd:3", "-e",
              "cpu-clock", "-g", "-F", freq, "-p", pids, "-o", "-", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    close(c[0]);
    *out_fd = p[0];
    *ctl_fd = c[1];
    return 0;
}

int sc_record(sc_session *s, flame_err *err)
{
    _cleanup_close_ int data = open(SC_WORK_DATA, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (data < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "create %s", SC_WORK_DATA);
    int rfd = -1, cfd = -1;
    pid_t pid = -1;
    if (sc_spawn_perf(s, &rfd, &cfd, &pid, err) < 0)
        return -1;
    _cleanup_close_ int in = rfd;
    _cleanup_close_ int ctl = cfd;
    sc_perfstream ps = {0};
    int64_t start = mono_ms(), last_p = start, stop_sent = 0;
    int64_t dur_ms = (int64_t)s->o.duration_ms;
    bool got_caps = false;
    static unsigned char buf[1 << 16];
    for (;;) {
        int64_t now = mono_ms();
        if (!got_caps && now - start > 100) { /* perf's privilege once it runs (S.caps) */
            sc_cap_eff(pid, s->caps[CT_CAPS_RECORD], sizeof s->caps[CT_CAPS_RECORD]);
            got_caps = true;
        }
        /* perf runs as nobody and we hold no CAP_KILL: we cannot signal it. Its control fd
         * ("stop") ends the recording cleanly; if it does not finish within 10 s (2 s when
         * aborting), closing its output pipe makes its next write fail and it exits. */
        if (!stop_sent && (*s->stop || (dur_ms > 0 && now - start >= dur_ms))) {
            if (write(ctl, "stop\n", 5) != 5)
                kill(pid, SIGINT); /* best effort */
            stop_sent = now;
        }
        if (stop_sent && now - stop_sent > (*s->abort ? 2000 : 10000))
            break;
        if (now - last_p >= 1000) {
            last_p = now;
            sc_out_progress((uint64_t)(now - start), (uint64_t)dur_ms, ps.samples, s->n);
        }
        struct pollfd pfd = {.fd = in, .events = POLLIN};
        int r = poll(&pfd, 1, 200);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        sc_perfstream_feed(&ps, buf, (size_t)n);
        if (ps.samples && !s->t[CT_PH_FIRST_SAMPLE])
            s->t[CT_PH_FIRST_SAMPLE] = (uint64_t)(mono_ms() - s->t0);
        for (ssize_t w = 0; w < n;) {
            ssize_t k = TEMP_FAILURE_RETRY(write(data, buf + w, (size_t)(n - w)));
            if (k <= 0) {
                stop_sent = now - 1000000; /* cannot store: end the recording now */
                break;
            }
            w += k;
        }
    }
    close(steal_fd(&in)); /* a perf still writing gets EPIPE and exits */
    int status = 0;
    for (int64_t w0 = mono_ms(); waitpid(pid, &status, WNOHANG) == 0;) {
        if (mono_ms() - w0 > 5000) {
            sc_warn("perf record did not exit; leaving it to die with the sidecar");
            break;
        }
        sleep_ms(20); /* perf ends on its own after EPIPE; we only bound the wait */
    }
    s->samples = ps.samples;
    s->lost = ps.lost;
    s->t[CT_PH_RECORD] = (uint64_t)(mono_ms() - start);
    sc_out_progress((uint64_t)(mono_ms() - start), (uint64_t)dur_ms, ps.samples, s->n);
    if (!ps.started) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
            return sc_fail(err, CT_ERR_PERF_DENIED, "could not drop to the recorder's privileges");
        return sc_fail(err, CT_ERR_PERF_DENIED,
                       "perf record produced no data (exit status %d); see stderr",
                       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return 0;
}
