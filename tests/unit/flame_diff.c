/* docker flame diff / merge: difffolded.pl semantics on crafted inputs (union, -n with
 * truncation after summing, -s), SVG inputs, merging, the movers summary, and every bad-input
 * error with its exit code. Calls the verbs directly (prof = NULL) with temp files. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "plugin/cmd.h"
#include "flame/diff.h"
#include "flame/frame.h"
#include "flame/profile.h"
#include "flame/render.h"
#include "tests/unit/tap.h"

static char dir[] = "/tmp/test_diff.XXXXXX";
static char out_buf[1 << 16], err_buf[1 << 16];

static char *path(const char *name)
{
    static char bufs[256][512];
    static int k;
    char *b = bufs[k++ % 256];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "w");
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *p)
{
    static char buf[1 << 20];
    FILE *f = fopen(p, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void read_capture(int fd, char *buf, size_t cap)
{
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
}

static int run_prof(int (*fn)(int, char **, const flame_profiler *), const char *const *args,
                    const flame_profiler *pr);

/* Run a verb with stdout and stderr captured into out_buf / err_buf; returns its exit code. */
static int run(int (*fn)(int, char **, const flame_profiler *), const char *const *args)
{
    return run_prof(fn, args, NULL);
}

#define RUN(fn, ...) run(fn, (const char *const[]){__VA_ARGS__, NULL})

static bool has(const char *hay, const char *needle)
{
    return hay && strstr(hay, needle) != NULL;
}

static int one_line(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && s[n - 1] == '\n' && memchr(s, '\n', n - 1) == NULL;
}

