/* libFuzzer harness: folded stacks (1 or 2 count columns) -> profile (flame/profile.h), then
 * rendered (render_svg, speedscope_export, pprof_export) into a sink. The first byte picks how:
 * load the whole input with profile_load (fmemopen) or line by line with profile_add_line, and
 * which render options. Invariant: the folded text we write back loads again to the same stacks and
 * totals. */
#include "fuzz/fuzz.h"

#include <math.h>

#include "flame/methods.h"
#include "flame/pprof.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "flame/speedscope.h"

static void add_line(void *ctx, const char *line, size_t len)
{
    flame_err err = FLAME_ERR_INIT;
    (void)profile_add_line(ctx, line, len, &err);
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A token profile.c reads as a count: digits [. digits] [e|E [+|-] digits] (parse_count). */
static bool count_token(const char *s, size_t n)
{
    size_t i = 0;
    if (n == 0 || n > 64 || !digit(s[0]))
        return false;
    while (i < n && digit(s[i]))
        i++;
    if (i < n && s[i] == '.')
        for (i++; i < n && digit(s[i]); i++)
            ;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && digit(s[i]))
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

/* flamegraph.pl's format is ambiguous when a leaf name ends in " <number>": "a;f 2 3" is frame
 * "f 2" count 3 after single-column lines, but BEFORE 2 AFTER 3 at the start of a file. Such a
 * profile cannot round-trip; skip the check for it (the ambiguity is documented). */
/* The first line decides the column count on reading: is it "... <number> <count>"? */
static bool ambiguous(const char *txt, size_t len)
{
    const char *nl = memchr(txt, '\n', len);
    size_t b = nl ? (size_t)(nl - txt) : len;
    for (int tok = 0; tok < 2; tok++) {
        while (b > 0 && is_ws(txt[b - 1]))
            b--;
        size_t t = b;
        while (b > 0 && !is_ws(txt[b - 1]))
            b--;
        if (tok == 1 && b > 0 && count_token(txt + b, t - b))
            return true;
    }
    return false;
}

static bool same_total(double a, double b)
{
    return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t bits = data[0];
    data++, size--;
    profile *p = profile_new();
    FUZZ_ASSERT(p);
    profile_keep_order(p, bits & 1);
    flame_err err = FLAME_ERR_INIT;
    if (bits & 128) {
        fuzz_lines(data, size, add_line, p);
    } else {
        char *buf = fuzz_exact(data, size);
        FILE *in = fmemopen(buf, size ? size : 1, "r");
        FUZZ_ASSERT(in);
        if (!size)
            fgetc(in); /* fmemopen refuses size 0: read the one byte away */
        (void)profile_load(p, in, "fuzz", &err);
        fclose(in);
        free(buf);
    }
    if (profile_stacks(p) > 0) {
        render_opts o;
        render_opts_default(&o);
        o.flamechart = bits & 1;
        o.reverse = bits & 2;
        o.inverted = bits & 4;
        o.hash = bits & 8;
        o.colors = (bits & 16) ? "java" : (bits & 32) ? "mem" : "hot";
        o.negate = bits & 64;
        o.embed_limit = 1 << 20;
        FILE *sink = fuzz_sink();
        (void)render_svg(p, &o, sink, &err);
        (void)speedscope_export(p, "fuzz <&>", sink, &err);
        pprof_meta pm = {
            .layout = (enum pprof_layout)(bits % 3), .container = "c<&>", .jvm_pid = bits};
        (void)pprof_export(p, &pm, sink, &err);
        const char *names[4];
        double counts[4];
        (void)methods_top_self(p, 4, bits & 2, names, counts);
        fclose(sink);

        /* Round trip: folded text out, back in, same profile. */
        char *txt = NULL;
        size_t txt_len = 0;
        FILE *mem = open_memstream(&txt, &txt_len);
        FUZZ_ASSERT(mem);
        FUZZ_ASSERT(profile_write_folded(p, mem, &err) == 0);
        fclose(mem);
        if ((!profile_is_diff(p) && ambiguous(txt, txt_len))) {
            free(txt);
            profile_free(p);
            return 0;
        }
        profile *q = profile_new();
        FUZZ_ASSERT(q);
        FILE *in = fmemopen(txt, txt_len, "r");
        FUZZ_ASSERT(in);
        int rc = profile_load(q, in, "round-trip", &err);
        if (rc < 0)
            fprintf(stderr, "fuzz: round trip: %s\n", err.msg);
        FUZZ_ASSERT(rc == 0);
        FUZZ_ASSERT(profile_stacks(q) == profile_stacks(p));
        FUZZ_ASSERT(profile_is_diff(q) == profile_is_diff(p));
        FUZZ_ASSERT(same_total(profile_total(q), profile_total(p)));
        fclose(in);
        free(txt);
        profile_free(q);
    }
    profile_free(p);
    return 0;
}
