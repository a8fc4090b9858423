/* The plugin–sidecar contract (common/contract.h): the sidecar's argv, built and parsed with the
 * one option table below, and the writers of every result-stream payload. */
#include "common/contract.h"

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

/* ---- names ---- */

static const char *const verb_names[CT_VERB_COUNT] = {"record", "top", "restore", "host"};
static const char *const inject_names[] = {"auto", "mount", "copy", NULL};
static const char *const error_names[CT_ERR_COUNT] = {"no_jvm", "no_pid",      "attach",
                                                      "inject", "perf_denied", "perf_unsupported",
                                                      "usage",  "aborted",     "internal"};
static const char *const attach_names[CT_ATTACH_COUNT] = {"none", "agent", "perfmap"};
const char *const ct_sampling_names[] = {"auto", "cpu", "thread", NULL};
const char *const ct_mode_names[] = {"cpu", "wall", "offcpu", "alloc", "lock", NULL};
// clang-format off
static const ct_mode_info mode_info[CT_MODE_COUNT] = {
    [CT_MODE_CPU] = {"cpu", "CPU", "samples", "samples", "count", "cpu", "nanoseconds",
                     "cpu", "nanoseconds"},
    [CT_MODE_WALL] = {"wall", "wall clock", "ns", NULL, NULL, "wall", "nanoseconds",
                      "wall", "nanoseconds"},
    [CT_MODE_OFFCPU] = {"offcpu", "off-CPU", "ns", NULL, NULL, "off_cpu", "nanoseconds",
                        "off_cpu", "nanoseconds"},
    [CT_MODE_ALLOC] = {"alloc", "allocations", "bytes", "alloc_objects", "count",
                       "alloc_space", "bytes", "space", "bytes"},
    [CT_MODE_LOCK] = {"lock", "lock contention", "ns", "contentions", "count", "delay",
                      "nanoseconds", "contentions", "count"},
};
// clang-format on

const ct_mode_info *ct_mode(enum ct_mode m)
{
    return &mode_info[(unsigned)m < CT_MODE_COUNT ? m : CT_MODE_CPU];
}

int ct_mode_parse(const char *s, size_t n)
{
    for (int m = 0; m < CT_MODE_COUNT; m++)
        if (strlen(mode_info[m].name) == n && !memcmp(mode_info[m].name, s, n))
            return m;
    return -1;
}

void ct_modes_name(unsigned modes, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int m = 0; m < CT_MODE_COUNT && cap; m++)
        if (modes & CT_MODE_BIT(m)) {
            int w = snprintf(out + len, cap - len, "%s%s", len ? "," : "", mode_info[m].name);
            if (w < 0 || (size_t)w >= cap - len) {
                out[len] = 0; /* whole names only */
                break;
            }
            len += (size_t)w;
        }
}

unsigned ct_modes_parse_list(const char *s, size_t n)
{
    unsigned modes = 0;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && s[e] != ',')
            e++;
        int m = ct_mode_parse(s + i, e - i);
        if (m >= 0)
            modes |= CT_MODE_BIT(m);
        i = e + 1;
    }
    return modes;
}

unsigned ct_modes_of(const ct_args *a)
{
    return a->modes ? a->modes : CT_MODES_DEFAULT;
}

int ct_modes_check(const ct_args *a, unsigned supported, const char *verb, flame_err *err)
{
    unsigned bad = ct_modes_of(a) & ~supported;
    if (!bad && a->alloc_interval && !(supported & CT_MODE_BIT(CT_MODE_ALLOC)))
        bad = CT_MODE_BIT(CT_MODE_ALLOC); /* host: the option of a mode it does not record */
    if (!bad && a->alloc_interval && !(ct_modes_of(a) & CT_MODE_BIT(CT_MODE_ALLOC)))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "--alloc-interval goes with --mode alloc (see `%s --help`)", verb);
    if (!bad)
        return 0;
    char list[96] = "";
    size_t len = 0;
    for (int m = 0; m < CT_MODE_COUNT; m++)
        if (supported & CT_MODE_BIT(m)) {
            int w =
                snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", mode_info[m].name);
            if (w > 0 && (size_t)w < sizeof list - len)
                len += (size_t)w;
        }
    return flame_fail(err, FLAME_EXIT_USAGE,
                      "--mode %s: not supported by `%s` yet (it records %s; see `%s --help`)",
                      mode_info[__builtin_ctz(bad)].name, verb, list, verb);
}
static const char *const injected_names[CT_INJECTED_COUNT] = {"none", "mount", "copy"};
static const char *const phase_names[CT_PH_COUNT] = {
    "scan", "inject", "attach", "first_sample", "record", "finish", "sanitize", "script", "total"};
