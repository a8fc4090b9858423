/* What the store's verbs share (plugin/stored.h). */
#include "plugin/stored.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/contract.h"
#include "common/count.h"
#include "plugin/inputs.h"
#include "plugin/run/proto.h"
#include "store/when.h"

int64_t stored_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *url_or_env(const char *url)
{
    const char *env = getenv("DOCKER_FLAME_STORE");
    return url ? url : env && *env ? env : NULL;
}

int stored_open(const char *url, store **s, flame_err *err)
{
    return store_open(url_or_env(url), s, err);
}

int stored_open_read(const char *url, store **s, flame_err *err)
{
    return store_open_read(url_or_env(url), s, err);
}

/* the copies of the URLs whose password left argv (reachable until exit) */
static char *hidden[4];

int stored_hide_password(const char **url, flame_err *err)
{
    if (!*url || !strchr(*url, '@'))
        return 0;
    size_t i = 0;
    while (i < sizeof hidden / sizeof *hidden && hidden[i])
        i++;
    char *copy = i < sizeof hidden / sizeof *hidden ? strdup(*url) : NULL;
    if (!copy)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* argv's strings are the process's own, writable memory (const only in our arg table) */
    if (store_url_scrub((char *)*url) == 0) {
        free(copy);
        return 0;
    }
    *url = hidden[i] = copy;
    return 0;
}

int stored_range(const char *since, const char *until, int64_t now, int64_t default_since_ago,
                 int64_t *since_ms, int64_t *until_ms, flame_err *err)
{
    const char *names[] = {"--since", "--until"}, *vals[] = {since, until};
    int64_t *outs[] = {since_ms, until_ms};
    *since_ms = now - default_since_ago;
    *until_ms = now;
    for (int i = 0; i < 2; i++)
        if (vals[i] && when_parse(vals[i], now, outs[i]) < 0)
            return flame_fail(err, FLAME_EXIT_USAGE, "%s: \"%.64s\" is not a time: give %s",
                              names[i], vals[i], WHEN_FORMS);
    if (*since_ms >= *until_ms)
        return flame_fail(err, FLAME_EXIT_USAGE, "--since must come before --until");
    return 0;
}

void stored_size_text(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void stored_range_text(int64_t since_ms, int64_t until_ms, char *buf, size_t cap)
{
    char a[40], b[40];
    /* Whole seconds: a range given relative to now ("15m" ago) ends at whatever millisecond now
     * is, which tells the reader nothing. */
    when_format(since_ms - since_ms % 1000, a, sizeof a);
    when_format(until_ms - until_ms % 1000, b, sizeof b);
    /* "2026-11-24 14:03:00 to 14:07:00" when both fall on one day */
    snprintf(buf, cap, "%s to %s", a, strncmp(a, b, 11) ? b : b + 11);
}

int stored_select(const char *arg, char *name, size_t cap, int64_t *pid, flame_err *err)
{
    const char *colon = strchr(arg, ':');
    size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    *pid = 0;
    if (colon) {
        char *end = NULL;
        long long v = colon[1] >= '0' && colon[1] <= '9' ? strtoll(colon + 1, &end, 10) : 0;
        if (!end || *end || v < 1 || v > CT_PID_MAX)
            return flame_fail(err, FLAME_EXIT_USAGE, "%.100s: one JVM of a container is %s", arg,
                              STORED_JVM_FORM);
        *pid = v;
    }
    if (n == 0 || n >= cap)
        return flame_fail(err, FLAME_EXIT_USAGE, "%.100s: no container name (%s)", arg,
                          STORED_JVM_FORM);
    memcpy(name, arg, n);
    name[n] = 0;
    return 0;
}

int stored_nothing(store *s, const store_query *q, flame_err *err)
{
    char range[96], who[200] = "anything", held[200] = "";
    stored_range_text(q->since_ms, q->until_ms, range, sizeof range);
    if (q->container) {
        char clean[128];
        proto_sanitize(q->container, clean, sizeof clean);
        char jvm[32] = "";
        if (q->jvm_pid)
            snprintf(jvm, sizeof jvm, ":%lld", (long long)q->jvm_pid);
        snprintf(who, sizeof who, "%s%s%s", clean, jvm, q->host ? " (that --host)" : "");
    }
    store_listing l = {0};
    flame_err quiet = FLAME_ERR_INIT;
    const char *type = q->type ? q->type : "cpu", *what = strcmp(type, "cpu") ? type : NULL;
    char kind[32] = "";
    if (what)
        snprintf(kind, sizeof kind, " of type %s", what);
    store_query of = {
        .container = q->container, .host = q->host, .jvm_pid = q->jvm_pid, .type = type};
    if (store_list(s, &of, &l, &quiet) == 0 && l.n) {
        int64_t first = l.e[0].first_ms, last = l.e[0].last_ms;
        for (size_t i = 1; i < l.n; i++) {
            first = l.e[i].first_ms < first ? l.e[i].first_ms : first;
            last = l.e[i].last_ms > last ? l.e[i].last_ms : last;
        }
        char span[96];
        stored_range_text(first, last, span, sizeof span);
        snprintf(held, sizeof held, "; the store has %s%s from %s", q->container ? "it" : "windows",
                 kind, span);
    } else {
        store_listing_free(&l);
        of.type = NULL; /* every type: is it there as another? */
        if (store_list(s, &of, &l, &quiet) == 0 && l.n)
            snprintf(held, sizeof held, "; the store has %s of type %s (docker flame ls)",
                     q->container ? "it" : "windows", l.e[0].type);
        else if (q->container)
            snprintf(held, sizeof held, "; the store has nothing of it");
    }
    store_listing_free(&l);
    return flame_fail(err, FLAME_EXIT_EMPTY, "nothing%s stored for %s from %s%s (%s)", kind, who,
                      range, held, store_name(s));
}

int stored_input(void *ctx, const char *arg, const char *type, profile **out, flame_err *err)
{
    (void)ctx;
    char sel[256], name[256];
    int64_t since, until, pid, now = stored_now_ms();
    int r = when_parse_input(arg, now, sel, sizeof sel, &since, &until);
    if (r == 0)
        return 0;
    if (r < 0)
        return flame_fail(
            err, FLAME_EXIT_USAGE,
            "%.100s: a stored range is CONTAINER[:PID]@SINCE..UNTIL (web@14:00..14:05, "
            "web@-2h..-1h, web:7@-30m), SINCE and UNTIL being %s",
            arg, WHEN_FORMS);
    if (stored_select(sel, name, sizeof name, &pid, err) < 0)
        return -1;
    store *s = NULL;
    store_query q = {
        .container = name, .since_ms = since, .until_ms = until, .jvm_pid = pid, .type = type};
    store_info info = {0};
    profile *p = profile_new();
    int rc =
        p ? stored_open_read(NULL, &s, err) : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0)
        rc = store_profile(s, &q, p, &info, err);
    if (rc == 0 && info.windows == 0)
        rc = stored_nothing(s, &q, err);
    store_close(s);
    if (rc < 0) {
        profile_free(p);
        return flame_wrap(err, "%.100s", arg);
    }
    *out = p;
    return 1;
}

