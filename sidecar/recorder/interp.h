/* Naming interpreted Java frames in the per-CPU recorder (docs/FOLDING.md
 * "Interpreted frames"). The events carry, with each sample, the user registers bp/sp and a copy
 * of the top SC_INTERP_STACK bytes of the user stack. For each sample of a JVM, the recorder walks
 * the frame pointers through that copy alongside the kernel's callchain; every return address
 * inside the template interpreter belongs to an interpreter frame whose Method* (fp-24) and bcp
 * (fp-64) slots are read from the copy and resolved live through HotSpot's VMStructs
 * (hotspot.h). A name that passes every check replaces the callchain entry by a synthetic address
 * in a range no process can map (SC_INTERP_BASE, above the 57-bit user half), covered by one
 * synthesized anonymous executable MMAP2 per JVM, so perf script looks it up in
 * /tmp/perf-<pid>.map, where the sidecar appends "ADDR SIZE pkg.Class.method_[int]" lines from
 * the names file the recorder writes. Registers and stack copy are then dropped: the stream perf
 * script reads is the same as without naming. A frame that fails a check keeps its address:
 * perf names it `Interpreter` from the agent's map, as before. Module prefix: sc_interp_. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of user stack copied per sample: javac-like recursions need up to ~48 KiB to reach the
 * thread's root (tests/data/walk/jdk17-javac); deeper stacks are read past the copy from the JVM's
 * memory (walk.h, "tail reads"), which races with the running thread. perf caps a record at 64 KiB.
 */
#define SC_INTERP_STACK 49152
#define SC_INTERP_BASE 0x4000000000000000ull /* synthetic addresses: id * 16 + 8 above it */
#define SC_INTERP_SPAN 0x0000000100000000ull /* the synthetic mapping's length */
#define SC_INTERP_MAX_JVMS 16
/* Distinct names per JVM, and their text: beyond either, a frame stays unknown. With hotspot.h's
 * bounds a JVM costs the recorder at most ~8 MiB (docs/SIDECAR.md "Limits"). */
#define SC_INTERP_MAX_NAMES 32768
#define SC_INTERP_NAME_BYTES (1536u << 10)
/* PERF_REG_X86_AX(0) BX(1) BP(6) SP(7) IP(8) R13(21): the walker's (recorder/walk.h) */
#define SC_INTERP_REGS_MASK 0x2001c3ull

typedef struct sc_interp sc_interp;

typedef struct sc_interp_stats {
    uint64_t samples;     /* samples rewritten */
    uint64_t no_floor;    /* of them, drained before any unloaded-classes count was read (the
                             recording's first pass): no name of an unloadable class */
    uint64_t with_interp; /* of them, with at least one interpreter return address */
    uint64_t frames;      /* interpreter return addresses seen */
    uint64_t named;       /* of them, named */
    uint64_t unknown;     /* of them, left unnamed (every reason below) */
    uint64_t partial, beyond_copy, unload_window, refused, broken_chain;
    uint64_t names;                    /* distinct names written */
    uint64_t names_full;               /* names refused: the bounds above reached */
    uint64_t throttled;                /* resolutions put off by hotspot.h's budget */
    uint64_t compiled, compiled_named; /* compiled frames walked; named from their Method* */
    uint64_t nc_hits;                  /* of them, named again from the name given before */
    uint64_t new_code;                 /* of them, unnamed: their nmethod was first read too
                                          recently to have run at the sample (sc_ch_settled) */
    uint64_t fp_compared, fp_same;     /* walks compared with the kernel's fp chain, agreeing
                                          (recorder/walk.h sc_walker_fp_check) */
    uint64_t walk_ns;                  /* time spent rewriting (CLOCK_MONOTONIC) */
    uint64_t bytes_in, bytes_out;      /* sample bytes read from the rings / written */
} sc_interp_stats;

/* mem_fd[k] (/proc/<pid>/mem, opened while privileged, or -errno) and names_fd[k] (where name lines
 * go) for the JVM pid[k]; the fds are owned by the object from here on. */
