/* Unit tests for flame/profile.c: parsing folded text, summing, two columns, errors, folded
 * output order, the SVG round trip (top self frames: flame_methods.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame/diff.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static size_t folded_len; /* size of the last folded_str() result (names may hold NUL) */

static char *folded_str(const profile *p)
{
    return out_str(out_folded, p, NULL, &folded_len);
}

static void expect_error(const char *text, size_t len, const char *want, const char *what)
{
    flame_err err = FLAME_ERR_INIT;
    profile *p = load_text(text, len, &err);
    ok(p == NULL && err.code == FLAME_EXIT_ERROR, "%s: rejected", what);
    ok(strstr(err.msg, want) != NULL, "%s: message says '%s'", what, want);
    if (!strstr(err.msg, want))
        printf("#   got: %s\n", err.msg);
    profile_free(p);
}

static void test_parse(void)
{
    profile *p = load_str("a;b;c 10\na;b 5\r\n\n   \na;b;c 2\nx  7  \n");
    ok(p != NULL, "simple folded input loads (CRLF, blank lines, trailing spaces)");
    if (!p)
        return;
    is_int(profile_stacks(p), 3, "identical stacks are summed");
    ok(profile_total(p) == 24, "total is the sum of counts");
    ok(!profile_is_diff(p), "one column is not a differential");
    char *s = folded_str(p);
    is_str(s, "a;b 5\na;b;c 12\nx 7\n", "folded output sums and sorts");
    free(s);
    profile_free(p);

    /* prof_format_count writes an exponent beyond 2^53; what we write must read back. */
    p = load_str("big 1e+20\nsmall 2.5e-07\n");
    ok(p != NULL && profile_total(p) == 1e20 + 2.5e-07, "exponent counts (as we write them) load");
    s = p ? folded_str(p) : NULL;
    profile *q = s ? load_str(s) : NULL;
    ok(q != NULL && profile_total(q) == profile_total(p), "and round-trip through folded text");
    free(s);
    profile_free(q);
    profile_free(p);

    p = load_str("a b c;d e 3\n");
    ok(p && profile_stacks(p) == 1, "frames may contain spaces");
    s = p ? folded_str(p) : NULL;
    is_str(s, "a b c;d e 3\n", "spaces kept in frame names");
    free(s);
    profile_free(p);

    p = load_str("a;b 1.5\na;b 2.25\n");
    s = p ? folded_str(p) : NULL;
    is_str(s, "a;b 3.75\n", "fractional counts are summed");
    free(s);
    profile_free(p);
}

/* Lines share leading frames with the line before (reused, not re-interned): prefixes,
 * extensions, duplicates, empty frames, a frame that only starts like the previous one. */
static void test_prefix_reuse(void)
{
    profile *p = load_str("a;b;c 1\na;b 2\na;bc 3\na;b;c 4\na;b;c;d 5\na 6\na;;b 7\na; 8\n"
                          "a;b;c 9\nab;c 10\n");
    char *s = p ? folded_str(p) : NULL;
    is_str(s, "a 6\na; 8\na;;b 7\na;b 2\na;b;c 14\na;b;c;d 5\na;bc 3\nab;c 10\n",
           "stacks sharing prefixes are split and summed right");
    is_int(p ? profile_stacks(p) : 0, 8, "eight distinct stacks");
    free(s);
    profile_free(p);
}

static void test_two_columns(void)
{
    profile *p = load_str("a;b 10 12\na;c 5 0\na;b 1 1\n");
    ok(p && profile_is_diff(p), "two count columns make a differential");
    if (!p)
        return;
    ok(profile_total(p) == 13, "total is the sum of the last column");
    ok(profile_total_before(p) == 16, "total_before is the sum of the first column");
    char *s = folded_str(p);
    is_str(s, "a;b 11 13\na;c 5 0\n", "both columns written back");
    free(s);
    profile_free(p);

    expect_error("a;b 10 12\na;c 5\n", 16, "line 2: one count column",
                 "a one-column line after two-column lines");
    /* after a one-column first line, "x 1 2" is the stack "x 1" with count 2 */
    p = load_str("a 3\nx 1 2\n");
    s = p ? folded_str(p) : NULL;
    is_str(s, "a 3\nx 1 2\n", "the first line decides the number of columns");
    free(s);
    profile_free(p);
}

