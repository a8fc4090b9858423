/* flame_err helpers: fill, errno-append, wrap with context. */
#include "common/err.h"

#include <stdio.h>
#include <string.h>

static void set_msg(flame_err *err, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int flame_fail(flame_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        set_msg(err, fmt, ap);
        va_end(ap);
        err->code = code ? code : FLAME_EXIT_ERROR;
    }
    return -1;
}

int flame_fail_errno(flame_err *err, int code, int errnum, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        set_msg(err, fmt, ap);
        va_end(ap);
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, ": %s", strerror(errnum));
        err->code = code ? code : FLAME_EXIT_ERROR;
    }
    return -1;
}

int flame_wrap(flame_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char ctx[256], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Both parts are bounded so the result always fits; the tail of a very long message is cut. */
    snprintf(err->msg, sizeof err->msg, "%.255s: %.760s", ctx, old);
    if (!err->code)
        err->code = FLAME_EXIT_ERROR;
    return -1;
}
