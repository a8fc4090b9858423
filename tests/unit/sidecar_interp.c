/* sidecar/recorder/interp.c and sidecar/recorder/hotspot.c, their pure parts and hostile inputs:
 * the frame-pointer walk through a stack copy (which slots are read, and every way a frame stays
 * unnamed), the sample rewrite (registers and stack copy dropped; malformed records refused), names
 * made safe, and VMStructs reading from crafted "memory" (a memfd read at offsets, as
 * /proc/<pid>/mem is): garbage, an ELF without the gHotSpot tables. None may crash or name
 * anything. */
#include <elf.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/interp.h"
#include "tests/unit/tap.h"

#define INTERP_LO 0x1000
#define INTERP_HI 0x2000
#define SP 0x7ffd0000ull

static bool t_in(void *ctx, uint64_t pc)
{
    (void)ctx;
    return pc >= INTERP_LO && pc < INTERP_HI;
}

typedef struct seen {
    int n;
    int k[8];
    uint64_t m[8], b[8];
    uint64_t answer; /* 0: refuse */
} seen;

static uint64_t t_name(void *ctx, int k, uint64_t method, uint64_t bcp)
{
    seen *s = ctx;
    if (s->n < 8) {
        s->k[s->n] = k;
        s->m[s->n] = method;
        s->b[s->n++] = bcp;
    }
    return s->answer ? s->answer + (uint64_t)k : 0;
}

static void put(unsigned char *st, uint64_t addr, uint64_t v)
{
    memcpy(st + (addr - SP), &v, 8);
}

/* A stack: leaf (interpreted, complete) at fp0 = SP+0x100; its caller (native, fp1 = SP+0x200)
 * called from an interpreted frame fp2 = SP+0x300, whose caller is native code (fp3). */
static void build(unsigned char *st, uint64_t *ips)
{
    memset(st, 0, 4096);
    uint64_t fp0 = SP + 0x100, fp1 = SP + 0x200, fp2 = SP + 0x300, fp3 = SP + 0x400;
    put(st, fp0, fp1), put(st, fp0 + 8, 0x5000); /* leaf frame -> native caller */
    put(st, fp0 - 24, 0xaaa0), put(st, fp0 - 64, 0xb0);
    put(st, fp1, fp2), put(st, fp1 + 8, 0x1800); /* native -> interpreted */
    put(st, fp2 - 24, 0xccc0), put(st, fp2 - 64, 0xd0);
    put(st, fp2, fp3), put(st, fp2 + 8, 0x6000);
    put(st, fp3, 0), put(st, fp3 + 8, 0x7000);
    uint64_t v[5] = {0x1100, 0x5000, 0x1800, 0x6000, 0x7000};
    memcpy(ips, v, sizeof v);
}

static void test_walk(void)
{
    unsigned char st[4096];
    uint64_t ips[5];
    build(st, ips);
    seen s = {.answer = 0x4000000000000000ull};
    sc_interp_walk_cb cb = {.in_interp = t_in, .name = t_name, .ctx = &s};
    sc_interp_stats z = {0};
    sc_interp_walk(ips, 5, SP + 0x100, SP, st, sizeof st, &cb, &z);
    is_int(s.n, 2, "walk: two interpreter frames asked about");
    is_int(s.k[0], 0, "the leaf first");
    ok(s.m[0] == 0xaaa0 && s.b[0] == 0xb0, "leaf: Method* at fp-24, bcp at fp-64");
    is_int(s.k[1], 2, "then the interpreted caller");
    ok(s.m[1] == 0xccc0 && s.b[1] == 0xd0, "caller: slots of the frame owning the address");
    ok(ips[0] == 0x4000000000000000ull && ips[2] == 0x4000000000000002ull, "both replaced");
    ok(ips[1] == 0x5000 && ips[3] == 0x6000, "native frames untouched");
    ok(z.frames == 2 && z.named == 2 && z.unknown == 0, "stats: 2 named");

    /* the name callback refuses (stale/garbage slot): the address stays, counted unknown */
    build(st, ips);
    s = (seen){0};
    z = (sc_interp_stats){0};
    sc_interp_walk(ips, 5, SP + 0x100, SP, st, sizeof st, &cb, &z);
    ok(ips[0] == 0x1100 && ips[2] == 0x1800, "refused: the Interpreter addresses stay");
    ok(z.unknown == 2 && z.named == 0, "refused: 2 unknown");

    /* leaf frame half pushed (sp above fp-72): not asked, counted partial */
    build(st, ips);
    s = (seen){.answer = 1};
    z = (sc_interp_stats){0};
    sc_interp_walk(ips, 5, SP + 0x40, SP, st, sizeof st, &cb, &z);
    ok(ips[0] == 0x1100 && z.partial == 1, "partial leaf frame: never named");

    /* the copy disagrees with the kernel's chain (the stack changed): stop naming there */
    build(st, ips);
    put(st, SP + 0x200 + 8, 0x1234);
    s = (seen){.answer = 1};
    z = (sc_interp_stats){0};
    sc_interp_walk(ips, 5, SP + 0x100, SP, st, sizeof st, &cb, &z);
    is_int(s.n, 1, "broken chain: only the frames before the break are asked about");
    ok(ips[2] == 0x1800 && z.broken_chain == 1, "broken chain: the rest stays unnamed");

    /* a copy too short for the caller's frame */
    build(st, ips);
    s = (seen){.answer = 1};
    z = (sc_interp_stats){0};
    sc_interp_walk(ips, 5, SP + 0x100, SP, st, 0x208, &cb, &z);
    ok(ips[2] == 0x1800 && z.beyond_copy == 1, "frame beyond the copy: unnamed");

    /* fp pointing anywhere (below sp, wrap-around) never reads outside the copy (ASan) */
    uint64_t bad[4] = {0x1100, 0x1200, 0x1300, 0x1400};
    z = (sc_interp_stats){0};
    sc_interp_walk(bad, 4, 8, SP, st, sizeof st, &cb, &z);
    sc_interp_walk(bad, 4, UINT64_MAX - 8, SP, st, sizeof st, &cb, &z);
    ok(z.named == 0 && z.frames == 8, "frame pointers outside the copy: nothing read or named");
    /* the leaf's slots lie in the copy's last bytes, its caller's link beyond: one read, ok */
    sc_interp_walk(bad, 4, SP + sizeof st - 8, SP, st, sizeof st, &cb, &z);
    ok(z.named == 1 && z.beyond_copy >= 3, "a frame at the copy's end: its link is not read");
}

