/* plugin/opts.c: the profile verb's options (through common/args.c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/contract.h"
#include "plugin/opts.h"
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

int main(void)
{
    flame_err err = FLAME_ERR_INIT;
    flame_opts o;
    opts_init(&o);
    /* ---- options ---- */
    ok(parse(&o, &err, 3, "-d", "10", "web") == 0 && o.rec.duration_ms == 10000 &&
           o.containers.n == 1 && !strcmp(o.containers.v[0], "web"),
       "-d 10 web");
    ok((o.formats & 1u << FMT_SVG) && o.nformats == 1 && o.rec.frequency == 99,
       "defaults: svg, 99 Hz");
    ok(parse(&o, &err, 1, "web") == 0 && o.rec.duration_ms == 30000, "default duration 30 s");
    ok(parse(&o, &err, 6, "web", "-F49", "--format", "folded", "--format=speedscope,svg", "api") ==
               0 &&
           o.rec.frequency == 49 && o.nformats == 3 && o.containers.n == 2,
       "interleaved options, repeatable --format, comma list");
    ok(parse(&o, &err, 1, "web") == 0 && o.rec.sampling == CT_SAMPLING_AUTO,
       "default sampling: auto");
    ok(parse(&o, &err, 3, "--sampling", "thread", "web") == 0 &&
           o.rec.sampling == CT_SAMPLING_THREAD,
       "--sampling thread");
    ok(parse(&o, &err, 2, "--sampling=cpu", "web") == 0 && o.rec.sampling == CT_SAMPLING_CPU,
       "--sampling=cpu");
    ok(parse(&o, &err, 2, "--sampling=never", "web") < 0 && err.code == FLAME_EXIT_USAGE,
       "--sampling with an unknown value: usage error");
    ok(parse(&o, &err, 1, "web") == 0 && !o.rec.kernel, "kernel frames off by default");
    ok(parse(&o, &err, 2, "--kernel", "web") == 0 && o.rec.kernel, "--kernel");
    ok(parse(&o, &err, 4, "--kernel", "--sampling", "cpu", "web") == 0 && o.rec.kernel,
       "--kernel --sampling cpu");
    ok(parse(&o, &err, 4, "--kernel", "--sampling", "thread", "web") < 0 &&
           err.code == FLAME_EXIT_USAGE && strstr(err.msg, "per-CPU") && !strchr(err.msg, '\n'),
       "--kernel --sampling thread: usage error in one line");
    ok(parse(&o, &err, 3, "--format", "png", "web") < 0 && err.code == FLAME_EXIT_USAGE &&
           strstr(err.msg, "png"),
       "unknown format: usage error naming it");
    ok(parse(&o, &err, 5, "web", "--", "sh", "-c", "true") == 0 && o.ncmd == 3 &&
           !strcmp(o.cmd[0], "sh") && o.rec.duration_ms == 0 && o.containers.n == 1,
       "-- CMD: duration until the command exits");
    ok(parse(&o, &err, 6, "-d", "5", "web", "--", "sleep", "1") == 0 && o.rec.duration_ms == 5000,
       "-- CMD with explicit -d keeps it");
    ok(parse(&o, &err, 2, "web", "--") < 0, "-- without a command is an error");
    ok(parse(&o, &err, 1, "-d") < 0 && strstr(err.msg, "needs an argument"), "-d without value");
    ok(parse(&o, &err, 0) < 0 && strstr(err.msg, "no container"), "no container: usage error");
    ok(parse(&o, &err, 2, "--bogus", "web") < 0 && strstr(err.msg, "--bogus"),
       "unknown flag named");
    ok(parse(&o, &err, 1, "--help") == 0 && o.help, "--help");
    ok(parse(&o, &err, 3, "--minwidth", "0.5%", "web") == 0 && o.graph.minwidth == 0.5 &&
           o.graph.minwidth_pct,
       "--minwidth percent");
    ok(parse(&o, &err, 3, "--minwidth", "x", "web") < 0, "--minwidth garbage");
    ok(parse(&o, &err, 4, "--pid", "12", "-q", "web") == 0 && o.rec.pid == 12 && o.quiet,
       "--pid -q");
    ok(parse(&o, &err, 3, "--pid", "0", "web") < 0, "--pid 0 rejected");
    ok(parse(&o, &err, 3, "-F", "0", "web") < 0, "-F 0 rejected");
    ok(parse(&o, &err, 7, "--title", "T", "--colors", "hot", "--no-inline", "--signatures",
             "web") == 0 &&
           !strcmp(o.graph.title, "T") && !strcmp(o.graph.colors, "hot") && o.rec.no_inline &&
           o.rec.signatures,
       "--title --colors --no-inline --signatures");

    /* durations: the contract's limits, the same as the sidecar's */
    ok(parse(&o, &err, 3, "-d", "500ms", "web") == 0 && o.rec.duration_ms == 500, "-d 500ms");
    ok(parse(&o, &err, 3, "-d", "1m30s", "web") == 0 && o.rec.duration_ms == 90000, "-d 1m30s");
    ok(parse(&o, &err, 3, "-d", "25h", "web") == 0 && o.rec.duration_ms == 25ull * 3600000,
       "-d 25h");
    ok(parse(&o, &err, 3, "-d", "1.5s", "web") == 0 && o.rec.duration_ms == 1500, "-d 1.5s");
    ok(parse(&o, &err, 3, "-d", "8d", "web") < 0 && err.code == FLAME_EXIT_USAGE &&
           strstr(err.msg, "7d"),
       "-d 8d: over a week, refused naming the limit (%s)", err.msg);
    ok(parse(&o, &err, 3, "-d", "bogus", "web") < 0 &&
           strstr(err.msg, "invalid duration \"bogus\""),
       "-d bogus: says what is wrong");
    ok(parse(&o, &err, 3, "-d", "-5", "web") < 0, "negative duration rejected");
    ok(parse(&o, &err, 3, "-d", "30 s", "web") < 0, "space in a duration rejected");
    return tap_done();
}
