/* The pure parsers behind symfs.c (docs/SIDECAR.md "Native frames"), over text and bytes the
 * target controls: one /proc/<pid>/maps line, the name a copy may take below --symfs, and an ELF
 * image's GNU build-id. No I/O; unit-tested (tests/unit/sidecar_symfs_parse.c) and fuzzed
 * (fuzz/fuzz_proc.c). */
#include <stdio.h>
#include <string.h>

#include "sidecar/sidecar.h"

/* ---- pure: one /proc/<pid>/maps line ---- */

/* n lowercase hex digits (1..16), no sign, no prefix; *p advanced past them. */
static bool hex_field(const char **p, const char *end, uint64_t *v)
{
    uint64_t x = 0;
    int n = 0;
    while (*p < end && n < 17) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        x = x << 4 | (uint64_t)d;
        (*p)++;
        n++;
    }
    *v = x;
    return n >= 1 && n <= 16;
}

static bool expect(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return false;
    (*p)++;
    return true;
}

bool sc_symfs_path_ok(const char *path)
{
    /* " (deleted)" (a library unlinked or replaced on disk after it was mapped) stays part of
     * the name: perf looks the mapping up by exactly this text, and what we put there is the
     * mapped inode itself, not whatever the path names now. */
    size_t n = strlen(path);
    if (n < 2 || n > SC_SYMFS_PATH_MAX || path[0] != '/' || path[n - 1] == '/')
        return false;
    for (const char *c = path; *c; c++)
        /* printable ASCII only; a backslash is the kernel's escape of a newline (\012), so the
         * name it shows is not the file's name */
        if (*c < 0x20 || *c > 0x7e || *c == '\\')
            return false;
    for (const char *c = path; *c;) {
        const char *comp = c + 1, *e = strchr(comp, '/');
        size_t l = e ? (size_t)(e - comp) : strlen(comp);
        if (l == 0 || (l == 1 && comp[0] == '.') || (l == 2 && comp[0] == '.' && comp[1] == '.'))
            return false;
        c = comp + l;
    }
    return true;
}

int sc_symfs_parse_line(const char *line, size_t len, sc_symfs_map *m)
{
    /* start-end perms offset major:minor inode [spaces path], as the kernel prints it
     * (show_map_vma): numbers in lowercase hex, the inode in decimal. */
    const char *p = line, *end = line + len;
    uint64_t start, stop, off, maj, min;
    if (!hex_field(&p, end, &start) || !expect(&p, end, '-') || !hex_field(&p, end, &stop) ||
        !expect(&p, end, ' ') || end - p < 5 || stop <= start)
        return -1;
    const char *perms = p;
    if ((perms[0] != 'r' && perms[0] != '-') || (perms[1] != 'w' && perms[1] != '-') ||
        (perms[2] != 'x' && perms[2] != '-') || (perms[3] != 'p' && perms[3] != 's'))
        return -1;
    p += 4;
    if (!expect(&p, end, ' ') || !hex_field(&p, end, &off) || !expect(&p, end, ' ') ||
        !hex_field(&p, end, &maj) || !expect(&p, end, ':') || !hex_field(&p, end, &min) ||
        !expect(&p, end, ' '))
        return -1;
    uint64_t ino = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 20) {
        ino = ino * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (digits == 0 || (p < end && *p != ' '))
        return -1;
    while (p < end && *p == ' ')
        p++;
    size_t pl = (size_t)(end - p);
    if (memchr(p, '\0', pl))
        return -1;
    *m = (sc_symfs_map){.start = start,
                        .end = stop,
                        .ino = ino,
                        .dev_major = (uint32_t)maj,
                        .dev_minor = (uint32_t)min};
    if (perms[2] != 'x' || ino == 0 || pl == 0 || p[0] != '/')
        return 0; /* not code, or anonymous / [vdso] / [heap]: nothing to copy */
    if (pl > SC_SYMFS_PATH_MAX) {
        m->path[0] = '\0';
        return 2;
    }
    memcpy(m->path, p, pl);
    m->path[pl] = '\0';
    return sc_symfs_path_ok(m->path) ? 1 : 2;
}

/* ---- pure: an ELF file's GNU build-id ---- */

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* NT_GNU_BUILD_ID in the notes at [off, off + size) of p (len bytes); 1 found, 0 not. */
static int notes_build_id(const unsigned char *p, size_t len, uint64_t off, uint64_t size,
                          char *hex)
{
    if (off > len || size > len - off)
        return 0;
    const unsigned char *n = p + off, *end = p + off + size;
    while (end - n >= 12) {
        uint64_t namesz = rd(n, 4), descsz = rd(n + 4, 4), type = rd(n + 8, 4);
        uint64_t name_pad = (namesz + 3) & ~3ull, desc_pad = (descsz + 3) & ~3ull;
        if (name_pad > (uint64_t)(end - n - 12) || desc_pad > (uint64_t)(end - n - 12) - name_pad)
            return 0;
        const unsigned char *name = n + 12, *desc = name + name_pad;
        if (type == 3 && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz >= 1 &&
            descsz <= SC_BUILD_ID_MAX) {
            for (uint64_t i = 0; i < descsz; i++)
                snprintf(hex + 2 * i, 3, "%02x", desc[i]);
            return 1;
        }
        n = desc + desc_pad;
    }
    return 0;
}

int sc_elf_build_id(const unsigned char *p, size_t len, char *hex)
{
    hex[0] = '\0';
    if (len < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 /* 64-bit */ || p[5] != 1 /* LE */)
        return 0;
    uint64_t phoff = rd(p + 0x20, 8), shoff = rd(p + 0x28, 8);
    uint64_t phent = rd(p + 0x36, 2), phnum = rd(p + 0x38, 2);
    uint64_t shent = rd(p + 0x3a, 2), shnum = rd(p + 0x3c, 2);
    /* program headers (a loaded DSO), then section headers (a separate debug file, whose
     * PT_NOTE may describe stripped contents) */
    if (phent >= 56 && phoff < len && phnum <= (len - phoff) / phent)
        for (uint64_t i = 0; i < phnum; i++) {
            const unsigned char *h = p + phoff + i * phent;
            if (rd(h, 4) == 4 /* PT_NOTE */ &&
                notes_build_id(p, len, rd(h + 8, 8), rd(h + 32, 8), hex))
                return 1;
        }
    if (shent >= 64 && shoff < len && shnum <= (len - shoff) / shent)
        for (uint64_t i = 0; i < shnum; i++) {
            const unsigned char *h = p + shoff + i * shent;
            if (rd(h + 4, 4) == 7 /* SHT_NOTE */ &&
                notes_build_id(p, len, rd(h + 24, 8), rd(h + 32, 8), hex))
                return 1;
        }
    hex[0] = '\0';
    return 0;
}

/* ---- pure: a mapped file's name by its inode (host) ---- */

int sc_inode_prefix(char *buf, size_t cap, uint32_t major, uint32_t minor, uint64_t ino)
{
    int n = snprintf(buf, cap, SC_INODE_DIR "/%u.%u.%llu", major, minor, (unsigned long long)ino);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}
