/* Colours of a flame graph: flamegraph.pl's palettes (hot, java, js, ...; a name's colour
 * seeded by the name, so it is the same in every graph), differential red/blue, backgrounds, and
 * the consistent palette file (--cp) that keeps colours across graphs. */
#include "flame/palette.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/cleanup.h"
#include "flame/escape.h"
#include "flame/frame.h"
#include "flame/render.h"

const char *const palette_names[] = {
    [PAL_HOT] = "hot",       [PAL_MEM] = "mem",       [PAL_IO] = "io",
    [PAL_WAKEUP] = "wakeup", [PAL_CHAIN] = "chain",   [PAL_JAVA] = "java",
    [PAL_JS] = "js",         [PAL_PERL] = "perl",     [PAL_RED] = "red",
    [PAL_GREEN] = "green",   [PAL_BLUE] = "blue",     [PAL_AQUA] = "aqua",
    [PAL_YELLOW] = "yellow", [PAL_PURPLE] = "purple", [PAL_ORANGE] = "orange",
    [PAL_ORANGE + 1] = NULL,
};

int palette_parse(const char *s)
{
    for (size_t i = 0; palette_names[i]; i++)
        if (strcmp(s, palette_names[i]) == 0)
            return (int)i;
    return -1;
}

bool palette_valid(const char *name)
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
        int32_t cp = escape_utf8_next(u + i, n - i, &l);
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

static double rng_next(palette_rng *r)
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
        if (frame_ends_with(s, n, "_[k]")) /* --kernel: never mistaken for Java or C++ */
            return PAL_ORANGE;
        if (frame_ends_with(s, n, "_[j]"))
            return PAL_GREEN;
        if (frame_ends_with(s, n, "_[i]"))
            return PAL_AQUA;
        if (frame_ends_with(s, n, "_[int]"))
            return PAL_PURPLE; /* interpreted: the JIT has not compiled it (yet) */
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
        /* deliberate change: JDK perf-map names without annotation are Java, not native */
        return java_like(s, n) ? PAL_GREEN : PAL_RED;
    case PAL_JS:
        if (frame_ends_with(s, n, "_[j]"))
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
        return frame_ends_with(s, n, "_[k]") ? PAL_ORANGE : PAL_RED;
    case PAL_PERL:
        if (has(s, n, "::"))
            return PAL_YELLOW;
        if (has(s, n, "Perl") || has(s, n, ".pl"))
            return PAL_GREEN;
        return frame_ends_with(s, n, "_[k]") ? PAL_ORANGE : PAL_RED;
    case PAL_WAKEUP:
        return PAL_AQUA;
    case PAL_CHAIN:
        return frame_ends_with(s, n, "_[w]") ? PAL_AQUA : PAL_BLUE;
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

uint32_t palette_rgb(double r, double g, double b)
{
    return ((uint32_t)r & 255) << 16 | ((uint32_t)g & 255) << 8 | ((uint32_t)b & 255);
}

/* flamegraph.pl's flat hues: each channel is base + (int)(scale * v), v one of the name's three
 * values (hot and mem mix them, the others use the first; v 0 is 0). The palettes that classify
 * names (java, js, ...) map to these and have no hue of their own: all zero, black. */
typedef struct hue {
    struct {
        int base, scale, v;
    } ch[3];
} hue;

static const hue hues[] = {
    [PAL_HOT] = {{{205, 50, 3}, {0, 230, 1}, {0, 55, 2}}},
    [PAL_MEM] = {{{0, 0, 1}, {190, 50, 2}, {0, 210, 1}}},
    [PAL_IO] = {{{80, 60, 1}, {80, 60, 1}, {190, 55, 2}}},
    [PAL_RED] = {{{200, 55, 1}, {50, 80, 1}, {50, 80, 1}}},
    [PAL_GREEN] = {{{50, 60, 1}, {200, 55, 1}, {50, 60, 1}}},
    [PAL_BLUE] = {{{80, 60, 1}, {80, 60, 1}, {205, 50, 1}}},
    [PAL_YELLOW] = {{{175, 55, 1}, {175, 55, 1}, {50, 20, 1}}},
    [PAL_PURPLE] = {{{190, 65, 1}, {80, 60, 1}, {190, 65, 1}}},
    [PAL_AQUA] = {{{50, 60, 1}, {165, 55, 1}, {165, 55, 1}}},
    [PAL_ORANGE] = {{{190, 65, 1}, {90, 65, 1}, {0, 0, 1}}},
};

uint32_t palette_colour(palette pal, const render_opts *o, const char *s, size_t n, palette_rng *rr)
{
    if (n == 1 && s[0] == '-')
        return palette_rgb(200, 200, 200);
    if (n == 2 && s[0] == '-' && s[1] == '-')
        return palette_rgb(160, 160, 160);
    double v1, v2, v3;
    if (o->random) {
        v1 = rng_next(rr), v2 = rng_next(rr), v3 = rng_next(rr);
    } else if (o->hash) {
        v1 = name_vector(s, n, false);
        v2 = v3 = name_vector(s, n, true);
    } else {
        v1 = v2 = v3 = name_seeded(s, n);
    }
    const hue *h = &hues[classify(pal, s, n)];
    const double v[4] = {0, v1, v2, v3};
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = h->ch[k].base + (int)(h->ch[k].scale * v[h->ch[k].v]);
    return palette_rgb(c[0], c[1], c[2]);
}

