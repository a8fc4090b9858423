/* The folder counts into a profile (flame/fold.c): its text must be the text 5a89dd3's folder
 * wrote with its own table (golden files made by that version, on stacks whose text order is
 * not their frame order), and folder_profile() must be exactly the profile that loading that
 * text makes (same stacks, counts, names: the same SVG and speedscope bytes), including after
 * samples were dropped or cut, whose names must not linger. */
#include <stdlib.h>
#include <string.h>

#include "tests/unit/fold_test_util.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

/* A folder fed with text (line by line) and finished. */
static folder *folded(const char *text, const fold_opts *o)
{
    folder *f = folder_new(o);
    flame_err err = FLAME_ERR_INIT;
    for (const char *p = text; f && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (folder_feed(f, p, n, &err) < 0)
            abort();
        p += n + (nl ? 1 : 0);
    }
    if (!f || folder_finish(f, &err) < 0)
        abort();
    return f;
}

static char *written(const folder *f)
{
    return out_str(out_folder, f, NULL, NULL);
}

static char *exported(const profile *p, bool svg)
{
    render_opts ro;
    render_opts_default(&ro);
    return svg ? out_str(out_svg, p, &ro, NULL) : out_str(out_speedscope, p, "x", NULL);
}

/* folder_profile(f) against profile_load(folder_write(f)). */
static void same_as_text(folder *f, const char *what)
{
    char *text = written(f);
    const profile *p = folder_profile(f);
    profile *q = text && *text ? load_str(text) : NULL;
    ok(p && q, "%s: a profile, and its text loads", what);
    if (!p || !q) {
        free(text);
        profile_free(q);
        return;
    }
    char *pt = out_str(out_folded, p, NULL, NULL);
    is_str(pt, text, "%s: profile_write_folded(folder_profile) = folder_write", what);
    is_int(profile_stacks(p), profile_stacks(q), "%s: same stacks", what);
    ok(profile_total(p) == profile_total(q), "%s: same total", what);
    char *a = exported(p, true), *b = exported(q, true);
    ok(a && b && strcmp(a, b) == 0, "%s: the same SVG (names and embedded data too)", what);
    free(a), free(b);
    a = exported(p, false), b = exported(q, false);
    ok(a && b && strcmp(a, b) == 0, "%s: the same speedscope (its frame table: no lost name)",
       what);
    free(a), free(b);
    free(pt);
    free(text);
    profile_free(q);
}

static void test_golden(void)
{
    char *in = slurp("tests/data/fold/text-order.txt", NULL);
    static const struct {
        const char *file;
        fold_opts o;
    } cases[] = {
        {"default", {.inline_frames = true}},
        {"compat", {.compat = true}},
        {"compat-pid", {.compat = true, .pid = true}},
        {"tid-all", {.inline_frames = true, .tid = true, .kernel = true, .jit = true}},
    };
    for (size_t i = 0; in && i < sizeof cases / sizeof *cases; i++) {
        char path[128];
        snprintf(path, sizeof path, "tests/data/fold/text-order.%s.folded", cases[i].file);
        char *want = slurp(path, NULL);
        folder *f = folded(in, &cases[i].o);
        char *got = written(f);
        ok(want && got && strcmp(got, want) == 0, "%s: the text of 5a89dd3's folder",
           cases[i].file);
        if (want && got && strcmp(got, want))
            show_first_diff(got, want);
        same_as_text(f, cases[i].file);
        folder_free(f);
        free(got);
        free(want);
    }
    ok(in != NULL, "tests/data/fold/text-order.txt read");
    free(in);
}

