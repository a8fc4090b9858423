/* sidecar/symfs_parse.c: the strict /proc/<pid>/maps line parser and the name check that decides
 * where below --symfs a copy of the target's library may go (crafted names, escapes, deleted
 * files, traversal, malformed numbers), and the build-id reader (truncated and crafted ELF). */
#include <string.h>

#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

static int parse(const char *line, sc_symfs_map *m)
{
    memset(m, 0x5a, sizeof *m);
    return sc_symfs_parse_line(line, strlen(line), m);
}

static void test_lines(void)
{
    sc_symfs_map m;
    is_int(parse("7f12a0000000-7f12a0195000 r-xp 00028000 00:2d 1234567                    "
                 "/usr/lib/x86_64-linux-gnu/libc.so.6",
                 &m),
           1, "libc's code mapping");
    is_str(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6", "its path");
    ok(m.start == 0x7f12a0000000ull && m.end == 0x7f12a0195000ull, "start and end");
    is_int((long long)m.ino, 1234567, "inode (decimal)");
    ok(m.dev_major == 0 && m.dev_minor == 0x2d, "device");
    is_int(parse("7f12a0000000-7f12a0195000 r--p 00000000 00:2d 1234567 /usr/lib/libc.so.6", &m), 0,
           "not executable: skipped");
    is_int(parse("7f12a0000000-7f12a0195000 r-xp 00000000 00:00 0", &m), 0,
           "anonymous code (JIT): skipped");
    is_int(parse("7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]", &m), 0,
           "[vdso]: skipped");
    is_int(parse("1000-2000 r-xp 00000000 08:01 12 /opt/app/lib with space.so", &m), 1,
           "a name with spaces is a name");
    is_str(m.path, "/opt/app/lib with space.so", "spaces kept");
    is_int(parse("1000-2000 r-xp 00000000 08:01 12 /tmp/libx.so (deleted)", &m), 1,
           "replaced or deleted file: kept, under the name perf looks up");
    is_str(m.path, "/tmp/libx.so (deleted)", "with its suffix");
    is_int(parse("1000-2000 r-xp 00000000 08:01 12 /tmp/a\\012b.so", &m), 2,
           "escaped newline: refused");
    is_int(parse("1000-2000 r-xp 00000000 08:01 12 /tmp/../etc/x.so", &m), 2, "..: refused");
    is_int(parse("1000-2000 r-xp 00000000 08:01 12 relative.so", &m), 0,
           "not absolute: not a file mapping we copy");
    char longp[700] = "1000-2000 r-xp 00000000 08:01 12 /";
    memset(longp + strlen(longp), 'a', 600);
    is_int(parse(longp, &m), 2, "over-long name: refused");
    /* malformed */
    is_int(parse("", &m), -1, "empty line");
    is_int(parse("1000-2000 r-xp", &m), -1, "truncated");
    is_int(parse("2000-1000 r-xp 00000000 08:01 12 /a.so", &m), -1, "end before start");
    is_int(parse("1000-1000 r-xp 00000000 08:01 12 /a.so", &m), -1, "empty range");
    is_int(parse("0x1000-2000 r-xp 00000000 08:01 12 /a.so", &m), -1, "0x prefix");
    is_int(parse("1000-2000 rwzp 00000000 08:01 12 /a.so", &m), -1, "bad perms");
    is_int(parse("-1000-2000 r-xp 00000000 08:01 12 /a.so", &m), -1, "sign");
    is_int(parse("10000000000000000-10000000000000001 r-xp 00000000 08:01 12 /a.so", &m), -1,
           "17 hex digits");
    is_int(parse("1000-2000 r-xp 00000000 08:01 12x /a.so", &m), -1, "junk after the inode");
    is_int(parse("1000-2000 r-xp 00000000 0801 12 /a.so", &m), -1, "device without colon");
    is_int(parse("1000-2000 r-xp 00000000 08:01 123456789012345678901 /a.so", &m), -1,
           "21-digit inode");
    is_int(sc_symfs_parse_line("1000-2000 r-xp 00000000 08:01 12 /a\0b.so", 38, &m), -1,
           "NUL in the name");
}

static void test_paths(void)
{
    ok(sc_symfs_path_ok("/usr/lib/jvm/java-17/lib/server/libjvm.so"), "ordinary path");
    ok(!sc_symfs_path_ok("/"), "root alone");
    ok(!sc_symfs_path_ok(""), "empty");
    ok(!sc_symfs_path_ok("/usr//lib/a.so"), "empty component");
    ok(!sc_symfs_path_ok("/usr/lib/"), "trailing slash");
    ok(!sc_symfs_path_ok("/usr/./a.so"), ". component");
    ok(!sc_symfs_path_ok("/.."), ".. alone");
    ok(!sc_symfs_path_ok("/a/../../b.so"), ".. component");
    ok(sc_symfs_path_ok("/a/..b/c..so"), "dots inside a name are fine");
    ok(!sc_symfs_path_ok("/a/b\x01.so"), "control byte");
    ok(!sc_symfs_path_ok("/a/\xc3\xa9.so"), "non-ASCII byte");
    ok(sc_symfs_path_ok("/a/b.so (deleted)"), "deleted: the mapped inode is copied, so kept");
    ok(!sc_symfs_path_ok("/a/b\\012.so"), "backslash");
}

/* A minimal ELF64 LE image: header, one program header (PT_NOTE) at 64, the note at 120. */
static size_t mk_elf(unsigned char *b, size_t cap, unsigned namesz, unsigned descsz, unsigned type)
{
    memset(b, 0, cap);
    memcpy(b, "\177ELF", 4);
    b[4] = 2;
    b[5] = 1;
    b[0x20] = 64; /* e_phoff */
    b[0x36] = 56; /* e_phentsize */
    b[0x38] = 1;  /* e_phnum */
    unsigned char *ph = b + 64;
    ph[0] = 4; /* PT_NOTE */
    ph[8] = 120;
    ph[32] = 12 + 4 + 20; /* p_filesz */
    unsigned char *n = b + 120;
    memcpy(n, &namesz, 4);
    memcpy(n + 4, &descsz, 4);
    memcpy(n + 8, &type, 4);
    memcpy(n + 12, "GNU", 4);
    for (int i = 0; i < 20; i++)
        n[16 + i] = (unsigned char)(0xa0 + i);
    return 120 + 36;
}

static void test_build_id(void)
{
    unsigned char b[512];
    char hex[2 * SC_BUILD_ID_MAX + 1];
    size_t len = mk_elf(b, sizeof b, 4, 20, 3);
    is_int(sc_elf_build_id(b, len, hex), 1, "PT_NOTE build-id found");
    is_str(hex, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3", "as hex");
    is_int(sc_elf_build_id(b, len - 1, hex), 0, "note cut short: none");
    is_str(hex, "", "hex empty");
    mk_elf(b, sizeof b, 4, 20, 1);
    is_int(sc_elf_build_id(b, len, hex), 0, "another note type: none");
    mk_elf(b, sizeof b, 0xfffffffcu, 20, 3);
    is_int(sc_elf_build_id(b, len, hex), 0, "huge namesz: none, no overread");
    mk_elf(b, sizeof b, 4, 0xfffffffcu, 3);
    is_int(sc_elf_build_id(b, len, hex), 0, "huge descsz: none");
    mk_elf(b, sizeof b, 4, 20, 3);
    b[0x38] = 0xff;
    b[0x39] = 0xff;
    is_int(sc_elf_build_id(b, len, hex), 0, "65535 program headers past the end: none");
    mk_elf(b, sizeof b, 4, 20, 3);
    b[64 + 8] = 0xff;
    b[64 + 15] = 0xff; /* p_offset far beyond */
    is_int(sc_elf_build_id(b, len, hex), 0, "note offset past the end: none");
    mk_elf(b, sizeof b, 4, 20, 3);
    b[4] = 1;
    is_int(sc_elf_build_id(b, len, hex), 0, "32-bit ELF: none");
    is_int(sc_elf_build_id(b, 10, hex), 0, "shorter than a header: none");
    /* the same note found through a section header (SHT_NOTE), no program headers */
    mk_elf(b, sizeof b, 4, 20, 3);
    b[0x38] = 0;
    b[0x28] = 200; /* e_shoff */
    b[0x3a] = 64;  /* e_shentsize */
    b[0x3c] = 1;   /* e_shnum */
    b[200 + 4] = 7;
    b[200 + 24] = 120;
    b[200 + 32] = 36;
    is_int(sc_elf_build_id(b, 264, hex), 1, "SHT_NOTE build-id found (a debug file)");
    is_str(hex, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3", "the same id");
}

int main(void)
{
    test_lines();
    test_paths();
    test_build_id();
    return tap_done();
}
