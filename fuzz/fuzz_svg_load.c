/* libFuzzer harness: reading a docker-flame SVG back (profile_load on SVG input: the folded data
 * embedded in <metadata id="docker-flame-data">, names in base64, stacks as prefix-shared index
 * lists). The input is what follows a fixed SVG opening, so mutations spend their time in the
 * embedded data. Invariant: what loads renders to an SVG that loads again to the same profile. */
#include "fuzz/fuzz.h"

#include <math.h>

#include "flame/profile.h"
#include "flame/render.h"

static const char svg_open[] = "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\">\n";

static int load(profile *p, const char *buf, size_t len, flame_err *err)
{
    FILE *in = fmemopen((void *)buf, len, "r");
    FUZZ_ASSERT(in);
    int rc = profile_load(p, in, "fuzz.svg", err);
    fclose(in);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = sizeof svg_open - 1 + size;
    char *buf = malloc(n);
    FUZZ_ASSERT(buf);
    memcpy(buf, svg_open, sizeof svg_open - 1);
    if (size)
        memcpy(buf + sizeof svg_open - 1, data, size);
    profile *p = profile_new();
    FUZZ_ASSERT(p);
    flame_err err = FLAME_ERR_INIT;
    if (load(p, buf, n, &err) == 0 && profile_stacks(p) > 0) {
        render_opts o;
        render_opts_default(&o);
        o.embed_limit = 0;
        char *svg = NULL;
        size_t svg_len = 0;
        FILE *mem = open_memstream(&svg, &svg_len);
        FUZZ_ASSERT(mem);
        int rendered = render_svg(p, &o, mem, &err);
        fclose(mem);
        if (rendered < 0) {
            /* the one refusal a loaded profile may get: nothing to draw */
            FUZZ_ASSERT(profile_total(p) == 0);
            free(svg);
            profile_free(p);
            free(buf);
            return 0;
        }
        profile *q = profile_new();
        FUZZ_ASSERT(q);
        int rc = load(q, svg, svg_len, &err);
        if (rc < 0)
            fprintf(stderr, "fuzz: re-reading our own SVG: %s\n", err.msg);
        FUZZ_ASSERT(rc == 0);
        FUZZ_ASSERT(profile_stacks(q) == profile_stacks(p));
        FUZZ_ASSERT(profile_is_diff(q) == profile_is_diff(p));
        double a = profile_total(p), b = profile_total(q);
        FUZZ_ASSERT(a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)));
        profile_free(q);
        free(svg);
    }
    profile_free(p);
    free(buf);
    return 0;
}
