/* `docker flame host` (docs/HOST.md): one sidecar in the host's PID namespace records every CPU;
 * its stacks come rooted "<container key>;<process>;<thread>;frames". Here the keys become the
 * names of this engine's containers (short ids for containers it does not know: another engine's),
 * the graph is written (whole, limited by --container, or split per container into a directory)
 * and the table of who used the CPU is printed on stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h"
#include "common/contract.h"
#include "common/count.h"
#include "flame/frame.h"
#include "flame/methods.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/graph.h"
#include "plugin/host_timeline.h"
#include "plugin/out/output.h"
#include "plugin/run/run.h"
#include "plugin/run/spec.h"

#define MAX_CONTAINERS 1024
#define MAX_ROWS 256
#define MAX_ONLY 16
#define KEY_MAX 144 /* ct_jvm.container */

typedef struct host_args {
    ct_args rec; /* the sidecar's `host`: duration, frequency; attach_ids set from the engine */
    const char *output, *timeline;
    uint64_t bucket_ms;
    unsigned formats;
    const char *only[MAX_ONLY];
    int n_only;
    bool quiet, help;
} host_args;

static int store_container(void *base, const arg_val *v, flame_err *err)
{
    host_args *a = base;
    if (a->n_only >= MAX_ONLY)
        return flame_fail(err, FLAME_EXIT_USAGE, "--container: at most %d", MAX_ONLY);
    a->only[a->n_only++] = v->str;
    return 0;
}

#define F(field, T) ARG_FIELD(host_args, field, T)
// clang-format off
static const arg_spec host_specs[] = {
    {.lng = "duration", .shrt = 'd', .kind = ARG_DURATION, .off = F(rec.duration_ms, uint64_t),
     .meta = "DURATION", .help = "how long to record (default 10s; 0 = until Ctrl-C)", .lo = 0,
     .hi = CT_DURATION_MAX_MS},
    {.lng = "frequency", .shrt = 'F', .kind = ARG_INT, .off = F(rec.frequency, int64_t), .meta = "HZ",
     .help = "samples per second per CPU (default 99)", .lo = 1, .hi = CT_FREQ_MAX},
    OUT_OUTPUT_SPEC(F(output, const char *), "PATH",
                    "the graph (a file), or DIR/: the whole graph and one file per container"),
    OUT_FORMAT_SPEC(F(formats, unsigned),
                    "svg, folded, speedscope or pprof (a list; default: from the\n"
                    "extension of -o, else svg)",
                    out_fmt_names, ARG_LIST),
    {.lng = "container", .shrt = 'c', .kind = ARG_STR, .store = store_container, .meta = "NAME",
     .help = "only this container in the graph (repeatable); the table still shows the host",
     .complete = "container"},
    {.lng = "timeline", .kind = ARG_STR, .off = F(timeline, const char *), .meta = "FILE",
     .help = "also write the CPU timeline picture (SVG): per CPU, which container ran when",
     .complete = "file"},
    {.lng = "bucket", .kind = ARG_DURATION, .off = F(bucket_ms, uint64_t), .meta = "DURATION",
     .help = "the timeline's resolution (default 100ms)", .lo = 10, .hi = 60000},
    {.lng = "quiet", .shrt = 'q', .kind = ARG_FLAG, .off = F(quiet, bool),
     .help = "no progress on stderr"},
    CLI_HELP_SPEC(F(help, bool)),
};
// clang-format on
const args_verb cmd_host_grammar = {.name = "docker flame host",
                                    .specs = host_specs,
                                    .nspecs = sizeof host_specs / sizeof *host_specs,
                                    .groups = {CT_RECORD_GROUP(F(rec, ct_args))},
                                    .operands_off = ARGS_NO_OPERANDS};
#undef F

