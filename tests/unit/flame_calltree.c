/* flame/calltree.c: the call tree the serve page draws. Nodes in the SVG's order and places,
 * totals and self, the node budget with "other" per parent (what was cut, said), the subtree of
 * a path, the exact search share, the sandwich (callers and callees of a function, recursion and
 * annotations), colours as the CLI's, two columns, copies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame/calltree.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static calltree build(const profile *p, size_t max_nodes, const char *path)
{
    calltree t;
    flame_err err = FLAME_ERR_INIT;
    calltree_opts o = {.max_nodes = max_nodes, .path = path};
    if (calltree_build(p, &o, &t, &err) < 0) {
        printf("# build failed: %s\n", err.msg);
        abort();
    }
    return t;
}

/* "name/total/self@x" per node in preorder, names as shown, "other" as "~N" (N nodes). */
static char *shape(const calltree *t)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    for (size_t i = 0; i < t->n; i++) {
        const calltree_node *nd = &t->node[i];
        size_t len, shown;
        const char *s = calltree_name(t, nd, &len, &shown);
        if (i)
            fputc(' ', f);
        if (s)
            fprintf(f, "%.*s", (int)shown, s);
        else
            fprintf(f, "~%u", nd->cut);
        fprintf(f, "/%g/%g@%g", nd->total, nd->self, nd->x);
    }
    fclose(f);
    return buf;
}

static const char *TREE = "main;a;x 30\n"
                          "main;a 5\n"
                          "main;b 10\n"
                          "main 2\n";

static void test_tree(void)
{
    profile *p = load_str(TREE);
    calltree t = build(p, 0, NULL);
    char *s = shape(&t);
    is_str(s, "all/47/0@0 main/47/2@0 a/35/5@2 x/30/30@7 b/10/10@37",
           "preorder, children by name, a parent's self before its children (the SVG's places)");
    free(s);
    is_int(t.n, 5, "five nodes");
    is_int(t.full, 4, "four below the root");
    is_int(t.cut, 0, "nothing cut without a budget");
    is_int(t.node[3].parent, 2, "x's parent is a");
    is_int(t.node[3].depth, 3, "x at depth 3");
    ok(!t.diff, "one column");
    calltree_free(&t);

    t = build(p, 4, NULL);
    is_int(t.cut, 0, "a budget of exactly the nodes cuts nothing");
    calltree_free(&t);

    t = build(p, 2, NULL);
    s = shape(&t);
    is_str(s, "all/47/0@0 main/47/2@0 a/35/5@2 ~1/30/30@7 ~1/10/10@37",
           "budget 2: main and a kept, x and b summed into one other each, in their places");
    free(s);
    is_int(t.cut, 2, "two nodes cut");
    is_num(t.cut_total, 40, "their 40 samples said");
    is_int(t.node[3].parent, 2, "a's other under a");
    is_int(t.node[4].parent, 1, "main's other under main");
    calltree_free(&t);

    t = build(p, 0, "main;a");
    s = shape(&t);
    is_str(s, "all/35/0@0 main/35/0@0 a/35/5@0 x/30/30@5", "the subtree of main;a, rooted there");
    free(s);
    is_int(t.path, 2, "two path nodes");
    calltree_free(&t);

    t = build(p, 1, "main;a");
    is_int(t.cut, 0, "the path does not count against the budget");
    calltree_free(&t);

    t = build(p, 0, "main;nosuch");
    is_int(t.n, 1, "a path of no stack: the root alone");
    is_num(t.node[0].total, 0, "of total 0");
    calltree_free(&t);
    t = build(p, 0, "main;;a");
    is_int(t.n, 1, "an empty frame in the path matches nothing");
    calltree_free(&t);
    profile_free(p);
}

/* Invariants of any cut tree: a node's self and children fill at most its width and sit inside
 * it; the root's total is the profile's. */