/* A sample as the kernel writes it with our sample_type (percpu.c + interp.h). */
static size_t sample(unsigned char *r, uint32_t pid, uint64_t nr, size_t stack)
{
    size_t n = 8;
    uint64_t w[6] = {0x1100, (uint64_t)pid | (uint64_t)pid << 32, 123, 0, 10101010, nr};
    memcpy(r + n, w, sizeof w);
    n += sizeof w;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t ip = i == 0 ? (uint64_t)PERF_CONTEXT_USER : 0x1100 + i;
        memcpy(r + n, &ip, 8);
        n += 8;
    }
    /* abi 64, then SC_INTERP_REGS_MASK's ax, bx, bp, sp, ip, r13 */
    uint64_t regs[7] = {2, 0, 0, SP + 0x100, SP, 0x1100, 0};
    memcpy(r + n, regs, sizeof regs);
    n += sizeof regs;
    uint64_t sz = stack;
    memcpy(r + n, &sz, 8);
    n += 8;
    memset(r + n, 0x11, stack);
    n += stack;
    if (stack) {
        memcpy(r + n, &sz, 8);
        n += 8;
    }
    uint32_t type = PERF_RECORD_SAMPLE;
    uint16_t size = (uint16_t)n;
    memset(r, 0, 8);
    memcpy(r, &type, 4);
    memcpy(r + 6, &size, 2);
    return n;
}

static void test_rewrite(void)
{
    static unsigned char r[65536], out[65536];
    pid_t pid = 42;
    int mem = -1, names = -1;
    sc_interp *in = sc_interp_new(&pid, &mem, &names, 1);
    ok(in != NULL, "interp object");
    is_int(sc_interp_start(in), 0, "no memory: no JVM can be named");
    const char *why = sc_interp_why(in, 42);
    ok(why && strstr(why, "its memory could not be opened") != NULL, "and why says so");
    ok(sc_interp_why(in, 43) != NULL, "a pid it does not know: not named either");
    size_t n = sample(r, 42, 4, 512);
    size_t m = sc_interp_rewrite(in, r, n, out);
    is_int((long long)m, 8 + 48 + 32, "registers and stack copy dropped");
    uint16_t hs;
    memcpy(&hs, out + 6, 2);
    is_int(hs, (long long)m, "header size updated");
    ok(memcmp(out + 8, r + 8, m - 8) == 0, "ip..callchain unchanged without a JVM");
    n = sample(r, 7, 3, 0);
    is_int((long long)sc_interp_rewrite(in, r, n, out), 8 + 48 + 24, "no stack copy (size 0)");
    /* malformed: callchain longer than the record, stack size beyond it, truncations */
    n = sample(r, 42, 4, 512);
    uint64_t huge = 1ull << 40;
    memcpy(r + 8 + 40, &huge, 8);
    is_int((long long)sc_interp_rewrite(in, r, n, out), 0, "nr beyond the record refused");
    n = sample(r, 42, 4, 512);
    memcpy(r + 8 + 48 + 32 + 56, &huge, 8);
    is_int((long long)sc_interp_rewrite(in, r, n, out), 0, "stack size beyond the record refused");
    int refused = 0;
    for (size_t cut = 0; cut < 8 + 48 + 32 + 56 + 8; cut++)
        refused += sc_interp_rewrite(in, r, cut, out) == 0;
    is_int(refused, 8 + 48 + 32 + 56 + 8, "every truncation refused");
    srand(15);
    for (int i = 0; i < 20000; i++) { /* random garbage: no crash, no read beyond (ASan) */
        size_t len = (size_t)(rand() % 300);
        for (size_t k = 0; k < len; k++)
            r[k] = (unsigned char)(rand() % 7 == 0 ? 0xff : rand() % 4);
        sc_interp_rewrite(in, r, len, out);
    }
    ok(1, "20000 garbage records survived");
    sc_interp_free(in);
}