palette palette_class(palette pal, const char *s, size_t n)
{
    return classify(pal, s, n);
}

const char *palette_class_meaning(palette pal, palette cls)
{
    if (pal != PAL_JAVA)
        return NULL;
    switch (cls) {
    case PAL_GREEN:
        return "Java, compiled";
    case PAL_AQUA:
        return "inlined";
    case PAL_PURPLE:
        return "interpreted";
    case PAL_YELLOW:
        return "C++ (JVM)";
    case PAL_RED:
        return "native";
    case PAL_ORANGE:
        return "kernel";
    case PAL_HOT:
    case PAL_MEM:
    case PAL_IO:
    case PAL_WAKEUP:
    case PAL_CHAIN:
    case PAL_JAVA:
    case PAL_JS:
    case PAL_PERL:
    case PAL_BLUE:
        break;
    }
    return NULL;
}

uint32_t palette_class_rgb(palette cls)
{
    const hue *h = &hues[cls];
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = h->ch[k].base + (h->ch[k].v ? h->ch[k].scale / 2 : 0);
    return palette_rgb(c[0], c[1], c[2]);
}

/* sRGB channel values in linear light (WCAG 2: c / 12.92 up to 0.03928, else
 * ((c + 0.055) / 1.055)^2.4), so the check of every frame drawn costs no pow() */
static const double linear[256] = {
    0.000000, 0.000304, 0.000607, 0.000911, 0.001214, 0.001518, 0.001821, 0.002125, 0.002428,
    0.002732, 0.003035, 0.003347, 0.003677, 0.004025, 0.004391, 0.004777, 0.005182, 0.005605,
    0.006049, 0.006512, 0.006995, 0.007499, 0.008023, 0.008568, 0.009134, 0.009721, 0.010330,
    0.010960, 0.011612, 0.012286, 0.012983, 0.013702, 0.014444, 0.015209, 0.015996, 0.016807,
    0.017642, 0.018500, 0.019382, 0.020289, 0.021219, 0.022174, 0.023153, 0.024158, 0.025187,
    0.026241, 0.027321, 0.028426, 0.029557, 0.030713, 0.031896, 0.033105, 0.034340, 0.035601,
    0.036889, 0.038204, 0.039546, 0.040915, 0.042311, 0.043735, 0.045186, 0.046665, 0.048172,
    0.049707, 0.051269, 0.052861, 0.054480, 0.056128, 0.057805, 0.059511, 0.061246, 0.063010,
    0.064803, 0.066626, 0.068478, 0.070360, 0.072272, 0.074214, 0.076185, 0.078187, 0.080220,
    0.082283, 0.084376, 0.086500, 0.088656, 0.090842, 0.093059, 0.095307, 0.097587, 0.099899,
    0.102242, 0.104616, 0.107023, 0.109462, 0.111932, 0.114435, 0.116971, 0.119538, 0.122139,
    0.124772, 0.127438, 0.130136, 0.132868, 0.135633, 0.138432, 0.141263, 0.144128, 0.147027,
    0.149960, 0.152926, 0.155926, 0.158961, 0.162029, 0.165132, 0.168269, 0.171441, 0.174647,
    0.177888, 0.181164, 0.184475, 0.187821, 0.191202, 0.194618, 0.198069, 0.201556, 0.205079,
    0.208637, 0.212231, 0.215861, 0.219526, 0.223228, 0.226966, 0.230740, 0.234551, 0.238398,
    0.242281, 0.246201, 0.250158, 0.254152, 0.258183, 0.262251, 0.266356, 0.270498, 0.274677,
    0.278894, 0.283149, 0.287441, 0.291771, 0.296138, 0.300544, 0.304987, 0.309469, 0.313989,
    0.318547, 0.323143, 0.327778, 0.332452, 0.337164, 0.341914, 0.346704, 0.351533, 0.356400,
    0.361307, 0.366253, 0.371238, 0.376262, 0.381326, 0.386429, 0.391572, 0.396755, 0.401978,
    0.407240, 0.412543, 0.417885, 0.423268, 0.428690, 0.434154, 0.439657, 0.445201, 0.450786,
    0.456411, 0.462077, 0.467784, 0.473531, 0.479320, 0.485150, 0.491021, 0.496933, 0.502886,
    0.508881, 0.514918, 0.520996, 0.527115, 0.533276, 0.539479, 0.545724, 0.552011, 0.558340,
    0.564712, 0.571125, 0.577580, 0.584078, 0.590619, 0.597202, 0.603827, 0.610496, 0.617207,
    0.623960, 0.630757, 0.637597, 0.644480, 0.651406, 0.658375, 0.665387, 0.672443, 0.679542,
    0.686685, 0.693872, 0.701102, 0.708376, 0.715694, 0.723055, 0.730461, 0.737910, 0.745404,
    0.752942, 0.760525, 0.768151, 0.775822, 0.783538, 0.791298, 0.799103, 0.806952, 0.814847,
    0.822786, 0.830770, 0.838799, 0.846873, 0.854993, 0.863157, 0.871367, 0.879622, 0.887923,
    0.896269, 0.904661, 0.913099, 0.921582, 0.930111, 0.938686, 0.947307, 0.955973, 0.964686,
    0.973445, 0.982251, 0.991102, 1.000000,
};

