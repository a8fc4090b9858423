/* store-gen: writes simulated recorder windows into a profile store, for the benchmarks
 * (bench/bench-store.sh) and the ClickHouse tests: N windows of one JVM, back to back, each a
 * profile drawn at random (seeded: the same arguments give the same windows) from
 *   fixture  the distribution of a folded file (a real fixture JVM's profile)
 *   many     a pool of --stacks distinct synthetic Java stacks, Zipf-distributed
 *   deep     a compiler's stacks: --stacks possible paths (a million by default) down a call
 *            graph of javac-like methods, ~100 frames deep, sharing prefixes as recursive
 *            visitors do; drawn so that most samples of the first hour are new stacks and
 *            new ones become rarer after (as the CompilerLoop fixture's, docs/BENCHMARKS.md)
 *   hostile  stacks and labels full of markup, quotes, control bytes and invalid UTF-8
 *   replay   the samples of a file --dump wrote (a real recording), in order, --samples a
 *            window (no rhythm): the same recording into any store, or an older build's
 * with a daily rhythm and a one-hour spike (but replay), so a timeline has something to show.
 * --dump: print the windows of --store's --container instead (one "# window" line each, then
 * its folded stacks), for replay. Prints the windows written and the time taken. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/args.h"
#include "common/clock.h"
#include "flame/profile.h"
#include "store/store.h"
#include "store/when.h"

typedef struct gen_args {
    const char *store, *container, *id, *host, *image, *start, *workload, *fixture, *type;
    int64_t pid, windows, window_ms, stacks, samples, seed, batch, empty_every, pause_every,
        compact_every, frequency;
    bool help, dump, rollup;
} gen_args;

#define F(field, T) ARG_FIELD(gen_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "store", .kind = ARG_STR, .off = F(store, const char *), .meta = "URL", .help = "where"},
    {.lng = "container", .kind = ARG_STR, .off = F(container, const char *), .meta = "NAME",
     .help = "container name (web)"},
    {.lng = "id", .kind = ARG_STR, .off = F(id, const char *), .meta = "ID",
     .help = "container id (derived from the name)"},
    {.lng = "host", .kind = ARG_STR, .off = F(host, const char *), .meta = "HOST", .help = "host"},
    {.lng = "image", .kind = ARG_STR, .off = F(image, const char *), .meta = "IMAGE", .help = "image"},
    {.lng = "type", .kind = ARG_STR, .off = F(type, const char *), .meta = "TYPE",
     .help = "the windows' profile type (cpu)"},
    {.lng = "pid", .kind = ARG_INT, .off = F(pid, int64_t), .meta = "PID", .help = "JVM pid (1)",
     .lo = 1, .hi = 1 << 22},
    {.lng = "start", .kind = ARG_STR, .off = F(start, const char *), .meta = "TIME",
     .help = "first window's start: unix ms or a --since form (-24h)"},
    {.lng = "windows", .kind = ARG_INT, .off = F(windows, int64_t), .meta = "N", .help = "windows",
     .lo = 0, .hi = 1e8},
    {.lng = "window-ms", .kind = ARG_INT, .off = F(window_ms, int64_t), .meta = "MS",
     .help = "window length (10000)", .lo = 1, .hi = STORE_MAX_WINDOW_MS},
    {.lng = "frequency", .kind = ARG_INT, .off = F(frequency, int64_t), .meta = "HZ",
     .help = "the windows' sampling rate (99)", .lo = 0, .hi = 100000},
    {.lng = "workload", .kind = ARG_STR, .off = F(workload, const char *), .meta = "W",
     .help = "fixture, many, deep, hostile or replay"},
    {.lng = "fixture", .kind = ARG_STR, .off = F(fixture, const char *), .meta = "FILE",
     .help = "folded file of the fixture workload; what --dump wrote, for replay"},
    {.lng = "stacks", .kind = ARG_INT, .off = F(stacks, int64_t), .meta = "K",
     .help = "distinct stacks of the many workload (20000), paths of deep (1048576)", .lo = 1,
     .hi = 1e8},
    {.lng = "compact-every", .kind = ARG_INT, .off = F(compact_every, int64_t), .meta = "N",
     .help = "after every N windows (a multiple of --batch), compact the store as a recorder does"
             " (default policy, now = the last window's end)", .lo = 0, .hi = 1e8},
    {.lng = "rollup", .kind = ARG_FLAG, .off = F(rollup, bool),
     .help = "then build the hour rollups of every ended hour and the 6-hour ones of every ended block (as compaction does), merging no window"},
    {.lng = "dump", .kind = ARG_FLAG, .off = F(dump, bool),
     .help = "print --container's windows in --store (for --workload replay)"},
    {.lng = "samples", .kind = ARG_INT, .off = F(samples, int64_t), .meta = "S",
     .help = "mean samples per window (4 busy threads at 99 Hz for 10 s: 3960)", .lo = 0, .hi = 1e8},
    {.lng = "seed", .kind = ARG_INT, .off = F(seed, int64_t), .meta = "N", .help = "random seed",
     .lo = 0, .hi = 1e18},
    {.lng = "batch", .kind = ARG_INT, .off = F(batch, int64_t), .meta = "N",
     .help = "windows per store_put_many (1: one put per window, as the recorder)", .lo = 1,
     .hi = 100000},
    {.lng = "empty-every", .kind = ARG_INT, .off = F(empty_every, int64_t), .meta = "N",
     .help = "every Nth window has no stacks (0 = none)", .lo = 0, .hi = 1e9},
    {.lng = "pause-every", .kind = ARG_INT, .off = F(pause_every, int64_t), .meta = "N",
     .help = "after every N windows (a multiple of --batch), say so and wait for a line on stdin"
             " (EOF: stop): one writer measured at several points", .lo = 0, .hi = 1e8},
    {.lng = "help", .shrt = 'h', .kind = ARG_FLAG, .off = F(help, bool), .help = "this help"},
};
// clang-format on
static const args_verb verb = {.name = "store-gen",
                               .specs = specs,
                               .nspecs = sizeof specs / sizeof *specs,
                               .operands_off = ARGS_NO_OPERANDS};
#undef F

static uint64_t rng;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* The stack texts to draw from, with the cumulative weight of each. */
typedef struct pool {
    char **text;
    double *cdf;
    size_t n;
    size_t *len;     /* strlen of each text */
    uint32_t *count; /* the window being drawn: samples per stack (0 = not drawn) */
    size_t *drawn;   /* the stacks drawn so far in this window */
} pool;

