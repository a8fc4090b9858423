/* The code cache from outside: see codeheap.h. Layout facts (HotSpot memory/heap.cpp, heap.hpp,
 * code/codeBlob.hpp, code/nmethod.hpp):
 *   a heap's segment i covers [low + i << log2, low + (i + 1) << log2); its segmap byte says
 *   0 (a block header is here), 1..254 (hop back that many segments: long blocks are marked
 *   0,1,..,254,1,..), 0xFF (free);
 *   a block is HeapBlock { Header { _length (segments), _used } } and the blob follows it
 *   (HeapBlock::allocated_space() = this + 1), so blob = block + sizeof(HeapBlock);
 *   JDK <= 22: CodeBlob::_code_begin/_code_end and nmethod's _verified_entry_point and
 *   _deopt_handler_begin are pointers; JDK 23+: _code_offset/_data_offset and
 *   _deopt_handler_offset count from the blob, _verified_entry_offset from code_begin. */
#include "sidecar/recorder/codeheap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR_MAX 1024 /* bytes of HeapBlock + nmethod header read at once (JDK 17: 16 + 352) */
#define NAME_CACHE 1024

/* Logical fields, each with its VMStructs spellings across releases. */
enum {
    V_HEAPS,
    V_LOW,
    V_HIGH,
    V_GA_LEN,
    V_GA_DATA,
    V_CH_MEMORY,
    V_CH_SEGMAP,
    V_CH_LOG2,
    V_VS_LOW,
    V_VS_HIGH,
    V_HB_HEADER,
    V_HB_USED,
    V_CB_NAME,
    V_CB_SIZE,
    V_CB_COMPLETE,
    V_CB_FRAME,
    V_CB_CODE_BEGIN, /* pointer, or offset from the blob */
    V_CB_CODE_END,   /* pointer, or _data_offset from the blob */
    V_NM_METHOD,
    V_NM_VERIFIED, /* pointer, or offset from code_begin */
    V_NM_DEOPT,    /* pointer, or offset from the blob */
    V_NM_DEOPT_MH, /* optional */
    V_NM_ORIG_PC,
    V_NM_COMPILE_ID, /* optional */
    V_CALL_STUB_RA,
    /* the scopes (inlined methods), optional: JDK <= 22 keep them next to the code, 23+ in
     * immutable data; the metadata table (Method* by index) in the data section or the
     * mutable data */
    V_NM_SD_BEGIN, /* CompiledMethod::_scopes_data_begin (pointer) or _scopes_data_offset */
    V_NM_PCS,      /* _scopes_pcs_offset */
    V_NM_DEPS,     /* _dependencies_offset (the PcDescs' end, JDK <= 22) */
    V_NM_META,     /* _metadata_offset (JDK <= 22) */
    V_NM_IMM,      /* _immutable_data (JDK 23+) */
    V_NM_IMM_SIZE,
    V_CB_MUT, /* CodeBlob::_mutable_data (JDK 23+) */
    V_CB_MUT_SIZE,
    V_CB_RELOC,
    V_PC_OFF, /* PcDesc */
    V_PC_SCOPE,
    V_VM_MAJOR,
    V_T_PCDESC,
    V_T_HEAPBLOCK, /* type sizes */
    V_T_CODEBLOB,
    V_T_NMETHOD,
    V_N
};

