/* Stacks matched as read (flame/match.c): stacks that differ only in JIT marks become one, a
 * frame keeps its mark where every stack through it agrees and is plain where they disagree,
 * nothing changes when nothing differs, and _[k] / _[w] are never dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame/match.h"
#include "flame/profile.h"
#include "tests/unit/tap.h"

/* A profile from folded lines ("a;b 1" or "a;b 1 2"). */
static profile *load(const char *text)
{
    profile *p = profile_new();
    flame_err err = FLAME_ERR_INIT;
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    if (!p || !f || profile_load(p, f, "test", &err) < 0) {
        printf("# load: %s\n", err.msg);
        exit(1);
    }
    fclose(f);
    return p;
}

/* The folded text of p (sorted by stack). */
static const char *folded(const profile *p)
{
    static char buf[4096];
    flame_err err = FLAME_ERR_INIT;
    FILE *f = fmemopen(buf, sizeof buf, "w");
    profile_write_folded(p, f, &err);
    fputc('\0', f);
    fclose(f);
    return buf;
}

/* match_as_read() of text: the folded result, or "(unchanged)" when nothing changes. */
static const char *matched(const char *text, size_t *merged)
{
    profile *p = load(text), *q = NULL;
    flame_err err = FLAME_ERR_INIT;
    size_t m = 0;
    int rc = match_as_read(p, &q, &m, &err);
    const char *r = rc < 0 ? "(error)" : q ? folded(q) : "(unchanged)";
    if (q && profile_total(q) != profile_total(p))
        r = "(total changed)";
    if (merged)
        *merged = m;
    profile_free(q);
    profile_free(p);
    return r;
}

int main(void)
{
    size_t merged = 0;
    /* the JIT inlined countPrimes into work in one run and compiled it on its own in the other
     * (a two-column union, as diff builds it) */
    is_str(matched("t;W.work_[j];C.count_[i];C.isPrime_[i] 76 0\n"
                   "t;W.work_[j];C.count_[j];C.isPrime_[i] 0 70\n"
                   "t;W.work_[j];M.mix_[j] 24 30\n",
                   &merged),
           "t;W.work_[j];C.count;C.isPrime_[i] 76 70\nt;W.work_[j];M.mix_[j] 24 30\n",
           "re-inlined stacks are one; the disputed frame is plain, the agreed ones keep their "
           "marks");
    is_int(merged, 1, "one stack joined another");

    is_str(matched("t;A.run_[int];A.step_[j] 5\nt;A.run_[j];A.step_[j] 7\n", NULL),
           "t;A.run;A.step_[j] 12\n", "interpreted and compiled: one frame (one column)");

    is_str(matched("t;A.run_[j];A.step_[j] 5\nt;A.run_[j];A.other_[i] 7\n", NULL), "(unchanged)",
           "no two stacks differ only in marks: nothing changes");
    is_str(matched("t;a;b 5\nt;a;c 7\n", NULL), "(unchanged)", "no marks at all: nothing changes");

    /* the same method compiled under one caller and inlined under another: two frames of the
     * graph that never meet, so both keep their marks */
    is_str(matched("t;A.x_[j];H.hash_[i] 5\nt;B.y_[j];H.hash_[j] 7\n", NULL), "(unchanged)",
           "a name's marks differ only under different callers: nothing changes");

    /* a frame shown plain is plain for every stack through it, also for a stack present in one
     * input only: no two frames with the same label side by side */
    is_str(matched("t;W.work_[j];C.count_[i];C.isPrime_[i] 10\n"
                   "t;W.work_[j];C.count_[j];C.isPrime_[i] 10\n"
                   "t;W.work_[j];C.count_[j];C.rare_[j] 1\n",
                   NULL),
           "t;W.work_[j];C.count;C.isPrime_[i] 20\nt;W.work_[j];C.count;C.rare_[j] 1\n",
           "every stack through a disputed frame shows it plain");

    /* below a disputed frame, a child the stacks agree on keeps its mark */
    is_str(matched("t;P.a_[i];Q.b_[j] 1\nt;P.a_[j];Q.b_[j] 2\n", NULL), "t;P.a;Q.b_[j] 3\n",
           "a child agreed on under a disputed parent keeps its mark");

    /* kernel and waker marks say what a frame is: never dropped */
    is_str(matched("t;read_[k] 1\nt;read 2\nt;w_[w] 1\nt;w 1\n", NULL), "(unchanged)",
           "_[k] and _[w] frames are never matched with plain ones");

    /* the plain form is a name of the profile too */
    is_str(matched("t;A.f 1\nt;A.f_[j] 2\n", NULL), "t;A.f 3\n",
           "a plain name and its marked form are one");
    return tap_done();
}