static void test_strip_hex(void)
{
    char buf[256];
    const char *cases[][2] = {
        {"a;0x7f12ab;b", "a;0x...;b"},
        {"0x0x1", "0x...x1"},
        {"0x", "0x"},
        {"x0xZ", "x0xZ"},
        {"lib+0xDEADbeef;0xg", "lib+0x...;0xg"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        frame_strip_hex(cases[i][0], strlen(cases[i][0]), buf);
        is_str(buf, cases[i][1], "strip-hex '%s'", cases[i][0]);
    }
}

static void test_file_diff(void)
{
    /* A has a duplicate line: difffolded.pl sums per stack, then truncates int(sum * t2 / t1) */
    put("a.folded", "x 1\nx 1\ny 1\nonly_a 2\n");
    put("b.folded", "x 4\ny 1\nonly_b 3\n");
    int rc =
        RUN(flame_cmd_diff, "diff", path("a.folded"), path("b.folded"), "-o", path("ab.folded"));
    is_int(rc, 0, "file/file diff exits 0");
    /* t1 = 5, t2 = 8: x int(2*8/5)=3, y int(1*8/5)=1, only_a int(2*8/5)=3, only_b 0 */
    is_str(slurp(path("ab.folded")), "only_a 3 0\nonly_b 0 3\nx 3 4\ny 1 1\n",
           "union, missing side 0, -n by default with truncation after summing");
    ok(has(err_buf, "note: totals differ") && has(err_buf, "--no-normalize"),
       "a note says normalisation was applied");

    rc = RUN(flame_cmd_diff, "diff", "--no-normalize", path("a.folded"), path("b.folded"), "-o",
             path("raw.folded"));
    is_int(rc, 0, "--no-normalize exits 0");
    is_str(slurp(path("raw.folded")), "only_a 2 0\nonly_b 0 3\nx 2 4\ny 1 1\n",
           "--no-normalize keeps raw counts");
    ok(!has(err_buf, "note: totals differ"), "no note without normalisation");
    rc = RUN(flame_cmd_diff, "diff", "--no-normalize", path("a.folded"), path("b.folded"), "-o",
             "-", "--format", "folded");
    ok(rc == 0 && !strcmp(out_buf, "only_a 2 0\nonly_b 0 3\nx 2 4\ny 1 1\n") &&
           has(err_buf, "grew most:"),
       "-o - writes the diff to stdout, the summary to stderr");

    ok(!has(err_buf, "timings (ms)"), "no timings unless asked");
    setenv("DOCKER_FLAME_TIMINGS", "1", 1);
    rc = RUN(flame_cmd_diff, "diff", path("a.folded"), path("b.folded"), "-o", path("t.svg"));
    unsetenv("DOCKER_FLAME_TIMINGS");
    ok(rc == 0 && has(err_buf, "docker flame diff: timings (ms): load ") &&
           has(err_buf, ", union ") && has(err_buf, ", write ") && has(err_buf, ", total "),
       "DOCKER_FLAME_TIMINGS=1: one line of phase timings");

    /* equal totals: auto normalisation is a no-op and says nothing */
    put("c.folded", "x 5\ny 3\n");
    rc = RUN(flame_cmd_diff, "diff", path("c.folded"), path("b.folded"), "-o", path("cb.folded"));
    is_str(slurp(path("cb.folded")), "only_b 0 3\nx 5 4\ny 3 1\n", "equal totals: raw counts");
    ok(!has(err_buf, "note"), "equal totals: no note");

    /* -s: addresses merge stacks before summing and scaling */
    put("h1.folded", "f;0x1a 3\nf;0x2B 4\ng;lib+0xff 1\n");
    put("h2.folded", "f;0x99 8\ng;lib+0x10 8\n");
    rc = RUN(flame_cmd_diff, "diff", "-s", path("h1.folded"), path("h2.folded"), "-o",
             path("h.folded"));
    is_int(rc, 0, "-s exits 0");
    /* t1 = 8, t2 = 16 */
    is_str(slurp(path("h.folded")), "f;0x... 14 8\ng;lib+0x... 2 8\n", "-s strips hex addresses");
    rc = RUN(flame_cmd_diff, "diff", "-n", path("h1.folded"), path("h2.folded"), "-o",
             path("h_nos.folded"));
    is_str(slurp(path("h_nos.folded")),
           "f;0x1a 6 0\nf;0x2B 8 0\nf;0x99 0 8\ng;lib+0x10 0 8\ng;lib+0xff 2 0\n",
           "without -s addresses stay distinct stacks");
}

/* The fill of the first frame whose tooltip starts with name ("" if none). */
static const char *fill_of(const char *svg, const char *name)
{
    static char fill[32];
    char key[128];
    snprintf(key, sizeof key, "<title>%s (", name);
    const char *t = svg ? strstr(svg, key) : NULL;
    const char *f = t ? strstr(t, "fill=\"") : NULL;
    fill[0] = '\0';
    if (f)
        sscanf(f + 6, "%31[^\"]", fill);
    return fill;
}

static void test_svg_outputs(void)
{
    put("a.folded", "main;Work.fast 50\nmain;Work.slow 50\nmain;Gone.old 20\n");
    put("b.folded", "main;Work.fast 50\nmain;Work.slow 100\nmain;New.thing 10\n");
    int rc = RUN(flame_cmd_diff, "diff", path("a.folded"), path("b.folded"), "-o", path("d.svg"));
    is_int(rc, 0, "diff to SVG exits 0");
    ok(access(path("d.svg"), F_OK) == 0 && access(path("d.mirror.svg"), F_OK) == 0,
       "writes d.svg and d.mirror.svg");
    ok(has(err_buf, "d.mirror.svg"), "says where the mirror went");
    profile *p = profile_new();
    flame_err err = FLAME_ERR_INIT;
    ok(profile_load_path(p, path("d.svg"), &err) == 0 && profile_is_diff(p),
       "d.svg reads back as a differential profile");
    is_int(profile_total(p), 160, "d.svg widths are the after profile");
    profile_free(p);
    p = profile_new();
    ok(profile_load_path(p, path("d.mirror.svg"), &err) == 0 && profile_is_diff(p),
       "mirror reads back as a differential");
    is_int(profile_total(p), 120, "mirror widths are the before profile");
    profile_free(p);
    char *svg = slurp(path("d.mirror.svg"));
    ok(has(svg, "Gone.old"), "the vanished frame is in the mirror");
    /* a = 120 total, b = 160: mirror scales b to 120; Gone.old 20 -> 0 is blue (shrank) and
     * Work.slow (50 -> 100) red (grew), though the mirror is diff(b, a) drawn negated */
    const char *gf = fill_of(svg, "Gone.old");
    ok(strlen(gf) > 5 && !strcmp(gf + strlen(gf) - 5, ",255)") && strncmp(gf, "rgb(255,", 8),
       "mirror: vanished frame is blue (%s)", gf);
    ok(strncmp(fill_of(svg, "Work.slow"), "rgb(255,", 8) == 0, "mirror: grown frame is red");
    svg = slurp(path("d.svg"));
    ok(strncmp(fill_of(svg, "Work.slow"), "rgb(255,", 8) == 0, "forward: grown frame is red");
    ok(strncmp(fill_of(svg, "New.thing"), "rgb(255,", 8) == 0, "forward: new frame is red");
    ok(!has(svg, "Gone.old"), "forward: the vanished frame has no width");

    /* --single: no mirror; and no temporary files left behind */
    rc = RUN(flame_cmd_diff, "diff", "--single", path("a.folded"), path("b.folded"), "-o",
             path("s.svg"));
    ok(rc == 0 && access(path("s.mirror.svg"), F_OK) != 0, "--single writes one file");
    DIR *dd = opendir(dir);
    int stray = 0;
    for (struct dirent *e; (e = readdir(dd));)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            stray++;
    closedir(dd);
    is_int(stray, 0, "no temporary files left");

    /* SVG vs folded: render a plain profile to SVG with render_svg, diff it with a file */
    p = profile_new();
    profile_add(p, "main;Work.slow", 14, 40, PROFILE_ONE_COLUMN);
    profile_add(p, "main;Work.fast", 14, 60, PROFILE_ONE_COLUMN);
    render_opts ro;
    render_opts_default(&ro);
    FILE *f = fopen(path("plain.svg"), "w");
    ok(render_svg(p, &ro, f, &err) == 0, "render a plain SVG");
    fclose(f);
    profile_free(p);
    put("after.folded", "main;Work.slow 80\nmain;Work.fast 20\n");
    rc = RUN(flame_cmd_diff, "diff", path("plain.svg"), path("after.folded"), "-o",
             path("sf.folded"));
    is_int(rc, 0, "SVG/file diff exits 0");
    is_str(slurp(path("sf.folded")), "main;Work.fast 60 20\nmain;Work.slow 40 80\n",
           "SVG/file diff counts");
    ok(has(out_buf, "Work.slow") && has(out_buf, "grew"), "summary after SVG/file diff");
}

static void test_movers(void)
{
    put("m1.folded", "t;Main.run;App.countPrimes 300\nt;Main.run;App.mixHashes 600\n"
                     "t;Main.run;JVM::gc 100\nt;Main.run;App.rec;App.rec;App.rec 100\n");
    put("m2.folded", "t;Main.run;App.countPrimes 1200\nt;Main.run;App.mixHashes 600\n"
                     "t;Main.run;JVM::gc 100\nt;Main.run;App.rec;App.rec;App.rec 100\n");
    int rc = RUN(flame_cmd_diff, "diff", path("m1.folded"), path("m2.folded"), "-o", path("m.svg"),
                 "--single");
    is_int(rc, 0, "movers diff exits 0");
    const char *grew = strstr(out_buf, "grew most:"), *shrank = strstr(out_buf, "shrank most:");
    ok(grew && shrank && grew < shrank, "summary has grew and shrank sections");
    const char *cp = strstr(out_buf, "App.countPrimes");
    ok(cp && cp > grew && cp < shrank, "countPrimes listed as grown");
    ok(has(out_buf, "App.countPrimes") && has(out_buf, "27.27%") && has(out_buf, "60.00%") &&
           has(out_buf, "+32.73"),
       "before/after percentages and delta in points");
    const char *mh = strstr(out_buf, "App.mixHashes");
    ok(mh && mh > shrank, "mixHashes listed as shrunk");
    ok(!has(out_buf, "JVM::gc"), "C++ frames left out without --all-frames");

    rc = RUN(flame_cmd_diff, "diff", "--all-frames", path("m1.folded"), path("m2.folded"), "-o",
             path("m.svg"), "--single");
    ok(has(out_buf, "JVM::gc"), "--all-frames lists C++ frames");

    /* the same samples out of a slightly bigger total: 0.2137% -> 0.2119%, prints as -0.00 */
    put("z1.folded", "t;App.hash 1\nt;App.work 467\n");
    put("z2.folded", "t;App.hash 1\nt;App.work 471\n");
    rc = RUN(flame_cmd_diff, "diff", "--no-normalize", path("z1.folded"), path("z2.folded"), "-o",
             path("z.svg"), "--single");
    ok(rc == 0 && !has(out_buf, "App.hash") && !has(out_buf, "-0.00") && has(out_buf, "(none)"),
       "a change that rounds to 0.00 points is not a mover");

    /* inlined leaves name the method they run in; annotations do not split a method */
    put("i1.folded", "t;Main.run_[j];App.countPrimes_[j];App.isPrime_[i] 100\n"
                     "t;Main.run_[j];App.mix_[j] 100\nt;Main.run_[j];App.mix 100\n");
    put("i2.folded", "t;Main.run_[j];App.countPrimes_[j];App.isPrime_[i] 300\n"
                     "t;Main.run_[j];App.countPrimes_[j] 50\nt;Main.run_[j];App.mix_[j] 50\n"
                     "t;Main.run_[j];App.sieve_[j];App.isPrime_[i] 20\n");
    rc = RUN(flame_cmd_diff, "diff", path("i1.folded"), path("i2.folded"), "-o", path("i.svg"),
             "--single");
    grew = strstr(out_buf, "grew most:");
    shrank = strstr(out_buf, "shrank most:");
    cp = strstr(out_buf, "App.isPrime  ");
    ok(rc == 0 && cp && cp > grew && cp < shrank &&
           has(cp, "\n      inlined into App.countPrimes") &&
           has(cp, "\n      inlined into App.sieve"),
       "inlined self time: the method, then the hosts it ran in");
    mh = strstr(out_buf, "App.mix ");
    ok(mh && mh > shrank && has(out_buf, "66.67%") && !has(out_buf, "App.mix_[j]"),
       "interpreted and JIT frames of one method are one line (66.67%% before)");
    if (!cp || !mh)
        printf("# %s", out_buf);

    /* names come from the container: control bytes never reach the terminal, long names keep
     * their end */
    char evil[600];
    snprintf(evil, sizeof evil, "t;App.\x1b[31mred\x07.m 5\nt;App.%0300d.tail 5\n", 7);
    put("e1.folded", "t;App.x 10\n");
    put("e2.folded", evil);
    rc = RUN(flame_cmd_diff, "diff", path("e1.folded"), path("e2.folded"), "-o", path("ev.svg"),
             "--all-frames", "--single");
    ok(rc == 0 && !strchr(out_buf, '\x1b') && !strchr(out_buf, '\x07') &&
           has(out_buf, "App.?[31mred?.m"),
       "control bytes in names are printed as '?'");
    ok(has(out_buf, "    ...000") && has(out_buf, "0007.tail  "),
       "long names are cut at the start, keeping the method");

    /* a long Java name: the package abbreviated, class and method kept whole */
    put("l1.folded", "t;org.h2.mvstore.tx.TransactionMap.getFromSnapshotWithALongName_[j];"
                     "org.h2.mvstore.MVMap.binarySearchWithAVeryVeryLongNameIndeed_[i] 10\n"
                     "t;org.h2.command.Command.executeQuery_[j] 10\n");
    put("l2.folded", "t;org.h2.mvstore.tx.TransactionMap.getFromSnapshotWithALongName_[j];"
                     "org.h2.mvstore.MVMap.binarySearchWithAVeryVeryLongNameIndeed_[i] 30\n"
                     "t;org.h2.mvstore.MVMap.binarySearchWithAVeryVeryLongNameIndeed_[j] 5\n"
                     "t;org.h2.command.Command.executeQuery_[j] 10\n");
    rc = RUN(flame_cmd_diff, "diff", path("l1.folded"), path("l2.folded"), "-o", path("l.svg"),
             "--single");
    ok(rc == 0 &&
           has(out_buf, "\n    org.h2.mvstore.MVMap.binarySearchWithAVeryVeryLongNameIndeed  ") &&
           has(out_buf, "inlined into o.h.m.t.TransactionMap.getFromSnapshotWithALongName  "),
       "a long host name keeps its class and method (package as initials)");
    if (!has(out_buf, "o.h.m.t.TransactionMap.getFromSnapshot"))
        printf("# %s", out_buf);

    /* inclusive: recursion counted once per stack; Main.run stays at 100% */
    diff_opts o = {.normalize = DIFF_NORM_AUTO};
    profile *a = profile_new(), *b = profile_new();
    flame_err err = FLAME_ERR_INIT;
    profile_load_path(a, path("m1.folded"), &err);
    profile_load_path(b, path("m2.folded"), &err);
    diff *d = NULL;
    ok(diff_new(a, b, &o, &d, &err) == 0, "diff_new");
    diff_mover g[10], s[10];
    size_t ng, ns;
    diff_movers_opts mo = {.inclusive = true};
    diff_movers(d, &mo, 10, g, &ng, s, &ns, &err);
    bool rec_ok = false, run_listed = false;
    for (size_t i = 0; i < ns; i++)
        if (strcmp(s[i].name, "App.rec") == 0)
            rec_ok = fabs(s[i].before_pct - 9.0909) < 0.01 && fabs(s[i].after_pct - 5.0) < 0.01;
    for (size_t i = 0; i < ng + ns; i++)
        if (strcmp(i < ng ? g[i].name : s[i - ng].name, "Main.run") == 0)
            run_listed = true;
    ok(rec_ok, "inclusive share of a recursive frame counts each stack once (9.09%% -> 5%%)");
    ok(!run_listed, "a frame on every stack does not move");
    ok(ng >= 1 && strcmp(g[0].name, "App.countPrimes") == 0, "inclusive: countPrimes grew most");
    diff_free(d);
}

/* The largest change among the movers table's method lines (indented 4, hosts are indented 6),
 * in points. */
static double largest_net_mover(const char *out)
{
    double m = 0;
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *e = strchr(l, '\n');
        if (strncmp(l, "    ", 4) != 0 || l[4] == ' ' || !e)
            continue;
        const char *sp = e;
        while (sp > l && sp[-1] != ' ')
            sp--;
        double d = fabs(strtod(sp, NULL));
        m = d > m ? d : m;
    }
    return m;
}

