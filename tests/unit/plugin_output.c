/* plugin/output.c: output names per container and format, atomic writes. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/opts.h"
#include "plugin/output.h"
#include "tests/unit/plugin_test_tap.h"

static int parse(flame_opts *o, flame_err *err, int argc, ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    opts_clear(o);
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
    ok(out_paths(o.output, o.formats, o.nformats, "web", 1, when, paths, &err) == 0 &&
           paths[FMT_SVG] && !strncmp(paths[FMT_SVG], "flame-web-2023", 14) &&
           strstr(paths[FMT_SVG], ".svg"),
       "default name flame-<container>-<time>.svg (%s)", paths[FMT_SVG]);
    free(paths[FMT_SVG]);
    parse(&o, &err, 7, "-o", "out/x.svg", "--format", "svg", "--format", "speedscope", "web");
    ok(out_paths(o.output, o.formats, o.nformats, "web", 1, when, paths, &err) == 0 &&
           !strcmp(paths[FMT_SVG], "out/x.svg") &&
           !strcmp(paths[FMT_SPEEDSCOPE], "out/x.speedscope.json") && !paths[FMT_FOLDED],
       "-o with several formats: extension per format");
    free(paths[FMT_SVG]);
    free(paths[FMT_SPEEDSCOPE]);
    parse(&o, &err, 3, "-o", "prof.txt", "web");
    ok(out_paths(o.output, o.formats, o.nformats, "web", 1, when, paths, &err) == 0 &&
           !strcmp(paths[FMT_SVG], "prof.txt"),
       "-o with one format: the name as given");
    free(paths[FMT_SVG]);
    parse(&o, &err, 4, "-o", "x.svg", "a", "b");
    ok(out_paths(o.output, o.formats, o.nformats, "a", 2, when, paths, &err) < 0 &&
           err.code == FLAME_EXIT_USAGE,
       "-o file with several containers: usage error");
    parse(&o, &err, 4, "-o", "/tmp/", "a", "b");
    ok(out_paths(o.output, o.formats, o.nformats, "we/b\n..", 2, when, paths, &err) == 0 &&
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

    opts_clear(&o);
    return tap_done();
}
