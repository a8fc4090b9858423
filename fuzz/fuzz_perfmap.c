/* libFuzzer harness: a perf map file as the target container wrote it -> the sidecar's
 * sanitizer (sc_map_sanitize). Checks what comes out: every line "<hex> <hex> <name>" with a
 * size in (0, 1 GiB], printable names (no control bytes), no more lines than went in. */
#include "fuzz/fuzz.h"

#include "sidecar/sidecar.h"

static bool hex_field(const char **p, const char *end)
{
    const char *b = *p;
    if (end - *p > 2 && (*p)[0] == '0' && ((*p)[1] == 'x' || (*p)[1] == 'X'))
        *p += 2, b = *p;
    while (*p < end &&
           ((**p >= '0' && **p <= '9') || (**p >= 'a' && **p <= 'f') || (**p >= 'A' && **p <= 'F')))
        (*p)++;
    return *p > b;
}

static void check_output(const char *s, size_t n, unsigned long long lines_in)
{
    unsigned long long lines = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        FUZZ_ASSERT(nl); /* every line terminated */
        const char *p = s + i, *end = nl;
        FUZZ_ASSERT(hex_field(&p, end) && p < end && *p++ == ' ');
        const char *sz = p;
        FUZZ_ASSERT(hex_field(&p, end) && p < end && *p++ == ' ');
        unsigned long long size = strtoull(sz, NULL, 16);
        FUZZ_ASSERT(size > 0 && size <= (1ull << 30));
        for (; p < end; p++)
            FUZZ_ASSERT((unsigned char)*p >= 0x20 && *p != 0x7f);
        lines++;
        i = (size_t)(nl - s) + 1;
    }
    FUZZ_ASSERT(lines <= lines_in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = fuzz_exact(data, size);
    char *out = NULL;
    size_t out_len = 0;
    FILE *mem = open_memstream(&out, &out_len);
    FUZZ_ASSERT(mem);
    sc_map_stats st = {0};
    flame_err err = FLAME_ERR_INIT;
    int rc = sc_map_sanitize(in, size, mem, &st, &err);
    fclose(mem);
    if (rc == 0) {
        FUZZ_ASSERT(st.lines_out + st.dropped <= st.lines_in);
        FUZZ_ASSERT(st.bytes_out == out_len);
        check_output(out, out_len, st.lines_in);
    }
    free(out);
    free(in);
    return 0;
}
