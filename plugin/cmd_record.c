/* `docker flame record CONTAINER...`: continuous profiling. Each container has a recorder of its
 * own (plugin/record_loop.c) in a process of its own, so one container stopping, restarting or
 * failing never pauses the others. In the foreground this process supervises them and passes
 * Ctrl-C on; with --detach each recorder leaves the terminal's session, registers itself
 * (plugin/recordings.h) for `docker flame ps` / `stop`, and this command returns once every one
 * of them records (or waits for its container). docs/RECORD.md. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/contract.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/record.h"
#include "plugin/run/signals.h"
#include "plugin/stored.h"
#include "store/store.h"

/* Always-on defaults: 10-s windows (what the store's compaction and `show` are sized for) at
 * 49 Hz, half the one-shot rate: a window still holds ~490 samples per busy core, and the
 * sampling cost halves (docs/BENCHMARKS.md "Recording overhead"). */
#define REC_WINDOW_MS 10000
#define REC_FREQUENCY 49
#define REC_MAX_TARGETS 16

static const char usage_head[] =
    "Usage:  docker flame record [OPTIONS] CONTAINER...\n"
    "\n"
    "Record the JVMs of each CONTAINER continuously, window after window, into the profile\n"
    "store, until Ctrl-C (the window cut short by it is kept). Later, any time range can be\n"
    "drawn (docker flame show), compared (docker flame diff web@14:00..14:05 web@-5m) or\n"
    "listed (docker flame ls). A window in which nothing ran is stored as empty. A container\n"
    "that stops is waited for and recorded again when it runs (restarted, or created again\n"
    "under its name); an engine that restarts is waited for too.\n"
    "\n"
    "With --detach the recording goes on in the background, also after the terminal closes:\n"
    "`docker flame ps` lists the recordings, `docker flame stop CONTAINER` ends one.\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame record web api                   # 10-s windows into the default store\n"
    "  docker flame record web --window 30s -F 19\n"
    "  docker flame record --detach web              # in the background; docker flame ps\n"
    "  docker flame show web --since 15m -o web.svg  # meanwhile, or later\n"
    "\n"
    "Exit status: 0 stopped by Ctrl-C (or started, with --detach), 1 error, 2 bad command line,\n"
    "3 no such container (or it was removed), 4 no JVM, 5 attach failed, 6 perf refused, 7 the\n"
    "store cannot be used, 125 the engine failed.\n";

#define F(field, T) ARG_FIELD(rec_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "window", .shrt = 'w', .kind = ARG_DURATION, .off = F(rec.interval_ms, uint64_t),
     .meta = "DURATION", .help = "length of each stored window (default 10s; 1s to 60s)",
     .lo = 1000, .hi = CT_INTERVAL_MAX_MS},
    {.lng = "frequency", .shrt = 'F', .kind = ARG_INT, .off = F(rec.frequency, int64_t), .meta = "HZ",
     .help = "samples per second per CPU (default 49)", .lo = 1, .hi = CT_FREQ_MAX},
    {.lng = "pid", .kind = ARG_INT, .off = F(rec.pid, int64_t), .meta = "PID",
     .help = "only this JVM (pid in the container)", .lo = 1, .hi = CT_PID_MAX},
    {.lng = "no-inline", .kind = ARG_FLAG, .off = F(rec.no_inline, bool),
     .help = "do not show methods inlined by the JIT as frames"},
    {.lng = "shared-pid", .kind = ARG_FLAG, .off = F(shared_pid, bool),
     .help = "a container that shares another's PID namespace (as for\ndocker flame)"},
    {.lng = "detach", .kind = ARG_FLAG, .off = F(detach, bool),
     .help = "record in the background (docker flame ps lists it,\ndocker flame stop ends it)"},
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = F(quiet, bool),
     .help = "no line per stored window"},
    STORED_STORE_SPEC(F(store, const char *)),
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_record_grammar = {.name = "docker flame record",
                                      .specs = specs,
                                      .nspecs = sizeof specs / sizeof *specs,
                                      .groups = {CT_RECORD_GROUP(F(rec, ct_args))},
                                      .operands_off = F(in, args_operands)};
// clang-format on
#undef F

