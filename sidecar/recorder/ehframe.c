/* Native unwind rows from the loaded images' .eh_frame: see ehframe.h. Formats (System V AMD64
 * ABI and the LSB's "Exception Frames"; DWARF 4 section 6.4):
 *   .eh_frame_hdr: u8 version (1), u8 eh_frame_ptr_enc, u8 fde_count_enc, u8 table_enc,
 *     encoded eh_frame_ptr, encoded fde_count, then fde_count (initial_location, fde_address)
 *     pairs in table_enc, sorted by location; every linker writes them datarel|sdata4 (0x3b),
 *     relative to the header's own address: the only table form used here.
 *   CIE: u32 length, u32 id (0), u8 version, augmentation string, uleb code_align, sleb
 *     data_align, return register (u8 in version 1, uleb after), "z" augmentation data
 *     ('R' pointer encoding, 'P' personality, 'L' LSDA encoding, 'S' signal frame), initial
 *     instructions.
 *   FDE: u32 length, u32 CIE pointer (back from this field), pc_begin and pc_range in the CIE's
 *     'R' encoding, augmentation data (if "z"), instructions.
 *   DWARF registers on x86-64: 6 = rbp, 7 = rsp, 16 = return address.
 *   glibc's PLT CFA expression: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0). */
#include "sidecar/recorder/ehframe.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define REG_FP 6
#define REG_SP 7
#define REG_RA 16
#define MAX_REMEMBER 8
#define CIE_CACHE 256
#define CHUNK 128 /* table entries read at once (1 KiB) */

typedef struct image {
    uint64_t start, end; /* the executable mapping */
    uint64_t base;       /* where the file's offset 0 is mapped (start - pgoff) */
    uint64_t bias;       /* load bias: vaddr + bias = address */
    uint64_t hdr;        /* .eh_frame_hdr */
    uint64_t table;      /* its (location, fde) pairs, both relative to hdr */
    uint32_t count;
    /* The table is read a chunk at a time, as lookups need it: each chunk's first location
     * (read when the image is first used) says which chunk holds a pc. */
    uint32_t n_chunks;
    int32_t *first;  /* n_chunks first locations */
    int32_t **chunk; /* n_chunks pointers, NULL until read */
    uint8_t state;   /* 0 not read yet, 1 ready, 2 unusable */
} image;

typedef struct cie {
    uint64_t addr;
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    bool aug_z, signal, ok;
    uint32_t init_len;
    unsigned char init[512]; /* initial instructions (longer ones: the CIE is unusable) */
} cie;

typedef struct rowent {
    uint64_t pc;
    sc_eh_row row;
    int8_t result;
} rowent;

struct sc_eh {
    sc_wread *r;
    image maps[SC_EH_MAX_MAPS];
    int n;
    uint64_t table_bytes;
    rowent *rows;
    cie cies[CIE_CACHE];
    unsigned char entry[SC_EH_MAX_ENTRY]; /* the FDE being read */
    sc_eh_stats st;
};

static void drop_table(image *m)
{
    for (uint32_t c = 0; m->chunk && c < m->n_chunks; c++)
        free(m->chunk[c]);
    free(m->chunk);
    free(m->first);
    m->chunk = NULL;
    m->first = NULL;
}

sc_eh *sc_eh_new(sc_wread *r)
{
    sc_eh *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->r = r;
    e->rows = calloc(SC_EH_ROW_CACHE, sizeof *e->rows);
    if (!e->rows) {
        free(e);
        return NULL;
    }
    return e;
}

void sc_eh_free(sc_eh *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n; i++)
        drop_table(&e->maps[i]);
    free(e->rows);
    free(e);
}

