/* `docker flame --help` (plugin/usage.h). It reads the verb table (plugin/verbs.c) and the profile
 * verb's options (plugin/opts.c), so a new verb or option is never missing here. Kept out of the
 * verb files: the profile verb prints it for --help, the table dispatches to the verbs, and
 * neither may depend on the other in a circle. */
#include "plugin/usage.h"

#include <string.h>

#include "plugin/opts.h"
#include "plugin/verbs.h"

void flame_usage(FILE *f)
{
    fputs("Usage:  docker flame [OPTIONS] CONTAINER [CONTAINER...] [-- CMD [ARG...]]\n"
          "        docker flame ",
          f);
    /* The verbs, from the one table (plugin/verbs.c), so a new verb is never missing here. */
    for (size_t v = 0; v < flame_nverbs; v++)
        fprintf(f, "%s%s", v ? "|" : "", flame_verbs[v].name);
    fputs(" [ARGS...]\n"
          "\n"
          "Profile the JVMs running in a container with perf, from a sidecar container that\n"
          "shares its PID namespace, and write an interactive flame graph (SVG). Nothing is\n"
          "installed in or restarted in the container; the sidecar is removed afterwards.\n"
          "\n"
          "Options:\n",
          f);
    opts_help(f);
    fputs("\n"
          "  -- CMD [ARG...]          run CMD on this host while profiling; recording starts\n"
          "                           before CMD and stops when it exits (no -d needed)\n"
          "\n"
          "Ctrl-C stops recording early and still writes the flame graph; a second Ctrl-C aborts.\n"
          "\n"
          "Other commands:\n",
          f);
    for (size_t v = 0; v < flame_nverbs; v++) {
        const char *line = flame_verbs[v].summary;
        fprintf(f, "  %-8s ", flame_verbs[v].name);
        for (;;) { /* a summary's further lines are indented under its first */
            size_t n = strcspn(line, "\n");
            fprintf(f, "%.*s\n", (int)n, line);
            if (!line[n])
                break;
            line += n + 1;
            fputs("           ", f);
        }
    }
    fputs("\n"
          "Examples:\n"
          "  docker flame web                         # 30 s, writes flame-web-<time>.svg\n"
          "  docker flame -d 10 -o web.svg web\n"
          "  docker flame -d 0 web                    # until Ctrl-C\n"
          "  docker flame --format svg --format folded -o out/web web\n"
          "  docker flame web api -o profiles/        # both at the same time, one file each\n"
          "  docker flame web -- ab -n 100000 http://localhost:8080/   # profile under load\n"
          "  docker --context prod flame web          # any engine docker can reach\n"
          "\n"
          "Exit status: 0 ok, 1 error, 2 usage, 3 no such container / not running, 4 no JVM,\n"
          "5 attach refused, 6 perf not permitted or unsupported, 7 profile store unusable,\n"
          "8 nothing stored for that container or range, 125 engine error or sidecar image\n"
          "unavailable, 130 aborted.\n",
          f);
}
