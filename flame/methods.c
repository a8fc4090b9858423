/* Per-method aggregation (flame/methods.h): profile names map to methods once per profile, then
 * one pass over the stacks adds self time (leaf, or innermost Java frame, maybe with its host)
 * and inclusive time (each method once per stack, so recursion is not counted twice). The
 * table interns its strings (methods, hosts, wheres) in a profile's name table of its own, so
 * tables of different profiles (top's windows) merge by name. */
#include "flame/methods.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/frame.h"
#include "flame/profile_impl.h"

#define NONE UINT32_MAX

/* What identifies a row, and the best single count seen for its `where`. */
typedef struct rkey {
    uint32_t name, host, where;
    double where_best;
} rkey;

struct methods {
    methods_opts o;
    uint64_t seed;
    profile *str;   /* only its names: methods, hosts, wheres, by id */
    uint32_t *java; /* by string: 1 for a method one of whose names looks like Java */
    size_t java_len, java_cap;

    methods_row *rows; /* the public rows, and their keys at the same index */
    rkey *keys;
    size_t nrows, rows_cap, keys_cap;
    uint32_t *row_tab; /* (name, host) -> row + 1; NULL when stale (after sorting) */
    size_t row_mask;
    uint32_t *plain; /* by string: its row without host, or NONE; valid with row_tab */
    size_t plain_len, plain_cap;

    uint32_t *seen; /* by string: the stamp of the last stack that counted it in total */
    size_t seen_len, seen_cap;
    uint32_t stamp;
    double samples, samples_before;
};

static int fail_oom(flame_err *err)
{
    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
}

/* ---- strings ---------------------------------------------------------------------------- */

static uint32_t str_count(const methods *m)
{
    return m->str->nnames;
}

static const char *str_of(const methods *m, uint32_t id)
{
    return prof_name_str(m->str, id);
}

/* The id of string s[0..n), added if new; NONE on OOM. */
static uint32_t str_intern(methods *m, const char *s, size_t n)
{
    return prof_name_intern(m->str, s, n);
}

static uint32_t str_intern_c(methods *m, const char *s)
{
    return str_intern(m, s, strlen(s));
}

/* ---- rows ------------------------------------------------------------------------------- */

static size_t row_hash(const methods *m, uint32_t name, uint32_t host)
{
    return (size_t)hash_mix64(((uint64_t)host << 32 | name) ^ m->seed);
}

/* arr[*len..need) = fill, growing arr as needed: per-string arrays follow the strings. */
static bool fill_to(uint32_t **arr, size_t *len, size_t *cap, size_t need, uint32_t fill)
{
    if (need <= *len)
        return true;
    if (!GROW(*arr, *cap, need))
        return false;
    for (size_t i = *len; i < need; i++)
        (*arr)[i] = fill;
    *len = need;
    return true;
}

/* (Re)build the row index at a size for n rows. */
static int rows_index(methods *m, size_t n)
{
    size_t mask = 1023;
    while ((n + 1) * 2 > mask)
        mask = mask * 2 + 1;
    uint32_t *t = calloc(mask + 1, sizeof *t);
    if (!t)
        return -1;
    free(m->row_tab);
    m->row_tab = t;
    m->row_mask = mask;
    m->plain_len = 0;
    if (!fill_to(&m->plain, &m->plain_len, &m->plain_cap, str_count(m), NONE))
        return -1;
    for (size_t r = 0; r < m->nrows; r++) {
        const rkey *k = &m->keys[r];
        hash_slot_put(t, mask, row_hash(m, k->name, k->host), (uint32_t)r + 1);
        if (k->host == NONE)
            m->plain[k->name] = (uint32_t)r;
    }
    return 0;
}

/* The row of (name, host), added if new; NONE on OOM. Rows without host (nearly all lookups)
 * are found by string index, without hashing. */
