/* flame/fold_parse.c emulates stackcollapse-perf.pl's regexes by hand (linear time, no
 * backtracking engine). This test checks the emulation against Perl's own regex engine on random
 * hostile lines: the oracle tests/data/fold/regex-oracle.pl prints what each regex captures, and
 * so do we (through the folder's parser and tidy, flame/fold_parse.h and fold_tidy.h). */
#include "flame/fold_parse.h"
#include "flame/fold_tidy.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/tap.h"

static void put(FILE *o, const char *tag, span s)
{
    fputs(tag, o);
    fwrite(s.p, 1, s.len, o);
}

/* Our reading of one line, in the oracle's format. */
static void describe(FILE *o, const char *line, size_t n)
{
    header h;
    memset(&h, 0, sizeof h);
    if (fold_header_perl(line, n, 2, &h)) {
        put(o, "H[", h.comm);
        put(o, "|", h.pid);
        if (h.tid.p)
            put(o, "|", h.tid);
        else
            fputs("|U", o);
        fputs("]", o);
    } else
        fputs("H-", o);
    fold_event_perl(line, n, &h);
    if (h.event.p) {
        if (h.period.p)
            put(o, " E[", h.period);
        else
            fputs(" E[U", o);
        put(o, "|", h.event);
        fputs("]", o);
    } else
        fputs(" E-", o);
    frame_line fl;
    if (!fold_parse_frame(line, n, &fl)) {
        fputs(" F-\n", o);
        return;
    }
    put(o, " F[", fl.pc);
    put(o, "|", fl.func);
    put(o, "|", fl.mod);
    fputs("]", o);
    span func = fl.func;
    size_t e = func.len;
    while (e > 0 && (fold_cls[(unsigned char)func.p[e - 1]] & C_XLOWER))
        e--;
    if (e < func.len && e >= 3 && memcmp(func.p + e - 3, "+0x", 3) == 0)
        func.len = e - 3;
    put(o, " O[", func);
    fputs("]", o);
    char b[512];
    memcpy(b, func.p, func.len);
    put(o, " G[", (span){b, fold_cut_params_generic(b, func.len)});
    fprintf(o, "] K%d J%d S[", fold_mod_is_kernel(fl.mod), fold_mod_is_perfmap_perl(fl.mod));
    const char *p = func.p, *end = func.p + func.len;
    span pieces[128];
    int np = 0;
    for (;;) {
        const char *a = fold_find_arrow(p, end);
        pieces[np++] = (span){p, (size_t)((a ? a : end) - p)};
        if (!a)
            break;
        p = a + 2;
    }
    while (np > 0 && pieces[np - 1].len == 0) /* Perl's split drops trailing empty fields */
        np--;
    for (int i = 0; i < np; i++) {
        if (i)
            fputs("|", o);
        fwrite(pieces[i].p, 1, pieces[i].len, o);
    }
    fputs("]\n", o);
}

int main(void)
{
    static const char *const alpha[] = {
        " ",
        " ",
        "\t",
        "(",
        ")",
        ":",
        "/",
        "1",
        "2",
        "0",
        "a",
        "b",
        "x",
        "+",
        "0x",
        "L",
        ";",
        ".",
        "-",
        ">",
        "[",
        "]",
        "\v",
        "\r",
        "\f",
        "java",
        " (",
        ") ",
        "12 ",
        " 3.4: ",
        "cycles:",
        "+0x1f",
        "[unknown]",
        "/tmp/perf-12.map",
        "vmlinux",
        "unknown",
        "12/34 ",
        "5//",
        ".(",
        ").",
        "(anonymous namespace)",
        "->",
        " 0 ",
        "abc",
        "\xc3\xa9",
        "\x85",
    };
    const size_t nalpha = sizeof alpha / sizeof *alpha;
    char in_path[] = "/tmp/test_fold_regex_XXXXXX";
    int fd = mkstemp(in_path);
    FILE *in = fd >= 0 ? fdopen(fd, "w") : NULL;
    ok(in != NULL, "temp file");
    if (!in)
        return tap_done();
    char *ours = NULL;
    size_t ours_len = 0;
    FILE *o = open_memstream(&ours, &ours_len);
    unsigned long long seed = 0x5eed;
    const int nlines = 40000;
    for (int i = 0; i < nlines; i++) {
        char line[512];
        size_t n = 0;
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int parts = (int)((seed >> 33) % 15);
        for (int k = 0; k < parts; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            const char *a = alpha[(seed >> 33) % nalpha];
            size_t l = strlen(a);
            memcpy(line + n, a, l);
            n += l;
        }
        if (n && line[0] == '#')
            line[0] = 'x';
        fwrite(line, 1, n, in);
        fputc('\n', in);
        describe(o, line, n);
    }
    fclose(in);
    fclose(o);

    char *cmd = NULL;
    if (asprintf(&cmd, "perl tests/data/fold/regex-oracle.pl < %s", in_path) < 0)
        return 1;
    FILE *pp = popen(cmd, "r");
    free(cmd);
    char *perl = NULL;
    size_t perl_cap = 0, perl_len = 0;
    if (pp) {
        char buf[65536];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, pp)) > 0) {
            if (perl_len + k + 1 > perl_cap) {
                perl_cap = (perl_len + k + 1) * 2;
                perl = realloc(perl, perl_cap);
            }
            memcpy(perl + perl_len, buf, k);
            perl_len += k;
        }
    }
    int st = pp ? pclose(pp) : -1;
    unlink(in_path);
    ok(st == 0 && perl_len > 0, "perl ran the oracle (perl is part of Debian's base system)");
    /* compare line by line */
    int bad = 0, line_no = 0;
    const char *a = ours, *b = perl ? perl : "";
    const char *ae = ours + ours_len, *be = b + perl_len;
    while (a < ae && b < be) {
        const char *an = memchr(a, '\n', (size_t)(ae - a)), *bn = memchr(b, '\n', (size_t)(be - b));
        if (!an || !bn)
            break;
        line_no++;
        if (an - a != bn - b || memcmp(a, b, (size_t)(an - a))) {
            if (bad++ < 3)
                printf("#   line %d\n#   perl: %.*s\n#   ours: %.*s\n", line_no, (int)(bn - b), b,
                       (int)(an - a), a);
        }
        a = an + 1;
        b = bn + 1;
    }
    is_int(line_no, nlines, "both described every line");
    is_int(bad, 0,
           "header, event, frame, offset, tidy, kernel, jit and split regexes agree "
           "with Perl on %d random lines",
           nlines);
    free(ours);
    free(perl);
    return tap_done();
}
