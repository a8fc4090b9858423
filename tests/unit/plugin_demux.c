/* plugin/engine/demux.c: frames split anywhere, several lines per frame, stderr vs stdout,
 * oversized lines, bad headers, truncated streams. */
#include <stdlib.h>
#include <string.h>

#include "plugin/engine/demux.h"
#include "tests/unit/tap.h"

typedef struct got {
    char out[4096], err[4096];
    int nout, nerr;
} got;

static int collect(void *ctx, int stream, const char *line, size_t len, flame_err *e)
{
    (void)e;
    got *g = ctx;
    char *b = stream == 1 ? g->out : g->err;
    size_t l = strlen(b);
    snprintf(b + l, 4096 - l, "[%.*s]", (int)len, line);
    if (stream == 1)
        g->nout++;
    else
        g->nerr++;
    return 0;
}

static size_t frame(unsigned char *buf, int stream, const char *payload)
{
    size_t n = strlen(payload);
    buf[0] = (unsigned char)stream;
    buf[1] = buf[2] = buf[3] = 0;
    buf[4] = (unsigned char)(n >> 24);
    buf[5] = (unsigned char)(n >> 16);
    buf[6] = (unsigned char)(n >> 8);
    buf[7] = (unsigned char)n;
    memcpy(buf + 8, payload, n);
    return n + 8;
}

int main(void)
{
    unsigned char buf[8192];
    size_t n = 0;
    n += frame(buf + n, 1, "V 1\nJ {\"pid\":1}\nP {\"elap");
    n += frame(buf + n, 2, "diag one\n");
    n += frame(buf + n, 1, "sed_ms\":5}\n");
    n += frame(buf + n, 1, "");
    n += frame(buf + n, 1, "D\n");

    /* every split position, byte by byte too */
    for (size_t step = 1; step <= n; step = step < 16 ? step + 1 : step * 2) {
        got g = {{0}, {0}, 0, 0};
        demux d;
        flame_err err = FLAME_ERR_INIT;
        demux_init(&d, 0, collect, &g);
        int rc = 0;
        for (size_t off = 0; off < n && rc == 0; off += step)
            rc = demux_feed(&d, (const char *)buf + off, off + step <= n ? step : n - off, &err);
        if (rc == 0)
            rc = demux_finish(&d, &err);
        if (step == 1 || step == 3 || step == 7 || step >= n) {
            ok(rc == 0, "feed in %zu-byte pieces", step);
            is_str(g.out, "[V 1][J {\"pid\":1}][P {\"elapsed_ms\":5}][D]",
                   "stdout lines reassembled (step %zu)", step);
            is_str(g.err, "[diag one]", "stderr separate (step %zu)", step);
        } else if (rc != 0 || strcmp(g.out, "[V 1][J {\"pid\":1}][P {\"elapsed_ms\":5}][D]") != 0) {
            ok(0, "step %zu", step);
        }
        demux_free(&d);
    }

    /* oversized stdout line: protocol error; oversized stderr line: cut */
    {
        got g = {{0}, {0}, 0, 0};
        demux d;
        flame_err err = FLAME_ERR_INIT;
        demux_init(&d, 16, collect, &g);
        size_t m = frame(buf, 2, "0123456789abcdefghijXYZ\nok\n");
        ok(demux_feed(&d, (const char *)buf, m, &err) == 0, "long stderr line is not an error");
        is_str(g.err, "[0123456789abcdef][ok]", "long stderr line cut at the bound");
        m = frame(buf, 1, "0123456789abcdefghij\n");
        ok(demux_feed(&d, (const char *)buf, m, &err) < 0 && strstr(err.msg, "longer than 16"),
           "long stdout line is a protocol error");
        demux_free(&d);
    }
    /* a line split over many frames still obeys the bound */
    {
        got g = {{0}, {0}, 0, 0};
        demux d;
        flame_err err = FLAME_ERR_INIT;
        demux_init(&d, 16, collect, &g);
        int rc = 0;
        for (int i = 0; i < 10 && rc == 0; i++) {
            size_t m = frame(buf, 1, "abcd");
            rc = demux_feed(&d, (const char *)buf, m, &err);
        }
        ok(rc < 0, "bound holds across frames");
        demux_free(&d);
    }
    /* bad header (a Tty stream or garbage) */
    {
        got g = {{0}, {0}, 0, 0};
        demux d;
        flame_err err = FLAME_ERR_INIT;
        demux_init(&d, 0, collect, &g);
        ok(demux_feed(&d, "V 1\nD\nxx", 8, &err) < 0 && strstr(err.msg, "bad frame header"),
           "raw text is rejected as a bad frame header");
        demux_free(&d);
        demux_init(&d, 0, collect, &g);
        unsigned char h[8] = {0, 0, 0, 0, 0, 0, 0, 1};
        ok(demux_feed(&d, (const char *)h, 8, &err) < 0, "stream 0 (stdin) is rejected");
        demux_free(&d);
    }
    /* truncated: cut inside a header and inside a payload; last line without newline */
    {
        got g = {{0}, {0}, 0, 0};
        demux d;
        flame_err err = FLAME_ERR_INIT;
        demux_init(&d, 0, collect, &g);
        size_t m = frame(buf, 1, "D");
        ok(demux_feed(&d, (const char *)buf, m, &err) == 0 && demux_finish(&d, &err) == 0,
           "complete frame without newline");
        is_str(g.out, "[D]", "unterminated last line delivered at the end");
        demux_free(&d);
        demux_init(&d, 0, collect, &g);
        m = frame(buf, 1, "abcdef");
        demux_feed(&d, (const char *)buf, m - 2, &err);
        ok(demux_finish(&d, &err) < 0 && strstr(err.msg, "cut"), "payload cut short is an error");
        demux_free(&d);
        demux_init(&d, 0, collect, &g);
        demux_feed(&d, (const char *)buf, 5, &err);
        ok(demux_finish(&d, &err) < 0, "header cut short is an error");
        demux_free(&d);
    }
    /* a callback error stops the feed */
    return tap_done();
}