static int check_args(rec_args *a, flame_err *err)
{
    /* Each window is stored with its profile type (docs/STORE.md "Profile types"): cpu, wall or
     * offcpu (the sidecar's own recordings; two or three of them: one wall recording whose
     * windows the sidecar splits by each sample's thread state, as a profile's), alloc or lock
     * (the agent's table, flushed at every window's end): a window of each per interval. */
    unsigned modes = CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_WALL) |
                     CT_MODE_BIT(CT_MODE_OFFCPU) | CT_MODE_BIT(CT_MODE_ALLOC) |
                     CT_MODE_BIT(CT_MODE_LOCK);
    if (ct_modes_check(&a->rec, modes, "docker flame record", err) < 0)
        return -1;
    if (a->in.n == 0)
        return args_error(&cmd_record_grammar, err,
                          "which container? usage: docker flame record [OPTIONS] CONTAINER...");
    if (a->in.n > REC_MAX_TARGETS)
        return args_error(&cmd_record_grammar, err, "at most %d containers in one recording",
                          REC_MAX_TARGETS);
    /* An unusable store is refused once, here, before any recorder or sidecar exists. */
    store *st = NULL;
    if (stored_open(a->store, &st, err) < 0)
        return -1;
    store_close(st);
    return 0;
}

static int wait_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : FLAME_EXIT_ERROR;
}

/* Foreground, several containers: one child per container. The children leave our process
 * group so that a terminal's Ctrl-C reaches them once, through us (a second one from the
 * terminal itself would read as "abort"); they die with us (PDEATHSIG) if we are killed. */
static int record_fg(const ep_globals *g, const rec_args *a)
{
    size_t n = (size_t)a->in.n;
    pid_t kids[REC_MAX_TARGETS];
    int codes[REC_MAX_TARGETS];
    size_t left = 0;
    pid_t parent = getpid();
    for (size_t i = 0; i < n; i++) {
        fflush(NULL);
        pid_t p = fork();
        if (p == 0) {
            flame_err err = FLAME_ERR_INIT;
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent)
                _exit(FLAME_EXIT_INTERRUPTED);
            if (sig_child_reset(&err) < 0)
                _exit(cli_fail("record", &err));
            _exit(rec_run(g, a, a->in.v[i], NULL));
        }
        if (p < 0) {
            fprintf(stderr, "docker flame record: %s: cannot start its recorder: %s\n", a->in.v[i],
                    strerror(errno));
            codes[i] = FLAME_EXIT_ERROR;
            kids[i] = 0;
            continue;
        }
        kids[i] = p;
        codes[i] = -1;
        left++;
    }
    sig_counts seen = {0};
    sig_ctrlc cc = SIG_CTRLC_INIT;
    while (left > 0) {
        int status;
        pid_t p;
        while ((p = waitpid(-1, &status, WNOHANG)) > 0)
            for (size_t i = 0; i < n; i++)
                if (kids[i] == p) {
                    codes[i] = wait_code(status);
                    kids[i] = 0;
                    left--;
                }
        if (left == 0)
            break;
        sig_counts now;
        sig_get_counts(&now);
        int sig = 0;
        /* As plugin/run/session.c reads them: a SIGINT and the CLI closing its socket are one
         * Ctrl-C (sig_ctrlc_step; a CLI may do both); each child sees each Ctrl-C once. */
        unsigned presses = sig_ctrlc_step(&cc, now.sigint, now.sock_closed, mono_s());
        if (now.sigterm > seen.sigterm)
            sig = SIGTERM;
        else if (presses)
            sig = SIGINT;
        seen = now;
        for (size_t i = 0; sig && i < n; i++)
            if (kids[i] > 0)
                kill(kids[i], sig);
        /* SIGCHLD is not among the signals that wake us: look again every 200 ms. */
        struct pollfd pf = {.fd = sig_wake_fd(), .events = POLLIN};
        if (poll(&pf, 1, 200) > 0)
            sig_drain_wake();
    }
    for (size_t i = 0; i < n; i++)
        if (codes[i] > 0)
            return codes[i];
    return 0;
}

/* Every fd but 0-2 and keep: what the command was started with (a CI runner's or an IDE's pipe,
 * a lock) must not be held for the days a recording runs. */
static void close_inherited(int keep)
{
    if (keep > 3 && close_range(3, (unsigned)keep - 1, 0) < 0 && errno == ENOSYS)
        for (int fd = 3; fd < keep; fd++)
            close(fd);
    if (close_range((unsigned)keep + 1, ~0U, 0) < 0 && errno == ENOSYS)
        for (int fd = keep + 1; fd < 1024; fd++)
            close(fd);
}

