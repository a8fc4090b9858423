/* Signals (SIGINT, SIGTERM, SIGHUP) and the docker CLI's plugin socket, seen by the main loop as
 * counters and a wake-up fd. Call sess_signals_install() once, early in main. */
#pragma once
#include <signal.h>
#include <stdbool.h>

#include "common/err.h"

int sess_signals_install(flame_err *err);
/* In a child after fork(): a signal pipe of its own, counters at zero, no plugin socket (a
 * recorder that outlives the CLI must not stop when the CLI closes it). */
int sess_signals_child_reset(flame_err *err);
/* Connect to $DOCKER_CLI_PLUGIN_SOCKET: the CLI closes it to ask us to stop (no terminal). */
void sess_plugin_socket_connect(void);
/* Has any SIGINT/SIGTERM or plugin-socket close arrived (setup phase: means abort)? */
bool sess_interrupted(void);
const volatile sig_atomic_t *sess_cancel_flag(void);
/* Signals and socket closes seen so far (to notice new ones). */
unsigned sess_event_count(void);

typedef struct sess_signals {
    unsigned sigint, sigterm, sock_closed;
} sess_signals;
void sess_signal_counts(sess_signals *out);
/* The main loop polls these: the self-pipe (readable after a signal or sess_wake()) and the
 * plugin socket (-1 when there is none). */
int sess_wake_fd(void);
int sess_plugin_sock_fd(void);
void sess_wake(void);       /* from another thread: wake the main loop */
void sess_drain_wake(void); /* empty the self-pipe after a wake-up */
