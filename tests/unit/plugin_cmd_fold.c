/* `docker flame fold` as the plugin dispatches it: flame_cmd_fold(argc, argv) with stdout and
 * stderr captured in temp files; exit codes 0 / 1 (bad input) / 2 (bad usage). */
#include "plugin/cmd.h"
#include "tests/unit/tap.h"
#include "tests/unit/fold_test_util.h"

typedef struct run {
    int rc;
    char *out, *err;
} run;

static run run_fold(const char *stdin_text, int argc, char **argv)
{
    run r = {0};
    char out_path[] = "/tmp/test_fold_cli_outXXXXXX", err_path[] = "/tmp/test_fold_cli_errXXXXXX";
    char in_path[] = "/tmp/test_fold_cli_inXXXXXX";
    int ofd = mkstemp(out_path), efd = mkstemp(err_path), ifd = mkstemp(in_path);
    if (ofd < 0 || efd < 0 || ifd < 0)
        return r;
    if (stdin_text && write(ifd, stdin_text, strlen(stdin_text)) < 0)
        return r;
    lseek(ifd, 0, SEEK_SET);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2), si = dup(0);
    dup2(ofd, 1);
    dup2(efd, 2);
    dup2(ifd, 0);
    r.rc = flame_cmd_fold(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    dup2(si, 0);
    close(so), close(se), close(si), close(ofd), close(efd), close(ifd);
    r.out = slurp(out_path, NULL);
    r.err = slurp(err_path, NULL);
    unlink(out_path), unlink(err_path), unlink(in_path);
    return r;
}

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
}

static int lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

int main(void)
{
    const char *perf = "ww 1 1.1: 300 cpu-clock: \n\t1 long A.b(int) (/tmp/perf-1.map)\n\n"
                       "ww 1 1.2: 200 cpu-clock: \n\t1 long A.b(int) (/tmp/perf-1.map)\n\n";

    run r = run_fold(NULL, 2, (char *[]){"fold", "--help", NULL});
    is_int(r.rc, 0, "--help exits 0");
    ok(r.out && strstr(r.out, "Usage:  docker flame fold") && strstr(r.out, "--event-filter") &&
           strstr(r.out, "perf script | docker flame fold"),
       "--help prints usage with options and an example");
    run_free(&r);

    r = run_fold(perf, 1, (char *[]){"fold", NULL});
    is_int(r.rc, 0, "stdin folds");
    is_str(r.out, "ww;A.b 2\n", "default: tidy names, sample counts");
    is_str(r.err, "", "nothing on stderr");
    run_free(&r);

    r = run_fold(perf, 4, (char *[]){"fold", "--period", "--jit", "-", NULL});
    is_str(r.out, "ww;A.b_[j] 500\n", "--period --jit, '-' is stdin");
    run_free(&r);

    r = run_fold(perf, 3, (char *[]){"fold", "--compat", "--signatures", NULL});
    is_str(r.out, "ww;long A.b 500\n", "--compat is Perl's output (signatures ignored)");
    run_free(&r);

    r = run_fold(perf, 2, (char *[]){"fold", "--signatures", NULL});
    is_str(r.out, "ww;long A.b(int) 2\n", "--signatures");
    run_free(&r);

    r = run_fold(perf, 3, (char *[]){"fold", "--event-filter", "page-faults", NULL});
    is_int(r.rc, 1, "no sample of the chosen event: exit 1");
    ok(r.err && strstr(r.err, "no samples") && lines(r.err) == 1, "... with one clear line");
    run_free(&r);

    r = run_fold(perf, 2, (char *[]){"fold", "--bogus", NULL});
    is_int(r.rc, 2, "unknown option: exit 2");
    ok(r.err && strstr(r.err, "unknown flag: --bogus") && lines(r.err) == 1,
       "... one line naming it: %.*s", r.err ? (int)strcspn(r.err, "\n") : 0, r.err ? r.err : "");
    run_free(&r);

    r = run_fold(perf, 2, (char *[]){"fold", "--event-filter", NULL});
    is_int(r.rc, 2, "--event-filter without a value: exit 2");
    ok(r.err && strstr(r.err, "needs an argument: --event-filter") && lines(r.err) == 1,
       "... one line");
    run_free(&r);

    r = run_fold(perf, 3, (char *[]){"fold", "a", "b", NULL});
    is_int(r.rc, 2, "two files: exit 2");
    run_free(&r);

    r = run_fold(perf, 2, (char *[]){"fold", "/nonexistent/perf.txt", NULL});
    is_int(r.rc, 1, "missing file: exit 1");
    ok(r.err && strstr(r.err, "cannot open '/nonexistent/perf.txt'") && lines(r.err) == 1,
       "... one line with the reason: %.*s", r.err ? (int)strcspn(r.err, "\n") : 0,
       r.err ? r.err : "");
    run_free(&r);

    r = run_fold(perf, 2, (char *[]){"fold", "/", NULL});
    is_int(r.rc, 1, "a directory: exit 1");
    ok(r.err && lines(r.err) == 1, "... one line: %.*s", r.err ? (int)strcspn(r.err, "\n") : 0,
       r.err ? r.err : "");
    run_free(&r);

    r = run_fold("hello\nworld\n", 1, (char *[]){"fold", NULL});
    is_int(r.rc, 1, "not perf script: exit 1");
    ok(r.err && strstr(r.err, "perf record -g") && lines(r.err) == 1, "... says what is expected");
    run_free(&r);

    r = run_fold("w 1 1.1: 1 a: \n\t1 f (/x)\n\nw 1 1.2: 1 b: \n\t1 g (/x)\n\n", 1,
                 (char *[]){"fold", NULL});
    is_str(r.out, "w;f 1\n", "first event kept");
    ok(r.err && strstr(r.err, "kept only events of type 'a'") && lines(r.err) == 1,
       "... and the user is told: %.*s", r.err ? (int)strcspn(r.err, "\n") : 0, r.err ? r.err : "");
    run_free(&r);

    char *in = NULL;
    if (asprintf(&in, "%s/inputs/perf-jdk17-container-work.txt", corpus_dir()) > 0) {
        r = run_fold(NULL, 2, (char *[]){"fold", in, NULL});
        char *want = slurp("tests/data/fold/jdk17-container-work.improved.txt", NULL);
        ok(r.rc == 0 && r.out && want && !strcmp(r.out, want), "FILE argument: the JDK 17 capture");
        free(want);
        run_free(&r);
        free(in);
    }
    return tap_done();
}
