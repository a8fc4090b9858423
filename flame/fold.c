/* Folding `perf script` text into folded stacks, streaming: one sample's frames are held at a
 * time, finished stacks go into a hash table of unique stacks that is sorted only when written.
 * Two dialects: compat (byte-exact stackcollapse-perf.pl) and ours (docs/FOLDING.md). Every
 * scan below is linear in the line: the Perl regexes are emulated by hand, not with a
 * backtracking engine, so hostile lines cannot make folding quadratic. */
#include "flame/fold.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

typedef struct fold_entry {
    uint64_t hash;
    char *key; /* in the arena; NULL = empty slot */
    size_t len;
    unsigned long long count;
} fold_entry;

typedef struct fold_span {
    uint32_t off, len;
} fold_span;

/* A text span inside the current line; len 0 with p NULL means "absent" (Perl's undef). */
typedef struct span {
    const char *p;
    size_t len;
} span;

typedef struct header {
    span comm, pid, tid, event, period;
    span rest; /* ours only: a frame printed on the header line (perf record without -g) */
} header;

enum leaf_kind { LEAF_NONE, LEAF_OTHER, LEAF_JIT, LEAF_JIT_NAMED };

#define ARENA_CHUNK (1u << 20)

struct folder {
    fold_opts o;
    char *filter; /* owned: opts.event_filter or the first event seen */
    bool filter_defaulted;

    fold_entry *tab; /* open addressing, linear probing, power-of-two size */
    size_t cap, used;
    uint64_t seed; /* random per folder: crafted stacks cannot aim at one bucket */
    char **chunks;
    size_t nchunks, chunks_cap;
    char *arena;
    size_t arena_left;

    /* The sample being read. Frames are kept leaf first, as perf prints them. */
    bool in_sample;
    char *pname;
    size_t pname_len;
    long pid;
    unsigned long long period;
    enum leaf_kind leaf;
    bool truncated;
    enum leaf_kind last_leaf; /* what the last frame line would make of a leaf */
    char *fbuf;
    size_t fbuf_len, fbuf_cap;
    fold_span *fr;
    size_t nfr, fr_cap;
    fold_span *pieces; /* scratch: one frame line split on "->" */
    size_t pieces_cap;
    char *key;
    size_t key_cap;

    /* Cache of frame lines already parsed and tidied (perf repeats the same lines endlessly):
     * bounded, and simply emptied when full, so memory stays independent of the input size. */
    struct line_entry *lc;
    size_t lc_cap, lc_used;
    char **lc_chunks;
    size_t lc_nchunks, lc_chunks_cap, lc_bytes;
    char *lc_arena;
    size_t lc_left;

    fold_stats st;
};

/* ---- character classes as Perl sees a byte string (no locale, no unicode_strings) ---- */

enum { C_SPACE = 1, C_DIGIT = 2, C_WORD = 4, C_HEX = 8, C_XLOWER = 16, C_SPECIAL = 32 };
/* C_XLOWER: [0-9a-f] (perf's offsets); C_SPECIAL: bytes the per-frame pass must rewrite. */
static const unsigned char cls[256] = {
    [0 ... 8] = C_SPECIAL,
    ['\t' ... '\r'] = C_SPACE | C_SPECIAL, /* \t \n \v \f \r */
    [14 ... 0x1f] = C_SPECIAL,
    [' '] = C_SPACE,
    ['0' ... '9'] = C_DIGIT | C_WORD | C_HEX | C_XLOWER,
    ['a' ... 'f'] = C_WORD | C_HEX | C_XLOWER,
    ['g' ... 'z'] = C_WORD,
    ['A' ... 'F'] = C_WORD | C_HEX,
    ['G' ... 'Z'] = C_WORD,
    ['_'] = C_WORD,
    [';'] = C_SPECIAL,
    ['"'] = C_SPECIAL,
    ['\''] = C_SPECIAL,
    [0x7f] = C_SPECIAL,
};

static inline bool pl_space(unsigned char c)
{
    return cls[c] & C_SPACE;
}
static inline bool pl_digit(unsigned char c)
{
    return cls[c] & C_DIGIT;
}
static inline bool pl_word(unsigned char c)
{
    return cls[c] & C_WORD;
}
static inline bool is_hex(unsigned char c)
{
    return cls[c] & C_HEX;
}

static bool span_eq(span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.p && s.len == n && memcmp(s.p, lit, n) == 0;
}

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
    return nn <= hn ? memmem(h, hn, n, nn) : NULL;
}

/* ---- growable buffers ---- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = reallocarray(*p, n, elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* ---- header parsing ---- */

/* Perl: m{^(\S.+?)\s+(\d+)/STAR(\d+)STAR\s+} (STAR: Kleene star), with the comm's minimum length as
 * a parameter (2 in Perl: \S plus at least one more byte; 1 in our dialect). The comm is the
 * shortest prefix followed by whitespace, digits, optional slashes, optional digits, whitespace.
 * Only the first byte of each whitespace run can start the match (a later byte of the same run
 * would give the same verdict), which keeps this linear. */
static bool header_perl(const char *s, size_t n, size_t min_comm, header *h)
{
    if (n == 0 || pl_space((unsigned char)s[0]))
        return false;
    for (size_t e = min_comm; e < n; e++) {
        if (!pl_space((unsigned char)s[e]))
            continue;
        if (e > min_comm && pl_space((unsigned char)s[e - 1]))
            continue;
        size_t w = e;
        while (w < n && pl_space((unsigned char)s[w]))
            w++;
        size_t d = w;
        while (d < n && pl_digit((unsigned char)s[d]))
            d++;
        if (d == w)
            continue;
        size_t sl = d;
        while (sl < n && s[sl] == '/')
            sl++;
        size_t t = sl;
        while (t < n && pl_digit((unsigned char)s[t]))
            t++;
        if (t >= n || !pl_space((unsigned char)s[t]))
            continue;
        h->comm = (span){s, e};
        h->pid = (span){s + w, d - w};
        h->tid = t > sl ? (span){s + sl, t - sl} : (span){NULL, 0};
        return true;
    }
    return false;
}