static void test_cut_invariants(void)
{
    profile *p = profile_new();
    unsigned seed = 7;
    char stack[256];
    for (int i = 0; i < 3000; i++) {
        size_t o = 0;
        int depth = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 9;
        for (int d = 0; d < depth; d++)
            o += (size_t)snprintf(stack + o, sizeof stack - o, "%sf%u", d ? ";" : "",
                                  ((seed = seed * 1103515245 + 12345) >> 16) % 6);
        profile_add(p, stack, o, 1 + ((seed >> 16) % 5), PROFILE_ONE_COLUMN);
    }
    calltree full = build(p, 0, NULL);
    size_t budgets[] = {1, 10, 100, 1000};
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        calltree t = build(p, budgets[b], NULL);
        size_t real = 0, cutn = 0;
        int bad = 0;
        double *kids = calloc(t.n, sizeof *kids);
        for (size_t i = 1; i < t.n; i++) {
            const calltree_node *c = &t.node[i], *par = &t.node[c->parent];
            if (c->parent >= i || c->depth != par->depth + 1)
                bad++;
            if (c->x < par->x + par->self - 1e-9 || c->x + c->total > par->x + par->total + 1e-9)
                bad++;
            kids[c->parent] += c->total;
            if (c->name == CALLTREE_OTHER)
                cutn += c->cut;
            else
                real++;
        }
        for (size_t i = 0; i < t.n; i++)
            if (fabs(kids[i] + t.node[i].self - t.node[i].total) > 1e-9)
                bad++;
        free(kids);
        is_int(bad, 0, "budget %zu: children inside their parent, totals add up", budgets[b]);
        ok(real <= budgets[b], "budget %zu: %zu nodes kept", budgets[b], real);
        is_int(real + cutn, full.full, "budget %zu: kept + cut = every node", budgets[b]);
        is_int(t.cut, cutn, "budget %zu: cut said", budgets[b]);
        is_num(t.node[0].total, profile_total(p), "budget %zu: the root is the whole profile",
               budgets[b]);
        calltree_free(&t);
    }
    calltree_free(&full);
    profile_free(p);
}

static bool has_sub(void *ctx, const char *s, size_t n)
{
    const char *needle = ctx;
    return memmem(s, n, needle, strlen(needle)) != NULL;
}

static void test_search(void)
{
    profile *p = load_str("main;Work.step_[j];leaf 30\n"
                          "main;Work.step_[i] 5\n"
                          "main;other;Work.step 7\n"
                          "main;idle 10\n");
    flame_err err = FLAME_ERR_INIT;
    double m = -1;
    ok(calltree_search(p, has_sub, "Work.step", &m, NULL, &err) == 0, "search runs");
    is_num(m, 42, "stacks with the frame, each once, annotations stripped");
    ok(calltree_search(p, has_sub, "_[j]", &m, NULL, &err) == 0, "search runs");
    is_num(m, 0, "an annotation is not part of the name searched");
    ok(calltree_search(p, has_sub, "main", &m, NULL, &err) == 0, "search runs");
    is_num(m, 52, "a match at the root counts every stack once");
    profile_free(p);

    p = load_str("main;a 10 20\nmain;b 5 0\n");
    double before = -1;
    ok(calltree_search(p, has_sub, "b", &m, &before, &err) == 0, "search of a differential");
    is_num(m, 0, "after: 0");
    is_num(before, 5, "before: 5");
    profile_free(p);
}

static char *folded(const profile *p)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    flame_err err = FLAME_ERR_INIT;
    profile_write_folded(p, f, &err);
    fclose(f);
    return buf;
}