static const struct {
    int v;
    const char *type, *field; /* field NULL: sizeof(type) */
} spelling[] = {
    {V_HEAPS, "CodeCache", "_heaps"},
    {V_LOW, "CodeCache", "_low_bound"},
    {V_HIGH, "CodeCache", "_high_bound"},
    {V_GA_LEN, "GrowableArrayBase", "_len"},
    {V_GA_LEN, "GenericGrowableArray", "_len"},
    {V_GA_DATA, "GrowableArray<int>", "_data"},
    {V_CH_MEMORY, "CodeHeap", "_memory"},
    {V_CH_SEGMAP, "CodeHeap", "_segmap"},
    {V_CH_LOG2, "CodeHeap", "_log2_segment_size"},
    {V_VS_LOW, "VirtualSpace", "_low"},
    {V_VS_HIGH, "VirtualSpace", "_high"},
    {V_HB_HEADER, "HeapBlock", "_header"},
    {V_HB_USED, "HeapBlock::Header", "_used"},
    {V_CB_NAME, "CodeBlob", "_name"},
    {V_CB_SIZE, "CodeBlob", "_size"},
    {V_CB_COMPLETE, "CodeBlob", "_frame_complete_offset"},
    {V_CB_FRAME, "CodeBlob", "_frame_size"},
    {V_CB_CODE_BEGIN, "CodeBlob", "_code_begin"},
    {V_CB_CODE_BEGIN, "CodeBlob", "_code_offset"},
    {V_CB_CODE_END, "CodeBlob", "_code_end"},
    {V_CB_CODE_END, "CodeBlob", "_data_offset"},
    {V_NM_METHOD, "nmethod", "_method"},
    {V_NM_METHOD, "CompiledMethod", "_method"},
    {V_NM_VERIFIED, "nmethod", "_verified_entry_point"},
    {V_NM_VERIFIED, "nmethod", "_verified_entry_offset"},
    {V_NM_DEOPT, "CompiledMethod", "_deopt_handler_begin"},
    {V_NM_DEOPT, "nmethod", "_deopt_handler_begin"},
    {V_NM_DEOPT, "nmethod", "_deopt_handler_offset"},
    {V_NM_DEOPT_MH, "CompiledMethod", "_deopt_mh_handler_begin"},
    {V_NM_DEOPT_MH, "nmethod", "_deopt_mh_handler_begin"},
    {V_NM_DEOPT_MH, "nmethod", "_deopt_mh_handler_offset"},
    {V_NM_ORIG_PC, "nmethod", "_orig_pc_offset"},
    {V_NM_COMPILE_ID, "nmethod", "_compile_id"},
    {V_CALL_STUB_RA, "StubRoutines", "_call_stub_return_address"},
    {V_NM_SD_BEGIN, "CompiledMethod", "_scopes_data_begin"},
    {V_NM_SD_BEGIN, "nmethod", "_scopes_data_begin"},
    {V_NM_SD_BEGIN, "nmethod", "_scopes_data_offset"},
    {V_NM_PCS, "nmethod", "_scopes_pcs_offset"},
    {V_NM_DEPS, "nmethod", "_dependencies_offset"},
    {V_NM_META, "nmethod", "_metadata_offset"},
    {V_NM_IMM, "nmethod", "_immutable_data"},
    {V_NM_IMM_SIZE, "nmethod", "_immutable_data_size"},
    {V_CB_MUT, "CodeBlob", "_mutable_data"},
    {V_CB_MUT_SIZE, "CodeBlob", "_mutable_data_size"},
    {V_CB_RELOC, "CodeBlob", "_relocation_size"},
    {V_PC_OFF, "PcDesc", "_pc_offset"},
    {V_PC_SCOPE, "PcDesc", "_scope_decode_offset"},
    {V_VM_MAJOR, "Abstract_VM_Version", "_vm_major_version"},
    {V_T_PCDESC, "PcDesc", NULL},
    {V_T_HEAPBLOCK, "HeapBlock", NULL},
    {V_T_CODEBLOB, "CodeBlob", NULL},
    {V_T_NMETHOD, "nmethod", NULL},
};
#define N_SPELLING (int)(sizeof spelling / sizeof spelling[0])

typedef struct field {
    bool have, is_static;
    bool pointer; /* "address"/"char*"...: an absolute address, else a number (an offset) */
    bool is_signed;
    uint8_t width; /* 1, 2, 4 or 8 */
    uint64_t value;
} field;

typedef struct heap {
    uint64_t lo, hi; /* committed code: VirtualSpace _low, _high */
    uint64_t segmap; /* its segment map's _low */
    uint64_t desc;   /* the CodeHeap itself, to read _high again when code grows */
    unsigned log2;
} heap;

typedef struct slot { /* blob cache entry */
    sc_blob b;
    uint64_t pass; /* when last read or checked */
    bool used;
} slot;

typedef struct pcent {
    uint64_t pc, start;
} pcent;

typedef struct nament {
    uint64_t ptr;
    char text[SC_CH_NAME_MAX];
} nament;

struct sc_ch {
    sc_wread *r;
    field f[V_N];
    uint64_t low, high, call_stub_ra;
    heap heaps[SC_CH_MAX_HEAPS];
    int n_heaps;
    uint64_t heaps_pass; /* pass in which the heaps' bounds were last read */
    size_t hb_size, hdr_len;
    slot *tab;
    size_t tab_mask, tab_used;
    pcent *pcs;
    nament names[NAME_CACHE];
    uint64_t pass;
    uint64_t warm;      /* the last of the first two passes that looked anything up (0: none yet) */
    int scopes;         /* 0 none, 1 JDK <= 22 layout, 2 JDK 23+ (immutable/mutable data) */
    unsigned u5_excess; /* the compressed stream's excluded bytes: 0 (JDK < 20) or 1 */
    uint32_t pcdesc;    /* sizeof(PcDesc) */
    sc_ch_stats st;
};

/* ---- field widths and values ---- */

static void type_width(field *f, const char *t)
{
    f->pointer = strchr(t, '*') || !strcmp(t, "address");
    f->is_signed = true;
    if (f->pointer || !strcmp(t, "size_t") || !strcmp(t, "intptr_t") || !strcmp(t, "uintptr_t") ||
        !strcmp(t, "uint64_t") || !strcmp(t, "int64_t") || !strcmp(t, "long") ||
        !strcmp(t, "jlong") || !strcmp(t, "VirtualSpace") || !strcmp(t, "HeapBlock::Header"))
        f->width = 8;
    else if (!strcmp(t, "int") || !strcmp(t, "jint") || !strcmp(t, "int32_t") ||
             !strcmp(t, "uint32_t") || !strcmp(t, "u4") || !strcmp(t, "unsigned int") ||
             !strcmp(t, "uint"))
        f->width = 4;
    else if (!strcmp(t, "int16_t") || !strcmp(t, "uint16_t") || !strcmp(t, "u2") ||
             !strcmp(t, "short") || !strcmp(t, "jshort"))
        f->width = 2;
    else if (!strcmp(t, "bool") || !strcmp(t, "u1") || !strcmp(t, "uint8_t") ||
             !strcmp(t, "int8_t") || !strcmp(t, "signed char") || !strcmp(t, "char") ||
             !strcmp(t, "CompLevel") || !strcmp(t, "jbyte"))
        f->width = 1;
    else
        f->width = 0; /* unknown: unusable */
    if (t[0] == 'u' || !strcmp(t, "size_t") || !strcmp(t, "bool"))
        f->is_signed = false;
}