static void test_dropped_names(void)
{
    /* compat drops a last sample without a blank line after it: its frames were interned */
    const char *unterminated = "a 1 1.000001: 1 cycles:\n\t1 kept (/x)\n\n"
                               "a 1 1.000002: 1 cycles:\n\t1 dropped (/x)\n\t2 alsodropped (/x)\n";
    fold_opts compat = {.compat = true};
    folder *f = folded(unterminated, &compat);
    same_as_text(f, "compat, last sample dropped");
    char *sc = exported(folder_profile(f), false);
    ok(sc && !strstr(sc, "dropped"), "no name of the dropped sample in the profile");
    free(sc);
    folder_free(f);

    /* a stack past FOLD_MAX_FRAMES loses its leaf-most half: those names go too */
    size_t cap = (FOLD_MAX_FRAMES + 100) * 24 + 64, n = 0;
    char *deep = malloc(cap);
    n += (size_t)snprintf(deep, cap, "d 1 1.0: 1 cycles:\n");
    for (int i = FOLD_MAX_FRAMES + 50; i > 0; i--) /* leaf first: the highest numbers go */
        n += (size_t)snprintf(deep + n, cap - n, "\t1 fn%d (/x)\n", i);
    snprintf(deep + n, cap - n, "\n");
    fold_opts ours = {.inline_frames = true};
    f = folded(deep, &ours);
    fold_stats st;
    folder_get_stats(f, &st);
    is_int(st.truncated, 1, "the deep stack was cut");
    same_as_text(f, "cut stack");
    sc = exported(folder_profile(f), false);
    ok(sc && strstr(sc, "\"fn1\"") && !strstr(sc, "\"fn8240\""), "cut frames' names are gone");
    free(sc);
    free(deep);
    folder_free(f);
}

static void test_steal(void)
{
    fold_opts ours = {.inline_frames = true};
    folder *f = folded("a 1 1.0: 1 cycles:\n\t1 f (/x)\n\n", &ours);
    profile *p = folder_steal_profile(f);
    ok(p && profile_stacks(p) == 1 && profile_total(p) == 1, "stolen: the folded stacks");
    fold_stats st;
    folder_get_stats(f, &st);
    is_int(st.stacks, 0, "the folder goes on empty");
    flame_err err = FLAME_ERR_INIT;
    const char *more[] = {"b 2 2.0: 1 cycles:", "\t1 g (/x)", ""};
    for (size_t i = 0; i < 3; i++)
        folder_feed(f, more[i], strlen(more[i]), &err);
    char *text = written(f);
    is_str(text, "b;g 1\n", "and folds on into a new profile");
    free(text);
    profile_free(p);
    folder_free(f);
}

static void test_counts(void)
{
    /* summed periods are doubles in the profile: exact below 2^53, rounded above, saturated at
     * 2^64 - 1 as the old unsigned long long sums were */
    fold_opts period = {.period = true};
    folder *f = folded("a 1 1.0: 4503599627370496 cycles:\n\t1 f (/x)\n\n"
                       "a 1 1.1: 4503599627370495 cycles:\n\t1 f (/x)\n\n"
                       "b 1 1.2: 4503599627370496 cycles:\n\t1 f (/x)\n\n"
                       "b 1 1.3: 4503599627370497 cycles:\n\t1 f (/x)\n\n"
                       "c 1 1.4: 99999999999999999999999 cycles:\n\t1 f (/x)\n\n",
                       &period);
    char *text = written(f);
    is_str(text, "a;f 9007199254740991\nb;f 9007199254740992\nc;f 18446744073709551615\n",
           "2^53 - 1 exact; 2^53 + 1 rounds to 2^53; a saturated period stays 2^64 - 1");
    free(text);
    folder_free(f);
}

static const char *root_of(void *ctx, long pid)
{
    (void)ctx;
    return pid == 1 ? "" : pid == 2 ? "jvm;2\x01" : NULL;
}

static void test_roots(void)
{
    fold_opts o = {.inline_frames = true, .root_for_pid = root_of};
    folder *f = folded("a 1 1.0: 1 cycles:\n\t1 f (/x)\n\nb 2 2.0: 1 cycles:\n\t1 g (/x)\n\n"
                       "c 3 3.0: 1 cycles:\n\t1 h (/x)\n\n",
                       &o);
    char *text = written(f);
    is_str(text, "a;f 1\nc;h 1\njvm:2?;b;g 1\n",
           "an empty root is no frame; a root's ';' and control bytes are replaced");
    free(text);
    same_as_text(f, "roots");
    folder_free(f);
}

int main(void)
{
    test_roots();
    test_golden();
    test_dropped_names();
    test_steal();
    test_counts();
    return tap_done();
}
