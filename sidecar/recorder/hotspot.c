/* HotSpot's VMStructs read from a live JVM, and Method* -> name. See hotspot.h for the contract.
 * Facts used (HotSpot's vmStructs.cpp export them for the serviceability agent):
 *   libjvm.so exports, in .dynsym, gHotSpotVMStructs / gHotSpotVMTypes (pointers to arrays of
 *   entries) and gHotSpotVMStructEntry*Offset / *ArrayStride (how to read an entry). A struct
 *   entry is {typeName, fieldName, typeString, isStatic, offset, address}; a type entry
 *   {typeName, superclassName, isOopType, isIntegerType, isUnsigned, size}. Both arrays end with
 *   an entry whose typeName is NULL.
 *   The .dynsym of the mapped libjvm.so is found from its ELF header in memory (PT_DYNAMIC ->
 *   DT_SYMTAB/DT_STRTAB; glibc relocates those in place, so either form is accepted): no file
 *   of the target is opened, so no path of the target is ever resolved.
 *   PerfData (hsperfdata layout): prologue {u32 magic 0xcafec0c0 big-endian, u8 byte_order,
 *   major, minor, accessible, i32 used, overflow, i64 mod_time_stamp, i32 entry_offset,
 *   num_entries}; entry {i32 entry_length, name_offset, vector_length; u8 data_type, flags,
 *   data_units, data_variability; i32 data_offset}. */
#include "sidecar/recorder/hotspot.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

#define USER_TOP 0x800000000000ull /* x86-64 user half: a pointer above is never target memory */
#define MAX_DYN 512                /* .dynamic entries read */
#define MAX_SYMS 100000            /* .dynsym entries of libjvm (~500 real) */
#define MAX_STRTAB (1u << 20)
#define MAX_ENTRIES 200000 /* VMStructs entries walked at most (~800 real) */
#define MAX_STRIDE 4096
#define NAME_MAX_PART                                                                              \
    400 /* per class and method name: with "_[int]" well below folding's 1024-byte frame cut */
#define ACC_NATIVE 0x0100
#define MAX_HOLDER_METHODS 65535 /* HotSpot's own bound on a class's methods */
/* What one JVM may cost the recorder, whatever its memory says (docs/SIDECAR.md "Limits"):
 * at most ~4.5 MiB here (interp.c's names: ~3 MiB more), and a bounded amount of work. */
#define MAX_METHODS 32768            /* distinct Method* per JVM per recording: a 2 MiB table */
#define NAME_BYTES_MAX (1536u << 10) /* their names */
#define HCACHE 1024                  /* holders whose _methods arrays are kept, sorted, ... */
#define HC_ENTRIES_MAX 4096          /* ... when they list at most this many methods (32 KiB) ... */
#define HC_BYTES_MAX (1u << 20)      /* ... within this much; bigger arrays are scanned */
#define SCAN_CHUNK 512               /* Method* read at a time when scanning */
/* Resolving (a Method* read anew: first seen, or stale after classes were unloaded) is work the
 * target decides on, so it is budgeted: one unit per resolution plus one per 2 KiB of a holder's
 * array read; a frame over the budget stays unknown (SC_HS_BUSY) and is tried again later. */
#define WORK_PER_PASS 512
#define WORK_PER_SEC 4096

enum {
    F_M_CM,
    F_M_FLAGS,
    F_CM_CP,
    F_CM_CODESIZE,
    F_CM_NAME,
    F_CP_HOLDER,
    F_CP_LEN,
    F_IK_METHODS,
    F_IK_CP,
    F_K_NAME,
    F_K_CLD,
    F_ARR_DATA,
    F_SYM_LEN,
    F_SYM_BODY,
    F_CLD_LOADER,
    F_INTERP_CODE,
    F_SQ_BUF,
    F_SQ_LIMIT,
    F_PERF_START,
    F_N
};

static const struct {
    const char *type, *field;
    bool is_static;
} want_field[F_N] = {
    {"Method", "_constMethod", 0},
    {"Method", "_access_flags", 0},
    {"ConstMethod", "_constants", 0},
    {"ConstMethod", "_code_size", 0},
    {"ConstMethod", "_name_index", 0},
    {"ConstantPool", "_pool_holder", 0},
    {"ConstantPool", "_length", 0},
    {"InstanceKlass", "_methods", 0},
    {"InstanceKlass", "_constants", 0},
    {"Klass", "_name", 0},
    {"Klass", "_class_loader_data", 0},
    {"Array<Method*>", "_data", 0},
    {"Symbol", "_length", 0},
    {"Symbol", "_body", 0},
    {"ClassLoaderData", "_class_loader", 0},
    {"AbstractInterpreter", "_code", 1},
    {"StubQueue", "_stub_buffer", 0},
    {"StubQueue", "_buffer_limit", 0},
    {"PerfMemory", "_start", 1},
};

