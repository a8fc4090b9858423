/* Parser for the sidecar's result stream (plugin/run/proto.h). */
#include "plugin/run/proto.h"

#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

void proto_init(proto *p)
{
    memset(p, 0, sizeof *p);
}

void proto_clear(proto *p)
{
    free(p->jvms);
    free(p->tasks);
    free(p->tl);
    for (size_t i = 0; i < p->nwarn; i++)
        free(p->warnings[i]);
    free(p->err_text);
    if (p->prof)
        profile_free(p->prof);
    for (int m = 0; m < CT_MODE_COUNT; m++) {
        if (p->mprof[m])
            profile_free(p->mprof[m]);
        if (p->mprof0[m])
            profile_free(p->mprof0[m]);
    }
    memset(p, 0, sizeof *p);
}

void proto_sanitize(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (; *s && o + 1 < n; s++) {
        unsigned char c = (unsigned char)*s;
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[o] = 0;
}

static json_t *parse_obj(const char *tag, const char *s, size_t n, flame_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(s, n, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: %s line is not a JSON object",
                   tag);
        return NULL;
    }
    return j;
}

/* A count from the sidecar: integers as they are, reals truncated; anything out of range
 * (negative, NaN, 1e300 would overflow the cast) reads as 0 or the bound. */
static uint64_t jint(json_t *o, const char *k)
{
    const uint64_t max = 1ULL << 53;
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) {
        long long n = json_integer_value(v);
        return n < 0 ? 0 : (uint64_t)n > max ? max : (uint64_t)n;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 0)) /* negative or NaN */
            return 0;
        return d >= (double)max ? max : (uint64_t)d;
    }
    return 0;
}

static uint32_t jint32(json_t *o, const char *k)
{
    uint64_t v = jint(o, k);
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void jfields(json_t *o, void *obj, const ct_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        *CT_FIELD_U64(obj, &f[i]) = jint(o, f[i].key);
}

static void jstr(json_t *o, const char *k, char *out, size_t cap)
{
    const char *v = json_string_value(json_object_get(o, k));
    snprintf(out, cap, "%s", v ? v : "");
}

/* The index of a name in names[0..n), or dflt. */
static int jname(json_t *o, const char *k, const char *(*name)(int), int n, int dflt)
{
    const char *v = json_string_value(json_object_get(o, k));
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, name(i)))
            return i;
    return dflt;
}
static const char *attach_name(int i)
{
    return ct_attach_name((enum ct_attach)i);
}
static const char *injected_name(int i)
{
    return ct_injected_name((enum ct_injected)i);
}

int proto_read_jvm(const char *s, size_t n, ct_jvm *out, flame_err *err)
{
    json_t *j = parse_obj("J", s, n, err);
    if (!j)
        return -1;
    memset(out, 0, sizeof *out);
    out->pid = jint32(j, "pid");
    out->nspid = jint32(j, "nspid");
    out->uid = jint32(j, "uid");
    out->gid = jint32(j, "gid");
    jstr(j, "cmdline", out->cmdline, sizeof out->cmdline);
    jstr(j, "java_version", out->java_version, sizeof out->java_version);
    out->preserve_fp = json_is_true(json_object_get(j, "preserve_frame_pointer"));
    out->attach = (enum ct_attach)jname(j, "attach", attach_name, CT_ATTACH_COUNT, 0);
    out->inject = (enum ct_injected)jname(j, "inject", injected_name, CT_INJECTED_COUNT, 0);
    jstr(j, "reason", out->reason, sizeof out->reason);
    out->attach_ms = jint(j, "attach_ms");
    jstr(j, "container", out->container, sizeof out->container);
    const char *rf = json_string_value(json_object_get(j, "refused"));
    if (rf) {
        out->refused = ct_modes_parse_list(rf, strlen(rf)) & ~CT_MODE_BIT(CT_MODE_CPU);
        jstr(j, "refused_why", out->refused_why, sizeof out->refused_why);
    }
    json_decref(j);
    return 0;
}

static bool take_u32(const char **p, const char *end, uint32_t *v, char stop)
{
    uint64_t x = 0;
    const char *s = *p;
    while (*p < end && **p >= '0' && **p <= '9' && x <= 0xffffffffu)
        x = x * 10 + (uint64_t)(*(*p)++ - '0');
    if (*p == s || x > 0xffffffffu || (stop && (*p >= end || **p != stop)))
        return false;
    if (stop)
        (*p)++;
    *v = (uint32_t)x;
    return true;
}

int proto_read_task(const char *s, size_t n, proto_task *t)
{
    memset(t, 0, sizeof *t);
    const char *p = s, *end = s + n;
    if (!take_u32(&p, end, &t->pid, ' ') || !take_u32(&p, end, &t->tid, ' ') ||
        !take_u32(&p, end, &t->vpid, ' ') || !take_u32(&p, end, &t->vtid, ' '))
        return -1;
    char *dst[3] = {t->key, t->pcomm, t->tcomm};
    size_t cap[3] = {sizeof t->key, sizeof t->pcomm, sizeof t->tcomm};
    for (int k = 0; k < 3; k++) {
        const char *tab = k < 2 ? memchr(p, ';', (size_t)(end - p)) : end;
        if (!tab || (size_t)(tab - p) >= cap[k])
            return -1;
        memcpy(dst[k], p, (size_t)(tab - p));
        p = tab + (k < 2);
    }
    return t->key[0] ? 0 : -1;
}

