/* The interactive SVG flame graph (flamegraph.pl's options and geometry), streamed: stacks are
 * sorted frame by frame, merged in one pass and every frame is written as soon as it closes,
 * so memory is the profile plus one open frame per depth. Frames narrower than minwidth are
 * pruned. Every name is sanitised (UTF-8, XML-valid characters) and escaped. */
#include "flame/render.h"

#include "common/atomic.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/profile_impl.h"
#include "flame/render_js.h"

void render_opts_default(render_opts *o)
{
    *o = (render_opts){
        .title = NULL, /* "Flame Graph", "Icicle Graph" or "Flame Chart" */
        .countname = "samples",
        .nametype = "Function:",
        .colors = "hot",
        .fonttype = "Verdana",
        .fontsize = 12,
        .fontwidth = 0.59,
        .minwidth = 0.1,
        .width = 1200,
        .height = 16,
        .embed_folded = true,
        .embed_limit = RENDER_EMBED_LIMIT,
        .factor = 1,
    };
}

/* ---- text: UTF-8 sanitising and XML escaping ---------------------------------------------- */

/* Decode one code point at s[0..n): its length in *len; -1 for an invalid sequence (len 1). */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return (int32_t)c;
    size_t need;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return -1;
    }
    if (n < need)
        return -1;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = need;
    return (int32_t)cp;
}

/* Characters XML 1.0 cannot carry (and the control characters we do not want in names). */
static bool xml_bad(int32_t cp)
{
    return cp < 0x20 || cp == 0x7f || cp == 0xfffe || cp == 0xffff;
}

static size_t utf8_chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0, l; i < n; i += l, k++)
        utf8_next((const unsigned char *)s + i, n - i, &l);
    return k;
}

/* Write s[0..n), at most maxchars code points (SIZE_MAX = all), escaped for XML text and
 * attributes; invalid UTF-8 and forbidden characters become U+FFFD. */
static void xml_write(FILE *out, const char *s, size_t n, size_t maxchars)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0; /* run: start of bytes that can be copied verbatim */
    for (size_t k = 0; i < n && k < maxchars; k++) {
        size_t l;
        int32_t cp = utf8_next(u + i, n - i, &l);
        const char *rep = NULL;
        if (cp < 0 || xml_bad(cp))
            rep = "\xef\xbf\xbd";
        else if (cp == '<')
            rep = "&lt;";
        else if (cp == '>')
            rep = "&gt;";
        else if (cp == '&')
            rep = "&amp;";
        else if (cp == '"')
            rep = "&quot;";
        else if (cp == '\'')
            rep = "&apos;";
        if (rep) {
            fwrite(s + run, 1, i - run, out);
            fputs(rep, out);
            run = i + l;
        }
        i += l;
    }
    fwrite(s + run, 1, i - run, out);
}

static void xml_puts(FILE *out, const char *s)
{
    xml_write(out, s, strlen(s), SIZE_MAX);
}

/* A JavaScript string literal safe inside CDATA: only printable ASCII, the rest \u-escaped. */
static void js_string(FILE *out, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    putc('"', out);
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = utf8_next(u + i, n - i, &l);
        if (cp < 0 || xml_bad(cp))
            cp = 0xfffd;
        if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\' && cp != '<' && cp != '>' &&
            cp != ']' && cp != '&')
            putc(cp, out);
        else if (cp < 0x10000)
            fprintf(out, "\\u%04x", (unsigned)cp);
        else
            fprintf(out, "\\u%04x\\u%04x", 0xd800 + (((unsigned)cp - 0x10000) >> 10),
                    0xdc00 + (((unsigned)cp - 0x10000) & 0x3ff));
    }
    putc('"', out);
}

/* Length of name without a trailing annotation _[k] _[w] _[i] _[j] (shown in labels/titles). */
static size_t strip_annotation(const char *s, size_t n)
{
    if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' &&
        strchr("kwij", s[n - 2]) && s[n - 2])
        return n - 4;
    return n;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t l = strlen(suf);
    return n >= l && memcmp(s + n - l, suf, l) == 0;
}

/* "1234567.4" -> "1,234,567" */
static void thousands(char *buf, size_t cap, double v)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%.0f", v);
    if (n < 0 || (size_t)n >= sizeof tmp || n > 40) {
        snprintf(buf, cap, "%s", n > 0 && (size_t)n < sizeof tmp ? tmp : "?");
        return;
    }
    int neg = tmp[0] == '-';
    size_t k = 0;
    for (int i = 0; i < n && k + 2 < cap; i++) {
        buf[k++] = tmp[i];
        int left = n - 1 - i;
        if (i >= neg && left > 0 && left % 3 == 0)
            buf[k++] = ',';
    }
    buf[k] = '\0';
}