#define M_NATIVE 1
#define M_PERMANENT 2
typedef struct meth { /* 32 bytes */
    uint64_t method, code_lo;
    char *name;
    uint32_t gen; /* h->gen when resolved: another one (and not permanent) = stale */
    uint16_t code_size;
    uint8_t st; /* enum sc_hs_status */
    uint8_t flags;
} meth;

typedef struct hcache {
    uint64_t holder, methods;
    uint64_t *m;
    int32_t n;
    uint32_t gen; /* valid while h->hgen is this */
} hcache;

struct sc_hs {
    int fd;
    uint64_t f[F_N]; /* offsets, or addresses for static fields */
    bool have[F_N];
    uint64_t sz_cm, sz_cp;
    uint64_t interp_lo, interp_hi, unload_addr;
    int64_t epoch;
    uint64_t gc_exit[SC_HS_GC_MAX]; /* sun.gc.collector.<n>.lastExitTime, where present */
    int n_gc;
    int64_t gc_epoch; /* their sum at the last poll */
    uint32_t gen;     /* bumped when classes were unloaded: every non-permanent answer is stale */
    uint32_t hgen;    /* bumped then and by sc_hs_forget: every cached holder array is stale */
    bool gc_pending;  /* classes were unloaded since the last pause's end was seen */
    meth *tab;
    size_t mask, used;
    size_t name_bytes, hc_bytes;
    hcache hc[HCACHE];
    uint32_t pass_work, sec_work;
    int64_t sec_start;
    sc_hs_stats st;
    uint64_t syms[16]; /* the gHotSpot* values (S_*), for sc_hs_query */
};

/* ---- bounded reads of the target ---- */

static int rd(sc_hs *h, uint64_t addr, void *buf, size_t len)
{
    if (len == 0 || addr == 0 || addr >= USER_TOP || len > USER_TOP - addr)
        return -1;
    h->st.reads++;
    ssize_t n = pread(h->fd, buf, len, (off_t)addr);
    if (n != (ssize_t)len) {
        h->st.read_faults++;
        return -1;
    }
    return 0;
}
static int rd64(sc_hs *h, uint64_t a, uint64_t *v)
{
    return rd(h, a, v, 8);
}

/* A NUL-terminated string of at most cap-1 bytes, read up to page ends so that a string at the
 * end of a mapping is still found. */
static int rdstr(sc_hs *h, uint64_t addr, char *buf, size_t cap)
{
    size_t got = 0;
    while (got + 1 < cap) {
        size_t chunk = 4096 - ((addr + got) & 4095);
        if (chunk > cap - 1 - got)
            chunk = cap - 1 - got;
        if (rd(h, addr + got, buf + got, chunk) < 0)
            return -1;
        if (memchr(buf + got, 0, chunk))
            return 0;
        got += chunk;
    }
    buf[cap - 1] = '\0';
    return -1;
}

static bool aligned(uint64_t p)
{
    return p && (p & 7) == 0 && p < USER_TOP;
}

/* ---- libjvm's exported symbols, from its image in memory ---- */

enum {
    S_STRUCTS,
    S_TYPES,
    S_SE_TYPE,
    S_SE_FIELD,
    S_SE_STATIC,
    S_SE_OFF,
    S_SE_ADDR,
    S_SE_TYPESTR,
    S_SE_STRIDE,
    S_TE_NAME,
    S_TE_SIZE,
    S_TE_STRIDE,
    S_N
};
#define NO_TYPESTR UINT64_MAX /* libjvm.so exports no gHotSpotVMStructEntryTypeStringOffset */
static const char *const want_sym[S_N] = {
    "gHotSpotVMStructs",
    "gHotSpotVMTypes",
    "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset",
    "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",
    "gHotSpotVMStructEntryAddressOffset",
    "gHotSpotVMStructEntryTypeStringOffset",
    "gHotSpotVMStructEntryArrayStride",
    "gHotSpotVMTypeEntryTypeNameOffset",
    "gHotSpotVMTypeEntrySizeOffset",
    "gHotSpotVMTypeEntryArrayStride",
};

static int fail(char *why, const char *msg)
{
    snprintf(why, SC_HS_WHY_MAX, "%s", msg);
    return -1;
}

