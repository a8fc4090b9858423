/* Call trees for viewers that draw them (flame/calltree.h). The stacks are walked in the order the
 * SVG renderer merges them (frame by frame, names bytewise), so a node is one frame of the CLI's
 * graph and sits where it does there; the cut keeps the largest nodes and sums the rest into
 * "other" per parent, as a viewer would rather see a small frame's share than nothing. */
#include "flame/calltree.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/frame.h"
#include "flame/palette.h"
#include "flame/profile_impl.h"

static int oom(flame_err *err)
{
    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
}

/* ---- the path ------------------------------------------------------------------------------ */

/* The ids of path "a;b;c" in p: their number, 0 for an empty path, -1 when a frame is no name of
 * p (no stack can start with it), -2 on OOM. */
static long path_ids(const profile *p, const char *path, uint32_t **out)
{
    *out = NULL;
    if (!path || !*path)
        return 0;
    size_t n = 1;
    for (const char *s = path; *s; s++)
        n += *s == ';';
    uint32_t *ids = malloc(n * sizeof *ids);
    if (!ids)
        return -2;
    size_t k = 0;
    for (const char *s = path;; k++) {
        const char *e = strchr(s, ';');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        ids[k] = len ? prof_name_find(p, s, len) : UINT32_MAX;
        if (ids[k] == UINT32_MAX) {
            free(ids);
            return -1;
        }
        if (!e)
            break;
        s = e + 1;
    }
    *out = ids;
    return (long)n;
}

/* ---- building ------------------------------------------------------------------------------ */

typedef struct builder {
    calltree_node *node;
    size_t n, cap;
    uint32_t *open; /* node index per depth - 1 of the stack being merged */
    size_t open_cap;
} builder;

static uint32_t add_node(builder *b, uint32_t name, uint32_t parent, uint32_t depth)
{
    if (b->n >= UINT32_MAX - 1 || !GROW(b->node, b->cap, b->n + 1))
        return CALLTREE_NONE;
    b->node[b->n] = (calltree_node){.name = name, .parent = parent, .depth = depth};
    return (uint32_t)b->n++;
}

/* Merge every stack (under the path) into nodes: preorder, each node's self and self_before.
 * Two passes: the first only counts the nodes, so the array is allocated once at its size; grown
 * by doubling, a day's 600,000 nodes (34 MB) were copied and faulted in again at each step, a
 * fifth of the tree's build. */
static int merge_stacks(const profile *p, const prof_view *v, const uint32_t *path, size_t npath,
                        builder *b)
{
    uint32_t *open_rank = NULL;
    size_t rank_cap = 0, need = b->n;
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        size_t nopen = 0;
        if (pass == 1) {
            calltree_node *all = realloc(b->node, need * sizeof *all);
            if (!all) {
                rc = -1;
                break;
            }
            b->node = all;
            b->cap = need;
        }
        for (uint32_t k = 0; k < p->nstacks && rc == 0; k++) {
            const prof_stack *st = &p->stacks[v->order[k]];
            const uint32_t *ranks = v->seq + st->off;
            size_t n = st->depth;
            if (n < npath)
                continue;
            bool under = true;
            for (size_t i = 0; i < npath && under; i++)
                under = v->by_rank[ranks[i]] == path[i];
            if (!under)
                continue;
            size_t common = 0;
            while (common < nopen && common < n && open_rank[common] == ranks[common])
                common++;
            if (!GROW(b->open, b->open_cap, n) || !GROW(open_rank, rank_cap, n)) {
                rc = -1;
                break;
            }
            for (size_t i = common; i < n; i++)
                open_rank[i] = ranks[i];
            nopen = n;
            if (pass == 0) {
                need += n - common;
                continue;
            }
            for (size_t i = common; i < n; i++) {
                uint32_t parent = i ? b->open[i - 1] : 0;
                uint32_t id = add_node(b, v->by_rank[ranks[i]], parent, (uint32_t)i + 1);
                if (id == CALLTREE_NONE) {
                    rc = -1;
                    break;
                }
                b->open[i] = id;
            }
            if (rc == 0) {
                calltree_node *leaf = &b->node[b->open[n - 1]];
                leaf->self += st->count;
                leaf->self_before += st->before;
            }
        }
    }
    free(open_rank);
    return rc;
}

/* Totals bottom-up (children follow their parent in preorder), and the largest self change. */
static void sum_up(calltree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        t->node[i].total = t->node[i].self;
        t->node[i].total_before = t->node[i].self_before;
        double d = fabs(t->node[i].self - t->node[i].self_before);
        if (t->diff && d > t->maxdelta)
            t->maxdelta = d;
    }
    for (size_t i = t->n; i-- > 1;) {
        calltree_node *c = &t->node[i], *par = &t->node[c->parent];
        par->total += c->total;
        par->total_before += c->total_before;
    }
}

