/* The per-thread recorder's stream rewriter (threadwalk.c): perf's dwarf-mode samples walked like
 * the per-CPU recorder's. Module prefix: sc_tw_. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/recorder/interp.h"

typedef struct sc_tw sc_tw;
typedef int (*sc_tw_write_fn)(void *ctx, const unsigned char *buf, size_t len);

struct sc_tw {
    struct sc_interp *in;
    uint64_t stype, rmask; /* the samples' layout, from the attribute */
    uint64_t id;           /* the event's first id (for the records we add) */
    bool id_all;           /* sample_id_all: other records carry a sample_id trailer */
    /* called once, at perf's FINISHED_INIT or before the first sample, whichever comes first
     * (the maps perf synthesized at its start have passed by then): start the interp object,
     * add records through sc_tw_anon */
    void (*on_start)(sc_tw *t, void *ctx);
    void *start_ctx;
    bool interp_started;
    sc_tw_write_fn write;
    void *write_ctx;
    int n_attrs;
    bool mixed;       /* attributes with different layouts: samples passed on as they are */
    bool started;     /* the pipe header was read */
    bool passthrough; /* not perf's stream as expected: the rest passed on untouched */
    size_t have, size;
    uint64_t bad; /* malformed samples dropped */
    unsigned char rec[65536], out[65536];
};

void sc_tw_init(sc_tw *t, struct sc_interp *in);

/* pure but for the interp object: one record r (size bytes, header included; modified in place
 * when it is the attribute) rewritten into out (65536 bytes). Returns its new size, 0 to drop. */
size_t sc_tw_record(sc_tw *t, unsigned char *r, size_t size, unsigned char *out);

/* An MMAP2 record of an anonymous executable range [start, start+len) of pid (interp.h's
 * synthetic addresses), with the trailer perf's samples' attribute calls for, written to the
 * stream at once. 0 or -1. */
int sc_tw_anon(sc_tw *t, uint32_t pid, uint64_t start, uint64_t len);

/* Feed len bytes of the stream; whole records are written through write as they complete.
 * Returns 0, or -1 when write failed. */
int sc_tw_feed(sc_tw *t, const unsigned char *buf, size_t len, sc_tw_write_fn write, void *ctx);