static const char host_head[] =
    "Usage:  docker flame host [OPTIONS]\n\n"
    "Which containers are on the CPU, and what each of them runs: every CPU of the engine's host\n"
    "is sampled for the duration and each sample is attributed to its container (or to the host).\n"
    "Writes a flame graph rooted container -> process (pid, vpid) -> thread (tid, vtid) -> frames\n"
    "and prints a table: container, CPU share of the host and in cores, samples, JVMs, hottest\n"
    "method. Java frames are named in the JVMs of this engine's containers.\n\n"
    "What it can see, and why: its sidecar runs in the host's PID and cgroup namespaces (to read\n"
    "each process's container from /proc/<pid>/cgroup and its in-container ids from NSpid) with\n"
    "CAP_SYS_ADMIN (CPU-wide perf events; the agent's read-only mount), CAP_SYS_PTRACE (other\n"
    "users' /proc), SETUID/SETGID/SYS_CHROOT (attaching as each JVM's user); no network, a\n"
    "read-only rootfs; the task scanner and the processing run as nobody without privilege.\n"
    "It sees the names, ids and user-space stacks of every process on the host, other engines'\n"
    "containers included (shown by short id). Needs a rootful engine.\n\n"
    "Options:\n";
static const char host_tail[] =
    "\nExit status: 0 ok, 1 error, 2 bad command line, 6 the engine or the kernel refuses\n"
    "system-wide sampling (rootless engine, perf_event_paranoid 3), 125 the engine failed, 130\n"
    "aborted.\n";

/* ---- this engine's containers ---- */

typedef struct ctr {
    char id[65], name[128], image[128];
} ctr;

static int list_containers(engine *e, ctr *out, int cap, flame_err *err)
{
    json_t *j = NULL;
    long st = 0;
    if (engine_json(e, "GET", NULL, &j, &st, err, "/containers/json") < 0)
        return flame_wrap(err, "list the containers");
    int n = 0;
    size_t i;
    json_t *c;
    json_array_foreach(j, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "Id"));
        const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
        const char *image = json_string_value(json_object_get(c, "Image"));
        if (!id || strlen(id) != 64 || n >= cap)
            continue;
        snprintf(out[n].id, sizeof out[n].id, "%s", id);
        snprintf(out[n].name, sizeof out[n].name, "%s",
                 name ? (name[0] == '/' ? name + 1 : name) : id);
        snprintf(out[n].image, sizeof out[n].image, "%s", image ? image : "");
        n++;
    }
    json_decref(j);
    return n;
}

/* The host pid of a running container's main process (its State.Pid), 0 when unknown. */
static long main_pid_of(engine *e, const char *id)
{
    json_t *j = NULL;
    long st = 0;
    flame_err ignored = FLAME_ERR_INIT;
    if (engine_json(e, "GET", NULL, &j, &st, &ignored, "/containers/%s/json", id) < 0)
        return 0;
    json_t *p = json_object_get(json_object_get(j, "State"), "Pid");
    long pid = json_is_integer(p) ? (long)json_integer_value(p) : 0;
    json_decref(j);
    return pid > 0 && pid <= CT_PID_MAX ? pid : 0;
}

/* A rootless engine cannot grant CPU-wide perf events nor the host's PID namespace. */
static int check_rootful(engine *e, flame_err *err)
{
    json_t *j = NULL;
    long st = 0;
    if (engine_json(e, "GET", NULL, &j, &st, err, "/info") < 0)
        return flame_wrap(err, "engine info");
    bool rootless = false;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(j, "SecurityOptions"), i, o)
    {
        const char *s = json_string_value(o);
        if (s && strstr(s, "name=rootless"))
            rootless = true;
    }
    json_decref(j);
    if (rootless)
        return flame_fail(err, FLAME_EXIT_PERF,
                          "the engine is rootless: it cannot give a sidecar the host's PID "
                          "namespace and system-wide perf events; use a rootful engine");
    return 0;
}

/* ---- rows ---- */

typedef struct row {
    char key[KEY_MAX];
    char name[160], id[16], image[128];
    double samples;
    int jvms;
    bool shown;     /* in the graph (--container) */
    profile *split; /* process;thread;frames (no ids): for -o DIR/ */
    char hot[256];
    double limit; /* CPU limit in cores (quota or cpuset), 0 = none or not this engine's */
} row;

typedef struct host_view {
    const ctr *c;
    int nc;
    row rows[MAX_ROWS];
    int nrows;
    profile *graph;
    const host_args *a;
    bool split;
} host_view;

static const ctr *find_ctr(const host_view *v, const char *id, size_t n)
{
    for (int i = 0; i < v->nc; i++)
        if (n == 64 && !memcmp(v->c[i].id, id, 64))
            return &v->c[i];
    return NULL;
}