static uint32_t row_get(methods *m, uint32_t name, uint32_t host)
{
    if (host == NONE && m->row_tab && name < m->plain_len && m->plain[name] != NONE)
        return m->plain[name];
    if ((!m->row_tab || (m->nrows + 1) * 2 > m->row_mask) && rows_index(m, m->nrows + 1) < 0)
        return NONE;
    size_t j = row_hash(m, name, host) & m->row_mask;
    for (uint32_t e; (e = m->row_tab[j]); j = (j + 1) & m->row_mask)
        if (m->keys[e - 1].name == name && m->keys[e - 1].host == host)
            return e - 1;
    if (m->nrows >= UINT32_MAX / 4 || !GROW(m->rows, m->rows_cap, m->nrows + 1) ||
        !GROW(m->keys, m->keys_cap, m->nrows + 1) ||
        !fill_to(&m->plain, &m->plain_len, &m->plain_cap, (size_t)name + 1, NONE))
        return NONE;
    uint32_t r = (uint32_t)m->nrows++;
    m->rows[r] = (methods_row){0}; /* its strings are set by publish() */
    m->keys[r] = (rkey){.name = name, .host = host, .where = NONE};
    m->row_tab[j] = r + 1;
    if (host == NONE)
        m->plain[name] = r;
    return r;
}

static void note_where(methods *m, uint32_t r, uint32_t where, double count)
{
    rkey *k = &m->keys[r];
    if (where != NONE && count > k->where_best) {
        k->where_best = count;
        k->where = where;
    }
}

/* A stack's counts into the row of (name, host): as self time, total time or both
 * (METHODS_SELF | METHODS_TOTAL). -1 on OOM. */
static int count_row(methods *m, uint32_t name, uint32_t host, unsigned what, double cnt,
                     double before, uint32_t where)
{
    uint32_t r = row_get(m, name, host);
    if (r == NONE)
        return -1;
    methods_row *row = &m->rows[r];
    if (what & METHODS_SELF) {
        row->self += cnt;
        row->self_before += before;
    }
    if (what & METHODS_TOTAL) {
        row->total += cnt;
        row->total_before += before;
    }
    note_where(m, r, where, cnt);
    return 0;
}

/* ---- adding a profile ------------------------------------------------------------------- */

typedef struct add_ctx {
    methods *m;
    const profile *p;
    uint32_t *method; /* profile name id -> method string */
    bool *inlined;    /* profile name id -> an X_[i] frame (only with inlined_hosts) */
    uint32_t target;  /* callers_of's string */
    uint32_t no_frame, root;
    uint32_t last_where, where_ids[2];
} add_ctx;

static bool kept(const add_ctx *c, uint32_t id)
{
    return !c->m->o.java_only || c->m->java[c->method[id]];
}

/* The `where` of a stack: its root frames joined by '/', interned (consecutive stacks usually
 * share it). */
static uint32_t where_of(add_ctx *c, const uint32_t *ids, uint32_t depth)
{
    unsigned n = c->m->o.roots < depth ? c->m->o.roots : depth;
    if (n == 0)
        return NONE;
    uint32_t a = ids[0], b = n > 1 ? ids[1] : NONE;
    if (c->last_where != NONE && c->where_ids[0] == a && c->where_ids[1] == b)
        return c->last_where;
    const profile *p = c->p;
    size_t la = p->names[a].len, lb = b != NONE ? p->names[b].len : 0;
    _cleanup_free_ char *s = malloc(la + lb + 2);
    if (!s)
        return NONE;
    memcpy(s, prof_name_str(p, a), la);
    if (b != NONE) {
        s[la] = '/';
        memcpy(s + la + 1, prof_name_str(p, b), lb);
    }
    c->last_where = str_intern(c->m, s, la + (b != NONE ? lb + 1 : 0));
    c->where_ids[0] = a;
    c->where_ids[1] = b;
    return c->last_where;
}

static int add_self(add_ctx *c, const uint32_t *ids, uint32_t depth, double cnt, double before,
                    uint32_t where)
{
    methods *m = c->m;
    unsigned roots = m->o.roots;
    long self = depth > roots ? (long)depth - 1 : -1;
    if (self >= 0 && !kept(c, ids[self])) {
        while (m->o.self_to_java && self >= (long)roots && !kept(c, ids[self]))
            self--;
        if (!m->o.self_to_java)
            return 0; /* its leaf is not a row: no self time */
        if (self < (long)roots)
            self = -1;
    }
    if (self < 0) /* nothing below the roots, or no Java frame: a row says so */
        return count_row(m, c->no_frame, NONE,
                         METHODS_SELF | (m->o.measure != METHODS_SELF ? METHODS_TOTAL : 0), cnt,
                         before, where);
    uint32_t host = NONE;
    if (m->o.inlined_hosts && c->inlined[ids[self]])
        for (long i = self - 1; i >= (long)roots; i--)
            if (!c->inlined[ids[i]]) {
                host = c->method[ids[i]];
                break;
            }
    return count_row(m, c->method[ids[self]], host, METHODS_SELF, cnt, before, where);
}