static int find_symbols(sc_hs *h, uint64_t base, uint64_t val[S_N], char *why)
{
    Elf64_Ehdr eh;
    if (rd(h, base, &eh, sizeof eh) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64)
        return fail(why, "libjvm.so's ELF header is not readable x86-64 ELF");
    Elf64_Phdr ph[64];
    if (rd(h, base + eh.e_phoff, ph, eh.e_phnum * sizeof *ph) < 0)
        return fail(why, "libjvm.so's program headers are unreadable");
    uint64_t bias = 0, dyn = 0, dyn_len = 0;
    bool load = false;
    for (int i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !load) {
            bias = base - (ph[i].p_vaddr - ph[i].p_offset);
            load = true;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = ph[i].p_vaddr;
            dyn_len = ph[i].p_memsz;
        }
    }
    if (!load || !dyn)
        return fail(why, "libjvm.so has no PT_DYNAMIC");
    Elf64_Dyn d[MAX_DYN];
    size_t nd = dyn_len / sizeof *d;
    if (nd > MAX_DYN)
        nd = MAX_DYN;
    if (nd == 0 || rd(h, bias + dyn, d, nd * sizeof *d) < 0)
        return fail(why, "libjvm.so's .dynamic is unreadable");
    uint64_t symtab = 0, strtab = 0, strsz = 0;
    for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++) {
        uint64_t v = d[i].d_un.d_ptr;
        if (d[i].d_tag == DT_SYMTAB)
            symtab = v < bias ? v + bias : v; /* relocated in place by ld.so, or not */
        else if (d[i].d_tag == DT_STRTAB)
            strtab = v < bias ? v + bias : v;
        else if (d[i].d_tag == DT_STRSZ)
            strsz = v;
    }
    /* GNU ld puts .dynstr right after .dynsym: their distance is the symbol count. */
    if (!symtab || strtab <= symtab || !strsz || strsz > MAX_STRTAB ||
        (strtab - symtab) / sizeof(Elf64_Sym) > MAX_SYMS)
        return fail(why, "libjvm.so's dynamic symbol table is implausible");
    size_t nsym = (size_t)((strtab - symtab) / sizeof(Elf64_Sym));
    Elf64_Sym *sym = malloc(nsym * sizeof *sym);
    char *str = malloc(strsz + 1);
    int rc = -1;
    if (!sym || !str || rd(h, symtab, sym, nsym * sizeof *sym) < 0 ||
        rd(h, strtab, str, strsz) < 0) {
        fail(why, "libjvm.so's dynamic symbols are unreadable");
        goto out;
    }
    str[strsz] = '\0';
    memset(val, 0, S_N * sizeof *val);
    bool found[S_N] = {0};
    for (size_t k = 0; k < nsym; k++) {
        if (sym[k].st_name >= strsz || sym[k].st_shndx == SHN_UNDEF)
            continue;
        const char *nm = str + sym[k].st_name;
        if (strncmp(nm, "gHotSpotVM", 10) != 0)
            continue;
        for (int j = 0; j < S_N; j++)
            if (strcmp(nm, want_sym[j]) == 0) {
                if (rd64(h, bias + sym[k].st_value, &val[j]) < 0) {
                    fail(why, "a gHotSpot* variable is unreadable");
                    goto out;
                }
                found[j] = true;
            }
    }
    /* the entries' C types: only the stack walker's queries want them (sc_hs_query) */
    if (!found[S_SE_TYPESTR]) {
        found[S_SE_TYPESTR] = true;
        val[S_SE_TYPESTR] = NO_TYPESTR;
    }
    for (int j = 0; j < S_N; j++)
        if (!found[j] || (j <= S_TYPES && !val[j])) {
            snprintf(why, SC_HS_WHY_MAX, "libjvm.so exports no %s (no VMStructs)", want_sym[j]);
            goto out;
        }
    for (int j = S_SE_TYPE; j < S_N; j++)
        if ((val[j] > MAX_STRIDE && !(j == S_SE_TYPESTR && val[j] == NO_TYPESTR)) ||
            (j != S_SE_STRIDE && j != S_TE_STRIDE && val[j] + 8 > MAX_STRIDE))
            goto implausible;
    if (val[S_SE_STRIDE] < 8 || val[S_TE_STRIDE] < 8)
        goto implausible;
    rc = 0;
    goto out;
implausible:
    fail(why, "implausible VMStructs entry layout");
out:
    free(sym);
    free(str);
    return rc;
}

/* ---- the tables ---- */