/* Perl: /:\s*(\d+)*\s+(\S+):\s*$/ on the whole header. The event is the last blank-separated
 * token minus its final ':'; before it: ':' then blanks, an optional number (the period), and
 * at least one blank. */
static void event_perl(const char *s, size_t n, header *h)
{
    h->event = h->period = (span){NULL, 0};
    size_t e = n;
    while (e > 0 && pl_space((unsigned char)s[e - 1]))
        e--;
    if (e < 2 || s[e - 1] != ':')
        return;
    size_t t = e - 1;
    while (t > 0 && !pl_space((unsigned char)s[t - 1]))
        t--;
    if (t == e - 1 || t == 0)
        return;
    size_t w = t;
    while (w > 0 && pl_space((unsigned char)s[w - 1]))
        w--;
    size_t d = w;
    while (d > 0 && pl_digit((unsigned char)s[d - 1]))
        d--;
    size_t x = d;
    if (d < w) /* a number: blanks may sit between ':' and it */
        while (x > 0 && pl_space((unsigned char)s[x - 1]))
            x--;
    if (x == 0 || s[x - 1] != ':')
        return;
    h->event = (span){s + t, e - 1 - t};
    if (d < w)
        h->period = (span){s + d, w - d};
}

static bool all_digits(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!pl_digit((unsigned char)p[i]))
            return false;
    return true;
}

/* "123" or "123/456" */
static bool pid_token(const char *p, size_t n, span *pid, span *tid)
{
    const char *slash = memchr(p, '/', n);
    if (!slash) {
        if (!all_digits(p, n))
            return false;
        *pid = (span){p, n};
        *tid = (span){NULL, 0};
        return true;
    }
    size_t a = (size_t)(slash - p);
    if (!all_digits(p, a) || !all_digits(slash + 1, n - a - 1))
        return false;
    *pid = (span){p, a};
    *tid = (span){slash + 1, n - a - 1};
    return true;
}

/* Our header parser: anchored on the timestamp token "<digits>.<digits>:", which perf prints
 * by default. Before it: the pid (or pid/tid) token, optionally a "[cpu]" token, and a comm of
 * any length, leading blanks allowed. After it: an optional period and "event:". */
static bool header_ours(const char *s, size_t n, header *h)
{
    span tok[3] = {{0}}; /* the three tokens before the current one, tok[2] nearest */
    size_t ntok = 0, first = n;
    size_t i = 0;
    while (i < n) {
        while (i < n && pl_space((unsigned char)s[i]))
            i++;
        if (i >= n)
            break;
        size_t b = i;
        while (i < n && !pl_space((unsigned char)s[i]))
            i++;
        span cur = {s + b, i - b};
        if (first == n)
            first = b;
        const char *dot = cur.len >= 4 ? memchr(cur.p, '.', cur.len) : NULL;
        if (dot && cur.p[cur.len - 1] == ':' && all_digits(cur.p, (size_t)(dot - cur.p)) &&
            all_digits(dot + 1, (size_t)(cur.p + cur.len - 1 - dot - 1))) {
            /* a timestamp: which token is the pid? */
            int pid_at = -1;
            if (ntok >= 2 && pid_token(tok[2].p, tok[2].len, &h->pid, &h->tid))
                pid_at = 2;
            else if (ntok >= 3 && tok[2].len >= 3 && tok[2].p[0] == '[' &&
                     tok[2].p[tok[2].len - 1] == ']' && all_digits(tok[2].p + 1, tok[2].len - 2) &&
                     pid_token(tok[1].p, tok[1].len, &h->pid, &h->tid))
                pid_at = 1;
            if (pid_at >= 0) {
                const char *comm_end = tok[pid_at - 1].p + tok[pid_at - 1].len;
                h->comm = (span){s + first, (size_t)(comm_end - (s + first))};
                if (!h->tid.p) { /* perf's default prints the tid only */
                    h->tid = h->pid;
                    h->pid = (span){NULL, 0};
                }
                goto after_time;
            }
        }
        tok[0] = tok[1];
        tok[1] = tok[2];
        tok[2] = cur;
        ntok++;
    }
    return false;

after_time:
    h->event = h->period = h->rest = (span){NULL, 0};
    for (int k = 0; k < 2; k++) {
        while (i < n && pl_space((unsigned char)s[i]))
            i++;
        size_t b = i;
        while (i < n && !pl_space((unsigned char)s[i]))
            i++;
        if (i == b)
            return true;
        if (k == 0 && all_digits(s + b, i - b)) {
            h->period = (span){s + b, i - b};
            continue;
        }
        if (i - b >= 2 && s[i - 1] == ':') {
            h->event = (span){s + b, i - b - 1};
            while (i < n && pl_space((unsigned char)s[i]))
                i++;
            if (i < n)
                h->rest = (span){s + i, n - i};
        }
        return true;
    }
    return true;
}

/* ---- frame lines ---- */

typedef struct frame_line {
    span pc, func, mod;
} frame_line;

/* Perl: /^\s*(\w+)\s*(.+) \((.*)\)/, unanchored at the end. The module is between the last
 * " (" that has a ')' after it and the last ')'; the pc is the word run after leading blanks,
 * shortened only when the symbol would otherwise be empty. */
