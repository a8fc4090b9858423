/* store-gen: writes simulated recorder windows into a profile store, for the benchmarks
 * (bench/bench-store.sh) and the ClickHouse tests: N windows of one JVM, back to back, each a
 * profile drawn at random (seeded: the same arguments give the same windows) from
 *   fixture  the distribution of a folded file (a real fixture JVM's profile)
 *   many     a pool of --stacks distinct synthetic Java stacks, Zipf-distributed
 *   hostile  stacks and labels full of markup, quotes, control bytes and invalid UTF-8
 * with a daily rhythm and a one-hour spike, so a timeline has something to show.
 * Prints the windows written and the time taken. */
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
    const char *store, *container, *id, *host, *image, *start, *workload, *fixture;
    int64_t pid, windows, window_ms, stacks, samples, seed, batch, empty_every, pause_every;
    bool help;
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
    {.lng = "pid", .kind = ARG_INT, .off = F(pid, int64_t), .meta = "PID", .help = "JVM pid (1)",
     .lo = 1, .hi = 1 << 22},
    {.lng = "start", .kind = ARG_STR, .off = F(start, const char *), .meta = "TIME",
     .help = "first window's start: unix ms or a --since form (-24h)"},
    {.lng = "windows", .kind = ARG_INT, .off = F(windows, int64_t), .meta = "N", .help = "windows",
     .lo = 0, .hi = 1e8},
    {.lng = "window-ms", .kind = ARG_INT, .off = F(window_ms, int64_t), .meta = "MS",
     .help = "window length (10000)", .lo = 1, .hi = STORE_MAX_WINDOW_MS},
    {.lng = "workload", .kind = ARG_STR, .off = F(workload, const char *), .meta = "W",
     .help = "fixture, many or hostile"},
    {.lng = "fixture", .kind = ARG_STR, .off = F(fixture, const char *), .meta = "FILE",
     .help = "folded file of the fixture workload"},
    {.lng = "stacks", .kind = ARG_INT, .off = F(stacks, int64_t), .meta = "K",
     .help = "distinct stacks of the many workload (20000)", .lo = 1, .hi = 1e7},
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
                  .workload = "many",
                  .stacks = 20000,
                  .samples = 3960,
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
    bool hostile = !strcmp(a.workload, "hostile");
    if (!strcmp(a.workload, "fixture")) {
        if (pool_fixture(
                &p, a.fixture ? a.fixture : "tests/data/fold/jdk17-container-work.improved.txt",
                &err) < 0) {
            fprintf(stderr, "store-gen: %s\n", err.msg);
            return 1;
        }
    } else {
        pool_many(&p, (size_t)a.stacks, hostile);
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
    store_window *w = calloc((size_t)a.batch, sizeof *w);
    int rc = 0;
    int64_t done = 0, spooled = 0, distinct = 0, samples = 0, p_samples = 0, p_distinct = 0;
    while (rc >= 0 && done < a.windows) {
        size_t n = 0;
        for (; n < (size_t)a.batch && done + (int64_t)n < a.windows; n++) {
            int64_t i = done + (int64_t)n, ws = start + i * a.window_ms;
            profile *prof = profile_new();
            int64_t k = a.empty_every && i % a.empty_every == a.empty_every - 1
                            ? 0
                            : samples_at(ws, a.samples);
            /* samples counted per stack first: one profile_add per distinct stack */
            size_t nd = 0;
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
                                  .frequency = 99,
                                  .samples = (uint64_t)k,
                                  .stacks = prof};
        }
        rc = store_put_many(s, w, n, &err);
        if (rc > 0) {
            spooled += (int64_t)n;
            rc = 0;
        }
        for (size_t i = 0; i < n; i++)
            profile_free((profile *)w[i].stacks);
        done += rc >= 0 ? (int64_t)n : 0;
        /* the bench measures the store here, with this writer (and its stack numbering) alive */
        if (rc >= 0 && a.pause_every && done % a.pause_every == 0 && done < a.windows) {
            char line[16];
            printf("store-gen: paused after %lld windows; the last %lld: %.0f samples, %.0f "
                   "distinct stacks per window\n",
                   (long long)done, (long long)a.pause_every,
                   (double)(samples - p_samples) / (double)a.pause_every,
                   (double)(distinct - p_distinct) / (double)a.pause_every);
            p_samples = samples;
            p_distinct = distinct;
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
    return 0;
}