static int read_tables(sc_hs *h, const uint64_t val[S_N], char *why)
{
    unsigned char e[MAX_STRIDE];
    char type[64], field[64];
    size_t n = 0;
    uint64_t last_tn = 0;
    bool type_ok = false;
    for (uint64_t p = val[S_STRUCTS];; p += val[S_SE_STRIDE]) {
        if (++n > MAX_ENTRIES || rd(h, p, e, val[S_SE_STRIDE]) < 0)
            return fail(why, "VMStructs: unreadable or unterminated table");
        uint64_t tn, fn, off, addr;
        int32_t is_static;
        memcpy(&tn, e + val[S_SE_TYPE], 8);
        if (!tn)
            break;
        memcpy(&fn, e + val[S_SE_FIELD], 8);
        memcpy(&is_static, e + val[S_SE_STATIC], 4);
        memcpy(&off, e + val[S_SE_OFF], 8);
        memcpy(&addr, e + val[S_SE_ADDR], 8);
        /* consecutive entries share their type's name: read again only when it changes */
        if (tn != last_tn) {
            last_tn = tn;
            type_ok = rdstr(h, tn, type, sizeof type) == 0;
        }
        if (!type_ok)
            continue; /* longer than any type we want */
        for (int i = 0; i < F_N; i++) {
            if (h->have[i] || strcmp(type, want_field[i].type) != 0)
                continue;
            if (rdstr(h, fn, field, sizeof field) < 0 || strcmp(field, want_field[i].field) != 0 ||
                (is_static != 0) != want_field[i].is_static)
                continue;
            h->f[i] = want_field[i].is_static ? addr : off;
            h->have[i] = true;
        }
    }
    n = 0;
    h->sz_cm = h->sz_cp = 0;
    for (uint64_t p = val[S_TYPES];; p += val[S_TE_STRIDE]) {
        if (++n > MAX_ENTRIES || rd(h, p, e, val[S_TE_STRIDE]) < 0)
            return fail(why, "VMTypes: unreadable or unterminated table");
        uint64_t tn, size;
        memcpy(&tn, e + val[S_TE_NAME], 8);
        if (!tn)
            break;
        memcpy(&size, e + val[S_TE_SIZE], 8);
        if (rdstr(h, tn, type, sizeof type) < 0)
            continue;
        if (strcmp(type, "ConstMethod") == 0)
            h->sz_cm = size;
        else if (strcmp(type, "ConstantPool") == 0)
            h->sz_cp = size;
    }
    for (int i = 0; i < F_N; i++)
        if (!h->have[i] && i != F_PERF_START) {
            snprintf(why, SC_HS_WHY_MAX, "VMStructs lacks %s::%s", want_field[i].type,
                     want_field[i].field);
            return -1;
        }
    if (!h->sz_cm || !h->sz_cp || h->sz_cm > 4096 || h->sz_cp > 4096)
        return fail(why, "VMTypes lacks sizeof(ConstMethod) or sizeof(ConstantPool)");
    for (int i = 0; i < F_N; i++)
        if (!want_field[i].is_static && h->f[i] > 4096)
            return fail(why, "implausible VMStructs field offset");
    return 0;
}

/* The address of a PerfData long counter, 0 if none (-XX:-UsePerfData). */
static uint64_t perf_counter(sc_hs *h, const char *want)
{
    uint64_t start;
    uint32_t magic;
    int32_t off, nent;
    if (!h->have[F_PERF_START] || rd64(h, h->f[F_PERF_START], &start) < 0 || !start ||
        rd(h, start, &magic, 4) < 0 || magic != 0xc0c0feca || rd(h, start + 24, &off, 4) < 0 ||
        rd(h, start + 28, &nent, 4) < 0 || off <= 0 || nent <= 0 || nent > 100000)
        return 0;
    uint64_t e = start + (uint64_t)off;
    char name[128];
    for (int i = 0; i < nent; i++) {
        int32_t ent[5];
        if (rd(h, e, ent, sizeof ent) < 0 || ent[0] <= 0 || ent[0] > 65536)
            return 0;
        if (ent[1] > 0 && rdstr(h, e + (uint64_t)ent[1], name, sizeof name) == 0 &&
            strcmp(name, want) == 0)
            return ent[4] > 0 ? e + (uint64_t)ent[4] : 0;
        e += (uint64_t)ent[0];
    }
    return 0;
}

