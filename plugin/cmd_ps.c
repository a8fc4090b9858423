/* `docker flame ps` and `docker flame stop`: the background recordings of `docker flame record
 * --detach`, from their registry (plugin/recordings.h). No engine needed: a recording is known
 * by its lock, even while the engine it records from is down. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/clock.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/recordings.h"
#include "plugin/run/signals.h"
#include "plugin/inputs.h"

/* How long `stop` waits for a recorder to store its last window and remove its sidecar. */
#define STOP_WAIT_MS_DEFAULT 60000

static void when(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!ms || !localtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, cap, "-");
}

/* The last lines of an ended recording's log (read before ps forgets it): at most 2 KiB, control
 * bytes shown as '?'. The log is ours, but holds names that came from the container. */
static void print_log_tail(const char *id)
{
    char buf[2048];
    size_t n = recs_log_tail(id, buf, sizeof buf);
    /* the last 3 lines */
    size_t start = n, lines = 0;
    while (start > 0 && lines < 4)
        if (buf[--start] == '\n')
            lines++;
    if (buf[start] == '\n')
        start++;
    for (char *l = buf + start; *l;) {
        size_t len = strcspn(l, "\n");
        fputs("  | ", stdout);
        for (size_t i = 0; i < len; i++)
            putchar((unsigned char)l[i] < 0x20 || l[i] == 0x7f ? '?' : l[i]);
        putchar('\n');
        l += len + (l[len] == '\n');
    }
}

typedef struct ps_args {
    bool quiet, help;
} ps_args;

#define F(field, T) ARG_FIELD(ps_args, field, T)
// clang-format off
static const arg_spec ps_specs[] = {
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = F(quiet, bool),
     .help = "only the ids of the running recordings"},
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_ps_grammar = {.name = "docker flame ps", .specs = ps_specs,
                                  .nspecs = sizeof ps_specs / sizeof *ps_specs,
                                  .operands_off = ARGS_NO_OPERANDS};
// clang-format on
#undef F

static const char ps_head[] =
    "Usage:  docker flame ps [OPTIONS]\n"
    "\n"
    "List the background recordings (docker flame record --detach) of this user: the\n"
    "container, since when, how many windows and samples are stored, its state (recording,\n"
    "waiting for the container or its JVM, engine-down while the engine does not answer), its\n"
    "pid and the store. A recording that has ended by itself (its container was removed, a\n"
    "failure) or was killed is listed once more, with why and the end of its log.\n"
    "\n"
    "Options:\n";
static const char ps_tail[] =
    "\nExit status: 0 ok, 1 the list cannot be read, 2 bad command line.\n";

int flame_cmd_ps(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    ps_args a = {0};
    int rc = cli_parse("ps", &cmd_ps_grammar, argc, argv, &a, &a.help, ps_head, ps_tail);
    if (rc >= 0)
        return rc;
    flame_err err = FLAME_ERR_INIT;
    rec_entry *v = NULL;
    size_t n = 0;
    /* Plain ps shows ended recordings once, then forgets them; -q shows only running ones and
     * leaves the others for a plain ps (or stop) to show. */
    if (recs_list(&v, &n, !a.quiet, &err) < 0)
        return cli_fail("ps", &err);
    if (!a.quiet)
        printf("%-16s  %-20s  %-19s  %7s  %9s  %-11s  %7s  %s\n", "RECORDING", "CONTAINER", "SINCE",
               "WINDOWS", "SAMPLES", "STATE", "PID", "STORE");
    for (size_t i = 0; i < n; i++) {
        const rec_entry *e = &v[i];
        if (a.quiet) {
            if (e->pid)
                printf("%s\n", e->id);
            continue;
        }
        char since[32];
        when(e->since_ms, since, sizeof since);
        const char *state = e->pid ? e->state : !strcmp(e->state, "ended") ? "ended" : "killed";
        char w[32], sm[32], pid[24];
        snprintf(pid, sizeof pid, e->pid >= 0 ? "%ld" : "?", e->pid); /* ?: another namespace */
        printf("%-16s  %-20.64s  %-19s  %7s  %9s  %-11s  %7s  %s\n", e->id,
               e->name[0] ? e->name : e->arg, since, grouped((double)e->windows, w, sizeof w),
               grouped((double)e->samples, sm, sizeof sm), state, pid, e->store);
        if (!e->pid) {
            printf("  %s\n", !strcmp(e->state, "ended")
                                 ? e->reason
                                 : "its recorder was killed: `docker flame gc` removes its "
                                   "sidecar");
            if (e->exit_code || strcmp(e->state, "ended") != 0)
                print_log_tail(e->id);
        }
    }
    free(v);
    return 0;
}

typedef struct stop_args {
    bool all, help;
    uint64_t timeout_ms;
    args_operands in;
} stop_args;

