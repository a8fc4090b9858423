/* libFuzzer harness: the engine's attach stream of a sidecar (8-byte frame headers, stdout and
 * stderr interleaved) -> demux (plugin/engine/demux.h) -> stdout lines into the protocol parser
 * (plugin/run/proto.h), as the plugin wires them. The first byte picks the read size (reads split
 * headers and lines anywhere) and a small line bound (so the overflow paths run). */
#include "fuzz/fuzz.h"

#include "plugin/engine/demux.h"
#include "plugin/run/proto.h"

typedef struct ctx {
    proto pr;
    bool proto_failed;
    size_t max_line;
} ctx;

static int on_line(void *ud, int stream, const char *line, size_t len, flame_err *err)
{
    ctx *c = ud;
    FUZZ_ASSERT(stream == 1 || stream == 2);
    FUZZ_ASSERT(len <= c->max_line);
    FUZZ_ASSERT(!memchr(line, '\n', len));
    if (stream == 1 && !c->proto_failed && proto_line(&c->pr, line, len, err) < 0)
        c->proto_failed = true; /* the plugin stops here; keep demultiplexing to fuzz demux */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)(data[0] & 31) + 1;
    ctx c = {.max_line = (data[0] & 32) ? 64 : DEMUX_MAX_LINE};
    data++, size--;
    proto_init(&c.pr);
    demux d;
    demux_init(&d, c.max_line, on_line, &c);
    char *buf = fuzz_exact(data, size);
    flame_err err = FLAME_ERR_INIT;
    int rc = 0;
    for (size_t i = 0; i < size && rc == 0; i += step)
        rc = demux_feed(&d, buf + i, size - i < step ? size - i : step, &err);
    if (rc == 0)
        (void)demux_finish(&d, &err);
    FUZZ_ASSERT(d.lines[0].len <= c.max_line && d.lines[1].len <= c.max_line);
    demux_free(&d);
    proto_clear(&c.pr);
    free(buf);
    return 0;
}