/* An unchanged JVM profiled twice: the JIT inlined countPrimes into work the first time and
 * compiled it on its own the second, so the stacks differ only in their marks. */
static void test_reinlined(void)
{
    put("j1.folded", "java;worker-0;Thread.run_[int];App.work_[j];App.countPrimes_[i];"
                     "App.isPrime_[i] 760\n"
                     "java;worker-0;Thread.run_[int];App.work_[j];App.mixHashes_[j] 240\n");
    put("j2.folded", "java;worker-0;Thread.run_[j];App.work_[j];App.countPrimes_[j];"
                     "App.isPrime_[i] 755\n"
                     "java;worker-0;Thread.run_[j];App.work_[j];App.countPrimes_[j] 5\n"
                     "java;worker-0;Thread.run_[j];App.work_[j];App.mixHashes_[j] 240\n");
    int rc =
        RUN(flame_cmd_diff, "diff", path("j1.folded"), path("j2.folded"), "-o", path("j.folded"));
    is_int(rc, 0, "diff of a re-inlined JVM exits 0");
    is_str(slurp(path("j.folded")),
           "java;worker-0;Thread.run;App.work_[j];App.countPrimes 0 5\n"
           "java;worker-0;Thread.run;App.work_[j];App.countPrimes;App.isPrime_[i] 760 755\n"
           "java;worker-0;Thread.run;App.work_[j];App.mixHashes_[j] 240 240\n",
           "stacks that differ only in JIT marks are matched as read (one isPrime stack)");
    const char *ip = strstr(out_buf, "App.isPrime  ");
    ok(ip && has(ip, "76.00%") && has(ip, "75.50%") && has(ip, "-0.50"),
       "isPrime is one mover: 76%% -> 75.5%%, -0.5 points");
    ok(largest_net_mover(out_buf) <= 0.5, "no mover above 0.5 points for an unchanged JVM");
    ok(has(ip, "\n      inlined into App.work ") &&
           has(ip, "\n      inlined into App.countPrimes "),
       "its hosts before and after as detail lines");
    ok(has(err_buf, "matched as one (2 stacks joined others); --exact keeps them apart"),
       "a note says stacks were matched as read");
    if (!ip)
        printf("# %s", out_buf);

    rc = RUN(flame_cmd_diff, "diff", "--exact", path("j1.folded"), path("j2.folded"), "-o",
             path("je.folded"));
    char *t = slurp(path("je.folded"));
    ok(rc == 0 && has(t, "App.countPrimes_[i];App.isPrime_[i] 760 0\n") &&
           has(t, "App.countPrimes_[j];App.isPrime_[i] 0 755\n") && !has(err_buf, "matched"),
       "--exact: the stacks as folded, apart");

    /* the graph: one isPrime frame, near white (-0.5 points), not a red and a blue tower */
    rc = RUN(flame_cmd_diff, "diff", path("j1.folded"), path("j2.folded"), "-o", path("j.svg"),
             "--single");
    t = slurp(path("j.svg"));
    const char *f = has(t, "<title>App.isPrime (") ? strstr(t, "<title>App.isPrime (") : NULL;
    ok(rc == 0 && f && !strstr(f + 1, "<title>App.isPrime (") && has(f, "75.50%; -0.50%)"),
       "the graph has one isPrime frame, -0.5%%");

    /* summary JSON: the method once, its hosts listed */
    rc = RUN(flame_cmd_diff, "diff", path("j1.folded"), path("j2.folded"), "-o", path("j2.svg"),
             "--single", "--summary-json", path("j.json"));
    t = slurp(path("j.json"));
    ok(rc == 0 && has(t, "\"name\": \"App.isPrime\"") && has(t, "\"hosts\": [") &&
           has(t, "\"inlined_into\": \"App.work\"") && has(t, "\"matched\": \"as read\""),
       "--summary-json: the method with its hosts");

    /* merge matches as read too */
    rc = RUN(flame_cmd_merge, "merge", path("j1.folded"), path("j2.folded"), "-o",
             path("jm.folded"));
    is_str(slurp(path("jm.folded")),
           "java;worker-0;Thread.run;App.work_[j];App.countPrimes 5\n"
           "java;worker-0;Thread.run;App.work_[j];App.countPrimes;App.isPrime_[i] 1515\n"
           "java;worker-0;Thread.run;App.work_[j];App.mixHashes_[j] 480\n",
           "merge adds up stacks matched as read");
    rc = RUN(flame_cmd_merge, "merge", "--exact", path("j1.folded"), path("j2.folded"), "-o",
             path("jme.folded"));
    t = slurp(path("jme.folded"));
    ok(rc == 0 && has(t, "App.countPrimes_[i];App.isPrime_[i] 760\n"), "merge --exact: as folded");
}

