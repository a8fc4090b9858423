/* Randomised hostile input (deterministic seed): random bytes with many ';', spaces, digits and
 * newlines are loaded, rendered (every option family), exported and read back. Under ASan/UBSan
 * nothing may crash; what loads must render to well-formed XML and round-trip exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flame/pprof.h"
#include "flame/speedscope.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static char *random_input(size_t *len)
{
    static const char alphabet[] = ";;;;  0123456789.<>&\"']]\xff\xc3\xa9\x01\x00\t\r-_[jki]";
    size_t n = 1 + rnd(3000);
    char *s = malloc(n + 64);
    size_t k = 0;
    bool two = rnd(4) == 0;
    while (k < n) {
        /* mostly well-formed lines, so rendering is reached */
        size_t frames = 1 + rnd(12);
        for (size_t f = 0; f < frames && k < n; f++) {
            if (f)
                s[k++] = ';';
            size_t l = f ? rnd(6) : 1 + rnd(6); /* an empty stack is (rightly) an error */
            for (size_t i = 0; i < l && k < n; i++)
                s[k++] = rnd(3) ? (char)('a' + rnd(4)) : alphabet[rnd(sizeof alphabet - 1)];
        }
        k += (size_t)sprintf(s + k, two ? " %u %u\n" : " %u\n", rnd(50), rnd(50));
    }
    *len = k;
    return s;
}

int main(void)
{
    int loaded = 0, rendered = 0, well_formed = 0, round_trips = 0, pprof_ok = 0, runs = 300;
    for (int i = 0; i < runs; i++) {
        size_t len;
        char *in = random_input(&len);
        flame_err err = FLAME_ERR_INIT;
        profile *p = load_text(in, len, &err);
        if (!p && getenv("FUZZ_DEBUG"))
            printf("# %s\n", err.msg);
        if (p) {
            loaded++;
            render_opts o;
            render_opts_default(&o);
            o.colors = (const char *[]){"hot", "java", "js", "perl", "chain", "mem"}[rnd(6)];
            o.hash = rnd(2), o.reverse = rnd(2), o.inverted = rnd(2), o.negate = rnd(2);
            o.minwidth = rnd(2) ? 0 : 0.1;
            o.width = 100 + (int)rnd(1200);
            size_t n;
            char *svg = render_str(p, &o, &n);
            if (svg) {
                rendered++;
                if (i % 10 == 0 ? xml_well_formed(svg, n) : 1)
                    well_formed++;
                profile *q = load_text(svg, n, &err);
                char *a = NULL, *b = NULL;
                size_t al = 0, bl = 0;
                FILE *fa = open_memstream(&a, &al), *fb = open_memstream(&b, &bl);
                profile_write_folded(p, fa, &err);
                if (q)
                    profile_write_folded(q, fb, &err);
                fclose(fa);
                fclose(fb);
                if (q && al == bl && memcmp(a, b, al) == 0)
                    round_trips++;
                FILE *devnull = fopen("/dev/null", "w");
                speedscope_export(p, "fuzz", devnull, &err);
                pprof_meta pm = {.layout = (enum pprof_layout)(i % 3), .container = "c"};
                pprof_ok += pprof_export(p, &pm, devnull, &err) == 0;
                fclose(devnull);
                free(a);
                free(b);
                profile_free(q);
                free(svg);
            }
            profile_free(p);
        }
        free(in);
    }
    printf("# %d inputs, %d loaded\n", runs, loaded);
    ok(loaded > runs / 2, "most random inputs load (%d of %d)", loaded, runs);
    is_int(rendered, loaded, "everything that loads renders");
    is_int(well_formed, rendered, "every checked SVG is well-formed XML");
    is_int(round_trips, rendered, "every SVG reads back to the same folded stacks");
    is_int(pprof_ok, rendered, "every profile exports as pprof");
    return tap_done();
}