static void label_of(const char *const *containers, int n, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o + 1 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "+" : "", containers[i]);
    if (!n)
        snprintf(buf, cap, "all containers");
}

void stored_job_init(stored_job *j, const profile *p, int fmt, const char *const *containers, int n,
                     const store_query *q, const store_info *info, const graph_opts *g)
{
    char b1[32], b2[32];
    memset(j, 0, sizeof *j);
    label_of(containers, n, j->label, sizeof j->label);
    stored_range_text(q->since_ms, q->until_ms, j->range, sizeof j->range);
    graph_apply(g, &j->ro);
    int m = q->type ? ct_mode_parse(q->type, strlen(q->type)) : CT_MODE_CPU;
    const ct_mode_info *mi = m > CT_MODE_CPU ? ct_mode((enum ct_mode)m) : NULL;
    if (!g->title && mi)
        snprintf(j->title, sizeof j->title, "%s - %s (%s), %s", j->label, mi->what, mi->unit,
                 j->range);
    else if (!g->title)
        snprintf(j->title, sizeof j->title, "%s, %s", j->label, j->range);
    if (!g->title)
        j->ro.title = j->title;
    if (mi)
        snprintf(j->sub, sizeof j->sub, "%s windows, %s: %s %s",
                 count_grouped((double)info->windows, b1, sizeof b1), mi->what,
                 count_grouped(profile_total(p), b2, sizeof b2), mi->unit);
    else
        snprintf(j->sub, sizeof j->sub, "%s windows, %s samples",
                 count_grouped((double)info->windows, b1, sizeof b1),
                 count_grouped((double)info->samples, b2, sizeof b2));
    j->ro.subtitle = j->sub;
    /* pprof: the stored range's time and its windows' rate. Windows recorded at different
     * rates are merged as counts; pprof has one period per profile, so the highest rate is
     * given (older stores without a rate: the recorder's default). */
    j->pm = (pprof_meta){.hz = info->hz_max > 0 ? (double)info->hz_max : REC_DEFAULT_HZ,
                         .time_ns = info->first_ms * 1000000,
                         .duration_ns = (info->last_ms - info->first_ms) * 1000000,
                         .container = n == 1 ? containers[0] : NULL,
                         .comment = j->range};
    /* the unit, the SVG's type mark and pprof's value type, as diff and merge write them:
     * a stored window keeps one column (alloc: bytes, lock: ns) */
    inputs_apply_mode(m, &j->ro, &j->pm);
    j->job = (out_job){.p = p, .fmt = fmt, .ro = &j->ro, .name = j->label, .pm = &j->pm};
}

char *stored_file_name(const char *prefix, const char *const *containers, int n, int64_t since_ms,
                       const char *ext)
{
    char label[160], safe[96], stamp[32], *p = NULL;
    time_t t = (time_t)(since_ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    label_of(containers, n, label, sizeof label);
    out_safe_name(n ? label : "all", safe, sizeof safe);
    return asprintf(&p, "%s-%s-%s%s", prefix, safe, stamp, ext) < 0 ? NULL : p;
}