int proto_read_host(const char *s, size_t n, ct_host *out, flame_err *err)
{
    json_t *j = parse_obj("H", s, n, err);
    if (!j)
        return -1;
    memset(out, 0, sizeof *out);
    jfields(j, out, ct_host_fields, CT_HOST_NFIELDS);
    jstr(j, "cgroup", out->cgroup, sizeof out->cgroup);
    json_decref(j);
    return 0;
}

int proto_read_progress(const char *s, size_t n, ct_progress *out, flame_err *err)
{
    json_t *j = parse_obj("P", s, n, err);
    if (!j)
        return -1;
    jfields(j, out, ct_progress_fields, CT_PROGRESS_NFIELDS);
    json_decref(j);
    return 0;
}

int proto_read_summary(const char *s, size_t n, ct_summary *out, flame_err *err)
{
    json_t *j = parse_obj("S", s, n, err);
    if (!j)
        return -1;
    memset(out, 0, sizeof *out);
    jfields(j, out, ct_summary_fields, CT_SUMMARY_NFIELDS);
    double share = json_number_value(json_object_get(j, "named_share"));
    out->named_share = share >= 0 && share <= 1 ? share : 0;
    json_t *tm = json_object_get(j, "timings_ms");
    for (int p = 0; p < CT_PH_COUNT; p++)
        out->timings_ms[p] = jint(tm, ct_phase_name((enum ct_phase)p));
    out->jvms = jint32(j, "jvms");
    json_t *caps = json_object_get(j, "caps");
    for (int p = 0; p < CT_CAPS_COUNT; p++)
        jstr(caps, ct_cap_phase_name((enum ct_cap_phase)p), out->caps[p], sizeof out->caps[p]);
    jstr(j, "sampling", out->sampling, sizeof out->sampling);
    jstr(j, "filter", out->filter, sizeof out->filter);
    json_t *walk = json_object_get(j, "walk");
    out->walks = jint(walk, "walks");
    out->walk_tail = jint(walk, "tail");
    json_t *ws = json_object_get(walk, "status");
    for (int k = 0; k < CT_WALK_NSTATUS; k++)
        out->walk_status[k] = jint(ws, ct_walk_status_name(k));
    json_decref(j);
    return 0;
}

int proto_read_window(const char *s, size_t n, ct_window *out, flame_err *err)
{
    json_t *j = parse_obj("T", s, n, err);
    if (!j)
        return -1;
    jfields(j, out, ct_window_fields, CT_WINDOW_NFIELDS);
    json_decref(j);
    return 0;
}

const profile *proto_profile(const proto *p, enum ct_mode m)
{
    return m == CT_MODE_CPU ? p->prof : (unsigned)m < CT_MODE_COUNT ? p->mprof[m] : NULL;
}

/* "<mode> <count0> frame;frame;... <value>": both columns go into the mode's two profiles at
 * once, so that their stacks are in the same order. */
static int mode_line(proto *p, const char *pl, size_t pn, flame_err *err)
{
    p->m_lines++;
    const char *end = pl + pn, *sp = memchr(pl, ' ', pn);
    int m = sp ? ct_mode_parse(pl, (size_t)(sp - pl)) : -1;
    if (m <= CT_MODE_CPU)
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: M line %llu: no mode",
                          p->m_lines);
    const char *q = sp + 1;
    uint64_t c0 = 0;
    int digits = 0;
    for (; q < end && *q >= '0' && *q <= '9' && digits < 19; q++, digits++)
        c0 = c0 * 10 + (uint64_t)(*q - '0');
    if (!digits || q >= end || *q != ' ')
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: M line %llu: no count",
                          p->m_lines);
    q++;
    if ((!p->mprof[m] && !(p->mprof[m] = profile_new())) ||
        (!p->mprof0[m] && !(p->mprof0[m] = profile_new())))
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t before = profile_stacks(p->mprof[m]);
    if (profile_add_line(p->mprof[m], q, (size_t)(end - q), err) < 0)
        return flame_wrap(err, "sidecar protocol error: M line %llu", p->m_lines);
    /* the stack alone, from the line just accepted: up to its last space */
    const char *last = q;
    for (const char *r = q; r < end; r++)
        if (*r == ' ')
            last = r;
    if (profile_add(p->mprof0[m], q, (size_t)(last - q), (double)c0, PROFILE_ONE_COLUMN) < 0 ||
        (profile_stacks(p->mprof[m]) != before &&
         profile_stacks(p->mprof0[m]) != profile_stacks(p->mprof[m])))
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: M line %llu: bad stack",
                          p->m_lines);
    return 0;
}

