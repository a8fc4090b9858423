/* libFuzzer harness: the sidecar's result stream (docs/PROTOCOL.md) line by line -> proto_line
 * (plugin/run/proto.h), each line in an exact-size buffer (the header promises nothing beyond len).
 * Stops at the first error like the plugin does, then uses what was parsed the way the plugin
 * prints it (proto_sanitize, ct_error_exit). */
#include "fuzz/fuzz.h"

#include "plugin/run/proto.h"

typedef struct ctx {
    proto pr;
    bool failed;
} ctx;

static void feed(void *ud, const char *line, size_t len)
{
    ctx *c = ud;
    flame_err err = FLAME_ERR_INIT;
    if (!c->failed && proto_line(&c->pr, line, len, &err) < 0)
        c->failed = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ctx c = {.failed = false};
    proto_init(&c.pr);
    fuzz_lines(data, size, feed, &c);
    char out[128];
    for (size_t i = 0; i < c.pr.nwarn; i++) {
        proto_sanitize(c.pr.warnings[i], out, sizeof out);
        FUZZ_ASSERT(strlen(out) < sizeof out);
    }
    if (c.pr.err_text)
        proto_sanitize(c.pr.err_text, out, sizeof out);
    FUZZ_ASSERT(!c.pr.failed || ct_error_exit(c.pr.err) > 0);
    FUZZ_ASSERT(c.pr.njvms <= PROTO_MAX_JVMS);
    proto_clear(&c.pr);
    return 0;
}
