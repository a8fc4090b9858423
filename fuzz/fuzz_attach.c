/* libFuzzer harness: the answer a (hostile) JVM attach listener sends -> the sidecar's reply
 * parser (sc_attach_parse_reply), for `load` and for other commands, with tiny and normal
 * message buffers. The message excerpt must stay NUL-terminated and printable. */
#include "fuzz/fuzz.h"

#include "sidecar/sidecar.h"

static void check(const char *buf, size_t len, bool is_load, size_t cap)
{
    char msg[256];
    memset(msg, 'x', sizeof msg);
    int status = 12345;
    int rc = sc_attach_parse_reply(buf, len, is_load, &status, msg, cap);
    FUZZ_ASSERT(rc >= -1 && rc <= 1);
    if (cap) {
        const char *z = memchr(msg, '\0', cap);
        FUZZ_ASSERT(z);
        for (const char *p = msg; p < z; p++)
            FUZZ_ASSERT((unsigned char)*p >= 0x20 && *p != 0x7f);
    }
    for (size_t i = cap; i < sizeof msg; i++)
        FUZZ_ASSERT(msg[i] == 'x'); /* nothing written past cap */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > SC_ATTACH_REPLY_MAX)
        return 0;
    char *buf = fuzz_exact(data, size);
    check(buf, size, true, 200);
    check(buf, size, false, 200);
    check(buf, size, true, 1);
    check(buf, size, false, 8);
    free(buf);
    return 0;
}
