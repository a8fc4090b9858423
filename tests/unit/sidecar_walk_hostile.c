/* The stack walker against a hostile target (sidecar/recorder/walk.h, codeheap.h, ehframe.h):
 * bounded work, no crash (ASan/UBSan), frames left unnamed, never a name the JVM does not have.
 *   - CFA programs (sc_eh_run): a real prologue's rows; remember/restore abuse, endless
 *     programs, blocks past the end, random programs;
 *   - an image's unwind tables in "memory" (a memfd read at addresses, as /proc/<pid>/mem is):
 *     a valid one, then a CIE pointer to itself, absurd counts and lengths, unknown augmentations,
 *     a table pointing everywhere at one FDE, random bytes;
 *   - a recorded JVM (tests/data/walk, tests/walk/README.md) whose memory is made hostile: a code
 *     heap segment map of 1s (hops that never end on a block) and of 0s (a block "everywhere"),
 *     random bytes through VMStructs, code heap, tables and metadata; stack copies of garbage and
 *     of a frame-pointer loop. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/codeheap.h"
#include "sidecar/recorder/ehframe.h"
#include "sidecar/recorder/walk.h"
#include "tests/unit/tap.h"
#include "tests/walk/fixture.h"

/* ---- CFA programs ---- */

static const unsigned char cie_init[] = {0x0c, 0x07, 0x08, 0x90, 0x01}; /* rsp+8; RA at cfa-8 */

static int run(const unsigned char *p, uint32_t n, uint64_t off, sc_eh_row *row)
{
    return sc_eh_run(cie_init, sizeof cie_init, p, n, 0x1000, 0x1000 + off, 1, -8, row);
}