/* ---- colours ---------------------------------------------------------------------------- */

typedef enum palette {
    PAL_HOT,
    PAL_MEM,
    PAL_IO,
    PAL_WAKEUP,
    PAL_CHAIN,
    PAL_JAVA,
    PAL_JS,
    PAL_PERL,
    PAL_RED,
    PAL_GREEN,
    PAL_BLUE,
    PAL_AQUA,
    PAL_YELLOW,
    PAL_PURPLE,
    PAL_ORANGE,
} palette;

static const char *const palette_names[] = {
    [PAL_HOT] = "hot",       [PAL_MEM] = "mem",       [PAL_IO] = "io",
    [PAL_WAKEUP] = "wakeup", [PAL_CHAIN] = "chain",   [PAL_JAVA] = "java",
    [PAL_JS] = "js",         [PAL_PERL] = "perl",     [PAL_RED] = "red",
    [PAL_GREEN] = "green",   [PAL_BLUE] = "blue",     [PAL_AQUA] = "aqua",
    [PAL_YELLOW] = "yellow", [PAL_PURPLE] = "purple", [PAL_ORANGE] = "orange",
};

static int palette_parse(const char *s)
{
    for (size_t i = 0; i < sizeof palette_names / sizeof *palette_names; i++)
        if (strcmp(s, palette_names[i]) == 0)
            return (int)i;
    return -1;
}

bool render_palette_valid(const char *name)
{
    return palette_parse(name) >= 0;
}

/* flamegraph.pl seeds Perl's rand (drand48 since Perl 5.20) with the sum of the name's code
 * points, so a name gets the same colour in every graph: one drand48 step from that seed. */
static double name_seeded(const char *s, size_t n)
{
    uint32_t sum = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = utf8_next(u + i, n - i, &l);
        sum += cp < 0 ? u[i] : (uint32_t)cp;
    }
    uint64_t x = ((uint64_t)sum << 16) | 0x330e;
    x = (0x5deece66dULL * x + 0xb) & ((1ULL << 48) - 1);
    return (double)x / (double)(1ULL << 48);
}

/* --hash: weights the first three characters (after a "module`" prefix), so similar names get
 * similar colours across graphs. Reading of flamegraph.pl's documented behaviour. */
static double name_vector(const char *s, size_t n, bool reversed)
{
    /* reversed: the hash of the reversed name, whose "module`" prefix is what follows the
     * last backtick of the name */
    const char *tick = reversed ? memrchr(s, '`', n) : memchr(s, '`', n);
    if (tick && reversed) {
        n = (size_t)(tick - s);
    } else if (tick) {
        n -= (size_t)(tick + 1 - s);
        s = tick + 1;
    }
    double vector = 0, weight = 1, max = 1;
    int mod = 10;
    for (size_t i = 0; i < n && mod <= 12; i++, mod++) {
        unsigned char c = (unsigned char)(reversed ? s[n - 1 - i] : s[i]);
        vector += ((double)(c % mod) / (mod - 1)) * weight;
        max += weight;
        weight *= 0.70;
    }
    return 1 - vector / max;
}

typedef struct rng {
    uint64_t s;
} rng;

static double rng_next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (double)(r->s >> 11) / 9007199254740992.0;
}

/* A Java method name as our folding writes it (Work.step, java.util.HashMap.get) or with
 * slashes (java/util/HashMap:.get): dotted identifiers, one of them capitalised. GCC clones
 * (foo.constprop.0, foo.cold) do not qualify. */
static bool java_like(const char *s, size_t n)
{
    if (memchr(s, '/', n) && !memchr(s, ' ', n) && n && s[0] != '[' && s[0] != '/')
        return true;
    size_t parts = 0;
    bool upper = false;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        if (!(s[j] == '_' || s[j] == '$' || ((s[j] | 32) >= 'a' && (s[j] | 32) <= 'z')))
            return false;
        if (s[j] >= 'A' && s[j] <= 'Z')
            upper = true;
        while (j < n && (s[j] == '_' || s[j] == '$' || (s[j] >= '0' && s[j] <= '9') ||
                         ((s[j] | 32) >= 'a' && (s[j] | 32) <= 'z')))
            j++;
        parts++;
        if (j == n)
            break;
        if (s[j] != '.')
            return false;
        i = j + 1;
        if (i == n)
            return false;
    }
    return parts >= 2 && upper;
}

static bool has(const char *s, size_t n, const char *needle)
{
    return memmem(s, n, needle, strlen(needle)) != NULL;
}