sc_interp *sc_interp_new(const pid_t *pid, const int *mem_fd, const int *names_fd, int n);
void sc_interp_free(sc_interp *in);

/* An executable mapping [start, end) of pid (synthesized from its maps, or a MMAP2 record):
 * where libjvm.so is, and what the stack walker unwinds native code with. */
void sc_interp_note_map(sc_interp *in, pid_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
                        const char *path);

/* pid's code has no perf map at all (no agent, no Compiler.perfmap: attach disabled or
 * refused): its stubs, adapters and unnamed interpreter frames are named after their code blob
 * ("StubRoutines (1)", "Interpreter"), as a map would name them, instead of [unknown]. */
void sc_interp_name_blobs(sc_interp *in, pid_t pid);

/* A MMAP2 record (r, size bytes, as the kernel writes it): an executable mapping made during the
 * recording, noted like the synthesized ones. */
void sc_interp_note_mmap2(sc_interp *in, const unsigned char *r, size_t size);

/* Read each JVM's VMStructs (after the privilege drop: the target's memory is parsed here).
 * Returns how many JVMs can be named. */
int sc_interp_start(sc_interp *in);

/* Why pid's interpreted frames cannot be named (a sentence), NULL when they can. */
const char *sc_interp_why(const sc_interp *in, pid_t pid);

/* At the start of each pump pass, before the rings' heads are read (the unloading epoch rule). */
void sc_interp_pass(sc_interp *in);

/* Rewrite one SAMPLE record r (size bytes; sample_type IP|TID|TIME|CPU|PERIOD|CALLCHAIN|
 * REGS_USER|STACK_USER) into out (at least size bytes) without the registers and the stack copy,
 * naming interpreter frames where it can. Returns the new size, 0 when r is malformed (then drop
 * it). */
size_t sc_interp_rewrite(sc_interp *in, const unsigned char *r, size_t size, unsigned char *out);

/* The same for a sample recorded with any sample_type stype (without READ and BRANCH_STACK) and
 * user registers rmask: perf's own per-thread recorder in dwarf mode (threadwalk.c). The fields
 * after the stack copy are kept. */
size_t sc_interp_rewrite_as(sc_interp *in, const unsigned char *r, size_t size, uint64_t stype,
                            uint64_t rmask, unsigned char *out);

void sc_interp_get_stats(const sc_interp *in, sc_interp_stats *st);

/* Why pid's stacks are not walked by recorder/walk.h (the kernel's frame-pointer chain is kept),
 * NULL when they are. */
const char *sc_interp_walk_why(const sc_interp *in, pid_t pid);
/* Bytes of the stack copy pid's last walk read (tests/walk cuts recorded samples to it). */
uint64_t sc_interp_copy_used(const sc_interp *in, pid_t pid);
struct sc_walk_stats;
/* pid's walk counters (recorder/walk.h); pid 0: every JVM's, summed. */
void sc_interp_walk_stats(const sc_interp *in, pid_t pid, struct sc_walk_stats *st);

/* pure, for tests: the walk. Given a sample's user callchain ips[0..n) (leaf first, no context
 * markers), bp, sp and the stack copy stack[0..len) (starting at sp), call name(ctx, k, method,
 * bcp) for each k whose ips[k] in_interp(ctx, ips[k]) says is an interpreter return address and
 * whose frame lies in the copy; it returns the replacement address or 0. *st counts reasons. */
typedef struct sc_interp_walk_cb {
    bool (*in_interp)(void *ctx, uint64_t pc);
    uint64_t (*name)(void *ctx, int k, uint64_t method, uint64_t bcp);
    void *ctx;
} sc_interp_walk_cb;
void sc_interp_walk(uint64_t *ips, int n, uint64_t bp, uint64_t sp, const unsigned char *stack,
                    uint64_t len, const sc_interp_walk_cb *cb, sc_interp_stats *st);
