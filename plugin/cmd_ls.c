/* `docker flame ls`: what the profile store holds, one line per JVM of a container (and host):
 * its image, JVM pid and version, first and last window, windows, samples and its share of the
 * store's size; then the distinct stacks, the size on disk and the windows waiting in a remote
 * store's spool. */
#include <stdio.h>
#include <string.h>

#include "common/args.h"
#include "common/count.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/inputs.h"
#include "plugin/out/output.h"
#include "plugin/run/proto.h"
#include "plugin/stored.h"
#include "store/when.h"

static const char usage_head[] =
    "Usage:  docker flame ls [OPTIONS] [CONTAINER[:PID]...]\n"
    "\n"
    "List what the profile store holds: a line per JVM of each container (name or id prefix;\n"
    "none = all; CONTAINER:PID = one of its JVMs) and profile type (cpu, or what record --mode\n"
    "stored), with its image, pid and Java version, the first and last recorded window,\n"
    "windows, samples (of another type than cpu: its total, in its unit) and size. SIZE is its\n"
    "windows and its share of what they share (the stacks, stored once for all windows), in\n"
    "proportion to its windows: the column adds up to the store's size on disk, given below\n"
    "it. PID \"-\": not one JVM's (an older recorder stored a container's JVMs together; or\n"
    "stacks of no JVM the sidecar announced).\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame ls\n"
    "  docker flame ls web --store clickhouse://ch:8123/flame\n"
    "  docker flame ls web:7\n"
    "\n"
    "Exit status: 0 ok, 2 bad command line, 7 the store cannot be used, 8 there is no store\n"
    "there yet.\n";

typedef struct ls_args {
    const char *store, *host;
    int mode;
    bool help;
    args_operands in;
} ls_args;

#define F(field, T) ARG_FIELD(ls_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    INPUTS_MODE_SPEC(F(mode, int), "only windows of this profile type (default: every type)"),
    STORED_HOST_SPEC(F(host, const char *)),
    STORED_STORE_SPEC(F(store, const char *)),
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_ls_grammar = CLI_VERB("docker flame ls", specs, F(in, args_operands));
// clang-format on
#undef F

/* Widest cell of a column, at most 40 (container labels are the container's: sanitized) */
#define COLS 12
#define LEFT 9 /* the columns before WINDOWS: left-aligned */
static void print_table(const store_listing *l)
{
    static const char *const head[COLS] = {"CONTAINER", "ID",      "IMAGE",   "PID",
                                           "JAVA",      "TYPE",    "HOST",    "FIRST",
                                           "LAST",      "WINDOWS", "SAMPLES", "SIZE"};
    char cell[64][COLS][48];
    size_t rows = l->n < 64 ? l->n : 64;
    int w[COLS];
    for (int c = 0; c < COLS; c++)
        w[c] = (int)strlen(head[c]);
    for (size_t r = 0; r < rows; r++) {
        const store_entry *e = &l->e[r];
        proto_sanitize(e->container_name, cell[r][0], 41);
        proto_sanitize(e->container_id, cell[r][1], 13);
        proto_sanitize(e->image, cell[r][2], 41);
        if (e->jvm_pid)
            snprintf(cell[r][3], 48, "%lld", (long long)e->jvm_pid);
        else
            snprintf(cell[r][3], 48, "-");
        proto_sanitize(e->jvm_version && *e->jvm_version ? e->jvm_version : "-", cell[r][4], 33);
        proto_sanitize(e->type && *e->type ? e->type : "cpu", cell[r][5], 17);
        proto_sanitize(e->host, cell[r][6], 41);
        when_format(e->first_ms - e->first_ms % 1000, cell[r][7], 48);
        when_format(e->last_ms - e->last_ms % 1000, cell[r][8], 48);
        count_grouped((double)e->windows, cell[r][9], 48);
        count_grouped((double)e->samples, cell[r][10], 48);
        if (l->sizes_unknown)
            snprintf(cell[r][11], 48, "?");
        else
            stored_size_text(e->bytes, cell[r][11], 48);
        for (int c = 0; c < COLS; c++)
            w[c] = (int)strlen(cell[r][c]) > w[c] ? (int)strlen(cell[r][c]) : w[c];
    }
    for (int c = 0; c < COLS; c++)
        printf(c < LEFT ? "%-*s%s" : "%*s%s", w[c], head[c], c < COLS - 1 ? "  " : "\n");
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < COLS; c++)
            printf(c < LEFT ? "%-*s%s" : "%*s%s", w[c], cell[r][c], c < COLS - 1 ? "  " : "\n");
    if (l->n > rows)
        printf("(%zu more)\n", l->n - rows);
}

int flame_cmd_ls(const ep_globals *g, int argc, char **argv)
{
    (void)g; /* the store, not the engine */
    const char *vname = "ls";
    ls_args a = {.mode = -1};
    flame_err err = FLAME_ERR_INIT;
    int done = cli_parse(vname, &cmd_ls_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (done >= 0)
        return done;
    if (stored_hide_password(&a.store, &err) < 0)
        return cli_fail(vname, &err);
    for (int i = 0; i < a.in.n; i++) { /* every operand's form first: no store for a typo */
        char name[256];
        int64_t pid;
        if (stored_select(a.in.v[i], name, sizeof name, &pid, &err) < 0)
            return cli_usage_error(vname, "%s", err.msg);
    }
    store *s = NULL;
    store_listing l = {0};
    int rc = stored_open_read(a.store, &s, &err);
    for (int i = 0; rc == 0 && i < (a.in.n ? a.in.n : 1); i++) {
        char name[256] = "";
        store_query q = {.host = a.host, .type = a.mode >= 0 ? ct_mode_names[a.mode] : NULL};
        if (a.in.n)
            stored_select(a.in.v[i], name, sizeof name, &q.jvm_pid, &err);
        q.container = a.in.n ? name : NULL;
        rc = store_list(s, &q, &l, &err);
    }
    if (rc == 0) {
        char b1[32], b2[32];
        print_table(&l);
        stored_size_text(l.disk_bytes, b2, sizeof b2);
        printf("%s stacks, %s%s (%s)\n", count_grouped((double)l.stacks, b1, sizeof b1),
               l.sizes_unknown ? "sizes: see each shard's database" : b2,
               l.sizes_unknown ? "" : " on disk", store_name(s));
        if (l.spooled)
            printf("%s windows wait in the local spool for the server\n",
                   count_grouped((double)l.spooled, b1, sizeof b1));
    }
    store_listing_free(&l);
    store_close(s);
    return rc < 0 ? cli_fail(vname, &err) : FLAME_EXIT_OK;
}
