/* flame-sidecar: find the JVMs of the target (whose PID namespace we share), make our agent
 * visible and load it as each JVM's own user, record with perf, complete and fetch the maps,
 * undo everything in the target, drop every privilege, fold `perf script`, and stream the result
 * (common/contract.h) on stdout. Phases: sidecar/session.h. This file only orders them, owns the
 * signals, and turns the outcome into the last lines of the stream and the exit status.
 * Single-threaded on purpose: setns(CLONE_NEWNS) in our children requires it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "sidecar/hostproc.h"
#include "sidecar/kallsyms.h"
#include "sidecar/session.h"

static volatile sig_atomic_t stop_requested, abort_requested;

static void on_signal(int sig)
{
    if (sig == SIGINT)
        stop_requested = 1;
    else
        abort_requested = stop_requested = 1;
}

/* The last lines of every stream: E (when failing), then D; the exit status. */
static int finish(const flame_err *err)
{
    if (err && err->code)
        sc_out_error(err);
    sc_out(CT_TAG_DONE, NULL);
    return err && err->code ? err->code : 0;
}

/* Whose processes are the target's: the container --target names, or (a sidecar started by
 * hand, --pid container:<target>) the container of pid 1 in our PID namespace. */
static int resolve_target(sc_session *s, flame_err *err)
{
    if (s->o.target) {
        snprintf(s->target, sizeof s->target, "%s", s->o.target);
        return 0;
    }
    char buf[SC_HOST_CGROUP_MAX];
    ssize_t n = sc_read_bounded(AT_FDCWD, "/proc/1/cgroup", buf, sizeof buf);
    if (n > 0 && sc_cgroup_innermost(buf, (size_t)n, s->target) == 1)
        return 0;
    return sc_fail(err, CT_ERR_USAGE,
                   "no --target, and pid 1 of this PID namespace is in no container: give the "
                   "target container's full id with --target");
}

/* The JVMs in our PID namespace that are the target's, narrowed to --pid. */
static int discover(sc_session *s, flame_err *err)
{
    static sc_jvm all[SC_MAX_JVMS];
    char seen[2048];
    int n = sc_find_jvms(all, SC_MAX_JVMS, seen, sizeof(seen), s->target, err);
    s->t[CT_PH_SCAN] = (uint64_t)(mono_ms() - s->t0);
    if (n < 0)
        return sc_fail(err, CT_ERR_INTERNAL, "%s", err->msg);
    for (int k = 0; k < n; k++) {
        if (!s->o.pid || all[k].st.pid == (pid_t)s->o.pid || all[k].st.nspid == (pid_t)s->o.pid)
            s->jvms[s->n++] = all[k];
        else if (all[k].pidfd >= 0)
            close(all[k].pidfd);
    }
    if (n == 0)
        return sc_fail(err, CT_ERR_NO_JVM,
                       "no HotSpot JVM (a process mapping libjvm.so) in the container; processes "
                       "seen: %s",
                       seen[0] ? seen : "(none)");
    if (s->n == 0)
        return sc_fail(err, CT_ERR_NO_PID,
                       "pid %lld is not a JVM in the container; processes seen: %s",
                       (long long)s->o.pid, seen);
    return 0;
}

/* Each JVM's mount namespace, kept open: every step in the target enters it (target.c). */
static void open_namespaces(sc_session *s)
{
    for (int k = 0; k < s->n; k++)
        sc_open_ns(s, k);
}

static void close_namespaces(sc_session *s)
{
    for (int k = 0; k < s->n; k++) {
        if (s->ns_fd[k] >= 0) {
            close(s->ns_fd[k]);
            s->ns_fd[k] = -1;
        }
        if (s->jvms[k].pidfd >= 0) {
            close(s->jvms[k].pidfd);
            s->jvms[k].pidfd = -1;
        }
    }
}

/* inject + attach each JVM, then tell the plugin what was found (J lines) */
static void prepare(sc_session *s)
{
    for (int k = 0; k < s->n; k++) {
        sc_jvm *j = &s->jvms[k];
        if (s->ns_fd[k] < 0)
            sc_warn("pid %d: %s", (int)j->st.pid, j->reason);
        else if (!stop_requested)
            sc_prepare_jvm(s, k);
        sc_announce_jvm(s, k);
    }
}

/* `host` (docs/HOST.md): record every CPU while the scanner maps tasks to containers, drop
 * every privilege, process. Per-CPU or nothing: per thread cannot see the whole host. */