sc_hs *sc_hs_open(int mem_fd, uint64_t jvm_base, char why[SC_HS_WHY_MAX])
{
    why[0] = '\0';
    sc_hs *h = calloc(1, sizeof *h);
    if (!h) {
        fail(why, "out of memory");
        return NULL;
    }
    h->fd = mem_fd;
    uint64_t val[S_N];
    if (find_symbols(h, jvm_base, val, why) < 0 || read_tables(h, val, why) < 0)
        goto bad;
    _Static_assert(sizeof h->syms >= sizeof val, "room for the symbols' values");
    memcpy(h->syms, val, sizeof val);
    /* AbstractInterpreter::_code -> StubQueue {_stub_buffer, _buffer_limit}: the interpreter's
     * code, which is what "Interpreter" in the agent's map covers too. */
    uint64_t q, buf;
    int32_t lim;
    if (rd64(h, h->f[F_INTERP_CODE], &q) < 0 || !aligned(q) ||
        rd64(h, q + h->f[F_SQ_BUF], &buf) < 0 || rd(h, q + h->f[F_SQ_LIMIT], &lim, 4) < 0 || !buf ||
        lim <= 0 || buf >= USER_TOP) {
        fail(why, "cannot find the interpreter's code (AbstractInterpreter::_code)");
        goto bad;
    }
    h->interp_lo = buf;
    h->interp_hi = buf + (uint64_t)lim;
    h->sec_start = mono_ms();
    h->mask = 1023;
    if (!(h->tab = calloc(h->mask + 1, sizeof *h->tab))) {
        fail(why, "out of memory");
        goto bad;
    }
    h->unload_addr = perf_counter(h, "java.cls.unloadedClasses");
    for (int c = 0; c < SC_HS_GC_MAX; c++) {
        char cname[64];
        snprintf(cname, sizeof cname, "sun.gc.collector.%d.lastExitTime", c);
        uint64_t a = perf_counter(h, cname);
        if (a)
            h->gc_exit[h->n_gc++] = a;
    }
    h->epoch = sc_hs_poll_unloads(h); /* after the table: a change walks it */
    return h;
bad:
    free(h);
    return NULL;
}

static void hcache_drop(sc_hs *h)
{
    for (int i = 0; i < HCACHE; i++) {
        free(h->hc[i].m);
        h->hc[i] = (hcache){0};
    }
    h->hc_bytes = 0;
}

/* May `units` of resolution work be done now? Counted when yes. */
static bool afford(sc_hs *h, uint32_t units)
{
    int64_t now = mono_ms();
    if (now - h->sec_start >= 1000) {
        h->sec_start = now;
        h->sec_work = 0;
    }
    if (h->pass_work + units > WORK_PER_PASS || h->sec_work + units > WORK_PER_SEC) {
        h->st.throttled++;
        return false;
    }
    h->pass_work += units;
    h->sec_work += units;
    return true;
}

void sc_hs_pass(sc_hs *h)
{
    h->pass_work = 0;
}

void sc_hs_free(sc_hs *h)
{
    if (!h)
        return;
    for (size_t i = 0; h->tab && i <= h->mask; i++)
        free(h->tab[i].name);
    free(h->tab);
    hcache_drop(h);
    free(h);
}

bool sc_hs_in_interpreter(const sc_hs *h, uint64_t pc)
{
    return pc >= h->interp_lo && pc < h->interp_hi;
}

void sc_hs_get_stats(const sc_hs *h, sc_hs_stats *st)
{
    *st = h->st;
}

int64_t sc_hs_poll_unloads(sc_hs *h)
{
    int64_t v;
    if (!h->unload_addr || rd(h, h->unload_addr, &v, 8) < 0)
        return -1;
    /* HotSpot counts a class as unloaded when it unlinks it, and frees its metadata later in
     * the same pause (ClassLoaderDataGraph::purge): an answer read from a Method* between the
     * two is about the dead class, and after the free a new class's Method* can sit at that very
     * address (seen: a churned class's method at the same chunk offset, named after the class
     * unloaded before it). So a pause that ends counts too: each collector's lastExitTime. */
    int64_t g = 0;
    for (int c = 0; c < h->n_gc; c++) {
        int64_t t;
        if (rd(h, h->gc_exit[c], &t, 8) == 0)
            g += t;
    }
    bool drop = false;
    if (v != h->epoch) {
        drop = true;
        h->gc_pending = true; /* their metadata may be freed at a pause's end still to come */
    } else if (g != h->gc_epoch && h->gc_pending) {
        drop = true;
        h->gc_pending = false;
    }
    /* A pause that ends with no class unloaded since the previous one frees no metadata: the
     * answers stand (a young collection every few hundred ms would otherwise make them all
     * stale, and their resolving again eat the budget). */
    h->epoch = v;
    h->gc_epoch = g;
    if (drop) {
        /* Classes were unloaded: a cached Method* of theirs may now be freed memory, reused
         * by another method. Forget every answer that is not about a boot-loader class: in
         * O(1), the target choosing how often this happens. */
        h->gen++;
        h->hgen++;
    }
    return v;
}

uint64_t sc_hs_generation(const sc_hs *h)
{
    /* hgen moves with gen and at every sc_hs_forget */
    return (uint64_t)h->gen << 32 | h->hgen;
}

uint64_t sc_hs_unloads_addr(const sc_hs *h)
{
    return h->unload_addr;
}

int64_t sc_hs_peek_unloads(sc_hs *h)
{
    int64_t v;
    if (!h->unload_addr || rd(h, h->unload_addr, &v, 8) < 0)
        return -1;
    return v;
}

