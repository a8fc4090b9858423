/* flame/methods.c: the per-method table behind methods_top_self, diff's movers and top's view.
 * Self and total per method (annotations merged), Java-only rows and where self time goes then,
 * inlined hosts, roots and `where`, callers, two columns, merging tables, sorting. */
#include <stdlib.h>
#include <string.h>

#include "flame/methods.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static const methods_row *find(const methods *m, const char *name, const char *host)
{
    size_t n;
    const methods_row *r = methods_rows(m, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].name, name) &&
            (host ? r[i].host && !strcmp(r[i].host, host) : r[i].host == NULL))
            return &r[i];
    return NULL;
}

static size_t count(const methods *m)
{
    size_t n;
    methods_rows(m, &n);
    return n;
}

static const methods_row *row_at(const methods *m, size_t i)
{
    size_t n;
    const methods_row *r = methods_rows(m, &n);
    return i < n ? &r[i] : NULL;
}

/* A table of one profile given as folded text. */
static methods *table(const char *folded, const methods_opts *o)
{
    profile *p = load_str(folded);
    methods *m = methods_new(o);
    flame_err err = FLAME_ERR_INIT;
    if (!p || !m || methods_add(m, p, &err) < 0) {
        printf("# table failed: %s\n", err.msg);
        abort();
    }
    profile_free(p); /* the table owns its strings */
    return m;
}