static int host_main(sc_session *s, flame_err *err)
{
    s->sampling = s->o.sampling = CT_SAMPLING_CPU; /* refused: E perf_denied, exit 6 */
    if (sc_host_find_jvms(s, err) < 0)
        return -1;
    sc_test_stop("setup");
    if (sc_host_scanner_start(s, err) < 0)
        return sc_fail(err, CT_ERR_INTERNAL, "%s", err->msg);
    /* the agent in each JVM of the plugin's containers, as for one container */
    open_namespaces(s);
    prepare(s);
    int rc = abort_requested ? 0 : sc_record(s, err);
    sc_host_scanner_stop(s);
    /* undo in every JVM, on every path; fetch the maps only for a profile */
    bool fetch = rc == 0 && !abort_requested;
    for (int k = 0; k < s->n; k++)
        if (s->ns_fd[k] >= 0)
            sc_finish_jvm(s, k, fetch);
    close_namespaces(s);
    if (abort_requested)
        return sc_fail(err, CT_ERR_ABORTED, "aborted by SIGTERM; the JVMs were restored");
    if (rc < 0) {
        if (err->detail == 0) /* not classified by sc_fail: the recorder could not start */
            sc_fail(err, CT_ERR_PERF_DENIED, "%s", err->msg);
        return -1;
    }
    int map_fd[SC_MAX_JVMS];
    sc_publish_maps(s, map_fd);
    if (mkdir(SC_SYMFS, 0755) < 0 && errno != EEXIST) /* no copy (no JVM attached): empty */
        return sc_fail(err, CT_ERR_INTERNAL, "create %s: %s", SC_SYMFS, strerror(errno));
    if (sc_harden(err) < 0)
        return sc_fail(err, CT_ERR_INTERNAL, "%s", err->msg);
    sc_cap_eff(0, s->caps[CT_CAPS_PROCESS], sizeof s->caps[CT_CAPS_PROCESS]);
    sc_test_stop("process");
    if (sc_host_process(s, map_fd, err) < 0)
        return err->detail ? -1 : sc_fail(err, CT_ERR_INTERNAL, "%s", err->msg);
    return 0;
}

/* --kernel: kernel symbols copied while we hold CAP_SYSLOG (kallsyms.h), before anything is
 * done to the target, so a refusal leaves nothing to undo. Refused = E perf_denied (exit 6),
 * never a profile silently without kernel frames. */
static int kernel_symbols(sc_session *s, flame_err *err)
{
    if (s->o.verb != CT_RECORD && s->o.verb != CT_TOP)
        return sc_fail(err, CT_ERR_USAGE, "--kernel is supported by record and top only");
    if (s->o.sampling == CT_SAMPLING_THREAD)
        return sc_fail(err, CT_ERR_USAGE,
                       "--kernel needs per-CPU sampling (not --sampling thread)");
    flame_err why = FLAME_ERR_INIT;
    int rc = sc_kallsyms_copy(sc_run_uid(), &s->kallsyms_fd, &s->kernel_text, &why);
    /* CAP_SYSLOG was for that open alone: gone before the target is looked at */
    flame_err drop = FLAME_ERR_INIT;
    if (sc_kallsyms_drop_syslog(&drop) < 0)
        return sc_fail(err, CT_ERR_INTERNAL, "%s", drop.msg);
    if (rc == 0)
        return 0;
    char kr[16] = "?";
    if (sc_read_bounded(AT_FDCWD, "/proc/sys/kernel/kptr_restrict", kr, sizeof kr) > 0)
        kr[strcspn(kr, "\n")] = '\0';
    return sc_fail(err, CT_ERR_PERF_DENIED,
                   "--kernel refused: %s (kernel.kptr_restrict=%s; naming kernel frames needs "
                   "kptr_restrict <= 1 and CAP_SYSLOG in the sidecar); profile without --kernel",
                   why.msg, kr);
}