/* ---- names ---- */

size_t sc_hs_clean_name(char *s, size_t n, bool dots)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == ';' || c == '(' || c == ' ')
            s[i] = '?'; /* '(' and ' ' would let folding's tidy cut the name and its _[int] */
        else if (dots && c == '/')
            s[i] = '.';
        else if (c == '>' && i > 0 && s[i - 1] == '-')
            s[i] = '?'; /* "->" would split the frame like the agent's inline chains */
    }
    return n;
}

void sc_hs_cut_hidden(char *s)
{
    char *p = strstr(s, "+0x");
    if (!p)
        p = strstr(s, ".0x");
    if (p && p[3] && strspn(p + 3, "0123456789abcdefABCDEF") == strlen(p + 3))
        *p = '\0';
}

static int symbol_text(sc_hs *h, uint64_t sym, char *out, size_t cap, bool dots)
{
    uint16_t len;
    if (!aligned(sym) || rd(h, sym + h->f[F_SYM_LEN], &len, 2) < 0 || len == 0 || len >= cap ||
        rd(h, sym + h->f[F_SYM_BODY], out, len) < 0)
        return -1;
    sc_hs_clean_name(out, len, dots);
    out[len] = '\0';
    return 0;
}

static int u64cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Does the holder's _methods array list M? 1 yes, 0 no, -1 over the work budget. A small array
 * is read once (sorted) until the next epoch, within HC_BYTES_MAX for all; a bigger one is
 * scanned in chunks each time (a class with thousands of methods is rare; many holders sharing
 * one big array is an attack). */
static int holder_lists(sc_hs *h, uint64_t holder, uint64_t methods, uint64_t M)
{
    hcache *c = &h->hc[(holder >> 3) % HCACHE];
    if (c->m && c->gen == h->hgen && c->holder == holder && c->methods == methods)
        return bsearch(&M, c->m, (size_t)c->n, 8, u64cmp) != NULL;
    int32_t n;
    if (rd(h, methods, &n, 4) < 0 || n <= 0 || n > MAX_HOLDER_METHODS)
        return 0;
    size_t bytes = 8 * (size_t)n;
    if (!afford(h, (uint32_t)(bytes >> 11)))
        return -1;
    uint64_t at = methods + h->f[F_ARR_DATA];
    if (n > HC_ENTRIES_MAX) {
        uint64_t chunk[SCAN_CHUNK];
        for (int32_t i = 0; i < n; i += SCAN_CHUNK) {
            int32_t k = n - i < SCAN_CHUNK ? n - i : SCAN_CHUNK;
            if (rd(h, at + 8 * (uint64_t)i, chunk, 8 * (size_t)k) < 0)
                return 0;
            for (int32_t j = 0; j < k; j++)
                if (chunk[j] == M)
                    return 1;
        }
        return 0;
    }
    if (h->hc_bytes + bytes > HC_BYTES_MAX)
        hcache_drop(h);
    uint64_t *a = malloc(bytes);
    if (!a || rd(h, at, a, bytes) < 0) {
        free(a);
        return 0;
    }
    qsort(a, (size_t)n, 8, u64cmp);
    if (c->m)
        h->hc_bytes -= 8 * (size_t)c->n;
    free(c->m);
    *c = (hcache){.holder = holder, .methods = methods, .m = a, .n = n, .gen = h->hgen};
    h->hc_bytes += bytes;
    return bsearch(&M, a, (size_t)n, 8, u64cmp) != NULL;
}

static void set_name(sc_hs *h, meth *e, char *name)
{
    if (e->name)
        h->name_bytes -= strlen(e->name) + 1;
    free(e->name);
    e->name = name;
    if (name)
        h->name_bytes += strlen(name) + 1;
}

