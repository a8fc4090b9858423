/* `docker flame prune`: retention and compaction of the profile store, what the recorder also
 * runs now and then: windows older than --retain are deleted with the stacks only they used,
 * windows older than an hour are merged into 1-minute buckets, older than a day into 10-minute
 * ones, and the space goes back to the file system. */
#include <stdio.h>

#include "common/args.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/inputs.h"
#include "plugin/stored.h"

static const char usage_head[] =
    "Usage:  docker flame prune [OPTIONS]\n"
    "\n"
    "Keep the profile store bounded: delete windows older than --retain (7d), and merge older\n"
    "windows into coarser buckets, per JVM (over 1 h old: 1-minute buckets, over 1 d: 10-minute\n"
    "ones; counts are added, so a merged range shows the same flame graph). ClickHouse works\n"
    "by whole days: a day past --retain is dropped, a finished day is merged.\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame prune\n"
    "  docker flame prune --retain 30d --store /data/profiles.db\n"
    "  docker flame prune --retain 0 --no-compact     # nothing at all\n"
    "\n"
    "Exit status: 0 ok, 2 bad command line, 7 the store cannot be used.\n";

typedef struct prune_args {
    const char *store;
    uint64_t retain_ms;
    bool no_compact, help;
} prune_args;

#define F(field, T) ARG_FIELD(prune_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "retain", .kind = ARG_DURATION, .off = F(retain_ms, uint64_t), .meta = "DURATION",
     .help = "keep windows this recent (7d; 0 = keep all)", .lo = 0,
     .hi = 3650 * 86400e3},
    {.lng = "no-compact", .kind = ARG_FLAG, .off = F(no_compact, bool),
     .help = "only delete, merge nothing"},
    STORED_STORE_SPEC(F(store, const char *)),
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_prune_grammar = CLI_VERB("docker flame prune", specs, ARGS_NO_OPERANDS);
// clang-format on
#undef F

int flame_cmd_prune(const ep_globals *g, int argc, char **argv)
{
    (void)g; /* the store, not the engine */
    const char *vname = "prune";
    prune_args a = {.retain_ms = STORE_RETAIN_DEFAULT_MS};
    flame_err err = FLAME_ERR_INIT;
    int done =
        cli_parse(vname, &cmd_prune_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (done >= 0)
        return done;
    if (stored_hide_password(&a.store, &err) < 0)
        return cli_fail(vname, &err);
    store_policy pol;
    store_policy_default(&pol);
    pol.retain_ms = (int64_t)a.retain_ms;
    if (a.no_compact)
        for (int i = 0; i < STORE_LEVELS; i++)
            pol.level[i].bucket_ms = 0;
    store *s = NULL;
    store_compact_stats st = {0};
    int rc = stored_open(a.store, &s, &err);
    if (rc == 0)
        rc = store_compact(s, stored_now_ms(), &pol, &st, &err);
    if (rc == 0) {
        char b[4][32], d1[32], d2[32], keep[32];
        args_format_duration(a.retain_ms, keep, sizeof keep);
        stored_size_text(st.disk_before, d1, sizeof d1);
        stored_size_text(st.disk_after, d2, sizeof d2);
        fprintf(stderr,
                "docker flame prune: deleted %s windows older than %s, merged %s windows into %s "
                "buckets, freed %s stacks; %s -> %s (%s)\n",
                grouped((double)st.deleted, b[0], sizeof b[0]), a.retain_ms ? keep : "forever",
                grouped((double)st.merged, b[1], sizeof b[1]),
                grouped((double)st.buckets, b[2], sizeof b[2]),
                grouped((double)st.stacks_freed, b[3], sizeof b[3]), d1, d2, store_name(s));
        if (st.days_skipped)
            fprintf(stderr,
                    "docker flame prune: %llu day%s not merged: windows arrived in %s while it was "
                    "(the next prune merges %s)\n",
                    (unsigned long long)st.days_skipped, st.days_skipped == 1 ? "" : "s",
                    st.days_skipped == 1 ? "it" : "them", st.days_skipped == 1 ? "it" : "them");
    }
    store_close(s);
    return rc < 0 ? cli_fail(vname, &err) : FLAME_EXIT_OK;
}