/* Which flat hue a frame gets in the palettes that classify names (java, js, perl, ...). */
static palette classify(palette pal, const char *s, size_t n)
{
    switch (pal) {
    case PAL_JAVA:
        if (ends_with(s, n, "_[j]"))
            return PAL_GREEN;
        if (ends_with(s, n, "_[i]"))
            return PAL_AQUA;
        {
            const char *q = s;
            size_t m = n;
            if (m && *q == 'L') {
                q++;
                m--;
            }
            static const char *const pkgs[] = {"java/", "javax/", "jdk/", "net/",
                                               "org/",  "com/",   "io/",  "sun/"};
            for (size_t i = 0; i < sizeof pkgs / sizeof *pkgs; i++)
                if (m >= strlen(pkgs[i]) && memcmp(q, pkgs[i], strlen(pkgs[i])) == 0)
                    return PAL_GREEN;
        }
        if (has(s, n, ":::"))
            return PAL_GREEN;
        if (has(s, n, "::"))
            return PAL_YELLOW;
        if (ends_with(s, n, "_[k]"))
            return PAL_ORANGE;
        /* deliberate change: JDK perf-map names without annotation are Java, not native */
        return java_like(s, n) ? PAL_GREEN : PAL_RED;
    case PAL_JS:
        if (ends_with(s, n, "_[j]"))
            return memchr(s, '/', n) ? PAL_GREEN : PAL_AQUA;
        if (has(s, n, "::"))
            return PAL_YELLOW;
        { /* a path to a .js file: "/" followed somewhere by ".js" */
            const char *slash = memchr(s, '/', n);
            if (slash && has(slash, n - (size_t)(slash - s), ".js"))
                return PAL_GREEN;
        }
        if (memchr(s, ':', n))
            return PAL_AQUA;
        {
            size_t spaces = 0;
            for (size_t i = 0; i < n; i++)
                spaces += s[i] == ' ';
            if (spaces == 1)
                return PAL_GREEN;
        }
        return ends_with(s, n, "_[k]") ? PAL_ORANGE : PAL_RED;
    case PAL_PERL:
        if (has(s, n, "::"))
            return PAL_YELLOW;
        if (has(s, n, "Perl") || has(s, n, ".pl"))
            return PAL_GREEN;
        return ends_with(s, n, "_[k]") ? PAL_ORANGE : PAL_RED;
    case PAL_WAKEUP:
        return PAL_AQUA;
    case PAL_CHAIN:
        return ends_with(s, n, "_[w]") ? PAL_AQUA : PAL_BLUE;
    case PAL_HOT:
    case PAL_MEM:
    case PAL_IO:
    case PAL_RED:
    case PAL_GREEN:
    case PAL_BLUE:
    case PAL_AQUA:
    case PAL_YELLOW:
    case PAL_PURPLE:
    case PAL_ORANGE:
        break;
    }
    return pal;
}

static uint32_t rgb(double r, double g, double b)
{
    return ((uint32_t)r & 255) << 16 | ((uint32_t)g & 255) << 8 | ((uint32_t)b & 255);
}

static uint32_t colour_for(palette pal, const render_opts *o, const char *s, size_t n, rng *rr)
{
    if (n == 1 && s[0] == '-')
        return rgb(200, 200, 200);
    if (n == 2 && s[0] == '-' && s[1] == '-')
        return rgb(160, 160, 160);
    double v1, v2, v3;
    if (o->random) {
        v1 = rng_next(rr), v2 = rng_next(rr), v3 = rng_next(rr);
    } else if (o->hash) {
        v1 = name_vector(s, n, false);
        v2 = v3 = name_vector(s, n, true);
    } else {
        v1 = v2 = v3 = name_seeded(s, n);
    }
    switch (classify(pal, s, n)) {
    case PAL_HOT:
        return rgb(205 + (int)(50 * v3), (int)(230 * v1), (int)(55 * v2));
    case PAL_MEM:
        return rgb(0, 190 + (int)(50 * v2), (int)(210 * v1));
    case PAL_IO:
        return rgb(80 + (int)(60 * v1), 80 + (int)(60 * v1), 190 + (int)(55 * v2));
    case PAL_RED:
        return rgb(200 + (int)(55 * v1), 50 + (int)(80 * v1), 50 + (int)(80 * v1));
    case PAL_GREEN:
        return rgb(50 + (int)(60 * v1), 200 + (int)(55 * v1), 50 + (int)(60 * v1));
    case PAL_BLUE:
        return rgb(80 + (int)(60 * v1), 80 + (int)(60 * v1), 205 + (int)(50 * v1));
    case PAL_YELLOW:
        return rgb(175 + (int)(55 * v1), 175 + (int)(55 * v1), 50 + (int)(20 * v1));
    case PAL_PURPLE:
        return rgb(190 + (int)(65 * v1), 80 + (int)(60 * v1), 190 + (int)(65 * v1));
    case PAL_AQUA:
        return rgb(50 + (int)(60 * v1), 165 + (int)(55 * v1), 165 + (int)(55 * v1));
    case PAL_ORANGE:
        return rgb(190 + (int)(65 * v1), 90 + (int)(65 * v1), 0);
    case PAL_WAKEUP:
    case PAL_CHAIN:
    case PAL_JAVA:
    case PAL_JS:
    case PAL_PERL:
        break;
    }
    return rgb(0, 0, 0);
}