/* Offsets: a parent's self first, then its children in order (the SVG's layout). */
static int lay_out(calltree *t)
{
    _cleanup_free_ double *cursor = malloc((t->n ? t->n : 1) * sizeof *cursor);
    if (!cursor)
        return -1;
    t->node[0].x = 0;
    cursor[0] = t->node[0].self;
    for (size_t i = 1; i < t->n; i++) {
        calltree_node *c = &t->node[i];
        c->x = cursor[c->parent];
        cursor[c->parent] += c->total;
        cursor[i] = c->x + c->self;
    }
    return 0;
}

static double keyof(const calltree_node *c)
{
    return c->total > c->total_before ? c->total : c->total_before;
}

/* The k-th largest of a[0..n) (k < n), a[] reordered: a selection (Hoare's, median of three),
 * linear on average where a sort of the few hundred thousand nodes of a day's tree took most
 * of the build. */
static double kth_largest(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double x = a[lo], y = a[mid], z = a[hi];
        double piv = (x > y) == (y > z) ? y : (y > x) == (x > z) ? x : z; /* median */
        size_t i = lo, j = hi;
        while (i <= j) { /* larger keys to the left */
            while (a[i] > piv)
                i++;
            while (a[j] < piv)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i] = a[j], a[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        /* now a[lo..j] >= piv >= a[i..hi], and a[j+1..i-1] == piv */
        if (k <= j && j != SIZE_MAX)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return piv;
    }
    return a[k];
}

/* Keep the root, the path and the max_nodes largest other nodes; what a kept parent loses goes
 * into one "other" child placed after its kept children. */
static int cut(calltree *t, size_t max_nodes)
{
    size_t first = 1 + t->path; /* candidates: node[first..n) */
    size_t cand = t->n - first;
    if (max_nodes == 0 || cand <= max_nodes)
        return 0;
    _cleanup_free_ double *keys = malloc(cand * sizeof *keys);
    _cleanup_free_ uint8_t *keep = calloc(t->n, 1);
    _cleanup_free_ uint32_t *size = malloc(t->n * sizeof *size);
    _cleanup_free_ uint32_t *map = malloc(t->n * sizeof *map);
    _cleanup_free_ double *lost = calloc(t->n, sizeof *lost);
    _cleanup_free_ double *lost_before = calloc(t->n, sizeof *lost_before);
    _cleanup_free_ uint32_t *lost_n = calloc(t->n, sizeof *lost_n);
    _cleanup_free_ uint32_t *stack = malloc(t->n * sizeof *stack);
    if (!keys || !keep || !size || !map || !lost || !lost_before || !lost_n || !stack)
        return -1;
    for (size_t i = 0; i < cand; i++)
        keys[i] = keyof(&t->node[first + i]);
    /* the threshold: the max_nodes-th largest key (ties are settled below, in preorder) */
    double thr = kth_largest(keys, cand, max_nodes - 1);
    size_t kept = 0;
    for (size_t i = 0; i < first; i++)
        keep[i] = 1;
    /* above the threshold: a parent's key is never below its child's, so it is kept too */
    for (size_t i = first; i < t->n; i++)
        if (keyof(&t->node[i]) > thr)
            keep[i] = 1, kept++;
    /* ties, in preorder (a parent before its children), while the budget lasts */
    for (size_t i = first; i < t->n && kept < max_nodes; i++)
        if (!keep[i] && keyof(&t->node[i]) == thr && keep[t->node[i].parent])
            keep[i] = 1, kept++;
    for (size_t i = 0; i < t->n; i++)
        size[i] = 1;
    for (size_t i = t->n; i-- > 1;)
        size[t->node[i].parent] += size[i];
    for (size_t i = first; i < t->n; i++) {
        const calltree_node *c = &t->node[i];
        if (!keep[i] || !keep[c->parent])
            keep[i] = 0;
        if (!keep[i] && keep[c->parent]) {
            lost[c->parent] += c->total;
            lost_before[c->parent] += c->total_before;
            lost_n[c->parent] += size[i];
            t->cut += size[i];
        }
    }
    /* rewrite in place: the output never runs ahead of the input (an "other" node is added
     * only after a kept subtree ends, and at least one cut node stood for it) */
    size_t out = 0, depth = 0;
    calltree_node *nd = t->node;
    for (size_t i = 0; i <= t->n; i++) {
        if (i < t->n && !keep[i])
            continue;
        uint32_t d = i < t->n ? nd[i].depth : 0;
        /* close the kept nodes this one is not inside of */
        while (depth > 0 && nd[map[stack[depth - 1]]].depth >= d) {
            uint32_t par = stack[--depth];
            if (lost_n[par]) {
                calltree_node o = {.name = CALLTREE_OTHER,
                                   .parent = map[par],
                                   .depth = nd[map[par]].depth + 1,
                                   .cut = lost_n[par],
                                   .total = lost[par],
                                   .self = lost[par],
                                   .total_before = lost_before[par],
                                   .self_before = lost_before[par]};
                t->cut_total += lost[par];
                nd[out++] = o;
            }
            if (i == t->n && depth == 0)
                break;
        }
        if (i == t->n)
            break;
        calltree_node c = nd[i];
        if (i)
            c.parent = map[c.parent];
        map[i] = (uint32_t)out;
        nd[out++] = c;
        stack[depth++] = (uint32_t)i;
    }
    t->n = out;
    return 0;
}