static bool parse_frame(const char *s, size_t n, frame_line *fl)
{
    size_t a = 0;
    while (a < n && pl_space((unsigned char)s[a]))
        a++;
    size_t b = a;
    while (b < n && pl_word((unsigned char)s[b]))
        b++;
    if (b == a)
        return false;
    size_t c = b;
    while (c < n && pl_space((unsigned char)s[c]))
        c++;
    const char *rp = memrchr(s, ')', n);
    if (!rp)
        return false;
    size_t r = (size_t)(rp - s);
    if (r < 2)
        return false;
    size_t q = r - 1; /* the " (" must end before the ')' */
    while (q-- > 0)
        if (s[q] == ' ' && s[q + 1] == '(')
            break;
    if (q == (size_t)-1)
        return false;
    size_t start, pc_end = b;
    if (q >= c + 1)
        start = c;
    else if (c > b && q >= b + 1)
        start = q - 1;
    else if (q >= a + 2 && q <= b) {
        start = q - 1;
        pc_end = q - 1;
    } else
        return false;
    fl->pc = (span){s + a, pc_end - a};
    fl->func = (span){s + start, q - start};
    fl->mod = (span){s + q + 2, r - (q + 2)};
    return true;
}

/* perf's JIT map of process N, as perf names it: ".../perf-<N>.map". */
static bool mod_is_perfmap(span mod)
{
    const char *slash = memrchr(mod.p, '/', mod.len);
    const char *base = slash ? slash + 1 : mod.p;
    size_t bl = (size_t)(mod.p + mod.len - base);
    if (bl < 10 || memcmp(base, "perf-", 5) != 0 || memcmp(base + bl - 4, ".map", 4) != 0)
        return false;
    return all_digits(base + 5, bl - 9);
}

/* Perl: m:/tmp/perf-\d+\.map: anywhere in the module. */
static bool mod_is_perfmap_perl(span mod)
{
    const char *p = mod.p, *end = mod.p + mod.len;
    while ((p = find_bytes(p, (size_t)(end - p), "/tmp/perf-", 10))) {
        const char *d = p + 10;
        while (d < end && pl_digit((unsigned char)*d))
            d++;
        if (d > p + 10 && end - d >= 4 && memcmp(d, ".map", 4) == 0)
            return true;
        p++;
    }
    return false;
}

/* Perl: m/(^\[|vmlinux$)/ && !/unknown/ */
static bool mod_is_kernel(span mod)
{
    bool k = (mod.len > 0 && mod.p[0] == '[') ||
             (mod.len >= 7 && memcmp(mod.p + mod.len - 7, "vmlinux", 7) == 0);
    return k && !find_bytes(mod.p, mod.len, "unknown", 7);
}

/* ---- per-frame tidying, in place at the end of fbuf ---- */

static int fbuf_reserve(folder *f, size_t extra)
{
    return grow((void **)&f->fbuf, &f->fbuf_cap, f->fbuf_len + extra, 1);
}

/* Remove from the first '(' not followed by "anonymous namespace)", unless the name looks like
 * a Go method ".(*T)." (Perl's generic tidy). */
static size_t cut_params_generic(char *b, size_t n)
{
    char *end = b + n, *first = memchr(b, '(', n);
    if (!first)
        return n;
    for (const char *p = first; p && p < end; p = memchr(p + 1, '(', (size_t)(end - p - 1))) {
        if (p > b && p[-1] == '.') { /* ".(" ... ")." later: a Go method, keep it whole */
            for (const char *q = end - 2; q >= p + 1; q--)
                if (q[0] == ')' && q[1] == '.')
                    return n;
            break;
        }
    }
    static const char anon[] = "anonymous namespace)";
    for (char *p = first; p; p = memchr(p + 1, '(', (size_t)(end - p - 1))) {
        size_t rest = (size_t)(end - p - 1);
        if (rest >= sizeof anon - 1 && memcmp(p + 1, anon, sizeof anon - 1) == 0)
            continue;
        return (size_t)(p - b);
    }
    return n;
}

static bool java_type_byte(unsigned char c)
{
    return pl_word(c) || c == '.' || c == '$' || c == '[' || c == ']';
}
static bool java_method_byte(unsigned char c)
{
    return pl_word(c) || c == '.' || c == '$' || c == '<' || c == '>' || c == '/';
}

/* The JDK's own perf-map names (jcmd Compiler.perfmap, -XX:+DumpPerfMapAtExit) have the shape
 * "<return type> <pkg.Class.method>(<parameter types>)": "long Work.step(java.util.Random)".
 * Returns the length of the "<return type> " prefix, or 0 when the name has another shape. */
static size_t jdk_return_type_len(const char *b, size_t n)
{
    const char *paren = memchr(b, '(', n);
    if (!paren || b[n - 1] != ')')
        return 0;
    size_t h = (size_t)(paren - b);
    const char *sp = memchr(b, ' ', h);
    if (!sp || sp == b || sp + 1 == paren)
        return 0;
    bool dot = false;
    for (const char *p = b; p < sp; p++)
        if (!java_type_byte((unsigned char)*p))
            return 0;
    for (const char *p = sp + 1; p < paren; p++) {
        if (!java_method_byte((unsigned char)*p))
            return 0;
        dot |= *p == '.';
    }
    return dot ? (size_t)(sp + 1 - b) : 0;
}

/* perf-map-agent's JVM descriptors: "Lpkg/Cls;.m" (';' already turned into ':') -> "pkg/Cls:.m".
 * Unlike Perl's "starts with L and has a '/' anywhere", V8's "LazyCompile:~f /app/x.js" stays. */
static size_t strip_descriptor_l(char *b, size_t n)
{
    if (n < 3 || b[0] != 'L')
        return n;
    bool slash = false;
    size_t i = 1;
    for (; i < n && b[i] != ':'; i++) {
        if (!pl_word((unsigned char)b[i]) && b[i] != '$' && b[i] != '/')
            return n;
        slash |= b[i] == '/';
    }
    if (!slash) /* a descriptor may be cut short by the map writer: no ':' needed */
        return n;
    memmove(b, b + 1, n - 1);
    return n - 1;
}

/* Our tidying of a frame from a perf map (JIT code): JDK names lose return type and parameters,
 * descriptors their 'L'; anything else (V8, perf-map-agent) gets Perl's generic tidy. */