/* Differential: red grew, blue shrank, white unchanged; saturation relative to the largest
 * change of any stack. */
static uint32_t colour_scale(double delta, double maxdelta)
{
    if (delta == 0)
        return rgb(255, 255, 255);
    double x = 210 * (maxdelta - fabs(delta)) / maxdelta;
    if (x < 0)
        x = 0;
    return delta > 0 ? rgb(255, x, x) : rgb(x, x, 255);
}

/* ---- consistent palette file (--cp): lines "name->rgb(r,g,b)" ------------------------------ */

typedef struct cp_entry {
    char *name;
    size_t len;
    uint32_t colour;
} cp_entry;

typedef struct cp_file {
    cp_entry *e;
    size_t n, cap;
} cp_file;

static void cp_free(cp_file *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->e[i].name);
    free(f->e);
}

static int cp_add(cp_file *f, const char *name, size_t len, uint32_t colour)
{
    if (f->n == f->cap) {
        size_t c = f->cap ? f->cap * 2 : 256;
        cp_entry *q = realloc(f->e, c * sizeof *q);
        if (!q)
            return -1;
        f->e = q;
        f->cap = c;
    }
    char *s = malloc(len + 1);
    if (!s)
        return -1;
    memcpy(s, name, len);
    s[len] = '\0';
    f->e[f->n++] = (cp_entry){s, len, colour};
    return 0;
}

static int cp_cmp(const void *a, const void *b)
{
    const cp_entry *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A missing file is an empty palette (it is created on write). Malformed lines are skipped. */
static int cp_read(cp_file *f, const char *path, flame_err *err)
{
    _cleanup_fclose_ FILE *in = fopen(path, "re");
    if (!in) {
        if (errno == ENOENT)
            return 0;
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "palette file %s", path);
    }
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        if (n > 65536)
            continue;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        line[n] = '\0';
        char *arrow = NULL;
        for (char *q = line; (q = strstr(q, "->rgb(")); q++)
            arrow = q;
        unsigned r, g, b;
        char close;
        if (!arrow || sscanf(arrow, "->rgb(%u,%u,%u%c", &r, &g, &b, &close) != 4 || close != ')' ||
            r > 255 || g > 255 || b > 255)
            continue;
        if (cp_add(f, line, (size_t)(arrow - line), rgb(r, g, b)) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    qsort(f->e, f->n, sizeof *f->e, cp_cmp);
    return 0;
}

static const cp_entry *cp_find(const cp_file *f, const char *s, size_t n)
{
    cp_entry key = {(char *)s, n, 0};
    return bsearch(&key, f->e, f->n, sizeof *f->e, cp_cmp);
}

static int cp_write_cb(void *ctx, FILE *out, flame_err *err)
{
    (void)err;
    cp_file *f = ctx;
    const cp_entry *prev = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const cp_entry *e = &f->e[i];
        if ((prev && cp_cmp(prev, e) == 0) || memchr(e->name, '\n', e->len))
            continue; /* duplicates (file + profile), and names the format cannot hold */
        fwrite(e->name, 1, e->len, out);
        fprintf(out, "->rgb(%u,%u,%u)\n", e->colour >> 16, (e->colour >> 8) & 255, e->colour & 255);
        prev = e;
    }
    return 0;
}

/* Written atomically, so a crash never leaves half a palette. */
static int cp_write(cp_file *f, const char *path, flame_err *err)
{
    qsort(f->e, f->n, sizeof *f->e, cp_cmp);
    if (atomic_write_file(path, cp_write_cb, f, err) < 0)
        return flame_wrap(err, "palette file");
    return 0;
}

/* ---- the merge walk ------------------------------------------------------------------------ */

typedef struct open_frame {
    uint32_t rank;
    double start, delta;
} open_frame;

