/* serve's API handlers (plugin/web/web_api.h): each reads merged ranges from the cache, computes
 * with flame/ (call trees, search, methods, diff) and writes compact JSON with jsonw (every
 * string escaped there: names from the target are bytes of any kind). */
#include "plugin/web/web_api.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/contract.h"
#include "flame/calltree.h"
#include "flame/diff.h"
#include "flame/methods.h"
#include "plugin/out/jsonw.h"
#include "plugin/out/output.h"
#include "plugin/web/web_timeline.h"

/* ---- answers ------------------------------------------------------------------------------ */

typedef struct jbuf {
    char *buf;
    size_t len;
    FILE *f;
    jsonw w;
} jbuf;

static bool jbuf_open(jbuf *j)
{
    memset(j, 0, sizeof *j);
    j->f = open_memstream(&j->buf, &j->len);
    if (!j->f)
        return false;
    jsonw_init_compact(&j->w, j->f);
    jsonw_object(&j->w, NULL);
    return true;
}

/* Close the document into r (200), or a 500 when the stream failed. */
static void jbuf_done(jbuf *j, web_resp *r)
{
    jsonw_end(&j->w);
    bool failed = ferror(j->f);
    if (fclose(j->f) != 0 || failed) {
        free(j->buf);
        web_api_error(r, 500, "out of memory");
        return;
    }
    *r = (web_resp){.status = 200, .type = "application/json", .body = j->buf, .len = j->len};
}

static void jbuf_abort(jbuf *j)
{
    if (j->f)
        fclose(j->f);
    free(j->buf);
}

void web_api_error(web_resp *r, int status, const char *msg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *r = (web_resp){.status = status, .type = "application/json"};
    if (!f)
        return;
    jsonw w;
    jsonw_init_compact(&w, f);
    jsonw_object(&w, NULL);
    jsonw_str(&w, "error", msg);
    jsonw_end(&w);
    if (fclose(f) == 0) {
        r->body = buf;
        r->len = len;
    } else {
        free(buf);
    }
}

static void fail_resp(web_resp *r, const flame_err *err)
{
    int status = err->code == FLAME_EXIT_USAGE   ? 400
                 : err->code == FLAME_EXIT_STORE ? 503
                 : err->code == FLAME_EXIT_EMPTY ? 404
                                                 : 500;
    web_api_error(r, status, err->msg[0] ? err->msg : "failed");
}

/* ---- search ------------------------------------------------------------------------------- */

typedef struct matcher {
    const char *text;
    size_t len;
    bool regex, icase, compiled;
    regex_t re;
} matcher;

#define WEB_MAX_REGEX 256

/* q=TEXT (substring) or q=/RE/ (POSIX extended: glibc's matcher, without back-references, which
 * are the one feature that can take exponential time). */
static int matcher_init(matcher *m, const web_query *q, flame_err *err)
{
    memset(m, 0, sizeof *m);
    m->text = q->search;
    m->len = q->search ? strlen(q->search) : 0;
    m->icase = q->icase;
    if (!q->search || !q->regex)
        return 0;
    m->regex = true;
    size_t n = m->len - 2;
    if (n > WEB_MAX_REGEX)
        return flame_fail(err, FLAME_EXIT_USAGE, "q: a regular expression of at most 256 bytes");
    _cleanup_free_ char *pat = strndup(q->search + 1, n);
    if (!pat)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; i + 1 < n; i++)
        if (pat[i] == '\\' && pat[i + 1] >= '1' && pat[i + 1] <= '9')
            return flame_fail(err, FLAME_EXIT_USAGE, "q: back-references are not supported");
    int rc = regcomp(&m->re, pat, REG_EXTENDED | REG_NOSUB | (q->icase ? REG_ICASE : 0));
    if (rc != 0) {
        char why[128];
        regerror(rc, &m->re, why, sizeof why);
        return flame_fail(err, FLAME_EXIT_USAGE, "q: bad regular expression: %s", why);
    }
    m->compiled = true;
    return 0;
}