static void test_is_java(void)
{
    static const char *const yes[] = {
        "Work.step",     "java.util.HashMap.get", "a/b/C:.m",  "foo_[j]",  "A.isPrime_[i]",
        "Cls$Inner.run", "org/x/Y:::method",      "Lpkg/C;.m", "foo_[int]"};
    static const char *const no[] = {"memcpy",   "JVM::gc",  "x_[k]",         "[libc.so.6]",
                                     "0x7f12ab", "f.isra.0", "g.constprop.1", "h.part.2",
                                     "k.cold",   "Foo.1",    "Interpreter",   ""};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        ok(methods_is_java(yes[i], strlen(yes[i])), "Java: %s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        ok(!methods_is_java(no[i], strlen(no[i])), "not Java: '%s'", no[i]);
}

static void test_self_total(void)
{
    methods_opts o = {0};
    methods *m = table("t;A.a;A.b 3\nt;A.a 2\nt;A.a;A.b_[j] 1\nt;A.f;A.f;A.f 4\n", &o);
    is_num(methods_samples(m, false), 10, "samples: every stack's count");
    const methods_row *b = find(m, "A.b", NULL);
    ok(b && b->self == 4 && b->total == 4, "A.b and A.b_[j] are one method: self 4, total 4");
    ok(!find(m, "A.b_[j]", NULL), "no row keeps the annotation");
    const methods_row *a = find(m, "A.a", NULL);
    ok(a && a->self == 2 && a->total == 6, "A.a: self 2 (its own leaf), total 6");
    const methods_row *f = find(m, "A.f", NULL);
    ok(f && f->self == 4 && f->total == 4, "recursion counts once in total");
    const methods_row *t = find(m, "t", NULL);
    ok(t && t->self == 0 && t->total == 10, "no roots: the first frame is a method too");
    methods_sort(m, false);
    is_str(row_at(m, 0)->name, "A.b", "by self, equal self and total: by name (A.b)");
    is_str(row_at(m, 1)->name, "A.f", "then A.f");
    methods_sort(m, true);
    is_str(row_at(m, 0)->name, "t", "by total: t first");
    is_str(row_at(m, 1)->name, "A.a", "then A.a (6)");
    methods_free(m);

    o.measure = METHODS_SELF;
    m = table("t;A.a;A.b 3\n", &o);
    ok(find(m, "A.b", NULL) && find(m, "A.b", NULL)->total == 0 && !find(m, "A.a", NULL),
       "self only: no totals, no rows without self");
    methods_free(m);
    o.measure = METHODS_TOTAL;
    m = table("t;A.a;A.b 3\n", &o);
    ok(find(m, "A.b", NULL) && find(m, "A.b", NULL)->self == 0 && find(m, "A.a", NULL)->total == 3,
       "total only: no self");
    methods_free(m);
}

static void test_java_only(void)
{
    const char *text = "t;A.a;memcpy 5\nt;A.a;A.b 2\nGC;[libjvm.so] 3\nt;A.c;JVM::x;A.d 1\n";
    methods_opts o = {.java_only = true};
    methods *m = table(text, &o);
    ok(!find(m, "memcpy", NULL) && !find(m, "t", NULL) && !find(m, "[libjvm.so]", NULL),
       "java_only: native frames are no rows");
    ok(find(m, "A.a", NULL)->self == 0 && find(m, "A.a", NULL)->total == 7,
       "without self_to_java a native leaf gives no self time");
    ok(!find(m, "(no Java frame)", NULL), "and no '(no Java frame)' row");
    ok(find(m, "A.d", NULL)->self == 1 && find(m, "A.c", NULL)->total == 1,
       "native frames between Java ones do not matter");
    is_num(methods_samples(m, false), 11, "samples still count every stack");
    methods_free(m);

    o.self_to_java = true;
    m = table(text, &o);
    ok(find(m, "A.a", NULL)->self == 5, "self_to_java: self goes to the innermost Java frame");
    const methods_row *none = find(m, "(no Java frame)", NULL);
    ok(none && none->self == 3 && none->total == 3, "a stack without Java: '(no Java frame)'");
    methods_free(m);
}

static void test_inlined_hosts(void)
{
    const char *text = "t;A.count;A.isPrime_[i] 7\nt;A.count;A.inner_[i];A.deep_[i] 1\n"
                       "t;A.isPrime 2\nt;A.work;A.isPrime_[i] 4\n";
    methods_opts o = {.java_only = true, .inlined_hosts = true};
    methods *m = table(text, &o);
    const methods_row *r = find(m, "A.isPrime", "A.count");
    ok(r && r->self == 7, "inlined leaf: self goes to (method, host)");
    ok(find(m, "A.deep", "A.count") && find(m, "A.deep", "A.count")->self == 1,
       "the host is the nearest caller that is not inlined");
    ok(find(m, "A.isPrime", NULL)->self == 2, "the method's own code is a row of its own");
    ok(find(m, "A.isPrime", NULL)->total == 13, "total: one row per method, hosts merged");
    methods_sort(m, false);
    size_t nrows;
    const methods_row *rows = methods_rows(m, &nrows);
    is_str(rows[0].name, "A.isPrime", "largest self first");
    is_str(rows[0].host, "A.count", "its host");
    is_str(rows[1].host, "A.work", "equal names: by self first");
    methods_free(m);
    o.inlined_hosts = false;
    m = table(text, &o);
    ok(find(m, "A.isPrime", NULL)->self == 13 && !find(m, "A.isPrime", "A.count"),
       "without inlined_hosts inlined code is the method itself");
    methods_free(m);
}

static void test_roots_where(void)
{
    methods_opts o = {.java_only = true, .self_to_java = true, .roots = 2};
    methods *m = table("java-1 Main;worker-0;A.a;A.b 4\njava-2 Other;main;A.b 1\n"
                       "java-2 Other;main;A.b 3\njava-1 Main;worker-0 2\n",
                       &o);
    const methods_row *b = find(m, "A.b", NULL);
    ok(b && b->self == 8, "two roots skipped: A.b self 8");
    is_str(b ? b->where : NULL, "java-1 Main/worker-0", "where: the single largest count (4 > 3)");
    ok(!find(m, "java-1 Main", NULL) && !find(m, "worker-0", NULL), "roots are never methods");
    ok(find(m, "(no Java frame)", NULL) && find(m, "(no Java frame)", NULL)->self == 2,
       "a stack of roots only");
    methods_free(m);
    o.roots = 0;
    m = table("a;A.b 1\n", &o);
    ok(find(m, "A.b", NULL) && !find(m, "A.b", NULL)->where, "no roots: no where");
    methods_free(m);
}

static void test_callers(void)
{
    methods_opts o = {.java_only = true, .roots = 1, .callers_of = "A.m"};
    methods *m =
        table("t;A.x;A.m 1\nt;A.y;N::f;A.m;A.z 1\nt;A.m 1\nt;A.q 1\nt;A.m_[j];A.m 5\n", &o);
    is_num(methods_samples(m, false), 8, "callers: only stacks containing the method count");
    ok(find(m, "A.x", NULL) && find(m, "A.x", NULL)->self == 1, "the direct Java caller");
    ok(find(m, "A.y", NULL) && !find(m, "N::f", NULL), "native frames skipped");
    ok(find(m, "(root)", NULL) && find(m, "(root)", NULL)->self == 1, "no Java caller: (root)");
    ok(find(m, "A.m", NULL) && find(m, "A.m", NULL)->self == 5,
       "the JIT copy above the method is the method: recursion");
    ok(!find(m, "A.q", NULL) && !find(m, "A.z", NULL), "nothing else");
    methods_free(m);
}

static void test_two_columns_merge(void)
{
    methods_opts o = {0};
    methods *m = table("a;B.x 3 5\na;B.y 2 0\n", &o);
    const methods_row *x = find(m, "B.x", NULL);
    ok(x && x->self_before == 3 && x->self == 5 && x->total_before == 3,
       "two columns: before and after");
    is_num(methods_samples(m, true), 5, "samples before");
    is_num(methods_samples(m, false), 5, "samples after");
    methods_free(m);

    o.roots = 1;
    methods *all = table("w1;A.a 2\nw2;A.b 1\nw2;A.a 4\n", &o);
    methods *one = table("w1;A.a 2\n", &o), *two = table("w2;A.b 1\nw2;A.a 4\n", &o);
    flame_err err = FLAME_ERR_INIT;
    ok(methods_merge(one, two, &err) == 0, "merge");
    is_num(methods_samples(one, false), methods_samples(all, false), "merged samples");
    ok(count(one) == count(all), "same rows");
    const methods_row *a = find(one, "A.a", NULL);
    ok(a && a->self == 6 && a->total == 6, "counts summed");
    is_str(a ? a->where : NULL, "w2", "where: the larger single count of both tables");
    methods_clear(one);
    ok(count(one) == 0 && methods_samples(one, false) == 0, "clear");
    profile *p = load_str("w3;A.c 1\n");
    ok(p && methods_add(one, p, &err) == 0 && find(one, "A.c", NULL), "a cleared table is reused");
    profile_free(p);
    methods_free(one);
    methods_free(two);
    methods_free(all);
}

/* methods_top_self() (declared in flame/profile.h, built on the methods table). */
static void test_top_self(void)
{
    profile *p = load_str("t;Work.step 10\nt;Work.step;memcpy 4\nt;a/b/C:.m 6\nt;JVM::gc 20\n"
                          "t;foo_[j] 3\nt;x_[k] 1\n");
    const char *names[8];
    double counts[8];
    size_t n = methods_top_self(p, 8, false, names, counts);
    is_int(n, 6, "six leaf names");
    is_str(names[0], "JVM::gc", "largest self first");
    ok(counts[0] == 20, "its self count");
    n = methods_top_self(p, 2, true, names, counts);
    is_int(n, 2, "java_only, limited to 2");
    is_str(names[0], "Work.step", "top Java frame");
    is_str(names[1], "a/b/C:.m", "second Java frame");
    n = methods_top_self(p, 8, true, names, counts);
    is_int(n, 3, "java_only keeps Work.step, a/b/C:.m and foo_[j]");
    is_str(names[2], "foo_[j]", "a method known only annotated: a name the profile has");
    ok(profile_add(p, "t;Work.step_[i]", 15, 5, PROFILE_ONE_COLUMN) == 0, "add an inlined leaf");
    n = methods_top_self(p, 8, true, names, counts);
    is_str(names[0], "Work.step", "Work.step and its inlined copy are one method");
    is_num(counts[0], 15, "their self time summed");
    profile_free(p);
}

int main(void)
{
    test_is_java();
    test_self_total();
    test_java_only();
    test_inlined_hosts();
    test_roots_where();
    test_callers();
    test_two_columns_merge();
    test_top_self();
    return tap_done();
}