/* The value of field f inside a header copy of len bytes; 0 when it does not fit. */
static int64_t get_field(const field *f, const unsigned char *h, size_t len)
{
    if (!f->have || f->width == 0 || f->value > len || len - f->value < f->width)
        return 0;
    const unsigned char *p = h + f->value;
    switch (f->width) {
    case 1:
        return f->is_signed ? (int8_t)p[0] : p[0];
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return f->is_signed ? (int16_t)v : v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return f->is_signed ? (int64_t)(int32_t)v : (int64_t)v;
    }
    default: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static int rd64(sc_ch *c, uint64_t a, uint64_t *v)
{
    return sc_wr_read(c->r, a, v, 8);
}

static int fail(char *why, const char *msg)
{
    snprintf(why, SC_HS_WHY_MAX, "%s", msg);
    return -1;
}

/* Read (again) the heaps' bounds: CodeCache::_heaps -> CodeHeap* -> _memory, _segmap. */
static int read_heaps(sc_ch *c)
{
    uint64_t arr, data;
    int32_t len;
    const field *F = c->f;
    if (rd64(c, F[V_HEAPS].value, &arr) < 0 || !sc_wr_ptr_ok(arr) ||
        sc_wr_read(c->r, arr + F[V_GA_LEN].value, &len, 4) < 0 ||
        rd64(c, arr + F[V_GA_DATA].value, &data) < 0 || len <= 0 || !sc_wr_ptr_ok(data))
        return -1;
    int n = len > SC_CH_MAX_HEAPS ? (int)SC_CH_MAX_HEAPS : (int)len;
    uint64_t ptrs[SC_CH_MAX_HEAPS];
    if (sc_wr_read(c->r, data, ptrs, 8 * (size_t)n) < 0)
        return -1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        uint64_t h = ptrs[i], lo, hi, seg;
        int32_t l2;
        if (!sc_wr_ptr_ok(h) || rd64(c, h + F[V_CH_MEMORY].value + F[V_VS_LOW].value, &lo) < 0 ||
            rd64(c, h + F[V_CH_MEMORY].value + F[V_VS_HIGH].value, &hi) < 0 ||
            rd64(c, h + F[V_CH_SEGMAP].value + F[V_VS_LOW].value, &seg) < 0 ||
            sc_wr_read(c->r, h + F[V_CH_LOG2].value, &l2, 4) < 0)
            continue;
        /* a heap outside the code cache's reservation, or with absurd segments, is ignored */
        if (l2 < 4 || l2 > 16 || lo >= hi || lo < c->low || hi > c->high || !seg ||
            seg >= SC_WR_USER_TOP)
            continue;
        c->heaps[k++] = (heap){.lo = lo, .hi = hi, .segmap = seg, .desc = h, .log2 = (unsigned)l2};
    }
    c->n_heaps = k;
    c->heaps_pass = c->pass;
    return k > 0 ? 0 : -1;
}

