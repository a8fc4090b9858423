/* flame/profile_view.c: the two stack orders. Text order (profile_write_folded, the folder:
 * stackcollapse-perf.pl's bytewise `sort` of "a;b;c") is not frame order (diff_write_folded,
 * the renderers: names compared whole): "a b;c" < "a;b" by text (' ' < ';') but "a" < "a b" by
 * frames. Checked on the cases that tell them apart and on random stacks of names that are
 * prefixes of each other and end in the bytes around ';'. */
#include <stdlib.h>
#include <string.h>

#include "flame/diff.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static int out_frames(const void *p, const void *arg, FILE *out, flame_err *err)
{
    (void)arg;
    return diff_write_folded(p, out, err);
}

static char *written(const profile *p, bool frames)
{
    return out_str(frames ? out_frames : out_folded, p, NULL, NULL);
}

/* Compare two stacks (the text before the count) bytewise, or frame by frame. */
static int cmp_text(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

static int cmp_frames(const char *a, size_t na, const char *b, size_t nb)
{
    for (;;) {
        const char *ea = memchr(a, ';', na), *eb = memchr(b, ';', nb);
        size_t la = ea ? (size_t)(ea - a) : na, lb = eb ? (size_t)(eb - b) : nb;
        int c = cmp_text(a, la, b, lb);
        if (c)
            return c;
        if (!ea || !eb)
            return (ea != NULL) - (eb != NULL);
        a = ea + 1, na -= la + 1;
        b = eb + 1, nb -= lb + 1;
    }
}

/* Every line's stack strictly after the previous one's; the number of lines. */
static size_t sorted_lines(const char *s, bool frames, size_t *bad)
{
    const char *prev = NULL;
    size_t prev_len = 0, n = 0;
    *bad = 0;
    for (const char *line = s; *line;) {
        const char *nl = strchr(line, '\n');
        const char *sp = memrchr(line, ' ', (size_t)(nl - line));
        size_t len = (size_t)(sp - line);
        if (prev && (frames ? cmp_frames(prev, prev_len, line, len)
                            : cmp_text(prev, prev_len, line, len)) >= 0)
            (*bad)++;
        prev = line, prev_len = len;
        n++;
        line = nl + 1;
    }
    return n;
}

static void test_cases(void)
{
    profile *p = load_str("a;b 1\na b;c 2\na 3\na:;x 4\na<;y 5\nab 6\na;a 7\n");
    char *text = p ? written(p, false) : NULL, *frames = p ? written(p, true) : NULL;
    is_str(text, "a 3\na b;c 2\na:;x 4\na;a 7\na;b 1\na<;y 5\nab 6\n",
           "text order: a prefix name is followed by ';' (after ' ' and ':', before '<')");
    is_str(frames, "a 3\na;a 7\na;b 1\na b;c 2\na:;x 4\na<;y 5\nab 6\n",
           "frame order: whole names, a name before its extensions");
    free(text);
    free(frames);
    profile_free(p);
    p = load_str("x;a!;z 1\nx;a;z 2\nx;a 3\nx 4\n");
    text = p ? written(p, false) : NULL;
    is_str(text, "x 4\nx;a 3\nx;a!;z 1\nx;a;z 2\n", "the stack that ends is first; '!' < ';'");
    free(text);
    profile_free(p);
}

static void test_random(void)
{
    /* names that are prefixes of each other, extended by the bytes around ';' (0x3b); none ends
     * in a blank, which a folded line cannot carry before its count */
    static const char *const names[] = {"a",  "a  c", "a b", "a!", "a:",    "a<",       "a=",
                                        "ab", "abc",  "",    "b",  "a\x7f", "\xc3\xa9", "a:b"};
    const size_t nn = sizeof names / sizeof *names;
    profile *p = profile_new();
    unsigned long long seed = 42;
    size_t added = 0;
    for (int i = 0; i < 20000; i++) {
        char stack[256];
        size_t len = 0;
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int depth = 1 + (int)((seed >> 33) % 5);
        for (int d = 0; d < depth; d++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            const char *nm = names[(seed >> 33) % nn];
            if (d)
                stack[len++] = ';';
            memcpy(stack + len, nm, strlen(nm));
            len += strlen(nm);
        }
        if (len && profile_add(p, stack, len, 1, PROFILE_ONE_COLUMN) == 0)
            added++;
    }
    ok(added > 19000, "random stacks added (%zu)", added);
    size_t bad;
    char *text = written(p, false);
    size_t lines = text ? sorted_lines(text, false, &bad) : 0;
    is_int(lines, profile_stacks(p), "text order: one line per stack");
    is_int(text ? bad : 1, 0, "text order: every line bytewise after the one before");
    char *frames = written(p, true);
    lines = frames ? sorted_lines(frames, true, &bad) : 0;
    is_int(lines, profile_stacks(p), "frame order: one line per stack");
    is_int(frames ? bad : 1, 0, "frame order: every line after the one before, frame by frame");
    ok(text && frames && strcmp(text, frames) != 0, "and the two orders differ on these stacks");
    /* the text order is what the folder writes: reading it back gives it again */
    profile *q = text ? load_str(text) : NULL;
    char *again = q ? written(q, false) : NULL;
    ok(again && text && strcmp(again, text) == 0, "written text reads back to the same text");
    if (again && text && strcmp(again, text)) {
        size_t i = 0;
        while (again[i] == text[i])
            i++;
        printf("#   differ at byte %zu: '%.40s' vs '%.40s'\n", i, again + i, text + i);
    }
    free(again);
    profile_free(q);
    free(text);
    free(frames);
    profile_free(p);
}

int main(void)
{
    test_cases();
    test_random();
    return tap_done();
}