static void test_errors(void)
{
    expect_error("", 0, "input: no stacks", "empty input");
    expect_error("\n\n  \n", 5, "no stacks", "blank input");
    expect_error("a;b 1\nfoo bar\n", 14, "input: line 2: no count", "missing count");
    expect_error("a;b\n", 4, "line 1: no count", "no count at all");
    expect_error("a;b -3\n", 7, "line 1: no count", "negative count");
    expect_error("a;b 1e\n", 7, "line 1: no count", "exponent without digits");
    expect_error("a;b 1e5x\n", 9, "line 1: no count", "exponent with trailing junk");
    expect_error("a;b nan\n", 8, "line 1: no count", "nan count");
    expect_error(" 5\n", 3, "line 1: empty stack", "empty stack");

    size_t big = PROFILE_MAX_LINE + 10;
    char *text = malloc(big + 4);
    memset(text, 'x', big);
    memcpy(text + big, " 1\n", 3);
    expect_error(text, big + 3, "line 1: longer than", "overlong line is bounded");
    free(text);

    /* depth bound: 8192 frames pass, 8193 do not */
    for (int depth = PROFILE_MAX_DEPTH; depth <= PROFILE_MAX_DEPTH + 1; depth++) {
        char *deep = malloc((size_t)depth * 2 + 8);
        size_t k = 0;
        for (int i = 0; i < depth; i++) {
            deep[k++] = i ? ';' : 'r';
            if (i)
                deep[k++] = 'a';
        }
        memcpy(deep + k, " 1\n", 3);
        flame_err e2 = FLAME_ERR_INIT;
        profile *dp = load_text(deep, k + 3, &e2);
        if (depth == PROFILE_MAX_DEPTH)
            ok(dp != NULL, "a stack of PROFILE_MAX_DEPTH frames loads");
        else
            ok(!dp && strstr(e2.msg, "line 1: more than 8192 frames"), "deeper stacks rejected");
        profile_free(dp);
        free(deep);
    }

    flame_err err = FLAME_ERR_INIT;
    profile *p = profile_new();
    ok(profile_load_path(p, "/nonexistent/x.folded", &err) < 0 &&
           strstr(err.msg, "/nonexistent/x.folded: No such file"),
       "missing file named in the error");
    profile_free(p);

    const char *svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n";
    expect_error(svg, strlen(svg), "SVG without docker-flame data", "a foreign SVG");
}

static void test_add_api(void)
{
    profile *p = profile_new();
    ok(profile_add(p, "a;b", 3, 4, PROFILE_ONE_COLUMN) == 0, "profile_add one column");
    ok(profile_add(p, "a;b", 3, 1, NAN) == 0, "NaN also means one column");
    errno = 0;
    ok(profile_add(p, "a;c", 3, 1, 2) < 0 && errno == EINVAL, "mixing columns is EINVAL");
    ok(profile_add(p, "", 0, 1, PROFILE_ONE_COLUMN) < 0 && errno == EINVAL, "empty stack EINVAL");
    ok(profile_add(p, "a", 1, -1, PROFILE_ONE_COLUMN) < 0, "negative count rejected");
    ok(profile_add(p, "a", 1, INFINITY, PROFILE_ONE_COLUMN) < 0, "infinite count rejected");
    ok(profile_total(p) == 5 && profile_stacks(p) == 1, "only valid adds counted");
    profile_free(p);
}

/* Stacks given as interned names add what their texts add (a store reader names a run's frames
 * once), mixed with texts in one profile; the same errors. */
static void test_add_names(void)
{
    profile *t = profile_new(), *p = profile_new();
    const char *texts[] = {"a;b;c", "a;b", "x", "a;b;c", "b;a"};
    double counts[] = {3, 4, 5, 6, 7};
    uint32_t a = profile_name(p, "a", 1), b = profile_name(p, "b", 1), c = profile_name(p, "c", 1),
             x = profile_name(p, "x", 1);
    ok(a != UINT32_MAX && b != a && profile_name(p, "a", 1) == a, "a name is interned once");
    uint32_t ids[5][3] = {{a, b, c}, {a, b}, {x}, {a, b, c}, {b, a}};
    size_t n[] = {3, 2, 1, 3, 2};
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        bad |= profile_add(t, texts[i], strlen(texts[i]), counts[i], PROFILE_ONE_COLUMN);
        /* texts and names alternate in p: the text path's reuse of the previous line's frames
         * must not take a stack added by names for its previous line */
        bad |= i % 2 ? profile_add(p, texts[i], strlen(texts[i]), counts[i], PROFILE_ONE_COLUMN)
                     : profile_add_names(p, ids[i], n[i], counts[i]);
    }
    ok(!bad, "every add succeeded");
    char *want = folded_str(t), *got = folded_str(p);
    is_str(got, want, "names add what texts add");
    is_str(got, "a;b 4\na;b;c 9\nb;a 7\nx 5\n", "summed and sorted");
    ok(profile_total(p) == profile_total(t) && profile_stacks(p) == 4, "same total and stacks");
    free(want);
    free(got);
    errno = 0;
    ok(profile_add_names(p, ids[0], 0, 1) < 0 && errno == EINVAL, "no frames: EINVAL");
    errno = 0;
    ok(profile_add_names(p, ids[0], 3, -1) < 0 && errno == EINVAL, "a negative count: EINVAL");
    uint32_t *deep = malloc((PROFILE_MAX_DEPTH + 1) * sizeof *deep);
    for (size_t i = 0; deep && i <= PROFILE_MAX_DEPTH; i++)
        deep[i] = a;
    errno = 0;
    ok(deep && profile_add_names(p, deep, PROFILE_MAX_DEPTH + 1, 1) < 0 && errno == E2BIG,
       "deeper than PROFILE_MAX_DEPTH: E2BIG");
    ok(deep && profile_add_names(p, deep, PROFILE_MAX_DEPTH, 1) == 0, "as deep as allowed: added");
    free(deep);
    profile *two = profile_new();
    ok(profile_add(two, "a", 1, 1, 2) == 0, "a two-column profile");
    uint32_t ta = profile_name(two, "a", 1);
    errno = 0;
    ok(profile_add_names(two, &ta, 1, 1) < 0 && errno == EINVAL, "names into two columns: EINVAL");
    profile_free(two);
    profile_free(t);
    profile_free(p);
}