void sc_eh_note_map(sc_eh *e, uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
    if (!e || !path[0] || start >= end || pgoff > start || end > SC_WR_USER_TOP ||
        e->n >= SC_EH_MAX_MAPS)
        return;
    /* sorted by start; a mapping seen again (synthesized, then the kernel's MMAP2) is kept once */
    int lo = 0, hi = e->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (e->maps[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < e->n && e->maps[lo].start == start) {
        if (e->maps[lo].end == end && e->maps[lo].base == start - pgoff)
            return;
        drop_table(&e->maps[lo]); /* replaced by a new mapping at the same address */
        e->maps[lo] = (image){.start = start, .end = end, .base = start - pgoff};
        memset(e->rows, 0, SC_EH_ROW_CACHE * sizeof *e->rows);
        return;
    }
    memmove(&e->maps[lo + 1], &e->maps[lo], (size_t)(e->n - lo) * sizeof *e->maps);
    e->maps[lo] = (image){.start = start, .end = end, .base = start - pgoff};
    e->n++;
    memset(e->rows, 0, SC_EH_ROW_CACHE * sizeof *e->rows);
}

static image *image_of(const sc_eh *e, uint64_t pc)
{
    int lo = 0, hi = e->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const image *m = &e->maps[mid];
        if (pc < m->start)
            hi = mid - 1;
        else if (pc >= m->end)
            lo = mid + 1;
        else
            return (image *)m;
    }
    return NULL;
}

bool sc_eh_mapped(const sc_eh *e, uint64_t pc)
{
    return e && image_of(e, pc) != NULL;
}

void sc_eh_get_stats(const sc_eh *e, sc_eh_stats *st)
{
    *st = e ? e->st : (sc_eh_stats){0};
    if (e)
        st->table_bytes = e->table_bytes;
}

/* ---- byte decoding, bounded by [p, end) ---- */

typedef struct cur {
    const unsigned char *p, *end;
    bool bad;
} cur;

static uint64_t uleb(cur *c)
{
    uint64_t v = 0;
    for (int s = 0; s < 64; s += 7) {
        if (c->p >= c->end) {
            c->bad = true;
            return 0;
        }
        unsigned char b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80))
            return v;
    }
    c->bad = true;
    return 0;
}

static int64_t sleb(cur *c)
{
    uint64_t v = 0;
    int s = 0;
    unsigned char b = 0;
    do {
        if (c->p >= c->end || s >= 64) {
            c->bad = true;
            return 0;
        }
        b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << s;
        s += 7;
    } while (b & 0x80);
    if (s < 64 && (b & 0x40))
        v |= ~0ull << s;
    return (int64_t)v;
}

static uint64_t fixed(cur *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little endian */
    c->p += n;
    return v;
}

/* A pointer in encoding enc found at address `at` (for pcrel); datarel against `data`. */
static uint64_t encoded(cur *c, uint8_t enc, uint64_t at, uint64_t data)
{
    if (enc == 0xff) {
        c->bad = true;
        return 0;
    }
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00:
        v = fixed(c, 8);
        break;
    case 0x01:
        v = uleb(c);
        break;
    case 0x02:
        v = fixed(c, 2);
        break;
    case 0x03:
        v = fixed(c, 4);
        break;
    case 0x04:
        v = fixed(c, 8);
        break;
    case 0x09:
        v = (uint64_t)sleb(c);
        break;
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)fixed(c, 2);
        break;
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)fixed(c, 4);
        break;
    case 0x0c:
        v = fixed(c, 8);
        break;
    default:
        c->bad = true;
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        return v;
    case 0x10:
        return v + at;
    case 0x30:
        return v + data;
    default:
        c->bad = true;
        return 0;
    }
}

/* ---- the CFA program ---- */

/* v (signed when sgn) times the data alignment factor; an operand no frame could have marks
 * the program bad (and never overflows). */
static int64_t scale(uint64_t v, bool sgn, int64_t da, cur *c)
{
    int64_t x = (int64_t)v;
    if ((sgn ? (x < -(1 << 24) || x > (1 << 24)) : v > (1u << 24)) || da < -256 || da > 256) {
        c->bad = true;
        return 0;
    }
    return x * da;
}

typedef struct state {
    uint8_t cfa, fp, ra;
    int64_t cfa_off, fp_off, ra_off;
} state;

static bool plt_expression(const unsigned char *p, uint64_t len)
{
    /* DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11; DW_OP_ge;
     * DW_OP_lit3; DW_OP_shl; DW_OP_plus */
    static const unsigned char plt[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a,
                                        0x3b, 0x2a, 0x33, 0x24, 0x22};
    return len == sizeof plt && memcmp(p, plt, sizeof plt) == 0;
}