sc_ch *sc_ch_open(sc_hs *hs, sc_wread *r, char why[SC_HS_WHY_MAX])
{
    why[0] = '\0';
    sc_hs_want w[N_SPELLING];
    for (int i = 0; i < N_SPELLING; i++)
        w[i] = (sc_hs_want){.type = spelling[i].type, .field = spelling[i].field};
    if (sc_hs_query(hs, w, N_SPELLING) < 0) {
        fail(why, "VMStructs could not be read again");
        return NULL;
    }
    sc_ch *c = calloc(1, sizeof *c);
    if (!c) {
        fail(why, "out of memory");
        return NULL;
    }
    c->r = r;
    for (int i = 0; i < N_SPELLING; i++) {
        field *f = &c->f[spelling[i].v];
        if (!w[i].found || f->have)
            continue;
        f->have = true;
        f->is_static = w[i].is_static;
        f->value = w[i].value;
        if (spelling[i].field)
            type_width(f, w[i].typestr);
    }
    static const int optional[] = {V_NM_DEOPT_MH, V_NM_COMPILE_ID, V_HB_HEADER,   V_NM_SD_BEGIN,
                                   V_NM_PCS,      V_NM_DEPS,       V_NM_META,     V_NM_IMM,
                                   V_NM_IMM_SIZE, V_CB_MUT,        V_CB_MUT_SIZE, V_CB_RELOC,
                                   V_PC_OFF,      V_PC_SCOPE,      V_VM_MAJOR,    V_T_PCDESC};
    for (int v = 0; v < V_N; v++) {
        bool opt = false;
        for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
            opt |= optional[i] == v;
        if (c->f[v].have || opt)
            continue;
        for (int i = 0; i < N_SPELLING; i++)
            if (spelling[i].v == v) {
                snprintf(why, SC_HS_WHY_MAX, "VMStructs lacks %s%s%s", spelling[i].type,
                         spelling[i].field ? "::" : " size",
                         spelling[i].field ? spelling[i].field : "");
                break;
            }
        goto bad;
    }
    field *F = c->f;
    c->hb_size = F[V_T_HEAPBLOCK].value;
    size_t nm = F[V_T_NMETHOD].value;
    if (c->hb_size < 4 || c->hb_size > 64 || nm < F[V_T_CODEBLOB].value || nm > HDR_MAX - 64) {
        fail(why, "implausible HeapBlock or nmethod size");
        goto bad;
    }
    c->hdr_len = c->hb_size + nm;
    /* every instance field read from a header must lie inside the header we read */
    for (int v = 0; v < V_N; v++) {
        const field *f = &F[v];
        if (!f->have || f->is_static || v >= V_T_PCDESC || v == V_GA_LEN || v == V_GA_DATA ||
            v == V_CH_MEMORY || v == V_CH_SEGMAP || v == V_CH_LOG2 || v == V_VS_LOW ||
            v == V_VS_HIGH || v == V_HB_HEADER || v == V_PC_OFF || v == V_PC_SCOPE)
            continue;
        size_t lim = v == V_HB_USED ? c->hb_size : nm;
        if (f->width == 0 || f->value > lim || lim - f->value < f->width) {
            fail(why, "implausible VMStructs field (code blob layout)");
            goto bad;
        }
    }
    if (F[V_HB_HEADER].have && F[V_HB_HEADER].value + F[V_HB_USED].value + 1 > c->hb_size) {
        fail(why, "implausible HeapBlock layout");
        goto bad;
    }
    if (F[V_HB_HEADER].have)
        F[V_HB_USED].value += F[V_HB_HEADER].value;
    if (!F[V_HEAPS].is_static || !F[V_LOW].is_static || !F[V_HIGH].is_static ||
        !F[V_CALL_STUB_RA].is_static || F[V_GA_LEN].value > 64 || F[V_GA_DATA].value > 64 ||
        F[V_CH_MEMORY].value > 4096 || F[V_CH_SEGMAP].value > 4096 || F[V_CH_LOG2].value > 4096 ||
        F[V_VS_LOW].value > 256 || F[V_VS_HIGH].value > 256 || !F[V_CB_NAME].pointer) {
        fail(why, "implausible VMStructs field (code cache)");
        goto bad;
    }
    /* inlined frames from the scopes: every piece present and plausible, else only the
     * nmethod's own method names its frames */
    int32_t major = 0;
    bool old_layout = F[V_NM_SD_BEGIN].have && F[V_NM_SD_BEGIN].pointer && F[V_NM_DEPS].have &&
                      F[V_NM_META].have && F[V_NM_PCS].have;
    bool new_layout = F[V_NM_SD_BEGIN].have && !F[V_NM_SD_BEGIN].pointer && F[V_NM_IMM].have &&
                      F[V_NM_IMM_SIZE].have && F[V_CB_MUT].have && F[V_CB_MUT_SIZE].have &&
                      F[V_CB_RELOC].have && F[V_NM_PCS].have;
    if ((old_layout || new_layout) && F[V_PC_OFF].have && F[V_PC_SCOPE].have &&
        F[V_T_PCDESC].have && F[V_T_PCDESC].value >= 8 && F[V_T_PCDESC].value <= 64 &&
        F[V_PC_OFF].value + 4 <= F[V_T_PCDESC].value &&
        F[V_PC_SCOPE].value + 4 <= F[V_T_PCDESC].value && F[V_VM_MAJOR].have &&
        F[V_VM_MAJOR].is_static && sc_wr_read(r, F[V_VM_MAJOR].value, &major, 4) == 0 &&
        major >= 9 && major < 100) {
        c->scopes = old_layout ? 1 : 2;
        /* JDK 20 made the compressed stream's bytes UNSIGNED5 with one excluded byte (0) */
        c->u5_excess = major >= 20 ? 1 : 0;
        c->pcdesc = (uint32_t)F[V_T_PCDESC].value;
    }
    if (rd64(c, F[V_LOW].value, &c->low) < 0 || rd64(c, F[V_HIGH].value, &c->high) < 0 ||
        c->low < 4096 || c->low >= c->high || c->high > SC_WR_USER_TOP ||
        c->high - c->low > (64ull << 30)) {
        fail(why, "the code cache's bounds are unreadable or implausible");
        goto bad;
    }
    if (rd64(c, F[V_CALL_STUB_RA].value, &c->call_stub_ra) < 0 ||
        !sc_ch_contains(c, c->call_stub_ra)) {
        fail(why, "StubRoutines::_call_stub_return_address is unreadable");
        goto bad;
    }
    if (read_heaps(c) < 0) {
        fail(why, "the code heaps (CodeCache::_heaps) are unreadable");
        goto bad;
    }
    c->tab_mask = 1023;
    c->tab = calloc(c->tab_mask + 1, sizeof *c->tab);
    c->pcs = calloc(SC_CH_PC_CACHE, sizeof *c->pcs);
    if (!c->tab || !c->pcs) {
        fail(why, "out of memory");
        goto bad;
    }
    c->pass = 1;
    return c;
bad:
    sc_ch_free(c);
    return NULL;
}