static void test_programs(void)
{
    /* push rbp; mov rbp,rsp; ... as gcc describes it */
    static const unsigned char prologue[] = {0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06};
    sc_eh_row r;
    ok(run(prologue, sizeof prologue, 0, &r) == 0 && r.cfa == SC_EH_CFA_SP && r.cfa_off == 8 &&
           r.ra == SC_EH_AT_CFA && r.ra_off == -8 && r.fp == SC_EH_SAME,
       "entry: CFA rsp+8, return address at CFA-8, rbp untouched");
    ok(run(prologue, sizeof prologue, 2, &r) == 0 && r.cfa == SC_EH_CFA_SP && r.cfa_off == 16 &&
           r.fp == SC_EH_AT_CFA && r.fp_off == -16,
       "after push rbp: CFA rsp+16, rbp saved at CFA-16");
    ok(run(prologue, sizeof prologue, 9, &r) == 0 && r.cfa == SC_EH_CFA_FP && r.cfa_off == 16,
       "after mov rbp,rsp: CFA rbp+16");
    static const unsigned char undef[] = {0x07, 0x10};
    ok(run(undef, sizeof undef, 0, &r) == 0 && r.ra == SC_EH_UNDEF,
       "return address undefined: the outermost frame");
    static const unsigned char plt[] = {0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f,
                                        0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
    ok(run(plt, sizeof plt, 0, &r) == 0 && r.cfa == SC_EH_CFA_PLT, "the PLT's CFA expression");
    static const unsigned char other_expr[] = {0x0f, 0x02, 0x77, 0x10};
    ok(run(other_expr, sizeof other_expr, 0, &r) == 0 && r.cfa == SC_EH_CFA_BAD,
       "any other CFA expression: no CFA");
    unsigned char remember[12];
    memset(remember, 0x0a, sizeof remember);
    is_int(run(remember, sizeof remember, 0, &r), -1, "remember_state nested too deep: refused");
    static const unsigned char restore[] = {0x0b};
    is_int(run(restore, sizeof restore, 0, &r), -1, "restore_state with nothing remembered");
    static unsigned char nops[8192];
    is_int(run(nops, sizeof nops, 0, &r), -1, "8192 instructions: over the bound, refused");
    static const unsigned char past[] = {0x0f, 0x7f, 0x00};
    is_int(run(past, sizeof past, 0, &r), -1, "an expression block past the program's end");
    static const unsigned char leb[] = {0x0e, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    is_int(run(leb, sizeof leb, 0, &r), -1, "an endless LEB128 number");
    static const unsigned char huge[] = {0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f};
    is_int(run(huge, sizeof huge, 0, &r), -1, "a CFA offset beyond any frame");
    srand(26);
    int refused = 0, fine = 0;
    for (int i = 0; i < 200000; i++) {
        unsigned char p[64];
        uint32_t n = (uint32_t)(rand() % 64);
        for (uint32_t k = 0; k < n; k++)
            p[k] = (unsigned char)rand();
        int rc = run(p, n, (uint64_t)(rand() % 512), &r);
        refused += rc < 0, fine += rc == 0;
    }
    ok(refused + fine == 200000, "200000 random programs: a row or a refusal (%d, %d), no crash",
       fine, refused);
}

/* ---- an image in memory ---- */

#define BASE 0x10000000ull
#define HDR 0x1000
#define EHF 0x2000
#define FN 0x5000

static void put(int fd, uint64_t at, const void *p, size_t n)
{
    if (pwrite(fd, p, n, (off_t)(BASE + at)) != (ssize_t)n)
        abort();
}
static void put32(int fd, uint64_t at, uint32_t v)
{
    put(fd, at, &v, 4);
}

/* An ELF with one executable PT_LOAD and PT_GNU_EH_FRAME: a CIE, n FDEs (function i at
 * FN + 0x100 i, 0x100 long, the prologue program), the sorted table. */
static int image(int n)
{
    int fd = memfd_create("image", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)(BASE + 0x100000)) < 0)
        abort();
    Elf64_Ehdr eh = {.e_phoff = 64,
                     .e_phentsize = sizeof(Elf64_Phdr),
                     .e_phnum = 2,
                     .e_machine = EM_X86_64,
                     .e_type = ET_DYN};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    put(fd, 0, &eh, sizeof eh);
    Elf64_Phdr ph[2] = {{.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_memsz = 0x10000},
                        {.p_type = PT_GNU_EH_FRAME, .p_vaddr = HDR}};
    put(fd, 64, ph, sizeof ph);
    unsigned char h[4] = {1, 0x1b, 0x03, 0x3b};
    put(fd, HDR, h, 4);
    put32(fd, HDR + 4, (uint32_t)(EHF - (HDR + 4)));
    put32(fd, HDR + 8, (uint32_t)n);
    /* CIE: length, id 0, version 1, "zR", code 1, data -8, RA 16, aug 1, R = pcrel|sdata4 */
    static const unsigned char cie[] = {0x14, 0,    0,    0,    0,    0,    0,    0,
                                        1,    'z',  'R',  0,    0x01, 0x78, 0x10, 0x01,
                                        0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0,    0};
    put(fd, EHF, cie, sizeof cie);
    static const unsigned char prog[] = {0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06};
    for (int i = 0; i < n; i++) {
        uint64_t at = EHF + 0x20 + 0x20 * (uint64_t)i, fn = FN + 0x100 * (uint64_t)i;
        put32(fd, at, 0x1c);
        put32(fd, at + 4, (uint32_t)(at + 4 - EHF));
        put32(fd, at + 8, (uint32_t)(fn - (at + 8)));
        put32(fd, at + 12, 0x100);
        unsigned char z = 0;
        put(fd, at + 16, &z, 1);
        put(fd, at + 17, prog, sizeof prog);
        put32(fd, HDR + 12 + 8 * (uint64_t)i, (uint32_t)(fn - HDR));
        put32(fd, HDR + 16 + 8 * (uint64_t)i, (uint32_t)(at - HDR));
    }
    return fd;
}

static enum sc_eh_result lookup(int fd, uint64_t pc, sc_eh_row *row)
{
    sc_wread r = {.fd = fd};
    sc_eh *e = sc_eh_new(&r);
    sc_eh_note_map(e, BASE, BASE + 0x10000, 0, "/lib/fake.so");
    enum sc_eh_result res = sc_eh_find(e, pc, row);
    sc_eh_free(e);
    return res;
}