bool palette_dark(uint32_t rgb)
{
    double l = 0.2126 * linear[rgb >> 16 & 255] + 0.7152 * linear[rgb >> 8 & 255] +
               0.0722 * linear[rgb & 255];
    /* contrast with white (1.05 / (l + 0.05)) above contrast with black ((l + 0.05) / 0.05) */
    return (l + 0.05) * (l + 0.05) < 1.05 * 0.05;
}

/* Differential: red grew, blue shrank, white unchanged; saturation relative to the largest
 * change of any stack. */
uint32_t palette_diff_colour(double delta, double maxdelta)
{
    if (delta == 0)
        return palette_rgb(255, 255, 255);
    double x = 210 * (maxdelta - fabs(delta)) / maxdelta;
    if (x < 0)
        x = 0;
    return delta > 0 ? palette_rgb(255, x, x) : palette_rgb(x, x, 255);
}

/* flamegraph.pl's background for each palette when --bgcolors is not given */
static const char *const default_bg[] = {
    [PAL_HOT] = "yellow",  [PAL_JAVA] = "yellow", [PAL_JS] = "yellow",   [PAL_PERL] = "yellow",
    [PAL_MEM] = "green",   [PAL_IO] = "blue",     [PAL_WAKEUP] = "blue", [PAL_CHAIN] = "blue",
    [PAL_RED] = "grey",    [PAL_GREEN] = "grey",  [PAL_BLUE] = "grey",   [PAL_AQUA] = "grey",
    [PAL_YELLOW] = "grey", [PAL_PURPLE] = "grey", [PAL_ORANGE] = "grey",
};

void palette_background(const render_opts *o, palette pal, const char **c1, const char **c2)
{
    const char *bg = o->bgcolors && *o->bgcolors ? o->bgcolors : default_bg[pal];
    if (strcmp(bg, "yellow") == 0)
        *c1 = "#eeeeee", *c2 = "#eeeeb0";
    else if (strcmp(bg, "blue") == 0)
        *c1 = "#eeeeee", *c2 = "#e0e0ff";
    else if (strcmp(bg, "green") == 0)
        *c1 = "#eef2ee", *c2 = "#e0ffe0";
    else if (strcmp(bg, "grey") == 0)
        *c1 = "#f8f8f8", *c2 = "#e8e8e8";
    else
        *c1 = *c2 = bg; /* validated by palette_bgcolor_valid: #rrggbb */
}

bool palette_bgcolor_valid(const char *s)
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

/* ---- consistent palette file (--cp): lines "name->rgb(r,g,b)" ------------------------------ */

void palette_file_free(palette_file *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->e[i].name);
    free(f->e);
}

int palette_file_add(palette_file *f, const char *name, size_t len, uint32_t colour)
{
    if (f->n == f->cap) {
        size_t c = f->cap ? f->cap * 2 : 256;
        palette_entry *q = realloc(f->e, c * sizeof *q);
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
    f->e[f->n++] = (palette_entry){s, len, colour};
    return 0;
}

static int palette_entry_cmp(const void *a, const void *b)
{
    const palette_entry *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A missing file is an empty palette (it is created on write). Malformed lines are skipped. */
int palette_file_read(palette_file *f, const char *path, flame_err *err)
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
        if (palette_file_add(f, line, (size_t)(arrow - line), palette_rgb(r, g, b)) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    qsort(f->e, f->n, sizeof *f->e, palette_entry_cmp);
    return 0;
}

const palette_entry *palette_file_find(const palette_file *f, const char *s, size_t n)
{
    palette_entry key = {(char *)s, n, 0};
    return bsearch(&key, f->e, f->n, sizeof *f->e, palette_entry_cmp);
}

static int palette_file_write_cb(void *ctx, FILE *out, flame_err *err)
{
    (void)err;
    palette_file *f = ctx;
    const palette_entry *prev = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const palette_entry *e = &f->e[i];
        if ((prev && palette_entry_cmp(prev, e) == 0) || memchr(e->name, '\n', e->len))
            continue; /* duplicates (file + profile), and names the format cannot hold */
        fwrite(e->name, 1, e->len, out);
        fprintf(out, "->rgb(%u,%u,%u)\n", e->colour >> 16, (e->colour >> 8) & 255, e->colour & 255);
        prev = e;
    }
    return 0;
}

/* Written atomically, so a crash never leaves half a palette. */
int palette_file_write(palette_file *f, const char *path, flame_err *err)
{
    qsort(f->e, f->n, sizeof *f->e, palette_entry_cmp);
    if (atomic_write_file(path, palette_file_write_cb, f, err) < 0)
        return flame_wrap(err, "palette file");
    return 0;
}
