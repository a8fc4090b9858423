/* libFuzzer harness: `perf script` text -> folder (flame/fold.h). The first byte picks the
 * options (fuzz_fold_compat is this file built with FUZZ_COMPAT: compat mode always on), the rest
 * is fed line by line, each line in an exact-size buffer. Checks that what comes out is a
 * well-formed folded stack that fits the sidecar protocol's 1 MiB line, and that the folder's
 * profile holds the same stacks and renders. */
#include "fuzz/fuzz.h"

#include "flame/fold.h"
#include "flame/render.h"

static const char *root_for(void *ctx, long pid)
{
    (void)ctx;
    return pid % 3 == 0 ? NULL : pid % 3 == 1 ? "java-1 <a&b>" : "jvm;with;semis";
}

static void feed_line(void *ctx, const char *line, size_t len)
{
    flame_err err = FLAME_ERR_INIT;
    /* Errors are fine (bad input); crashes and broken invariants are not. */
    (void)folder_feed(ctx, line, len, &err);
}

typedef struct seen {
    unsigned long long n;
    bool periods; /* counts are summed periods: a sample of period 0 adds a stack with count 0,
                   * as stackcollapse-perf.pl does */
} seen;

static int check_stack(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    seen *s = ctx;
    FUZZ_ASSERT(len > 0);
    FUZZ_ASSERT(count > 0 || s->periods);
    FUZZ_ASSERT(!memchr(stack, '\n', len));
    FUZZ_ASSERT(len + 32 <= (1u << 20)); /* "F " + stack + " " + count fits a protocol line */
    s->n++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t bits = data[0];
    fold_opts o = {
        .pid = bits & 1,
        .tid = bits & 2,
        .kernel = bits & 4,
        .jit = bits & 8,
        .addrs = bits & 16,
        .signatures = bits & 32,
        .inline_frames = bits & 64,
        .period = bits & 128,
        .root_for_pid = (bits & 3) == 3 ? root_for : NULL,
    };
#ifdef FUZZ_COMPAT
    o.compat = true;
    /* compat has no root frames or inline splitting, but they must not matter: leave them. */
    o.event_filter = (bits & 0x30) == 0x30 ? "cycles" : NULL;
#endif
    folder *f = folder_new(&o);
    FUZZ_ASSERT(f);
    fuzz_lines(data + 1, size - 1, feed_line, f);
    flame_err err = FLAME_ERR_INIT;
    if (folder_finish(f, &err) == 0) {
        seen s = {.periods = o.period || o.compat};
        FUZZ_ASSERT(folder_each(f, check_stack, &s) == 0);
        fold_stats st;
        folder_get_stats(f, &st);
        FUZZ_ASSERT(s.n == st.stacks);
        FILE *sink = fuzz_sink();
        (void)folder_write(f, sink, &err);
        /* the profile the folder counted into holds exactly those stacks, and renders */
        const profile *p = folder_profile(f);
        FUZZ_ASSERT(p && profile_stacks(p) == st.stacks);
        if (st.stacks) {
            render_opts ro;
            render_opts_default(&ro);
            ro.embed_limit = 1 << 20;
            (void)render_svg(p, &ro, sink, &err);
        }
        fclose(sink);
    }
    folder_free(f);
    return 0;
}