/* The detached recorder of one container: its own session (no terminal, no SIGHUP when the
 * terminal goes), no fd it was not meant to have, umask 077 (its log, the store, the spool are
 * the user's only), stdin and stdout on /dev/null, stderr on the terminal until it records (so
 * the command that started it can show why it could not), then on its log; registered for ps. */
static int detached_main(const ep_globals *g, const rec_args *a, const char *arg, int ready_fd)
{
    flame_err err = FLAME_ERR_INIT;
    setsid();
    umask(077);
    /* before anything opens a file: the signal pipe and the CLI's socket go too, and are made
     * again (or dropped) by sess_signals_child_reset just below */
    close_inherited(ready_fd);
    if (chdir("/") < 0)
        return flame_fail_errno(&err, FLAME_EXIT_ERROR, errno, "chdir /"), cli_fail("record", &err);
    if (sig_child_reset(&err) < 0)
        return cli_fail("record", &err);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    rec_reg reg = {.lock_fd = -1};
    rec_entry *e = &reg.e;
    snprintf(e->arg, sizeof e->arg, "%s", arg);
    snprintf(e->state, sizeof e->state, "starting");
    e->since_ms = (int64_t)time(NULL) * 1000;
    e->window_ms = a->rec.interval_ms;
    e->frequency = (uint64_t)a->rec.frequency;
    ep_endpoint ep = {0};
    if (ep_resolve(g, &ep, &err) == 0)
        snprintf(e->endpoint, sizeof e->endpoint, "%s", ep.host ? ep.host : "");
    ep_endpoint_clear(&ep);
    err = (flame_err)FLAME_ERR_INIT;
    store *st = NULL;
    if (stored_open(a->store, &st, &err) == 0)
        snprintf(e->store, sizeof e->store, "%s", store_name(st));
    store_close(st);
    err = (flame_err)FLAME_ERR_INIT;
    if (recs_register(&reg, &err) < 0)
        return cli_fail("record", &err);
    snprintf(e->log, sizeof e->log, "%s/%s.log", reg.dir, e->id);
    int log_fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        flame_fail_errno(&err, FLAME_EXIT_ERROR, errno, "cannot create %s", e->log);
        recs_unregister(&reg);
        return cli_fail("record", &err);
    }
    recs_update(&reg, &err);
    rec_link link = {.ready_fd = ready_fd, .log_fd = log_fd, .reg = &reg};
    int rc = rec_run(g, a, arg, &link);
    if (link.ready_fd >= 0) {
        /* It never ran: the command that started us reports the failure; nothing to keep. */
        close(link.ready_fd);
        if (link.log_fd >= 0)
            close(link.log_fd);
        unlink(e->log);
        recs_unregister(&reg);
        return rc;
    }
    recs_finish(&reg);
    return rc;
}