static void matcher_free(matcher *m)
{
    if (m->compiled)
        regfree(&m->re);
    m->compiled = false;
}

static bool matches(void *ctx, const char *s, size_t n)
{
    matcher *m = ctx;
    if (m->regex) {
        regmatch_t pm = {.rm_so = 0, .rm_eo = (regoff_t)n};
        return regexec(&m->re, s, 1, &pm, REG_STARTEND) == 0;
    }
    if (!m->icase)
        return memmem(s, n, m->text, m->len) != NULL;
    for (size_t i = 0; i + m->len <= n; i++)
        if (strncasecmp(s + i, m->text, m->len) == 0)
            return true;
    return false;
}

/* ---- call trees --------------------------------------------------------------------------- */

/* A tree as JSON: names once (names[0] is "all") and the length of their annotations, then per
 * node, flat: depth, x, total, self,
 * name (-1: "other"), colour, and a differential's total_before, self_before; "others": node
 * index and how many nodes it stands for; "hits": the names a search matches. */
static int write_tree(jsonw *w, const char *key, const calltree *t, const char *palette, matcher *m)
{
    uint32_t maxid = 0;
    for (size_t i = 1; i < t->n; i++)
        if (t->node[i].name != CALLTREE_OTHER && t->node[i].name > maxid)
            maxid = t->node[i].name;
    _cleanup_free_ uint32_t *idx = calloc((size_t)maxid + 1, sizeof *idx); /* id -> index + 1 */
    _cleanup_free_ uint32_t *order = malloc((t->n ? t->n : 1) * sizeof *order);
    if (!idx || !order)
        return -1;
    uint32_t nnames = 1; /* index 0: the root's "all" */
    order[0] = 0;
    for (size_t i = 1; i < t->n; i++) {
        uint32_t id = t->node[i].name;
        if (id != CALLTREE_OTHER && !idx[id]) {
            order[nnames] = (uint32_t)i;
            idx[id] = ++nnames; /* its index + 1 */
        }
    }
    jsonw_object(w, key);
    jsonw_num(w, "total", t->node[0].total);
    if (t->diff)
        jsonw_num(w, "total_before", t->node[0].total_before);
    jsonw_bool(w, "diff", t->diff);
    jsonw_uint(w, "full", t->full);
    jsonw_uint(w, "cut", t->cut);
    jsonw_num(w, "cut_total", t->cut_total);
    jsonw_uint(w, "path", t->path);
    jsonw_array(w, "names");
    size_t len, shown;
    for (uint32_t k = 0; k < nnames; k++) {
        const char *s = calltree_name(t, &t->node[order[k]], &len, &shown);
        jsonw_strn(w, NULL, s, len);
    }
    jsonw_end(w);
    /* the bytes of each name's annotation (_[j], _[int]: ASCII at its end), which labels leave
     * out (flame/frame.h) */
    jsonw_array(w, "strip");
    for (uint32_t k = 0; k < nnames; k++) {
        calltree_name(t, &t->node[order[k]], &len, &shown);
        jsonw_uint(w, NULL, len - shown);
    }
    jsonw_end(w);
    jsonw_array(w, "nodes");
    for (size_t i = 0; i < t->n; i++) {
        const calltree_node *nd = &t->node[i];
        jsonw_uint(w, NULL, nd->depth);
        jsonw_num(w, NULL, nd->x);
        jsonw_num(w, NULL, nd->total);
        jsonw_num(w, NULL, nd->self);
        jsonw_int(w, NULL,
                  i == 0                       ? 0
                  : nd->name == CALLTREE_OTHER ? -1
                                               : (int64_t)idx[nd->name] - 1);
        jsonw_int(w, NULL, calltree_colour(t, nd, palette));
        if (t->diff) {
            jsonw_num(w, NULL, nd->total_before);
            jsonw_num(w, NULL, nd->self_before);
        }
    }
    jsonw_end(w);
    jsonw_array(w, "others");
    for (size_t i = 1; i < t->n; i++)
        if (t->node[i].name == CALLTREE_OTHER) {
            jsonw_uint(w, NULL, i);
            jsonw_uint(w, NULL, t->node[i].cut);
        }
    jsonw_end(w);
    if (m && m->text) {
        jsonw_array(w, "hits");
        for (uint32_t k = 1; k < nnames; k++) {
            const char *s = calltree_name(t, &t->node[order[k]], &len, &shown);
            if (matches(m, s, shown))
                jsonw_uint(w, NULL, k);
        }
        jsonw_end(w);
    }
    jsonw_end(w);
    return 0;
}

