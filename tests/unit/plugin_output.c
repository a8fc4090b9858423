/* plugin/out/output.c: output names per container and format, atomic writes. */
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
    ok(out_fmt_of_path("a.pb.gz") == FMT_PPROF && out_fmt_of_path("a.PB") == FMT_PPROF &&
           out_fmt_of_path("a.pprof") == FMT_PPROF && out_fmt_of_path("a.gz") < 0,
       "pprof by extension: .pb.gz .pb .pprof (not any .gz)");
    parse(&o, &err, 3, "-o", "prof.txt", "web");
    ok(out_paths(o.output, o.formats, "web", 1, when, paths, &err) == 0 &&
           !strcmp(paths[FMT_SVG], "prof.txt"),
       "-o with one format: the name as given");
    free(paths[FMT_SVG]);
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
    return tap_done();
}