int proto_line(proto *p, const char *line, size_t len, flame_err *err)
{
    if (len == 0)
        return 0; /* tolerate blank lines */
    if (memchr(line, '\0', len))
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: NUL byte in a line");
    enum ct_tag tag;
    const char *pl;
    size_t pn;
    if (ct_line_split(line, len, &tag, &pl, &pn, err) < 0)
        return -1;
    if (tag != CT_TAG_VERSION && p->version == 0)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "sidecar protocol error: no version line (is the sidecar image from "
                          "another docker-flame version?)");
    if (p->done)
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: data after D");
    switch (tag) {
    case CT_TAG_VERSION: {
        char want[16];
        snprintf(want, sizeof want, "%d", CT_VERSION);
        if (pn != strlen(want) || memcmp(pl, want, pn))
            return flame_fail(err, FLAME_EXIT_ERROR,
                              "the sidecar speaks protocol version %.*s, this plugin version %d: "
                              "reinstall docker-flame so both match",
                              (int)(pn < 16 ? pn : 16), pl, CT_VERSION);
        p->version = CT_VERSION;
        return 0;
    }
    case CT_TAG_JVM: {
        if (!p->jvms && !(p->jvms = calloc(PROTO_MAX_JVMS + 1, sizeof *p->jvms)))
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        /* read into the spare slot; a later J line of a pid already seen updates it (the
         * sidecar says again what changed after recording: a mode refused) */
        ct_jvm *nj = &p->jvms[PROTO_MAX_JVMS];
        if (proto_read_jvm(pl, pn, nj, err) < 0)
            return -1;
        for (size_t i = 0; i < p->njvms; i++)
            if (p->jvms[i].pid == nj->pid) {
                p->jvms[i] = *nj;
                return 0;
            }
        if (p->njvms < PROTO_MAX_JVMS)
            p->jvms[p->njvms++] = *nj;
        return 0;
    }
    case CT_TAG_PROGRESS:
        if (proto_read_progress(pl, pn, &p->prog, err) < 0)
            return -1;
        p->progress = true;
        return 0;
    case CT_TAG_WARNING:
        if (p->nwarn >= PROTO_MAX_WARNINGS) {
            p->dropped_warn++;
            return 0;
        }
        p->warnings[p->nwarn] = strndup(pl, pn < 4096 ? pn : 4096);
        if (!p->warnings[p->nwarn])
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        p->nwarn++;
        return 0;
    case CT_TAG_FOLDED:
        if (!p->prof && !(p->prof = profile_new()))
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        p->f_lines++;
        if (profile_add_line(p->prof, pl, pn, err) < 0)
            return flame_wrap(err, "sidecar protocol error: F line %llu", p->f_lines);
        return 0;
    case CT_TAG_MODE:
        return mode_line(p, pl, pn, err);
    case CT_TAG_SUMMARY:
        if (proto_read_summary(pl, pn, &p->summary, err) < 0)
            return -1;
        p->have_summary = true;
        p->prog.samples = p->summary.samples;
        return 0;
    case CT_TAG_ERROR: {
        const char *text;
        size_t tl;
        ct_error_split(pl, pn, &p->err, &text, &tl);
        p->failed = true;
        free(p->err_text);
        p->err_text = strndup(text, tl < 2048 ? tl : 2048);
        return 0;
    }
    case CT_TAG_DONE:
        p->done = true;
        return 0;
    case CT_TAG_WINDOW: /* top reads these itself (plugin/top_model.c) */
        return 0;
    case CT_TAG_TASK: {
        proto_task t;
        if (proto_read_task(pl, pn, &t) < 0)
            return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: bad K line");
        if (p->ntasks >= PROTO_MAX_TASKS)
            return 0;
        if (p->ntasks == p->cap_tasks) {
            size_t nc = p->cap_tasks ? p->cap_tasks * 2 : 256;
            proto_task *g = realloc(p->tasks, nc * sizeof *g);
            if (!g)
                return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            p->tasks = g;
            p->cap_tasks = nc;
        }
        p->tasks[p->ntasks++] = t;
        return 0;
    }
    case CT_TAG_SAMPLES:
        for (const char *q = pl, *end = pl + pn; q < end && p->ntl < PROTO_MAX_TL;) {
            proto_tl x;
            if (!take_u32(&q, end, &x.cpu, ',') || !take_u32(&q, end, &x.ms, ',') ||
                !take_u32(&q, end, &x.tid, 0) || (q < end && *q++ != ' '))
                return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: bad U line");
            if (p->ntl == p->cap_tl) {
                size_t nc = p->cap_tl ? p->cap_tl * 2 : 4096;
                proto_tl *g = realloc(p->tl, nc * sizeof *g);
                if (!g)
                    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                p->tl = g;
                p->cap_tl = nc;
            }
            p->tl[p->ntl++] = x;
        }
        return 0;
    case CT_TAG_HOST:
        if (proto_read_host(pl, pn, &p->host, err) < 0)
            return -1;
        p->have_host = true;
        return 0;
    }
    return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: unknown tag");
}