int main(int argc, char **argv)
{
    static sc_session s;
    flame_err err = FLAME_ERR_INIT;
    s.t0 = mono_ms();
    s.stop = &stop_requested;
    s.abort = &abort_requested;
    for (int k = 0; k < SC_MAX_JVMS; k++)
        s.ns_fd[k] = s.raw_fd[k] = s.modes_fd[k] = -1;
    s.kallsyms_fd = -1;
    s.host.scanner_pid = -1;
    s.host.scanner_ctl = s.host.table_rfd = -1;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (ct_argv_parse(argc, argv, &s.o, &err) < 0) {
        fprintf(stderr, "flame-sidecar: %s\n", err.msg);
        char v[8];
        snprintf(v, sizeof v, "%d", CT_VERSION);
        sc_out(CT_TAG_VERSION, v);
        sc_fail(&err, CT_ERR_USAGE, "%s", err.msg);
        return finish(&err);
    }
    if (s.o.help) {
        ct_usage(stdout);
        return 0;
    }
    s.sampling = s.o.sampling;
    char v[8];
    snprintf(v, sizeof v, "%d", CT_VERSION);
    sc_out(CT_TAG_VERSION, v);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    sc_cap_eff(0, s.caps[CT_CAPS_SETUP], sizeof s.caps[CT_CAPS_SETUP]);
    snprintf(s.caps[CT_CAPS_OPEN], sizeof s.caps[CT_CAPS_OPEN], "unknown");
    snprintf(s.caps[CT_CAPS_RECORD], sizeof s.caps[CT_CAPS_RECORD], "unknown");
    /* Before anything is created or forked: the run's own unprivileged uid, and the directory
     * only root can enter by name (docs/HARDENING.md "Who can reach the sidecar"). */
    if (sc_pick_run_uid(&err) < 0 || sc_work_setup(&err) < 0) {
        sc_fail(&err, CT_ERR_INTERNAL, "%s", err.msg);
        return finish(&err);
    }

    if (sc_perf_mode(&s.o) != CT_MODE_CPU) {
        /* off-CPU samples come from our per-CPU recorder only (docs/SIDECAR.md "Off-CPU"); the
         * top verb's windows carry them too (what `docker flame record --mode` stores) */
        if ((s.o.verb != CT_RECORD && s.o.verb != CT_TOP) || s.o.sampling == CT_SAMPLING_THREAD) {
            sc_fail(&err, CT_ERR_USAGE,
                    "--mode wall/offcpu: profiles and windows with per-CPU sampling only");
            return finish(&err);
        }
        s.sampling = s.o.sampling = CT_SAMPLING_CPU; /* refused: E perf_denied, exit 6 */
    }
    /* lock's java.util.concurrent waits come from off-CPU samples (docs/MODES.md): recorded
     * when no other mode needs the recorder's samples; with cpu they are not */
    s.juc = sc_juc_wanted(&s.o);
    if ((ct_modes_of(&s.o) & CT_MODE_BIT(CT_MODE_LOCK)) && sc_perf_mode(&s.o) == CT_MODE_CPU &&
        !s.juc && (s.o.verb == CT_RECORD || s.o.verb == CT_TOP))
        sc_warn("--mode lock: java.util.concurrent locks not seen in this run, monitors only (%s)",
                s.o.sampling == CT_SAMPLING_THREAD
                    ? "they come from off-CPU samples, which need per-CPU sampling"
                    : "they come from off-CPU samples, and cpu is recorded instead: profile "
                      "--mode lock without cpu, or with offcpu");
    if (s.o.verb == CT_HOST)
        return finish(host_main(&s, &err) < 0 ? &err : NULL);
    if (s.o.kernel && kernel_symbols(&s, &err) < 0)
        return finish(&err);
    if (resolve_target(&s, &err) < 0 || discover(&s, &err) < 0)
        return finish(&err);
    sc_test_stop("setup");
    open_namespaces(&s);
    if (s.o.verb == CT_RESTORE) {
        for (int k = 0; k < s.n; k++)
            if (s.ns_fd[k] >= 0)
                sc_restore_jvm(&s, k);
        close_namespaces(&s);
        return finish(NULL);
    }
    prepare(&s);
    int rc = 0;
    if (!abort_requested)
        rc = s.o.verb == CT_TOP ? sc_top_run(&s, &err) : sc_record(&s, &err);
    /* finish in the target: complete maps, fetch, undo -- on every path */
    int64_t t = mono_ms();
    bool fetch = rc == 0 && !abort_requested && s.o.verb == CT_RECORD;
    for (int k = 0; k < s.n; k++)
        if (s.ns_fd[k] >= 0)
            sc_finish_jvm(&s, k, fetch);
    s.t[CT_PH_FINISH] = (uint64_t)(mono_ms() - t);
    close_namespaces(&s);
    if (abort_requested) {
        sc_fail(&err, CT_ERR_ABORTED, "aborted by SIGTERM; the target was restored");
        return finish(&err);
    }
    if (rc < 0 || s.o.verb == CT_TOP) /* top: every window was processed and sent already */
        return finish(rc < 0 ? &err : NULL);

    int map_fd[SC_MAX_JVMS];
    sc_publish_maps(&s, map_fd);
    /* privilege drop + seccomp, before parsing anything from the target */
    if (sc_harden(&err) < 0) {
        sc_fail(&err, CT_ERR_INTERNAL, "%s", err.msg);
        return finish(&err);
    }
    sc_cap_eff(0, s.caps[CT_CAPS_PROCESS], sizeof s.caps[CT_CAPS_PROCESS]);
    sc_test_stop("process");
    if (sc_process(&s, map_fd, &err) < 0 && !err.detail)
        sc_fail(&err, CT_ERR_INTERNAL, "%s", err.msg);
    return finish(err.code ? &err : NULL);
}
