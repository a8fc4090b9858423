/* libFuzzer harness: the sidecar's parsers of /proc text the target controls — status
 * (sc_parse_status), maps (sc_maps_find_libjvm), a JDK release file (sc_parse_release), JVM
 * options (sc_flag_preserve_fp, NUL- and space-separated) — each fed the whole input in an
 * exact-size buffer, and the perf pipe-stream counter (sc_perfstream_feed) fed it in pieces. */
#include "fuzz/fuzz.h"

#include "sidecar/sidecar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = fuzz_exact(data, size);
    flame_err err = FLAME_ERR_INIT;

    sc_status st;
    memset(&st, 0x55, sizeof st);
    if (sc_parse_status(buf, size, &st, &err) == 0)
        FUZZ_ASSERT(memchr(st.name, '\0', sizeof st.name));

    char path[64];
    memset(path, 'x', sizeof path);
    if (sc_maps_find_libjvm(buf, size, path, sizeof path))
        FUZZ_ASSERT(memchr(path, '\0', sizeof path));
    char one[1] = {'x'};
    (void)sc_maps_find_libjvm(buf, size, one, sizeof one);

    char ver[8];
    memset(ver, 'x', sizeof ver);
    int major = sc_parse_release(buf, size, ver, sizeof ver);
    FUZZ_ASSERT(major >= -1);
    if (major >= 0)
        FUZZ_ASSERT(memchr(ver, '\0', sizeof ver));

    int fp = sc_flag_preserve_fp(buf, size, '\0', -1);
    FUZZ_ASSERT(fp >= -1 && fp <= 1);
    fp = sc_flag_preserve_fp(buf, size, ' ', fp);
    FUZZ_ASSERT(fp >= -1 && fp <= 1);

    /* perf's pipe-mode stream, split at a size taken from the first byte */
    sc_perfstream ps;
    memset(&ps, 0, sizeof ps);
    size_t step = size ? (size_t)data[0] % 61 + 1 : 1;
    for (size_t i = 0; i < size; i += step)
        sc_perfstream_feed(&ps, (const unsigned char *)buf + i, size - i < step ? size - i : step);
    FUZZ_ASSERT(ps.have <= sizeof ps.hdr);
    free(buf);
    return 0;
}
