/* plugin/top.c aggregation: self/total shares, Java-only attribution, recursion counted once,
 * callers, JVM/thread roots, hostile depth. */
#include <stdlib.h>
#include <string.h>

#include "plugin/top.h"
#include "tests/unit/tap.h"

static const top_row *find(const top_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name))
            return &t->rows[i];
    return NULL;
}

static void add(top_table *t, const char *s, double c, int roots, bool java)
{
    if (top_table_add(t, s, strlen(s), c, roots, java) < 0)
        abort();
}

int main(void)
{
    ok(top_is_java("FlameFixture.isPrime", 20), "a Java method");
    ok(top_is_java("FlameFixture.isPrime_[i]", 24), "an inlined Java frame");
    ok(!top_is_java("[libjvm.so]", 11), "a DSO frame is not Java");
    ok(!top_is_java("JavaThread::run", 15), "C++ is not Java");
    ok(!top_is_java("Interpreter", 11), "Interpreter is not a method");
    ok(!top_is_java("java-1 FlameFixture", 19), "the JVM root frame is not a method");
    ok(!top_is_java("do_syscall_64_[k]", 17), "kernel frames are not Java");

    top_table t = {0};
    add(&t, "worker-0;call_stub;A.work;A.count;A.isPrime", 8, 1, false);
    add(&t, "worker-0;call_stub;A.work;A.mix;[libjvm.so]", 2, 1, false);
    top_table_sort(&t, false);
    ok(t.samples == 10, "samples summed");
    is_str(t.rows[0].name, "A.isPrime", "all frames: top self is the leaf");
    ok(find(&t, "[libjvm.so]") && find(&t, "[libjvm.so]")->self == 2, "all frames: native leaf");
    ok(find(&t, "A.work")->total == 10 && find(&t, "A.work")->self == 0, "total of a caller");
    ok(!find(&t, "worker-0"), "the thread root is not a method");
    is_str(find(&t, "A.isPrime")->where, "worker-0", "JVM/thread column");
    top_table_clear(&t);

    add(&t, "worker-0;call_stub;A.work;A.count;A.isPrime", 8, 1, true);
    add(&t, "worker-0;call_stub;A.work;A.mix;[libjvm.so]", 2, 1, true);
    add(&t, "GC Thread#0;[libjvm.so];[libc.so.6]", 5, 1, true);
    top_table_sort(&t, true);
    ok(find(&t, "A.mix")->self == 2, "java only: self goes to the innermost Java frame");
    ok(!find(&t, "[libjvm.so]") && !find(&t, "call_stub"), "java only: no native rows");
    ok(find(&t, "(no Java frame)") && find(&t, "(no Java frame)")->self == 5,
       "java only: samples without Java frames are named as such");
    is_str(t.rows[0].name, "A.work", "sorted by total: the outer method first");
    top_table_clear(&t);

    add(&t, "t;A.f;A.f;A.f", 3, 1, false);
    ok(find(&t, "A.f")->total == 3 && find(&t, "A.f")->self == 3, "recursion counts once");
    top_table_clear(&t);

    add(&t, "java-1 Main;worker-0;A.a;A.b", 4, 2, true);
    add(&t, "java-2 Other;main;A.b", 1, 2, true);
    top_table_sort(&t, false);
    is_str(t.rows[0].name, "A.b", "two JVMs: two root frames skipped");
    is_str(find(&t, "A.b")->where, "java-1 Main/worker-0", "two JVMs: JVM/thread");
    top_table_clear(&t);

    const char *stk[] = {"t;A.x;A.m", "t;A.y;N::f;A.m;A.z", "t;A.m", "t;A.q"};
    for (int i = 0; i < 4; i++)
        top_table_add_callers(&t, stk[i], strlen(stk[i]), 1, 1, true, "A.m");
    top_table_sort(&t, false);
    ok(t.samples == 3, "callers: only stacks containing the method");
    ok(find(&t, "A.x") && find(&t, "A.y") && find(&t, "(root)"),
       "callers: direct Java parent, native frames skipped, (root)");
    top_table_clear(&t);

    /* hostile: a very deep stack keeps its leaf */
    size_t depth = 10000;
    char *deep = malloc(depth * 6 + 32);
    size_t o = 0;
    o += (size_t)sprintf(deep, "t");
    for (size_t i = 0; i < depth; i++)
        o += (size_t)sprintf(deep + o, ";A.f%zu", i % 7);
    o += (size_t)sprintf(deep + o, ";A.leaf");
    ok(top_table_add(&t, deep, o, 1, 1, true) == 0, "deep stack accepted");
    ok(find(&t, "A.leaf") && find(&t, "A.leaf")->self == 1, "deep stack: leaf kept");
    free(deep);
    top_table_clear(&t);
    return tap_done();
}