static size_t tidy_jit(char *b, size_t n, bool signatures)
{
    size_t rt = n ? jdk_return_type_len(b, n) : 0;
    if (rt && signatures)
        return n;
    if (rt) {
        n = (size_t)((char *)memchr(b, '(', n) - b);
        memmove(b, b + rt, n - rt);
        n -= rt;
    } else
        n = cut_params_generic(b, n);
    return strip_descriptor_l(b, n);
}

static size_t delete_quotes(char *b, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (b[i] != '"' && b[i] != '\'')
            b[o++] = b[i];
    return o;
}

static bool has_annotation(const char *b, size_t n, char kind)
{
    char tag[4] = {'_', '[', kind, ']'};
    return find_bytes(b, n, tag, 4) != NULL;
}

/* Does any byte of w need the per-frame rewrite (control byte, ';', quote, DEL)? Bit tricks
 * (exact for presence): a byte below 0x20, or a byte equal to one of four values. */
static inline bool word_has_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
#define HAS_ZERO(x) (((x)-ones) & ~(x)&highs)
    uint64_t r = ((w - ones * 0x20) & ~w & highs) | HAS_ZERO(w ^ (ones * 0x22)) |
                 HAS_ZERO(w ^ (ones * 0x27)) | HAS_ZERO(w ^ (ones * 0x3b)) |
                 HAS_ZERO(w ^ (ones * 0x7f));
#undef HAS_ZERO
    return r != 0;
}

/* Tidy one piece of a frame line's symbol (index = its position in the "->" chain) and append
 * it to fbuf. Returns the span appended, or -1 when out of memory. */
static int tidy_piece(folder *f, const frame_line *fl, span piece, size_t index, bool java_comm,
                      bool perfmap, fold_span *out)
{
    bool cut = piece.len > FOLD_MAX_FRAME;
    size_t n = cut ? FOLD_MAX_FRAME : piece.len;
    size_t room = n + fl->mod.len + fl->pc.len + 32;
    if (fbuf_reserve(f, room) < 0)
        return -1;
    char *b = f->fbuf + f->fbuf_len;
    perfmap = perfmap && !f->o.compat;

    if (n == 9 && memcmp(piece.p, "[unknown]", 9) == 0) {
        span name = {"unknown", 7};
        if (!span_eq(fl->mod, "[unknown]")) {
            const char *slash = memrchr(fl->mod.p, '/', fl->mod.len);
            name.p = slash ? slash + 1 : fl->mod.p;
            name.len = (size_t)(fl->mod.p + fl->mod.len - name.p);
        }
        size_t pc_len = fl->pc.len > 64 ? 64 : fl->pc.len;
        if (name.len > FOLD_MAX_FRAME)
            name.len = FOLD_MAX_FRAME;
        n = 0;
        b[n++] = '[';
        memcpy(b + n, name.p, name.len);
        n += name.len;
        if (f->o.addrs) {
            b[n++] = ' ';
            b[n++] = '<';
            memcpy(b + n, fl->pc.p, pc_len);
            n += pc_len;
            b[n++] = '>';
        }
        b[n++] = ']';
    } else {
        /* Hide n's small upper bound from GCC, which would otherwise inline this copy as a
         * `rep movsq` that costs more than the whole rest of the frame's processing. */
        __asm__("" : "+r"(n));
        memcpy(b, piece.p, n);
    }

    /* One pass for the byte rules: ';' is the frame separator, and folded lines travel over a
     * line protocol and into SVG/JSON, so no control bytes, ever. */
    bool quotes = false;
    for (size_t i = 0; i < n; i++) {
        if (i + 8 <= n) { /* most names have no special byte: skip them 8 at a time */
            uint64_t w;
            memcpy(&w, b + i, 8);
            if (!word_has_special(w)) {
                i += 7;
                continue;
            }
        }
        unsigned char c = (unsigned char)b[i];
        if (__builtin_expect(cls[c] & C_SPECIAL, 0)) {
            if (c == ';')
                b[i] = ':';
            else if (c == '"' || c == '\'')
                quotes = true;
            else
                b[i] = '?';
        }
    }
    if (perfmap)
        n = tidy_jit(b, n, f->o.signatures);
    else
        n = cut_params_generic(b, n);
    if (quotes)
        n = delete_quotes(b, n);
    if (f->o.compat) {
        if (java_comm && n > 0 && b[0] == 'L' && memchr(b, '/', n)) {
            memmove(b, b + 1, n - 1);
            n--;
        }
    } else {
        while (n > 0 && pl_space((unsigned char)b[n - 1]))
            n--;
    }
    if (cut) {
        memcpy(b + n, "...", 3);
        n += 3;
    }

    if (index > 0) {
        if (!has_annotation(b, n, 'i')) {
            memcpy(b + n, "_[i]", 4);
            n += 4;
        }
    } else if (f->o.kernel && mod_is_kernel(fl->mod)) {
        memcpy(b + n, "_[k]", 4);
        n += 4;
    } else if (f->o.jit && (f->o.compat ? mod_is_perfmap_perl(fl->mod) : perfmap)) {
        if (!has_annotation(b, n, 'j')) {
            memcpy(b + n, "_[j]", 4);
            n += 4;
        }
    }
    *out = (fold_span){(uint32_t)f->fbuf_len, (uint32_t)n};
    f->fbuf_len += n;
    return 0;
}

/* Keep a runaway stack bounded: drop the leaf-most half of what we hold (the root side is what
 * makes a flame graph readable) and remember to mark the stack truncated. */
static void trim_stack(folder *f)
{
    while (f->nfr > FOLD_MAX_FRAMES || f->fbuf_len > FOLD_MAX_STACK_BYTES) {
        size_t drop = f->nfr / 2 ? f->nfr / 2 : f->nfr;
        size_t off = drop < f->nfr ? f->fr[drop].off : f->fbuf_len;
        memmove(f->fbuf, f->fbuf + off, f->fbuf_len - off);
        f->fbuf_len -= off;
        memmove(f->fr, f->fr + drop, (f->nfr - drop) * sizeof *f->fr);
        f->nfr -= drop;
        for (size_t i = 0; i < f->nfr; i++)
            f->fr[i].off -= (uint32_t)off;
        f->truncated = true;
    }
}