/* The profile type of an answer and the unit of its values (samples, ns, bytes: docs/MODES.md),
 * for the page's titles, tooltips and table. */
static const ct_mode_info *type_info(const char *type)
{
    int m = type ? ct_mode_parse(type, strlen(type)) : CT_MODE_CPU;
    return ct_mode(m < 0 ? CT_MODE_CPU : (enum ct_mode)m);
}

static void write_type(jsonw *w, const char *type)
{
    const ct_mode_info *mi = type_info(type);
    jsonw_str(w, "type", mi->name);
    jsonw_str(w, "what", mi->what);
    jsonw_str(w, "unit", mi->unit);
}

static void write_info(jsonw *w, const char *key, const web_side *s, const web_merged *m)
{
    jsonw_object(w, key);
    jsonw_int(w, "since", s->since_ms);
    jsonw_int(w, "until", s->until_ms);
    jsonw_uint(w, "windows", m->info.windows);
    jsonw_uint(w, "samples", m->info.samples);
    jsonw_uint(w, "missing", m->info.missing);
    if (m->info.windows) {
        jsonw_int(w, "first", m->info.first_ms);
        jsonw_int(w, "last", m->info.last_ms);
    }
    jsonw_int(w, "hz_min", m->info.hz_min);
    jsonw_int(w, "hz_max", m->info.hz_max);
    jsonw_num(w, "total", profile_total(m->p));
    write_type(w, s->type);
    jsonw_end(w);
}

/* ---- endpoints ---------------------------------------------------------------------------- */

static double now_ms_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void api_flamegraph(web_api *api, const web_query *q, int64_t now_ms, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    const web_merged *m = NULL;
    matcher mt;
    const calltree *t = NULL;
    jbuf j = {0};
    double t0 = now_ms_mono();
    if (matcher_init(&mt, q, &err) < 0 || web_cache_merged(api->cache, &q->a, now_ms, &m, &err) < 0)
        goto fail;
    double t1 = now_ms_mono();
    double matched = 0;
    if (mt.text && calltree_search(m->p, matches, &mt, &matched, NULL, &err) < 0)
        goto fail;
    double t2 = now_ms_mono();
    calltree_opts o = {.max_nodes = q->nodes, .path = q->root};
    if (web_cache_tree(api->cache, m, &o, &t, &err) < 0 || !jbuf_open(&j))
        goto fail;
    double t3 = now_ms_mono();
    write_info(&j.w, "range", &q->a, m);
    if (mt.text) {
        jsonw_object(&j.w, "search");
        jsonw_num(&j.w, "matched", matched);
        jsonw_num(&j.w, "total", profile_total(m->p));
        jsonw_end(&j.w);
    }
    if (write_tree(&j.w, "tree", t, q->palette, &mt) < 0) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        goto fail;
    }
    jbuf_done(&j, r);
    /* the merge (0 when cached), the search, the call tree (0 when kept), the JSON */
    snprintf(r->timing, sizeof r->timing,
             "merge;dur=%.1f, search;dur=%.1f, tree;dur=%.1f, json;dur=%.1f", t1 - t0, t2 - t1,
             t3 - t2, now_ms_mono() - t3);
    goto out;
fail:
    jbuf_abort(&j);
    fail_resp(r, &err);
out:
    web_cache_tree_release(api->cache, t);
    matcher_free(&mt);
    web_cache_release(api->cache, m);
}

