/* Unwinding native code (libjvm, libc, JNI libraries, the vDSO) by the DWARF call frame
 * information its own ELF image carries: PT_GNU_EH_FRAME -> .eh_frame_hdr's sorted table of
 * (initial location, FDE) pairs -> the FDE and its CIE in .eh_frame -> the CFA program run up to
 * the pc. Everything is read from the target's memory (the loaded image, through
 * /proc/<pid>/mem): no file of the target is opened, no path of it resolved; the image is the
 * very file the mapping shows, as loaded.
 *
 * Only what unwinding x86-64 needs is kept per pc: how to compute the CFA (rsp or rbp plus an
 * offset, or the PLT's expression), where the return address and the caller's rbp were saved,
 * and "the return address is undefined" (the outermost frame: clone3, _start). Every count is
 * bounded (table entries, FDE and CIE sizes, CFA instructions, remember/restore depth), and a
 * program that does not make sense gives "no information", never a loop. Module prefix: sc_eh_. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "sidecar/recorder/wread.h"

#define SC_EH_MAX_MAPS 1024          /* executable mappings remembered per process */
#define SC_EH_MAX_FDES (1u << 20)    /* .eh_frame_hdr entries read per image */
#define SC_EH_MAX_TABLES (16u << 20) /* bytes of those tables per process */
#define SC_EH_MAX_ENTRY 16384        /* bytes of one FDE or CIE */
#define SC_EH_MAX_OPS 4096           /* CFA instructions run per lookup */
#define SC_EH_ROW_CACHE 32768        /* pc -> row, direct mapped */

enum sc_eh_cfa { SC_EH_CFA_SP, SC_EH_CFA_FP, SC_EH_CFA_PLT, SC_EH_CFA_BAD };
enum sc_eh_how { SC_EH_SAME, SC_EH_AT_CFA, SC_EH_UNDEF, SC_EH_BAD };

typedef struct sc_eh_row {
    uint8_t cfa; /* enum sc_eh_cfa: CFA = rsp|rbp + cfa_off; PLT: rsp + cfa_off (+8 late in the
                    entry) */
    uint8_t fp;  /* enum sc_eh_how of rbp: unchanged, saved at CFA + fp_off */
    uint8_t ra;  /* enum sc_eh_how of the return address: at CFA + ra_off, or undefined (root) */
    int32_t cfa_off, fp_off, ra_off;
} sc_eh_row;

enum sc_eh_result {
    SC_EH_NOT_MAPPED = -1, /* pc in no executable mapping we know */
    SC_EH_NO_INFO = 0,     /* in one, but no usable unwind row for it */
    SC_EH_FOUND = 1,
};

typedef struct sc_eh_stats {
    uint64_t lookups, cached, images, images_bad, fde_miss, bad_program, table_bytes;
} sc_eh_stats;

typedef struct sc_eh sc_eh;

sc_eh *sc_eh_new(sc_wread *r);
void sc_eh_free(sc_eh *e);

/* An executable mapping [start, end) of the file at offset pgoff (path: as /proc/<pid>/maps
 * shows it; "" for anonymous memory, which is ignored). */
void sc_eh_note_map(sc_eh *e, uint64_t start, uint64_t end, uint64_t pgoff, const char *path);

/* The unwind row for pc (a return address minus one, or the interrupted pc). */
enum sc_eh_result sc_eh_find(sc_eh *e, uint64_t pc, sc_eh_row *row);

/* Is pc inside an executable mapping of a file? */
bool sc_eh_mapped(const sc_eh *e, uint64_t pc);

void sc_eh_get_stats(const sc_eh *e, sc_eh_stats *st);

/* pure, for tests: run the CFA programs of a CIE (initial instructions cie[0..cie_len)) and an
 * FDE (fde[0..fde_len)) whose code starts at pc_begin, up to pc. code/data alignment factors as
 * the CIE says. Returns 0 with row filled, -1 when the program is malformed or over a bound. */
int sc_eh_run(const unsigned char *cie, uint32_t cie_len, const unsigned char *fde,
              uint32_t fde_len, uint64_t pc_begin, uint64_t pc, uint64_t code_align,
              int64_t data_align, sc_eh_row *row);
