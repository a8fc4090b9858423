/* Signals and the docker CLI's plugin socket: handlers only count and wake the main loop through
 * a self-pipe (the only state a handler may touch is global). First Ctrl-C = stop early and still
 * render, second or SIGTERM = abort (plugin/run/session.c decides what they mean). */
#include "plugin/run/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/err.h"

static volatile sig_atomic_t g_sigint, g_sigterm, g_sock_closed, g_any;
static int g_pipe[2] = {-1, -1};
static int g_plugin_sock = -1;

static void check_plugin_socket(void);

static void on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGINT)
        g_sigint++;
    else
        g_sigterm++;
    g_any = 1;
    if (g_pipe[1] >= 0) {
        ssize_t w = write(g_pipe[1], "s", 1);
        (void)w;
    }
    errno = saved;
}

int sig_install(flame_err *err)
{
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* A closed pipe on stdout/stderr must not kill us before the sidecar is removed. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int sig_child_reset(flame_err *err)
{
    /* The pipe is shared with the parent after fork(): a wake-up written by one would be read
     * (and lost) by the other. The plugin socket is the CLI's bond with the parent only. */
    if (g_pipe[0] >= 0)
        close(g_pipe[0]);
    if (g_pipe[1] >= 0)
        close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
    if (g_plugin_sock >= 0)
        close(g_plugin_sock);
    g_plugin_sock = -1;
    g_sigint = g_sigterm = g_sock_closed = g_any = 0;
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    return 0;
}

void sig_plugin_socket_connect(void)
{
    const char *name = getenv("DOCKER_CLI_PLUGIN_SOCKET");
    if (!name || !*name)
        return;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n >= sizeof sa.sun_path)
        return;
    memcpy(sa.sun_path, name, n);
    /* "@name" is an abstract socket (Linux): a leading NUL in sun_path, no trailing one. */
    if (name[0] == '@')
        sa.sun_path[0] = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
        close(fd);
        return;
    }
    g_plugin_sock = fd;
}

bool sig_interrupted(void)
{
    return g_any != 0;
}

const volatile sig_atomic_t *sig_cancel_flag(void)
{
    return &g_any;
}

unsigned sig_event_count(void)
{
    check_plugin_socket();
    return (unsigned)(g_sigint + g_sigterm + g_sock_closed);
}

/* The CLI closes its end when the user interrupts it (or when it dies). */
static void check_plugin_socket(void)
{
    if (g_plugin_sock < 0)
        return;
    char buf[64];
    ssize_t r = recv(g_plugin_sock, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close(g_plugin_sock);
        g_plugin_sock = -1;
        g_sock_closed++;
        g_any = 1;
    }
}

void sig_get_counts(sig_counts *out)
{
    check_plugin_socket();
    out->sigint = (unsigned)g_sigint;
    out->sigterm = (unsigned)g_sigterm;
    out->sock_closed = (unsigned)g_sock_closed;
}

int sig_wake_fd(void)
{
    return g_pipe[0];
}

int sig_plugin_sock_fd(void)
{
    return g_plugin_sock;
}

void sig_wake(void)
{
    if (g_pipe[1] >= 0) {
        ssize_t w = write(g_pipe[1], "t", 1); /* a full pipe already wakes the loop */
        (void)w;
    }
}

void sig_drain_wake(void)
{
    char buf[64];
    while (read(g_pipe[0], buf, sizeof buf) > 0) {
    }
}

unsigned sig_ctrlc_step(sig_ctrlc *c, unsigned sigint, unsigned sock_closed, double now)
{
    bool got[3] = {false, sigint != c->seen_int, sock_closed != c->seen_sock};
    c->seen_int = sigint;
    c->seen_sock = sock_closed;
    unsigned n = 0;
    for (int k = 1; k <= 2; k++) {
        if (!got[k])
            continue;
        bool same = now - c->last < SIG_CTRLC_SAME_S;
        bool half = c->open_kind && c->open_kind != k && now - c->open_at < SIG_CTRLC_PAIR_S;
        c->last = now;
        if (same || half) {
            if (c->open_kind != k)
                c->open_kind = 0; /* paired: the next event is a Ctrl-C of its own */
            continue;
        }
        n++;
        c->open_kind = k;
        c->open_at = now;
    }
    return n;
}
