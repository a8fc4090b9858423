/* `docker flame fold`: perf script text in, folded stacks out (the verb's own main()). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/args.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "flame/fold.h"

static const char usage_head[] =
    "Usage:  docker flame fold [OPTIONS] [FILE|-]\n"
    "\n"
    "Fold the text of `perf script` (a recording made with `perf record -g`) into folded\n"
    "stacks, one line per distinct stack: `comm;root;...;leaf COUNT`, sorted. The output is\n"
    "what flamegraph.pl, inferno, speedscope and `docker flame render` read.\n"
    "Reads FILE, or standard input when FILE is '-' or absent.\n"
    "\n"
    "Counts are samples. Frames from a JIT map (/tmp/perf-N.map) are Java (or other JIT) code:\n"
    "`long Work.step(java.util.Random)` is shown as `Work.step`, and methods the JIT inlined\n"
    "(our agent writes `Outer.m->Inlined.m`) become frames of their own marked _[i].\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  perf script | docker flame fold > app.folded\n"
    "  docker flame fold --all perf.txt | docker flame render > app.svg\n"
    "\n"
    "Differences from stackcollapse-perf.pl are listed in docs/FOLDING.md.\n"
    "\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line.\n";

typedef struct fold_args {
    fold_opts o;
    args_operands in;
    bool help;
} fold_args;

static int store_all(void *base, const arg_val *v, flame_err *err)
{
    (void)v, (void)err;
    ((fold_args *)base)->o.kernel = ((fold_args *)base)->o.jit = true;
    return 0;
}

static int store_no_inline(void *base, const arg_val *v, flame_err *err)
{
    (void)v, (void)err;
    ((fold_args *)base)->o.inline_frames = false;
    return 0;
}

#define F(field, T) ARG_FIELD(fold_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "pid", .kind = ARG_FLAG, .off = F(o.pid, bool),
     .help = "name the root frame comm-PID (needs `perf script -F +pid`)"},
    {.lng = "tid", .kind = ARG_FLAG, .off = F(o.tid, bool),
     .help = "name the root frame comm-PID/TID"},
    {.lng = "kernel", .kind = ARG_FLAG, .off = F(o.kernel, bool),
     .help = "mark kernel frames with _[k]"},
    {.lng = "jit", .kind = ARG_FLAG, .off = F(o.jit, bool),
     .help = "mark JIT frames (from a /tmp/perf-N.map) with _[j]"},
    {.lng = "all", .kind = ARG_FLAG, .store = store_all, .help = "--kernel and --jit"},
    {.lng = "addrs", .kind = ARG_FLAG, .off = F(o.addrs, bool),
     .help = "show addresses of unknown frames: [libc.so.6 <7f12..>]"},
    {.lng = "event-filter", .kind = ARG_STR, .off = F(o.event_filter, const char *), .meta = "E",
     .help = "keep samples of event E only (default: the first event seen;\nE matches with or "
     "without perf's modifiers, e.g. cpu-clock)"},
    {.lng = "period", .kind = ARG_FLAG, .off = F(o.period, bool),
     .help = "count summed periods (ns for cpu-clock) instead of samples"},
    {.lng = "signatures", .kind = ARG_FLAG, .off = F(o.signatures, bool),
     .help = "keep Java return types and parameter lists"},
    {.lng = "no-inline", .kind = ARG_FLAG, .store = store_no_inline,
     .help = "keep only the compiled method of `Outer.m->Inlined.m` symbols"},
    {.lng = "compat", .kind = ARG_FLAG, .off = F(o.compat, bool),
     .help = "byte-for-byte the output of FlameGraph's stackcollapse-perf.pl\n(counts are then "
     "summed periods, and none of our fixes apply)"},
    {.lng = "help", .shrt = 'h', .kind = ARG_FLAG, .off = F(help, bool), .help = "this text"},
};
// clang-format on

const args_verb cmd_fold_grammar = {.name = "docker flame fold",
                                    .specs = specs,
                                    .nspecs = sizeof specs / sizeof *specs,
                                    .operands_off = F(in, args_operands)};
#undef F

int flame_cmd_fold(int argc, char **argv)
{
    fold_args a = {.o = {.inline_frames = true}};
    flame_err err = FLAME_ERR_INIT;
    if (args_parse(&cmd_fold_grammar, argc - 1, argv + 1, &a, NULL, &err) < 0)
        return cli_fail("fold", &err);
    if (a.in.n > 1) {
        args_error(&cmd_fold_grammar, &err, "one input file at most, got \"%.100s\" and \"%.100s\"",
                   a.in.v[0], a.in.v[1]);
        return cli_fail("fold", &err);
    }
    if (a.help) {
        fputs(usage_head, stdout);
        args_help(&cmd_fold_grammar, stdout);
        fputs(usage_tail, stdout);
        return FLAME_EXIT_OK;
    }
    fold_opts o = a.o;
    const char *path = a.in.n ? a.in.v[0] : "-";
    bool is_stdin = strcmp(path, "-") == 0;
    if (is_stdin && isatty(STDIN_FILENO)) {
        fprintf(stderr, "docker flame fold: reading perf script text from the terminal; pipe it "
                        "in or name a file (see 'docker flame fold --help')\n");
    }
    _cleanup_close_ int fd = is_stdin ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (!is_stdin && fd < 0) {
        fprintf(stderr, "docker flame fold: cannot open '%s': %s\n", path, strerror(errno));
        return FLAME_EXIT_ERROR;
    }

    folder *f = folder_new(&o);
    if (!f) {
        fprintf(stderr, "docker flame fold: out of memory\n");
        return FLAME_EXIT_ERROR;
    }
    int r = folder_read_fd(f, is_stdin ? STDIN_FILENO : fd, &err);
    if (r == 0)
        r = folder_finish(f, &err);
    if (r == 0)
        r = folder_write(f, stdout, &err);
    fold_stats st;
    folder_get_stats(f, &st);
    if (r < 0) {
        fprintf(stderr, "docker flame fold: %s: %s\n", is_stdin ? "<stdin>" : path, err.msg);
        folder_free(f);
        return err.code ? err.code : FLAME_EXIT_ERROR;
    }
    if (st.filtered > 0 && !o.event_filter)
        fprintf(stderr,
                "docker flame fold: kept only events of type '%s'; %llu samples of other "
                "events skipped (choose with --event-filter)\n",
                folder_event(f), st.filtered);
    if (st.truncated > 0)
        fprintf(stderr,
                "docker flame fold: %llu stacks were too deep and were cut at the leaf "
                "(marked [truncated])\n",
                st.truncated);
    folder_free(f);
    if (st.samples == 0) {
        fprintf(stderr,
                "docker flame fold: no samples in %s (%llu lines not understood): expected "
                "the text of `perf script` for a recording made with `perf record -g`\n",
                is_stdin ? "standard input" : path, st.unrecognized);
        return FLAME_EXIT_ERROR;
    }
    return FLAME_EXIT_OK;
}