int calltree_build(const profile *p, const calltree_opts *o, calltree *t, flame_err *err)
{
    memset(t, 0, sizeof *t);
    t->p = p;
    t->diff = profile_is_diff(p);
    t->maxdelta = 1;
    calltree_opts dflt = {0};
    if (!o)
        o = &dflt;
    _cleanup_free_ uint32_t *path = NULL;
    long npath = path_ids(p, o->path, &path);
    if (npath == -2)
        return oom(err);
    builder b = {0};
    if (add_node(&b, CALLTREE_NONE, CALLTREE_NONE, 0) == CALLTREE_NONE)
        return oom(err);
    int rc = 0;
    if (npath >= 0 && p->nstacks > 0) {
        prof_view v;
        if (prof_view_build(p, false, PROF_ORDER_FRAMES, &v) < 0) {
            free(b.node);
            return oom(err);
        }
        rc = merge_stacks(p, &v, path, (size_t)npath, &b);
        prof_view_free(&v);
    }
    free(b.open);
    t->node = b.node;
    t->n = b.n;
    if (rc < 0) {
        calltree_free(t);
        return oom(err);
    }
    /* the path's nodes are the first ones, when some stack went under it */
    t->path = npath > 0 && t->n > (size_t)npath ? (size_t)npath : 0;
    t->full = t->n - 1;
    sum_up(t);
    if (cut(t, o->max_nodes) < 0 || lay_out(t) < 0) {
        calltree_free(t);
        return oom(err);
    }
    return 0;
}

void calltree_free(calltree *t)
{
    if (!t)
        return;
    free(t->node);
    t->node = NULL;
    t->n = 0;
}

const char *calltree_name(const calltree *t, const calltree_node *nd, size_t *len, size_t *shown)
{
    if (nd->name == CALLTREE_OTHER && nd->parent != CALLTREE_NONE) {
        *len = *shown = 0;
        return NULL;
    }
    if (nd->parent == CALLTREE_NONE) {
        *len = *shown = 3;
        return "all";
    }
    const char *s = prof_name_str(t->p, nd->name);
    *len = t->p->names[nd->name].len;
    *shown = frame_strip_annotation(s, *len);
    return s;
}

int64_t calltree_colour(const calltree *t, const calltree_node *nd, const char *pal_name)
{
    int pal = palette_parse(pal_name ? pal_name : "hot");
    if (pal < 0)
        return -1;
    if (nd->name == CALLTREE_OTHER && nd->parent != CALLTREE_NONE)
        return 0xb4b4b4;
    if (t->diff)
        return nd->parent == CALLTREE_NONE
                   ? palette_rgb(255, 255, 255)
                   : palette_diff_colour(nd->self - nd->self_before, t->maxdelta);
    render_opts ro;
    render_opts_default(&ro);
    palette_rng rr = {1};
    size_t len, shown;
    const char *s = calltree_name(t, nd, &len, &shown);
    return palette_colour((enum palette)pal, &ro, s, len, &rr);
}

/* ---- exact figures -------------------------------------------------------------------------- */