static void test_merge(void)
{
    put("r1.folded", "x 6\ny 4\n");
    put("r2.folded", "x 50\nz 50\n");
    int rc = RUN(flame_cmd_merge, "merge", path("r1.folded"), path("r2.folded"), "-o",
                 path("all.folded"));
    is_int(rc, 0, "merge exits 0");
    is_str(slurp(path("all.folded")), "x 56\ny 4\nz 50\n", "merge sums");
    rc = RUN(flame_cmd_merge, "merge", "--normalize", path("r1.folded"), path("r2.folded"), "-o",
             path("alln.folded"));
    is_int(rc, 0, "merge --normalize exits 0");
    is_str(slurp(path("alln.folded")), "x 110\ny 40\nz 50\n",
           "merge --normalize scales each input to the same total");
    rc = RUN(flame_cmd_merge, "merge", path("r1.folded"), path("r2.folded"), path("r1.folded"),
             "-o", path("all.svg"));
    is_int(rc, 0, "merge to SVG exits 0");
    rc = RUN(flame_cmd_diff, "diff", path("all.svg"), path("r2.folded"), "--no-normalize", "-o",
             path("md.folded"));
    is_int(rc, 0, "diff accepts a merged SVG");
    is_str(slurp(path("md.folded")), "x 62 50\ny 8 0\nz 50 50\n", "merged SVG read back");
    rc =
        RUN(flame_cmd_merge, "merge", path("r1.folded"), path("r2.folded"), "-o", path("all.json"));
    char *j = slurp(path("all.json"));
    ok(rc == 0 && j && has(j, "speedscope"), "merge to .json writes speedscope");
    rc = RUN(flame_cmd_merge, "merge", "--format", "folded", path("r1.folded"), "-o",
             path("one.out"));
    is_str(slurp(path("one.out")), "x 6\ny 4\n", "--format overrides the extension");
}