/* The name of a key: "host", "(exited)" for the key "unknown", a container's name, or its short
 * id; nested keys "outer/inner" name each level. */
static void key_name(const host_view *v, const char *key, size_t kl, row *r)
{
    snprintf(r->key, sizeof r->key, "%.*s", (int)kl, key);
    r->name[0] = r->id[0] = r->image[0] = '\0';
    if (kl == 4 && !memcmp(key, "host", 4)) {
        snprintf(r->name, sizeof r->name, "host");
        return;
    }
    if (kl == 7 && !memcmp(key, "unknown", 7)) { /* tasks that exited before they were seen */
        snprintf(r->name, sizeof r->name, "(exited)");
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < kl;) {
        const char *slash = memchr(key + i, '/', kl - i);
        size_t l = slash ? (size_t)(slash - (key + i)) : kl - i;
        const ctr *c = find_ctr(v, key + i, l);
        int w = snprintf(r->name + used, sizeof r->name - used, "%s%.*s", used ? "/" : "",
                         c ? 127 : 12, c ? c->name : key + i);
        if (w > 0 && (size_t)w < sizeof r->name - used)
            used += (size_t)w;
        if (!slash) { /* the innermost level is what the row is */
            snprintf(r->id, sizeof r->id, "%.12s", key + i);
            snprintf(r->image, sizeof r->image, "%s", c ? c->image : "");
        }
        i += l + 1;
    }
}

static bool wanted(const host_view *v, const row *r)
{
    if (!v->a->n_only)
        return true;
    for (int i = 0; i < v->a->n_only; i++) {
        const char *o = v->a->only[i];
        size_t ol = strlen(o);
        if (!strcmp(o, r->name) || (ol >= 4 && !strncmp(r->key, o, ol)) ||
            (ol >= 4 && !strncmp(r->id, o, ol < 12 ? ol : 12)))
            return true;
    }
    return false;
}

static row *row_of(host_view *v, const char *key, size_t kl)
{
    for (int i = 0; i < v->nrows; i++)
        if (strlen(v->rows[i].key) == kl && !memcmp(v->rows[i].key, key, kl))
            return &v->rows[i];
    if (v->nrows >= MAX_ROWS || kl >= KEY_MAX)
        return NULL;
    row *r = &v->rows[v->nrows++];
    memset(r, 0, sizeof *r);
    key_name(v, key, kl, r);
    r->shown = wanted(v, r);
    return r;
}

/* Strip " 123 (vpid 4)" / " 123 (vtid 4)" from a frame: the split files diff across runs. */
static size_t strip_ids(const char *f, size_t n)
{
    const char *p = memmem(f, n, " (v", 3);
    if (!p)
        return n;
    size_t k = (size_t)(p - f);
    while (k && f[k - 1] >= '0' && f[k - 1] <= '9')
        k--;
    return k && f[k - 1] == ' ' ? k - 1 : n;
}

static int add_stack(void *ctx, const char *stack, size_t len, double count)
{
    host_view *v = ctx;
    const char *semi = memchr(stack, ';', len);
    size_t kl = semi ? (size_t)(semi - stack) : len;
    row *r = row_of(v, stack, kl);
    if (!r)
        return 0; /* more rows than the table holds: counted nowhere, said in the summary */
    r->samples += count;
    if (!r->split && !(r->split = profile_new()))
        return -1;
    /* the per-container profile: process;thread;frames without ids */
    char *b = malloc(len + 1);
    if (!b)
        return -1;
    size_t bl = 0;
    const char *p = semi ? semi + 1 : stack + len;
    for (int level = 0; p < stack + len; level++) {
        const char *e = memchr(p, ';', (size_t)(stack + len - p));
        size_t fl = e ? (size_t)(e - p) : (size_t)(stack + len - p);
        size_t keep = level < 2 ? strip_ids(p, fl) : fl;
        if (bl)
            b[bl++] = ';';
        memcpy(b + bl, p, keep);
        bl += keep;
        p += fl + 1;
    }
    int rc = bl ? profile_add(r->split, b, bl, count, PROFILE_ONE_COLUMN) : 0;
    if (rc == 0 && r->shown) {
        /* the graph: the row's name instead of the key */
        size_t nl = strlen(r->name);
        char *g = malloc(nl + len - kl + 1);
        if (!g) {
            free(b);
            return -1;
        }
        memcpy(g, r->name, nl);
        memcpy(g + nl, stack + kl, len - kl);
        rc = profile_add(v->graph, g, nl + len - kl, count, PROFILE_ONE_COLUMN);
        free(g);
    }
    free(b);
    return rc < 0 ? -1 : 0;
}