void sc_ch_free(sc_ch *c)
{
    if (!c)
        return;
    free(c->tab);
    free(c->pcs);
    free(c);
}

bool sc_ch_contains(const sc_ch *c, uint64_t pc)
{
    return c && pc >= c->low && pc < c->high;
}

uint64_t sc_ch_call_stub_ra(const sc_ch *c)
{
    return c->call_stub_ra;
}

void sc_ch_pass(sc_ch *c)
{
    c->pass++;
}

bool sc_ch_settled(const sc_ch *c, const sc_blob *b)
{
    return b->kind != SC_BLOB_NMETHOD || b->first_pass <= c->warm || b->first_pass + 2 <= c->pass;
}

void sc_ch_get_stats(const sc_ch *c, sc_ch_stats *st)
{
    *st = c ? c->st : (sc_ch_stats){0};
}

/* ---- names ---- */

static const char *blob_name(sc_ch *c, uint64_t ptr)
{
    nament *e = &c->names[(ptr >> 3) % NAME_CACHE];
    if (e->ptr == ptr && ptr)
        return e->text;
    char buf[SC_CH_NAME_MAX];
    /* names are C strings in libjvm's .rodata: read up to the page's end first (the next page
     * may not exist), then on into the next page if the NUL has not come yet */
    size_t len = sizeof buf - 1, room = 4096 - (ptr & 4095);
    size_t first = room < len ? room : len;
    if (sc_wr_read(c->r, ptr, buf, first) < 0)
        return NULL;
    if (first < len && !memchr(buf, 0, first) &&
        sc_wr_read(c->r, ptr + first, buf + first, len - first) < 0)
        return NULL;
    buf[len] = '\0';
    for (size_t i = 0; buf[i]; i++)
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e)
            buf[i] = '?';
    e->ptr = ptr;
    memcpy(e->text, buf, sizeof buf);
    return e->text;
}

static enum sc_blob_kind kind_of(const char *name, bool *frameless)
{
    *frameless = false;
    if (!strcmp(name, "nmethod") || !strcmp(name, "native nmethod"))
        return SC_BLOB_NMETHOD;
    if (!strcmp(name, "Interpreter"))
        return SC_BLOB_INTERP;
    if (!strncmp(name, "Cont", 4) || !strncmp(name, "cont", 4))
        return SC_BLOB_VTHREAD;
    /* vtable/itable dispatch stubs jump to their target: never a frame of their own */
    *frameless = !strncmp(name, "vtable", 6) || !strncmp(name, "itable", 6);
    return SC_BLOB_STUB;
}

/* ---- one blob from its block header ---- */

/* The nmethod's PcDescs, scopes data and metadata table (absolute ranges; all 0 when not
 * plausible). Offsets are ints of the header; any range that does not make sense is dropped. */
static void scope_ranges(const sc_ch *c, const unsigned char *x, size_t xl, sc_blob *b)
{
    const field *F = c->f;
    uint64_t pl, ph, sl, sh, ml, mh;
    if (c->scopes == 1) {
        int64_t pcs = get_field(&F[V_NM_PCS], x, xl), deps = get_field(&F[V_NM_DEPS], x, xl);
        int64_t meta = get_field(&F[V_NM_META], x, xl);
        uint64_t sd = (uint64_t)get_field(&F[V_NM_SD_BEGIN], x, xl);
        if (pcs <= 0 || deps < pcs || meta <= 0 || (uint64_t)deps > b->end - b->start)
            return;
        pl = b->start + (uint64_t)pcs, ph = b->start + (uint64_t)deps;
        sl = sd, sh = pl;
        ml = b->start + (uint64_t)meta, mh = sd;
        if (sd < ml || sd > pl)
            return;
    } else if (c->scopes == 2) {
        uint64_t imm = (uint64_t)get_field(&F[V_NM_IMM], x, xl);
        int64_t isz = get_field(&F[V_NM_IMM_SIZE], x, xl), pcs = get_field(&F[V_NM_PCS], x, xl);
        int64_t sdo = get_field(&F[V_NM_SD_BEGIN], x, xl);
        uint64_t mut = (uint64_t)get_field(&F[V_CB_MUT], x, xl);
        int64_t msz = get_field(&F[V_CB_MUT_SIZE], x, xl), rel = get_field(&F[V_CB_RELOC], x, xl);
        if (!sc_wr_ptr_ok(imm) || isz <= 0 || isz > (1 << 26) || pcs < 0 || sdo < pcs ||
            sdo > isz || !sc_wr_ptr_ok(mut) || rel < 0 || msz < rel || msz > (1 << 26))
            return;
        pl = imm + (uint64_t)pcs, ph = imm + (uint64_t)sdo;
        sl = ph, sh = imm + (uint64_t)isz;
        ml = mut + (uint64_t)rel, mh = mut + (uint64_t)msz;
    } else {
        return;
    }
    if (pl >= ph || sl >= sh || ml > mh || (ph - pl) % c->pcdesc || ph - pl > (1u << 24) ||
        sh - sl > (1u << 26) || mh - ml > (1u << 24) || ph >= SC_WR_USER_TOP ||
        sh >= SC_WR_USER_TOP || mh >= SC_WR_USER_TOP)
        return;
    b->pcs_lo = pl, b->pcs_hi = ph, b->sd_lo = sl, b->sd_hi = sh, b->md_lo = ml, b->md_hi = mh;
}