#define F(field, T) ARG_FIELD(stop_args, field, T)
// clang-format off
static const arg_spec stop_specs[] = {
    {.lng = "all", .shrt = 'a', .kind = ARG_FLAG, .off = F(all, bool),
     .help = "stop every background recording"},
    {.lng = "timeout", .shrt = 't', .kind = ARG_DURATION, .off = F(timeout_ms, uint64_t),
     .meta = "DURATION", .help = "how long to wait for each to end (default 60s)",
     .lo = 1000, .hi = 3600000},
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_stop_grammar = CLI_VERB("docker flame stop", stop_specs, F(in, args_operands));
// clang-format on
#undef F

static const char stop_head[] =
    "Usage:  docker flame stop [OPTIONS] CONTAINER|RECORDING...\n"
    "\n"
    "End background recordings (docker flame record --detach): each stores the window it is\n"
    "in, removes its sidecar, and ends; this waits for that and prints what was stored. A\n"
    "recording is named by its container (as given to record, its name, or an id prefix) or by\n"
    "its id (docker flame ps).\n"
    "\n"
    "Options:\n";
static const char stop_tail[] = "\nExit status: 0 stopped, 1 one did not end in time, 2 bad "
                                "command line, 3 no such recording.\n";

/* The entry by id, re-read (its recorder rewrites it); 0 when found. */
static int find(const char *id, rec_entry *out)
{
    flame_err err = FLAME_ERR_INIT;
    rec_entry *v = NULL;
    size_t n = 0;
    int rc = -1;
    if (recs_list(&v, &n, false, &err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].id, id)) {
            *out = v[i];
            rc = 0;
        }
    free(v);
    return rc;
}

/* SIGINT to the recorder (its Ctrl-C: it stores the window it is in). The pid is the lock
 * holder's; between reading it and signalling, the recorder could end and its pid be reused: so
 * the process is pinned first (pidfd), the lock looked at again, and the pinned process signalled
 * only if it still holds the lock. */
static int signal_recorder(const rec_entry *e)
{
    int pfd = (int)syscall(SYS_pidfd_open, (pid_t)e->pid, 0);
    if (pfd < 0)
        return errno == ESRCH ? 0 : -1; /* already gone: nothing to stop */
    rec_entry now;
    int rc = 0;
    if (find(e->id, &now) == 0 && now.pid == e->pid)
        rc = (int)syscall(SYS_pidfd_send_signal, pfd, SIGINT, NULL, 0);
    int saved = errno;
    close(pfd);
    errno = saved;
    return rc < 0 && errno != ESRCH ? -1 : 0;
}

/* Stop one recording, wait until its lock is free, report its last state, forget it. */
static int stop_one(const rec_entry *e, uint64_t timeout_ms)
{
    if (e->pid == 0)
        return 0;
    if (e->pid < 0) {
        fprintf(stderr,
                "docker flame stop: %s: its recorder runs in another PID namespace (a container "
                "sharing this home directory): stop it from there\n",
                e->name[0] ? e->name : e->arg);
        return FLAME_EXIT_ERROR;
    }
    if (signal_recorder(e) < 0) {
        fprintf(stderr, "docker flame stop: %s: cannot signal its recorder (pid %ld): %s\n",
                e->name[0] ? e->name : e->arg, e->pid, strerror(errno));
        return FLAME_EXIT_ERROR;
    }
    int64_t deadline = mono_ms() + (int64_t)timeout_ms;
    rec_entry last = *e;
    while (mono_ms() < deadline && !sess_interrupted()) {
        rec_entry now;
        if (find(e->id, &now) < 0) /* gone from the list: it ended and someone read it */
            break;
        last = now;
        if (now.pid == 0)
            break;
        struct pollfd pf = {.fd = sess_wake_fd(), .events = POLLIN};
        if (poll(&pf, 1, 100) > 0)
            sess_drain_wake();
    }
    const char *who = last.name[0] ? last.name : last.arg;
    if (last.pid != 0) {
        fprintf(stderr,
                "docker flame stop: %s: its recorder (pid %ld) did not end within %llu s; its "
                "log: %s\n",
                who, last.pid, (unsigned long long)(timeout_ms / 1000), last.log);
        return FLAME_EXIT_ERROR;
    }
    recs_forget(last.id);
    /* a report, on stderr like show's and prune's; stdout stays for data (ps's table) */
    char w[32], sm[32];
    fprintf(stderr,
            "docker flame stop: stopped the recording of %s: %s window%s, %s samples in %s\n", who,
            grouped((double)last.windows, w, sizeof w), last.windows == 1 ? "" : "s",
            grouped((double)last.samples, sm, sizeof sm), last.store);
    return 0;
}

int flame_cmd_stop(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    stop_args a = {.timeout_ms = STOP_WAIT_MS_DEFAULT};
    int rc = cli_parse("stop", &cmd_stop_grammar, argc, argv, &a, &a.help, stop_head, stop_tail);
    if (rc >= 0)
        return rc;
    flame_err err = FLAME_ERR_INIT;
    if (!a.all && a.in.n == 0) {
        args_error(&cmd_stop_grammar, &err,
                   "which recording? give a container, a recording id, or --all");
        return cli_fail("stop", &err);
    }
    rec_entry *v = NULL;
    size_t n = 0;
    if (recs_list(&v, &n, false, &err) < 0)
        return cli_fail("stop", &err);
    int exit_code = 0;
    bool *hit = calloc(n ? n : 1, sizeof *hit);
    if (!hit) {
        free(v);
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        return cli_fail("stop", &err);
    }
    for (int k = 0; k < a.in.n; k++) {
        bool any = false;
        for (size_t i = 0; i < n; i++)
            if (v[i].pid && recs_match(&v[i], a.in.v[k]))
                hit[i] = any = true;
        if (!any) {
            fprintf(stderr,
                    "docker flame stop: no background recording of %s (docker flame ps lists "
                    "them)\n",
                    a.in.v[k]);
            exit_code = FLAME_EXIT_NO_CONTAINER;
        }
    }
    for (size_t i = 0; i < n; i++)
        if ((a.all || hit[i]) && v[i].pid) {
            int r = stop_one(&v[i], a.timeout_ms);
            if (r && !exit_code)
                exit_code = r;
        }
    if (a.all && n == 0)
        fprintf(stderr, "docker flame stop: no background recording\n");
    free(hit);
    free(v);
    return exit_code;
}
