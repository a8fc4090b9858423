/* sidecar/hotspot.c and interp.c against a hostile "JVM": a memfd read at offsets, as
 * /proc/<pid>/mem is, holding a libjvm image whose VMStructs pass sc_hs_open() and methods built
 * to cost the recorder as much as they can (docs/SIDECAR.md "Limits"):
 *   - 1024 holders sharing one 65535-entry _methods array (616 KiB of target memory made the
 *     recorder hold 514 MiB: a sorted copy per holder), and sharing a 4096-entry one;
 *   - the unloaded-classes counter changed before every pass (every answer stale each time:
 *     unbounded re-resolution);
 *   - methods renamed between those changes, so that every resolution is a new ~800-byte name
 *     for interp.c to keep.
 * Memory is measured as the allocator's bytes in use (ASan's count here), work as resolutions
 * and reads in a fixed time. */
#include <elf.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/interp.h"
#include "tests/unit/tap.h"

#ifdef __SANITIZE_ADDRESS__
size_t __sanitizer_get_current_allocated_bytes(void);
static long long heap_bytes(void)
{
    return (long long)__sanitizer_get_current_allocated_bytes();
}
#else
static long long heap_bytes(void)
{
    return (long long)mallinfo2().uordblks;
}
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the fake JVM ---- */

#define BASE 0x100000ull /* libjvm.so's image */
#define VARS (BASE + 0x1000)
#define STRUCTS (BASE + 0x2000)
#define TYPES (BASE + 0x4000)
#define STRS (BASE + 0x5000)
#define STATICS (BASE + 0x6000) /* AbstractInterpreter::_code, PerfMemory::_start */
#define STUBQ (BASE + 0x6100)
#define PERF (BASE + 0x7000)
#define COUNTER (PERF + 32 + 56) /* java.cls.unloadedClasses */
#define INTERP 0x300000ull
#define INTERP_SIZE 0x10000
#define RECS 0x400000ull /* per method: Method, ConstMethod, ConstantPool, InstanceKlass, ... */
#define REC 2056         /* holders 2056 bytes apart: each in a cache slot of its own */
#define BIG 0x4000000ull /* the shared arrays */
#define MID 0x5000000ull
#define NH 1024
#define NAME_LEN 395 /* class and method names: ~790-byte frame names */

static int mem;

static void put(uint64_t addr, const void *p, size_t n)
{
    if (pwrite(mem, p, n, (off_t)addr) != (ssize_t)n)
        abort();
}
static void put64(uint64_t addr, uint64_t v)
{
    put(addr, &v, 8);
}
static void put32(uint64_t addr, uint32_t v)
{
    put(addr, &v, 4);
}
static void put16(uint64_t addr, uint16_t v)
{
    put(addr, &v, 2);
}

static uint64_t str_at = STRS;
static uint64_t str(const char *s)
{
    uint64_t a = str_at;
    put(a, s, strlen(s) + 1);
    str_at += (strlen(s) + 8) & ~7ull;
    return a;
}