static const char *find_arrow(const char *p, const char *end)
{
    while (p < end && (p = memchr(p, '-', (size_t)(end - p)))) {
        if (p + 1 < end && p[1] == '>')
            return p;
        p++;
    }
    return NULL;
}

/* ---- the frame-line cache ---- */

typedef struct line_entry {
    uint64_t hash;
    char *data; /* line bytes, then npieces uint32 lengths, then the pieces; NULL = empty slot */
    uint32_t line_len, out_len;
    uint16_t npieces;
    uint8_t leaf;      /* enum leaf_kind this line gives a sample when it is the leaf */
    uint8_t java_comm; /* compat: the tidy depends on the comm starting with "java" */
} line_entry;

#define LC_MAX_USED 32768       /* entries; the table stays <= 65536 slots */
#define LC_MAX_BYTES (8u << 20) /* arena bytes */
#define LC_MAX_PIECES 64        /* lines with more pieces are not cached */
#define LC_CHUNK (256u << 10)

static uint64_t hash_bytes(const char *p, size_t n, uint64_t seed);

static void lc_clear(folder *f)
{
    for (size_t i = 0; i < f->lc_nchunks; i++)
        free(f->lc_chunks[i]);
    f->lc_nchunks = 0;
    f->lc_bytes = 0;
    f->lc_arena = NULL;
    f->lc_left = 0;
    f->lc_used = 0;
    if (f->lc)
        memset(f->lc, 0, f->lc_cap * sizeof *f->lc);
}

static char *lc_alloc(folder *f, size_t n)
{
    if (n > f->lc_left) {
        size_t sz = n > LC_CHUNK ? n : LC_CHUNK;
        if (grow((void **)&f->lc_chunks, &f->lc_chunks_cap, f->lc_nchunks + 1,
                 sizeof *f->lc_chunks) < 0)
            return NULL;
        char *c = malloc(sz);
        if (!c)
            return NULL;
        f->lc_chunks[f->lc_nchunks++] = c;
        f->lc_bytes += sz;
        f->lc_arena = c;
        f->lc_left = sz;
    }
    char *d = f->lc_arena;
    f->lc_arena += n;
    f->lc_left -= n;
    return d;
}

static line_entry *lc_slot(folder *f, const char *line, size_t len, bool java, uint64_t h)
{
    for (size_t j = h & (f->lc_cap - 1);; j = (j + 1) & (f->lc_cap - 1)) {
        line_entry *e = &f->lc[j];
        if (!e->data || (e->hash == h && e->line_len == len && e->java_comm == java &&
                         memcmp(e->data, line, len) == 0))
            return e;
    }
}

static int push_frames(folder *f, const char *bytes, const uint32_t *lens, size_t np)
{
    size_t total = 0;
    for (size_t k = 0; k < np; k++)
        total += lens[k];
    if (fbuf_reserve(f, total) < 0 ||
        grow((void **)&f->fr, &f->fr_cap, f->nfr + np, sizeof *f->fr) < 0)
        return -1;
    if (total) /* fbuf may still be NULL when every frame is empty (found by fuzzing) */
        memcpy(f->fbuf + f->fbuf_len, bytes, total);
    for (size_t k = 0; k < np; k++) {
        f->fr[f->nfr++] = (fold_span){(uint32_t)f->fbuf_len, lens[k]};
        f->fbuf_len += lens[k];
    }
    trim_stack(f);
    return 0;
}

static bool java_comm_of(const folder *f)
{
    return f->o.compat && f->pname_len >= 4 && memcmp(f->pname, "java", 4) == 0;
}

/* 1: the line was a cached frame line and is done; 0: not cached; -1: out of memory. */
static int lc_lookup(folder *f, const char *line, size_t len)
{
    if (!f->lc_used)
        return 0;
    bool java = java_comm_of(f);
    uint64_t h = hash_bytes(line, len, f->seed ^ java);
    line_entry *e = lc_slot(f, line, len, java, h);
    if (!e->data)
        return 0;
    if (e->npieces && f->nfr == 0 && f->leaf == LEAF_NONE)
        f->leaf = e->leaf;
    uint32_t lens[LC_MAX_PIECES];
    memcpy(lens, e->data + e->line_len, e->npieces * sizeof *lens);
    const char *bytes = e->data + e->line_len + e->npieces * sizeof *lens;
    return push_frames(f, bytes, lens, e->npieces) < 0 ? -1 : 1;
}

/* Remember what the last add_frame pushed for this line: frames [from, nfr) of the sample. */
static void lc_insert(folder *f, const char *line, size_t len, size_t from, enum leaf_kind leaf)
{
    size_t np = f->nfr - from;
    if (np > LC_MAX_PIECES || f->truncated) /* trim_stack moved frames: not worth it */
        return;
    if (f->lc_used >= LC_MAX_USED || f->lc_bytes >= LC_MAX_BYTES)
        lc_clear(f);
    if ((f->lc_used + 1) * 2 > f->lc_cap) {
        size_t ncap = f->lc_cap ? f->lc_cap * 2 : 1024;
        line_entry *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return; /* the cache is an optimisation: do without */
        for (size_t i = 0; i < f->lc_cap; i++) {
            if (!f->lc[i].data)
                continue;
            size_t j = f->lc[i].hash & (ncap - 1);
            while (nt[j].data)
                j = (j + 1) & (ncap - 1);
            nt[j] = f->lc[i];
        }
        free(f->lc);
        f->lc = nt;
        f->lc_cap = ncap;
    }
    bool java = java_comm_of(f);
    uint64_t h = hash_bytes(line, len, f->seed ^ java);
    line_entry *e = lc_slot(f, line, len, java, h);
    if (e->data)
        return;
    uint32_t lens[LC_MAX_PIECES];
    size_t out = 0;
    for (size_t k = 0; k < np; k++)
        out += lens[k] = f->fr[from + k].len;
    char *d = lc_alloc(f, len + np * sizeof *lens + out);
    if (!d)
        return;
    memcpy(d, line, len);
    memcpy(d + len, lens, np * sizeof *lens);
    /* pushed frames are contiguous in fbuf */
    if (np)
        memcpy(d + len + np * sizeof *lens, f->fbuf + f->fr[from].off, out);
    *e = (line_entry){h, d, (uint32_t)len, (uint32_t)out, (uint16_t)np, (uint8_t)leaf, java};
    f->lc_used++;
}