static int add_total(add_ctx *c, const uint32_t *ids, uint32_t depth, double cnt, double before,
                     uint32_t where)
{
    methods *m = c->m;
    for (uint32_t i = m->o.roots; i < depth; i++) {
        uint32_t g = c->method[ids[i]];
        if (!kept(c, ids[i]) || m->seen[g] == m->stamp)
            continue; /* recursion: a method counts once per stack */
        m->seen[g] = m->stamp;
        if (count_row(m, g, NONE, METHODS_TOTAL, cnt, before, where) < 0)
            return -1;
    }
    return 0;
}

static int add_caller(add_ctx *c, const uint32_t *ids, uint32_t depth, double cnt, double before,
                      uint32_t where)
{
    methods *m = c->m;
    long roots = (long)m->o.roots;
    for (long i = (long)depth - 1; i >= roots; i--) {
        if (c->method[ids[i]] != c->target)
            continue;
        long up = i - 1;
        while (m->o.java_only && up >= roots && !kept(c, ids[up]))
            up--;
        m->samples += cnt;
        m->samples_before += before;
        return count_row(m, up >= roots ? c->method[ids[up]] : c->root, NONE,
                         METHODS_SELF | METHODS_TOTAL, cnt, before, where);
    }
    return 0;
}

/* The rows' strings point into the string table, which moves as it grows: set them once the
 * table has its strings. */
static void publish(methods *m)
{
    for (size_t r = 0; r < m->nrows; r++) {
        const rkey *k = &m->keys[r];
        m->rows[r].name = str_of(m, k->name);
        m->rows[r].host = k->host == NONE ? NULL : str_of(m, k->host);
        m->rows[r].where = k->where == NONE ? NULL : str_of(m, k->where);
    }
}

static int add_columns(methods *m, const profile *p, const double *before, const double *after,
                       flame_err *err)
{
    add_ctx c = {.m = m, .p = p, .target = NONE, .last_where = NONE};
    size_t nn = p->nnames ? p->nnames : 1;
    _cleanup_free_ uint32_t *method = malloc(nn * sizeof *method);
    _cleanup_free_ bool *inlined = m->o.inlined_hosts ? malloc(nn * sizeof *inlined) : NULL;
    if (!method || (m->o.inlined_hosts && !inlined))
        return fail_oom(err);
    c.method = method;
    c.inlined = inlined;
    /* 1. each name's method (its name without annotation), Java when any of its names is */
    for (uint32_t id = 0; id < p->nnames; id++) {
        const char *s = prof_name_str(p, id);
        uint32_t len = p->names[id].len;
        if ((method[id] = str_intern(m, s, frame_strip_annotation(s, len))) == NONE)
            return fail_oom(err);
        if (!fill_to(&m->java, &m->java_len, &m->java_cap, (size_t)method[id] + 1, 0))
            return fail_oom(err);
        if (!m->java[method[id]] && methods_is_java(s, len))
            m->java[method[id]] = 1;
        if (inlined)
            inlined[id] = frame_is_inlined(s, len);
    }
    if ((c.no_frame = str_intern_c(m, m->o.java_only ? "(no Java frame)" : "(no frame)")) == NONE ||
        (c.root = str_intern_c(m, "(root)")) == NONE ||
        (m->o.callers_of && (c.target = str_intern_c(m, m->o.callers_of)) == NONE))
        return fail_oom(err);
    if (!fill_to(&m->seen, &m->seen_len, &m->seen_cap, str_count(m), 0))
        return fail_oom(err);
    /* 2. the stacks */
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        double cnt = after ? after[k] : st->count;
        double bef = before ? before[k] : after ? 0 : st->before;
        uint32_t where = m->o.roots ? where_of(&c, ids, st->depth) : NONE;
        if (m->o.callers_of) {
            if (add_caller(&c, ids, st->depth, cnt, bef, where) < 0)
                return fail_oom(err);
            continue;
        }
        m->samples += cnt;
        m->samples_before += bef;
        if (++m->stamp == 0) { /* wrapped: old stamps could match again */
            memset(m->seen, 0, m->seen_len * sizeof *m->seen);
            m->stamp = 1;
        }
        if ((m->o.measure != METHODS_TOTAL && add_self(&c, ids, st->depth, cnt, bef, where) < 0) ||
            (m->o.measure != METHODS_SELF && add_total(&c, ids, st->depth, cnt, bef, where) < 0))
            return fail_oom(err);
    }
    return 0;
}

