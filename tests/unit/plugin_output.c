/* plugin/out/output.c: output names per container and format, atomic writes, the $TMPDIR
 * fallback under a name nobody can predict. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "plugin/opts.h"
#include "plugin/out/output.h"
#include "tests/unit/tap.h"

static int parse(flame_opts *o, flame_err *err, int argc, ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    opts_init(o);
    return opts_parse(argc, argv, o, err);
}

static int write_half_then_fail(void *ctx, FILE *f, flame_err *err)
{
    (void)ctx;
    fputs("<svg", f);
    return flame_fail(err, FLAME_EXIT_ERROR, "disk full (simulated)");
}

static int write_ok(void *ctx, FILE *f, flame_err *err)
{
    (void)ctx;
    (void)err;
    fputs("<svg/>\n", f);
    return 0;
}

int main(void)
{
    flame_err err = FLAME_ERR_INIT;
    flame_opts o;
    opts_init(&o);
    /* ---- output names ---- */
    char *paths[FMT_COUNT];
    time_t when = 1700000000;
    parse(&o, &err, 1, "web");
    ok(out_paths(o.output, o.formats, "web", 1, when, paths, &err) == 0 && paths[FMT_SVG] &&
           !strncmp(paths[FMT_SVG], "flame-web-2023", 14) && strstr(paths[FMT_SVG], ".svg"),
       "default name flame-<container>-<time>.svg (%s)", paths[FMT_SVG]);
    free(paths[FMT_SVG]);
    parse(&o, &err, 7, "-o", "out/x.svg", "--format", "svg", "--format", "speedscope", "web");
    ok(out_paths(o.output, o.formats, "web", 1, when, paths, &err) == 0 &&
           !strcmp(paths[FMT_SVG], "out/x.svg") &&
           !strcmp(paths[FMT_SPEEDSCOPE], "out/x.speedscope.json") && !paths[FMT_FOLDED],
       "-o with several formats: extension per format");
    free(paths[FMT_SVG]);
    free(paths[FMT_SPEEDSCOPE]);
    parse(&o, &err, 5, "-o", "out/x.pb.gz", "--format", "pprof,folded", "web");
    ok(out_paths(o.output, o.formats, "web", 1, when, paths, &err) == 0 &&
           !strcmp(paths[FMT_PPROF], "out/x.pb.gz") && !strcmp(paths[FMT_FOLDED], "out/x.folded") &&
           !paths[FMT_SVG],
       "--format pprof: .pb.gz, its extension replaced for the other formats");
    free(paths[FMT_PPROF]);
    free(paths[FMT_FOLDED]);
    /* one file per mode: the mode in every name */
    parse(&o, &err, 5, "-o", "out/x.svg", "--mode", "cpu,alloc", "web");
    ok(out_paths_mode(o.output, o.formats, "web", 1, when, "alloc", paths, &err) == 0 &&
           !strcmp(paths[FMT_SVG], "out/x.alloc.svg"),
       "-o x.svg --mode alloc: x.alloc.svg (%s)", paths[FMT_SVG]);
    free(paths[FMT_SVG]);
    parse(&o, &err, 5, "-o", "out/x.lock.folded", "--mode", "lock", "web");
    ok(out_paths_mode(o.output, o.formats, "web", 1, when, "lock", paths, &err) == 0 &&
           !strcmp(paths[FMT_FOLDED], "out/x.lock.folded"),
       "-o naming the mode already: as given (%s)", paths[FMT_FOLDED]);
    free(paths[FMT_FOLDED]);
    parse(&o, &err, 7, "-o", "out/", "--format", "folded,pprof", "--mode", "lock", "web");
    ok(out_paths_mode(o.output, o.formats, "web", 1, when, "lock", paths, &err) == 0 &&
           !strncmp(paths[FMT_FOLDED], "out/flame-web-", 14) &&
           strstr(paths[FMT_FOLDED], ".lock.folded") && strstr(paths[FMT_PPROF], ".lock.pb.gz"),
       "-o dir/: flame-web-<time>.lock.folded (%s)", paths[FMT_FOLDED]);
    free(paths[FMT_FOLDED]);
    free(paths[FMT_PPROF]);
    ok(out_fmt_of_path("a.pb.gz") == FMT_PPROF && out_fmt_of_path("a.PB") == FMT_PPROF &&
           out_fmt_of_path("a.pprof") == FMT_PPROF && out_fmt_of_path("a.gz") < 0,
       "pprof by extension: .pb.gz .pb .pprof (not any .gz)");
    parse(&o, &err, 3, "-o", "prof.out", "web");
    ok(out_paths(o.output, o.formats, "web", 1, when, paths, &err) == 0 &&
           !strcmp(paths[FMT_SVG], "prof.out"),
       "-o with one format: the name as given");
    free(paths[FMT_SVG]);

    /* ---- the one rule: a known extension decides without --format; a conflict is refused ---- */
    static const struct {
        const char *path;
        int fmt;
    } table[] = {{"a.svg", FMT_SVG},
                 {"a.SVG", FMT_SVG},
                 {"a.folded", FMT_FOLDED},
                 {"a.txt", FMT_FOLDED},
                 {"a.collapsed", FMT_FOLDED},
                 {"a.speedscope.json", FMT_SPEEDSCOPE},
                 {"a.json", FMT_SPEEDSCOPE},
                 {"a.pb.gz", FMT_PPROF},
                 {"a.pb", FMT_PPROF},
                 {"a.pprof", FMT_PPROF},
                 {"a.out", -1},
                 {"a.gz", -1},
                 {"-", -1},
                 {".svg", -1}};
    bool all = true;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        err = (flame_err)FLAME_ERR_INIT;
        int f = out_format(table[i].path, -1, OUT_ALL_FORMATS, FMT_SVG, &err);
        int want = table[i].fmt >= 0 ? table[i].fmt : FMT_SVG;
        if (f != want) {
            all = false;
            printf("# %s: %d, want %d\n", table[i].path, f, want);
        }
    }
    ok(all, "the extension table; no known extension: the verb's default");
    err = (flame_err)FLAME_ERR_INIT;
    ok(out_format("x.svg", FMT_FOLDED, OUT_ALL_FORMATS, FMT_SVG, &err) < 0 &&
           err.code == FLAME_EXIT_USAGE && strstr(err.msg, "x.svg") && strstr(err.msg, "folded"),
       "--format folded -o x.svg: refused, exit 2 (%s)", err.msg);
    err = (flame_err)FLAME_ERR_INIT;
    ok(out_format("x.out", FMT_FOLDED, OUT_ALL_FORMATS, FMT_SVG, &err) == FMT_FOLDED,
       "--format with a name without a known extension: --format");
    err = (flame_err)FLAME_ERR_INIT;
    ok(out_format("x.json", -1, 1u << FMT_SVG | 1u << FMT_FOLDED | 1u << FMT_PPROF, FMT_SVG, &err) <
               0 &&
           err.code == FLAME_EXIT_USAGE && strstr(err.msg, "speedscope"),
       "an extension naming a format the verb cannot write: refused (%s)", err.msg);
    err = (flame_err)FLAME_ERR_INIT;
    ok(out_format("x.out", -1, OUT_ALL_FORMATS, -1, &err) < 0 && err.code == FLAME_EXIT_USAGE,
       "no default (merge), no known extension, no --format: refused (%s)", err.msg);
    unsigned m = 0;
    err = (flame_err)FLAME_ERR_INIT;
    ok(out_formats("web.svg", 1u << FMT_SVG | 1u << FMT_FOLDED, OUT_ALL_FORMATS, FMT_SVG, &m,
                   &err) == 0 &&
           m == (1u << FMT_SVG | 1u << FMT_FOLDED),
       "several formats, the extension one of them: fine (a stem)");
    err = (flame_err)FLAME_ERR_INIT;
    ok(out_formats("web.svg", 1u << FMT_PPROF | 1u << FMT_FOLDED, OUT_ALL_FORMATS, FMT_SVG, &m,
                   &err) < 0 &&
           err.code == FLAME_EXIT_USAGE,
       "several formats, the extension none of them: refused");
    err = (flame_err)FLAME_ERR_INIT;
    ok(parse(&o, &err, 3, "-o", "e.folded", "web") == 0 && o.formats == 1u << FMT_FOLDED,
       "docker flame -o e.folded: folded");
    ok(parse(&o, &err, 3, "-o", "e.pb.gz", "web") == 0 && o.formats == 1u << FMT_PPROF,
       "docker flame -o e.pb.gz: pprof");
    err = (flame_err)FLAME_ERR_INIT;
    ok(parse(&o, &err, 5, "--format", "folded", "-o", "x.svg", "web") < 0 &&
           err.code == FLAME_EXIT_USAGE,
       "docker flame --format folded -o x.svg: refused, exit 2");
    err = (flame_err)FLAME_ERR_INIT;
    parse(&o, &err, 4, "-o", "x.svg", "a", "b");
    ok(out_paths(o.output, o.formats, "a", 2, when, paths, &err) < 0 &&
           err.code == FLAME_EXIT_USAGE,
       "-o file with several containers: usage error");
    parse(&o, &err, 4, "-o", "/tmp/", "a", "b");
    ok(out_paths(o.output, o.formats, "we/b\n..", 2, when, paths, &err) == 0 &&
           !strncmp(paths[FMT_SVG], "/tmp/flame-we_b_..-", 19),
       "-o dir: per-container names, hostile chars replaced (%s)", paths[FMT_SVG]);
    free(paths[FMT_SVG]);
    char safe[32];
    out_safe_name("..", safe, sizeof safe);
    ok(safe[0] != '.', "no hidden/dot-dot file names (%s)", safe);

    /* ---- atomic write: failure leaves nothing ---- */
    {
        char dir[] = "/tmp/plugin-out-XXXXXX";
        ok(mkdtemp(dir) != NULL, "temp dir");
        char path[256], sh[512];
        snprintf(path, sizeof path, "%s/a.svg", dir);
        ok(out_write_atomic(path, write_half_then_fail, NULL, &err) < 0 && strstr(err.msg, "disk"),
           "failing writer: error passed up");
        snprintf(sh, sizeof sh, "test -z \"$(ls -A %s)\"", dir);
        ok(system(sh) == 0, "failing writer: no file and no temp file left");
        ok(out_write_atomic(path, write_ok, NULL, &err) == 0, "writer ok");
        snprintf(sh, sizeof sh, "test \"$(ls -A %s)\" = a.svg && grep -qx '<svg/>' %s", dir, path);
        ok(system(sh) == 0, "file complete and alone (temp renamed)");
        snprintf(sh, sizeof sh, "rm -rf %s", dir);
        if (system(sh) != 0)
            return 1;
    }

    /* ---- a device or a pipe as the output: written in place, never replaced ---- */
    {
        char dir[] = "/tmp/plugin-special-XXXXXX";
        ok(mkdtemp(dir) != NULL, "temp dir");
        profile *p = profile_new();
        flame_err e2 = FLAME_ERR_INIT;
        profile_add_line(p, "a;b 3", 5, &e2);
        out_job job = {.p = p, .fmt = FMT_FOLDED};
        char fifo[300], dev[300];
        snprintf(fifo, sizeof fifo, "%s/pipe", dir);
        ok(mkfifo(fifo, 0600) == 0, "a named pipe");
        int rfd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ok(out_write(fifo, &job, &err) == 0, "-o a FIFO: written (%s)", err.msg);
        char buf[64] = {0};
        ok(read(rfd, buf, sizeof buf - 1) > 0 && strstr(buf, "a;b 3"), "the reader got it: %s",
           buf);
        close(rfd);
        struct stat st;
        ok(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still a FIFO");
        snprintf(dev, sizeof dev, "%s/null", dir);
        if (geteuid() == 0 && mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
            ok(out_write(dev, &job, &err) == 0, "-o a character device (like /dev/null): written");
            ok(stat(dev, &st) == 0 && S_ISCHR(st.st_mode),
               "the device is still a device (a temp file renamed over it would replace it)");
        } else {
            ok(getenv("CI") == NULL, "a device node to write to (needs root: CI runs as root)");
        }
        char file[300], link[300], target[300] = {0};
        snprintf(file, sizeof file, "%s/real.folded", dir);
        snprintf(link, sizeof link, "%s/latest", dir);
        ok(symlink("real.folded", link) == 0 && out_write(link, &job, &err) == 0,
           "-o a symbolic link: written");
        ok(lstat(link, &st) == 0 && S_ISLNK(st.st_mode) &&
               readlink(link, target, sizeof target - 1) > 0 && !strcmp(target, "real.folded") &&
               stat(file, &st) == 0 && S_ISREG(st.st_mode),
           "... the link stays a link, the file it names got the output");
        unlink(link);
        unlink(file);
        ok(out_write(dir, &job, &err) < 0 && strstr(err.msg, "directory"),
           "-o a directory: refused (%s)", err.msg);
        profile_free(p);
        char sh[600];
        snprintf(sh, sizeof sh, "test \"$(ls -A %s | tr '\\n' ' ')\" = 'null pipe '", dir);
        ok(system(sh) == 0, "no temporary file left next to them");
        snprintf(sh, sizeof sh, "rm -rf %s", dir);
        if (system(sh) != 0)
            return 1;
    }
    /* ---- the fallback: a fresh random name in $TMPDIR, never the bare name ---- */
    {
        char dir[] = "/tmp/plugin-fallback-XXXXXX";
        ok(mkdtemp(dir) != NULL, "temp dir");
        char planted[300], victim[300], sh[700];
        snprintf(planted, sizeof planted, "%s/web.svg", dir);
        snprintf(victim, sizeof victim, "%s/victim", dir);
        FILE *vf = fopen(victim, "w");
        if (vf) {
            fputs("keep\n", vf);
            fclose(vf);
        }
        ok(symlink(victim, planted) == 0, "a link planted at $TMPDIR/web.svg");
        profile *p = profile_new();
        flame_err e2 = FLAME_ERR_INIT;
        profile_add_line(p, "a;b 3", 5, &e2);
        out_job job = {.p = p, .fmt = FMT_SVG};
        char *path = strdup("/nonexistent-dir-of-flame/web.svg");
        const char *old_tmp = getenv("TMPDIR");
        char *saved_tmp = old_tmp ? strdup(old_tmp) : NULL;
        setenv("TMPDIR", dir, 1);
        err = (flame_err)FLAME_ERR_INIT;
        int rc = out_write_saved(&path, &job, &err);
        if (saved_tmp)
            setenv("TMPDIR", saved_tmp, 1);
        else
            unsetenv("TMPDIR");
        free(saved_tmp);
        size_t dl = strlen(dir);
        ok(rc == 1 && !strncmp(path, dir, dl) && !strncmp(path + dl, "/web-", 5) &&
               strlen(path + dl) == strlen("/web-XXXXXX.svg"),
           "write failed: saved as $TMPDIR/web-XXXXXX.svg (%s)", path);
        ok(strstr(err.msg, "cannot write /nonexistent-dir-of-flame/web.svg") &&
               strstr(err.msg, path) && strstr(err.msg, "instead"),
           "the message names both (%s)", err.msg);
        snprintf(sh, sizeof sh, "grep -q '<svg' %s && grep -qx keep %s && test -L %s", path, victim,
                 planted);
        ok(system(sh) == 0, "the SVG is there; the planted link and its target untouched");
        struct stat st;
        ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the saved file is 0600");
        free(path);
        profile_free(p);
        snprintf(sh, sizeof sh, "rm -rf %s", dir);
        if (system(sh) != 0)
            return 1;
    }
    return tap_done();
}
