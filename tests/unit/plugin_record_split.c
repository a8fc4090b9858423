/* plugin/record_split.c: a window of a container with several JVMs becomes one window per JVM,
 * the root frame that named the JVM dropped; a JVM that ran nothing still gets its (empty)
 * window; stacks of an unknown JVM go to pid 0; with one JVM the window is kept as it is (its
 * first frame, a thread's name chosen by the target, is never read as a JVM). */
#include <string.h>

#include "plugin/record_split.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static profile *folded(const char *text)
{
    profile *p = profile_new();
    flame_err e = FLAME_ERR_INIT;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (n)
            profile_add_line(p, l, n, &e);
        l += n + (nl ? 1 : 0);
    }
    return p;
}

static char *text_of(const profile *p)
{
    return p ? out_str(out_folded, p, NULL, NULL) : strdup("");
}

int main(void)
{
    ct_jvm jvms[3] = {{.pid = 7, .java_version = "17.0.9"},
                      {.pid = 12, .java_version = "21.0.2"},
                      {.pid = 30, .java_version = "11.0.1"}};
    profile *w = folded("java-7 Main;worker;Main.run 5\n"
                        "java-12;pool-1;Job.work 3\n"
                        "java-12;pool-1;Job.idle 1\n"
                        "java-99 Late;t;Late.go 2\n"
                        "java-7x;t;odd 1\n");
    rec_part parts[REC_SPLIT_MAX];
    size_t n = 0;
    flame_err e = FLAME_ERR_INIT;
    is_int(rec_split(w, jvms, 3, 0, parts, &n, &e), 0, "split");
    is_int(n, 4, "three JVMs and the stacks of none known");
    char *t = text_of(parts[0].p);
    ok(parts[0].pid == 7 && !strcmp(parts[0].version, "17.0.9") &&
           !strcmp(t, "worker;Main.run 5\n"),
       "JVM 7: its stack, without the root frame");
    free(t);
    t = text_of(parts[1].p);
    is_str(t, "pool-1;Job.idle 1\npool-1;Job.work 3\n", "JVM 12 (a root without a main class)");
    free(t);
    ok(parts[2].pid == 30 && parts[2].p && profile_stacks(parts[2].p) == 0,
       "JVM 30 ran nothing: an empty window of its own");
    t = text_of(parts[3].p);
    ok(parts[3].pid == 0 && !strcmp(t, "java-7x;t;odd 1\njava-99 Late;t;Late.go 2\n"),
       "a JVM not announced, or no root at all: pid 0, stacks kept whole");
    free(t);
    rec_split_free(parts, n);

    /* one JVM: its window as it is, whatever its first frame says */
    profile *one = folded("java-12;thread named like a root 4\nmain;x 1\n");
    is_int(rec_split(one, jvms + 1, 1, 0, parts, &n, &e), 0, "one JVM");
    t = text_of(parts[0].p);
    ok(n == 1 && parts[0].pid == 12 && !strcmp(parts[0].version, "21.0.2") &&
           !strcmp(t, "java-12;thread named like a root 4\nmain;x 1\n"),
       "one part, labelled with the JVM, its stacks unchanged");
    free(t);
    rec_split_free(parts, n);
    /* none announced yet: the recorder's --pid (or 0) labels it */
    is_int(rec_split(one, NULL, 0, 42, parts, &n, &e), 0, "no JVM announced");
    ok(n == 1 && parts[0].pid == 42 && !strcmp(parts[0].version, ""), "labelled with pid0");
    rec_split_free(parts, n);
    /* an empty window of two JVMs: two empty parts */
    is_int(rec_split(NULL, jvms, 2, 0, parts, &n, &e), 0, "nothing ran");
    ok(n == 2 && profile_stacks(parts[0].p) == 0 && profile_stacks(parts[1].p) == 0,
       "each JVM gets an empty window");
    rec_split_free(parts, n);
    profile_free(w);
    profile_free(one);
    return tap_done();
}
