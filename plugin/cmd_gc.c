/* `docker flame gc`: remove the sidecars a killed run left behind (by label), restoring the
 * target of one that was itself killed, and never touching a live run's sidecar. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/args.h"
#include "common/cleanup.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/run/spec.h"
#include "plugin/run/sweep.h"

/* Is the plugin that created a sidecar still running here? kill(pid, 0) alone would keep a
 * killed plugin's sidecar forever once its pid is reused: the process must also be a
 * docker-flame and have started no later than the sidecar was created (label, unix time). */
static bool owner_alive(long opid, long long created)
{
    if (opid <= 0 || (kill((pid_t)opid, 0) != 0 && errno != EPERM))
        return false;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/comm", opid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true; /* no /proc to ask: trust the pid */
    bool ours = fgets(buf, sizeof buf, f) && !strncmp(buf, "docker-flame", 12);
    fclose(f);
    if (!ours)
        return false;
    /* start time: field 22 of /proc/<pid>/stat, in clock ticks after boot (btime in /proc/stat) */
    snprintf(path, sizeof path, "/proc/%ld/stat", opid);
    f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
    unsigned long long start = 0;
    char state = '?';
    if (!p || sscanf(p + 1,
                     " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                     "%*d %*d %llu",
                     &state, &start) != 2)
        return true;
    /* A zombie has ended: a detached recorder killed after its parent left waits for whoever
     * adopted it to reap it, which may take long (or never, under a pid 1 that does not). */
    if (state == 'Z' || state == 'X')
        return false;
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "re");
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "btime %llu", &btime) == 1)
            break;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (!btime || hz <= 0 || created <= 0)
        return true;
    return (long long)(btime + start / (unsigned long long)hz) <= created + 1;
}

/* Remove one listed sidecar and say so (stdout), and what became of its target. */
static int gc_remove_one(engine *e, json_t *c, flame_err *err)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    sweep_done d;
    if (sweep_remove(e, c, &d, err) < 0)
        return -1;
    printf("removed sidecar %.12s%s\n", id, d.was_running ? " (was running)" : "");
    if (d.restore_tried && d.restored)
        printf("restored container %.12s (agent mount and map of the killed "
               "sidecar removed)\n",
               d.target);
    else if (d.restore_tried)
        fprintf(stderr, "docker flame gc: could not restore container %.12s: %s\n", d.target,
                d.restore_err.msg);
    return 0;
}

static long owner_of(json_t *c)
{
    const char *owner =
        json_string_value(json_object_get(json_object_get(c, "Labels"), SPEC_LABEL_OWNER));
    return owner ? strtol(owner, NULL, 10) : 0;
}

static int gc_run(engine *e, bool all, flame_err *err)
{
    _cleanup_json_ json_t *list = NULL;
    if (sweep_list(e, &list, err) < 0)
        return -1;
    size_t i;
    json_t *c;
    int removed = 0, kept = 0, failed = 0;
    json_array_foreach(list, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "Id"));
        if (!id)
            continue;
        /* A sidecar whose plugin is alive (on this host) is someone's live profile; not running
         * but its owner alive: that plugin is between create and start, or between exit and
         * remove; it cleans up itself. */
        const char *cr =
            json_string_value(json_object_get(json_object_get(c, "Labels"), SPEC_LABEL_CREATED));
        bool alive = owner_alive(owner_of(c), cr ? strtoll(cr, NULL, 10) : 0);
        if (alive && !all) {
            kept++;
            continue;
        }
        flame_err e2 = FLAME_ERR_INIT;
        if (gc_remove_one(e, c, &e2) < 0) {
            fprintf(stderr, "docker flame gc: %s\n", e2.msg);
            failed++;
        } else {
            removed++;
        }
    }
    printf("%d sidecar%s removed", removed, removed == 1 ? "" : "s");
    if (kept)
        printf(", %d kept: their docker flame is still running (--all removes them too)", kept);
    printf("\n");
    if (failed)
        return flame_fail(err, FLAME_EXIT_ENGINE, "%d sidecar%s could not be removed", failed,
                          failed == 1 ? "" : "s");
    return 0;
}

typedef struct gc_args {
    bool all, help;
} gc_args;

#define F(field, T) ARG_FIELD(gc_args, field, T)
// clang-format off
static const arg_spec gc_specs[] = {
    {.lng = "all", .shrt = 'a', .kind = ARG_FLAG, .off = F(all, bool),
     .help = "also remove running sidecars whose docker flame is alive\n(they are stopped with "
     "SIGTERM first, so they restore their target)"},
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on
#undef F
const args_verb cmd_gc_grammar = {.name = "docker flame gc",
                                  .specs = gc_specs,
                                  .nspecs = sizeof gc_specs / sizeof *gc_specs,
                                  .operands_off = ARGS_NO_OPERANDS};

int flame_cmd_gc(const ep_globals *g, int argc, char **argv)
{
    flame_err err = FLAME_ERR_INIT;
    gc_args a = {0};
    if (args_parse(&cmd_gc_grammar, argc - 1, argv + 1, &a, NULL, &err) < 0)
        return cli_fail("gc", &err);
    if (a.help) {
        printf("Usage:  docker flame gc [--all]\n\nRemove sidecar containers left behind by "
               "docker flame (label %s=1).\nSidecars whose docker-flame process is alive are "
               "kept unless --all.\n\nOptions:\n",
               SPEC_LABEL_SIDECAR);
        args_help(&cmd_gc_grammar, stdout);
        printf("\nExit status: 0 ok, 2 bad command line, 125 the engine failed or a sidecar "
               "could not be\nremoved.\n");
        return 0;
    }
    engine *e = NULL;
    if (engine_open(g, &e, &err) < 0)
        return cli_fail("gc", &err);
    int rc = gc_run(e, a.all, &err);
    engine_free(e);
    return rc < 0 ? cli_fail("gc", &err) : 0;
}