static void test_images(void)
{
    sc_eh_row row;
    int fd = image(300);
    ok(lookup(fd, BASE + FN + 0x100 * 123 + 9, &row) == SC_EH_FOUND && row.cfa == SC_EH_CFA_FP,
       "a valid image: function 123's row after its prologue (CFA rbp+16)");
    is_int(lookup(fd, BASE + FN - 1, &row), SC_EH_NO_INFO, "a pc before every FDE: no row");
    is_int(lookup(fd, BASE + 0x20000, &row), SC_EH_NOT_MAPPED, "a pc in no mapping");
    close(fd);

    fd = image(4);
    put32(fd, EHF + 0x20 + 4, 0); /* CIE pointer 0: points at the FDE itself */
    is_int(lookup(fd, BASE + FN + 1, &row), SC_EH_NO_INFO, "an FDE that is its own CIE: no row");
    close(fd);
    fd = image(4);
    put32(fd, EHF + 0x20 + 4, 0x7fffffff);
    is_int(lookup(fd, BASE + FN + 1, &row), SC_EH_NO_INFO, "a CIE pointer before the image");
    close(fd);
    fd = image(4);
    put32(fd, HDR + 8, 0xffffffff);
    is_int(lookup(fd, BASE + FN + 1, &row), SC_EH_NO_INFO, "an FDE count of 4 billion: refused");
    close(fd);
    fd = image(4);
    put32(fd, EHF + 0x20, 0xfffffff0);
    is_int(lookup(fd, BASE + FN + 1, &row), SC_EH_NO_INFO, "an FDE length of 4 GiB: refused");
    close(fd);
    fd = image(4);
    put(fd, EHF + 10, "X", 1);
    is_int(lookup(fd, BASE + FN + 1, &row), SC_EH_NO_INFO, "an unknown augmentation: refused");
    close(fd);
    fd = image(64);
    for (int i = 0; i < 64; i++) /* every entry at the first FDE, locations out of order */
        put32(fd, HDR + 16 + 8 * (uint64_t)i, (uint32_t)(EHF + 0x20 - HDR)),
            put32(fd, HDR + 12 + 8 * (uint64_t)i, (uint32_t)((uint64_t)(i * 7919 % 64) * 0x100));
    int found = 0;
    for (int i = 0; i < 64; i++)
        found += lookup(fd, BASE + FN + 0x100 * (uint64_t)i + 9, &row) == SC_EH_FOUND;
    ok(found <= 1, "a table pointing everywhere at one FDE: only its own function has rows (%d)",
       found);
    close(fd);

    srand(15);
    int survived = 0;
    for (int it = 0; it < 300; it++) {
        fd = image(16);
        for (int k = 0; k < 40; k++) {
            unsigned char b = (unsigned char)rand();
            put(fd, (uint64_t)(rand() % (EHF + 0x240)), &b, 1);
        }
        sc_wread r = {.fd = fd};
        sc_eh *e = sc_eh_new(&r);
        sc_eh_note_map(e, BASE, BASE + 0x10000, 0, "/lib/fake.so");
        for (int q = 0; q < 64; q++)
            sc_eh_find(e, BASE + FN + (uint64_t)(rand() % 0x1200), &row);
        sc_eh_stats st;
        sc_eh_get_stats(e, &st);
        survived += st.lookups == 64;
        sc_eh_free(e);
        close(fd);
    }
    is_int(survived, 300, "300 images of random bytes: every lookup answered, no crash");
}

/* ---- a recorded JVM made hostile ---- */

typedef struct names {
    char **v;
    int n;
} names;

static bool known(const names *s, const char *n)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], n))
            return true;
    return false;
}

/* The text of one of the JVM's names with a few bytes, or a Symbol's length, spoiled (the test
 * spoils its memory, symbols included): its own name, as the JVM now has it. */
static bool spoiled(const names *s, const char *n)
{
    size_t l = strlen(n);
    const char *dot = strrchr(n, '.');
    for (int i = 0; i < s->n; i++) {
        const char *cd = strrchr(s->v[i], '.');
        size_t cls = dot ? (size_t)(dot - n) : 0;
        if (dot && cd && !strcmp(dot, cd) && (!strncmp(n, s->v[i], cls < 12 ? cls : 12)))
            return true; /* the class name's length (or its hidden-class suffix) spoiled */
        if (strlen(s->v[i]) != l)
            continue;
        int d = 0;
        for (size_t k = 0; k < l && d <= 3; k++)
            d += s->v[i][k] != n[k];
        if (d <= 3)
            return true;
    }
    return false;
}

static void add(names *s, const char *n)
{
    if (known(s, n) || s->n >= 4096)
        return;
    if (!s->v)
        s->v = calloc(4096, sizeof *s->v);
    s->v[s->n++] = strdup(n);
}

typedef struct run_result {
    int walks, root, frames_max, opened;
    int named, invented; /* names given; of them, names the clean JVM does not have (but for
                            spoiled bytes of their own text) */
} run_result;