typedef struct svg_ctx {
    const profile *p;
    const render_opts *o;
    const prof_view *v;
    FILE *out; /* NULL in the measuring pass */
    palette pal;
    bool diff;
    double timemax;      /* the 100% figure */
    double min_samples;  /* narrower frames are pruned */
    double widthpertime; /* pixels per sample */
    double maxdelta;
    int imageheight, ypad1, ypad2;
    uint32_t maxdepth; /* deepest kept frame (root = 0) */
    uint32_t *colours; /* per rank, bit 31 = computed */
    cp_file *cp;
    rng rr;
    open_frame *open;
    size_t nopen, open_cap;
    double pos;
} svg_ctx;

#define COLOUR_SET 0x80000000u

static uint32_t name_colour(svg_ctx *c, uint32_t rank)
{
    if (c->colours[rank] & COLOUR_SET)
        return c->colours[rank] & 0xffffff;
    uint32_t id = c->v->by_rank[rank];
    const char *s = prof_name_str(c->p, id);
    size_t n = c->p->names[id].len;
    const cp_entry *e = c->cp ? cp_find(c->cp, s, n) : NULL;
    uint32_t col = e ? e->colour : colour_for(c->pal, c->o, s, n, &c->rr);
    c->colours[rank] = col | COLOUR_SET;
    return col;
}

/* One frame: title (name, count, share), rect, label. depth 0 is the root "all". */
static void emit_frame(svg_ctx *c, const char *name, size_t len, uint32_t depth, double start,
                       double end, double delta, uint32_t colour)
{
    FILE *out = c->out;
    const render_opts *o = c->o;
    double w = end - start;
    double x1 = 10 + start * c->widthpertime, x2 = 10 + end * c->widthpertime;
    double y1, y2;
    int fh = o->height;
    if (o->inverted) {
        y1 = c->ypad1 + (double)depth * fh;
        y2 = c->ypad1 + (double)(depth + 1) * fh - 1;
    } else {
        y1 = c->imageheight - c->ypad2 - (double)(depth + 1) * fh + 1;
        y2 = c->imageheight - c->ypad2 - (double)depth * fh;
    }
    char num[64], pos[64], wid[64];
    thousands(num, sizeof num, w * o->factor);
    prof_format_count(pos, sizeof pos, start);
    prof_format_count(wid, sizeof wid, w);
    size_t shown = depth ? strip_annotation(name, len) : len;
    fprintf(out, "<g data-s=\"%s\" data-w=\"%s\"><title>", pos, wid);
    xml_write(out, name, shown, SIZE_MAX);
    fprintf(out, " (%s ", num);
    xml_puts(out, o->countname);
    if (depth == 0)
        fputs(", 100%", out);
    else
        fprintf(out, ", %.2f%%", 100 * w / c->timemax);
    if (c->diff && depth > 0) {
        double d = (o->negate ? -1 : 1) * 100 * delta / c->timemax;
        fprintf(out, "; %s%.2f%%", d > 0 ? "+" : "", d == 0 ? 0.0 : d);
    }
    fprintf(out,
            ")</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.2f\">",
            x1, y1, x2 - x1, y2 - y1, colour >> 16, (colour >> 8) & 255, colour & 255, x1 + 3,
            3 + (y1 + y2) / 2);
    size_t chars = (size_t)((x2 - x1) / (o->fontsize * o->fontwidth));
    if (chars >= 3) {
        size_t have = utf8_chars(name, shown);
        if (have <= chars) {
            xml_write(out, name, shown, SIZE_MAX);
        } else {
            xml_write(out, name, shown, chars - 2);
            fputs("..", out);
        }
    }
    fputs("</text></g>\n", out);
}

/* A frame closes: prune it or count it (measuring pass) or write it. */
static void close_frame(svg_ctx *c, uint32_t depth, const open_frame *f, double end)
{
    if (end - f->start < c->min_samples)
        return;
    if (!c->out) {
        if (depth > c->maxdepth)
            c->maxdepth = depth;
        return;
    }
    uint32_t colour;
    if (c->diff)
        colour = colour_scale(c->o->negate ? -f->delta : f->delta, c->maxdelta);
    else
        colour = name_colour(c, f->rank);
    uint32_t id = c->v->by_rank[f->rank];
    emit_frame(c, prof_name_str(c->p, id), c->p->names[id].len, depth, f->start, end, f->delta,
               colour);
}

/* Merge one stack (ranks frames[0..n)) into the open frames: frames past the common prefix
 * close, the new ones open at the current position. */