static void image(void)
{
    unsigned char h[4096] = {0};
    Elf64_Ehdr *eh = (void *)h;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_machine = EM_X86_64;
    eh->e_phoff = 64;
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_phnum = 2;
    Elf64_Phdr *ph = (void *)(h + 64);
    ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_memsz = 0x10000};
    ph[1] = (Elf64_Phdr){.p_type = PT_DYNAMIC, .p_vaddr = 0x200, .p_memsz = 4 * 16};
    static const char *const syms[] = {
        "gHotSpotVMStructs",
        "gHotSpotVMTypes",
        "gHotSpotVMStructEntryTypeNameOffset",
        "gHotSpotVMStructEntryFieldNameOffset",
        "gHotSpotVMStructEntryIsStaticOffset",
        "gHotSpotVMStructEntryOffsetOffset",
        "gHotSpotVMStructEntryAddressOffset",
        "gHotSpotVMStructEntryArrayStride",
        "gHotSpotVMTypeEntryTypeNameOffset",
        "gHotSpotVMTypeEntrySizeOffset",
        "gHotSpotVMTypeEntryArrayStride",
    };
    const uint64_t vals[] = {STRUCTS, TYPES, 0, 8, 16, 24, 32, 48, 0, 16, 24};
    const int ns = 11;
    Elf64_Sym *sy = (void *)(h + 0x400);
    char *st = (char *)(h + 0x400 + (ns + 1) * sizeof(Elf64_Sym));
    size_t sl = 1;
    for (int i = 0; i < ns; i++) {
        sy[i + 1] = (Elf64_Sym){
            .st_name = (uint32_t)sl, .st_shndx = 1, .st_value = VARS - BASE + 8 * (uint64_t)i};
        strcpy(st + sl, syms[i]);
        sl += strlen(syms[i]) + 1;
    }
    Elf64_Dyn *d = (void *)(h + 0x200);
    d[0] = (Elf64_Dyn){.d_tag = DT_SYMTAB, .d_un.d_ptr = 0x400};
    d[1] = (Elf64_Dyn){.d_tag = DT_STRTAB, .d_un.d_ptr = 0x400 + (ns + 1) * sizeof(Elf64_Sym)};
    d[2] = (Elf64_Dyn){.d_tag = DT_STRSZ, .d_un.d_val = sl};
    put(BASE, h, sizeof h);
    for (int i = 0; i < ns; i++)
        put64(VARS + 8 * (uint64_t)i, vals[i]);

    /* VMStructs: {type, field, static, offset, address}, stride 48 */
    static const struct {
        const char *type, *field;
        int is_static;
        uint64_t off;
    } f[] = {
        {"Method", "_constMethod", 0, 8},
        {"Method", "_access_flags", 0, 16},
        {"ConstMethod", "_constants", 0, 8},
        {"ConstMethod", "_code_size", 0, 16},
        {"ConstMethod", "_name_index", 0, 18},
        {"ConstantPool", "_pool_holder", 0, 8},
        {"ConstantPool", "_length", 0, 16},
        {"InstanceKlass", "_methods", 0, 8},
        {"InstanceKlass", "_constants", 0, 16},
        {"Klass", "_name", 0, 24},
        {"Klass", "_class_loader_data", 0, 32},
        {"Array<Method*>", "_data", 0, 8},
        {"Symbol", "_length", 0, 0},
        {"Symbol", "_body", 0, 8},
        {"ClassLoaderData", "_class_loader", 0, 8},
        {"AbstractInterpreter", "_code", 1, STATICS},
        {"StubQueue", "_stub_buffer", 0, 0},
        {"StubQueue", "_buffer_limit", 0, 8},
        {"PerfMemory", "_start", 1, STATICS + 8},
    };
    uint64_t e = STRUCTS;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++, e += 48) {
        put64(e, str(f[i].type));
        put64(e + 8, str(f[i].field));
        put32(e + 16, (uint32_t)f[i].is_static);
        put64(f[i].is_static ? e + 32 : e + 24, f[i].off);
    }
    put64(e, 0);
    put64(TYPES, str("ConstMethod"));
    put64(TYPES + 16, 64);
    put64(TYPES + 24, str("ConstantPool"));
    put64(TYPES + 24 + 16, 64);
    put64(TYPES + 48, 0);
    put64(STATICS, STUBQ);
    put64(STUBQ, INTERP);
    put32(STUBQ + 8, INTERP_SIZE);
    /* PerfData: prologue (magic, entry_offset 32, one entry), the counter's entry */
    const unsigned char magic[4] = {0xca, 0xfe, 0xc0, 0xc0};
    put64(STATICS + 8, PERF);
    put(PERF, magic, 4);
    put32(PERF + 24, 32);
    put32(PERF + 28, 1);
    int32_t ent[5] = {64, 20, 0, 0, 56};
    put(PERF + 32, ent, sizeof ent);
    put(PERF + 32 + 20, "java.cls.unloadedClasses", 25);
    put64(COUNTER, 0);
}

static uint64_t method(int i)
{
    return RECS + (uint64_t)i * REC;
}
static uint64_t bcp(int i)
{
    return method(i) + 64 + 64 + 4; /* inside the ConstMethod's 16 bytes of code */
}

/* A symbol of NAME_LEN bytes: tag, then a letter that `round` changes. */
static void symbol(uint64_t at, const char *tag, int i, int round)
{
    char b[NAME_LEN + 1];
    int n = snprintf(b, sizeof b, "%s%d_", tag, i);
    memset(b + n, 'a' + round % 26, NAME_LEN - (size_t)n);
    put16(at, NAME_LEN);
    put(at + 8, b, NAME_LEN);
}

/* Method i, its holder listing it through `methods` (0: a one-entry array of its own). */
static void methods_build(uint64_t shared, int round)
{
    for (int i = 0; i < NH; i++) {
        uint64_t m = method(i), cm = m + 64, cp = m + 192, ik = m + 320, cld = m + 384,
                 csym = m + 448, msym = m + 1024, own = m + 1800;
        put64(m + 8, cm);
        put16(m + 16, 0);
        put64(cm + 8, cp);
        put16(cm + 16, 16);
        put16(cm + 18, 1);
        put64(cp + 8, ik);
        put32(cp + 16, 2);
        put64(cp + 64 + 8, msym);
        put64(ik + 8, shared ? shared : own);
        put64(ik + 16, cp);
        put64(ik + 24, csym);
        put64(ik + 32, cld);
        put64(cld + 8, 1); /* a loader object: not the boot loader's, never permanent */
        put32(own, 1);
        put64(own + 8, m);
        symbol(csym, "C", i, round);
        symbol(msym, "m", i, round);
    }
}