static void api_table(web_api *api, const web_query *q, int64_t now_ms, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    const web_merged *m = NULL;
    methods *tab = NULL;
    matcher mt;
    jbuf j = {0};
    if (matcher_init(&mt, q, &err) < 0 || web_cache_merged(api->cache, &q->a, now_ms, &m, &err) < 0)
        goto fail;
    methods_opts mo = {.measure = METHODS_SELF | METHODS_TOTAL};
    if (!(tab = methods_new(&mo))) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        goto fail;
    }
    if (methods_add(tab, m->p, &err) < 0 || !jbuf_open(&j))
        goto fail;
    methods_sort(tab, q->sort == WEB_SORT_TOTAL);
    size_t n;
    const methods_row *rows = methods_rows(tab, &n);
    write_info(&j.w, "range", &q->a, m);
    jsonw_uint(&j.w, "functions", n);
    size_t shown = 0, hits = 0;
    jsonw_array(&j.w, "rows");
    for (size_t i = 0; i < n; i++) {
        if (mt.text && !matches(&mt, rows[i].name, strlen(rows[i].name)))
            continue;
        hits++;
        if (shown >= q->limit)
            continue;
        shown++;
        jsonw_array(&j.w, NULL);
        jsonw_str(&j.w, NULL, rows[i].name);
        jsonw_num(&j.w, NULL, rows[i].self);
        jsonw_num(&j.w, NULL, rows[i].total);
        jsonw_end(&j.w);
    }
    jsonw_end(&j.w);
    jsonw_uint(&j.w, "matching", hits);
    jbuf_done(&j, r);
    goto out;
fail:
    jbuf_abort(&j);
    fail_resp(r, &err);
out:
    methods_free(tab);
    matcher_free(&mt);
    web_cache_release(api->cache, m);
}

static void api_sandwich(web_api *api, const web_query *q, int64_t now_ms, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    const web_merged *m = NULL;
    profile *up = NULL, *down = NULL;
    calltree tu = {0}, td = {0};
    jbuf j = {0};
    double self = 0;
    if (!q->fn) {
        web_api_error(r, 400, "fn: which function (a name as the graph shows it)");
        return;
    }
    if (web_cache_merged(api->cache, &q->a, now_ms, &m, &err) < 0 ||
        calltree_sandwich(m->p, q->fn, strlen(q->fn), &up, &down, &self, &err) < 0)
        goto fail;
    calltree_opts o = {.max_nodes = q->nodes};
    if (calltree_build(up, &o, &tu, &err) < 0 || calltree_build(down, &o, &td, &err) < 0 ||
        !jbuf_open(&j))
        goto fail;
    write_info(&j.w, "range", &q->a, m);
    jsonw_str(&j.w, "fn", q->fn);
    jsonw_num(&j.w, "total", profile_total(up));
    jsonw_num(&j.w, "self", self);
    if (write_tree(&j.w, "callers", &tu, q->palette, NULL) < 0 ||
        write_tree(&j.w, "callees", &td, q->palette, NULL) < 0) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        goto fail;
    }
    jbuf_done(&j, r);
    goto out;
fail:
    jbuf_abort(&j);
    fail_resp(r, &err);
out:
    calltree_free(&tu);
    calltree_free(&td);
    profile_free(up);
    profile_free(down);
    web_cache_release(api->cache, m);
}