static int walk_stack(svg_ctx *c, const uint32_t *frames, uint32_t n, double count, double before)
{
    size_t common = 0;
    while (common < c->nopen && common < n && c->open[common].rank == frames[common])
        common++;
    while (c->nopen > common) {
        c->nopen--;
        close_frame(c, (uint32_t)c->nopen + 1, &c->open[c->nopen], c->pos);
    }
    if (n > c->open_cap) {
        size_t cap = c->open_cap ? c->open_cap : 64;
        while (cap < n)
            cap *= 2;
        open_frame *q = realloc(c->open, cap * sizeof *q);
        if (!q)
            return -1;
        c->open = q;
        c->open_cap = cap;
    }
    for (size_t i = common; i < n; i++)
        c->open[i] = (open_frame){frames[i], c->pos, 0};
    c->nopen = n;
    c->pos += count;
    c->open[n - 1].delta += count - before;
    if (!c->out && fabs(count - before) > c->maxdelta)
        c->maxdelta = fabs(count - before);
    return 0;
}

static int walk(svg_ctx *c, bool use_seq)
{
    const profile *p = c->p;
    c->nopen = 0;
    c->pos = 0;
    if (use_seq) {
        for (size_t k = 0; k < p->nseq; k++) {
            const prof_seq *q = &p->seq[k];
            const prof_stack *st = &p->stacks[q->stack];
            if (walk_stack(c, c->v->seq + st->off, st->depth, q->count, q->before) < 0)
                return -1;
        }
    } else {
        for (uint32_t k = 0; k < p->nstacks; k++) {
            const prof_stack *st = &p->stacks[c->v->order[k]];
            if (walk_stack(c, c->v->seq + st->off, st->depth, st->count, st->before) < 0)
                return -1;
        }
    }
    while (c->nopen > 0) {
        c->nopen--;
        close_frame(c, (uint32_t)c->nopen + 1, &c->open[c->nopen], c->pos);
    }
    return 0;
}

/* ---- the document ---------------------------------------------------------------------- */

static void bg_colours(const render_opts *o, palette pal, const char **c1, const char **c2)
{
    const char *bg = o->bgcolors;
    if (!bg || !*bg) {
        switch (pal) {
        case PAL_MEM:
            bg = "green";
            break;
        case PAL_IO:
        case PAL_WAKEUP:
        case PAL_CHAIN:
            bg = "blue";
            break;
        case PAL_RED:
        case PAL_GREEN:
        case PAL_BLUE:
        case PAL_AQUA:
        case PAL_YELLOW:
        case PAL_PURPLE:
        case PAL_ORANGE:
            bg = "grey";
            break;
        case PAL_HOT:
        case PAL_JAVA:
        case PAL_JS:
        case PAL_PERL:
            bg = "yellow";
            break;
        }
    }
    if (strcmp(bg, "yellow") == 0)
        *c1 = "#eeeeee", *c2 = "#eeeeb0";
    else if (strcmp(bg, "blue") == 0)
        *c1 = "#eeeeee", *c2 = "#e0e0ff";
    else if (strcmp(bg, "green") == 0)
        *c1 = "#eef2ee", *c2 = "#e0ffe0";
    else if (strcmp(bg, "grey") == 0)
        *c1 = "#f8f8f8", *c2 = "#e8e8e8";
    else
        *c1 = *c2 = bg; /* validated by render_bgcolor_valid: #rrggbb */
}

bool render_bgcolor_valid(const char *s)
{
    if (!strcmp(s, "yellow") || !strcmp(s, "blue") || !strcmp(s, "green") || !strcmp(s, "grey"))
        return true;
    if (strlen(s) != 7 || s[0] != '#')
        return false;
    for (int i = 1; i < 7; i++)
        if (!strchr("0123456789abcdefABCDEF", s[i]))
            return false;
    return true;
}

/* The font family goes into CSS: keep only characters that cannot end the declaration. */
static void css_font(FILE *out, const char *s)
{
    for (; *s; s++)
        if ((*s | 32) >= 'a' && (*s | 32) <= 'z' ? 1 : strchr("0123456789 ,-_", *s) != NULL)
            putc(*s, out);
}

/* An XML comment cannot hold "--" nor end with "-". */
static void comment_text(FILE *out, const char *s)
{
    size_t n = strlen(s);
    const unsigned char *u = (const unsigned char *)s;
    char prev = 0;
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = utf8_next(u + i, n - i, &l);
        if (cp < 0 || (xml_bad(cp) && cp != '\n' && cp != '\t')) {
            fputs("\xef\xbf\xbd", out);
            prev = 0;
            continue;
        }
        if (cp == '-' && prev == '-')
            putc(' ', out);
        fwrite(s + i, 1, l, out);
        prev = (char)cp;
    }
    if (prev == '-')
        putc(' ', out);
}

