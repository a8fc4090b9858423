/* Attach-stream demultiplexer: a small state machine over arbitrary read boundaries. */
#include "plugin/engine/demux.h"

#include <stdlib.h>
#include <string.h>

void demux_init(demux *d, size_t max_line, demux_line_fn fn, void *ctx)
{
    memset(d, 0, sizeof *d);
    d->max_line = max_line ? max_line : DEMUX_MAX_LINE;
    d->fn = fn;
    d->ctx = ctx;
}

void demux_free(demux *d)
{
    free(d->lines[0].buf);
    free(d->lines[1].buf);
    memset(d, 0, sizeof *d);
}

static int emit(demux *d, int stream, flame_err *err)
{
    demux_line *l = &d->lines[stream - 1];
    int rc = 0;
    if (!l->overflow || stream == 2)
        rc = d->fn(d->ctx, stream, l->buf ? l->buf : "", l->len, err);
    l->len = 0;
    l->overflow = false;
    return rc;
}

static int append(demux *d, int stream, const char *p, size_t n, flame_err *err)
{
    demux_line *l = &d->lines[stream - 1];
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (!l->overflow) {
            size_t room = d->max_line - l->len;
            size_t copy = take < room ? take : room;
            if (take > room) {
                if (stream == 1)
                    return flame_fail(err, FLAME_EXIT_ERROR,
                                      "sidecar protocol error: a line longer than %zu bytes",
                                      d->max_line);
                l->overflow = true; /* stderr: keep the head, drop the rest of the line */
            }
            if (l->len + copy + 1 > l->cap) {
                size_t nc = l->cap ? l->cap : 256;
                while (nc < l->len + copy + 1)
                    nc *= 2;
                char *nb = realloc(l->buf, nc);
                if (!nb)
                    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                l->buf = nb;
                l->cap = nc;
            }
            memcpy(l->buf + l->len, p, copy);
            l->len += copy;
            l->buf[l->len] = 0;
        }
        if (!nl)
            break;
        if (emit(d, stream, err) < 0)
            return -1;
        p = nl + 1;
        n -= take + 1;
    }
    return 0;
}

int demux_feed(demux *d, const char *buf, size_t len, flame_err *err)
{
    while (len) {
        if (d->remaining == 0) {
            size_t need = 8 - d->hdr_len, take = len < need ? len : need;
            memcpy(d->hdr + d->hdr_len, buf, take);
            d->hdr_len += take;
            buf += take;
            len -= take;
            if (d->hdr_len < 8)
                return 0;
            d->hdr_len = 0;
            /* stdin (0) never comes from a container we do not feed; anything else means the
             * stream is not multiplexed at all (e.g. a Tty container). */
            if ((d->hdr[0] != 1 && d->hdr[0] != 2) || d->hdr[1] || d->hdr[2] || d->hdr[3])
                return flame_fail(err, FLAME_EXIT_ERROR,
                                  "sidecar stream: bad frame header %02x %02x %02x %02x", d->hdr[0],
                                  d->hdr[1], d->hdr[2], d->hdr[3]);
            d->stream = d->hdr[0];
            d->remaining = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 |
                           (uint32_t)d->hdr[6] << 8 | d->hdr[7];
            continue;
        }
        size_t take = len < d->remaining ? len : d->remaining;
        if (append(d, d->stream, buf, take, err) < 0)
            return -1;
        d->bytes[d->stream - 1] += take;
        d->remaining -= (uint32_t)take;
        buf += take;
        len -= take;
    }
    return 0;
}

int demux_finish(demux *d, flame_err *err)
{
    for (int s = 1; s <= 2; s++)
        if (d->lines[s - 1].len && emit(d, s, err) < 0)
            return -1;
    if (d->hdr_len || d->remaining)
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar stream cut in the middle of a frame");
    return 0;
}