static void api_diff(web_api *api, const web_query *q, int64_t now_ms, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    const web_merged *ma = NULL, *mb = NULL;
    profile *pa = NULL, *pb = NULL;
    diff *d = NULL;
    calltree t = {0};
    jbuf j = {0};
    if (!q->has_b) {
        web_api_error(r, 400, "b.since, b.until, b.c: the other side of the comparison");
        return;
    }
    if (web_cache_merged(api->cache, &q->a, now_ms, &ma, &err) < 0 ||
        web_cache_merged(api->cache, &q->b, now_ms, &mb, &err) < 0 || !jbuf_open(&j))
        goto fail;
    write_info(&j.w, "a", &q->a, ma);
    write_info(&j.w, "b", &q->b, mb);
    if (profile_stacks(ma->p) == 0 || profile_stacks(mb->p) == 0) {
        /* nothing to compare with: said, not drawn as everything new or gone */
        jsonw_str(&j.w, "empty", profile_stacks(ma->p) == 0 ? "a" : "b");
        jbuf_done(&j, r);
        goto out;
    }
    if (calltree_copy(ma->p, &pa, &err) < 0 || calltree_copy(mb->p, &pb, &err) < 0)
        goto fail;
    /* as `docker flame diff A B`: relative is its default, absolute its --no-normalize */
    diff_opts dopt = {.normalize = q->norm == WEB_NORM_RELATIVE ? DIFF_NORM_AUTO : DIFF_NORM_OFF};
    int rc = diff_new(pa, pb, &dopt, &d, &err);
    pa = pb = NULL; /* consumed */
    if (rc < 0)
        goto fail;
    const profile *view = diff_view(d, false);
    calltree_opts o = {.max_nodes = q->nodes, .path = q->root};
    if (!view) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        goto fail;
    }
    if (calltree_build(view, &o, &t, &err) < 0)
        goto fail;
    jsonw_bool(&j.w, "normalized", diff_normalized(d));
    if (write_tree(&j.w, "tree", &t, q->palette, NULL) < 0) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        goto fail;
    }
    jbuf_done(&j, r);
    goto out;
fail:
    jbuf_abort(&j);
    fail_resp(r, &err);
out:
    calltree_free(&t);
    diff_free(d);
    profile_free(pa);
    profile_free(pb);
    web_cache_release(api->cache, ma);
    web_cache_release(api->cache, mb);
}

static const char *const mark_names[] = {
    [WEB_MARK_GAP] = "gap",
    [WEB_MARK_COMPACTED] = "compacted",
    [WEB_MARK_RESTART] = "restart",
    [WEB_MARK_RECREATED] = "recreated",
};