/* An Array<Method*> of n entries listing every method, the rest filler. */
static void array(uint64_t at, int32_t n)
{
    uint64_t *a = malloc(8 * (size_t)n);
    for (int32_t k = 0; k < n; k++)
        a[k] = k < NH ? method(k) : 0x7000000000ull + 8 * (uint64_t)k;
    put32(at, (uint32_t)n);
    put(at + 8, a, 8 * (size_t)n);
    free(a);
}

static int fake_jvm(void)
{
    mem = memfd_create("fake-jvm", MFD_CLOEXEC);
    if (mem < 0)
        return -1;
    str_at = STRS;
    image();
    array(BIG, 65535);
    array(MID, 4096);
    return 0;
}

static void flip(void)
{
    uint64_t v;
    if (pread(mem, &v, 8, (off_t)COUNTER) != 8)
        abort();
    put64(COUNTER, v + 1);
}

/* ---- tests ---- */

static void test_open(void)
{
    char why[SC_HS_WHY_MAX];
    methods_build(0, 0);
    sc_hs *h = sc_hs_open(mem, BASE, why);
    ok(h != NULL, "the fake JVM passes sc_hs_open (%s)", why);
    if (!h)
        return;
    ok(sc_hs_in_interpreter(h, INTERP + 5) && !sc_hs_in_interpreter(h, INTERP + INTERP_SIZE),
       "the interpreter's code from AbstractInterpreter::_code");
    is_int(sc_hs_poll_unloads(h), 0, "the unloaded-classes counter is read");
    const char *name;
    bool perm;
    sc_hs_pass(h);
    is_int(sc_hs_frame(h, method(7), bcp(7), &name, &perm), SC_HS_OK, "method 7 resolves");
    ok(name && !strncmp(name, "C7_aaa", 6) && strstr(name, ".m7_aaa") && !perm,
       "named Class.method from the symbols, not permanent");
    is_int(sc_hs_frame(h, method(7), 0x10, &name, &perm), SC_HS_BAD_BCP, "a bcp outside: refused");
    sc_hs_free(h);
}

/* The review's case: 1024 holders, one 512 KiB array. Before: a sorted copy per holder. */
static void test_memory(uint64_t shared, int32_t n, const char *what)
{
    char why[SC_HS_WHY_MAX];
    methods_build(shared, 0);
    long long before = heap_bytes();
    sc_hs *h = sc_hs_open(mem, BASE, why);
    if (!h) {
        ok(0, "%s: open (%s)", what, why);
        return;
    }
    long long peak = 0;
    unsigned named = 0;
    double t0 = now_s();
    /* as the recorder would, passes of 64 frames, for a second and a half */
    for (int pass = 0; now_s() - t0 < 1.5; pass++) {
        sc_hs_pass(h);
        for (int k = 0; k < 64; k++) {
            int i = (pass * 64 + k) % NH;
            const char *name;
            bool perm;
            named += sc_hs_frame(h, method(i), bcp(i), &name, &perm) == SC_HS_OK;
        }
        long long used = heap_bytes() - before;
        if (used > peak)
            peak = used;
    }
    sc_hs_stats st;
    sc_hs_get_stats(h, &st);
    ok(peak < (8ll << 20),
       "%s (%d entries), 1024 holders: at most 8 MiB held (peak %lld KiB; %u "
       "frames named, %llu resolutions)",
       what, n, peak >> 10, named, (unsigned long long)st.resolved);
    sc_hs_free(h);
    ok(heap_bytes() - before < (64 << 10), "%s: all freed", what);
}

/* The target changes its unloaded-classes counter before every pass: every answer is stale
 * every time. The work done in a fixed time is bounded by the budget. */