static uint64_t g64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Walk every sample of f (stacks replaced by garbage when garble), naming what can be named;
 * collect into learn, or count names not in it. */
static run_result walk_all(wf_fixture *f, int garble, names *learn, const names *clean, int spoil)
{
    run_result rr = {0};
    int mem = open("/dev/null", O_RDONLY | O_CLOEXEC);
    wf_replay(mem, f);
    uint64_t jvm_base = 0;
    for (uint32_t i = 0; i < f->n_maps; i++) {
        size_t l = strlen(f->maps[i].path);
        if (l >= 10 && !strcmp(f->maps[i].path + l - 10, "/libjvm.so") && !jvm_base)
            jvm_base = f->maps[i].start - f->maps[i].pgoff;
    }
    char why[SC_HS_WHY_MAX];
    wf_at(0);
    sc_hs *hs = sc_hs_open(mem, jvm_base, why);
    sc_walker *w = hs ? sc_walker_new(hs, why) : NULL;
    rr.opened = w != NULL;
    /* spoil: once the tables are read, 1 in `spoil` bytes of the memory the walks read (code
     * heap, segment maps, blob headers, unwind tables, metadata) become random */
    for (uint32_t i = 0; spoil && i < f->n_ranges; i++)
        for (uint32_t k = 0; k < f->ranges[i].len; k++)
            if (rand() % spoil == 0)
                f->ranges[i].data[k] = (unsigned char)rand();
    for (uint32_t i = 0; spoil && i < f->n_overlays; i++)
        for (uint32_t k = 0; k < f->overlays[i].len; k++)
            if (rand() % spoil == 0)
                f->overlays[i].data[k] = (unsigned char)rand();
    static sc_walk_frame fr[SC_WALK_MAX_FRAMES];
    static unsigned char junk[65536];
    for (uint32_t i = 0; w && i < f->n_samples; i++) {
        for (uint32_t m = 0; i == 0 && m < f->n_maps; m++)
            sc_walker_note_map(w, f->maps[m].start, f->maps[m].end, f->maps[m].pgoff,
                               f->maps[m].path);
        const unsigned char *r = f->samples[i].rec;
        size_t size = f->samples[i].len, p = 56 + 8 * g64(r + 48);
        if (size < p + 8 + 48 + 8)
            continue;
        sc_walk_regs rg = {g64(r + p + 8),  g64(r + p + 16), g64(r + p + 24),
                           g64(r + p + 32), g64(r + p + 40), g64(r + p + 48)};
        p += 56;
        uint64_t ss = g64(r + p), len = ss;
        const unsigned char *stack = r + p + 8;
        if (ss > size - p - 8)
            continue;
        if (garble == 1) { /* garbage */
            for (uint64_t k = 0; k < len; k++)
                junk[k] = (unsigned char)rand();
            rg.bp = rg.sp + (uint64_t)(rand() % 4096);
            stack = junk;
        } else if (garble == 2) { /* every word the frame pointer itself: a loop */
            for (uint64_t k = 0; k + 8 <= len; k += 8)
                memcpy(junk + k, &rg.sp, 8);
            rg.bp = rg.sp;
            stack = junk;
        }
        if (i == 0 || f->samples[i].pass != f->samples[i - 1].pass)
            sc_walker_pass(w);
        wf_at(i);
        enum sc_walk_status st;
        int n = sc_walker_walk(w, &rg, stack, len, fr, SC_WALK_MAX_FRAMES, &st);
        rr.walks++;
        rr.root += st == SC_WALK_ROOT;
        if (n > rr.frames_max)
            rr.frames_max = n;
        for (int k = 0; k < n; k++) {
            const char *name = NULL;
            bool perm;
            if (fr[k].kind == SC_WF_INTERP && fr[k].method)
                sc_hs_frame(hs, fr[k].method, fr[k].bcp, &name, &perm);
            if (!name)
                continue;
            rr.named++;
            if (learn)
                add(learn, name);
            else if (!known(clean, name) && !spoiled(clean, name)) {
                rr.invented++;
                if (getenv("WALK_DUMP"))
                    printf("# invented: %s\n", name);
            }
        }
    }
    sc_walker_free(w);
    sc_hs_free(hs);
    close(mem);
    return rr;
}