static int by_samples(const void *a, const void *b)
{
    double x = ((const row *)a)->samples, y = ((const row *)b)->samples;
    return x < y ? 1 : x > y ? -1 : strcmp(((const row *)a)->name, ((const row *)b)->name);
}

static void print_table(host_view *v, const proto *pr, FILE *out)
{
    double secs = (double)pr->host.record_ms / 1000.0;
    double per_core = secs * (double)(pr->host.frequency ? pr->host.frequency : 99);
    double cpus = (double)(pr->host.cpus ? pr->host.cpus : 1);
    fprintf(out, "%-28s %-12s %-24s %6s %6s %8s %4s  %s\n", "CONTAINER", "ID", "IMAGE", "CPU%",
            "CORES", "SAMPLES", "JVMS", "HOTTEST");
    for (int i = 0; i < v->nrows; i++) {
        row *r = &v->rows[i];
        double cores = per_core > 0 ? r->samples / per_core : 0;
        char name[64], image[64], hot[128];
        proto_sanitize(r->name, name, sizeof name);
        proto_sanitize(r->image[0] ? r->image : "-", image, sizeof image);
        proto_sanitize(r->hot[0] ? r->hot : "-", hot, sizeof hot);
        char jvms[16], n[32];
        /* a container left out by --container was not looked into: its JVMs are not known */
        snprintf(jvms, sizeof jvms, r->shown || r->jvms ? "%d" : "-", r->jvms);
        fprintf(out, "%-28s %-12s %-24s %6.1f %6.2f %8s %4s  %s\n", name, r->id[0] ? r->id : "-",
                image, 100.0 * cores / cpus, cores, count_grouped(r->samples, n, sizeof n), jvms,
                hot);
    }
    fprintf(out,
            "(%.1f s on %.0f CPUs at %llu Hz; cgroup %s; %llu tasks seen; %llu samples of "
            "tasks that had exited)\n",
            secs, cpus, (unsigned long long)pr->host.frequency,
            pr->host.cgroup[0] ? pr->host.cgroup : "?", (unsigned long long)pr->host.tasks,
            (unsigned long long)pr->host.unattributed);
}

/* whole: the host graph, drawn as an icicle (containers at the top, on the first screen: the
 * stacks below them are a JVM's, a hundred frames deep); else one container's graph */
static int write_profile(const char *output, unsigned formats, const char *name, time_t when,
                         const profile *p, const host_args *a, bool whole, int *exit_code)
{
    char *paths[FMT_COUNT];
    flame_err e = FLAME_ERR_INIT;
    if (out_paths(output, formats, name, 1, when, paths, &e) < 0)
        return cli_fail("host", &e);
    render_opts ro;
    graph_opts go = {.colors = "java"};
    graph_apply(&go, &ro);
    ro.inverted = whole;
    char title[256], sub[256];
    snprintf(title, sizeof title, "%s", name);
    char n[32];
    snprintf(sub, sizeof sub, "%s samples at %lld Hz on every CPU%s",
             count_grouped(profile_total(p), n, sizeof n), (long long)a->rec.frequency,
             whole ? "; containers at the top, their stacks below" : "");
    ro.title = title;
    ro.subtitle = sub;
    ro.embed_folded = true;
    for (int f = 0; f < FMT_COUNT; f++) {
        if (!paths[f])
            continue;
        pprof_meta pm = {.hz = (double)a->rec.frequency,
                         .time_ns = (int64_t)when * 1000000000,
                         .duration_ns = (int64_t)a->rec.duration_ms * 1000000,
                         .comment = name};
        out_job job = {.p = p, .fmt = f, .ro = &ro, .name = name, .pm = &pm};
        flame_err e2 = FLAME_ERR_INIT;
        if (out_write_saved(&paths[f], &job, &e2) != 0) {
            int c = cli_fail("host", &e2);
            if (!*exit_code)
                *exit_code = c;
        } else if (!a->quiet) {
            fprintf(stderr, "docker flame: wrote %s\n", paths[f]);
        }
        free(paths[f]);
    }
    return 0;
}

