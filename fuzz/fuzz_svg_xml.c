/* libFuzzer harness: hostile frame names and titles -> render_svg must still be well-formed XML
 * with exactly our one <script> (no element or attribute injected from a name), and
 * speedscope_export must be valid JSON. Input: first byte = options, first line = title (the
 * plugin puts the container's name there), the rest = folded stacks. */
#include "fuzz/fuzz.h"

#include <jansson.h>

#include "flame/profile.h"
#include "flame/render.h"
#include "flame/speedscope.h"
#include "fuzz/xmlcheck.h"

static void add_line(void *ctx, const char *line, size_t len)
{
    flame_err err = FLAME_ERR_INIT;
    (void)profile_add_line(ctx, line, len, &err);
}

static void check_svg(const char *svg, size_t len)
{
    xmlcheck_counts cnt;
    size_t where;
    const char *why = xmlcheck(svg, len, &cnt, &where);
    if (why) {
        size_t from = where > 80 ? where - 80 : 0;
        fprintf(stderr, "fuzz: SVG not well-formed at byte %zu: %s: ...%.*s<HERE>%.*s...\n", where,
                why, (int)(where - from), svg + from, (int)(len - where < 80 ? len - where : 80),
                svg + where);
        abort();
    }
    FUZZ_ASSERT(cnt.scripts == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t bits = data[0];
    data++, size--;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t tl = nl ? (size_t)(nl - data) : size;
    char *title = fuzz_cstr(data, tl);
    profile *p = profile_new();
    FUZZ_ASSERT(p);
    if (nl)
        fuzz_lines(nl + 1, size - tl - 1, add_line, p);
    if (profile_stacks(p) == 0) {
        profile_free(p);
        free(title);
        return 0;
    }
    render_opts o;
    render_opts_default(&o);
    o.title = title;
    o.subtitle = (bits & 1) ? title : NULL;
    o.notes = (bits & 2) ? title : NULL;
    o.countname = (bits & 4) ? title : "samples";
    o.nametype = (bits & 8) ? title : "Function:";
    o.inverted = bits & 16;
    o.reverse = bits & 32;
    o.minwidth = (bits & 64) ? 0 : 0.1;
    o.embed_folded = !(bits & 128);
    flame_err err = FLAME_ERR_INIT;

    char *out = NULL;
    size_t out_len = 0;
    FILE *mem = open_memstream(&out, &out_len);
    FUZZ_ASSERT(mem);
    int rc = render_svg(p, &o, mem, &err);
    fclose(mem);
    if (rc == 0)
        check_svg(out, out_len);
    free(out);

    mem = open_memstream(&out, &out_len);
    FUZZ_ASSERT(mem);
    rc = speedscope_export(p, title, mem, &err);
    fclose(mem);
    if (rc == 0) {
        json_error_t je;
        json_t *j = json_loadb(out, out_len, JSON_ALLOW_NUL, &je);
        if (!j)
            fprintf(stderr, "fuzz: speedscope JSON invalid: %s at %d\n", je.text, je.position);
        FUZZ_ASSERT(j);
        json_decref(j);
    }
    free(out);
    profile_free(p);
    free(title);
    return 0;
}