static void test_names(void)
{
    char a[] = "com/x/Foo\n;Bar(";
    sc_hs_clean_name(a, strlen(a), true);
    is_str(a, "com.x.Foo??Bar?", "control bytes, ';', '(' replaced; '/' -> '.'");
    char b[] = "A->B";
    sc_hs_clean_name(b, strlen(b), false);
    is_str(b, "A-?B", "no agent-chain separator");
    char c[] = "Foo$$Lambda$14+0x0000000800c01000";
    sc_hs_cut_hidden(c);
    is_str(c, "Foo$$Lambda$14", "JDK 17 hidden class suffix cut");
    char d[] = "Foo$$Lambda.0x000001f0";
    sc_hs_cut_hidden(d);
    is_str(d, "Foo$$Lambda", "JDK 21+ hidden class suffix cut");
    char e[] = "Foo+0xzz";
    sc_hs_cut_hidden(e);
    is_str(e, "Foo+0xzz", "not hex: kept");
}

/* "Memory" of a target: a memfd read at offsets, as /proc/<pid>/mem is. */
static int memory(const void *at_base, size_t len, uint64_t base)
{
    int fd = memfd_create("fake-mem", MFD_CLOEXEC);
    if (fd < 0 || pwrite(fd, at_base, len, (off_t)base) != (ssize_t)len)
        return -1;
    return fd;
}

static void test_hotspot_hostile(void)
{
    char why[SC_HS_WHY_MAX];
    const uint64_t base = 0x10000;
    unsigned char g[8192];
    srand(25);
    for (size_t i = 0; i < sizeof g; i++)
        g[i] = (unsigned char)rand();
    int fd = memory(g, sizeof g, base);
    ok(fd >= 0, "memfd");
    ok(sc_hs_open(fd, base, why) == NULL && strstr(why, "ELF"), "garbage: refused (%s)", why);
    ok(sc_hs_open(fd, 0x7fff0000, why) == NULL, "unmapped base: refused (%s)", why);
    close(fd);

    /* An x86-64 ELF image with a .dynamic and a .dynsym, but none of the gHotSpot tables: what a
     * crafted libjvm.so (or another JVM) looks like. */
    unsigned char img[4096] = {0};
    Elf64_Ehdr *eh = (void *)img;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_machine = EM_X86_64;
    eh->e_phoff = 64;
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_phnum = 2;
    Elf64_Phdr *ph = (void *)(img + 64);
    ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_vaddr = 0, .p_offset = 0, .p_memsz = 4096};
    ph[1] = (Elf64_Phdr){.p_type = PT_DYNAMIC, .p_vaddr = 0x200, .p_memsz = 4 * 16};
    Elf64_Dyn *d = (void *)(img + 0x200);
    d[0] = (Elf64_Dyn){.d_tag = DT_SYMTAB, .d_un.d_ptr = 0x400};
    d[1] = (Elf64_Dyn){.d_tag = DT_STRTAB, .d_un.d_ptr = 0x400 + 2 * sizeof(Elf64_Sym)};
    d[2] = (Elf64_Dyn){.d_tag = DT_STRSZ, .d_un.d_val = 32};
    Elf64_Sym *sy = (void *)(img + 0x400);
    sy[1] = (Elf64_Sym){.st_name = 1, .st_shndx = 1, .st_value = 0x800};
    memcpy(img + 0x400 + 2 * sizeof(Elf64_Sym), "\0gHotSpotVMStructs\0", 20);
    uint64_t structs = base + 0x900; /* the variable holds a pointer */
    memcpy(img + 0x800, &structs, 8);
    fd = memory(img, sizeof img, base);
    ok(sc_hs_open(fd, base, why) == NULL && strstr(why, "exports no gHotSpotVMTypes"),
       "an ELF without the type tables: refused, naming what is missing (%s)", why);
    /* .dynsym/.dynstr distances that would make us read megabytes */
    d[1].d_un.d_ptr = 0x400 + 50000000;
    close(fd);
    fd = memory(img, sizeof img, base);
    ok(sc_hs_open(fd, base, why) == NULL && strstr(why, "implausible"),
       "a huge symbol table: refused (%s)", why);
    close(fd);
}

int main(void)
{
    test_walk();
    test_rewrite();
    test_names();
    test_hotspot_hostile();
    return tap_done();
}
