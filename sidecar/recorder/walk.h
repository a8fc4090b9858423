/* The stack walker (docs/SIDECAR.md "Stack walking"): a Java thread's whole user stack from what
 * a sample carries -- the user registers (ax, bx, bp, sp, ip, r13) and a copy of the top of its
 * stack -- and the JVM's own metadata read through /proc/<pid>/mem: HotSpot's code cache
 * (codeheap.h) for compiled frames, stubs and the call stub, the interpreter's fixed frame layout
 * for interpreted frames, and the images' DWARF unwind tables (ehframe.h) for native code. It
 * needs no -XX:+PreserveFramePointer: compiled frames are unwound by their blob's frame size, as
 * HotSpot itself does (frame::sender_for_compiled_frame).
 *
 * Per frame kind (x86-64):
 *   interpreted  rbp-linked always: Method* at fp-24, bcp at fp-64, return address fp+8, the
 *                caller's fp at fp, its sp at fp-8 (sender sp). Top frame still being built
 *                (the method entry): Method* from rbx, sender sp from r13, the return address
 *                from [sp] or rax.
 *   compiled     sender sp = sp + frame size, return address at sender sp - 8, the caller's rbp
 *                at sender sp - 16; top frame in the prologue (before the frame is complete)
 *                or the epilogue: decided from the instructions at the pc.
 *   stubs        the call stub (the return address StubRoutines::_call_stub_return_address)
 *                is an rbp frame into libjvm; vtable/itable stubs are frameless; others by
 *                frame size, or the candidate ([sp], or the rbp frame) whose return address
 *                follows a call instruction.
 *   native       the CFA rule of its unwind row; without one, the frame pointer.
 * Every step must move the stack pointer up (by at most SC_WALK_MAX_SPAN), every read is
 * bounded, the depth is capped: a hostile stack ends the walk with a status, never a loop.
 *
 * The walk reads the stack from the sample's copy; with tail reads on, what lies above the copy
 * is read from the target's memory (a deep stack's older frames change rarely; see
 * docs/SIDECAR.md). Module prefix: sc_walk_. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/codeheap.h"
#include "sidecar/recorder/ehframe.h"

#define SC_WALK_MAX_FRAMES 2048       /* frames per walk */
#define SC_WALK_MAX_SPAN (1u << 20)   /* bytes one frame may span */
#define SC_WALK_REGS_MASK 0x2001c3ull /* PERF_REG_X86_AX(0) BX(1) BP(6) SP(7) IP(8) R13(21) */

enum sc_walk_status {
    SC_WALK_ROOT,           /* reached the thread's outermost frame (its return address is
                               undefined in the unwind tables: clone3, _start) */
    SC_WALK_COPY_END,       /* the next frame lies beyond the stack copy (tail reads off/failed) */
    SC_WALK_INTERP_ENTRY,   /* top frame in an interpreted method's entry: caller not found */
    SC_WALK_BREAK_INTERP,   /* an interpreted frame that does not hold together */
    SC_WALK_BREAK_COMPILED, /* a compiled frame whose return address is not code */
    SC_WALK_BREAK_STUB,     /* a stub frame that could not be unwound */
    SC_WALK_UNKNOWN_BLOB,   /* a pc inside the code cache but in no blob */
    SC_WALK_UNKNOWN_PC,     /* a pc in no code we know (anonymous memory, 0) */
    SC_WALK_NO_UNWIND,      /* native code without a usable unwind row, nor a frame pointer */
    SC_WALK_VTHREAD,        /* a virtual thread's continuation: not walked past */
    SC_WALK_LOOP,           /* the stack pointer did not move up: garbage or a cycle */
    SC_WALK_MAX_DEPTH,      /* SC_WALK_MAX_FRAMES (or the caller's cap) reached */
    SC_WALK_NSTATUS
};
/* "root", "copy_end", ... (docs/SUMMARY.md) */
const char *sc_walk_status_name(int status);

enum sc_walk_kind {
    SC_WF_NATIVE,   /* native code (libjvm, libc, JNI) */
    SC_WF_INTERP,   /* interpreted Java method: method (Method*), bcp */
    SC_WF_COMPILED, /* compiled Java method: method (Method*) of its nmethod */
    SC_WF_STUB,     /* stubs, adapters, runtime blobs */
    SC_WF_ENTRY,    /* the call stub: where Java code is entered from the VM */
};
#define SC_WF_TOP 1        /* the interrupted frame */
#define SC_WF_BCP_UNSURE 2 /* interpreted: Method* from rbx, no bcp (method entry) */
#define SC_WF_DEOPT 4      /* compiled: a deoptimized frame, pc is its original pc */