static void set_range(wf_fixture *f, uint64_t lo, uint64_t hi, unsigned char v)
{
    for (uint32_t i = 0; i < f->n_ranges; i++) {
        wf_range *r = &f->ranges[i];
        for (uint32_t k = 0; k < r->len; k++)
            if (r->addr + k >= lo && r->addr + k < hi)
                r->data[k] = v;
    }
    for (uint32_t i = 0; i < f->n_overlays; i++) {
        wf_range *r = &f->overlays[i];
        for (uint32_t k = 0; k < r->len; k++)
            if (r->addr + k >= lo && r->addr + k < hi)
                r->data[k] = v;
    }
}

static void test_recorded(const char *file)
{
    char path[256];
    snprintf(path, sizeof path, "tests/data/walk/%s", file);
    wf_fixture f;
    if (wf_read(path, &f) < 0) {
        ok(0, "%s: read", file);
        return;
    }
    names clean = {0};
    run_result c = walk_all(&f, 0, &clean, NULL, 0);
    ok(c.opened && c.root > c.walks * 9 / 10 && clean.n > 5,
       "%s: the clean replay walks (%d of %d at the root, %d names)", file, c.root, c.walks,
       clean.n);

    /* the segment maps, as the walker reads them */
    int mem = open("/dev/null", O_RDONLY | O_CLOEXEC);
    wf_replay(mem, &f);
    wf_at(0);
    uint64_t jvm_base = 0;
    for (uint32_t i = 0; i < f.n_maps; i++)
        if (strstr(f.maps[i].path, "/libjvm.so") && !jvm_base)
            jvm_base = f.maps[i].start - f.maps[i].pgoff;
    char why[SC_HS_WHY_MAX];
    sc_hs *hs = sc_hs_open(mem, jvm_base, why);
    sc_wread rd = {.fd = mem};
    sc_ch *ch = hs ? sc_ch_open(hs, &rd, why) : NULL;
    sc_ch_heap heaps[SC_CH_MAX_HEAPS];
    int nh = ch ? sc_ch_heaps(ch, heaps, SC_CH_MAX_HEAPS) : 0;
    sc_ch_free(ch);
    sc_hs_free(hs);
    close(mem);
    ok(nh > 0, "%s: %d code heaps", file, nh);

    for (int v = 0; v < 2 && nh > 0; v++) {
        wf_fixture m;
        if (wf_read(path, &m) < 0)
            break;
        for (int h = 0; h < nh; h++)
            set_range(&m, heaps[h].segmap,
                      heaps[h].segmap + ((heaps[h].hi - heaps[h].lo) >> heaps[h].log2),
                      v ? 0x00 : 0x01);
        run_result r = walk_all(&m, 0, NULL, &clean, 0);
        ok(r.opened && r.root < c.root / 2 && r.invented == 0 && r.frames_max <= SC_WALK_MAX_FRAMES,
           "%s: a segment map of %s everywhere: no blob found (%d of %d at the root), no "
           "invented name",
           file, v ? "0s (a block at every segment)" : "1s (hops that never end)", r.root, r.walks);
        wf_free(&m);
    }

    srand(23);
    int rounds = 0, invented = 0, named = 0, opened = 0;
    for (int it = 0; it < 12; it++) {
        wf_fixture m;
        if (wf_read(path, &m) < 0)
            break;
        run_result r = walk_all(&m, 0, NULL, &clean, 64);
        rounds++;
        invented += r.invented;
        named += r.named;
        opened += r.opened;
        wf_free(&m);
    }
    ok(rounds == 12 && invented == 0,
       "%s: 12 replays with 1 in 64 bytes of the JVM's memory random once the walker is open: "
       "no crash, %d walkers, %d names given, none the JVM does not have",
       file, opened, named);

    run_result g = walk_all(&f, 1, NULL, &clean, 0);
    ok(g.walks == c.walks && g.root == 0 && g.invented == 0,
       "%s: stack copies of garbage: every walk ends, none at the root, no invented name", file);
    run_result l = walk_all(&f, 2, NULL, &clean, 0);
    ok(l.walks == c.walks && l.root == 0 && l.frames_max < 8,
       "%s: a frame-pointer loop: every walk stops at once (at most %d frames)", file,
       l.frames_max);
    for (int i = 0; i < clean.n; i++)
        free(clean.v[i]);
    free(clean.v);
    wf_free(&f);
}

int main(void)
{
    test_programs();
    test_images();
    test_recorded("jdk17-nofp.walk.gz");
    test_recorded("jdk25-nofp.walk.gz");
    return tap_done();
}
