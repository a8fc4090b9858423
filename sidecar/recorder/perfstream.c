/* Counting samples in perf's pipe-mode output. perf record writes `-o -` as a stream of
 * perf_event_header {u32 type; u16 misc; u16 size} records after a 16-byte pipe header; we tee
 * it into /tmp/perf.data and count PERF_RECORD_SAMPLE (9) and the lost counters on the way,
 * which gives exact progress numbers without asking perf anything. */
#include <string.h>

#include "sidecar/recorder/recorder.h"

#define REC_LOST 2
#define REC_SAMPLE 9
#define REC_LOST_SAMPLES 13

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void sc_perfstream_feed(sc_perfstream *ps, const unsigned char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && !ps->bad) {
        if (ps->skip) {
            size_t k = len - i < ps->skip ? len - i : (size_t)ps->skip;
            i += k;
            ps->skip -= k;
            continue;
        }
        /* Collect the pipe header (16 bytes: "PERFILE2", u64 size) or a record's head: the
         * 8-byte header, then up to 24 bytes so LOST (id, lost) bodies can be read. */
        size_t want = 16;
        uint16_t size = 0;
        if (ps->started) {
            want = 8;
            if (ps->have >= 8) {
                size = (uint16_t)(ps->hdr[6] | ps->hdr[7] << 8);
                if (size < 8) {
                    ps->bad = true;
                    return;
                }
                want = size < 24 ? size : 24;
            }
        }
        size_t k = want - ps->have;
        if (k > len - i)
            k = len - i;
        memcpy(ps->hdr + ps->have, buf + i, k);
        ps->have += k;
        i += k;
        if (ps->started && want == 8 && ps->have == 8) {
            size = (uint16_t)(ps->hdr[6] | ps->hdr[7] << 8);
            if (size < 8) {
                ps->bad = true; /* would never advance: corrupt stream */
                return;
            }
            if (size > 8)
                continue; /* read the head of the body (the loop recomputes want) */
        }
        if (ps->have < want)
            continue;
        if (!ps->started) {
            if (memcmp(ps->hdr, "PERFILE2", 8) != 0) {
                ps->bad = true;
                return;
            }
            uint64_t hs = le64(ps->hdr + 8);
            ps->skip = hs > 16 ? hs - 16 : 0;
            ps->started = true;
            ps->have = 0;
            continue;
        }
        size = (uint16_t)(ps->hdr[6] | ps->hdr[7] << 8);
        uint32_t type = le32(ps->hdr);
        if (type == REC_SAMPLE)
            ps->samples++;
        else if (type == REC_LOST && ps->have >= 24)
            ps->lost += le64(ps->hdr + 16);
        else if (type == REC_LOST_SAMPLES && ps->have >= 16)
            ps->lost += le64(ps->hdr + 8);
        ps->skip = size - ps->have;
        ps->have = 0;
    }
}