/* Parse the block at `block` from its header copy h (hdr_len bytes). 0 ok, -1 not a used blob
 * or implausible. */
static int parse_blob(sc_ch *c, uint64_t block, uint64_t heap_hi, const unsigned char *h,
                      sc_blob *b)
{
    const field *F = c->f;
    size_t hl = c->hdr_len, hb = c->hb_size;
    if (h[F[V_HB_USED].value] == 0)
        return -1;                   /* a free block */
    const unsigned char *x = h + hb; /* the blob's header */
    size_t xl = hl - hb;
    *b = (sc_blob){.start = block + hb, .frame_size = -1};
    int64_t size = get_field(&F[V_CB_SIZE], x, xl);
    if (size <= 0 || (uint64_t)size > heap_hi - b->start)
        return -1;
    b->end = b->start + (uint64_t)size;
    int64_t cb = get_field(&F[V_CB_CODE_BEGIN], x, xl), ce = get_field(&F[V_CB_CODE_END], x, xl);
    b->code_begin = F[V_CB_CODE_BEGIN].pointer ? (uint64_t)cb : b->start + (uint64_t)cb;
    b->code_end = F[V_CB_CODE_END].pointer ? (uint64_t)ce : b->start + (uint64_t)ce;
    if (b->code_begin < b->start || b->code_end > b->end || b->code_begin > b->code_end)
        return -1;
    int64_t fs = get_field(&F[V_CB_FRAME], x, xl);
    if (fs >= 0 && (uint64_t)fs * 8 <= SC_CH_MAX_FRAME)
        b->frame_size = (int32_t)(fs * 8);
    int64_t fc = get_field(&F[V_CB_COMPLETE], x, xl);
    b->frame_complete = fc > 0 && (uint64_t)fc <= b->code_end - b->code_begin
                            ? b->code_begin + (uint64_t)fc
                            : b->code_begin;
    b->name_ptr = (uint64_t)get_field(&F[V_CB_NAME], x, xl);
    const char *name = blob_name(c, b->name_ptr);
    if (!name)
        return -1;
    snprintf(b->name, sizeof b->name, "%s", name);
    bool frameless;
    b->kind = (uint8_t)kind_of(b->name, &frameless);
    b->frameless = frameless;
    b->deopt_blob = !strcmp(b->name, "UncommonTrapBlob") || !strcmp(b->name, "DeoptimizationBlob");
    if (b->kind == SC_BLOB_NMETHOD) {
        b->method = (uint64_t)get_field(&F[V_NM_METHOD], x, xl);
        int64_t ve = get_field(&F[V_NM_VERIFIED], x, xl);
        b->verified_entry = F[V_NM_VERIFIED].pointer ? (uint64_t)ve : b->code_begin + (uint64_t)ve;
        if (b->verified_entry < b->code_begin || b->verified_entry >= b->code_end)
            b->verified_entry = b->code_begin;
        int64_t d = get_field(&F[V_NM_DEOPT], x, xl);
        b->deopt = F[V_NM_DEOPT].pointer ? (uint64_t)d : b->start + (uint64_t)d;
        if (F[V_NM_DEOPT_MH].have) {
            int64_t dm = get_field(&F[V_NM_DEOPT_MH], x, xl);
            b->deopt_mh = F[V_NM_DEOPT_MH].pointer ? (uint64_t)dm : b->start + (uint64_t)dm;
        }
        if (b->deopt < b->code_begin || b->deopt >= b->code_end)
            b->deopt = 0;
        if (b->deopt_mh < b->code_begin || b->deopt_mh >= b->code_end)
            b->deopt_mh = 0;
        int64_t o = get_field(&F[V_NM_ORIG_PC], x, xl);
        b->orig_pc_offset = o >= 0 && o < (int64_t)SC_CH_MAX_FRAME ? (int32_t)o : -1;
        b->compile_id = (int32_t)get_field(&F[V_NM_COMPILE_ID], x, xl);
        scope_ranges(c, x, xl, b);
    }
    return 0;
}

static int read_block(sc_ch *c, uint64_t block, uint64_t heap_hi, sc_blob *b)
{
    unsigned char h[HDR_MAX];
    /* the header may end past the heap's committed end only for garbage: then it is refused */
    if (block + c->hdr_len > heap_hi || sc_wr_read(c->r, block, h, c->hdr_len) < 0)
        return -1;
    return parse_blob(c, block, heap_hi, h, b);
}

/* ---- the cache ---- */

static uint64_t mix(uint64_t v)
{
    return (v >> 4) * 0x9E3779B97F4A7C15ull;
}

/* The pc cache's slot: every bit of pc counts (two return addresses 8 bytes apart, a call and
 * the next one, must not share a slot), the product's high bits spread them. */
