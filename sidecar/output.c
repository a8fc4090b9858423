/* The sidecar's only stdout: the result stream of common/contract.h, one line per call, flushed
 * at once (the plugin shows progress as lines arrive). Payloads that come from the target are
 * escaped by the contract's writers; no payload can start a second line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/session.h"

void sc_out(enum ct_tag tag, const char *payload)
{
    /* the longest payloads are F lines, bounded by the folder (< CT_LINE_MAX) */
    size_t cap = (payload ? strlen(payload) : 0) + 4;
    char small[8192];
    char *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf)
        return;
    if (ct_line_format(buf, cap, tag, payload) >= 0) {
        fputs(buf, stdout);
        fputc('\n', stdout);
        /* a profile's F lines go out in 64 KiB blocks; every other line at once */
        if (tag != CT_TAG_FOLDED && tag != CT_TAG_MODE)
            fflush(stdout);
    }
    if (buf != small)
        free(buf);
}

void sc_out_mode(enum ct_mode m, uint64_t count0, const char *stack, size_t len, uint64_t value)
{
    if (m <= CT_MODE_CPU || m >= CT_MODE_COUNT || len == 0 || len > CT_LINE_MAX - 64)
        return;
    const char *name = ct_mode(m)->name;
    size_t cap = len + strlen(name) + 48;
    char *b = malloc(cap);
    if (!b)
        return;
    int h = snprintf(b, cap, "%s %llu ", name, (unsigned long long)count0);
    memcpy(b + h, stack, len);
    /* a space inside the stack is fine (the count is after the last one); a NUL would cut the
     * line short, and ct_line_format() turns control bytes into '?' */
    for (size_t i = 0; i < len; i++)
        if (!b[h + i])
            b[h + i] = '?';
    snprintf(b + h + len, cap - (size_t)h - len, " %llu", (unsigned long long)value);
    sc_out(CT_TAG_MODE, b);
    free(b);
}

void sc_warn(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sc_out(CT_TAG_WARNING, buf);
}

int sc_fail(flame_err *err, enum ct_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = ct_error_exit(code);
    err->detail = (int)code + 1;
    return -1;
}

void sc_out_error(const flame_err *err)
{
    enum ct_error code = err->detail > 0 && err->detail <= CT_ERR_COUNT
                             ? (enum ct_error)(err->detail - 1)
                             : CT_ERR_INTERNAL;
    char buf[1200];
    ct_format_error(buf, sizeof buf, code, err->msg);
    sc_out(CT_TAG_ERROR, buf);
}

void sc_out_jvm(const sc_jvm *j)
{
    ct_jvm c = {.pid = (uint32_t)j->st.pid,
                .nspid = (uint32_t)j->st.nspid,
                .uid = (uint32_t)j->st.uid,
                .gid = (uint32_t)j->st.gid,
                .preserve_fp = j->preserve_fp,
                .attach = j->attach,
                .inject = j->inject,
                .attach_ms = (uint64_t)(j->attach_ms > 0 ? j->attach_ms : 0)};
    snprintf(c.cmdline, sizeof c.cmdline, "%s", j->cmdline);
    snprintf(c.java_version, sizeof c.java_version, "%s", j->java_version);
    snprintf(c.reason, sizeof c.reason, "%s", j->reason);
    snprintf(c.container, sizeof c.container, "%s", j->container);
    c.refused = j->refused;
    snprintf(c.refused_why, sizeof c.refused_why, "%s", j->refused_why);
    char buf[8192];
    if (ct_format_jvm(buf, sizeof buf, &c) >= 0)
        sc_out(CT_TAG_JVM, buf);
}

void sc_out_progress(uint64_t elapsed_ms, uint64_t duration_ms, uint64_t samples, int jvms)
{
    ct_progress p = {elapsed_ms, duration_ms, samples, (uint32_t)jvms};
    char buf[256];
    if (ct_format_progress(buf, sizeof buf, &p) >= 0)
        sc_out(CT_TAG_PROGRESS, buf);
}