static void test_errors(void)
{
    put("ok.folded", "x 5\ny 3\n");
    put("empty.folded", "");
    put("zero.folded", "x 0\n");
    put("junk.folded", "hello world\n");
    put("two.folded", "x 1 2\ny 3 4\n");
    mkdir(path("adir"), 0755);
    struct {
        const char *what, *a, *b, *msg;
    } cases[] = {
        {"missing file", "/nonexistent/nope.folded", NULL,
         "no such file: /nonexistent/nope.folded"},
        {"unreadable format", path("junk.folded"), NULL, "no count"},
        {"empty file", path("empty.folded"), NULL, "no stacks"},
        {"all-zero profile", path("zero.folded"), NULL, "empty profile"},
        {"differential input", path("two.folded"), NULL, "differential"},
        {"directory", path("adir"), NULL, "is a directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = RUN(flame_cmd_diff, "diff", cases[i].a, path("ok.folded"), "-o", path("e.svg"));
        is_int(rc, 1, "diff, %s: exit 1", cases[i].what);
        ok(has(err_buf, cases[i].msg) && one_line(err_buf) && has(err_buf, "docker flame diff: "),
           "diff, %s: one line naming it", cases[i].what);
        if (!has(err_buf, cases[i].msg) || !one_line(err_buf))
            printf("#   stderr: %s", err_buf);
        rc = RUN(flame_cmd_merge, "merge", path("ok.folded"), cases[i].a, "-o", path("e.svg"));
        is_int(rc, 1, "merge, %s: exit 1", cases[i].what);
        ok(has(err_buf, cases[i].msg) && one_line(err_buf), "merge, %s: one line", cases[i].what);
    }
    ok(access(path("e.svg"), F_OK) != 0, "no output written on bad input");

    /* units: one profile in samples (small counts), the other in periods (~1e6 per sample) */
    char s1[4096] = "", s2[8192] = "";
    for (int i = 0; i < 25; i++) {
        char l[128];
        snprintf(l, sizeof l, "main;f%d %d\n", i, i + 1);
        strcat(s1, l);
        snprintf(l, sizeof l, "main;f%d %d\n", i, (i + 1) * 1001001);
        strcat(s2, l);
    }
    put("samples.folded", s1);
    put("periods.folded", s2);
    int rc = RUN(flame_cmd_diff, "diff", path("samples.folded"), path("periods.folded"), "-o",
                 path("u.svg"));
    is_int(rc, 1, "mismatched units: exit 1");
    ok(has(err_buf, "counts samples but") && has(err_buf, "periods") && one_line(err_buf),
       "mismatched units: one line");
    rc = RUN(flame_cmd_diff, "diff", "--ignore-units", path("samples.folded"),
             path("periods.folded"), "-o", path("u.svg"));
    is_int(rc, 0, "--ignore-units overrides the check");

    /* usage errors: exit 2 */
    const char *const *usage[] = {
        (const char *const[]){"diff", path("ok.folded"), NULL},
        (const char *const[]){"diff", "--bogus", path("ok.folded"), path("ok.folded"), NULL},
        (const char *const[]){"diff", path("ok.folded"), path("ok.folded"), "-o", "x.json", NULL},
        (const char *const[]){"diff", "--top", "many", path("ok.folded"), path("ok.folded"), NULL},
        (const char *const[]){"diff", "-", "-", NULL},
        (const char *const[]){"diff", "--colors", "plaid", "a", "b", NULL},
    };
    for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
        int r = run(flame_cmd_diff, usage[i]);
        is_int(r, 2, "diff usage error %zu: exit 2", i);
        ok(one_line(err_buf), "diff usage error %zu: one line", i);
    }
    rc = RUN(flame_cmd_merge, "merge", path("ok.folded"), path("ok.folded"));
    ok(rc == 2 && has(err_buf, "-o OUT is required"), "merge without -o: exit 2");
    rc = RUN(flame_cmd_merge, "merge", path("ok.folded"), "-o", path("all.weird"));
    ok(rc == 2 && has(err_buf, "--format"), "merge with an unknown extension: exit 2");
    rc = RUN(flame_cmd_diff, "diff", "--help");
    ok(rc == 0 && has(out_buf, "Examples:") && has(out_buf, "container"), "diff --help teaches");
    rc = RUN(flame_cmd_merge, "merge", "--help");
    ok(rc == 0 && has(out_buf, "Examples:"), "merge --help teaches");

    /* an output directory that does not exist: exit 1, one line */
    rc = RUN(flame_cmd_diff, "diff", path("ok.folded"), path("ok.folded"), "-o",
             "/nonexistent/dir/d.svg");
    ok(rc == 1 && has(err_buf, "cannot write /nonexistent/dir/d.svg") && one_line(err_buf),
       "unwritable output: exit 1, one line");
}