static int add_frame(folder *f, const frame_line *fl)
{
    span func = fl->func;
    /* perf >= 4.8 appends "+0x<offset>"; only lowercase hex, as stackcollapse-perf.pl. */
    /* Scanning back over the hex digits finds the last "+0x" iff everything after it is hex. */
    size_t e = func.len;
    while (e > 0 && (cls[(unsigned char)func.p[e - 1]] & C_XLOWER))
        e--;
    if (e < func.len && e >= 3 && memcmp(func.p + e - 3, "+0x", 3) == 0)
        func.len = e - 3;
    if (func.len > 0 && func.p[0] == '(') { /* perf prints process names as "(name)" frames */
        f->last_leaf = LEAF_NONE;
        return 0;
    }

    bool perfmap = mod_is_perfmap(fl->mod);
    /* Split "a->b->c" (perf-map-agent / our agent: b inlined into a, c into b). Perl splits
     * every symbol and drops trailing empty pieces; we split only JIT frames, and with
     * --no-inline keep the outermost (compiled) method alone. */
    size_t np = 0;
    const char *p = func.p, *end = func.p + func.len;
    bool split = f->o.compat || (perfmap && f->o.inline_frames);
    bool first_only = !f->o.compat && perfmap && !f->o.inline_frames;
    for (;;) {
        const char *arrow = split || first_only ? find_arrow(p, end) : NULL;
        const char *pe = arrow ? arrow : end;
        if (grow((void **)&f->pieces, &f->pieces_cap, np + 1, sizeof *f->pieces) < 0)
            return -1;
        f->pieces[np++] = (fold_span){(uint32_t)(p - func.p), (uint32_t)(pe - p)};
        if (!arrow || first_only)
            break;
        p = arrow + 2;
    }
    if (split && !first_only)
        while (np > 0 && f->pieces[np - 1].len == 0)
            np--;
    if (np == 0) {
        f->last_leaf = LEAF_NONE;
        return 0;
    }

    enum leaf_kind leaf = perfmap ? span_eq(func, "[unknown]") ? LEAF_JIT : LEAF_JIT_NAMED
                          : span_eq(fl->mod, "[unknown]") ? LEAF_JIT
                                                          : LEAF_OTHER;
    f->last_leaf = leaf;
    if (f->nfr == 0 && f->leaf == LEAF_NONE)
        f->leaf = leaf;
    bool java_comm = java_comm_of(f);
    if (grow((void **)&f->fr, &f->fr_cap, f->nfr + np, sizeof *f->fr) < 0)
        return -1;
    /* Leaf first: the chain's last piece is the innermost, so it goes in first. */
    for (size_t k = np; k-- > 0;) {
        span piece = {func.p + f->pieces[k].off, f->pieces[k].len};
        if (tidy_piece(f, fl, piece, k, java_comm, perfmap, &f->fr[f->nfr]) < 0)
            return -1;
        f->nfr++;
    }
    trim_stack(f);
    return 0;
}

/* add_frame for a whole frame line, through the cache. */
static int add_frame_line(folder *f, const frame_line *fl, const char *line, size_t len)
{
    size_t from = f->nfr;
    bool was_truncated = f->truncated;
    if (add_frame(f, fl) < 0)
        return -1;
    if (!was_truncated)
        lc_insert(f, line, len, from, f->last_leaf);
    return 0;
}

/* ---- the table of unique stacks ---- */

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_bytes(const char *p, size_t n, uint64_t seed)
{
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ mix64(w)) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ mix64(w ^ n)) * 0x9e3779b97f4a7c15ULL;
    return mix64(h);
}

static char *arena_copy(folder *f, const char *s, size_t n)
{
    if (n > f->arena_left) {
        size_t sz = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
        if (grow((void **)&f->chunks, &f->chunks_cap, f->nchunks + 1, sizeof *f->chunks) < 0)
            return NULL;
        char *c = malloc(sz);
        if (!c)
            return NULL;
        f->chunks[f->nchunks++] = c;
        if (sz != ARENA_CHUNK) { /* an oversized key gets its own block; keep the current one */
            memcpy(c, s, n);
            return c;
        }
        f->arena = c;
        f->arena_left = sz;
    }
    char *d = f->arena;
    memcpy(d, s, n);
    f->arena += n;
    f->arena_left -= n;
    return d;
}

static int table_grow(folder *f)
{
    size_t ncap = f->cap ? f->cap * 2 : 1024;
    fold_entry *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t i = 0; i < f->cap; i++) {
        if (!f->tab[i].key)
            continue;
        size_t j = f->tab[i].hash & (ncap - 1);
        while (nt[j].key)
            j = (j + 1) & (ncap - 1);
        nt[j] = f->tab[i];
    }
    free(f->tab);
    f->tab = nt;
    f->cap = ncap;
    return 0;
}

static int table_add(folder *f, const char *key, size_t len, unsigned long long count)
{
    if ((f->used + 1) * 2 > f->cap && table_grow(f) < 0)
        return -1;
    uint64_t h = hash_bytes(key, len, f->seed);
    size_t j = h & (f->cap - 1);
    for (;; j = (j + 1) & (f->cap - 1)) {
        fold_entry *e = &f->tab[j];
        if (!e->key)
            break;
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) {
            e->count = e->count + count < e->count ? ~0ULL : e->count + count; /* saturate */
            return 0;
        }
    }
    char *k = arena_copy(f, key, len);
    if (!k)
        return -1;
    f->tab[j] = (fold_entry){h, k, len, count};
    f->used++;
    return 0;
}

