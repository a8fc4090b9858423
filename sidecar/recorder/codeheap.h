/* HotSpot's code cache seen from outside: which code blob a pc belongs to, and what unwinding
 * needs to know about it (its frame size, where its frame is complete, its entry points, its
 * Method*). Read through VMStructs (hotspot.h's tables) and /proc/<pid>/mem:
 *   CodeCache::_heaps (GrowableArray<CodeHeap*>*), _low_bound, _high_bound;
 *   CodeHeap::_memory / _segmap (VirtualSpace: _low, _high), _log2_segment_size;
 *   the segment map: one byte per segment, 0 = a block starts here, 1..254 = hop back that many
 *   segments, 0xFF = free; a block is a HeapBlock (Header::_length, _used) followed by the blob;
 *   CodeBlob::_name, _size, _frame_size (words), _frame_complete_offset (from code_begin),
 *   _code_begin/_code_end (pointers, JDK <= 22) or _code_offset/_data_offset (from the blob);
 *   nmethod (CompiledMethod on JDK <= 22)::_method, _verified_entry_point|_verified_entry_offset,
 *   _deopt_handler_begin|_deopt_handler_offset, _orig_pc_offset, _compile_id;
 *   StubRoutines::_call_stub_return_address.
 * Field widths come from each entry's C type string, so int/int16_t/u2 variants across JDKs are
 * read as what they are. Everything read is bounded and checked (hop counts, sizes, ranges): a
 * crafted heap can make a pc "unknown", never make us loop or read without bound.
 * Module prefix: sc_ch_. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/wread.h"

#define SC_CH_NAME_MAX 48          /* a blob's name, cut */
#define SC_CH_MAX_HEAPS 8          /* CodeCache::_heaps entries used (HotSpot has at most 3-4) */
#define SC_CH_MAX_HOPS 512         /* segment map hops per lookup (a 1 MiB blob: ~33 at 128 B) */
#define SC_CH_MAX_BLOBS 16384      /* blobs cached; the cache starts over when full */
#define SC_CH_PC_CACHE 16384       /* direct-mapped pc -> blob entries */
#define SC_CH_MAX_FRAME (1u << 20) /* bytes: a larger frame_size is not believed */

enum sc_blob_kind {
    SC_BLOB_NMETHOD, /* compiled Java method or native wrapper: frame_size, prologue, epilogue */
    SC_BLOB_INTERP,  /* the template interpreter */
    SC_BLOB_STUB,    /* any other blob: StubRoutines, adapters, runtime stubs, vtable chunks */
    SC_BLOB_VTHREAD, /* continuation stubs: the walk cannot go past them */
};

typedef struct sc_blob {
    uint64_t start, end;           /* the blob [start, start + _size) */
    uint64_t code_begin, code_end; /* its instructions */
    uint64_t frame_complete;       /* absolute; pcs below it have not built the frame */
    uint64_t verified_entry;       /* nmethods: absolute, else 0 */
    uint64_t deopt, deopt_mh;      /* nmethods: the deoptimization handlers, else 0 */
    uint64_t method;               /* nmethods: Method*, else 0 */
    uint64_t name_ptr;             /* CodeBlob::_name as read (part of the identity) */
    int32_t frame_size;            /* bytes, -1 when unknown */
    int32_t orig_pc_offset;        /* nmethods: where deoptimization keeps the original pc */
    int32_t compile_id;
    uint64_t
        first_pass;  /* nmethods: the pass in which this one (start, compile_id) was first read */
    uint8_t kind;    /* enum sc_blob_kind */
    bool frameless;  /* a stub named as having no frame (vtable/itable chunks) */
    bool deopt_blob; /* UncommonTrapBlob, DeoptimizationBlob: may unpack frames */
    char name[SC_CH_NAME_MAX];
    /* nmethods whose debug info can be read: PcDescs, scopes data, metadata table (0 if not) */
    uint64_t pcs_lo, pcs_hi, sd_lo, sd_hi, md_lo, md_hi;
} sc_blob;

typedef struct sc_ch_stats {
    uint64_t lookups, pc_hits, blob_hits, segmap_walks, hops, revalidated, replaced;
    uint64_t not_found, bad_blob, resets, scopes;
} sc_ch_stats;

typedef struct sc_ch sc_ch;

/* Read the code cache's description. hs: the JVM's VMStructs (hotspot.h, not owned); r: the
 * reader of its memory (not owned). NULL with why filled when a field is missing or a value is
 * implausible: the walker is then off for this JVM. */
sc_ch *sc_ch_open(sc_hs *hs, sc_wread *r, char why[SC_HS_WHY_MAX]);
void sc_ch_free(sc_ch *c);

/* Is pc inside [CodeCache::_low_bound, _high_bound)? (Read once: the reservation is fixed.) */
bool sc_ch_contains(const sc_ch *c, uint64_t pc);

/* The blob holding pc, or NULL (a free or unused segment, a crafted map, an unreadable header).
 * Valid until the next sc_ch_find or sc_ch_pass. */
const sc_blob *sc_ch_find(sc_ch *c, uint64_t pc);

/* A new pump pass: nmethods found before are checked again (one read of their header) before
 * they are believed, since the code cache reuses the space of freed ones. */
void sc_ch_pass(sc_ch *c);

/* Was nmethod b (from sc_ch_find in this pass) at its place when every sample this pass drains
 * was taken? Those samples were taken after the previous pass began, and everything read in a
 * pass is read after its samples were taken; an nmethod first read two passes ago or more, and
 * found again now with the same start and compile id, held its space all the time in between
 * (compile ids are never reused). One first read in this pass or the previous one may have been
 * compiled into space freed after the sample: the sample ran something else there (churned
 * classes: another class's method of the same shape). The first two passes of a walk are
 * believed: nothing read earlier can vouch for them. Blobs that are not nmethods: true. */
bool sc_ch_settled(const sc_ch *c, const sc_blob *b);

/* The Java methods of nmethod b's frame at pc: the inlined method running at pc first, out to
 * the nmethod's own method last (HotSpot's PcDesc -> ScopeDesc chain: each scope's method by
 * its index in the nmethod's metadata table). Up to cap Method*, none validated (name them
 * through hotspot.h). 0 when the nmethod's debug info cannot be read (JDKs whose layout is not
 * known, native wrappers, a crafted stream): then only b->method names the frame. */
int sc_ch_scopes(sc_ch *c, const sc_blob *b, uint64_t pc, uint64_t *methods, int cap);

/* StubRoutines::_call_stub_return_address: where Java code returns into the call stub. */
uint64_t sc_ch_call_stub_ra(const sc_ch *c);

void sc_ch_get_stats(const sc_ch *c, sc_ch_stats *st);

/* For tests and diagnostics: the code heaps as last read (committed [lo, hi), segment map at
 * segmap, log2 segment size). Returns how many (<= cap). */
typedef struct sc_ch_heap {
    uint64_t lo, hi, segmap;
    unsigned log2;
} sc_ch_heap;
int sc_ch_heaps(const sc_ch *c, sc_ch_heap *out, int cap);