static int tl_row_of(void *ctx, const char *key)
{
    host_view *v = ctx;
    for (int i = 0; i < v->nrows; i++)
        if (!strcmp(v->rows[i].key, key))
            return v->rows[i].shown ? i : -1;
    return -1; /* a key without samples in the graph (cannot happen) */
}

static const char *tl_row_name(void *ctx, int r)
{
    host_view *v = ctx;
    return r >= 0 && r < v->nrows ? v->rows[r].name : "?";
}

static double tl_row_quota(void *ctx, int r)
{
    host_view *v = ctx;
    return r >= 0 && r < v->nrows ? v->rows[r].limit : 0;
}

static void write_timeline(host_view *v, const proto *pr, const host_args *a, int *exit_code)
{
    tl_input in = {.tasks = pr->tasks,
                   .ntasks = pr->ntasks,
                   .tl = pr->tl,
                   .ntl = pr->ntl,
                   .cpus = pr->host.cpus,
                   .record_ms = pr->host.record_ms,
                   .frequency = pr->host.frequency,
                   .bucket_ms = a->bucket_ms,
                   .nrows = v->nrows,
                   .row_of = tl_row_of,
                   .row_name = tl_row_name,
                   .row_quota = tl_row_quota,
                   .ctx = v};
    flame_err e = FLAME_ERR_INIT;
    if (out_write_with(a->timeline, host_timeline_write, &in, &e) < 0) {
        int c = cli_fail("host", &e);
        if (!*exit_code)
            *exit_code = c;
    } else if (!a->quiet) {
        fprintf(stderr, "docker flame: wrote %s\n", a->timeline);
    }
}

/* perf's name for code it found no symbol for in a JVM's map file: "[perf-1234.map]" (the JIT
 * code of a JVM without our agent: not attached) */
static bool perfmap_placeholder(const char *s)
{
    size_t n = strlen(s);
    return n > 11 && !strncmp(s, "[perf-", 6) && !strcmp(s + n - 5, ".map]");
}

/* The container of this engine a row is (its innermost level), or NULL: the host, exited
 * tasks, another engine's container. */
static const char *own_container(const host_view *v, const row *r)
{
    const char *inner = strrchr(r->key, '/');
    inner = inner ? inner + 1 : r->key;
    return find_ctr(v, inner, strlen(inner)) ? inner : NULL;
}

/* The CPU limit of the container a row is, if this engine has it. */
static double row_limit(engine *e, const host_view *v, const row *r)
{
    const char *inner = own_container(v, r);
    if (!inner)
        return 0;
    json_t *j = NULL;
    long st = 0;
    flame_err err = FLAME_ERR_INIT;
    if (engine_json(e, "GET", NULL, &j, &st, &err, "/containers/%s/json", inner) < 0)
        return 0; /* gone since: no limit drawn */
    json_t *hc = json_object_get(j, "HostConfig");
    double q = host_timeline_quota_cores(json_integer_value(json_object_get(hc, "NanoCpus")),
                                         json_integer_value(json_object_get(hc, "CpuQuota")),
                                         json_integer_value(json_object_get(hc, "CpuPeriod")),
                                         json_string_value(json_object_get(hc, "CpusetCpus")));
    json_decref(j);
    return q;
}

static void fill_rows(host_view *v, const proto *pr, engine *e)
{
    for (int i = 0; i < v->nrows; i++) {
        row *r = &v->rows[i];
        for (size_t k = 0; k < pr->njvms; k++)
            if (!strcmp(pr->jvms[k].container, r->key))
                r->jvms++;
        const char *names[1];
        double counts[1];
        if (r->split && (methods_top_self(r->split, 1, true, names, counts) == 1 ||
                         methods_top_self(r->split, 1, false, names, counts) == 1)) {
            if (perfmap_placeholder(names[0])) /* a JVM's JIT code, unnamed: why */
                snprintf(r->hot, sizeof r->hot, "%s",
                         !own_container(v, r) ? "(JIT code; not this engine's, not attached)"
                         : r->shown           ? "(JIT code without names)"
                                              : "(not attached: -c)");
            else /* as the one-shot summary: without the fold annotation */
                snprintf(r->hot, sizeof r->hot, "%.*s",
                         (int)frame_strip_annotation(names[0], strlen(names[0])), names[0]);
        }
        if (r->shown && v->a->timeline)
            r->limit = row_limit(e, v, r);
    }
    qsort(v->rows, (size_t)v->nrows, sizeof v->rows[0], by_samples);
}