static void test_epoch_flips(uint64_t shared, const char *what)
{
    char why[SC_HS_WHY_MAX];
    methods_build(shared, 0);
    sc_hs *h = sc_hs_open(mem, BASE, why);
    if (!h) {
        ok(0, "%s: open (%s)", what, why);
        return;
    }
    double t0 = now_s(), t;
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    int passes = 0;
    /* 20 passes of 512 frames (one sample's worth), or 3 s, whichever first */
    while ((t = now_s() - t0) < 3 && passes < 20) {
        flip();
        sc_hs_poll_unloads(h);
        sc_hs_pass(h);
        for (int k = 0; k < 512; k++) {
            const char *name;
            bool perm;
            sc_hs_frame(h, method(k % NH), bcp(k % NH), &name, &perm);
        }
        passes++;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    sc_hs_stats st;
    sc_hs_get_stats(h, &st);
    is_int(passes, 20, "%s: 20 passes of 512 frames with the epoch changed before each", what);
    ok(st.resolved <= 4096 * (unsigned)(t + 1), "%s: %llu resolutions in %.2f s (budget 4096/s)",
       what, (unsigned long long)st.resolved, t);
    ok(cpu < 1.0, "%s: %.3f s of CPU for them", what, cpu);
    ok(st.throttled > 0, "%s: the rest put off (%llu)", what, (unsigned long long)st.throttled);
    sc_hs_free(h);
}

/* One sample of pid: the leaf frame interpreted (Method* and bcp in its slots). */
static size_t sample(unsigned char *r, uint32_t pid, uint64_t m, uint64_t b)
{
    const uint64_t sp = 0x7ffd0000ull, fp = sp + 0x100;
    size_t n = 8;
    uint64_t w[6] = {INTERP + 16, (uint64_t)pid | (uint64_t)pid << 32, 1, 0, 1, 3};
    memcpy(r + n, w, sizeof w);
    n += sizeof w;
    uint64_t chain[3] = {(uint64_t)PERF_CONTEXT_USER, INTERP + 16, 0x5000};
    memcpy(r + n, chain, sizeof chain);
    n += sizeof chain;
    /* the ABI, then AX BX BP SP IP R13 (interp.h SC_INTERP_REGS_MASK) */
    uint64_t regs[7] = {2, 0, 0, fp, sp, INTERP + 16, 0};
    memcpy(r + n, regs, sizeof regs);
    n += sizeof regs;
    uint64_t sz = 512;
    memcpy(r + n, &sz, 8);
    n += 8;
    unsigned char st[512] = {0};
    memcpy(st + 0x100 - 24, &m, 8);
    memcpy(st + 0x100 - 64, &b, 8);
    memcpy(r + n, st, sizeof st);
    n += sizeof st;
    memcpy(r + n, &sz, 8);
    n += 8;
    uint32_t type = PERF_RECORD_SAMPLE;
    uint16_t size = (uint16_t)n;
    memset(r, 0, 8);
    memcpy(r, &type, 4);
    memcpy(r + 6, &size, 2);
    return n;
}

/* Renamed between unloadings: every resolution is a new ~800-byte name to keep and write. */
static void test_names_in_bytes(void)
{
    static unsigned char r[4096], out[4096];
    methods_build(0, 0);
    pid_t pid = 4242;
    int names = memfd_create("names", MFD_CLOEXEC);
    int fd = dup(mem);
    long long before = heap_bytes(), peak = 0;
    sc_interp *in = sc_interp_new(&pid, &fd, &names, 1);
    sc_interp_note_map(in, pid, BASE, BASE + (1 << 20), 0, "/fake/lib/server/libjvm.so");
    is_int(sc_interp_start(in), 1, "interp: the fake JVM can be named");
    double t0 = now_s();
    int round = 0;
    for (; round < 40 && now_s() - t0 < 4; round++) {
        if (round) {
            methods_build(0, round);
            flip();
        }
        sc_interp_pass(in); /* an unloading between two passes: names wait for the next */
        sc_interp_pass(in);
        for (int i = 0; i < NH; i++) {
            size_t n = sample(r, (uint32_t)pid, method(i), bcp(i));
            sc_interp_rewrite(in, r, n, out);
        }
        long long used = heap_bytes() - before;
        if (used > peak)
            peak = used;
    }
    sc_interp_stats st;
    sc_interp_get_stats(in, &st);
    struct stat fs;
    fstat(names, &fs);
    ok(st.names > 0, "interp: %llu names after %d rounds of renaming", (unsigned long long)st.names,
       round);
    ok(peak < (8ll << 20), "interp: at most 8 MiB held (peak %lld KiB)", peak >> 10);
    ok(fs.st_size < (4 << 20), "interp: the names file stays small (%lld KiB)",
       (long long)fs.st_size >> 10);
    ok(st.names_full > 0 || st.throttled > 0, "interp: the rest refused (%llu full, %llu put off)",
       (unsigned long long)st.names_full, (unsigned long long)st.throttled);
    sc_interp_free(in); /* it owned both descriptors */
}

int main(void)
{
    if (fake_jvm() < 0) {
        ok(0, "memfd");
        return tap_done();
    }
    test_open();
    test_memory(BIG, 65535, "a shared 65535-entry array");
    test_memory(MID, 4096, "a shared 4096-entry array");
    test_epoch_flips(0, "own small arrays");
    test_epoch_flips(BIG, "a shared 65535-entry array");
    test_names_in_bytes();
    close(mem);
    return tap_done();
}