static const char *const cap_phase_names[CT_CAPS_COUNT] = {"setup", "open", "record", "process"};
static const char *const walk_status_names[CT_WALK_NSTATUS] = {
    "root",           "copy_end",   "interp_entry", "break_interpreted",
    "break_compiled", "break_stub", "unknown_blob", "unknown_pc",
    "no_unwind_info", "vthread",    "loop",         "max_depth"};

/* One getter per enum: a value out of range (a newer peer, a bug) names the fallback, never
 * reads past the table. */
#define CT_NAME_GETTER(fn, type, table, count, fallback)                                           \
    const char *fn(type v)                                                                         \
    {                                                                                              \
        return (unsigned)v < (unsigned)(count) ? table[v] : fallback;                              \
    }
CT_NAME_GETTER(ct_verb_name, enum ct_verb, verb_names, CT_VERB_COUNT, "?")
CT_NAME_GETTER(ct_inject_name, enum ct_inject, inject_names, CT_INJECT_COUNT, "?")
CT_NAME_GETTER(ct_error_name, enum ct_error, error_names, CT_ERR_COUNT, "internal")
CT_NAME_GETTER(ct_attach_name, enum ct_attach, attach_names, CT_ATTACH_COUNT, "none")
CT_NAME_GETTER(ct_sampling_name, enum ct_sampling, ct_sampling_names, CT_SAMPLING_COUNT, "?")
CT_NAME_GETTER(ct_injected_name, enum ct_injected, injected_names, CT_INJECTED_COUNT, "none")
CT_NAME_GETTER(ct_phase_name, enum ct_phase, phase_names, CT_PH_COUNT, "?")
CT_NAME_GETTER(ct_cap_phase_name, enum ct_cap_phase, cap_phase_names, CT_CAPS_COUNT, "?")
CT_NAME_GETTER(ct_walk_status_name, int, walk_status_names, CT_WALK_NSTATUS, "?")
#undef CT_NAME_GETTER

enum ct_error ct_error_parse(const char *s, size_t n)
{
    for (int e = 0; e < CT_ERR_COUNT; e++)
        if (strlen(error_names[e]) == n && !memcmp(error_names[e], s, n))
            return (enum ct_error)e;
    return CT_ERR_INTERNAL;
}

int ct_error_exit(enum ct_error e)
{
    switch (e) {
    case CT_ERR_NO_JVM:
    case CT_ERR_NO_PID:
        return FLAME_EXIT_NO_JVM;
    case CT_ERR_ATTACH:
    case CT_ERR_INJECT:
        return FLAME_EXIT_ATTACH;
    case CT_ERR_PERF_DENIED:
    case CT_ERR_PERF_UNSUPPORTED:
        return FLAME_EXIT_PERF;
    case CT_ERR_USAGE:
        return FLAME_EXIT_USAGE;
    case CT_ERR_ABORTED:
        return FLAME_EXIT_INTERRUPTED;
    case CT_ERR_INTERNAL:
    case CT_ERR_COUNT:
        break;
    }
    return FLAME_EXIT_ERROR;
}

/* ---- the command line ---- */

