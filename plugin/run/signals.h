/* Signals (SIGINT, SIGTERM, SIGHUP) and the docker CLI's plugin socket, seen by the main loop as
 * counters and a wake-up fd. Call sig_install() once, early in main. */
#pragma once
#include <signal.h>
#include <stdbool.h>

#include "common/err.h"

int sig_install(flame_err *err);
/* In a child after fork(): a signal pipe of its own, counters at zero, no plugin socket (a
 * recorder that outlives the CLI must not stop when the CLI closes it). */
int sig_child_reset(flame_err *err);
/* Connect to $DOCKER_CLI_PLUGIN_SOCKET: the CLI closes it to ask us to stop (no terminal). */
void sig_plugin_socket_connect(void);
/* Has any SIGINT/SIGTERM or plugin-socket close arrived (setup phase: means abort)? */
bool sig_interrupted(void);
const volatile sig_atomic_t *sig_cancel_flag(void);
/* Signals and socket closes seen so far (to notice new ones). */
unsigned sig_event_count(void);

typedef struct sig_counts {
    unsigned sigint, sigterm, sock_closed;
} sig_counts;
void sig_get_counts(sig_counts *out);
/* One Ctrl-C may reach us twice: the kernel's SIGINT (a terminal's process group, or a script
 * that signals the plugin) and the CLI closing its plugin socket (docker CLI 28 without a
 * terminal; a CLI may do both). The two halves of one Ctrl-C can be far apart on a loaded
 * machine (the CLI is a Go process that must be scheduled first: measured > 0.25 s), while a
 * user's second Ctrl-C comes as the same kind as the first. So: a SIGINT and a socket close
 * within SIG_CTRLC_PAIR_S of each other are one Ctrl-C; any two events within
 * SIG_CTRLC_SAME_S are one; every other event is a new Ctrl-C. The socket closes once. */
#define SIG_CTRLC_SAME_S 0.25
#define SIG_CTRLC_PAIR_S 3.0
typedef struct sig_ctrlc {
    unsigned seen_int, seen_sock; /* the counters at the last step */
    double last;                  /* the last event's time (-1e9: none yet) */
    int open_kind; /* 1 SIGINT, 2 socket: the last Ctrl-C, still without its other half */
    double open_at;
} sig_ctrlc;
#define SIG_CTRLC_INIT                                                                             \
    {                                                                                              \
        .last = -1e9                                                                               \
    }
/* The new Ctrl-Cs that the counters (sig_counts.sigint, .sock_closed) make at time now (s). */
unsigned sig_ctrlc_step(sig_ctrlc *c, unsigned sigint, unsigned sock_closed, double now);

/* The main loop polls these: the self-pipe (readable after a signal or sig_wake()) and the
 * plugin socket (-1 when there is none). */
int sig_wake_fd(void);
int sig_plugin_sock_fd(void);
void sig_wake(void);       /* from another thread: wake the main loop */
void sig_drain_wake(void); /* empty the self-pipe after a wake-up */
