/* Unit tests for flame/render.c and flame/speedscope.c: geometry and tooltips, pruning,
 * palettes (checked against libc's drand48 for flamegraph.pl's name-seeded colours),
 * differential colours, escaping of hostile names, determinism, speedscope JSON. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flame/palette.h"
#include "flame/speedscope.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static char *render_text(const char *folded, const render_opts *o)
{
    profile *p = load_str(folded);
    if (!p)
        return NULL;
    char *s = render_str(p, o, NULL);
    profile_free(p);
    return s;
}

static void test_basic(void)
{
    render_opts o;
    render_opts_default(&o);
    size_t n;
    profile *p = load_str("a;b;c 10\na;b 5\na;d 3\n");
    char *s = render_str(p, &o, &n);
    ok(s && xml_well_formed(s, n), "simple graph is well-formed XML");
    ok(s && strstr(s, "<title>c (10 samples, 55.56%)</title>"), "tooltip: name, samples, share");
    ok(s && strstr(s, "<title>all (18 samples, 100%)</title>"), "root frame 'all'");
    ok(s && strstr(s, ">Flame Graph</text>"), "default title");
    ok(s && strstr(s, "onload=\"init(evt)\"") && strstr(s, "function search("),
       "interactive script embedded");
    /* geometry: width 1200, xpad 10 -> 1180 px for 18 samples; c starts at 5 */
    ok(s && strstr(s, "<g data-s=\"5\" data-w=\"10\"><title>c (") &&
           strstr(s, "<rect x=\"337.8\" y=\"37.0\" width=\"655.6\" height=\"15.0\""),
       "frame position and size");
    /* 4 levels (all, a, b, c): 4*16 + ypad1 36 + ypad2 34 = 134 */
    ok(s && strstr(s, "height=\"134\""), "image height from the deepest frame");
    char *again = render_str(p, &o, NULL);
    ok(s && again && strcmp(s, again) == 0, "deterministic: same input, same bytes");
    free(again);
    free(s);

    o.countname = "ms";
    o.factor = 1000;
    o.title = "T";
    o.subtitle = "sub";
    o.nametype = "Frame:";
    s = render_str(p, &o, &n);
    ok(s && strstr(s, "<title>c (10,000 ms, 55.56%)</title>"), "countname and factor");
    ok(s && strstr(s, ">T</text>") && strstr(s, ">sub</text>"), "title and subtitle");
    ok(s && strstr(s, "nametype: \"Frame:\""), "nametype handed to the script");
    ok(s && strstr(s, "height=\"158\""), "subtitle adds two font sizes of padding");
    free(s);

    render_opts_default(&o);
    o.inverted = true;
    s = render_str(p, &o, &n);
    ok(s && strstr(s, ">Icicle Graph</text>"), "inverted: title Icicle Graph");
    ok(s && strstr(s, "<title>all (18 samples, 100%)</title><rect x=\"10.0\" y=\"36.0\""),
       "inverted: root at the top");
    free(s);

    memset(&o, 0, sizeof o); /* a caller that fills only what it needs */
    o.width = 1200, o.height = 16, o.fontsize = 12, o.fontwidth = 0.59, o.factor = 1;
    s = render_str(p, &o, &n);
    ok(s && strstr(s, "<title>c (10 samples, 55.56%)</title>") && strstr(s, "font-family:Verdana"),
       "unset strings fall back to the defaults");
    free(s);

    render_opts_default(&o);
    o.total = 36;
    s = render_str(p, &o, &n);
    ok(s && strstr(s, "<title>c (10 samples, 27.78%)</title>") &&
           strstr(s, "<title>all (18 samples, 100%)</title><rect x=\"10.0\" y=\"85.0\" "
                     "width=\"590.0\""),
       "total: 100%% is the given total");
    free(s);
    profile_free(p);
}

