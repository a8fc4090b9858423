/* Sanitizing the JVM's perf map before perf reads it: the file comes from the target (written by
 * our agent, but in a directory the JVM user controls), so every line is treated as hostile. */
#include <stdlib.h>
#include <string.h>

#include "sidecar/sidecar.h"

#define MAX_SIZE (1ull << 30)
/* 2M entries (80 MB of index): a real JVM's map has 10^3-10^5 lines (x a few with inlined
 * frames). 8M let a crafted 224 MB map push the sidecar to 743 MB VmHWM and 14 s
 * (tests/e2e/hostile-map.t); lines beyond the bound are dropped and counted. */
#define MAX_ENTRIES (2u << 20)

typedef struct entry {
    unsigned long long start, size;
    size_t seq;       /* input order: later wins */
    const char *name; /* into the sanitized name pool */
    size_t name_len;
} entry;

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* <hex> with optional 0x, at most 16 digits, followed by exactly one space. */
static const char *parse_hex(const char *p, const char *end, unsigned long long *v)
{
    if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    unsigned long long x = 0;
    int n = 0;
    while (p < end && hexval(*p) >= 0) {
        if (++n > 16)
            return NULL;
        x = x << 4 | (unsigned)hexval(*p++);
    }
    if (n == 0 || p >= end || *p != ' ')
        return NULL;
    *v = x;
    return p + 1;
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0; /* same start: latest first */
}

int sc_map_sanitize(const char *in, size_t len, FILE *out, sc_map_stats *st, flame_err *err)
{
    memset(st, 0, sizeof(*st));
    size_t cap = 0, n = 0;
    entry *e = NULL;
    /* names are copied, sanitized, into one pool no bigger than the input */
    char *pool = malloc(len + 1);
    if (!pool)
        return flame_fail(err, FLAME_EXIT_ERROR, "perf map: out of memory");
    size_t po = 0;
    const char *p = in, *end = in + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        st->lines_in++;
        unsigned long long start, size;
        const char *q;
        if ((size_t)(le - p) > SC_MAP_LINE_MAX || !(q = parse_hex(p, le, &start)) ||
            !(q = parse_hex(q, le, &size)) || q >= le || size == 0 || size > MAX_SIZE ||
            start + size < start || n >= MAX_ENTRIES) {
            st->dropped++;
            p = le + 1;
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            entry *ne = realloc(e, nc * sizeof(*e));
            if (!ne) {
                free(e);
                free(pool);
                return flame_fail(err, FLAME_EXIT_ERROR, "perf map: out of memory");
            }
            e = ne;
            cap = nc;
        }
        /* Control bytes (and a stray '\r') would break perf's line parsing and our own stream
         * protocol further down: replace them. */
        size_t nl_len = (size_t)(le - q);
        for (size_t i = 0; i < nl_len; i++) {
            unsigned char c = (unsigned char)q[i];
            pool[po + i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        }
        e[n] = (entry){start, size, n, pool + po, nl_len};
        po += nl_len;
        n++;
        p = le + 1;
    }
    if (n)
        qsort(e, n, sizeof(*e), cmp_entry);
    /* One pass in address order. Same start: only the latest survives (sorted first). Overlap
     * with the next entry: the later of the two wins — a later successor truncates us; a later
     * us swallows (or cuts the start of) the successor. */
    unsigned long long covered = 0; /* end of the last written range */
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && e[i].start == e[i - 1].start && e[i].seq < e[i - 1].seq)
            continue; /* an older entry at the same address */
        unsigned long long s = e[i].start, z = e[i].start + e[i].size;
        if (any && s < covered) {
            /* the previously written entry overlaps us: it was kept, so it is later: cut */
            if (z <= covered) {
                st->dropped++;
                continue;
            }
            s = covered;
        }
        /* look ahead: the next distinct-start entry later than us truncates our end */
        /* bounded look-ahead (hostile nesting would make this quadratic); beyond it the
         * entry is kept whole and the next ones are cut at its end instead */
        for (size_t k = i + 1; k < n && k - i <= 4096 && e[k].start < z; k++) {
            if (e[k].seq > e[i].seq) {
                z = e[k].start > s ? e[k].start : s;
                break;
            }
        }
        if (z <= s) {
            st->dropped++;
            continue;
        }
        int w = fprintf(out, "%llx %llx %.*s\n", s, z - s, (int)e[i].name_len, e[i].name);
        if (w < 0) {
            free(e);
            free(pool);
            return flame_fail(err, FLAME_EXIT_ERROR, "perf map: write failed");
        }
        st->bytes_out += (unsigned long long)w;
        st->lines_out++;
        covered = z;
        any = true;
    }
    free(e);
    free(pool);
    return 0;
}
