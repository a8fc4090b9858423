/* Frame names as folding writes them: Perl's generic tidy (parameters cut, quotes dropped), our
 * tidy of JDK perf-map names (return type and parameters dropped, descriptor 'L' dropped), the
 * byte rules (no ';' and no control bytes, ever), size bounds, and the _[k] _[j] _[i]
 * annotations. Every pass is linear in the name. */
#include "flame/fold_tidy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flame/alloc.h"
#include "flame/frame.h"

/* Remove from the first '(' not followed by "anonymous namespace)", unless the name looks like
 * a Go method ".(*T)." (Perl's generic tidy). */
size_t fold_cut_params_generic(char *b, size_t n)
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
        n = fold_cut_params_generic(b, n);
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

long fold_tidy_piece(const fold_opts *o, char **buf, size_t *cap, const frame_line *fl, span piece,
                     size_t index, bool java_comm, bool perfmap)
{
    bool cut = piece.len > FOLD_MAX_FRAME;
    size_t n = cut ? FOLD_MAX_FRAME : piece.len;
    size_t room = n + fl->mod.len + fl->pc.len + 32;
    if (!GROW(*buf, *cap, room))
        return -1;
    char *b = *buf;
    perfmap = perfmap && !o->compat;

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
        if (o->addrs) {
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
        if (__builtin_expect(fold_cls[c] & C_SPECIAL, 0)) {
            if (c == ';')
                b[i] = ':';
            else if (c == '"' || c == '\'')
                quotes = true;
            else
                b[i] = '?';
        }
    }
    if (perfmap)
        n = tidy_jit(b, n, o->signatures);
    else
        n = fold_cut_params_generic(b, n);
    if (quotes)
        n = delete_quotes(b, n);
    if (o->compat) {
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
    } else if (o->kernel && fold_mod_is_kernel(fl->mod)) {
        memcpy(b + n, "_[k]", 4);
        n += 4;
    } else if (o->jit && (o->compat ? fold_mod_is_perfmap_perl(fl->mod) : perfmap)) {
        /* the recorder's interpreted frames come marked _[int] in the map (docs/FOLDING.md) */
        if (!has_annotation(b, n, 'j') && !frame_is_interpreted(b, n)) {
            memcpy(b + n, "_[j]", 4);
            n += 4;
        }
    }
    return (long)n;
}
