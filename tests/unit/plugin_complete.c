/* plugin/complete.c: what each typed line completes to, read from the verbs' tables; the cobra
 * output format; hostile names kept out of the protocol. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "plugin/complete.h"
#include "plugin/verbs.h"
#include "tests/unit/tap.h"

static cmpl_plan P;

/* Plan the words; return the candidates' names joined by ' ' (static). */
static const char *plan(int n, ...)
{
    static char *words[32];
    static char joined[8192];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        words[i] = va_arg(ap, char *);
    va_end(ap);
    cmpl_plan_free(&P);
    memset(&P, 0, sizeof P);
    cmpl_plan_words(n, words, &P);
    size_t o = 0;
    joined[0] = 0;
    for (size_t i = 0; i < P.n && o < sizeof joined; i++)
        o += (size_t)snprintf(joined + o, sizeof joined - o, "%s%s", i ? " " : "", P.items[i].name);
    return joined;
}

static bool has(const char *name)
{
    for (size_t i = 0; i < P.n; i++)
        if (!strcmp(P.items[i].name, name))
            return true;
    return false;
}

/* Every visible long flag of a grammar is offered for "--". */
static void every_flag(const flame_verb *v)
{
    const arg_spec *s;
    char want[80];
    bool all = true;
    if (v->name[0])
        plan(2, v->name, "--");
    else
        plan(1, "--");
    for (size_t i = 0; (s = args_spec(v->grammar, i)); i++) {
        snprintf(want, sizeof want, "--%s", s->lng);
        if (has(want) == !!(s->flags & ARG_HIDDEN)) {
            all = false;
            printf("# %s: %s %s\n", v->name, want, s->flags & ARG_HIDDEN ? "offered" : "missing");
        }
    }
    ok(all && P.directive == CMPL_NOFILE, "'%s --': every visible flag, no hidden one, no files",
       v->name[0] ? v->name : "(profile)");
}