int methods_add_columns(methods *m, const profile *p, const double *before, const double *after,
                        flame_err *err)
{
    int rc = add_columns(m, p, before, after, err);
    publish(m);
    return rc;
}

int methods_add(methods *m, const profile *p, flame_err *err)
{
    return methods_add_columns(m, p, NULL, NULL, err);
}

int methods_merge(methods *m, const methods *from, flame_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < from->nrows && rc == 0; i++) {
        const rkey *k = &from->keys[i];
        uint32_t n = str_intern(m, str_of(from, k->name), from->str->names[k->name].len);
        uint32_t h = k->host == NONE ? NONE : str_intern_c(m, str_of(from, k->host));
        uint32_t w = k->where == NONE ? NONE : str_intern_c(m, str_of(from, k->where));
        if (n == NONE || (k->host != NONE && h == NONE) || (k->where != NONE && w == NONE) ||
            !fill_to(&m->java, &m->java_len, &m->java_cap, (size_t)n + 1, 0)) {
            rc = fail_oom(err);
            break;
        }
        m->java[n] |= k->name < from->java_len && from->java[k->name];
        const methods_row *src = &from->rows[i];
        uint32_t r = row_get(m, n, h);
        if (r == NONE) {
            rc = fail_oom(err);
            break;
        }
        m->rows[r].self += src->self;
        m->rows[r].total += src->total;
        m->rows[r].self_before += src->self_before;
        m->rows[r].total_before += src->total_before;
        note_where(m, r, w, k->where_best);
    }
    m->samples += from->samples;
    m->samples_before += from->samples_before;
    publish(m);
    return rc;
}

/* ---- the table -------------------------------------------------------------------------- */

methods *methods_new(const methods_opts *o)
{
    methods *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->o = *o;
    m->o.callers_of = o->callers_of ? strdup(o->callers_of) : NULL;
    m->seed = hash_random_seed();
    m->str = profile_new();
    if (!m->str || (o->callers_of && !m->o.callers_of)) {
        methods_free(m);
        return NULL;
    }
    return m;
}

void methods_clear(methods *m)
{
    profile *fresh = profile_new();
    if (fresh) { /* else the old strings stay: only memory, the rows go anyway */
        profile_free(m->str);
        m->str = fresh;
        m->java_len = m->seen_len = 0;
    }
    free(m->row_tab);
    m->row_tab = NULL;
    m->nrows = 0;
    m->samples = m->samples_before = 0;
}

void methods_free(methods *m)
{
    if (!m)
        return;
    profile_free(m->str);
    free((char *)m->o.callers_of);
    free(m->java);
    free(m->rows);
    free(m->keys);
    free(m->row_tab);
    free(m->plain);
    free(m->seen);
    free(m);
}

double methods_samples(const methods *m, bool before)
{
    return before ? m->samples_before : m->samples;
}

const methods_row *methods_rows(const methods *m, size_t *n)
{
    *n = m->nrows;
    return m->rows;
}

static int cmp_text(const char *a, const char *b)
{
    if (!a || !b) /* no host sorts last */
        return a ? -1 : b ? 1 : 0;
    return strcmp(a, b);
}

typedef struct sort_ctx {
    const methods_row *rows;
    bool by_total;
} sort_ctx;