int calltree_search(const profile *p, calltree_match_fn match, void *ctx, double *matched,
                    double *before, flame_err *err)
{
    *matched = 0;
    if (before)
        *before = 0;
    /* per name: 0 not tested yet, 1 no, 2 yes */
    _cleanup_free_ uint8_t *hit = calloc(p->nnames ? p->nnames : 1, 1);
    if (!hit)
        return oom(err);
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        bool any = false;
        for (uint32_t i = 0; i < st->depth && !any; i++) {
            uint32_t id = ids[i];
            if (!hit[id]) {
                const char *s = prof_name_str(p, id);
                hit[id] = match(ctx, s, frame_strip_annotation(s, p->names[id].len)) ? 2 : 1;
            }
            any = hit[id] == 2;
        }
        if (any) {
            *matched += st->count;
            if (before)
                *before += st->before;
        }
    }
    return 0;
}

/* The id in q of p's name id (map: per p name, id + 1 in q, 0 = not yet). */
static uint32_t map_name(profile *q, const profile *p, uint32_t *map, uint32_t id)
{
    if (!map[id]) {
        uint32_t nid = prof_name_intern(q, prof_name_str(p, id), p->names[id].len);
        if (nid == UINT32_MAX)
            return UINT32_MAX;
        map[id] = nid + 1;
    }
    return map[id] - 1;
}

int calltree_sandwich(const profile *p, const char *fn, size_t len, profile **callers,
                      profile **callees, double *self, flame_err *err)
{
    *callers = profile_new();
    *callees = profile_new();
    if (self)
        *self = 0;
    _cleanup_free_ uint32_t *map_up = calloc(p->nnames ? p->nnames : 1, sizeof *map_up);
    _cleanup_free_ uint32_t *map_down = calloc(p->nnames ? p->nnames : 1, sizeof *map_down);
    _cleanup_free_ uint8_t *is_fn = calloc(p->nnames ? p->nnames : 1, 1);
    _cleanup_free_ uint32_t *buf = NULL;
    size_t buf_cap = 0;
    uint32_t up_root = UINT32_MAX, down_root = UINT32_MAX;
    if (!*callers || !*callees || !map_up || !map_down || !is_fn)
        goto fail;
    up_root = prof_name_intern(*callers, fn, len);
    down_root = prof_name_intern(*callees, fn, len);
    if (up_root == UINT32_MAX || down_root == UINT32_MAX)
        goto fail;
    for (uint32_t id = 0; id < p->nnames; id++) {
        const char *s = prof_name_str(p, id);
        size_t shown = frame_strip_annotation(s, p->names[id].len);
        is_fn[id] = shown == len && memcmp(s, fn, len) == 0;
    }
    int columns = p->columns ? p->columns : 1;
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        uint32_t at = 0;
        while (at < st->depth && !is_fn[ids[at]])
            at++;
        if (at == st->depth)
            continue;
        if (!GROW(buf, buf_cap, (size_t)st->depth + 1))
            goto fail;
        /* callers: fn, then the frames above it, nearest first */
        buf[0] = up_root;
        for (uint32_t i = 0; i < at; i++)
            if ((buf[1 + i] = map_name(*callers, p, map_up, ids[at - 1 - i])) == UINT32_MAX)
                goto fail;
        if (prof_stack_add(*callers, buf, (size_t)at + 1, st->count, st->before) < 0)
            goto fail;
        /* callees: fn, then the frames below it */
        buf[0] = down_root;
        uint32_t n = 1;
        for (uint32_t i = at + 1; i < st->depth; i++)
            if ((buf[n++] = map_name(*callees, p, map_down, ids[i])) == UINT32_MAX)
                goto fail;
        if (prof_stack_add(*callees, buf, n, st->count, st->before) < 0)
            goto fail;
        if (self && is_fn[ids[st->depth - 1]])
            *self += st->count;
    }
    if ((*callers)->nstacks) {
        (*callers)->columns = columns;
        (*callees)->columns = columns;
    }
    return 0;
fail:
    profile_free(*callers);
    profile_free(*callees);
    *callers = *callees = NULL;
    return oom(err);
}

int calltree_copy(const profile *p, profile **out, flame_err *err)
{
    profile *q = profile_new();
    _cleanup_free_ uint32_t *map = calloc(p->nnames ? p->nnames : 1, sizeof *map);
    _cleanup_free_ uint32_t *buf = NULL;
    size_t buf_cap = 0;
    if (!q || !map)
        goto fail;
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        if (!GROW(buf, buf_cap, st->depth))
            goto fail;
        for (uint32_t i = 0; i < st->depth; i++)
            if ((buf[i] = map_name(q, p, map, ids[i])) == UINT32_MAX)
                goto fail;
        if (prof_stack_add_deep(q, buf, st->depth, st->count, st->before) < 0)
            goto fail;
    }
    q->columns = p->columns;
    *out = q;
    return 0;
fail:
    profile_free(q);
    return oom(err);
}