static void test_labels(void)
{
    render_opts o;
    render_opts_default(&o);
    o.width = 220; /* 200 px for 2 samples: 100 px each -> int(100/(12*0.59)) = 14 chars */
    char *s = render_text("averyveryverylongfunctionname 1\nshort_[k] 1\n", &o);
    ok(s && strstr(s, ">averyveryver..</text>"), "long label cut to fit with ..");
    ok(s && strstr(s, "<title>short (1 samples") && strstr(s, ">short</text>"),
       "annotation _[k] stripped from title and label");
    free(s);
    o.width = 40; /* 10 px per sample: 1 char -> no label */
    s = render_text("abcdef 1\nghijkl 1\n", &o);
    ok(s && strstr(s, "<title>abcdef (1 samples, 50.00%)</title>") &&
           strstr(s, "rx=\"2\" ry=\"2\"/><text x=\"13.00\" y=\"47.50\"></text>"),
       "no label under 3 characters");
    free(s);
}

static void test_pruning(void)
{
    /* 1 wide stack and 2000 narrow ones: at width 1200 each narrow frame is ~0.3 px */
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    fprintf(f, "main;big 4000\n");
    for (int i = 0; i < 2000; i++)
        fprintf(f, "main;small%d;deep%d 1\n", i, i);
    fclose(f);
    render_opts o;
    render_opts_default(&o);
    profile *p = load_str(text);
    size_t n;
    char *s = render_str(p, &o, &n);
    is_int(count_str(s, "<g data-s="), 2000 * 2 + 3, "all frames wider than 0.1 px kept");
    free(s);
    o.minwidth = 0.5;
    s = render_str(p, &o, &n);
    is_int(count_str(s, "<g data-s="), 3, "minwidth 0.5 px prunes the narrow frames");
    ok(s && strstr(s, "height=\"118\""), "pruned frames do not count for the height");
    free(s);
    o.minwidth = 1;
    o.minwidth_pct = true; /* 1% of 6000 = 60 samples */
    s = render_str(p, &o, &n);
    is_int(count_str(s, "<g data-s="), 3, "minwidth in percent");
    free(s);
    o.minwidth = 0;
    o.minwidth_pct = false;
    o.embed_folded = false;
    s = render_str(p, &o, &n);
    ok(s && !strstr(s, "docker-flame-data"), "embedding can be turned off");
    free(s);
    profile_free(p);
    free(text);
}

/* flamegraph.pl seeds drand48 with the sum of the name's code points (Perl >= 5.20). */
static void test_hot_colours(void)
{
    render_opts o;
    render_opts_default(&o);
    const char *names[] = {"all", "java", "\xc3\xa9t\xc3\xa9", "JVMType3::method42"};
    char *s = render_text("java;\xc3\xa9t\xc3\xa9;JVMType3::method42 5\n", &o);
    for (size_t i = 0; i < 4; i++) {
        const unsigned char *u = (const unsigned char *)names[i];
        long sum = 0;
        for (size_t k = 0; u[k]; k++) {
            if (u[k] == 0xc3) { /* the only 2-byte characters used here */
                sum += ((u[k] & 0x1f) << 6) | (u[k + 1] & 0x3f);
                k++;
            } else {
                sum += u[k];
            }
        }
        srand48(sum);
        double v = drand48();
        unsigned r, g, b;
        char key[64];
        snprintf(key, sizeof key, "%s (", names[i]);
        ok(s && frame_fill(s, key, &r, &g, &b) == 0 && r == 205 + (unsigned)(50 * v) &&
               g == (unsigned)(230 * v) && b == (unsigned)(55 * v),
           "hot colour of '%s' is flamegraph.pl's", names[i]);
    }
    free(s);
}

/* --hash, worked by hand for "abc": v1 = 1 - (7/9 + 10/10*0.7 + 3/11*0.49) / 3.19 = 0.4948,
 * v2 = v3 (from "cba") = 1 - (9/9 + 10/10*0.7 + 1/11*0.49) / 3.19 = 0.4531
 * -> hot rgb(205 + 22, 113, 24). "mod`abc": v1 ignores the module prefix (same green), v2/v3
 * hash the reversed name "cba`dom" whose prefix up to the backtick goes: "dom" -> 0.9641. */
