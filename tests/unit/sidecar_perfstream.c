/* sidecar/recorder/perfstream.c: counting records of perf's pipe-format stream (byte-by-byte
 * feeding, bad magic, size-0 record). */
#include <stdlib.h>
#include <string.h>

#include "sidecar/recorder/recorder.h"
#include "tests/unit/tap.h"

static void put_rec(unsigned char *b, size_t *o, unsigned type, unsigned size, unsigned long long v)
{
    memset(b + *o, 0, size);
    b[*o] = (unsigned char)type;
    b[*o + 6] = (unsigned char)(size & 0xff);
    b[*o + 7] = (unsigned char)(size >> 8);
    if (size >= 24)
        memcpy(b + *o + 16, &v, 8); /* LOST: id at 8, lost at 16 */
    if (type == 13)
        memcpy(b + *o + 8, &v, 8);
    *o += size;
}

static void test_stream(void)
{
    unsigned char b[4096];
    size_t o = 0;
    memcpy(b, "PERFILE2", 8);
    unsigned long long hs = 16;
    memcpy(b + 8, &hs, 8);
    o = 16;
    put_rec(b, &o, 64, 40, 0); /* HEADER_ATTR */
    put_rec(b, &o, 9, 120, 0); /* SAMPLE */
    put_rec(b, &o, 9, 8, 0);   /* tiny SAMPLE */
    put_rec(b, &o, 2, 24, 5);  /* LOST 5 */
    put_rec(b, &o, 13, 16, 7); /* LOST_SAMPLES 7 */
    put_rec(b, &o, 9, 300, 0); /* SAMPLE */
    sc_perfstream ps = {0};
    sc_perfstream_feed(&ps, b, o);
    is_int(ps.samples, 3, "three samples in one chunk");
    is_int(ps.lost, 12, "lost counters summed");
    sc_perfstream p1 = {0};
    for (size_t i = 0; i < o; i++) /* byte by byte: chunk boundaries anywhere */
        sc_perfstream_feed(&p1, b + i, 1);
    is_int(p1.samples, 3, "byte-by-byte: same samples");
    is_int(p1.lost, 12, "byte-by-byte: same lost");
    sc_perfstream p2 = {0};
    sc_perfstream_feed(&p2, (const unsigned char *)"NOTPERF!xxxxxxxx", 16);
    ok(p2.bad, "wrong magic flagged");
    sc_perfstream p3 = {0};
    unsigned char z[24] = "PERFILE2";
    z[8] = 16;
    sc_perfstream_feed(&p3, z, sizeof(z)); /* record with size 0 */
    ok(p3.bad, "record size < 8 flagged (no endless loop)");
}

int main(void)
{
    test_stream();
    return tap_done();
}