static size_t pc_slot(uint64_t pc)
{
    return (size_t)((pc * 0x9E3779B97F4A7C15ull) >> 32) % SC_CH_PC_CACHE;
}

static slot *tab_slot(sc_ch *c, uint64_t start)
{
    size_t k = (size_t)mix(start) & c->tab_mask;
    while (c->tab[k].used && c->tab[k].b.start != start)
        k = (k + 1) & c->tab_mask;
    return &c->tab[k];
}

static void tab_reset(sc_ch *c)
{
    memset(c->tab, 0, (c->tab_mask + 1) * sizeof *c->tab);
    memset(c->pcs, 0, SC_CH_PC_CACHE * sizeof *c->pcs);
    c->tab_used = 0;
    c->st.resets++;
    /* what was read before is forgotten: as at the start, nothing can vouch for this pass and
     * the next (sc_ch_settled) */
    c->warm = c->pass + 1;
}

static slot *tab_put(sc_ch *c, const sc_blob *b)
{
    if (c->tab_used * 2 >= c->tab_mask) {
        if (c->tab_mask + 1 >= SC_CH_MAX_BLOBS) {
            tab_reset(c);
        } else {
            size_t nm = c->tab_mask * 2 + 1;
            slot *nt = calloc(nm + 1, sizeof *nt);
            if (!nt) {
                tab_reset(c);
            } else {
                for (size_t i = 0; i <= c->tab_mask; i++)
                    if (c->tab[i].used) {
                        size_t k = (size_t)mix(c->tab[i].b.start) & nm;
                        while (nt[k].used)
                            k = (k + 1) & nm;
                        nt[k] = c->tab[i];
                    }
                free(c->tab);
                c->tab = nt;
                c->tab_mask = nm;
            }
        }
    }
    slot *s = tab_slot(c, b->start);
    if (!s->used)
        c->tab_used++;
    s->used = true;
    s->b = *b;
    s->pass = c->pass;
    return s;
}

static const heap *heap_of(sc_ch *c, uint64_t pc)
{
    for (int i = 0; i < c->n_heaps; i++)
        if (pc >= c->heaps[i].lo && pc < c->heaps[i].hi)
            return &c->heaps[i];
    /* inside the reservation but in no committed range: the heaps may have grown since */
    if (c->heaps_pass != c->pass && read_heaps(c) == 0)
        for (int i = 0; i < c->n_heaps; i++)
            if (pc >= c->heaps[i].lo && pc < c->heaps[i].hi)
                return &c->heaps[i];
    return NULL;
}

/* The block holding pc through the segment map, or 0. */
static uint64_t segmap_block(sc_ch *c, const heap *h, uint64_t pc)
{
    c->st.segmap_walks++;
    uint64_t idx = (pc - h->lo) >> h->log2;
    unsigned char win[256];
    uint64_t win_lo = 1, win_hi = 0; /* empty */
    for (int hop = 0; hop < SC_CH_MAX_HOPS; hop++) {
        if (idx < win_lo || idx > win_hi) {
            /* one read covers up to 255 segments back: a whole hop of the longest kind */
            win_hi = idx;
            win_lo = idx >= 255 ? idx - 255 : 0;
            if (sc_wr_read(c->r, h->segmap + win_lo, win, (size_t)(win_hi - win_lo + 1)) < 0)
                return 0;
        }
        unsigned char b = win[idx - win_lo];
        c->st.hops++;
        if (b == 0xFF)
            return 0;
        if (b == 0)
            return h->lo + (idx << h->log2);
        if (b > idx)
            return 0; /* hops before the heap's start: crafted */
        idx -= b;
    }
    return 0;
}

const sc_blob *sc_ch_find(sc_ch *c, uint64_t pc)
{
    c->st.lookups++;
    if (!c->warm)
        c->warm = c->pass + 1;
    pcent *pe = &c->pcs[pc_slot(pc)];
    if (pe->pc == pc && pe->start) {
        slot *s = tab_slot(c, pe->start);
        if (s->used && pc >= s->b.start && pc < s->b.end) {
            if (s->pass == c->pass || s->b.kind != SC_BLOB_NMETHOD) {
                c->st.pc_hits++;
                return &s->b;
            }
            /* an nmethod seen in an earlier pass: its space may have been freed and reused */
            const heap *h = heap_of(c, s->b.start);
            sc_blob nb;
            c->st.revalidated++;
            if (h && read_block(c, s->b.start - c->hb_size, h->hi, &nb) == 0 &&
                nb.end == s->b.end && nb.name_ptr == s->b.name_ptr && nb.method == s->b.method &&
                nb.compile_id == s->b.compile_id && nb.code_begin == s->b.code_begin) {
                s->pass = c->pass;
                c->st.pc_hits++;
                return &s->b;
            }
            c->st.replaced++;
        }
    }
    const heap *h = heap_of(c, pc);
    if (!h) {
        c->st.not_found++;
        return NULL;
    }
    uint64_t block = segmap_block(c, h, pc);
    if (!block) {
        c->st.not_found++;
        return NULL;
    }
    uint64_t start = block + c->hb_size;
    slot *s = tab_slot(c, start);
    if (s->used && (s->pass == c->pass || s->b.kind != SC_BLOB_NMETHOD) && pc < s->b.end) {
        c->st.blob_hits++;
    } else {
        sc_blob b;
        int rc = read_block(c, block, h->hi, &b);
        if (rc < 0 && c->heaps_pass != c->pass && read_heaps(c) == 0 &&
            (h = heap_of(c, pc)) != NULL) {
            /* the heap grew since its bounds were read: a blob allocated at its old committed
             * end reaches past it (javac's new nmethods, all the time) */
            rc = read_block(c, block, h->hi, &b);
        }
        if (rc < 0 || pc >= b.end) {
            c->st.bad_blob++;
            return NULL;
        }
        /* the same nmethod as cached from an earlier pass keeps its first read */
        b.first_pass = s->used && s->b.start == b.start && s->b.kind == SC_BLOB_NMETHOD &&
                               s->b.compile_id == b.compile_id && s->b.method == b.method &&
                               s->b.end == b.end && s->b.code_begin == b.code_begin
                           ? s->b.first_pass
                           : c->pass;
        s = tab_put(c, &b);
    }
    pe = &c->pcs[pc_slot(pc)];
    pe->pc = pc;
    pe->start = s->b.start;
    return &s->b;
}