#define F(field, T) ARG_FIELD(ct_args, field, T)
// clang-format off
static const arg_spec sidecar_specs[] = {
    {.lng = "duration", .kind = ARG_DURATION, .off = F(duration_ms, uint64_t), .meta = "DURATION",
     .help = "record: how long (0 = until SIGINT)", .lo = 0, .hi = CT_DURATION_MAX_MS},
    {.lng = "interval", .kind = ARG_DURATION, .off = F(interval_ms, uint64_t), .meta = "DURATION",
     .help = "top: window length", .lo = CT_INTERVAL_MIN_MS, .hi = CT_INTERVAL_MAX_MS},
    {.lng = "frequency", .kind = ARG_INT, .off = F(frequency, int64_t), .meta = "HZ",
     .help = "samples per second", .lo = 1, .hi = CT_FREQ_MAX},
    {.lng = "pid", .kind = ARG_INT, .off = F(pid, int64_t), .meta = "PID",
     .help = "only this JVM (its pid in the container)", .lo = 1, .hi = CT_PID_MAX},
    {.lng = "no-inline", .kind = ARG_FLAG, .off = F(no_inline, bool),
     .help = "no frames for inlined methods"},
    {.lng = "signatures", .kind = ARG_FLAG, .off = F(signatures, bool),
     .help = "keep Java signatures"},
    {.lng = "kernel", .kind = ARG_FLAG, .off = F(kernel, bool),
     .help = "record, top: kernel stacks too (needs CAP_SYSLOG at the start)"},
    {.lng = "last-window", .kind = ARG_FLAG, .off = F(last_window, bool),
     .help = "top: send the window cut short by the stop too"},
    {.lng = "attach-timeout", .kind = ARG_DURATION, .off = F(attach_timeout_ms, uint64_t),
     .meta = "DURATION", .help = "bound of each attach command", .lo = 1000, .hi = 600000},
    {.lng = "inject", .kind = ARG_CHOICE, .off = F(inject, int), .meta = "HOW",
     .help = "how the agent becomes visible in the target", .choices = inject_names},
    {.lng = "sampling", .kind = ARG_CHOICE, .off = F(sampling, int), .meta = "HOW",
     .help = "auto (per CPU, else per thread), cpu or thread", .choices = ct_sampling_names},
    {.lng = "attach", .kind = ARG_STR, .off = F(attach_ids, const char *), .meta = "ID:PID,...",
     .help = "host: the containers whose JVMs get the agent (full id, host pid of its main process)"},
    {.lng = "target", .kind = ARG_STR, .off = F(target, const char *), .meta = "ID",
     .help = "record, top, restore: the target container's full id (only its tasks are used)"},
    {.lng = "help", .shrt = 'h', .kind = ARG_FLAG, .off = F(help, bool), .help = "this text"},
};
// clang-format on
#undef F

#define F(field, T) ARG_FIELD(ct_args, field, T)
// clang-format off
const arg_spec ct_record_specs[CT_RECORD_NSPECS + 1] = {
    {.lng = "max-stack", .kind = ARG_INT, .off = F(max_stack, int64_t), .meta = "N",
     .help = "keep at most N frames of each sample, from the leaf (default:\nevery frame the "
     "kernel took, kernel.perf_event_max_stack, 127)", .lo = 1, .hi = CT_MAX_STACK_MAX},
    {.lng = "mode", .kind = ARG_CHOICE, .off = F(modes, unsigned), .meta = "MODE[,MODE]",
     .help = "what to profile (default cpu): cpu (time on CPU), alloc (bytes\n"
     "allocated, leaf = the class), lock (time waiting for a monitor\nor a j.u.c. lock), offcpu "
     "(time off CPU), wall (on + off\nCPU); several: one output file per mode; record: a stored\n"
     "window of each per interval; top: one mode per run; host:\ncpu only (docs/MODES.md)",
     .choices = ct_mode_names, .flags = ARG_LIST},
    {.lng = "offcpu-min", .kind = ARG_DURATION, .off = F(offcpu_min_ms, uint64_t), .meta = "TIME",
     .help = "--mode offcpu, wall: leave out intervals off CPU shorter than\nTIME (default 0: "
     "every one)", .lo = 0, .hi = 3600000},
    {.lng = "alloc-interval", .kind = ARG_INT, .off = F(alloc_interval, int64_t), .meta = "BYTES",
     .help = "--mode alloc: sample about every BYTES allocated, fixed\n(default 524288, doubled "
     "while the JVM allocates so fast that\nsamples would pass 2,000 a second: under 1 % of a "
     "core)", .lo = 1024, .hi = 1 << 30},
    {.lng = NULL}, /* the end */
};
// clang-format on
#undef F

static const args_verb sidecar_verb = {.name = "flame-sidecar",
                                       .specs = sidecar_specs,
                                       .nspecs = sizeof sidecar_specs / sizeof *sidecar_specs,
                                       .groups = {CT_RECORD_GROUP(0)},
                                       .operands_off = ARGS_NO_OPERANDS};