/* stackcollapse-perf.pl order: bytewise over the whole line, so "a;b-x" sorts before "a;b;c". */
static void test_folded_order(void)
{
    profile *p = load_str("a;b;c 1\na;b-x 2\na;b 3\nZ 4\na;bb 5\n");
    char *s = p ? folded_str(p) : NULL;
    is_str(s, "Z 4\na;b 3\na;b-x 2\na;b;c 1\na;bb 5\n", "folded output in bytewise order");
    free(s);
    profile_free(p);
}

/* Output order does not depend on input order: inputs made of a few sorted runs (merged run by
 * run) and inputs with no order at all (sorted outright) both come out sorted, every stack once.
 * Checked for both sorts: bytewise (profile_write_folded) and by frame (diff_write_folded). */
static bool lines_sorted(const char *s, int want_lines)
{
    int n = 0;
    const char *prev = NULL;
    size_t prev_len = 0;
    for (const char *line = s; line && *line; n++) {
        const char *nl = strchr(line, '\n'), *sp = memchr(line, ' ', (size_t)(nl - line));
        size_t len = (size_t)(sp - line);
        if (prev) {
            int c = memcmp(prev, line, prev_len < len ? prev_len : len);
            if (c > 0 || (c == 0 && prev_len >= len))
                return false;
        }
        prev = line;
        prev_len = len;
        line = nl + 1;
    }
    return n == want_lines;
}

static void test_sort_runs(void)
{
    const int N = 9000;
    for (int runs = 1; runs <= 5; runs += 2) {
        profile *p = profile_new();
        /* run k holds the stacks i = k mod runs, ascending: runs interleave */
        for (int k = 0; k < runs; k++)
            for (int i = k; i < N; i += runs) {
                char st[64];
                int n = snprintf(st, sizeof st, "root;m%02d;f%05d", i / 1000, i);
                profile_add(p, st, (size_t)n, 1, PROFILE_ONE_COLUMN);
            }
        char *s = folded_str(p);
        ok(lines_sorted(s, N), "%d sorted run(s) in: bytewise output sorted", runs);
        free(s);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        flame_err err = FLAME_ERR_INIT;
        diff_write_folded(p, f, &err);
        fclose(f);
        ok(lines_sorted(buf, N), "%d sorted run(s) in: frame-wise output sorted", runs);
        free(buf);
        profile_free(p);
    }
    /* descending: every stack a run of its own, too many to merge run by run */
    profile *p = profile_new();
    for (int i = N - 1; i >= 0; i--) {
        char st[64];
        int n = snprintf(st, sizeof st, "root;m%02d;f%05d", i / 1000, i);
        profile_add(p, st, (size_t)n, 1, PROFILE_ONE_COLUMN);
    }
    char *s = folded_str(p);
    ok(lines_sorted(s, N), "descending input: output sorted");
    free(s);
    profile_free(p);
}

