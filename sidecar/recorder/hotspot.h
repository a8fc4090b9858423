/* HotSpot's own description of itself (gHotSpotVMStructs / gHotSpotVMTypes, exported by
 * libjvm.so), read from a live JVM's memory, and what the interpreter-frame naming needs from it:
 * where the template interpreter's code lies, and Method* -> "pkg.Class.method" with the checks
 * that keep a stale or garbage slot from ever being given a name (docs/FOLDING.md "Interpreted
 * frames"). Module prefix: sc_hs_.
 *
 * Every read goes through one descriptor of /proc/<pid>/mem that the recorder opened while it
 * still held CAP_SYS_PTRACE (the kernel checks access at open; reads later need nothing). All of
 * the target's memory is hostile: every read is a bounded pread that may fail, every count and
 * length is capped, nothing read is followed without an alignment and range check, and a read
 * that fails only makes a frame "unknown". The target cannot make us loop, allocate without
 * bound or crash; it can at worst misname its own frames (as it could with its perf map). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_HS_WHY_MAX 160

enum sc_hs_status {
    SC_HS_OK = 0,
    SC_HS_UNREADABLE,    /* Method, ConstMethod, ConstantPool or holder unreadable or misaligned */
    SC_HS_NOT_IN_HOLDER, /* its holder does not list this Method*: stale, old version, garbage */
    SC_HS_BAD_BCP,       /* the frame's bcp is not inside this method's bytecodes */
    SC_HS_BAD_NAME,      /* symbols unreadable or implausible */
    SC_HS_FULL,          /* the per-JVM bound of distinct methods (or of their names' bytes) */
    SC_HS_BUSY,          /* over the resolution budget for now (per pass, per second) */
    SC_HS_NSTATUS
};

typedef struct sc_hs sc_hs;

/* Bounds (hotspot.c, docs/SIDECAR.md "Limits"): at most 32768 distinct Method* per JVM, 1.5 MiB
 * of their names, 1 MiB of cached holder arrays; resolving is budgeted per pass and per second,
 * and an unloading makes the answers stale in O(1). */

/* Read the VM's tables from the target's memory: mem_fd = /proc/<pid>/mem (kept, not closed),
 * jvm_base = where libjvm.so's file offset 0 is mapped. NULL with why filled when this JVM's
 * interpreted frames cannot be named (not HotSpot, a field missing, unreadable). */
sc_hs *sc_hs_open(int mem_fd, uint64_t jvm_base, char why[SC_HS_WHY_MAX]);
void sc_hs_free(sc_hs *h);

/* Is pc inside the template interpreter's code? */
bool sc_hs_in_interpreter(const sc_hs *h, uint64_t pc);

/* Classes unloaded so far (java.cls.unloadedClasses), or -1 when the JVM has no PerfData. A
 * change drops every cached answer about a class that could have been unloaded. */
int64_t sc_hs_poll_unloads(sc_hs *h);

/* The same count, read only (one read; nothing dropped): a check that it did not move. */
int64_t sc_hs_peek_unloads(sc_hs *h);

/* Changes whenever answers may have become stale (a poll that dropped them, sc_hs_forget): what
 * a caller derived from names given under one value stands while it stays. */
uint64_t sc_hs_generation(const sc_hs *h);

/* Where the unloaded-classes count is read (0: nowhere): for tests. */
uint64_t sc_hs_unloads_addr(const sc_hs *h);
#define SC_HS_GC_MAX 4 /* collectors whose pause ends also drop those answers (hotspot.c) */

/* A new pump pass: its share of the resolution budget starts afresh (the per-second one goes
 * on). */
void sc_hs_pass(sc_hs *h);

/* Forget the answer about method (unless its class is the boot loader's): it was read for a
 * sample taken before an unloading, so from memory that may have been freed since, and a new
 * class's Method* may come to sit at that address without another unloading to say so. */
void sc_hs_forget(sc_hs *h, uint64_t method);

/* Name one interpreted frame from its Method* and bcp slots. *name (valid until the next epoch
 * change) is set only for SC_HS_OK; *permanent says its class belongs to the boot loader (never
 * unloaded, so the name holds whatever was unloaded meanwhile). */
enum sc_hs_status sc_hs_frame(sc_hs *h, uint64_t method, uint64_t bcp, const char **name,
                              bool *permanent);

/* Name a Method* without a bcp to check it against: a compiled frame's method (its nmethod says
 * which), or an interpreted frame caught in its method entry (rbx). The holder check still
 * applies. */
enum sc_hs_status sc_hs_method(sc_hs *h, uint64_t method, const char **name, bool *permanent);

typedef struct sc_hs_stats {
    uint64_t reads, read_faults, methods, resolved;
    uint64_t throttled; /* resolutions put off by the budget */
} sc_hs_stats;
void sc_hs_get_stats(const sc_hs *h, sc_hs_stats *st);

/* pure, for tests: a Symbol's bytes made safe for a frame name (control bytes, ';' and the
 * agent-chain separator "->" neutralised; '/' -> '.' when dots); returns the length. */
size_t sc_hs_clean_name(char *s, size_t n, bool dots);
/* pure, for tests: cut a hidden class's address suffix (Foo$$Lambda$5+0x... / Foo$$Lambda.0x...).
 */
void sc_hs_cut_hidden(char *s);

/* VMStructs entries and VMTypes sizes beyond the naming's own (the stack walker's,
 * sidecar/recorder/codeheap.c), read in one pass over the tables. field NULL asks for the size of
 * type. value: the offset (the address for a static field) or the size; typestr: the entry's C
 * type ("int", "address", "int16_t"...), "" when unreadable. Returns how many were found, -1 when
 * the tables cannot be read again. */
typedef struct sc_hs_want {
    const char *type, *field;
    bool found, is_static;
    uint64_t value;
    char typestr[32];
} sc_hs_want;
int sc_hs_query(sc_hs *h, sc_hs_want *w, int n);
/* The /proc/<pid>/mem descriptor the tables were read through. */
int sc_hs_fd(const sc_hs *h);
