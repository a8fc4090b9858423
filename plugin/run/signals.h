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
/* The main loop polls these: the self-pipe (readable after a signal or sig_wake()) and the
 * plugin socket (-1 when there is none). */
int sig_wake_fd(void);
int sig_plugin_sock_fd(void);
void sig_wake(void);       /* from another thread: wake the main loop */
void sig_drain_wake(void); /* empty the self-pipe after a wake-up */