static void test_roundtrip(void)
{
    /* hostile names: markup, CDATA end, quotes, ampersands, control bytes, invalid UTF-8, a
     * NUL byte, a 100 kB name, a leading '<?xml' frame */
    char *big = malloc(100 * 1024 + 1);
    memset(big, 'N', 100 * 1024);
    big[100 * 1024] = '\0';
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    fprintf(f, "<?xml x;<script>alert(1)</script>;]]>;\"quoted\" 'single' &amp; & 3\n");
    fprintf(f, "ctl\x01\x02\x1b[0m;tab\there;bad\xff\xfe utf8;\xc3\x28;\xed\xa0\x80 7\n");
    fprintf(f, "%s;leaf 2\n", big);
    fprintf(f, "with");
    fputc('\0', f);
    fprintf(f, "nul;x 1\n");
    fprintf(f, "java;Work.step_[j];Lcom/x/Y;::m 0.125\n");
    fclose(f);
    free(big);

    flame_err err = FLAME_ERR_INIT;
    profile *p = load_text(text, tlen, &err);
    ok(p != NULL, "hostile folded input loads");
    if (!p) {
        printf("# %s\n", err.msg);
        free(text);
        return;
    }
    char *want = folded_str(p);
    size_t want_len = folded_len;
    render_opts o;
    render_opts_default(&o);
    size_t n;
    char *svg = render_str(p, &o, &n);
    size_t svg_len = n;
    ok(svg != NULL, "hostile profile renders");
    ok(svg && xml_well_formed(svg, n), "SVG of hostile names is well-formed XML");
    profile *q = svg ? load_text(svg, n, &err) : NULL;
    ok(q != NULL, "our SVG loads back");
    char *got = q ? folded_str(q) : NULL;
    ok(want && got && folded_len == want_len && memcmp(want, got, want_len) == 0,
       "SVG round trip gives the same folded stacks, byte for byte");
    ok(got && memmem(got, folded_len, "with\0nul;x 1\n", 13) != NULL,
       "a NUL byte inside a name survives the round trip");
    profile_free(q);
    free(got);

    /* differential round trip */
    profile *d = load_str("a;b 10 12\na;<c> 5 0.5\n");
    char *dwant = d ? folded_str(d) : NULL;
    char *dsvg = d ? render_str(d, &o, &n) : NULL;
    profile *d2 = dsvg ? load_text(dsvg, n, &err) : NULL;
    char *dgot = d2 ? folded_str(d2) : NULL;
    ok(d2 && profile_is_diff(d2) && dwant && dgot && strcmp(dwant, dgot) == 0,
       "differential SVG round trip");
    free(dwant);
    free(dsvg);
    free(dgot);
    profile_free(d);
    profile_free(d2);

    /* an SVG rendered without the data is refused with a clear message */
    o.embed_folded = false;
    char *bare = render_str(p, &o, &n);
    q = bare ? load_text(bare, n, &err) : NULL;
    ok(!q && strstr(err.msg, "without docker-flame data"), "--no-embed SVG cannot be read back");
    profile_free(q);
    free(bare);

    /* data over the embed limit is left out, and reading back says so */
    o.embed_folded = true;
    o.embed_limit = 100;
    bare = render_str(p, &o, &n);
    ok(bare && strstr(bare, "<!-- docker-flame-data omitted: ") &&
           !strstr(bare, "<metadata id=\"docker-flame-data\""),
       "data over the embed limit is left out with a comment");
    q = bare ? load_text(bare, n, &err) : NULL;
    ok(!q && strstr(err.msg, "written without its folded data"), "reading it back says why");
    profile_free(q);
    free(bare);

    /* corrupt embedded data */
    if (svg) {
        char *m = strstr(svg, "\nv1 ");
        if (m)
            m[1] = 'v', m[2] = '9';
        q = load_text(svg, svg_len, &err);
        ok(!q && strstr(err.msg, "bad docker-flame data header"), "corrupt data header reported");
        if (q || !strstr(err.msg, "header"))
            printf("#   got: %s\n", q ? "(loaded)" : err.msg);
        profile_free(q);
    }
    free(svg);
    free(want);
    free(text);
    profile_free(p);
}

static void test_keep_order(void)
{
    profile *p = profile_new();
    profile_keep_order(p, true);
    flame_err err = FLAME_ERR_INIT;
    const char *t = "a;b 1\na;c 1\na;b 1\na;b 2\n";
    FILE *f = fmemopen((void *)t, strlen(t), "r");
    ok(profile_load(p, f, "x", &err) == 0, "flame chart input loads");
    fclose(f);
    is_int(profile_stacks(p), 2, "stacks still summed");
    ok(profile_total(p) == 5, "total");
    profile_free(p);
}

int main(void)
{
    test_parse();
    test_prefix_reuse();
    test_two_columns();
    test_errors();
    test_add_api();
    test_add_names();
    test_folded_order();
    test_sort_runs();
    test_roundtrip();
    test_keep_order();
    return tap_done();
}