int sc_ch_heaps(const sc_ch *c, sc_ch_heap *out, int cap)
{
    int n = 0;
    for (int i = 0; i < c->n_heaps && n < cap; i++, n++)
        out[n] = (sc_ch_heap){.lo = c->heaps[i].lo,
                              .hi = c->heaps[i].hi,
                              .segmap = c->heaps[i].segmap,
                              .log2 = c->heaps[i].log2};
    return n;
}

/* ---- inlined methods: PcDesc -> ScopeDesc chain ---- */

/* One compressed int of the debug info stream at p (avail bytes): HotSpot's UNSIGNED5 (digits in
 * base 64 for bytes >= L, a low byte ends the number; at most 5 bytes), with `excess` excluded
 * byte values. -1 when it runs past avail or uses an excluded byte. */
static int64_t u5(const unsigned char *p, size_t avail, size_t *used, unsigned excess)
{
    const unsigned lim = 256 - 64 - excess; /* L: the low bytes */
    uint64_t sum = 0;
    for (size_t i = 0; i < 5; i++) {
        if (i >= avail || p[i] < excess)
            return -1;
        uint64_t d = (uint64_t)(p[i] - excess);
        sum += d << (6 * i);
        if (d < lim || i == 4) {
            *used = i + 1;
            return (int64_t)(uint32_t)sum;
        }
    }
    return -1;
}

int sc_ch_scopes(sc_ch *c, const sc_blob *b, uint64_t pc, uint64_t *methods, int cap)
{
    if (!b->pcs_lo || pc < b->code_begin || pc > b->code_end || cap <= 0)
        return 0;
    /* the first PcDesc at or after pc: exact for return addresses (HotSpot records one at each
     * call's return), the next safepoint's for an interrupted pc */
    int64_t want = (int64_t)(pc - b->code_begin);
    uint64_t n = (b->pcs_hi - b->pcs_lo) / c->pcdesc, lo = 0, hi = n;
    int probes = 0;
    while (lo < hi && probes++ < 40) {
        uint64_t mid = lo + (hi - lo) / 2;
        int32_t off;
        if (sc_wr_read(c->r, b->pcs_lo + mid * c->pcdesc + c->f[V_PC_OFF].value, &off, 4) < 0)
            return 0;
        if (off < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= n)
        return 0;
    int32_t scope;
    if (sc_wr_read(c->r, b->pcs_lo + lo * c->pcdesc + c->f[V_PC_SCOPE].value, &scope, 4) < 0)
        return 0;
    int k = 0;
    uint64_t at = (uint64_t)(uint32_t)scope;
    /* each scope: sender offset, metadata index of its method, bci (then more we skip); a
     * sender lies before its callee (scopes are written outermost first): the chain ends */
    for (int depth = 0; at != 0 && depth < 32 && k < cap; depth++) {
        if (at >= b->sd_hi - b->sd_lo)
            return 0;
        unsigned char buf[16];
        size_t avail =
            b->sd_hi - b->sd_lo - at < sizeof buf ? b->sd_hi - b->sd_lo - at : sizeof buf;
        if (sc_wr_read(c->r, b->sd_lo + at, buf, avail) < 0)
            return 0;
        size_t u1 = 0, u2 = 0;
        int64_t sender = u5(buf, avail, &u1, c->u5_excess);
        int64_t index = sender < 0 ? -1 : u5(buf + u1, avail - u1, &u2, c->u5_excess);
        if (sender < 0 || index <= 0 || (uint64_t)sender >= at ||
            (uint64_t)index > (b->md_hi - b->md_lo) / 8)
            return 0;
        uint64_t m;
        if (sc_wr_read(c->r, b->md_lo + 8 * (uint64_t)(index - 1), &m, 8) < 0 || !sc_wr_ptr_ok(m))
            return 0;
        methods[k++] = m;
        at = (uint64_t)sender;
    }
    c->st.scopes++;
    return k;
}