void ct_args_default(ct_args *a, enum ct_verb verb)
{
    *a = (ct_args){.verb = verb,
                   .duration_ms = 30000,
                   .interval_ms = 1000,
                   .frequency = 99,
                   .attach_timeout_ms = 10000,
                   .inject = CT_INJECT_AUTO};
}

void ct_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s record|top|restore|host [OPTIONS]\n"
            "Runs in a container that shares the target's PID namespace (host: the host's);\n"
            "writes the result stream of docs/PROTOCOL.md (version %d) on stdout.\n\nOptions:\n",
            CT_SIDECAR_PATH, CT_VERSION);
    args_help(&sidecar_verb, out);
}

int ct_argv_parse(int argc, char **argv, ct_args *a, flame_err *err)
{
    int verb = -1;
    for (int v = 0; argc >= 2 && v < CT_VERB_COUNT; v++)
        if (!strcmp(argv[1], verb_names[v]))
            verb = v;
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        ct_args_default(a, CT_RECORD);
        a->help = true;
        return 0;
    }
    if (verb < 0)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "expected the command record, top, restore or host (see `%s --help`)",
                          sidecar_verb.name);
    ct_args_default(a, (enum ct_verb)verb);
    if (args_parse(&sidecar_verb, argc - 2, argv + 2, a, NULL, err) < 0)
        return -1;
    if (a->target && !ct_is_container_id(a->target, strlen(a->target)))
        return flame_fail(err, FLAME_EXIT_USAGE, "--target: not a full container id");
    for (const char *p = a->attach_ids; p && *p;) {
        size_t l = strcspn(p, ",");
        const char *colon = memchr(p, ':', l);
        size_t il = colon ? (size_t)(colon - p) : l;
        bool ok = ct_is_container_id(p, il) && colon && colon + 1 < p + l;
        for (const char *d = colon ? colon + 1 : p; ok && d < p + l; d++)
            ok = *d >= '0' && *d <= '9' && d - colon <= 7; /* <= CT_PID_MAX's 7 digits */
        if (!ok)
            return flame_fail(err, FLAME_EXIT_USAGE, "--attach: expected ID:PID,...");
        p += l + (p[l] == ',');
    }
    return 0;
}