static void header(svg_ctx *c, const char *title)
{
    FILE *out = c->out;
    const render_opts *o = c->o;
    int w = o->width, h = c->imageheight;
    const char *bg1, *bg2;
    bg_colours(o, c->pal, &bg1, &bg2);
    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init(evt)\" "
            "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" "
            "xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
            "<!-- Flame graph stack visualization written by docker-flame " FLAME_VERSION
            ". Interactive: click a frame to zoom, Ctrl-F to search. -->\n",
            w, h, w, h);
    if (o->notes && *o->notes) {
        fputs("<!-- NOTES: ", out);
        comment_text(out, o->notes);
        fputs(" -->\n", out);
    }
    fprintf(out,
            "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
            "<stop stop-color=\"%s\" offset=\"5%%\"/><stop stop-color=\"%s\" offset=\"95%%\"/>"
            "</linearGradient></defs>\n",
            bg1, bg2);
    fputs("<style type=\"text/css\"><![CDATA[\ntext { font-family:", out);
    css_font(out, o->fonttype);
    fprintf(out,
            "; font-size:%gpx; fill:rgb(0,0,0); }\n"
            "#search, #ignorecase { opacity:0.1; cursor:pointer; }\n"
            "#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { opacity:1; }\n"
            "#subtitle { text-anchor:middle; fill:rgb(160,160,160); }\n"
            "#title { text-anchor:middle; font-size:%gpx; }\n"
            "#unzoom { cursor:pointer; }\n"
            "#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n"
            ".hide { display:none; }\n"
            ".parent { opacity:0.5; }\n"
            "]]></style>\n",
            o->fontsize, o->fontsize + 5);
    char total[64];
    prof_format_count(total, sizeof total, c->timemax);
    fprintf(out,
            "<script type=\"text/ecmascript\"><![CDATA[\n"
            "var cfg = {xpad: 10, fontsize: %g, fontwidth: %g, inverted: %s, total: %s, "
            "searchcolor: \"rgb(230,0,230)\", nametype: ",
            o->fontsize, o->fontwidth, o->inverted ? "true" : "false", total);
    js_string(out, o->nametype);
    fputs("};\n", out);
    fputs(render_js, out);
    fputs("]]></script>\n", out);
    fprintf(out,
            "<rect x=\"0.0\" y=\"0\" width=\"%d.0\" height=\"%d.0\" fill=\"url(#background)\"/>\n",
            w, h);
    fprintf(out, "<text id=\"title\" x=\"%.2f\" y=\"%g\">", w / 2.0, o->fontsize * 2);
    xml_puts(out, title);
    fputs("</text>\n", out);
    if (o->subtitle && *o->subtitle) {
        fprintf(out, "<text id=\"subtitle\" x=\"%.2f\" y=\"%g\">", w / 2.0, o->fontsize * 4);
        xml_puts(out, o->subtitle);
        fputs("</text>\n", out);
    }
    fprintf(out,
            "<text id=\"details\" x=\"10\" y=\"%g\"> </text>\n"
            "<text id=\"unzoom\" x=\"10\" y=\"%g\" class=\"hide\">Reset Zoom</text>\n"
            "<text id=\"search\" x=\"%d\" y=\"%g\">Search</text>\n"
            "<text id=\"ignorecase\" x=\"%d\" y=\"%g\">ic</text>\n"
            "<text id=\"matched\" x=\"%d\" y=\"%g\" class=\"hide\"> </text>\n"
            "<g id=\"frames\">\n",
            h - c->ypad2 / 2.0, o->fontsize * 2, w - 10 - 100, o->fontsize * 2, w - 10 - 16,
            o->fontsize * 2, w - 10 - 100, h - c->ypad2 / 2.0);
}

/* An upper bound of the embedded data's size, so the exact count (a pass over every stack) is
 * only needed near the limit. */
static size_t embed_bound(const profile *p)
{
    size_t digits = 1;
    for (uint32_t v = p->nnames; v >= 10; v /= 10)
        digits++;
    size_t bound = 256 + p->text_len / 3 * 4 + (size_t)p->nnames * 6;
    bound += p->ids_len * (digits + 1) + (size_t)p->nstacks * (6 + 2 * 26);
    return bound;
}