static void set_reg(state *s, uint64_t reg, uint8_t how, int64_t off)
{
    if (reg == REG_FP) {
        s->fp = how;
        s->fp_off = off;
    } else if (reg == REG_RA) {
        s->ra = how;
        s->ra_off = off;
    }
}

static void restore_reg(state *s, const state *init, uint64_t reg)
{
    if (reg == REG_FP) {
        s->fp = init->fp;
        s->fp_off = init->fp_off;
    } else if (reg == REG_RA) {
        s->ra = init->ra;
        s->ra_off = init->ra_off;
    }
}

/* Run instructions [p, end) from location loc until it passes pc. *ops counts against the
 * bound. init: the state after the CIE's instructions (for DW_CFA_restore), NULL while running
 * them. Returns 0, 1 when pc was passed (stop), -1 when malformed. */
static int run(const unsigned char *p, const unsigned char *end, uint64_t *loc, uint64_t pc,
               uint64_t ca, int64_t da, state *s, const state *init, int *ops)
{
    state stack[MAX_REMEMBER];
    int depth = 0;
    cur c = {p, end, false};
    while (c.p < c.end) {
        if (++*ops > SC_EH_MAX_OPS)
            return -1;
        unsigned char op = *c.p++;
        uint64_t reg, adv = 0;
        int64_t off;
        switch (op >> 6) {
        case 1: /* advance_loc */
            adv = (uint64_t)(op & 0x3f) * ca;
            goto advance;
        case 2: /* offset */
            off = scale(uleb(&c), false, da, &c);
            set_reg(s, op & 0x3f, SC_EH_AT_CFA, off);
            continue;
        case 3: /* restore */
            if (init)
                restore_reg(s, init, op & 0x3f);
            continue;
        default:
            break;
        }
        switch (op) {
        case 0x00: /* nop */
            break;
        case 0x01: /* set_loc: only absolute addresses in a CFA program */
            return -1;
        case 0x02:
            adv = fixed(&c, 1) * ca;
            goto advance;
        case 0x03:
            adv = fixed(&c, 2) * ca;
            goto advance;
        case 0x04:
            adv = fixed(&c, 4) * ca;
            goto advance;
        case 0x05: /* offset_extended */
            reg = uleb(&c);
            set_reg(s, reg, SC_EH_AT_CFA, scale(uleb(&c), false, da, &c));
            break;
        case 0x06: /* restore_extended */
            reg = uleb(&c);
            if (init)
                restore_reg(s, init, reg);
            break;
        case 0x07: /* undefined */
            set_reg(s, uleb(&c), SC_EH_UNDEF, 0);
            break;
        case 0x08: /* same_value */
            set_reg(s, uleb(&c), SC_EH_SAME, 0);
            break;
        case 0x09: /* register: the value lives in another register (we have none at hand) */
            reg = uleb(&c);
            uleb(&c);
            set_reg(s, reg, SC_EH_BAD, 0);
            break;
        case 0x0a: /* remember_state */
            if (depth >= MAX_REMEMBER)
                return -1;
            stack[depth++] = *s;
            break;
        case 0x0b: /* restore_state */
            if (depth <= 0)
                return -1;
            *s = stack[--depth];
            break;
        case 0x0c: /* def_cfa */
            reg = uleb(&c);
            s->cfa = reg == REG_SP ? SC_EH_CFA_SP : reg == REG_FP ? SC_EH_CFA_FP : SC_EH_CFA_BAD;
            s->cfa_off = (int64_t)uleb(&c);
            break;
        case 0x0d: /* def_cfa_register */
            reg = uleb(&c);
            s->cfa = reg == REG_SP ? SC_EH_CFA_SP : reg == REG_FP ? SC_EH_CFA_FP : SC_EH_CFA_BAD;
            break;
        case 0x0e: /* def_cfa_offset */
            s->cfa_off = (int64_t)uleb(&c);
            break;
        case 0x0f: { /* def_cfa_expression */
            uint64_t len = uleb(&c);
            if (c.bad || len > (uint64_t)(c.end - c.p))
                return -1;
            s->cfa = plt_expression(c.p, len) ? SC_EH_CFA_PLT : SC_EH_CFA_BAD;
            s->cfa_off = 8;
            c.p += len;
            break;
        }
        case 0x10:   /* expression */
        case 0x16: { /* val_expression */
            reg = uleb(&c);
            uint64_t len = uleb(&c);
            if (c.bad || len > (uint64_t)(c.end - c.p))
                return -1;
            c.p += len;
            set_reg(s, reg, SC_EH_BAD, 0);
            break;
        }
        case 0x11: /* offset_extended_sf */
            reg = uleb(&c);
            set_reg(s, reg, SC_EH_AT_CFA, scale((uint64_t)sleb(&c), true, da, &c));
            break;
        case 0x12: /* def_cfa_sf */
            reg = uleb(&c);
            s->cfa = reg == REG_SP ? SC_EH_CFA_SP : reg == REG_FP ? SC_EH_CFA_FP : SC_EH_CFA_BAD;
            s->cfa_off = scale((uint64_t)sleb(&c), true, da, &c);
            break;
        case 0x13: /* def_cfa_offset_sf */
            s->cfa_off = scale((uint64_t)sleb(&c), true, da, &c);
            break;
        case 0x14: /* val_offset: a value, not a slot */
            reg = uleb(&c);
            uleb(&c);
            set_reg(s, reg, SC_EH_BAD, 0);
            break;
        case 0x15:
            reg = uleb(&c);
            sleb(&c);
            set_reg(s, reg, SC_EH_BAD, 0);
            break;
        case 0x2e: /* GNU_args_size */
            uleb(&c);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(&c);
            set_reg(s, reg, SC_EH_AT_CFA, -scale(uleb(&c), false, da, &c));
            break;
        default:
            return -1;
        }
        if (c.bad)
            return -1;
        continue;
    advance:
        if (c.bad)
            return -1;
        if (init) {
            if (adv > pc - *loc || *loc + adv > pc) /* the next row starts after pc */
                return 1;
            *loc += adv;
        }
    }
    return c.bad ? -1 : 0;
}