/* ---- samples ---- */

static void reset_sample(folder *f)
{
    f->in_sample = false;
    f->nfr = 0;
    f->fbuf_len = 0;
    f->leaf = LEAF_NONE;
    f->truncated = false;
}

static int key_append(folder *f, size_t *len, const char *s, size_t n, bool sep)
{
    if (grow((void **)&f->key, &f->key_cap, *len + n + 1, 1) < 0)
        return -1;
    if (sep)
        f->key[(*len)++] = ';';
    memcpy(f->key + *len, s, n);
    *len += n;
    return 0;
}

static int flush_sample(folder *f, flame_err *err)
{
    if (!f->in_sample)
        return 0;
    size_t len = 0;
    int r = 0;
    if (f->o.root_for_pid) {
        const char *root = f->o.root_for_pid(f->o.root_ctx, f->pid);
        if (root) {
            size_t rn = strnlen(root, FOLD_MAX_FRAME);
            r |= key_append(f, &len, root, rn, false);
            for (size_t i = 0; i < len; i++) /* the caller's name is data, too */
                if (f->key[i] == ';' || (unsigned char)f->key[i] < 0x20 || f->key[i] == 0x7f)
                    f->key[i] = f->key[i] == ';' ? ':' : '?';
        }
    }
    r |= key_append(f, &len, f->pname, f->pname_len, len > 0);
    for (size_t i = f->nfr; i-- > 0 && r == 0;)
        r |= key_append(f, &len, f->fbuf + f->fr[i].off, f->fr[i].len, true);
    if (f->truncated) {
        r |= key_append(f, &len, "[truncated]", 11, true);
        f->st.truncated++;
    }
    unsigned long long count = f->o.compat || f->o.period ? f->period : 1;
    if (r < 0 || table_add(f, f->key, len, count) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
    f->st.samples++;
    if (f->leaf == LEAF_JIT || f->leaf == LEAF_JIT_NAMED)
        f->st.jit_leaf++;
    if (f->leaf == LEAF_JIT_NAMED)
        f->st.jit_leaf_named++;
    reset_sample(f);
    return 0;
}

/* Perl's truth: "" and "0" are false; anything else counts by its numeric value. */
static unsigned long long parse_period(span p)
{
    if (!p.p || p.len == 0 || span_eq(p, "0"))
        return 1;
    unsigned long long v = 0;
    for (size_t i = 0; i < p.len; i++) {
        unsigned d = (unsigned)(p.p[i] - '0');
        v = v > (~0ULL - d) / 10 ? ~0ULL : v * 10 + d;
    }
    return v;
}

static bool event_matches(const folder *f, span ev)
{
    size_t fl = strlen(f->filter);
    if (ev.len == fl && memcmp(ev.p, f->filter, fl) == 0)
        return true;
    /* ours: "cpu-clock" also selects "cpu-clock:pppH" (perf appends modifiers) */
    return !f->o.compat && ev.len > fl && ev.p[fl] == ':' && memcmp(ev.p, f->filter, fl) == 0;
}

#define PNAME_MAX (FOLD_MAX_FRAME + 64)

static void pname_append(folder *f, size_t *len, const char *s, size_t n)
{
    size_t room = PNAME_MAX - *len;
    if (n > room)
        n = room;
    memcpy(f->pname + *len, s, n);
    *len += n;
}

static long span_long(span s)
{
    long v = 0;
    for (size_t i = 0; i < s.len && v < 100000000000L; i++)
        v = v * 10 + (s.p[i] - '0');
    return v;
}

static int on_header(folder *f, header *h, flame_err *err)
{
    if (!f->o.compat && flush_sample(f, err) < 0) /* ours: a header ends an unterminated sample */
        return -1;
    if (h->event.p) {
        if (!f->filter) {
            f->filter = strndup(h->event.p, h->event.len);
            if (!f->filter)
                return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
            f->filter_defaulted = true;
        } else if (!event_matches(f, h->event)) {
            f->st.filtered++;
            if (!f->o.compat)
                reset_sample(f);
            return 0;
        }
    }
    /* Perl: a lone number is the tid and the pid is "?"; a tid of "0" counts as absent. */
    span pid = h->pid, tid = h->tid;
    if (f->o.compat ? !tid.p || span_eq(tid, "0") : !tid.p) {
        tid = pid;
        pid = (span){"?", 1};
    } else if (!pid.p) /* ours: perf printed the tid only */
        pid = (span){"?", 1};
    f->pid = span_long(span_eq(pid, "?") ? tid : pid);
    f->period = parse_period(h->period);

    size_t comm_len = h->comm.len > FOLD_MAX_FRAME ? FOLD_MAX_FRAME : h->comm.len;
    size_t len = 0;
    pname_append(f, &len, h->comm.p, comm_len);
    if (f->o.tid || f->o.pid) {
        pname_append(f, &len, "-", 1);
        pname_append(f, &len, pid.p, pid.len > 20 ? 20 : pid.len);
        if (f->o.tid) {
            pname_append(f, &len, "/", 1);
            pname_append(f, &len, tid.p, tid.len > 20 ? 20 : tid.len);
        }
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)f->pname[i];
        if (c == ' ')
            f->pname[i] = '_';
        else if (!f->o.compat && c == ';')
            f->pname[i] = ':';
        else if (c < 0x20 || c == 0x7f)
            f->pname[i] = '?';
    }
    f->pname_len = len;
    f->in_sample = true;
    return 0;
}