static int record_detached(const ep_globals *g, const rec_args *a)
{
    size_t n = (size_t)a->in.n;
    pid_t kids[REC_MAX_TARGETS];
    int fds[REC_MAX_TARGETS];
    int exit_code = 0;
    /* All started at once (each takes seconds to attach), then each one's news read in turn. */
    for (size_t i = 0; i < n; i++) {
        const char *arg = a->in.v[i];
        int pfd[2];
        kids[i] = -1;
        fds[i] = -1;
        if (pipe2(pfd, O_CLOEXEC) < 0) {
            fprintf(stderr, "docker flame record: %s: pipe: %s\n", arg, strerror(errno));
            exit_code = exit_code ? exit_code : FLAME_EXIT_ERROR;
            continue;
        }
        fflush(NULL);
        pid_t p = fork();
        if (p == 0) {
            close(pfd[0]);
            for (size_t k = 0; k < i; k++)
                if (fds[k] >= 0)
                    close(fds[k]);
            _exit(detached_main(g, a, arg, pfd[1]));
        }
        close(pfd[1]);
        if (p < 0) {
            close(pfd[0]);
            fprintf(stderr, "docker flame record: %s: cannot start its recorder: %s\n", arg,
                    strerror(errno));
            exit_code = exit_code ? exit_code : FLAME_EXIT_ERROR;
            continue;
        }
        kids[i] = p;
        fds[i] = pfd[0];
    }
    /* Each one's news: one byte 'R' once it records or waits for its container; end of file if
     * it ended first (its messages are already on our stderr): then its exit code is ours. An
     * interrupt meanwhile (Ctrl-C, the CLI closing its socket) ends every one not yet started:
     * they left our session, so the terminal's Ctrl-C does not reach them. */
    size_t pending = 0;
    for (size_t i = 0; i < n; i++)
        pending += kids[i] > 0;
    while (pending > 0 && !sig_interrupted()) {
        struct pollfd pf[REC_MAX_TARGETS + 2];
        size_t idx[REC_MAX_TARGETS];
        nfds_t np = 0;
        for (size_t i = 0; i < n; i++)
            if (fds[i] >= 0) {
                idx[np] = i;
                pf[np++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
            }
        nfds_t nw = np;
        pf[np++] = (struct pollfd){.fd = sig_wake_fd(), .events = POLLIN};
        if (sig_plugin_sock_fd() >= 0)
            pf[np++] = (struct pollfd){.fd = sig_plugin_sock_fd(), .events = POLLIN};
        if (poll(pf, np, 1000) < 0 && errno != EINTR)
            break;
        sig_event_count(); /* notices a closed plugin socket */
        if (pf[nw].revents)
            sig_drain_wake();
        for (nfds_t k = 0; k < nw; k++) {
            if (!pf[k].revents)
                continue;
            size_t i = idx[k];
            char c = 0;
            ssize_t r = read(fds[i], &c, 1);
            if (r < 0 && errno == EINTR)
                continue;
            close(fds[i]);
            fds[i] = -1;
            pending--;
            if (r == 1 && c == 'R') {
                fprintf(stderr,
                        "docker flame record: %s is recorded in the background (pid %ld): "
                        "`docker flame ps` lists it, `docker flame stop %s` ends it\n",
                        a->in.v[i], (long)kids[i], a->in.v[i]);
                continue;
            }
            int status = 0;
            while (waitpid(kids[i], &status, 0) < 0 && errno == EINTR) {
            }
            int code = wait_code(status);
            exit_code = exit_code ? exit_code : code ? code : FLAME_EXIT_ERROR;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        /* Interrupted while it started: it is ours to end (SIGTERM: it removes its sidecar). */
        kill(kids[i], SIGTERM);
        int status;
        while (waitpid(kids[i], &status, 0) < 0 && errno == EINTR) {
        }
        close(fds[i]);
        fprintf(stderr, "docker flame record: %s: interrupted before it recorded: not started\n",
                a->in.v[i]);
        exit_code = FLAME_EXIT_INTERRUPTED;
    }
    return exit_code;
}

int flame_cmd_record(const ep_globals *g, int argc, char **argv)
{
    rec_args a = {.quiet = false};
    ct_args_default(&a.rec, CT_TOP);
    a.rec.duration_ms = 0; /* until stopped */
    a.rec.interval_ms = REC_WINDOW_MS;
    a.rec.frequency = REC_FREQUENCY;
    int rc =
        cli_parse("record", &cmd_record_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (rc >= 0)
        return rc;
    flame_err err = FLAME_ERR_INIT;
    if (stored_hide_password(&a.store, &err) < 0 || check_args(&a, &err) < 0)
        return cli_fail("record", &err);
    if (a.detach) {
        /* A detached recorder has no one to show its windows to: its log keeps the events. It
         * leaves the current directory (not to keep it busy), so every file path of the store
         * (--store or $DOCKER_FLAME_STORE: a path, sqlite://PATH, ?spool=, ?password_file=) is
         * made absolute first. */
        a.quiet = true;
        _cleanup_free_ char *abs = NULL;
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        const char *env = getenv("DOCKER_FLAME_STORE");
        const char *url = a.store ? a.store : env && *env ? env : NULL;
        if (url && (!cwd || store_url_absolute(url, cwd, &abs) < 0)) {
            flame_fail_errno(&err, FLAME_EXIT_ERROR, errno ? errno : ENOMEM,
                             "cannot make the store's paths absolute");
            return cli_fail("record", &err);
        }
        if (abs)
            a.store = abs;
        return record_detached(g, &a);
    }
    if (a.in.n == 1)
        return rec_run(g, &a, a.in.v[0], NULL);
    return record_fg(g, &a);
}
