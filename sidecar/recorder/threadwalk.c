/* Per-thread sampling walks stacks too (docs/SIDECAR.md "Stack walking"): perf's own per-thread
 * recorder runs in dwarf mode (`--call-graph dwarf`: each sample carries the user registers and
 * a copy of the user stack, the kernel adds no user chain), and its pipe-format output passes
 * through this rewriter before the sidecar stores it: the attribute loses REGS_USER and
 * STACK_USER, each sample gets the walked user chain in their place (interp.h, the same rewrite
 * as the per-CPU recorder's), MMAP2 records tell the walker what was mapped. Everything else
 * passes unchanged. perf records are at most 65535 bytes (u16 size) after a 16-byte pipe header
 * (tools/perf/Documentation/perf.data-file-format.txt); a stream that does not parse is passed
 * on untouched from there. */
#include "sidecar/recorder/threadwalk.h"

#include <linux/perf_event.h>
#include <stddef.h>
#include <string.h>

#define REC_HEADER_ATTR 64
#define REC_FINISHED_INIT 82
#define ATTR_SAMPLE_TYPE offsetof(struct perf_event_attr, sample_type)
#define ATTR_REGS_USER offsetof(struct perf_event_attr, sample_regs_user)
#define ATTR_STACK_USER offsetof(struct perf_event_attr, sample_stack_user)

void sc_tw_init(sc_tw *t, struct sc_interp *in)
{
    memset(t, 0, sizeof *t);
    t->in = in;
}

size_t sc_tw_record(sc_tw *t, unsigned char *r, size_t size, unsigned char *out)
{
    uint32_t type;
    memcpy(&type, r, 4);
    if (type == REC_HEADER_ATTR && size >= 8 + ATTR_STACK_USER + 4) {
        /* the attribute perf script will see: without the user registers and stack */
        uint32_t asize;
        uint64_t stype, rmask;
        memcpy(&asize, r + 8 + 4, 4);
        memcpy(&stype, r + 8 + ATTR_SAMPLE_TYPE, 8);
        memcpy(&rmask, r + 8 + ATTR_REGS_USER, 8);
        if (asize >= ATTR_STACK_USER + 4 && asize <= size - 8 &&
            (stype & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER))) {
            if (t->n_attrs++ == 0) {
                uint64_t flags;
                memcpy(&flags, r + 8 + offsetof(struct perf_event_attr, read_format) + 8, 8);
                t->stype = stype;
                t->rmask = rmask;
                t->id_all = (flags >> 18) & 1; /* sample_id_all */
                if (size >= 8 + asize + 8)
                    memcpy(&t->id, r + 8 + asize, 8);
            } else if (stype != t->stype || rmask != t->rmask) {
                t->mixed = true; /* samples would need their ids: not rewritten */
            }
            stype &= ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
            uint64_t zero = 0;
            uint32_t zero32 = 0;
            memcpy(r + 8 + ATTR_SAMPLE_TYPE, &stype, 8);
            memcpy(r + 8 + ATTR_REGS_USER, &zero, 8);
            memcpy(r + 8 + ATTR_STACK_USER, &zero32, 4);
        }
        memcpy(out, r, size);
        return size;
    }
    if (type == PERF_RECORD_MMAP2)
        sc_interp_note_mmap2(t->in, r, size);
    /* perf's FINISHED_INIT: what the JVMs had mapped has passed (perf synthesizes it first) */
    if (type == REC_FINISHED_INIT && !t->interp_started) {
        t->interp_started = true;
        if (t->on_start)
            t->on_start(t, t->start_ctx);
    }
    if (type == PERF_RECORD_SAMPLE && t->n_attrs && !t->mixed) {
        if (!t->interp_started) {
            t->interp_started = true;
            if (t->on_start)
                t->on_start(t, t->start_ctx);
        }
        size_t n = sc_interp_rewrite_as(t->in, r, size, t->stype, t->rmask, out);
        if (n)
            return n;
        t->bad++; /* malformed: dropped, as the per-CPU recorder drops them */
        return 0;
    }
    memcpy(out, r, size);
    return size;
}

int sc_tw_anon(sc_tw *t, uint32_t pid, uint64_t start, uint64_t len)
{
    unsigned char r[8 + 64 + 8 + 64];
    static const char name[] = "//anon"; /* perf then looks in /tmp/perf-<pid>.map */
    size_t body = 64 + 8;
    memset(r, 0, sizeof r);
    uint32_t type = PERF_RECORD_MMAP2, prot = 5, flags = 2; /* r-x, private */
    uint16_t misc = PERF_RECORD_MISC_USER;
    memcpy(r, &type, 4);
    memcpy(r + 4, &misc, 2);
    memcpy(r + 8, &pid, 4);
    memcpy(r + 12, &pid, 4);
    memcpy(r + 16, &start, 8);
    memcpy(r + 24, &len, 8);
    memcpy(r + 64, &prot, 4);
    memcpy(r + 68, &flags, 4);
    memcpy(r + 72, name, sizeof name);
    size_t p = 8 + body;
    if (t->id_all) { /* sample_id trailer, in the kernel's order: tid, time, id, stream id, cpu,
                        identifier; time 0 puts it before every sample */
        if (t->stype & PERF_SAMPLE_TID)
            memcpy(r + p, &pid, 4), memcpy(r + p + 4, &pid, 4), p += 8;
        if (t->stype & PERF_SAMPLE_TIME)
            p += 8;
        if (t->stype & PERF_SAMPLE_ID)
            memcpy(r + p, &t->id, 8), p += 8;
        if (t->stype & PERF_SAMPLE_STREAM_ID)
            memcpy(r + p, &t->id, 8), p += 8;
        if (t->stype & PERF_SAMPLE_CPU)
            p += 8;
        if (t->stype & PERF_SAMPLE_IDENTIFIER)
            memcpy(r + p, &t->id, 8), p += 8;
    }
    uint16_t sz = (uint16_t)p;
    memcpy(r + 6, &sz, 2);
    return t->write ? t->write(t->write_ctx, r, p) : -1;
}

int sc_tw_feed(sc_tw *t, const unsigned char *buf, size_t len, sc_tw_write_fn write, void *ctx)
{
    size_t i = 0;
    t->write = write;
    t->write_ctx = ctx;
    while (i < len) {
        if (t->passthrough)
            return write(ctx, buf + i, len - i);
        size_t want = !t->started ? 16 : t->have < 8 ? 8 : t->size;
        size_t k = want - t->have < len - i ? want - t->have : len - i;
        memcpy(t->rec + t->have, buf + i, k);
        t->have += k;
        i += k;
        if (t->have < want)
            continue;
        if (!t->started) {
            if (memcmp(t->rec, "PERFILE2", 8) != 0) {
                t->passthrough = true;
                if (write(ctx, t->rec, t->have) < 0)
                    return -1;
                t->have = 0;
                continue;
            }
            t->started = true;
            if (write(ctx, t->rec, 16) < 0)
                return -1;
            t->have = 0;
            continue;
        }
        if (want == 8) {
            uint16_t sz;
            memcpy(&sz, t->rec + 6, 2);
            if (sz < 8) { /* would never advance: hand on the rest as it is */
                t->passthrough = true;
                if (write(ctx, t->rec, t->have) < 0)
                    return -1;
                t->have = 0;
                continue;
            }
            t->size = sz;
            if (sz > 8)
                continue;
        }
        size_t n = sc_tw_record(t, t->rec, t->size, t->out);
        t->have = 0;
        t->size = 0;
        if (n && write(ctx, t->out, n) < 0)
            return -1;
    }
    return 0;
}