/* A fake container profiler: "ctr-fast" and "ctr-slow" are containers; records its calls. */
static int fake_calls;
static size_t fake_n;
static char fake_names[4][32];
static double fake_duration;

static int fake_is_container(void *ctx, const char *arg)
{
    (void)ctx;
    return strncmp(arg, "ctr-", 4) == 0;
}

static int fake_profile(void *ctx, const char *const *containers, size_t n, uint64_t duration_ms,
                        profile **out, flame_err *err)
{
    (void)ctx;
    fake_calls++;
    fake_n = n;
    fake_duration = (double)duration_ms / 1000;
    for (size_t i = 0; i < n; i++) {
        snprintf(fake_names[i % 4], sizeof fake_names[0], "%s", containers[i]);
        out[i] = profile_new();
        bool slow = strcmp(containers[i], "ctr-slow") == 0;
        const char *a = "worker-0;FlameFixture.work;FlameFixture.countPrimes";
        const char *b = "worker-0;FlameFixture.work;FlameFixture.mixHashes";
        profile_add(out[i], a, strlen(a), slow ? 800 : 400, PROFILE_ONE_COLUMN);
        profile_add(out[i], b, strlen(b), 400, PROFILE_ONE_COLUMN);
    }
    if (n > 0 && strcmp(containers[0], "ctr-fail") == 0)
        return flame_fail(err, FLAME_EXIT_NO_JVM, "ctr-fail: no JVM in the container");
    return 0;
}

