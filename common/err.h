/* Error values that travel up to main(): the crun pattern. A function that can fail returns
 * int (0 ok, <0 error) and takes `flame_err *err` last; it fills err once, and each caller may
 * prefix context with flame_wrap(). Only main() prints err->msg and exits with err->code. */
#pragma once
#include <stdarg.h>

/* Exit codes, documented in README.md ("Exit codes"). Keep the two in step. */
enum flame_exit {
    FLAME_EXIT_OK = 0,
    FLAME_EXIT_ERROR = 1,        /* bad input, I/O error, anything not below */
    FLAME_EXIT_USAGE = 2,        /* bad command line */
    FLAME_EXIT_NO_CONTAINER = 3, /* no such container, or it is not running */
    FLAME_EXIT_NO_JVM = 4,       /* no JVM in the container (or not the --pid asked for) */
    FLAME_EXIT_ATTACH = 5,       /* the JVM refused attach / agent could not be loaded */
    FLAME_EXIT_PERF = 6,         /* perf (or a --mode) not permitted or not supported */
    FLAME_EXIT_STORE = 7,        /* profile store unusable: unreachable, corrupt, newer version */
    FLAME_EXIT_EMPTY = 8,        /* nothing stored for that container / time range */
    FLAME_EXIT_ENGINE = 125,     /* engine unreachable, API error, sidecar image unavailable */
    FLAME_EXIT_INTERRUPTED = 130 /* aborted by a second Ctrl-C / SIGTERM */
};

typedef struct flame_err {
    int code;       /* an enum flame_exit value; 0 while no error was set */
    char msg[1024]; /* one line, no trailing newline */
    int detail;     /* optional finer cause a module may set (the sidecar: CT_ERR_* + 1); 0 none */
} flame_err;

#define FLAME_ERR_INIT                                                                             \
    {                                                                                              \
        0, {0}, 0                                                                                  \
    }

/* Set err (if not NULL) and return -1. */
int flame_fail(flame_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, appending ": <strerror(errnum)>". */
int flame_fail_errno(flame_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prefix "<context>: " to the message already in err; returns -1. */
int flame_wrap(flame_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