bool ct_is_container_id(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Appends one argument to argv/buf; false when full. */
static bool push(const char **argv, size_t cap, int *argc, char *buf, size_t bufcap, size_t *used,
                 const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static bool push(const char **argv, size_t cap, int *argc, char *buf, size_t bufcap, size_t *used,
                 const char *fmt, ...)
{
    if ((size_t)*argc + 2 > cap || *used >= bufcap)
        return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, bufcap - *used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= bufcap - *used)
        return false;
    argv[(*argc)++] = buf + *used;
    argv[*argc] = NULL;
    *used += (size_t)n + 1;
    return true;
}

/* One option of ct_record_specs in the form ct_argv_parse() reads back, when a's value differs
 * from dflt's (so that the sidecar of an older build still runs what asks for nothing new). */
static bool push_spec(const char **argv, size_t cap, int *n, char *buf, size_t bufcap, size_t *used,
                      const arg_spec *s, const ct_args *a, const ct_args *dflt)
{
    const char *v = (const char *)a + s->off, *d = (const char *)dflt + s->off;
    if (s->store || (s->flags & ARG_SET) || ((s->flags & ARG_LIST) && s->kind != ARG_CHOICE))
        return false;          /* not a kind this table may use */
    if (s->flags & ARG_LIST) { /* a set of choices: "--mode=cpu,alloc" */
        unsigned bits = *(const unsigned *)v;
        if (bits == *(const unsigned *)d)
            return true;
        char list[256];
        size_t len = 0;
        for (int i = 0; s->choices[i] && i < 32; i++)
            if (bits & (1u << i)) {
                int w =
                    snprintf(list + len, sizeof list - len, "%s%s", len ? "," : "", s->choices[i]);
                if (w < 0 || (size_t)w >= sizeof list - len)
                    return false;
                len += (size_t)w;
            }
        return push(argv, cap, n, buf, bufcap, used, "--%s=%s", s->lng, list);
    }
    switch (s->kind) {
    case ARG_FLAG:
        return *(const bool *)v == *(const bool *)d ||
               push(argv, cap, n, buf, bufcap, used, "--%s", s->lng);
    case ARG_INT:
        return *(const int64_t *)v == *(const int64_t *)d ||
               push(argv, cap, n, buf, bufcap, used, "--%s=%lld", s->lng,
                    (long long)*(const int64_t *)v);
    case ARG_NUM:
        return *(const double *)v == *(const double *)d ||
               push(argv, cap, n, buf, bufcap, used, "--%s=%.17g", s->lng, *(const double *)v);
    case ARG_DURATION:
        return *(const uint64_t *)v == *(const uint64_t *)d ||
               push(argv, cap, n, buf, bufcap, used, "--%s=%llums", s->lng,
                    (unsigned long long)*(const uint64_t *)v);
    case ARG_CHOICE:
        return *(const int *)v == *(const int *)d ||
               push(argv, cap, n, buf, bufcap, used, "--%s=%s", s->lng,
                    s->choices[*(const int *)v]);
    case ARG_STR: {
        const char *sv = *(const char *const *)v, *sd = *(const char *const *)d;
        return !sv || (sd && !strcmp(sv, sd)) ||
               push(argv, cap, n, buf, bufcap, used, "--%s=%s", s->lng, sv);
    }
    }
    return false;
}

int ct_argv_build(const ct_args *a, const char **argv, size_t cap, char *buf, size_t bufcap)
{
    int n = 0;
    size_t used = 0;
    bool ok = push(argv, cap, &n, buf, bufcap, &used, "%s", CT_SIDECAR_PATH) &&
              push(argv, cap, &n, buf, bufcap, &used, "%s", ct_verb_name(a->verb));
    if (ok && a->target && a->verb != CT_HOST)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--target=%s", a->target);
    if (a->verb == CT_RESTORE) {
        if (ok && a->pid)
            ok = push(argv, cap, &n, buf, bufcap, &used, "--pid=%lld", (long long)a->pid);
        return ok ? n : -1;
    }
    /* Durations go over as whole milliseconds: the plugin checked them against the same
     * bounds, so the sidecar can never refuse what the plugin accepted. */
    if (ok && (a->verb == CT_RECORD || a->verb == CT_HOST))
        ok = push(argv, cap, &n, buf, bufcap, &used, "--duration=%llums",
                  (unsigned long long)a->duration_ms);
    if (ok && a->verb == CT_TOP)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--interval=%llums",
                  (unsigned long long)a->interval_ms);
    ok = ok &&
         push(argv, cap, &n, buf, bufcap, &used, "--frequency=%lld", (long long)a->frequency) &&
         push(argv, cap, &n, buf, bufcap, &used, "--inject=%s", ct_inject_name(a->inject)) &&
         push(argv, cap, &n, buf, bufcap, &used, "--attach-timeout=%llums",
              (unsigned long long)a->attach_timeout_ms);
    if (ok && a->pid)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--pid=%lld", (long long)a->pid);
    if (ok && a->no_inline)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--no-inline");
    if (ok && a->signatures)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--signatures");
    if (ok && a->sampling != CT_SAMPLING_AUTO)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--sampling=%s",
                  ct_sampling_name((enum ct_sampling)a->sampling));
    if (ok && a->kernel)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--kernel");
    if (ok && a->last_window)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--last-window");
    if (ok && a->verb == CT_HOST && a->attach_ids && *a->attach_ids)
        ok = push(argv, cap, &n, buf, bufcap, &used, "--attach=%s", a->attach_ids);
    ct_args dflt;
    memset(&dflt, 0, sizeof dflt); /* gcc 12 cannot see ct_args_default() fill it */
    ct_args_default(&dflt, a->verb);
    for (const arg_spec *s = ct_record_specs; ok && s->lng; s++)
        ok = push_spec(argv, cap, &n, buf, bufcap, &used, s, a, &dflt);
    return ok ? n : -1;
}

/* ---- lines ---- */

bool ct_tag_valid(int tag)
{
    return tag && strchr("VJPWFMSETDHKU", tag) != NULL;
}