static int cmp_row(const void *a, const void *b, void *ctx)
{
    const sort_ctx *c = ctx;
    const methods_row *x = &c->rows[*(const uint32_t *)a], *y = &c->rows[*(const uint32_t *)b];
    double kx = c->by_total ? x->total : x->self, ky = c->by_total ? y->total : y->self;
    if (kx != ky)
        return kx > ky ? -1 : 1;
    double sx = c->by_total ? x->self : x->total, sy = c->by_total ? y->self : y->total;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    int r = strcmp(x->name, y->name);
    return r ? r : cmp_text(x->host, y->host);
}

void methods_sort(methods *m, bool by_total)
{
    if (m->nrows < 2)
        return;
    _cleanup_free_ uint32_t *order = malloc(m->nrows * sizeof *order);
    _cleanup_free_ methods_row *rows = malloc(m->nrows * sizeof *rows);
    _cleanup_free_ rkey *keys = malloc(m->nrows * sizeof *keys);
    if (!order || !rows || !keys)
        return; /* out of memory: the rows stay in their order */
    for (uint32_t i = 0; i < m->nrows; i++)
        order[i] = i;
    sort_ctx c = {m->rows, by_total};
    qsort_r(order, m->nrows, sizeof *order, cmp_row, &c);
    for (size_t i = 0; i < m->nrows; i++) {
        rows[i] = m->rows[order[i]];
        keys[i] = m->keys[order[i]];
    }
    memcpy(m->rows, rows, m->nrows * sizeof *rows);
    memcpy(m->keys, keys, m->nrows * sizeof *keys);
    free(m->row_tab); /* indexes moved: rebuilt by the next lookup */
    m->row_tab = NULL;
}

/* ---- what looks like Java ---------------------------------------------------------------- */

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

bool methods_is_java(const char *s, size_t n)
{
    if (frame_ends_with(s, n, "_[j]") || frame_ends_with(s, n, "_[i]") ||
        frame_ends_with(s, n, "_[int]"))
        return true;
    if (frame_ends_with(s, n, "_[k]") || n == 0 || s[0] == '[')
        return false;
    if (memmem(s, n, "::", 2) && !memmem(s, n, ":::", 3) && !memchr(s, '/', n))
        return false;
    if (memchr(s, '/', n))
        return true;
    /* GCC clones of C functions (foo.isra.0, bar.constprop.1, baz.part.2, qux.cold) */
    if (memmem(s, n, ".isra", 5) || memmem(s, n, ".constprop", 10) || memmem(s, n, ".part.", 6) ||
        frame_ends_with(s, n, ".cold"))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (s[i] == '.' && ident_char(s[i - 1]) && ident_char(s[i + 1]) &&
            !(s[i + 1] >= '0' && s[i + 1] <= '9'))
            return true;
    return false;
}

/* ---- methods_top_self (flame/profile.h) ---------------------------------------------------- */

/* A name of p whose method is `method`: the method itself, or one of its annotated names. */
static const char *name_in(const profile *p, const char *method)
{
    size_t n = strlen(method);
    uint32_t id = prof_name_find(p, method, n);
    if (id != UINT32_MAX)
        return prof_name_str(p, id);
    _cleanup_free_ char *s = malloc(n + 7);
    if (!s)
        return NULL;
    memcpy(s, method, n);
    for (const char *k = "jikw"; *k; k++) {
        memcpy(s + n, "_[", 2);
        s[n + 2] = *k;
        s[n + 3] = ']';
        if ((id = prof_name_find(p, s, n + 4)) != UINT32_MAX)
            return prof_name_str(p, id);
    }
    memcpy(s + n, "_[int]", 6);
    if ((id = prof_name_find(p, s, n + 6)) != UINT32_MAX)
        return prof_name_str(p, id);
    return NULL;
}

size_t methods_top_self(const profile *p, size_t n, bool java_only, const char **names,
                        double *counts)
{
    if (n == 0)
        return 0;
    methods_opts o = {.java_only = java_only, .measure = METHODS_SELF};
    methods *m = methods_new(&o);
    if (!m || methods_add(m, p, NULL) < 0) {
        methods_free(m);
        return 0;
    }
    methods_sort(m, false);
    size_t k = 0;
    for (size_t i = 0; i < m->nrows && k < n && m->rows[i].self > 0; i++) {
        const char *name = name_in(p, m->rows[i].name);
        if (!name)
            continue;
        names[k] = name;
        counts[k++] = m->rows[i].self;
    }
    methods_free(m);
    return k;
}