/* run() with a profiler (containers): the verb's stdout and stderr captured. */
static int run_prof(int (*fn)(int, char **, const flame_profiler *), const char *const *args,
                    const flame_profiler *pr)
{
    char *argv[32];
    int argc = 0;
    for (; args[argc]; argc++)
        argv[argc] = (char *)args[argc];
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    FILE *fo = tmpfile(), *fe = tmpfile();
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    int rc = fn(argc, argv, pr);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    read_capture(fileno(fo), out_buf, sizeof out_buf);
    read_capture(fileno(fe), err_buf, sizeof err_buf);
    fclose(fo);
    fclose(fe);
    return rc;
}

static void test_containers(void)
{
    flame_profiler pr = {fake_is_container, fake_profile, NULL, NULL};
    int rc = run_prof(
        flame_cmd_diff,
        (const char *const[]){"diff", "ctr-fast", "ctr-slow", "-d", "5", "-o", path("c.svg"), NULL},
        &pr);
    is_int(rc, 0, "container/container diff exits 0");
    is_int(fake_calls, 1, "both containers profiled by ONE call");
    ok(fake_n == 2 && !strcmp(fake_names[0], "ctr-fast") && !strcmp(fake_names[1], "ctr-slow"),
       "the call names both containers in order");
    ok(fake_duration == 5, "-d is passed as the duration");
    const char *grew = strstr(out_buf, "grew most:"), *shrank = strstr(out_buf, "shrank most:");
    const char *cp = strstr(out_buf, "FlameFixture.countPrimes");
    ok(grew && cp && cp > grew && cp < shrank, "summary names countPrimes as grown");

    put("base.folded", "worker-0;FlameFixture.work;FlameFixture.countPrimes 10\n"
                       "worker-0;FlameFixture.work;FlameFixture.mixHashes 10\n");
    fake_calls = 0;
    rc = run_prof(flame_cmd_diff,
                  (const char *const[]){"diff", path("base.folded"), "ctr-slow", "-o",
                                        path("c2.folded"), NULL},
                  &pr);
    ok(rc == 0 && fake_calls == 1 && fake_n == 1 && fake_duration == 30,
       "file vs container: the container alone is profiled, default 30 s");
    is_str(slurp(path("c2.folded")),
           "worker-0;FlameFixture.work;FlameFixture.countPrimes 600 800\n"
           "worker-0;FlameFixture.work;FlameFixture.mixHashes 600 400\n",
           "file vs container counts (file scaled to the container's total)");

    rc = run_prof(flame_cmd_diff,
                  (const char *const[]){"diff", "nope", "ctr-slow", "-o", path("c3.svg"), NULL},
                  &pr);
    ok(rc == 1 && has(err_buf, "no such file or running container: nope") && one_line(err_buf),
       "neither file nor container: exit 1, one line");
    rc = run_prof(flame_cmd_diff,
                  (const char *const[]){"diff", "ctr-fail", "ctr-slow", "-o", path("c4.svg"), NULL},
                  &pr);
    ok(rc == FLAME_EXIT_NO_JVM && has(err_buf, "no JVM") && one_line(err_buf),
       "a profiler error keeps its exit code and message");

    fake_calls = 0;
    rc = run_prof(flame_cmd_merge,
                  (const char *const[]){"merge", "ctr-fast", path("base.folded"), "ctr-slow", "-o",
                                        path("cm.folded"), NULL},
                  &pr);
    ok(rc == 0 && fake_calls == 1 && fake_n == 2, "merge: containers profiled by one call");
    is_str(slurp(path("cm.folded")),
           "worker-0;FlameFixture.work;FlameFixture.countPrimes 1210\n"
           "worker-0;FlameFixture.work;FlameFixture.mixHashes 810\n",
           "merge of containers and a file");
}