static void api_timeline(web_api *api, const web_query *q, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    store *s = NULL;
    store_series_list l = {0};
    web_tl t = {0};
    jbuf j = {0};
    int rc = web_cache_get(api->cache, &s, &err);
    store_query sq = {
        .host = q->a.host,
        .since_ms = q->a.since_ms,
        .until_ms = q->a.until_ms,
        .jvm_pid = q->a.pid,
        .type = q->a.type,
        /* the points the page draws: a store may send one per bucket */
        .bucket_ms = web_timeline_step(
            q->a.until_ms > q->a.since_ms ? q->a.until_ms - q->a.since_ms : 1, q->buckets)};
    for (size_t i = 0; rc == 0 && i < (q->a.ncontainers ? q->a.ncontainers : 1); i++) {
        sq.container = q->a.ncontainers ? q->a.container[i] : NULL;
        rc = store_timeline(s, &sq, &l, &err);
    }
    /* what a bucket's load is: cores from samples and each window's rate; a thread's ns per
     * ns of the bucket (wall, off-CPU, lock); bytes per second (alloc) */
    const ct_mode_info *mi = type_info(q->a.type);
    bool ns = !strcmp(mi->unit, "ns");
    double scale = q->mode == CT_MODE_CPU ? 0 : ns ? 1e-9 : 1;
    const char *load = q->mode == CT_MODE_CPU ? "cores" : ns ? "threads" : "bytes/s";
    web_cache_put(api->cache, s, rc < 0);
    if (rc < 0)
        goto fail;
    if (web_timeline_build(&l, q->a.since_ms, q->a.until_ms, q->buckets, scale, &t) < 0 ||
        !jbuf_open(&j)) {
        flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        goto fail;
    }
    jsonw_int(&j.w, "since", q->a.since_ms);
    jsonw_int(&j.w, "until", q->a.until_ms);
    jsonw_int(&j.w, "from", t.from_ms);
    jsonw_int(&j.w, "step", t.step_ms);
    jsonw_uint(&j.w, "buckets", t.nb);
    write_type(&j.w, q->a.type);
    jsonw_str(&j.w, "load", load); /* the unit of each series' "cores" */
    jsonw_array(&j.w, "series");
    for (size_t k = 0; k < t.n; k++) {
        const web_tl_series *ts = &t.series[k];
        jsonw_object(&j.w, NULL);
        jsonw_str(&j.w, "host", ts->s->host);
        jsonw_str(&j.w, "id", ts->s->container_id);
        jsonw_str(&j.w, "name", ts->s->container_name);
        jsonw_int(&j.w, "pid", ts->s->jvm_pid);
        uint64_t windows = 0, samples = 0;
        for (size_t i = 0; i < ts->s->n; i++)
            if (ts->s->pts[i].end_ms > q->a.since_ms && ts->s->pts[i].start_ms < q->a.until_ms)
                windows += store_point_windows(&ts->s->pts[i]), samples += ts->s->pts[i].samples;
        jsonw_uint(&j.w, "windows", windows);
        jsonw_uint(&j.w, "total", samples);
        if (ts->s->n) {
            jsonw_int(&j.w, "first", ts->s->pts[0].start_ms);
            jsonw_int(&j.w, "last", ts->s->pts[ts->s->n - 1].end_ms);
        }
        jsonw_array(&j.w, "samples");
        for (size_t i = 0; i < t.nb; i++)
            jsonw_num(&j.w, NULL, ts->samples[i]);
        jsonw_end(&j.w);
        jsonw_array(&j.w, "covered");
        for (size_t i = 0; i < t.nb; i++)
            jsonw_num(&j.w, NULL, ts->covered[i]);
        jsonw_end(&j.w);
        jsonw_array(&j.w, "cores");
        for (size_t i = 0; i < t.nb; i++)
            jsonw_num(&j.w, NULL, ts->cores[i]);
        jsonw_end(&j.w);
        jsonw_end(&j.w);
    }
    jsonw_end(&j.w);
    jsonw_array(&j.w, "marks");
    for (size_t i = 0; i < t.nmarks; i++) {
        const web_mark *mk = &t.marks[i];
        jsonw_object(&j.w, NULL);
        jsonw_str(&j.w, "kind", mark_names[mk->kind]);
        jsonw_int(&j.w, "from", mk->from_ms);
        jsonw_int(&j.w, "to", mk->to_ms);
        jsonw_uint(&j.w, "series", mk->series);
        if (mk->kind == WEB_MARK_RESTART || mk->kind == WEB_MARK_RECREATED)
            jsonw_uint(&j.w, "other", mk->other);
        if (mk->kind == WEB_MARK_COMPACTED)
            jsonw_int(&j.w, "bucket", mk->bucket_ms);
        jsonw_end(&j.w);
    }
    jsonw_end(&j.w);
    jbuf_done(&j, r);
    goto out;
fail:
    jbuf_abort(&j);
    fail_resp(r, &err);
out:
    web_timeline_free(&t);
    store_timeline_free(&l);
}