int sc_eh_run(const unsigned char *cie_p, uint32_t cie_len, const unsigned char *fde_p,
              uint32_t fde_len, uint64_t pc_begin, uint64_t pc, uint64_t code_align,
              int64_t data_align, sc_eh_row *row)
{
    state s = {.cfa = SC_EH_CFA_BAD, .fp = SC_EH_SAME, .ra = SC_EH_BAD};
    int ops = 0;
    uint64_t loc = pc_begin;
    if (pc < pc_begin ||
        run(cie_p, cie_p + cie_len, &loc, pc, code_align, data_align, &s, NULL, &ops) < 0)
        return -1;
    state init = s;
    if (run(fde_p, fde_p + fde_len, &loc, pc, code_align, data_align, &s, &init, &ops) < 0)
        return -1;
    if (s.cfa_off < -(1 << 20) || s.cfa_off > (1 << 20) || s.fp_off < -(1 << 20) ||
        s.fp_off > (1 << 20) || s.ra_off < -(1 << 20) || s.ra_off > (1 << 20))
        return -1;
    *row = (sc_eh_row){.cfa = s.cfa,
                       .fp = s.fp,
                       .ra = s.ra,
                       .cfa_off = (int32_t)s.cfa_off,
                       .fp_off = (int32_t)s.fp_off,
                       .ra_off = (int32_t)s.ra_off};
    return 0;
}

/* ---- images ---- */