typedef struct sc_walk_frame {
    uint64_t pc;     /* the interrupted pc, else a return address */
    uint64_t sp, fp; /* the frame's stack pointer and rbp as the walk found them */
    uint64_t method; /* Method* (interpreted, compiled), else 0 */
    uint64_t bcp;    /* interpreted: the bytecode pointer slot */
    uint8_t kind;    /* enum sc_walk_kind */
    uint8_t flags;
} sc_walk_frame;

typedef struct sc_walk_regs {
    uint64_t ax, bx, bp, sp, ip, r13;
} sc_walk_regs;

typedef struct sc_walk_stats {
    uint64_t walks, frames, java_frames;
    uint64_t status[SC_WALK_NSTATUS];
    uint64_t prologue, epilogue, deopt, ra_shifted, entry_recovered, fp_fallback;
    uint64_t tail_reads, tail_walks; /* pages read above the copy; walks that read any */
    uint64_t ns;                     /* time spent walking (CLOCK_MONOTONIC) */
} sc_walk_stats;

typedef struct sc_walker sc_walker;

/* A walker for one JVM whose VMStructs hs has read (not owned; its /proc/<pid>/mem descriptor is
 * used, not closed). NULL with why filled when its code cache cannot be described. */
sc_walker *sc_walker_new(sc_hs *hs, char why[SC_HS_WHY_MAX]);
void sc_walker_free(sc_walker *w);

/* An executable mapping of the process (synthesized from its maps, or a MMAP2 record). */
void sc_walker_note_map(sc_walker *w, uint64_t start, uint64_t end, uint64_t pgoff,
                        const char *path);

/* Tail reads: frames above the stack copy are read from the target's memory. */
void sc_walker_set_tail(sc_walker *w, bool on);

/* A new pump pass (codeheap.h: nmethods are checked again before they are believed). */
void sc_walker_pass(sc_walker *w);

/* Walk one sample: r its registers, stack[0..len) the copy of its stack from r->sp up. Fills
 * frames[0..cap) leaf first and *status; returns the number of frames (>= 1 when r->ip != 0). */
int sc_walker_walk(sc_walker *w, const sc_walk_regs *r, const unsigned char *stack, uint64_t len,
                   sc_walk_frame *frames, int cap, enum sc_walk_status *status);

void sc_walker_get_stats(const sc_walker *w, sc_walk_stats *st);

/* The Java methods of compiled frame f (from the walk just made): the inlined method running at
 * its pc first, out to its nmethod's own method last (codeheap.h sc_ch_scopes); at least that
 * method when the scopes cannot be read. Returns how many (<= cap), 0 for no compiled frame.
 * token (may be NULL): the same nonzero value for as long as that answer is the one cached for
 * f's pc and nmethod, a new one whenever it is read again (a key for what is derived from it). */
#define SC_WALK_MAX_INLINE 16
int sc_walker_inlined(sc_walker *w, const sc_walk_frame *f, uint64_t *methods, int cap,
                      uint64_t *token);

/* Was compiled frame f's nmethod already in its place when the sample was taken (sc_ch_settled)?
 * False for one read too recently to vouch for it: its name may be that of code compiled into
 * space freed after the sample. True for frames that are not compiled. */
bool sc_walker_settled(sc_walker *w, const sc_walk_frame *f);

/* The name of the code blob holding pc ("StubRoutines (1)", "Interpreter"), into out; false when
 * pc is in no blob. */
bool sc_walker_blob_name(sc_walker *w, uint64_t pc, char *out, size_t cap);

/* A walk (fr[0..n)) against the kernel's frame-pointer chain of the same sample (chain[0..n_chain),
 * leaf first), over the part frame pointers keep right when the JVM runs with
 * -XX:+PreserveFramePointer (Java code and libjvm, up to the first frame elsewhere): 1 the same
 * frames; 2 the same but for callers the kernel skipped because a frame's rbp was not its own
 * frame base (a leaf before it pushed rbp, a stub keeping no frame pointer), which only the walk
 * finds; 0 they differ; -1 nothing to compare (fewer than two frames there). */
int sc_walker_fp_check(const sc_walker *w, const sc_walk_frame *fr, int n, const uint64_t *chain,
                       int n_chain);
/* How many bytes of the stack copy the last walk read (tests/walk: samples are stored cut). */
uint64_t sc_walker_extent(const sc_walker *w);
const sc_ch *sc_walker_codeheap(const sc_walker *w);
const sc_eh *sc_walker_ehframe(const sc_walker *w);
