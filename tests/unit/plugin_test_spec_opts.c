/* plugin/spec.c (sidecar create JSON), plugin/opts.c (options), plugin/output.c (names),
 * plugin/proto.c (stream parser). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/opts.h"
#include "plugin/output.h"
#include "plugin/proto.h"
#include "plugin/spec.h"
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

static bool has_str(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i,
                       v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return true;
    return false;
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

    /* ---- spec ---- */
    spec_args a = {.target_id = "abc123",
                   .duration_s = 10,
                   .frequency = 49,
                   .pid = 7,
                   .no_inline = true,
                   .owner_pid = 42,
                   .created = 1700000000,
                   .test_owner = "t1"};
    json_t *s = spec_sidecar(&a, &err);
    ok(s != NULL, "spec builds");
    json_t *hc = json_object_get(s, "HostConfig");
    is_str(json_string_value(json_object_get(s, "Image")), "docker-flame-sidecar:" FLAME_VERSION,
           "image");
    is_str(json_string_value(json_object_get(hc, "PidMode")), "container:abc123",
           "PidMode joins the target");
    is_str(json_string_value(json_object_get(hc, "NetworkMode")), "none", "no network");
    ok(json_is_true(json_object_get(hc, "ReadonlyRootfs")), "read-only rootfs");
    ok(json_object_get(hc, "Privileged") == NULL || json_is_false(json_object_get(hc, "Privileged")),
       "never Privileged");
    ok(json_array_size(json_object_get(hc, "SecurityOpt")) == 1 &&
           has_str(json_object_get(hc, "SecurityOpt"), "no-new-privileges:true"),
       "SecurityOpt: exactly no-new-privileges (engine's default seccomp profile)");
    ok(json_object_get(s, "Env") == NULL, "no test env without DOCKER_FLAME_SIDECAR_TEST_STOP");
    ok(has_str(json_object_get(hc, "CapDrop"), "ALL"), "CapDrop ALL");
    ok(has_str(json_object_get(hc, "CapAdd"), "SYS_ADMIN") &&
           has_str(json_object_get(hc, "CapAdd"), "SYS_PTRACE") &&
           json_array_size(json_object_get(hc, "CapAdd")) == 5 &&
           has_str(json_object_get(hc, "CapAdd"), "SYS_CHROOT"),
       "explicit minimal CapAdd");
    ok(json_is_false(json_object_get(hc, "AutoRemove")), "AutoRemove false");
    ok(json_is_string(json_object_get(json_object_get(hc, "Tmpfs"), "/tmp")), "private /tmp tmpfs");
    ok(json_is_true(json_object_get(s, "AttachStdout")) && json_is_false(json_object_get(s, "Tty")),
       "attached, no tty (multiplexed stream)");
    json_t *cmd = json_object_get(s, "Cmd");
    is_str(json_string_value(json_array_get(cmd, 0)), "/flame-sidecar", "command");
    is_str(json_string_value(json_array_get(cmd, 1)), "record", "record verb");
    ok(has_str(cmd, "--duration") && has_str(cmd, "10") && has_str(cmd, "49") &&
           has_str(cmd, "--pid") && has_str(cmd, "7") && has_str(cmd, "--no-inline") &&
           !has_str(cmd, "--signatures"),
       "options passed on");
    json_t *lab = json_object_get(s, "Labels");
    is_str(json_string_value(json_object_get(lab, "com.docker-flame.sidecar")), "1",
           "sidecar label");
    is_str(json_string_value(json_object_get(lab, "com.docker-flame.target")), "abc123",
           "target label");
    is_str(json_string_value(json_object_get(lab, "com.docker-flame.owner-pid")), "42",
           "owner label");
    is_str(json_string_value(json_object_get(lab, "docker-flame-test.owner")), "t1",
           "test owner label");
    json_decref(s);
    a.duration_s = 2.5;
    a.test_owner = NULL;
    s = spec_sidecar(&a, &err);
    ok(has_str(json_object_get(s, "Cmd"), "2.500"), "fractional duration kept");
    ok(!json_object_get(json_object_get(s, "Labels"), "docker-flame-test"),
       "no test labels outside tests");
    json_decref(s);
    a.caps = "SYS_PTRACE,ALL, SYS_CHROOT";
    s = spec_sidecar(&a, &err);
    json_t *ca = json_object_get(json_object_get(s, "HostConfig"), "CapAdd");
    ok(json_array_size(ca) == 2 && has_str(ca, "SYS_CHROOT") && !has_str(ca, "ALL"),
       "cap override: list taken, ALL refused");
    json_decref(s);
    a.caps = NULL;
    a.restore = true;
    a.test_stop = "setup,process";
    s = spec_sidecar(&a, &err);
    json_t *rc = json_object_get(s, "Cmd");
    ok(json_array_size(rc) == 4 && !strcmp(json_string_value(json_array_get(rc, 1)), "restore") &&
           has_str(rc, "--pid") && !has_str(rc, "--duration") && !has_str(rc, "--no-inline"),
       "restore: Cmd is /flame-sidecar restore [--pid N], nothing else");
    ok(json_is_true(json_object_get(json_object_get(s, "HostConfig"), "ReadonlyRootfs")) &&
           has_str(json_object_get(json_object_get(s, "HostConfig"), "SecurityOpt"),
                   "no-new-privileges:true"),
       "restore: same hardened HostConfig");
    ok(has_str(json_object_get(s, "Env"), "FLAME_SIDECAR_TEST_STOP=setup,process"),
       "test hook passed as the sidecar's env");
    json_decref(s);
    a.restore = false;
    a.test_stop = NULL;

    /* ---- durations ---- */
    double d;
    ok(opts_parse_duration("30", &d, &err) == 0 && d == 30, "30");
    ok(opts_parse_duration("45s", &d, &err) == 0 && d == 45, "45s");
    ok(opts_parse_duration("500ms", &d, &err) == 0 && d == 0.5, "500ms");
    ok(opts_parse_duration("1m30s", &d, &err) == 0 && d == 90, "1m30s");
    ok(opts_parse_duration("0", &d, &err) == 0 && d == 0, "0 = until Ctrl-C");
    ok(opts_parse_duration("abc", &d, &err) < 0 && err.code == FLAME_EXIT_USAGE, "abc rejected");
    ok(opts_parse_duration("-5", &d, &err) < 0, "negative rejected");
    ok(opts_parse_duration("5x", &d, &err) < 0, "unknown unit rejected");
    ok(opts_parse_duration("30 s", &d, &err) < 0, "space rejected");

    /* ---- options ---- */
    ok(parse(&o, &err, 3, "-d", "10", "web") == 0 && o.duration_s == 10 && o.ncontainers == 1 &&
           !strcmp(o.containers[0], "web"),
       "-d 10 web");
    ok(o.formats[FMT_SVG] && o.nformats == 1 && o.frequency == 99, "defaults: svg, 99 Hz");
    ok(parse(&o, &err, 1, "web") == 0 && o.duration_s == 30, "default duration 30 s");
    ok(parse(&o, &err, 6, "web", "-F49", "--format", "folded", "--format=speedscope,svg", "api") ==
               0 &&
           o.frequency == 49 && o.nformats == 3 && o.ncontainers == 2,
       "interleaved options, repeatable --format, comma list");
    ok(parse(&o, &err, 3, "--format", "png", "web") < 0 && err.code == FLAME_EXIT_USAGE &&
           strstr(err.msg, "png"),
       "unknown format: usage error naming it");
    ok(parse(&o, &err, 5, "web", "--", "sh", "-c", "true") == 0 && o.ncmd == 3 &&
           !strcmp(o.cmd[0], "sh") && o.duration_s == 0 && o.ncontainers == 1,
       "-- CMD: duration until the command exits");
    ok(parse(&o, &err, 6, "-d", "5", "web", "--", "sleep", "1") == 0 && o.duration_s == 5,
       "-- CMD with explicit -d keeps it");
    ok(parse(&o, &err, 2, "web", "--") < 0, "-- without a command is an error");
    ok(parse(&o, &err, 1, "-d") < 0 && strstr(err.msg, "needs an argument"), "-d without value");
    ok(parse(&o, &err, 0) < 0 && strstr(err.msg, "no container"), "no container: usage error");
    ok(parse(&o, &err, 2, "--bogus", "web") < 0 && strstr(err.msg, "--bogus"),
       "unknown flag named");
    ok(parse(&o, &err, 1, "--help") == 0 && o.help, "--help");
    ok(parse(&o, &err, 3, "--minwidth", "0.5%", "web") == 0 && o.minwidth == 0.5 && o.minwidth_pct,
       "--minwidth percent");
    ok(parse(&o, &err, 3, "--minwidth", "x", "web") < 0, "--minwidth garbage");
    ok(parse(&o, &err, 4, "--pid", "12", "-q", "web") == 0 && o.pid == 12 && o.quiet, "--pid -q");
    ok(parse(&o, &err, 3, "--pid", "0", "web") < 0, "--pid 0 rejected");
    ok(parse(&o, &err, 3, "-F", "0", "web") < 0, "-F 0 rejected");
    ok(parse(&o, &err, 7, "--title", "T", "--colors", "hot", "--no-inline", "--signatures",
             "web") == 0 &&
           !strcmp(o.title, "T") && !strcmp(o.colors, "hot") && o.no_inline && o.signatures,
       "--title --colors --no-inline --signatures");

    /* ---- output names ---- */
    char *paths[FMT_COUNT];
    time_t when = 1700000000;
    parse(&o, &err, 1, "web");
    ok(out_paths(&o, "web", 1, when, paths, &err) == 0 && paths[FMT_SVG] &&
           !strncmp(paths[FMT_SVG], "flame-web-2023", 14) && strstr(paths[FMT_SVG], ".svg"),
       "default name flame-<container>-<time>.svg (%s)", paths[FMT_SVG]);
    free(paths[FMT_SVG]);
    parse(&o, &err, 7, "-o", "out/x.svg", "--format", "svg", "--format", "speedscope", "web");
    ok(out_paths(&o, "web", 1, when, paths, &err) == 0 && !strcmp(paths[FMT_SVG], "out/x.svg") &&
           !strcmp(paths[FMT_SPEEDSCOPE], "out/x.speedscope.json") && !paths[FMT_FOLDED],
       "-o with several formats: extension per format");
    free(paths[FMT_SVG]);
    free(paths[FMT_SPEEDSCOPE]);
    parse(&o, &err, 3, "-o", "prof.txt", "web");
    ok(out_paths(&o, "web", 1, when, paths, &err) == 0 && !strcmp(paths[FMT_SVG], "prof.txt"),
       "-o with one format: the name as given");
    free(paths[FMT_SVG]);
    parse(&o, &err, 4, "-o", "x.svg", "a", "b");
    ok(out_paths(&o, "a", 2, when, paths, &err) < 0 && err.code == FLAME_EXIT_USAGE,
       "-o file with several containers: usage error");
    parse(&o, &err, 4, "-o", "/tmp/", "a", "b");
    ok(out_paths(&o, "we/b\n..", 2, when, paths, &err) == 0 &&
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

    /* ---- proto ---- */
    proto p;
    proto_init(&p);
#define LINE(s) proto_line(&p, s, strlen(s), &err)
    ok(LINE("J {}") < 0 && strstr(err.msg, "version"), "data before V is an error");
    ok(LINE("V 2") < 0 && strstr(err.msg, "version 2"), "other versions rejected");
    ok(LINE("V 1") == 0, "V 1");
    ok(LINE("J {\"pid\":5,\"nspid\":1}") == 0 && json_array_size(p.jvms) == 1, "J");
    ok(LINE("J [1]") < 0, "J must be an object");
    ok(LINE("P {\"elapsed_ms\":1500,\"duration_ms\":10000,\"samples\":120,\"jvms\":1}") == 0 &&
           p.elapsed_ms == 1500 && p.samples == 120 && p.njvms == 1 && p.progress,
       "P updates progress");
    ok(LINE("P {\"elapsed_ms\":1e300,\"duration_ms\":-5,\"samples\":-1e300,\"jvms\":NaN}") < 0 ||
           (p.elapsed_ms == 1LL << 53 && p.duration_ms == 0 && p.samples == 0),
       "P: huge/negative numbers clamped, no overflow");
    ok(LINE("P {\"elapsed_ms\":1e300,\"duration_ms\":-5,\"samples\":-1e300}") == 0 &&
           p.elapsed_ms == 1LL << 53 && p.duration_ms == 0 && p.samples == 0,
       "P: 1e300 and negatives clamped");
    LINE("P {\"elapsed_ms\":1500,\"duration_ms\":10000,\"samples\":120,\"jvms\":1}");
    ok(LINE("W no \x1b[31mPreserveFramePointer") == 0 && p.nwarn == 1, "W kept");
    char clean[64];
    proto_sanitize(p.warnings[0], clean, sizeof clean);
    ok(!strchr(clean, 0x1b), "terminal escapes removed before printing");
    ok(LINE("F a;b;c 10") == 0 && LINE("F a;b 5") == 0 && p.f_lines == 2, "F lines");
    ok(LINE("F a;b;c notanumber") < 0, "bad F line is an error");
    ok(LINE("S {\"samples\":15,\"named_share\":0.9}") == 0 && p.summary && p.samples == 15, "S");
    ok(LINE("X what") < 0 && strstr(err.msg, "unknown tag"), "unknown tag");
    ok(LINE("D") == 0 && p.done, "D");
    ok(LINE("W late") < 0, "nothing after D");
    proto_clear(&p);
    proto_init(&p);
    LINE("V 1");
    ok(LINE("E no_jvm found: 1 /init --pause") == 0 && !strcmp(p.err_code, "no_jvm") &&
           !strcmp(p.err_text, "found: 1 /init --pause"),
       "E code and text");
    is_int(proto_err_exit("no_jvm"), FLAME_EXIT_NO_JVM, "no_jvm -> 4");
    is_int(proto_err_exit("attach"), FLAME_EXIT_ATTACH, "attach -> 5");
    is_int(proto_err_exit("perf_denied"), FLAME_EXIT_PERF, "perf_denied -> 6");
    is_int(proto_err_exit("perf_unsupported"), FLAME_EXIT_PERF, "perf_unsupported -> 6");
    is_int(proto_err_exit("internal"), FLAME_EXIT_ERROR, "internal -> 1");
    for (int i = 0; i < 100; i++)
        LINE("W w");
    ok(p.nwarn == PROTO_MAX_WARNINGS && p.dropped_warn == 100 - PROTO_MAX_WARNINGS,
       "warnings bounded");
    ok(proto_line(&p, "W a\0b", 5, &err) < 0, "NUL byte rejected");
    proto_clear(&p);
    opts_clear(&o);
    return tap_done();
}