static int load_image(sc_eh *e, image *m)
{
    m->state = 2;
    e->st.images++;
    Elf64_Ehdr eh;
    if (sc_wr_read(e->r, m->base, &eh, sizeof eh) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64 ||
        eh.e_phoff > 65536)
        goto bad;
    Elf64_Phdr ph[64];
    if (sc_wr_read(e->r, m->base + eh.e_phoff, ph, eh.e_phnum * sizeof *ph) < 0)
        goto bad;
    bool load = false, covers = false;
    uint64_t hdr_vaddr = 0;
    for (int i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !load) {
            if (ph[i].p_offset != 0 || ph[i].p_vaddr > m->base)
                goto bad;
            m->bias = m->base - ph[i].p_vaddr;
            load = true;
        } else if (ph[i].p_type == PT_GNU_EH_FRAME) {
            hdr_vaddr = ph[i].p_vaddr;
        }
    }
    for (int i = 0; load && i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) &&
            m->start - m->bias >= (ph[i].p_vaddr & ~4095ull) &&
            m->start - m->bias < ph[i].p_vaddr + ph[i].p_memsz)
            covers = true;
    if (!load || !covers || !hdr_vaddr)
        goto bad;
    m->hdr = m->bias + hdr_vaddr;
    unsigned char h[4 + 8 + 8];
    if (sc_wr_read(e->r, m->hdr, h, sizeof h) < 0 || h[0] != 1 || h[3] != 0x3b)
        goto bad;
    cur c = {h + 4, h + sizeof h, false};
    encoded(&c, h[1], m->hdr + 4, m->hdr); /* eh_frame_ptr: not needed */
    uint64_t at = m->hdr + (uint64_t)(c.p - h);
    uint64_t count = encoded(&c, h[2], at, m->hdr);
    if (c.bad || count == 0 || count > SC_EH_MAX_FDES)
        goto bad;
    m->table = m->hdr + (uint64_t)(c.p - h);
    m->count = (uint32_t)count;
    m->n_chunks = (m->count + CHUNK - 1) / CHUNK;
    size_t bytes = (size_t)m->n_chunks * (sizeof *m->first + sizeof *m->chunk);
    if (e->table_bytes + bytes > SC_EH_MAX_TABLES || !(m->first = malloc(m->n_chunks * 4)) ||
        !(m->chunk = calloc(m->n_chunks, sizeof *m->chunk)))
        goto bad;
    for (uint32_t k = 0; k < m->n_chunks; k++)
        if (sc_wr_read(e->r, m->table + (uint64_t)k * CHUNK * 8, &m->first[k], 4) < 0)
            goto bad;
    e->table_bytes += bytes;
    m->state = 1;
    return 0;
bad:
    drop_table(m);
    e->st.images_bad++;
    return -1;
}

static const cie *read_cie(sc_eh *e, uint64_t addr, uint64_t hdr)
{
    cie *k = &e->cies[(addr >> 2) % CIE_CACHE];
    if (k->addr == addr)
        return k->ok ? k : NULL;
    *k = (cie){.addr = addr};
    unsigned char b[1024];
    uint32_t len;
    if (sc_wr_read(e->r, addr, &len, 4) < 0 || len < 8 || len > sizeof b - 4 ||
        sc_wr_read(e->r, addr + 4, b, len) < 0)
        return NULL;
    cur c = {b, b + len, false};
    if (fixed(&c, 4) != 0) /* CIE id */
        return NULL;
    uint64_t version = fixed(&c, 1);
    const char *aug = (const char *)c.p;
    size_t al = strnlen(aug, (size_t)(c.end - c.p));
    if (al == (size_t)(c.end - c.p) || al > 8)
        return NULL;
    c.p += al + 1;
    k->code_align = uleb(&c);
    k->data_align = sleb(&c);
    uint64_t ra = version == 1 ? fixed(&c, 1) : uleb(&c);
    k->fde_enc = 0; /* absptr */
    if (aug[0] == 'z') {
        k->aug_z = true;
        uint64_t zl = uleb(&c);
        if (c.bad || zl > (uint64_t)(c.end - c.p))
            return NULL;
        cur z = {c.p, c.p + zl, false};
        for (size_t i = 1; i < al; i++) {
            if (aug[i] == 'R')
                k->fde_enc = (uint8_t)fixed(&z, 1);
            else if (aug[i] == 'P') {
                uint8_t pe = (uint8_t)fixed(&z, 1);
                encoded(&z, pe & 0x7f, addr, hdr);
            } else if (aug[i] == 'L')
                fixed(&z, 1);
            else if (aug[i] == 'S')
                k->signal = true;
            else
                return NULL;
        }
        if (z.bad)
            return NULL;
        c.p += zl;
    } else if (aug[0]) {
        return NULL;
    }
    if (c.bad || ra != REG_RA || k->code_align == 0 || k->code_align > 16 ||
        (size_t)(c.end - c.p) > sizeof k->init)
        return NULL;
    k->init_len = (uint32_t)(c.end - c.p);
    memcpy(k->init, c.p, k->init_len);
    k->ok = true;
    return k;
}

