/* Demultiplexing the engine's attach stream (Tty=false): frames of an 8-byte header
 * [stream, 0, 0, 0, size big-endian 32] followed by `size` bytes, stream 1 = stdout, 2 = stderr.
 * Headers and lines may be split anywhere across reads; lines are reassembled per stream and
 * bounded: an oversized stdout line is a protocol error, an oversized stderr line is cut. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define DEMUX_MAX_LINE (1u << 20) /* docs/PROTOCOL.md: payloads are at most 1 MiB */

/* One complete line (without '\n'), stream 1 or 2. Return <0 to stop (err set). */
typedef int (*demux_line_fn)(void *ctx, int stream, const char *line, size_t len, flame_err *err);

typedef struct demux_line {
    char *buf;
    size_t len, cap;
    bool overflow; /* dropping bytes until the next '\n' */
} demux_line;

typedef struct demux {
    uint8_t hdr[8];
    size_t hdr_len;     /* header bytes collected so far */
    uint32_t remaining; /* payload bytes left in the current frame */
    int stream;
    size_t max_line;
    demux_line lines[2]; /* stdout, stderr */
    demux_line_fn fn;
    void *ctx;
    unsigned long long bytes[2];
} demux;

void demux_init(demux *d, size_t max_line, demux_line_fn fn, void *ctx);
void demux_free(demux *d);
int demux_feed(demux *d, const char *buf, size_t len, flame_err *err);
/* End of stream: a partial frame is an error; unterminated last lines are delivered. */
int demux_finish(demux *d, flame_err *err);