static void test_sandwich(void)
{
    profile *p = load_str("main;f;g;f;h 4\n"
                          "main;x;f_[j] 3\n"
                          "main;y;f_[i];z 2\n"
                          "main;idle 10\n"
                          "f 1\n");
    profile *up, *down;
    double self = -1;
    flame_err err = FLAME_ERR_INIT;
    ok(calltree_sandwich(p, "f", 1, &up, &down, &self, &err) == 0, "sandwich of f");
    char *s = folded(up);
    is_str(s, "f 1\nf;main 4\nf;x;main 3\nf;y;main 2\n",
           "callers: above the outermost f, nearest first; f_[j] and f_[i] are f");
    free(s);
    s = folded(down);
    is_str(s, "f 4\nf;g;f;h 4\nf;z 2\n", "callees: below the outermost f, recursion kept");
    free(s);
    is_num(profile_total(up), 10, "callers total the stacks with f, once each");
    is_num(profile_total(down), 10, "callees too");
    is_num(self, 4, "self: stacks ending in f (f_[j] and the bare f)");
    profile_free(up);
    profile_free(down);

    ok(calltree_sandwich(p, "nosuch", 6, &up, &down, &self, &err) == 0, "sandwich of nothing");
    is_int(profile_stacks(up) + profile_stacks(down), 0, "both empty");
    profile_free(up);
    profile_free(down);
    profile_free(p);

    p = load_str("main;f 10 20\nmain;g 5 0\n");
    ok(calltree_sandwich(p, "f", 1, &up, &down, NULL, &err) == 0, "sandwich of a differential");
    ok(profile_is_diff(up) && profile_is_diff(down), "keeps both columns");
    is_num(profile_total_before(up), 10, "before");
    is_num(profile_total(up), 20, "after");
    profile_free(up);
    profile_free(down);
    profile_free(p);
}

static void test_diff_and_colours(void)
{
    profile *p = load_str("main;a 10 20\nmain;b 5 0\nmain;c 3 3\n");
    calltree t = build(p, 0, NULL);
    ok(t.diff, "two columns");
    is_num(t.maxdelta, 10, "largest self change");
    is_num(t.node[1].total_before, 18, "main before");
    is_num(t.node[1].total, 23, "main after");
    is_int(calltree_colour(&t, &t.node[2], NULL), 0xff0000, "a grew most: full red");
    is_int(calltree_colour(&t, &t.node[3], NULL), 0x6969ff, "b shrank by half the most: blue");
    is_int(calltree_colour(&t, &t.node[4], NULL), 0xffffff, "c unchanged: white");
    is_int(calltree_colour(&t, &t.node[0], NULL), 0xffffff, "the root white");
    is_num(t.node[3].total, 0, "b has no width after");
    calltree_free(&t);
    profile_free(p);

    p = load_str("main;java.util.HashMap.get_[j] 3\nmain;Work.step_[i] 2\n");
    t = build(p, 0, NULL);
    int64_t c = calltree_colour(&t, &t.node[3], "java"); /* HashMap.get_[j], after Work.step */
    ok(c >= 0 && (c >> 8 & 255) > (c >> 16 & 255) && (c >> 8 & 255) > (c & 255),
       "java palette: JIT code green (%06llx)", (long long)c);
    c = calltree_colour(&t, &t.node[2], "java");
    ok(c >= 0 && (c >> 8 & 255) > (c >> 16 & 255) && (c & 255) > (c >> 16 & 255),
       "java palette: inlined code aqua (%06llx)", (long long)c);
    is_int(calltree_colour(&t, &t.node[2], "nosuch"), -1, "unknown palette refused");
    calltree_free(&t);
    t = build(p, 1, NULL);
    is_int(calltree_colour(&t, &t.node[2], "java"), 0xb4b4b4, "other is grey");
    calltree_free(&t);
    profile_free(p);
}

static void test_copy(void)
{
    profile *p = load_str("main;a 10 20\nmain;b 5 0\n"), *q = NULL;
    flame_err err = FLAME_ERR_INIT;
    ok(calltree_copy(p, &q, &err) == 0, "copy");
    char *a = folded(p), *b = folded(q);
    is_str(b, a, "the copy's folded text is the original's");
    ok(profile_is_diff(q), "both columns");
    free(a);
    free(b);
    profile_free(p);
    profile_free(q);
}

int main(void)
{
    test_tree();
    test_cut_invariants();
    test_search();
    test_sandwich();
    test_diff_and_colours();
    test_copy();
    return tap_done();
}