static void api_sources(web_api *api, const web_query *q, int64_t now_ms, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    store *s = NULL;
    store_listing l = {0};
    jbuf j = {0};
    /* the page shows no sizes: a ClickHouse store need not read every window's arrays for them
     * while the first graph is being merged */
    store_query sq = {.host = q->a.host, .no_sizes = true};
    int rc = web_cache_get(api->cache, &s, &err);
    if (rc == 0)
        rc = store_list(s, &sq, &l, &err);
    web_cache_put(api->cache, s, rc < 0);
    if (rc < 0 || !jbuf_open(&j)) {
        if (rc == 0)
            flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
        fail_resp(r, &err);
        store_listing_free(&l);
        return;
    }
    jsonw_str(&j.w, "store", web_cache_store_name(api->cache));
    jsonw_int(&j.w, "now", now_ms);
    jsonw_str(&j.w, "version", FLAME_VERSION);
    jsonw_array(&j.w, "containers");
    for (size_t i = 0; i < l.n; i++) {
        const store_entry *e = &l.e[i];
        jsonw_object(&j.w, NULL);
        jsonw_str(&j.w, "host", e->host);
        jsonw_str(&j.w, "id", e->container_id);
        jsonw_str(&j.w, "name", e->container_name);
        jsonw_str(&j.w, "image", e->image);
        jsonw_int(&j.w, "first", e->first_ms);
        jsonw_int(&j.w, "last", e->last_ms);
        jsonw_uint(&j.w, "windows", e->windows);
        jsonw_uint(&j.w, "samples", e->samples);
        jsonw_str(&j.w, "type", e->type ? e->type : "cpu"); /* an entry per JVM and type */
        jsonw_int(&j.w, "pid", e->jvm_pid);
        jsonw_end(&j.w);
    }
    jsonw_end(&j.w);
    jbuf_done(&j, r);
    store_listing_free(&l);
}

static const char *const fmt_types[] = {
    [FMT_SVG] = "image/svg+xml",
    [FMT_FOLDED] = "text/plain; charset=utf-8",
    [FMT_SPEEDSCOPE] = "application/json",
    [FMT_PPROF] = "application/octet-stream",
};

static void api_export(web_api *api, const web_query *q, int64_t now_ms, web_resp *r)
{
    flame_err err = FLAME_ERR_INIT;
    const web_merged *m = NULL;
    if (q->format < 0 || q->format >= FMT_COUNT) {
        web_api_error(r, 400, "format: svg, folded, speedscope or pprof");
        return;
    }
    if (!api->export_fn) {
        web_api_error(r, 404, "no exports here");
        return;
    }
    if (web_cache_merged(api->cache, &q->a, now_ms, &m, &err) < 0) {
        fail_resp(r, &err);
        return;
    }
    if (profile_stacks(m->p) == 0) {
        web_cache_release(api->cache, m);
        web_api_error(r, 404,
                      m->info.windows ? "no samples in that range: nothing to export"
                                      : "nothing stored in that range");
        return;
    }
    store_query sq = {.container = q->a.ncontainers == 1 ? q->a.container[0] : NULL,
                      .host = q->a.host,
                      .since_ms = q->a.since_ms,
                      .until_ms = q->a.until_ms,
                      .jvm_pid = q->a.pid,
                      .type = q->a.type};
    web_export x = {.p = m->p,
                    .info = &m->info,
                    .q = &sq,
                    .containers = q->a.container,
                    .ncontainers = q->a.ncontainers,
                    .format = q->format,
                    .palette = q->palette};
    char *buf = NULL, *name = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = f ? api->export_fn(api->export_ctx, &x, f, &name, &err)
               : flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
    if (f && fclose(f) != 0 && rc == 0)
        rc = flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
    web_cache_release(api->cache, m);
    if (rc < 0) {
        free(buf);
        free(name);
        fail_resp(r, &err);
        return;
    }
    *r = (web_resp){
        .status = 200, .type = fmt_types[q->format], .body = buf, .len = len, .filename = name};
}

void web_api_handle(web_api *api, const char *endpoint, const web_query *q, int64_t now_ms,
                    web_resp *r)
{
    if (!strcmp(endpoint, "flamegraph"))
        api_flamegraph(api, q, now_ms, r);
    else if (!strcmp(endpoint, "table"))
        api_table(api, q, now_ms, r);
    else if (!strcmp(endpoint, "sandwich"))
        api_sandwich(api, q, now_ms, r);
    else if (!strcmp(endpoint, "diff"))
        api_diff(api, q, now_ms, r);
    else if (!strcmp(endpoint, "timeline"))
        api_timeline(api, q, r);
    else if (!strcmp(endpoint, "sources"))
        api_sources(api, q, now_ms, r);
    else if (!strcmp(endpoint, "export"))
        api_export(api, q, now_ms, r);
    else
        web_api_error(r, 404, "no such endpoint");
}