static void resolve(sc_hs *h, meth *e)
{
    uint64_t M = e->method, cm, cp, holder, hcp, methods, name_sym, cname_sym;
    set_name(h, e, NULL);
    e->gen = h->gen;
    e->flags = 0;
    e->st = SC_HS_UNREADABLE;
    if (!aligned(M) || rd64(h, M + h->f[F_M_CM], &cm) < 0 || !aligned(cm) ||
        rd64(h, cm + h->f[F_CM_CP], &cp) < 0 || !aligned(cp) ||
        rd64(h, cp + h->f[F_CP_HOLDER], &holder) < 0 || !aligned(holder) ||
        rd64(h, holder + h->f[F_IK_CP], &hcp) < 0 ||
        rd64(h, holder + h->f[F_IK_METHODS], &methods) < 0 || !aligned(methods))
        return;
    /* The holder must own this constant pool and list this very Method*: a live, current
     * method. Garbage, freed or redefined-away methods fail here. */
    e->st = SC_HS_NOT_IN_HOLDER;
    int listed = hcp == cp ? holder_lists(h, holder, methods, M) : 0;
    if (listed < 0) {
        e->st = SC_HS_BUSY;
        e->gen = h->gen - 1; /* stale: tried again when there is budget */
        return;
    }
    if (!listed)
        return;
    uint16_t code_size, name_index, flags;
    int32_t cp_len;
    e->st = SC_HS_BAD_NAME;
    if (rd(h, cm + h->f[F_CM_CODESIZE], &code_size, 2) < 0 ||
        rd(h, cm + h->f[F_CM_NAME], &name_index, 2) < 0 ||
        rd(h, cp + h->f[F_CP_LEN], &cp_len, 4) < 0 || name_index == 0 || name_index >= cp_len ||
        rd64(h, cp + h->sz_cp + 8 * (uint64_t)name_index, &name_sym) < 0 ||
        rd64(h, holder + h->f[F_K_NAME], &cname_sym) < 0 ||
        rd(h, M + h->f[F_M_FLAGS], &flags, 2) < 0)
        return;
    char cname[NAME_MAX_PART], mname[NAME_MAX_PART];
    if (symbol_text(h, cname_sym, cname, sizeof cname, true) < 0 ||
        symbol_text(h, name_sym, mname, sizeof mname, false) < 0)
        return;
    sc_hs_cut_hidden(cname);
    size_t len = strlen(cname) + 1 + strlen(mname) + 1;
    if (h->name_bytes + len > NAME_BYTES_MAX) {
        e->st = SC_HS_FULL;
        return;
    }
    char *name = malloc(len);
    if (!name)
        return;
    snprintf(name, len, "%s.%s", cname, mname);
    set_name(h, e, name);
    e->code_lo = cm + h->sz_cm;
    e->code_size = code_size;
    e->flags = (flags & ACC_NATIVE) ? M_NATIVE : 0;
    /* The boot loader's ClassLoaderData has no loader object (a null handle) and is never
     * unloaded: its methods keep their names across unloading epochs. */
    uint64_t cld, loader = 1;
    if (rd64(h, holder + h->f[F_K_CLD], &cld) == 0 && aligned(cld) &&
        rd64(h, cld + h->f[F_CLD_LOADER], &loader) == 0 && loader == 0)
        e->flags |= M_PERMANENT;
    e->st = SC_HS_OK;
    h->st.resolved++;
}

static meth *slot(sc_hs *h, uint64_t M)
{
    if (h->used * 2 > h->mask && h->used < MAX_METHODS) { /* at most 2 * MAX_METHODS slots */
        size_t nm = h->mask * 2 + 1;
        meth *nt = calloc(nm + 1, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i <= h->mask; i++)
            if (h->tab[i].method) {
                size_t k = (size_t)((h->tab[i].method >> 3) * 0x9E3779B97F4A7C15ull) & nm;
                while (nt[k].method)
                    k = (k + 1) & nm;
                nt[k] = h->tab[i];
            }
        free(h->tab);
        h->tab = nt;
        h->mask = nm;
    }
    size_t k = (size_t)((M >> 3) * 0x9E3779B97F4A7C15ull) & h->mask;
    while (h->tab[k].method && h->tab[k].method != M)
        k = (k + 1) & h->mask;
    return &h->tab[k];
}

static bool stale(const sc_hs *h, const meth *e)
{
    return e->gen != h->gen && !(e->flags & M_PERMANENT);
}

void sc_hs_forget(sc_hs *h, uint64_t method)
{
    /* the holders' method lists read with it may be just as stale */
    h->hgen++;
    if (!aligned(method) || !h->tab)
        return;
    size_t k = (size_t)((method >> 3) * 0x9E3779B97F4A7C15ull) & h->mask;
    for (; h->tab[k].method; k = (k + 1) & h->mask)
        if (h->tab[k].method == method) {
            if (!(h->tab[k].flags & M_PERMANENT))
                h->tab[k].gen = h->gen - 1;
            return;
        }
}

/* The resolved entry of method, or NULL with *st set. */
static meth *lookup_method(sc_hs *h, uint64_t method, enum sc_hs_status *st)
{
    *st = SC_HS_UNREADABLE;
    if (!aligned(method))
        return NULL;
    meth *e = slot(h, method);
    if (!e)
        return NULL;
    if (!e->method) {
        if (h->used >= MAX_METHODS) {
            *st = SC_HS_FULL;
            return NULL;
        }
        if (!afford(h, 1)) {
            *st = SC_HS_BUSY;
            return NULL;
        }
        e->method = method;
        h->used++;
        h->st.methods++;
        resolve(h, e);
    } else if (stale(h, e)) {
        if (!afford(h, 1)) {
            *st = SC_HS_BUSY;
            return NULL;
        }
        resolve(h, e);
    }
    *st = (enum sc_hs_status)e->st;
    return e->st == SC_HS_OK ? e : NULL;
}