int render_svg(const profile *p, const render_opts *opts, FILE *out, flame_err *err)
{
    /* unset strings mean the defaults */
    render_opts fixed = *opts;
    const render_opts *o = &fixed;
    if (!fixed.countname)
        fixed.countname = "samples";
    if (!fixed.nametype)
        fixed.nametype = "Function:";
    if (!fixed.fonttype)
        fixed.fonttype = "Verdana";
    int pal = palette_parse(o->colors ? o->colors : "hot");
    if (pal < 0)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "unknown palette '%s' (hot mem io wakeup chain java js perl red green "
                          "blue aqua yellow purple orange)",
                          o->colors);
    if (o->width < 40 || o->width > 1000000 || o->height < 2 || o->height > 10000 ||
        !(o->fontsize > 0 && o->fontsize < 1000) || !(o->fontwidth > 0 && o->fontwidth < 100) ||
        !(o->minwidth >= 0) || !isfinite(o->minwidth) || !(o->factor > 0) || !isfinite(o->factor))
        return flame_fail(err, FLAME_EXIT_USAGE, "render options out of range");
    if (o->bgcolors && *o->bgcolors && !render_bgcolor_valid(o->bgcolors))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "bad background '%s' (yellow, blue, green, grey or #rrggbb)",
                          o->bgcolors);
    if (profile_stacks(p) == 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "empty profile: nothing to draw");

    svg_ctx c = {.p = p, .o = o, .pal = (palette)pal, .diff = profile_is_diff(p), .maxdelta = 1};
    c.rr.s = o->random ? ((uint64_t)time(NULL) << 20 ^ (uint64_t)getpid()) | 1 : 1;
    double total = profile_total(p);
    c.timemax = o->total > total ? o->total : total;
    if (c.timemax <= 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "all counts are zero: nothing to draw");
    c.widthpertime = (o->width - 20) / c.timemax;
    c.min_samples = o->minwidth_pct ? c.timemax * o->minwidth / 100 : o->minwidth / c.widthpertime;

    bool use_seq = o->flamechart && p->keep_order && p->nseq > 0;
    prof_view v;
    if (prof_view_build(p, o->reverse, o->flamechart ? PROF_ORDER_INPUT : PROF_ORDER_FRAMES, &v) <
        0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    c.v = &v;
    _cleanup_free_ uint32_t *colours = calloc(p->nnames ? p->nnames : 1, sizeof *colours);
    cp_file cp = {0};
    int rc = -1;
    if (!colours) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    c.colours = colours;
    if (o->palette_file) {
        if (cp_read(&cp, o->palette_file, err) < 0)
            goto out;
        c.cp = &cp;
    }

    /* pass 1: which frames survive pruning, how deep, the largest change */
    if (walk(&c, use_seq) < 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    c.ypad1 = (int)(o->fontsize * 3);
    c.ypad2 = (int)(o->fontsize * 2 + 10);
    if (o->subtitle && *o->subtitle)
        c.ypad1 += (int)(o->fontsize * 2);
    c.imageheight = (int)((c.maxdepth + 1) * (double)o->height) + c.ypad1 + c.ypad2;
    const char *title = o->title && *o->title ? o->title
                        : o->flamechart       ? "Flame Chart"
                        : o->inverted         ? "Icicle Graph"
                                              : "Flame Graph";

    /* pass 2: write */
    c.out = out;
    header(&c, title);
    if (walk(&c, use_seq) < 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    emit_frame(&c, "all", 3, 0, 0, profile_total(p), 0,
               c.diff ? rgb(255, 255, 255) : colour_for(c.pal, o, "all", 3, &c.rr));
    fputs("</g>\n", out);
    if (o->embed_folded) {
        const prof_view *sorted = o->reverse || o->flamechart ? NULL : &v;
        size_t size = 0;
        if (o->embed_limit && embed_bound(p) > o->embed_limit &&
            prof_write_embedded(p, sorted, NULL, &size, o->embed_limit, err) < 0)
            goto out;
        if (o->embed_limit && size > o->embed_limit)
            fprintf(out, PROF_DATA_OMITTED ": over the limit of %zu bytes -->\n", o->embed_limit);
        else if (prof_write_embedded(p, sorted, out, NULL, 0, err) < 0)
            goto out;
    }
    fputs("</svg>\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
        goto out;
    }
    if (o->palette_file) {
        /* remember every colour this graph used, keeping the file's other names */
        for (uint32_t r = 0; r < p->nnames; r++) {
            if (!(colours[r] & COLOUR_SET))
                continue;
            uint32_t id = v.by_rank[r];
            if (!cp_find(&cp, prof_name_str(p, id), p->names[id].len) &&
                cp_add(&cp, prof_name_str(p, id), p->names[id].len, colours[r] & 0xffffff) < 0) {
                flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                goto out;
            }
        }
        if (cp_write(&cp, o->palette_file, err) < 0)
            goto out;
    }
    rc = 0;
out:
    free(c.open);
    cp_free(&cp);
    prof_view_free(&v);
    return rc;
}