static int pool_fixture(pool *p, const char *path, flame_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return flame_fail_errno(err, 1, errno, "%s", path);
    char line[1 << 16];
    size_t cap = 0;
    double sum = 0;
    while (fgets(line, sizeof line, f)) {
        char *sp = strrchr(line, ' ');
        if (!sp)
            continue;
        *sp = 0;
        if (p->n == cap) {
            cap = cap ? cap * 2 : 64;
            p->text = realloc(p->text, cap * sizeof *p->text);
            p->cdf = realloc(p->cdf, cap * sizeof *p->cdf);
        }
        sum += atof(sp + 1);
        p->text[p->n] = strdup(line);
        p->cdf[p->n++] = sum;
    }
    fclose(f);
    return p->n ? 0 : flame_fail(err, 1, "%s: no stacks", path);
}

/* Java-looking stacks sharing prefixes as real ones do: a thread's entry, a few framework
 * layers, then application frames chosen by the stack's index. */
static void pool_many(pool *p, size_t n, bool hostile)
{
    static const char *const layers[] = {
        "java.lang.Thread.run",
        "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run",
        "org.eclipse.jetty.server.HttpChannel.handle",
        "org.springframework.web.servlet."
        "DispatcherServlet.doDispatch",
        "com.example.shop.api.OrderController.place",
        "com.example.shop.service.OrderService.price",
        "com.fasterxml.jackson.databind."
        "ObjectMapper.writeValueAsString",
        "java.util.HashMap.putVal"};
    static const char *const evil[] = {
        "<script>alert(1)</script>", "a&b\"c'd", "\x01\x1b[31m", "\xff\xfe bad utf-8",
        "</svg><svg onload=x>",      "\\x41\t"};
    p->text = calloc(n, sizeof *p->text);
    p->cdf = calloc(n, sizeof *p->cdf);
    p->n = n;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[8192];
        size_t o = 0;
        uint64_t h = i * 0x9e3779b97f4a7c15ull + 1;
        int depth = 20 + (int)(h % 40);
        for (int d = 0; d < depth && o < sizeof buf - 200; d++) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            const char *name = d < 8 ? layers[d] : NULL;
            if (hostile && d % 5 == 4)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", d ? ";" : "",
                                      evil[(h >> 33) % 6]);
            else if (name)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", d ? ";" : "", name);
            else
                o += (size_t)snprintf(buf + o, sizeof buf - o,
                                      "%scom.example.shop.m%llu.C%llu.f_[j]", ";",
                                      (unsigned long long)((h >> 40) % (i % 97 + 3)),
                                      (unsigned long long)((h >> 20) % 13));
        }
        p->text[i] = strdup(buf);
        sum += 1.0 / pow((double)i + 1, 1.1); /* Zipf: a few hot stacks, a long tail */
        p->cdf[i] = sum;
    }
}