int flame_cmd_host(const ep_globals *g, int argc, char **argv)
{
    static host_args a;
    a = (host_args){.n_only = 0};
    ct_args_default(&a.rec, CT_HOST);
    a.rec.duration_ms = 10000;
    int pr = cli_parse("host", &cmd_host_grammar, argc, argv, &a, &a.help, host_head, host_tail);
    if (pr >= 0)
        return pr;
    flame_err merr = FLAME_ERR_INIT;
    if (ct_modes_check(&a.rec, CT_MODES_DEFAULT, "docker flame host", &merr) < 0)
        return cli_fail("host", &merr);
    unsigned formats = a.formats;
    struct stat st;
    bool split = a.output && (a.output[strlen(a.output) - 1] == '/' ||
                              (stat(a.output, &st) == 0 && S_ISDIR(st.st_mode)));
    if (a.output && a.output[strlen(a.output) - 1] == '/' && mkdir(a.output, 0755) < 0 &&
        errno != EEXIST)
        return cli_usage_error("host", "-o %s: cannot create that directory: %s", a.output,
                               strerror(errno));
    flame_err err = FLAME_ERR_INIT;
    /* the one rule (plugin/out/output.h); the timeline is a picture */
    if (out_formats(split ? NULL : a.output, a.formats, OUT_ALL_FORMATS, FMT_SVG, &formats, &err) <
            0 ||
        (a.timeline && out_format(a.timeline, -1, 1u << FMT_SVG, FMT_SVG, &err) < 0))
        return cli_fail("host", &err);
    engine *e = NULL;
    static ctr cs[MAX_CONTAINERS];
    int nc = 0;
    if (engine_open(g, &e, &err) < 0 || check_rootful(e, &err) < 0 ||
        (nc = list_containers(e, cs, MAX_CONTAINERS, &err)) < 0) {
        engine_free(e);
        return cli_fail("host", &err);
    }
    static host_view v;
    memset(&v, 0, sizeof v);
    v.c = cs;
    v.nc = nc;
    v.a = &a;
    v.split = split;
    /* --container names one of this engine's running containers */
    for (int i = 0; i < a.n_only; i++) {
        bool found = false;
        for (int k = 0; k < nc && !found; k++)
            found = !strcmp(a.only[i], cs[k].name) ||
                    (strlen(a.only[i]) >= 4 && !strncmp(cs[k].id, a.only[i], strlen(a.only[i])));
        if (!found && strcmp(a.only[i], "host")) {
            engine_free(e);
            flame_fail(&err, FLAME_EXIT_NO_CONTAINER,
                       "--container %s: no such running container on this engine (see `docker "
                       "ps`)",
                       a.only[i]);
            return cli_fail("host", &err);
        }
    }

    /* the agent goes into the JVMs of this engine's containers (only --container's, when
     * given), never into processes of the host or of another engine */
    static char ids[CT_ATTACH_IDS_MAX * 74 + 1];
    size_t il = 0;
    for (int k = 0, nids = 0; k < nc && nids < CT_ATTACH_IDS_MAX; k++) {
        row tmp;
        memset(&tmp, 0, sizeof tmp);
        key_name(&v, cs[k].id, 64, &tmp);
        long main_pid = wanted(&v, &tmp) ? main_pid_of(e, cs[k].id) : 0;
        if (main_pid <= 0) /* not wanted, or gone meanwhile */
            continue;
        /* with its main process's host pid: the sidecar attaches only to JVMs in that process's
         * mount namespace, never to a host process posing as the container (docs/HOST.md) */
        il += (size_t)snprintf(ids + il, sizeof ids - il, "%s%s:%ld", il ? "," : "", cs[k].id,
                               main_pid);
        nids++;
    }
    a.rec.attach_ids = il ? ids : NULL;
    static const char *const host_target[] = {"host"};
    run_req req = {.sidecar = a.rec,
                   .targets = host_target,
                   .n = 1,
                   .quiet = a.quiet,
                   .debug = g->debug,
                   .t0 = mono_s()};
    run_result r;
    if (run_result_init(&r, &req, &err) < 0) {
        engine_free(e);
        return cli_fail("host", &err);
    }
    const run_target *s = &r.t[0];
    int rc = run_profile(e, &req, &r, &err);
    int exit_code = 0;
    /* our own sidecar is a container on the host too: its row says what it cost */
    if (s->sidecar_id && strlen(s->sidecar_id) == 64 && nc < MAX_CONTAINERS) {
        snprintf(cs[nc].id, sizeof cs[nc].id, "%s", s->sidecar_id);
        snprintf(cs[nc].name, sizeof cs[nc].name, "docker-flame-sidecar");
        snprintf(cs[nc].image, sizeof cs[nc].image, "%s", spec_image());
        v.nc = ++nc;
    }
    if (rc < 0) {
        exit_code = cli_fail("host", &err);
    } else if (s->pr.failed) {
        char text[1024];
        proto_sanitize(s->pr.err_text ? s->pr.err_text : "", text, sizeof text);
        fprintf(stderr, "docker flame: host: %s\n", text);
        exit_code = ct_error_exit(s->pr.err);
    } else if (!s->pr.done || !s->pr.have_host) {
        char oom[256];
        if (run_out_of_memory(s, oom, sizeof oom))
            fprintf(stderr, "docker flame: host: the sidecar %s: nothing written\n", oom);
        else if (s->exit_status == 137 && s->restored)
            fprintf(stderr,
                    "docker flame: host: the sidecar was killed (exit 137): nothing written; "
                    "the JVMs it had attached were restored\n");
        else if (s->exit_status == 137)
            fprintf(stderr,
                    "docker flame: host: the sidecar was killed (exit 137): nothing written; "
                    "could not restore %s: run `docker flame gc` and check that container's "
                    "/tmp\n",
                    s->restore_why[0] ? s->restore_why : "the JVMs it had attached");
        else
            fprintf(stderr, "docker flame: host: the sidecar ended without its result (see "
                            "`docker -D flame host`)\n");
        exit_code = FLAME_EXIT_ERROR;
    } else if (!(v.graph = profile_new()) ||
               (s->pr.prof && profile_each_stack(s->pr.prof, add_stack, &v) != 0)) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        exit_code = cli_fail("host", &err);
    } else {
        double tp = mono_s();
        fill_rows(&v, &s->pr, e);
        time_t when = time(NULL);
        write_profile(a.output, formats, "host", when, v.graph, &a, true, &exit_code);
        for (int i = 0; split && i < v.nrows; i++)
            if (v.rows[i].shown && v.rows[i].split)
                write_profile(a.output, formats, v.rows[i].name, when, v.rows[i].split, &a, false,
                              &exit_code);
        if (a.timeline)
            write_timeline(&v, &s->pr, &a, &exit_code);
        print_table(&v, &s->pr, stdout);
        /* bench/host.sh reads this line (docs/BENCHMARKS.md "docker flame host") */
        if (g->debug || getenv("DOCKER_FLAME_TIMINGS"))
            fprintf(
                stderr,
                "docker flame: host timings: total %.0f ms, record %llu ms, sidecar script+fold "
                "%llu ms, plugin rows+outputs %.0f ms, samples %llu, stacks %zu\n",
                (mono_s() - r.tm.t0) * 1000, (unsigned long long)s->pr.host.record_ms,
                (unsigned long long)s->pr.summary.timings_ms[CT_PH_SCRIPT], (mono_s() - tp) * 1000,
                (unsigned long long)s->pr.summary.samples,
                s->pr.prof ? profile_stacks(s->pr.prof) : (size_t)0);
    }
    for (int i = 0; i < v.nrows; i++)
        profile_free(v.rows[i].split);
    profile_free(v.graph);
    run_result_free(&r);
    engine_free(e);
    return exit_code;
}