/* The row for pc from image m's FDE table. */
static enum sc_eh_result lookup(sc_eh *e, image *m, uint64_t pc, sc_eh_row *row)
{
    /* the chunk, then the last entry in it whose location is <= pc */
    int64_t rel = (int64_t)(pc - m->hdr);
    uint32_t lo = 0, hi = m->n_chunks;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)m->first[mid] <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) {
        e->st.fde_miss++;
        return SC_EH_NO_INFO;
    }
    uint32_t ck = lo - 1, n = m->count - ck * CHUNK < CHUNK ? m->count - ck * CHUNK : CHUNK;
    if (!m->chunk[ck]) {
        size_t bytes = (size_t)n * 8;
        int32_t *t = e->table_bytes + bytes <= SC_EH_MAX_TABLES ? malloc(bytes) : NULL;
        if (!t || sc_wr_read(e->r, m->table + (uint64_t)ck * CHUNK * 8, t, bytes) < 0) {
            free(t);
            goto bad;
        }
        m->chunk[ck] = t;
        e->table_bytes += bytes;
    }
    const int32_t *t = m->chunk[ck];
    lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)t[2 * mid] <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) {
        e->st.fde_miss++;
        return SC_EH_NO_INFO;
    }
    uint64_t fde = m->hdr + (uint64_t)(int64_t)t[2 * (lo - 1) + 1];
    unsigned char *b = e->entry;
    uint32_t len;
    if (sc_wr_read(e->r, fde, &len, 4) < 0 || len < 8 || len > SC_EH_MAX_ENTRY ||
        sc_wr_read(e->r, fde + 4, b, len) < 0)
        goto bad;
    uint32_t cie_ptr;
    memcpy(&cie_ptr, b, 4);
    if (cie_ptr == 0 || cie_ptr > fde + 4)
        goto bad;
    const cie *k = read_cie(e, fde + 4 - cie_ptr, m->hdr);
    if (!k || k->signal)
        goto bad;
    cur c = {b + 4, b + len, false};
    uint64_t pc_begin = encoded(&c, k->fde_enc, fde + 8, m->hdr);
    uint64_t pc_range = encoded(&c, k->fde_enc & 0x0f, 0, 0);
    if (c.bad)
        goto bad;
    if (pc < pc_begin || pc - pc_begin >= pc_range) {
        e->st.fde_miss++;
        return SC_EH_NO_INFO;
    }
    if (k->aug_z) {
        uint64_t zl = uleb(&c);
        if (c.bad || zl > (uint64_t)(c.end - c.p))
            goto bad;
        c.p += zl;
    }
    if (sc_eh_run(k->init, k->init_len, c.p, (uint32_t)(c.end - c.p), pc_begin, pc, k->code_align,
                  k->data_align, row) < 0)
        goto bad;
    return SC_EH_FOUND;
bad:
    e->st.bad_program++;
    return SC_EH_NO_INFO;
}

enum sc_eh_result sc_eh_find(sc_eh *e, uint64_t pc, sc_eh_row *row)
{
    e->st.lookups++;
    rowent *re = &e->rows[(size_t)((pc * 0x9E3779B97F4A7C15ull) >> 49) % SC_EH_ROW_CACHE];
    if (re->pc == pc && pc) {
        e->st.cached++;
        *row = re->row;
        return (enum sc_eh_result)re->result;
    }
    image *m = image_of(e, pc);
    enum sc_eh_result res = SC_EH_NOT_MAPPED;
    if (m) {
        if (m->state == 0)
            load_image(e, m);
        res = m->state == 1 ? lookup(e, m, pc, row) : SC_EH_NO_INFO;
    }
    if (res != SC_EH_FOUND)
        *row = (sc_eh_row){.cfa = SC_EH_CFA_BAD};
    re->pc = pc;
    re->row = *row;
    re->result = (int8_t)res;
    return res;
}