/* Enough stacks for the two-thread union; checked against counts known by construction. */
static void test_big_union(void)
{
    profile *a = profile_new(), *b = profile_new();
    char st[64];
    for (int i = 0; i < 60000; i++) {
        int n = snprintf(st, sizeof st, "main;w%d;leaf%d", i % 97, i);
        profile_add(a, st, (size_t)n, 1, PROFILE_ONE_COLUMN);
    }
    for (int i = 30000; i < 90000; i++) {
        int n = snprintf(st, sizeof st, "main;w%d;leaf%d", i % 97, i);
        profile_add(b, st, (size_t)n, 3, PROFILE_ONE_COLUMN);
    }
    diff_opts o = {.normalize = DIFF_NORM_OFF};
    diff *d = NULL;
    flame_err err = FLAME_ERR_INIT;
    ok(diff_new(a, b, &o, &d, &err) == 0, "big union: diff_new");
    const profile *r = diff_view(d, false);
    is_int(profile_stacks(r), 90000, "big union: 90000 distinct stacks");
    is_int(profile_total_before(r), 60000, "big union: before total");
    is_int(profile_total(r), 180000, "big union: after total");
    FILE *f = fopen(path("big.folded"), "w");
    diff_write_folded(r, f, &err);
    fclose(f);
    f = fopen(path("big.folded"), "r");
    char line[128];
    int only_a = 0, both = 0, only_b = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        int i, c1, c2, w;
        if (sscanf(line, "main;w%d;leaf%d %d %d", &w, &i, &c1, &c2) != 4 || w != i % 97) {
            bad++;
            continue;
        }
        int want1 = i < 60000, want2 = i >= 30000 ? 3 : 0;
        if (c1 != want1 || c2 != want2)
            bad++;
        else if (c1 && c2)
            both++;
        else if (c1)
            only_a++;
        else
            only_b++;
    }
    fclose(f);
    ok(bad == 0 && only_a == 30000 && both == 30000 && only_b == 30000,
       "big union: every stack has the right counts (%d bad)", bad);
    /* the mirror is a profile of its own: both views hold their counts at once (the CLI renders
     * them on two threads) */
    const profile *m = diff_view(d, true);
    ok(m && m != r, "big union: the mirror view is another profile");
    is_int(m ? profile_total_before(m) : -1, 180000, "big union: mirror's first column = after");
    is_int(m ? profile_total(m) : -1, 60000, "big union: mirror's second column = before");
    is_int(profile_total_before(r), 60000, "big union: forward view unchanged by the mirror");
    diff_free(d);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    test_strip_hex();
    test_file_diff();
    test_svg_outputs();
    test_movers();
    test_reinlined();
    test_merge();
    test_errors();
    test_containers();
    test_big_union();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return tap_done();
}