int ct_line_split(const char *line, size_t len, enum ct_tag *tag, const char **payload,
                  size_t *plen, flame_err *err)
{
    if (len == 0 || !ct_tag_valid((unsigned char)line[0]))
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: unknown tag '%c'",
                          len && line[0] >= 0x20 && line[0] < 0x7f ? line[0] : '?');
    if (len > 1 && line[1] != ' ')
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: bad line tag");
    *tag = (enum ct_tag)line[0];
    *payload = len > 1 ? line + 2 : "";
    *plen = len > 1 ? len - 2 : 0;
    return 0;
}

int ct_line_format(char *buf, size_t cap, enum ct_tag tag, const char *payload)
{
    size_t n = payload ? strlen(payload) : 0;
    if (cap < n + 4) {
        if (cap)
            buf[0] = 0;
        return -1;
    }
    size_t o = 0;
    buf[o++] = (char)tag;
    if (n) {
        buf[o++] = ' ';
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)payload[i];
            buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        }
    }
    buf[o] = 0;
    return (int)o;
}

/* ---- payloads ---- */

/* A JSON writer over a fixed buffer: every call is a no-op once it has overflowed. `first`
 * says whether the object being written has no member yet (no ',' before the next key). */
typedef struct jw {
    char *b;
    size_t cap, n;
    bool full, first;
} jw;