enum sc_hs_status sc_hs_frame(sc_hs *h, uint64_t method, uint64_t bcp, const char **name,
                              bool *permanent)
{
    *name = NULL;
    *permanent = false;
    enum sc_hs_status st;
    meth *e = lookup_method(h, method, &st);
    if (!e)
        return st;
    /* A complete interpreter frame holds a bcp inside its own bytecodes (native methods: 0).
     * A half-built or foreign frame almost never passes this together with the holder check. */
    if (bcp == 0 ? !(e->flags & M_NATIVE) : (bcp < e->code_lo || bcp >= e->code_lo + e->code_size))
        return SC_HS_BAD_BCP;
    *name = e->name;
    *permanent = (e->flags & M_PERMANENT) != 0;
    return SC_HS_OK;
}

enum sc_hs_status sc_hs_method(sc_hs *h, uint64_t method, const char **name, bool *permanent)
{
    *name = NULL;
    *permanent = false;
    enum sc_hs_status st;
    meth *e = lookup_method(h, method, &st);
    if (!e)
        return st;
    *name = e->name;
    *permanent = (e->flags & M_PERMANENT) != 0;
    return SC_HS_OK;
}

int sc_hs_query(sc_hs *h, sc_hs_want *w, int n)
{
    const uint64_t *val = h->syms;
    unsigned char e[MAX_STRIDE];
    char type[64], field[64];
    int found = 0;
    for (int i = 0; i < n; i++)
        w[i].found = false;
    size_t k = 0;
    uint64_t last_tn = 0;
    bool type_ok = false;
    for (uint64_t p = val[S_STRUCTS];; p += val[S_SE_STRIDE]) {
        if (++k > MAX_ENTRIES || rd(h, p, e, val[S_SE_STRIDE]) < 0)
            return -1;
        uint64_t tn, fn, ts, off, addr;
        int32_t is_static;
        memcpy(&tn, e + val[S_SE_TYPE], 8);
        if (!tn)
            break;
        memcpy(&fn, e + val[S_SE_FIELD], 8);
        ts = 0;
        if (val[S_SE_TYPESTR] != NO_TYPESTR)
            memcpy(&ts, e + val[S_SE_TYPESTR], 8);
        memcpy(&is_static, e + val[S_SE_STATIC], 4);
        memcpy(&off, e + val[S_SE_OFF], 8);
        memcpy(&addr, e + val[S_SE_ADDR], 8);
        /* the type's name first (consecutive entries share it: read again only when its
         * pointer changes), the field's only for a type someone wants */
        if (tn != last_tn) {
            last_tn = tn;
            type_ok = rdstr(h, tn, type, sizeof type) == 0;
        }
        bool wanted = false;
        for (int i = 0; i < n && type_ok && !wanted; i++)
            wanted = !w[i].found && w[i].field && strcmp(type, w[i].type) == 0;
        if (!wanted || rdstr(h, fn, field, sizeof field) < 0)
            continue;
        for (int i = 0; i < n; i++) {
            if (w[i].found || !w[i].field)
                continue;
            if (strcmp(type, w[i].type) != 0 || strcmp(field, w[i].field) != 0)
                continue;
            w[i].is_static = is_static != 0;
            w[i].value = is_static ? addr : off;
            w[i].typestr[0] = '\0';
            if (ts && rdstr(h, ts, w[i].typestr, sizeof w[i].typestr) < 0)
                w[i].typestr[0] = '\0';
            w[i].found = true;
            found++;
        }
    }
    k = 0;
    for (uint64_t p = val[S_TYPES];; p += val[S_TE_STRIDE]) {
        if (++k > MAX_ENTRIES || rd(h, p, e, val[S_TE_STRIDE]) < 0)
            return -1;
        uint64_t tn, size;
        memcpy(&tn, e + val[S_TE_NAME], 8);
        if (!tn)
            break;
        memcpy(&size, e + val[S_TE_SIZE], 8);
        bool named = false;
        for (int i = 0; i < n; i++) {
            if (w[i].found || w[i].field)
                continue;
            if (!named) {
                if (rdstr(h, tn, type, sizeof type) < 0)
                    break;
                named = true;
            }
            if (strcmp(type, w[i].type) == 0) {
                w[i].value = size;
                w[i].found = true;
                found++;
            }
        }
    }
    return found;
}

int sc_hs_fd(const sc_hs *h)
{
    return h->fd;
}
