/* `docker flame fold`: perf script text in, folded stacks out (the verb's own main()). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "plugin/cmd.h"
#include "flame/fold.h"

static const char fold_usage[] =
    "Usage: docker flame fold [OPTIONS] [FILE|-]\n"
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
    "Options:\n"
    "  --pid              name the root frame comm-PID (needs `perf script -F +pid`)\n"
    "  --tid              name the root frame comm-PID/TID\n"
    "  --kernel           mark kernel frames with _[k]\n"
    "  --jit              mark JIT frames (from a /tmp/perf-N.map) with _[j]\n"
    "  --all              --kernel and --jit\n"
    "  --addrs            show addresses of unknown frames: [libc.so.6 <7f12..>]\n"
    "  --event-filter E   keep samples of event E only (default: the first event seen;\n"
    "                     E matches with or without perf's modifiers, e.g. cpu-clock)\n"
    "  --period           count summed periods (ns for cpu-clock) instead of samples\n"
    "  --signatures       keep Java return types and parameter lists\n"
    "  --no-inline        keep only the compiled method of `Outer.m->Inlined.m` symbols\n"
    "  --compat           byte-for-byte the output of FlameGraph's stackcollapse-perf.pl\n"
    "                     (counts are then summed periods, and none of our fixes apply)\n"
    "  -h, --help         this text\n"
    "\n"
    "Examples:\n"
    "  perf script | docker flame fold > app.folded\n"
    "  docker flame fold --all perf.txt | docker flame render > app.svg\n"
    "\n"
    "Differences from stackcollapse-perf.pl are listed in docs/FOLDING.md.\n";

enum { OPT_EVENT = 256, OPT_COMPAT, OPT_SIGNATURES, OPT_NO_INLINE, OPT_PERIOD };

int flame_cmd_fold(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pid", no_argument, NULL, 'p'},
        {"tid", no_argument, NULL, 't'},
        {"kernel", no_argument, NULL, 'k'},
        {"jit", no_argument, NULL, 'j'},
        {"all", no_argument, NULL, 'a'},
        {"addrs", no_argument, NULL, 'A'},
        {"event-filter", required_argument, NULL, OPT_EVENT},
        {"compat", no_argument, NULL, OPT_COMPAT},
        {"signatures", no_argument, NULL, OPT_SIGNATURES},
        {"no-inline", no_argument, NULL, OPT_NO_INLINE},
        {"period", no_argument, NULL, OPT_PERIOD},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fold_opts o = {.inline_frames = true};
    /* Re-entrant use (tests, the plugin's dispatcher): optind = 0 makes glibc start over. */
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            o.pid = true;
            break;
        case 't':
            o.tid = true;
            break;
        case 'k':
            o.kernel = true;
            break;
        case 'j':
            o.jit = true;
            break;
        case 'a':
            o.kernel = o.jit = true;
            break;
        case 'A':
            o.addrs = true;
            break;
        case OPT_EVENT:
            if (!*optarg) {
                fprintf(stderr, "docker flame fold: --event-filter needs an event name, e.g. "
                                "--event-filter cpu-clock\n");
                return FLAME_EXIT_USAGE;
            }
            o.event_filter = optarg;
            break;
        case OPT_COMPAT:
            o.compat = true;
            break;
        case OPT_SIGNATURES:
            o.signatures = true;
            break;
        case OPT_NO_INLINE:
            o.inline_frames = false;
            break;
        case OPT_PERIOD:
            o.period = true;
            break;
        case 'h':
            fputs(fold_usage, stdout);
            return FLAME_EXIT_OK;
        default:
            if (optopt == OPT_EVENT)
                fprintf(stderr, "docker flame fold: --event-filter needs an event name "
                                "(see 'docker flame fold --help')\n");
            else
                fprintf(stderr,
                        "docker flame fold: unknown option '%s' (see 'docker flame fold "
                        "--help')\n",
                        argv[optind - 1]);
            return FLAME_EXIT_USAGE;
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr,
                "docker flame fold: one input file at most, got '%s' and '%s' (see "
                "'docker flame fold --help')\n",
                argv[optind], argv[optind + 1]);
        return FLAME_EXIT_USAGE;
    }
    const char *path = optind < argc ? argv[optind] : "-";
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

    flame_err err = FLAME_ERR_INIT;
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