static void test_hash_colours(void)
{
    render_opts o;
    render_opts_default(&o);
    o.hash = true;
    char *s = render_text("abc;mod`abc 1\n", &o);
    unsigned r, g, b;
    ok(s && frame_fill(s, "abc (", &r, &g, &b) == 0 && r == 227 && g == 113 && b == 24,
       "--hash colour of 'abc'");
    ok(s && frame_fill(s, "mod`abc (", &r, &g, &b) == 0 && r == 253 && g == 113 && b == 53,
       "--hash with a module` prefix");
    free(s);
}

static bool is_green(unsigned r, unsigned g, unsigned b)
{
    return r >= 50 && r <= 110 && g >= 200 && b >= 50 && b <= 110 && r == b;
}

static void test_java_palette(void)
{
    render_opts o;
    render_opts_default(&o);
    o.colors = "java";
    char *s = render_text("t;Interp_[j];inl_[i];JVM::gc;vfs_read_[k];Work.step;java/util/Map:.get;"
                          "foo.constprop.0;start_thread;Slow.loop_[int];net/x.y_[k];"
                          "ext4::io_[k] 1\n",
                          &o);
    unsigned r, g, b;
    ok(s && frame_fill(s, "Interp (", &r, &g, &b) == 0 && is_green(r, g, b), "_[j] is green");
    ok(s && frame_fill(s, "inl (", &r, &g, &b) == 0 && r >= 50 && r <= 110 && g >= 165 && g == b,
       "_[i] is aqua");
    ok(s && frame_fill(s, "JVM::gc (", &r, &g, &b) == 0 && r == g && r >= 175 && b <= 70,
       ":: (C++) is yellow");
    ok(s && frame_fill(s, "vfs_read (", &r, &g, &b) == 0 && r >= 190 && b == 0, "_[k] is orange");
    /* --kernel: the mark decides before any name rule (a package-like or C++-like name) */
    ok(s && frame_fill(s, "net/x.y (", &r, &g, &b) == 0 && r >= 190 && b == 0,
       "_[k] with a Java-package-like name is orange");
    ok(s && frame_fill(s, "ext4::io (", &r, &g, &b) == 0 && r >= 190 && b == 0 && g != r,
       "_[k] with a C++-like name is orange");
    ok(s && frame_fill(s, "Slow.loop (", &r, &g, &b) == 0 && r == b && g < r && r >= 190,
       "_[int] (interpreted) is purple, its label without the annotation");
    ok(s && frame_fill(s, "Work.step (", &r, &g, &b) == 0 && is_green(r, g, b),
       "JDK perf-map name Work.step is green without annotation");
    ok(s && frame_fill(s, "java/util/Map:.get (", &r, &g, &b) == 0 && is_green(r, g, b),
       "java/ package is green");
    ok(s && frame_fill(s, "foo.constprop.0 (", &r, &g, &b) == 0 && r >= 200 && g < 140,
       "GCC clone is red (native)");
    ok(s && frame_fill(s, "start_thread (", &r, &g, &b) == 0 && r >= 200 && g < 140,
       "plain C is red");
    free(s);

    o.colors = "mem";
    s = render_text("a 1\n", &o);
    ok(s && strstr(s, "stop-color=\"#eef2ee\""), "mem palette: green background");
    free(s);
    o.colors = "blue";
    s = render_text("a 1\n", &o);
    ok(s && strstr(s, "stop-color=\"#f8f8f8\""), "flat palette: grey background");
    free(s);
    o.bgcolors = "#123abc";
    s = render_text("a 1\n", &o);
    ok(s && strstr(s, "stop-color=\"#123abc\""), "flat background colour");
    free(s);
    o.colors = "nope";
    o.bgcolors = NULL;
    profile *p = load_str("a 1\n");
    FILE *f = fopen("/dev/null", "w");
    flame_err err = FLAME_ERR_INIT;
    ok(render_svg(p, &o, f, &err) < 0 && err.code == FLAME_EXIT_USAGE &&
           strstr(err.msg, "unknown palette 'nope'"),
       "unknown palette is a usage error");
    fclose(f);
    profile_free(p);
    ok(palette_valid("hot") && palette_valid("orange") && !palette_valid("x"), "palette_valid");
    ok(palette_bgcolor_valid("grey") && palette_bgcolor_valid("#aBc123") &&
           !palette_bgcolor_valid("#12345") && !palette_bgcolor_valid("red\"/>"),
       "palette_bgcolor_valid");
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_diff(void)
{
    render_opts o;
    render_opts_default(&o);
    /* b has no change of its own: white; c grew by 10 = the largest change: pure red */
    char *s = render_text("a;b 10 10\na;b;c 5 15\na;d 8 4\n", &o);
    unsigned r, g, b;
    ok(s && frame_fill(s, "b (", &r, &g, &b) == 0 && r == 255 && g == 255 && b == 255,
       "unchanged parent is white");
    ok(s && frame_fill(s, "c (", &r, &g, &b) == 0 && r == 255 && g == 0 && b == 0,
       "largest growth is red");
    ok(s && frame_fill(s, "d (", &r, &g, &b) == 0 && r == 126 && g == 126 && b == 255,
       "a shrink is blue, scaled: 210*(10-4)/10 = 126");
    ok(s && strstr(s, "<title>c (15 samples, 51.72%; +34.48%)</title>"),
       "tooltip shows the change in percent of the total");
    ok(s && strstr(s, "<title>d (4 samples, 13.79%; -13.79%)</title>"), "negative change");
    free(s);
    o.negate = true;
    s = render_text("a;b 10 10\na;b;c 5 15\na;d 8 4\n", &o);
    ok(s && frame_fill(s, "c (", &r, &g, &b) == 0 && r == 0 && g == 0 && b == 255,
       "negate: growth is blue");
    ok(s && strstr(s, "<title>c (15 samples, 51.72%; -34.48%)</title>"), "negate: sign flipped");
    /* black on saturated blue is hard to read (contrast 2.4): that frame's label is white */
    const char *c = s ? strstr(s, "<title>c (") : NULL;
    while (c && c > s && strncmp(c, "<g ", 3) != 0)
        c--;
    ok(c && starts(c, "<g data-s=\"10\" data-w=\"15\" class=\"w\">") &&
           strstr(s, "#frames > g.w:not(.m) > text { fill:rgb(255,255,255); }"),
       "a label on saturated blue is white");
    const char *b2 = s ? strstr(s, "<title>b (") : NULL;
    while (b2 && b2 > s && strncmp(b2, "<g ", 3) != 0)
        b2--;
    ok(b2 && starts(b2, "<g data-s=\"0\" data-w=\"25\">"), "a label on white stays black");
    ok(s && strstr(s, "<g id=\"legend\">") && strstr(s, ">grew</text>") &&
           strstr(s, ">shrank</text>") && strstr(s, "fill=\"rgb(0,0,255)\""),
       "a differential has a legend: grew, shrank, no change");
    free(s);

    /* diff_noise: a change within the noise of its counts is white, a clear one keeps its
     * colour (c: 15 vs 5, z = 10 / sqrt(20) = 2.2: partly; e: 400 vs 100, z = 15: all) */
    render_opts_default(&o);
    o.diff_noise = true;
    s = render_text("a;b 100 101\na;b;c 5 15\na;e 100 400\n", &o);
    ok(s && frame_fill(s, "b (", &r, &g, &b) == 0 && r == 255 && g == 255 && b == 255 &&
           frame_fill(s, "e (", &r, &g, &b) == 0 && r == 255 && g == 0 && b == 0 &&
           frame_fill(s, "c (", &r, &g, &b) == 0 && r == 255 && g > 200 && g < 210,
       "diff_noise: white within one standard error, full colour from three");
    ok(s && strstr(s, ">no change, or within noise (self; deeper = larger)</text>"),
       "diff_noise: the legend says so");
    free(s);
}

/* The legend says what the java palette's hues mean, for the hues the graph shows; palettes
 * whose colours mean nothing (hot) have none. */
static void test_legend(void)
{
    render_opts o;
    render_opts_default(&o);
    o.colors = "java";
    const char *in = "java;start_thread;JavaCalls::call_helper;A.run_[int];A.work_[j];"
                     "A.isPrime_[i] 10\njava;start_thread;JavaCalls::call_helper;A.run_[int];"
                     "read_[k] 2\n";
    char *s = render_text(in, &o);
    const char *l = s ? strstr(s, "<g id=\"legend\">") : NULL;
    ok(l && strstr(l, ">Java, compiled</text>") && strstr(l, ">inlined</text>") &&
           strstr(l, ">interpreted</text>") && strstr(l, ">C++ (JVM)</text>") &&
           strstr(l, ">native</text>") && strstr(l, ">kernel</text>"),
       "java: a legend entry for each hue drawn");
    /* one row more under the title: 7 levels * 16 + 36 + 18 + 34 */
    ok(s && strstr(s, "height=\"200\""), "the legend takes one row");
    free(s);
    s = render_text("java;A.work_[j] 10\n", &o);
    l = s ? strstr(s, "<g id=\"legend\">") : NULL;
    ok(l && strstr(l, ">Java, compiled</text>") && !strstr(l, ">inlined</text>") &&
           !strstr(l, ">kernel</text>"),
       "java: only the hues the graph shows");
    free(s);
    render_opts_default(&o);
    s = render_text(in, &o);
    ok(s && !strstr(s, "id=\"legend\"") && strstr(s, "height=\"182\""), "hot: no legend");
    ok(s && strstr(s, "#search, #ignorecase { opacity:0.5;"), "Search and ic are visible");
    free(s);
}

static void test_hostile(void)
{
    render_opts o;
    render_opts_default(&o);
    o.title = "<script>alert(1)</script> ]]> & \"t\"";
    o.subtitle = "\x01\xff";
    o.countname = "<b>";
    o.nametype = "]]></script><script>alert(2)</script>";
    o.notes = "a -- b <x> -";
    o.fonttype = "x; } text { fill:red";
    char *big = malloc(100 * 1024 + 64);
    memset(big, '<', 100 * 1024);
    strcpy(big + 100 * 1024, ";leaf 3\n");
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    fprintf(f, "<script>alert(3)</script>;]]>;\"q\" 'a' &amp; 5\n");
    fprintf(f,
            "ctl\x01\x08\x1b\x7f;bad\xff\xfe;\xc3;\xed\xa0\x80;\xf4\x90\x80\x80;\xef\xbf\xbe 2\n");
    fputs(big, f);
    fclose(f);
    free(big);
    profile *p = load_str(text);
    size_t n;
    char *s = p ? render_str(p, &o, &n) : NULL;
    ok(s != NULL, "hostile names and options render");
    ok(s && xml_well_formed(s, n), "output is well-formed XML");
    ok(s && !strstr(s, "<script>alert"), "no markup injected");
    ok(s && count_str(s, "]]>") == 2, "CDATA closed only by us (style and script)");
    ok(s && strstr(s, "&lt;script&gt;alert(3)&lt;/script&gt;"), "names escaped");
    ok(s && strstr(s, "&quot;q&quot; &apos;a&apos; &amp;amp ("), "quotes and & escaped");
    ok(s && strstr(s, "ctl\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
       "control bytes replaced by U+FFFD");
    ok(s && strstr(s, "<!-- NOTES: a - - b <x> -  -->"), "notes cannot end the comment");
    ok(s && strstr(s, "font-family:x  text  fillred;"), "font family cannot escape CSS");
    free(s);
    profile_free(p);
    free(text);
}

static void test_flamechart_reverse(void)
{
    render_opts o;
    render_opts_default(&o);
    o.flamechart = true;
    profile *p = profile_new();
    profile_keep_order(p, true);
    const char *t = "a;b 1\na;c 1\na;b 1\na;b 2\n";
    FILE *f = fmemopen((void *)t, strlen(t), "r");
    flame_err err = FLAME_ERR_INIT;
    profile_load(p, f, "x", &err);
    fclose(f);
    char *s = render_str(p, &o, NULL);
    ok(s && strstr(s, ">Flame Chart</text>"), "flame chart title");
    ok(s && strstr(s, "<g data-s=\"0\" data-w=\"1\"><title>b (1 samples") &&
           strstr(s, "<g data-s=\"1\" data-w=\"1\"><title>c (1 samples") &&
           strstr(s, "<g data-s=\"2\" data-w=\"3\"><title>b (3 samples"),
       "flame chart keeps input order, merges only adjacent frames");
    free(s);
    profile_free(p);

    render_opts_default(&o);
    o.reverse = true;
    s = render_text("a;b 1\nc;b 2\n", &o);
    ok(s && strstr(s, "<g data-s=\"0\" data-w=\"3\"><title>b (3 samples"),
       "reverse: the shared leaf becomes one root frame");
    free(s);
}

static void test_palette_file(void)
{
    char path[] = "/tmp/flame-palette-XXXXXX";
    int fd = mkstemp(path);
    const char *init = "b->rgb(1,2,3)\nkeep->rgb(4,5,6)\njunk line\n";
    ok(fd >= 0 && write(fd, init, strlen(init)) == (ssize_t)strlen(init), "palette file written");
    close(fd);
    render_opts o;
    render_opts_default(&o);
    o.palette_file = path;
    char *s = render_text("a;b 1\n", &o);
    ok(s && strstr(s, "<title>b (1 samples, 100.00%)</title><rect x=\"10.0\" y=\"37.0\" "
                      "width=\"1180.0\" height=\"15.0\" fill=\"rgb(1,2,3)\""),
       "colour taken from the palette file");
    free(s);
    FILE *f = fopen(path, "r");
    char buf[512] = {0};
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    (void)n;
    ok(strstr(buf, "a->rgb(") && strstr(buf, "b->rgb(1,2,3)\n") &&
           strstr(buf, "keep->rgb(4,5,6)\n") && !strstr(buf, "junk"),
       "palette file updated with new names, old ones kept");
    unlink(path);
}

static void test_speedscope(void)
{
    profile *p = load_str("main;<work> \"q\" 3\nmain;\x01\xff 2\nmain 1\n");
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    flame_err err = FLAME_ERR_INIT;
    int rc = speedscope_export(p, "na\"me", f, &err);
    fclose(f);
    ok(rc == 0, "speedscope export");
    char *path = buf ? write_tmp(buf, n, ".json") : NULL;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding=\"utf-8\")); "
             "p=d[\"profiles\"][0]; f=[x[\"name\"] for x in d[\"shared\"][\"frames\"]]; "
             "ok = p[\"type\"]==\"sampled\" and d[\"name\"]==\"na\\\"me\" and "
             "len(p[\"samples\"])==len(p[\"weights\"])==3 and sum(p[\"weights\"])==6 and "
             "p[\"endValue\"]==6 and f[p[\"samples\"][2][1]]==\"<work> \\\"q\\\"\" and "
             "f[p[\"samples\"][1][1]]==\"\\x01\\ufffd\" and all(s[0]==f.index(\"main\") for s in "
             "p[\"samples\"]); sys.exit(0 if ok else 1)' '%s'",
             path ? path : "/nonexistent");
    ok(path && system(cmd) == 0, "speedscope JSON parses, frames escaped, samples root first");
    if (path)
        unlink(path);
    free(buf);
    profile_free(p);
}

int main(void)
{
    test_basic();
    test_labels();
    test_pruning();
    test_hot_colours();
    test_hash_colours();
    test_java_palette();
    test_diff();
    test_legend();
    test_hostile();
    test_flamechart_reverse();
    test_palette_file();
    test_speedscope();
    return tap_done();
}