int main(void)
{
    /* the first word: verbs (and containers, fetched later) */
    plan(1, "");
    ok(has("diff") && has("prune") && has("record") && P.n == flame_nverbs, "'': every verb (%zu)",
       P.n);
    ok(P.sources == CMPL_SRC_RUNNING && (P.directive & CMPL_NOFILE) &&
           (P.directive & CMPL_KEEP_ORDER),
       "'': running containers asked for, no file names, order kept");
    is_str(plan(1, "d"), "diff", "'d': diff");
    is_str(P.prefix, "d", "containers filtered by the typed prefix");

    /* flags, from each verb's own table */
    every_flag(&flame_profile_verb);
    for (size_t v = 0; v < flame_nverbs; v++)
        every_flag(&flame_verbs[v]);
    is_str(plan(1, "--fo"), "--format", "'--fo': --format");
    plan(1, "-");
    ok(has("-d") && has("--duration") && has("-q"), "'-': short forms too (cobra's rule)");
    plan(2, "top", "--");
    ok(has("--interval") && !has("--colors"), "top: its own flags, not the graph options");

    /* values */
    is_str(plan(3, "diff", "--format", ""), "svg folded pprof",
           "diff --format: its formats (from its own table: no speedscope)");
    ok(P.directive == CMPL_NOFILE, "diff --format: no file names");
    is_str(plan(2, "--format", "sp"), "speedscope", "--format sp: speedscope");
    is_str(plan(1, "--format=f"), "--format=folded", "--format=f: completed in one word");
    is_str(plan(1, "--format=svg,f"), "--format=svg,folded", "a list: the item after the comma");
    plan(2, "--colors", "");
    ok(has("java") && has("hot") && has("orange") && P.n == 15, "--colors: the 15 palettes");
    is_str(plan(3, "render", "--bgcolors", "g"), "green grey", "render --bgcolors g");
    is_str(plan(3, "top", "--sampling", ""), "auto cpu thread", "top --sampling: choices");
    plan(2, "-o", "");
    ok(P.n == 0 && P.directive == 0, "-o: file names (the shell's)");
    plan(3, "top", "--record", "x");
    ok(P.n == 0 && P.directive == 0, "top --record FILE: file names");
    plan(2, "-d", "");
    ok(P.n == 0 && P.directive == CMPL_NOFILE, "-d DURATION: nothing, and no file names");
    plan(3, "-qd", "10", "");
    ok(P.sources == CMPL_SRC_RUNNING, "-qd 10: the cluster's value consumed, then a container");
    plan(2, "-qd", "");
    ok(P.directive == CMPL_NOFILE && !P.sources, "-qd: its last letter takes the next word");
    plan(3, "render", "-title", "");
    ok(P.directive == CMPL_NOFILE && P.n == 0, "render -title (single dash): takes a value");

    /* operands */
    plan(2, "fold", "");
    ok(P.n == 0 && P.directive == 0, "fold FILE: file names");
    plan(2, "gc", "");
    ok(P.n == 0 && P.directive == CMPL_NOFILE && !P.sources, "gc: no operands");
    plan(2, "show", "w");
    ok(P.sources == CMPL_SRC_STORED && !strcmp(P.prefix, "w"), "show: stored containers");
    plan(4, "show", "--store", "/x/p.db", "");
    is_str(P.store_url, "/x/p.db", "show --store PATH: that store is read");
    plan(2, "ls", "--store=/y.db");
    plan(3, "ls", "--store=/y.db", "");
    is_str(P.store_url, "/y.db", "ls --store=PATH: that store is read");
    plan(2, "diff", "we");
    ok(P.sources == (CMPL_SRC_RUNNING | CMPL_SRC_STORED_AT) && P.files_if_empty,
       "diff: containers, stored NAME@, else files");
    plan(2, "diff", "web@");
    is_str(P.range_name, "web", "diff web@: ranges of web");
    ok(P.sources == CMPL_SRC_STORED_RANGE, "diff web@: only stored ranges");
    plan(2, "merge", "./");
    ok(P.directive == 0 && !P.sources, "merge ./: a path, files only");
    plan(3, "web", "--", "");
    ok(P.directive == 0 && P.n == 0, "after --: the host command (the shell's completion)");
    plan(2, "-d", "10");
    ok(P.directive == CMPL_NOFILE, "a word being typed as a value is still a value");

    /* the protocol */
    cmpl_plan_free(&P);
    memset(&P, 0, sizeof P);
    P.directive = CMPL_NOFILE;
    ok(cmpl_add(&P, "", "web", "JVM, img\nsecond\tline"), "add");
    cmpl_add(&P, "", "bad name", NULL);
    cmpl_add(&P, "", "bad\tname", NULL);
    cmpl_add(&P, "", "bad\nname", NULL);
    cmpl_add(&P, "", "", NULL);
    cmpl_add(&P, "x", "web2", NULL);
    ok(P.n == 1, "names with a space, tab or newline, empty names, other prefixes: left out");
    /* compgen -W (Debian's CLI 20.10 script, cobra's without descriptions) expands each word */
    static const char *const shell[] = {"$(touch${IFS}/tmp/x)",
                                        "`id`",
                                        "a;id",
                                        "a'b",
                                        "a\"b",
                                        "a(b",
                                        "a)b",
                                        "a\\b",
                                        "${HOME}",
                                        "a|b",
                                        "a&b",
                                        "a>b",
                                        "a*",
                                        "a?b",
                                        "a[b]",
                                        "~root",
                                        "a!b",
                                        "a#b"};
    size_t before = P.n;
    for (size_t i = 0; i < sizeof shell / sizeof *shell; i++)
        cmpl_add(&P, "", shell[i], NULL);
    ok(P.n == before,
       "names with $, backticks, ;, quotes, parentheses, backslash, globs: left out");
    ok(cmpl_add(&P, "", "web@2026-11-24T14:03:00Z..2026-11-24T14:04:00Z", NULL) &&
           P.n == before + 1,
       "a stored range (@ : . - digits) is still offered");
    ok(cmpl_add(&P, "", "--format=svg,folded", NULL) && P.n == before + 2,
       "a list value (= ,) is still offered");
    free(P.items[--P.n].name);
    free(P.items[--P.n].name);
    ok(cmpl_docker_name("web") && cmpl_docker_name("web-1.a_B9") && cmpl_docker_name("9x"),
       "Docker's name grammar: web, web-1.a_B9, 9x");
    ok(!cmpl_docker_name("w") && !cmpl_docker_name("-web") && !cmpl_docker_name(".web") &&
           !cmpl_docker_name("_web") && !cmpl_docker_name("web@x") && !cmpl_docker_name("web/x") &&
           !cmpl_docker_name("$(touch${IFS}x)") && !cmpl_docker_name("a`b`") &&
           !cmpl_docker_name("a;b") && !cmpl_docker_name(""),
       "... not: one letter, a leading -, . or _, @, /, $(...), backticks, ;");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cmpl_print(&P, false, f);
    fclose(f);
    is_str(buf, "web\tJVM, img second line\n:4\n", "cobra format, the description on one line");
    free(buf);
    f = open_memstream(&buf, &len);
    cmpl_print(&P, true, f);
    fclose(f);
    is_str(buf, "web\n:4\n", "__completeNoDesc: names only");
    free(buf);
    cmpl_plan_free(&P);
    return tap_done();
}