int folder_feed(folder *f, const char *line, size_t len, flame_err *err)
{
    if (len > FOLD_MAX_LINE)
        len = FOLD_MAX_LINE;
    if (!f->o.compat && len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0) { /* end of a sample */
        return flush_sample(f, err);
    }
    if (line[0] == '#')
        return 0;

    /* A line that starts with a blank is never a header for Perl, and for us only when it does
     * not parse as a frame; a cached line did parse as a frame. */
    bool blank = pl_space((unsigned char)line[0]);
    if (blank && f->in_sample) {
        int r = lc_lookup(f, line, len);
        if (r)
            return r < 0 ? flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold") : 0;
    }
    header h;
    memset(&h, 0, sizeof h);
    frame_line fl;
    if (f->o.compat) {
        if (header_perl(line, len, 2, &h)) {
            event_perl(line, len, &h);
            return on_header(f, &h, err);
        }
        if (parse_frame(line, len, &fl)) {
            if (!f->in_sample)
                return 0;
            int r = blank ? add_frame_line(f, &fl, line, len) : add_frame(f, &fl);
            return r < 0 ? flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold") : 0;
        }
        f->st.unrecognized++;
        return 0;
    }

    if (blank && parse_frame(line, len, &fl)) {
        bool hex = true;
        for (size_t i = 0; i < fl.pc.len && hex; i++)
            hex = is_hex((unsigned char)fl.pc.p[i]);
        if (hex) {
            if (!f->in_sample)
                return 0;
            return add_frame_line(f, &fl, line, len) < 0
                       ? flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold")
                       : 0;
        }
    }
    if (header_ours(line, len, &h)) {
        if (on_header(f, &h, err) < 0)
            return -1;
        if (h.rest.p && f->in_sample && parse_frame(h.rest.p, h.rest.len, &fl) &&
            add_frame(f, &fl) < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
        return 0;
    }
    if (!pl_space((unsigned char)line[0]) && header_perl(line, len, 1, &h)) {
        event_perl(line, len, &h);
        return on_header(f, &h, err);
    }
    if (parse_frame(line, len, &fl)) {
        if (f->in_sample && add_frame(f, &fl) < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
        return 0;
    }
    f->st.unrecognized++;
    return 0;
}

int folder_finish(folder *f, flame_err *err)
{
    /* stackcollapse-perf.pl drops a last sample with no blank line after it; we keep it. */
    if (f->o.compat) {
        reset_sample(f);
        return 0;
    }
    return flush_sample(f, err);
}

/* ---- output ---- */

static int cmp_entry(const void *a, const void *b)
{
    const fold_entry *x = *(fold_entry *const *)a, *y = *(fold_entry *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

int folder_each(const folder *f, fold_emit_fn fn, void *ctx)
{
    if (f->used == 0)
        return 0;
    _cleanup_free_ fold_entry **v = calloc(f->used, sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < f->cap; i++)
        if (f->tab[i].key)
            v[k++] = &f->tab[i];
    qsort(v, k, sizeof *v, cmp_entry);
    for (size_t i = 0; i < k; i++) {
        int r = fn(ctx, v[i]->key, v[i]->len, v[i]->count);
        if (r)
            return r;
    }
    return 0;
}

static int write_one(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    FILE *out = ctx;
    char num[24];
    size_t i = sizeof num;
    num[--i] = '\n';
    do
        num[--i] = (char)('0' + count % 10);
    while ((count /= 10));
    num[--i] = ' ';
    if (fwrite(stack, 1, len, out) != len ||
        fwrite(num + i, 1, sizeof num - i, out) != sizeof num - i)
        return -EIO;
    return 0;
}

int folder_write(const folder *f, FILE *out, flame_err *err)
{
    int r = folder_each(f, write_one, out);
    if (r == -ENOMEM)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "write folded stacks");
    if (r < 0 || fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write folded stacks");
    return 0;
}

void folder_get_stats(const folder *f, fold_stats *st)
{
    *st = f->st;
    st->stacks = f->used;
}

const char *folder_event(const folder *f)
{
    return f->filter;
}

int folder_read_fd(folder *f, int fd, flame_err *err)
{
    const size_t bufsz = 1u << 20; /* > FOLD_MAX_LINE: a full buffer always holds a newline or
                                      a line to cut */
    _cleanup_free_ char *buf = malloc(bufsz);
    if (!buf)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "read perf script");
    size_t have = 0;
    bool skipping = false; /* inside the remainder of an over-long line */
    for (;;) {
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf + have, bufsz - have));
        if (n < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "read perf script");
        if (n == 0)
            break;
        have += (size_t)n;
        size_t start = 0;
        const char *nl;
        while ((nl = memchr(buf + start, '\n', have - start))) {
            size_t end = (size_t)(nl - buf);
            if (!skipping && folder_feed(f, buf + start, end - start, err) < 0)
                return -1;
            skipping = false;
            start = end + 1;
        }
        memmove(buf, buf + start, have - start);
        have -= start;
        if (have >= FOLD_MAX_LINE) {
            if (!skipping && folder_feed(f, buf, FOLD_MAX_LINE, err) < 0)
                return -1;
            skipping = true;
            have = 0;
        }
    }
    if (have > 0 && !skipping && folder_feed(f, buf, have, err) < 0)
        return -1;
    return 0;
}

/* ---- life cycle ---- */

folder *folder_new(const fold_opts *opts)
{
    folder *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->o = *opts;
    if (opts->event_filter && !(f->filter = strdup(opts->event_filter))) {
        folder_free(f);
        return NULL;
    }
    f->o.event_filter = NULL; /* ours is f->filter; the caller's string may go away */
    if (!(f->pname = malloc(PNAME_MAX))) {
        folder_free(f);
        return NULL;
    }
    if (getrandom(&f->seed, sizeof f->seed, GRND_NONBLOCK) != sizeof f->seed)
        f->seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)f; /* early boot: still varies */
    return f;
}

void folder_free(folder *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nchunks; i++)
        free(f->chunks[i]);
    free(f->chunks);
    free(f->tab);
    free(f->filter);
    free(f->pname);
    free(f->fbuf);
    free(f->fr);
    free(f->pieces);
    free(f->key);
    lc_clear(f);
    free(f->lc);
    free(f->lc_chunks);
    free(f);
}
