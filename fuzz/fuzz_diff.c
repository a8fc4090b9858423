/* libFuzzer harness: two folded profiles (a user's `docker flame diff A B` / `merge`) -> the
 * differential and merge code (flame/diff.h): union, normalisation, both views, rendering of the
 * view, folded output, the movers. Input: one options byte, BEFORE, a NUL byte, AFTER.
 * Invariant: the forward view's AFTER total is the after profile's total. */
#include "fuzz/fuzz.h"

#include <math.h>

#include "flame/diff.h"
#include "flame/profile.h"
#include "flame/render.h"

static profile *load(const uint8_t *data, size_t n)
{
    profile *p = profile_new();
    FUZZ_ASSERT(p);
    char *buf = fuzz_exact(data, n);
    FILE *in = fmemopen(buf, n ? n : 1, "r");
    FUZZ_ASSERT(in);
    if (!n)
        fgetc(in);
    flame_err err = FLAME_ERR_INIT;
    int rc = profile_load(p, in, "fuzz", &err);
    fclose(in);
    free(buf);
    if (rc < 0 || profile_is_diff(p)) {
        profile_free(p);
        return NULL;
    }
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t bits = data[0];
    data++, size--;
    const uint8_t *z = memchr(data, '\0', size);
    if (!z)
        return 0;
    size_t na = (size_t)(z - data);
    diff_opts o = {
        .normalize = (enum diff_norm)(bits % 3), .strip_hex = bits & 4, .exact = bits & 128};
    profile *a = load(data, na);
    profile *b = load(z + 1, size - na - 1);
    if (!a || !b) {
        profile_free(a);
        profile_free(b);
        return 0;
    }
    flame_err err = FLAME_ERR_INIT;
    FILE *sink = fuzz_sink();
    if (bits & 64) { /* merge instead */
        profile *in[2] = {a, b}, *m = NULL;
        if (diff_merge(in, 2, bits & 8, bits & 128, &m, &err) == 0) {
            (void)profile_write_folded(m, sink, &err);
            profile_free(m);
        }
        fclose(sink);
        return 0;
    }
    double after_total = profile_total(b);
    diff *d = NULL;
    if (diff_new(a, b, &o, &d, &err) == 0) {
        double t = diff_total_after(d);
        FUZZ_ASSERT(t == after_total || fabs(t - after_total) <= 1e-9 * fabs(after_total));
        const profile *v = diff_view(d, bits & 8);
        FUZZ_ASSERT(v);
        render_opts ro;
        render_opts_default(&ro);
        ro.negate = bits & 8;
        ro.embed_limit = 1 << 20;
        (void)render_svg(v, &ro, sink, &err);
        (void)diff_write_folded(v, sink, &err);
        diff_movers_opts mo = {.inclusive = bits & 16, .all_frames = bits & 32};
        diff_mover g[5], s[5];
        size_t ng, ns;
        if (diff_movers(d, &mo, 5, g, &ng, s, &ns, &err) == 0) {
            FUZZ_ASSERT(ng <= 5 && ns <= 5);
            for (size_t i = 0; i < ng; i++)
                FUZZ_ASSERT(g[i].delta_pts >= MOVER_MIN_PTS &&
                            (i == 0 || g[i].delta_pts <= g[i - 1].delta_pts));
            for (size_t i = 0; i < ns; i++)
                FUZZ_ASSERT(s[i].delta_pts <= -MOVER_MIN_PTS &&
                            (i == 0 || s[i].delta_pts >= s[i - 1].delta_pts));
            /* a method's hosts split its net share: they add up to it */
            for (size_t i = 0; i < ng + ns; i++) {
                const diff_mover *x = i < ng ? &g[i] : &s[i - ng];
                double sb = 0;
                for (size_t k = 0; k < x->nhosts; k++)
                    sb += x->hosts[k].after_pct;
                FUZZ_ASSERT(x->nhosts == 0 || fabs(sb - x->after_pct) <= 1e-6 * (1 + x->after_pct));
            }
        }
        diff_free(d);
    }
    fclose(sink);
    return 0;
}