/* ---- deep: a compiler's stacks, made from their number ---- */

/* A call graph of javac-like methods: packages x classes x methods, named once. */
#define DEEP_METHODS 3000
static char deep_names[DEEP_METHODS][96];

static void deep_init(void)
{
    static const char *const pkg[] = {"comp", "code", "tree", "jvm", "parser", "util", "main"};
    static const char *const cls[] = {
        "Attr",   "Check",  "Resolve",  "Infer", "Flow",  "Lower", "Gen",   "Types",
        "Symbol", "JCTree", "TreeInfo", "Items", "Scope", "Lint",  "Enter", "MemberEnter"};
    static const char *const act[] = {"visit",  "attrib", "check",    "resolve", "infer",
                                      "lower",  "gen",    "find",     "isSub",   "subst",
                                      "accept", "scan",   "complete", "enter",   "lookup"};
    static const char *const noun[] = {"Binary", "Apply",       "Lambda",   "Ident",   "Select",
                                       "Tree",   "Expr",        "Type",     "Method",  "Args",
                                       "Block",  "Conditional", "NewClass", "Literal", "Parens"};
    for (int i = 0; i < DEEP_METHODS; i++) {
        uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull + 11;
        h ^= h >> 29;
        snprintf(deep_names[i], sizeof deep_names[i], "com.sun.tools.javac.%s.%s%s.%s%s%s",
                 pkg[h % 7], cls[(h >> 8) % 16], (h >> 40) % 3 ? "" : "$Visitor",
                 act[(h >> 16) % 15], noun[(h >> 24) % 15], (h >> 50) % 4 ? "" : "_[j]");
    }
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* Stack k of `paths`: a thread's frames, then a walk down the call graph. The turn at step i
 * depends on the high bits of k only, more of them the deeper the step, so stacks of nearby
 * numbers share a long prefix and part at some depth, as a compiler's do when the same
 * recursion reaches different nodes of the same tree; each method calls a few others, the
 * visitors back into the dispatchers (the depth). */
static size_t deep_stack(char *buf, size_t cap, uint64_t k, uint64_t paths)
{
    int bits = 1;
    while (((uint64_t)1 << bits) < paths)
        bits++;
    size_t o = (size_t)snprintf(buf, cap,
                                "compiler-0;java.lang.Thread.run;CompilerLoop.loop;"
                                "CompilerLoop.round;com.sun.tools.javac.api.JavacTaskImpl.call;"
                                "com.sun.tools.javac.main.JavaCompiler.compile");
    uint64_t hk = mix(k + 1);
    int depth = 40 + (int)(hk % 120); /* 40-160 frames below the thread's */
    uint32_t m = (uint32_t)(mix(k >> (bits > 4 ? bits - 4 : 0)) % 40); /* the phase's entry */
    for (int i = 0; i < depth && o + 100 < cap; i++) {
        int used = i / 2 + 4; /* the bits of k that decide this step */
        uint64_t key = used >= bits ? k : k >> (bits - used);
        uint64_t h = mix(key * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0x632be59bd9b4e019ull);
        /* a method calls one of 4 others (its own, fixed), the first ones most often */
        unsigned c = (h & 7) < 5 ? 0 : (h & 7) < 7 ? 1 : 2 + (unsigned)((h >> 3) & 1);
        m = (uint32_t)(mix((uint64_t)m * 4 + c) % DEEP_METHODS);
        o += (size_t)snprintf(buf + o, cap - o, ";%s", deep_names[m]);
    }
    return o;
}

/* A path's number: a few very common, a long tail seen once (u^5: half the samples in the
 * first 1/32 of the paths). */
static uint64_t deep_draw(uint64_t paths)
{
    double u = uniform(), u2 = u * u;
    return (uint64_t)((double)paths * u2 * u2 * u) % paths;
}

/* ---- replay: the samples of a dump, in order ---- */

typedef struct replay {
    FILE *f;
    char *line;
    size_t cap;
    char *stack; /* the current line's stack, and how many of its samples are left */
    size_t len;
    long long left;
} replay;

/* The next sample's stack (NULL at the end). */
static const char *replay_next(replay *r, size_t *len)
{
    while (r->left <= 0) {
        ssize_t n = getline(&r->line, &r->cap, r->f);
        if (n < 0)
            return NULL;
        while (n > 0 && r->line[n - 1] == '\n')
            r->line[--n] = 0;
        char *sp = strrchr(r->line, ' ');
        if (r->line[0] == '#' || !sp)
            continue;
        *sp = 0;
        r->stack = r->line;
        r->len = (size_t)(sp - r->line);
        r->left = atoll(sp + 1);
    }
    r->left--;
    *len = r->len;
    return r->stack;
}

/* --dump: each window of the container, in time order. */
static int dump(const gen_args *a)
{
    store *s = NULL;
    flame_err err = FLAME_ERR_INIT;
    store_series_list tl = {0};
    store_query q = {.container = a->container, .since_ms = 0, .until_ms = INT64_MAX};
    int rc = store_open(a->store, &s, &err);
    if (rc == 0)
        rc = store_timeline(s, &q, &tl, &err);
    for (size_t i = 0; rc == 0 && i < tl.n; i++)
        for (size_t k = 0; rc == 0 && k < tl.series[i].n; k++) {
            const store_point *pt = &tl.series[i].pts[k];
            store_query w = {.container = a->container,
                             .jvm_pid = tl.series[i].jvm_pid,
                             .since_ms = pt->start_ms,
                             .until_ms = pt->end_ms};
            store_info info = {0};
            profile *p = profile_new();
            rc = p ? store_profile(s, &w, p, &info, &err) : -1;
            printf("# window %lld %lld\n", (long long)pt->start_ms, (long long)pt->end_ms);
            if (rc == 0)
                rc = profile_write_folded(p, stdout, &err);
            profile_free(p);
        }
    store_timeline_free(&tl);
    store_close(s);
    if (rc < 0)
        fprintf(stderr, "store-gen: %s\n", err.msg);
    return rc < 0 ? 1 : 0;
}

static size_t draw(const pool *p)
{
    double u = uniform() * p->cdf[p->n - 1];
    size_t lo = 0, hi = p->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Samples of window i: a daily rhythm (busy afternoons) and a spike at 14:00-15:00 UTC. */
static int64_t samples_at(int64_t start_ms, int64_t mean)
{
    double day = (double)(start_ms % 86400000) / 86400000;
    double f = 0.6 + 0.4 * sin(2 * M_PI * (day - 0.3));
    if (day >= 14.0 / 24 && day < 15.0 / 24)
        f *= 2.2;
    return (int64_t)((double)mean * f * (0.9 + 0.2 * uniform()));
}

int main(int argc, char **argv)
{
    gen_args a = {.container = "web",
                  .host = "bench-host",
                  .image = "eclipse-temurin:17-jre",
                  .pid = 1,
                  .window_ms = 10000,
                  .frequency = 99,
                  .workload = "many",
                  .samples = 3960,
                  .stacks = 0,
                  .seed = 1,
                  .batch = 1,
                  .start = "-24h"};
    flame_err err = FLAME_ERR_INIT;
    if (args_parse(&verb, argc - 1, argv + 1, &a, NULL, &err) < 0) {
        fprintf(stderr, "store-gen: %s\n", err.msg);
        return 2;
    }
    if (a.help) {
        puts("Usage: store-gen --store URL --windows N [OPTIONS]\n\nOptions:");
        args_help(&verb, stdout);
        return 0;
    }
    if (a.dump)
        return dump(&a);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, start;
    char *end;
    start = strtoll(a.start, &end, 10);
    if ((*end || a.start[0] == '-') && when_parse(a.start, now, &start) < 0) {
        fprintf(stderr, "store-gen: --start: %s\n", WHEN_FORMS);
        return 2;
    }
    rng = 0x2545f4914f6cdd1dull ^ (uint64_t)a.seed * 0x9e3779b97f4a7c15ull;
    pool p = {0};
    bool hostile = !strcmp(a.workload, "hostile"), deep = !strcmp(a.workload, "deep");
    replay rp = {0};
    uint64_t paths = a.stacks ? (uint64_t)a.stacks : (uint64_t)1 << 20;
    if (deep) {
        deep_init();
        pool_many(&p, 1, false); /* unused: the stacks are made from their number */
    } else if (!strcmp(a.workload, "replay")) {
        if (!a.fixture || !(rp.f = fopen(a.fixture, "r"))) {
            fprintf(stderr, "store-gen: replay: give --fixture FILE (what --dump wrote)\n");
            return 2;
        }
        pool_many(&p, 1, false);
    } else if (!strcmp(a.workload, "fixture")) {
        if (pool_fixture(
                &p, a.fixture ? a.fixture : "tests/data/fold/jdk17-container-work.improved.txt",
                &err) < 0) {
            fprintf(stderr, "store-gen: %s\n", err.msg);
            return 1;
        }
    } else {
        pool_many(&p, a.stacks ? (size_t)a.stacks : 20000, hostile);
    }
    char id[128];
    snprintf(id, sizeof id, "%s", a.id ? a.id : "");
    if (!a.id) /* a container id looks like 64 hex digits */
        for (size_t i = 0; i < 64; i++)
            id[i] = "0123456789abcdef"[(a.container[i % strlen(a.container)] * 31 + i * 7) % 16],
            id[i + 1] = 0;
    p.len = calloc(p.n, sizeof *p.len);
    p.count = calloc(p.n, sizeof *p.count);
    p.drawn = calloc(p.n, sizeof *p.drawn);
    if (!p.len || !p.count || !p.drawn) {
        fprintf(stderr, "store-gen: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < p.n; i++)
        p.len[i] = strlen(p.text[i]);
    store *s = NULL;
    if (store_open(a.store, &s, &err) < 0) {
        fprintf(stderr, "store-gen: %s\n", err.msg);
        return err.code;
    }
    double t0 = mono_s();
    static char deep_buf[16384];
    /* deep: the paths drawn so far, to count the new stacks of each window */
    uint8_t *seen = deep ? calloc(paths / 8 + 1, 1) : NULL;
    int64_t fresh = 0, p_fresh = 0;
    store_window *w = calloc((size_t)a.batch, sizeof *w);
    int rc = 0;
    int64_t done = 0, spooled = 0, distinct = 0, samples = 0, p_samples = 0, p_distinct = 0;
    while (rc >= 0 && done < a.windows) {
        size_t n = 0;
        for (; n < (size_t)a.batch && done + (int64_t)n < a.windows; n++) {
            int64_t i = done + (int64_t)n, ws = start + i * a.window_ms;
            profile *prof = profile_new();
            /* deep: one busy thread, as steady as a build server's (no daily rhythm) */
            int64_t k = a.empty_every && i % a.empty_every == a.empty_every - 1 ? 0
                        : deep ? (int64_t)((double)a.samples * (0.95 + 0.1 * uniform()))
                               : samples_at(ws, a.samples);
            /* samples counted per stack first: one profile_add per distinct stack */
            size_t nd = 0;
            if (rp.f) { /* the recording's samples in order: no rhythm, no empty windows */
                k = 0;
                size_t len;
                const char *st;
                while (k < a.samples && (st = replay_next(&rp, &len))) {
                    profile_add(prof, st, len, 1, PROFILE_ONE_COLUMN);
                    k++;
                }
                nd = profile_stacks(prof);
                if (k == 0) { /* the recording ends: so does the run */
                    profile_free(prof);
                    a.windows = done + (int64_t)n;
                    break;
                }
            } else if (deep) {
                for (int64_t j = 0; j < k; j++) {
                    uint64_t x = deep_draw(paths);
                    size_t len = deep_stack(deep_buf, sizeof deep_buf, x, paths);
                    profile_add(prof, deep_buf, len, 1, PROFILE_ONE_COLUMN);
                    if (seen && !(seen[x / 8] & (1u << (x % 8)))) {
                        seen[x / 8] |= (uint8_t)(1u << (x % 8));
                        fresh++;
                    }
                }
                nd = profile_stacks(prof);
            } else {
                for (int64_t j = 0; j < k; j++) {
                    size_t x = draw(&p);
                    if (p.count[x]++ == 0)
                        p.drawn[nd++] = x;
                }
                for (size_t d = 0; d < nd; d++) {
                    size_t x = p.drawn[d];
                    profile_add(prof, p.text[x], p.len[x], p.count[x], PROFILE_ONE_COLUMN);
                    p.count[x] = 0;
                }
            }
            distinct += nd;
            samples += k;
            w[n] = (store_window){.host = hostile ? "host <&\"'\x01>" : a.host,
                                  .container_id = id,
                                  .container_name = hostile ? "web<script>\xff" : a.container,
                                  .image = a.image,
                                  .jvm_pid = a.pid,
                                  .jvm_version = "17.0.9+9",
                                  .start_ms = ws,
                                  .end_ms = ws + a.window_ms,
                                  .frequency = a.frequency,
                                  .samples = (uint64_t)k,
                                  .stacks = prof,
                                  .type = a.type};
        }
        rc = store_put_many(s, w, n, &err);
        if (rc > 0) {
            spooled += (int64_t)n;
            rc = 0;
        }
        for (size_t i = 0; i < n; i++)
            profile_free((profile *)w[i].stacks);
        done += rc >= 0 ? (int64_t)n : 0;
        if (rc >= 0 && a.compact_every && done % a.compact_every == 0) {
            flame_err cerr = FLAME_ERR_INIT;
            if (store_compact(s, start + done * a.window_ms, NULL, NULL, &cerr) < 0)
                fprintf(stderr, "store-gen: compacting: %s\n", cerr.msg);
        }
        /* the bench measures the store here, with this writer (and its stack numbering) alive */
        if (rc >= 0 && a.pause_every && done % a.pause_every == 0 && done < a.windows) {
            char line[16];
            printf("store-gen: paused after %lld windows; the last %lld: %.0f samples, %.0f "
                   "distinct stacks per window",
                   (long long)done, (long long)a.pause_every,
                   (double)(samples - p_samples) / (double)a.pause_every,
                   (double)(distinct - p_distinct) / (double)a.pause_every);
            if (seen)
                printf(", %.0f of them new", (double)(fresh - p_fresh) / (double)a.pause_every);
            putchar('\n');
            p_samples = samples;
            p_distinct = distinct;
            p_fresh = fresh;
            fflush(stdout);
            if (!fgets(line, sizeof line, stdin))
                break;
        }
    }
    /* as the recorder does when it stops: what the spool still holds goes now if it can */
    flame_err ferr = FLAME_ERR_INIT;
    if (rc >= 0 && store_flush(s, &ferr) < 0)
        fprintf(stderr, "store-gen: note: the spool keeps what waits: %s\n", ferr.msg);
    double secs = mono_s() - t0;
    if (rc >= 0 && a.rollup) {
        /* a policy of nothing: no retention, no buckets; compaction's rollups alone */
        store_policy none = {0};
        store_compact_stats st = {0};
        double r0 = mono_s();
        if ((rc = store_compact(s, now, &none, &st, &err)) >= 0)
            printf("store-gen: %llu hour rollups built in %.2f s (%llu 6-hour rollups)\n",
                   (unsigned long long)st.rollups, mono_s() - r0, (unsigned long long)st.rollups6);
    }
    store_close(s);
    if (rc < 0) {
        fprintf(stderr, "store-gen: %s\n", err.msg);
        return err.code ? err.code : 1;
    }
    printf("store-gen: %lld windows (%lld spooled) in %.2f s; per window: %.0f samples, %.0f "
           "distinct stacks\n",
           (long long)done, (long long)spooled, secs, done ? (double)samples / (double)done : 0,
           done ? (double)distinct / (double)done : 0);
    for (size_t i = 0; i < p.n; i++)
        free(p.text[i]);
    free(p.text);
    free(p.cdf);
    free(p.len);
    free(p.count);
    free(p.drawn);
    free(w);
    if (rp.f)
        fclose(rp.f);
    free(rp.line);
    free(seen);
    return 0;
}