static void jw_raw(jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jw_raw(jw *w, const char *fmt, ...)
{
    if (w->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->b + w->n, w->cap - w->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= w->cap - w->n)
        w->full = true;
    else
        w->n += (size_t)k;
}

static void jw_key(jw *w, const char *key)
{
    jw_raw(w, "%s\"%s\":", w->first ? "" : ",", key);
    w->first = false;
}

static void jw_open(jw *w, const char *key)
{
    if (key)
        jw_key(w, key);
    jw_raw(w, "{");
    w->first = true;
}

static void jw_close(jw *w)
{
    jw_raw(w, "}");
    w->first = false;
}

/* A JSON string, escaped: quotes, backslashes, and every byte outside printable ASCII as \u00XX
 * (names from the target may hold anything; the plugin must get valid JSON). */
static void jw_str(jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    jw_raw(w, "\"");
    for (; s && *s && !w->full; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            jw_raw(w, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            jw_raw(w, "\\u%04x", c);
        else
            jw_raw(w, "%c", c);
    }
    jw_raw(w, "\"");
}

static void jw_u64(jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    jw_raw(w, "%llu", (unsigned long long)v);
}

static void jw_fields(jw *w, const void *obj, const ct_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        jw_u64(w, f[i].key, *CT_FIELD_U64(obj, &f[i]));
}

#define PF(field)                                                                                  \
    {                                                                                              \
#field, offsetof(ct_progress, field)                                                       \
    }
const ct_field ct_progress_fields[CT_PROGRESS_NFIELDS] = {PF(elapsed_ms), PF(duration_ms),
                                                          PF(samples), PF(jvms)};
#undef PF
#define WF(field)                                                                                  \
    {                                                                                              \
#field, offsetof(ct_window, field)                                                         \
    }
const ct_field ct_window_fields[CT_WINDOW_NFIELDS] = {
    WF(window),         WF(start_ms),   WF(ms),         WF(samples),
    WF(folded),         WF(lost),       WF(skipped),    WF(jit_leaf),
    WF(jit_leaf_named), WF(process_ms), WF(end_mono_ms)};
#undef WF
#define SF(field)                                                                                  \
    {                                                                                              \
#field, offsetof(ct_summary, field)                                                        \
    }
const ct_field ct_summary_fields[CT_SUMMARY_NFIELDS] = {
    SF(samples),        SF(folded_samples), SF(lost),     SF(jit_leaf_samples),
    SF(jit_leaf_named), SF(map_lines),      SF(map_bytes)};
#undef SF

static jw jw_begin(char *buf, size_t cap)
{
    jw w = {buf, cap, 0, cap == 0, true};
    jw_open(&w, NULL);
    return w;
}

static int jw_end(jw *w)
{
    jw_close(w);
    if (w->full) {
        if (w->cap)
            w->b[0] = 0;
        return -1;
    }
    return (int)w->n;
}

int ct_format_jvm(char *buf, size_t cap, const ct_jvm *j)
{
    jw w = jw_begin(buf, cap);
    jw_u64(&w, "pid", j->pid);
    jw_u64(&w, "nspid", j->nspid);
    jw_u64(&w, "uid", j->uid);
    jw_u64(&w, "gid", j->gid);
    jw_str(&w, "cmdline", j->cmdline);
    jw_str(&w, "java_version", j->java_version);
    jw_key(&w, "preserve_frame_pointer");
    jw_raw(&w, "%s", j->preserve_fp ? "true" : "false");
    jw_str(&w, "attach", ct_attach_name(j->attach));
    jw_str(&w, "inject", ct_injected_name(j->inject));
    if (j->reason[0])
        jw_str(&w, "reason", j->reason);
    else {
        jw_key(&w, "reason");
        jw_raw(&w, "null");
    }
    jw_u64(&w, "attach_ms", j->attach_ms);
    if (j->container[0])
        jw_str(&w, "container", j->container);
    if (j->refused) {
        char list[64];
        ct_modes_name(j->refused, list, sizeof list);
        jw_str(&w, "refused", list);
        jw_str(&w, "refused_why", j->refused_why);
    }
    return jw_end(&w);
}

int ct_format_progress(char *buf, size_t cap, const ct_progress *p)
{
    jw w = jw_begin(buf, cap);
    jw_fields(&w, p, ct_progress_fields, CT_PROGRESS_NFIELDS);
    return jw_end(&w);
}

int ct_format_summary(char *buf, size_t cap, const ct_summary *s)
{
    jw w = jw_begin(buf, cap);
    jw_fields(&w, s, ct_summary_fields, CT_SUMMARY_NFIELDS);
    double share = s->named_share >= 0 && s->named_share <= 1 ? s->named_share : 0;
    jw_key(&w, "named_share");
    jw_raw(&w, "%.4f", share);
    jw_open(&w, "timings_ms");
    for (int p = 0; p < CT_PH_COUNT; p++)
        jw_u64(&w, phase_names[p], s->timings_ms[p]);
    jw_close(&w);
    jw_u64(&w, "jvms", s->jvms);
    jw_open(&w, "caps");
    for (int p = 0; p < CT_CAPS_COUNT; p++)
        jw_str(&w, cap_phase_names[p], s->caps[p]);
    jw_close(&w);
    jw_str(&w, "sampling", s->sampling);
    jw_str(&w, "filter", s->filter);
    if (s->walks) {
        jw_open(&w, "walk");
        jw_u64(&w, "walks", s->walks);
        jw_u64(&w, "tail", s->walk_tail);
        jw_open(&w, "status");
        for (int k = 0; k < CT_WALK_NSTATUS; k++)
            if (s->walk_status[k])
                jw_u64(&w, walk_status_names[k], s->walk_status[k]);
        jw_close(&w);
        jw_close(&w);
    }
    return jw_end(&w);
}

#define HF(f)                                                                                      \
    {                                                                                              \
#f, offsetof(ct_host, f)                                                                   \
    }
const ct_field ct_host_fields[CT_HOST_NFIELDS] = {HF(cpus), HF(record_ms), HF(frequency), HF(tasks),
                                                  HF(unattributed)};
#undef HF

int ct_format_host(char *buf, size_t cap, const ct_host *h)
{
    jw w = jw_begin(buf, cap);
    jw_fields(&w, h, ct_host_fields, CT_HOST_NFIELDS);
    jw_str(&w, "cgroup", h->cgroup);
    return jw_end(&w);
}

int ct_format_window(char *buf, size_t cap, const ct_window *t)
{
    jw w = jw_begin(buf, cap);
    jw_fields(&w, t, ct_window_fields, CT_WINDOW_NFIELDS);
    return jw_end(&w);
}

int ct_format_error(char *buf, size_t cap, enum ct_error code, const char *text)
{
    int n = snprintf(buf, cap, "%s %s", ct_error_name(code), text ? text : "");
    if (n < 0 || (size_t)n >= cap) {
        if (cap) /* a long text is cut, never the code */
            buf[cap - 1] = 0;
        return cap ? (int)cap - 1 : -1;
    }
    return n;
}

void ct_error_split(const char *payload, size_t n, enum ct_error *code, const char **text,
                    size_t *tlen)
{
    const char *sp = memchr(payload, ' ', n);
    size_t cl = sp ? (size_t)(sp - payload) : n;
    *code = ct_error_parse(payload, cl);
    *text = sp ? sp + 1 : payload + n;
    *tlen = sp ? n - cl - 1 : 0;
}
