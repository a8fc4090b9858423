/* Stacks matched as read (flame/match.h). The frames of a flame graph form a tree: a frame is
 * its parent frame and its name. Matched as read, a frame is its parent and its name's plain
 * form (the JIT marks dropped), so the tree is built over plain names and each of its frames
 * remembers whether every stack through it carried the same marked name. Only stacks with a
 * name that shares its plain form with another name can be affected; the others are copied as
 * they are. */
#include "flame/match.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/frame.h"
#include "flame/hash.h"
#include "flame/profile_impl.h"

#define NONE UINT32_MAX

/* A frame of the as-read graph: its parent and its plain name, the first marked name seen there
 * and whether every stack through it had that one. */
typedef struct node {
    uint32_t parent, plain, exact;
    bool agree;
} node;

typedef struct trie {
    node *n;
    size_t len, cap;
    uint32_t *tab; /* open addressing: 0 = empty, else node + 1 */
    size_t mask;
    uint64_t seed;
} trie;

static void trie_free(trie *t)
{
    free(t->n);
    free(t->tab);
}

static uint64_t node_hash(const trie *t, uint32_t parent, uint32_t plain)
{
    return hash_mix64(((uint64_t)parent << 32 | plain) ^ t->seed);
}

static int trie_rehash(trie *t, size_t mask)
{
    uint32_t *tab = alloc_zalloc((mask + 1) * sizeof *tab);
    if (!tab)
        return -1;
    for (size_t i = 0; i < t->len; i++)
        hash_slot_put(tab, mask, node_hash(t, t->n[i].parent, t->n[i].plain), (uint32_t)i + 1);
    free(t->tab);
    t->tab = tab;
    t->mask = mask;
    return 0;
}

/* The node (parent, plain): found, or added with `exact` as its name; NONE on OOM. A node found
 * with another marked name no longer agrees. */
static uint32_t trie_step(trie *t, uint32_t parent, uint32_t plain, uint32_t exact)
{
    size_t j = node_hash(t, parent, plain) & t->mask;
    for (uint32_t e; (e = t->tab[j]); j = (j + 1) & t->mask) {
        node *x = &t->n[e - 1];
        if (x->parent == parent && x->plain == plain) {
            if (x->exact != exact)
                x->agree = false;
            return e - 1;
        }
    }
    if (t->len >= UINT32_MAX / 4 || !GROW(t->n, t->cap, t->len + 1))
        return NONE;
    uint32_t id = (uint32_t)t->len++;
    t->n[id] = (node){parent, plain, exact, true};
    t->tab[j] = id + 1;
    if (t->len * 2 > t->mask && trie_rehash(t, t->mask * 2 + 1) < 0)
        return NONE;
    return id;
}

/* The node (parent, plain), which pass 1 added. */
static uint32_t trie_find(const trie *t, uint32_t parent, uint32_t plain)
{
    size_t j = node_hash(t, parent, plain) & t->mask;
    for (uint32_t e; (e = t->tab[j]); j = (j + 1) & t->mask)
        if (t->n[e - 1].parent == parent && t->n[e - 1].plain == plain)
            return e - 1;
    return NONE;
}

static int fail_oom(flame_err *err)
{
    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
}

int match_as_read(const profile *p, profile **out, size_t *merged, flame_err *err)
{
    *out = NULL;
    *merged = 0;
    /* the common case costs a look at each name's end: no JIT marks, nothing to match */
    bool marks = false;
    for (uint32_t id = 0; id < p->nnames && !marks; id++)
        marks = frame_strip_jit(prof_name_str(p, id), p->names[id].len) != p->names[id].len;
    if (!marks)
        return 0;

    /* 1. each name's plain form (interned in a table of their own), and which plain forms more
     * than one name has */
    size_t nn = p->nnames;
    _cleanup_free_ uint32_t *plain = malloc(nn * sizeof *plain);
    _cleanup_free_ uint32_t *members = NULL;
    profile *g = profile_new();
    int rc = 0;
    trie t = {.seed = hash_random_seed()};
    profile *q = NULL;
    _cleanup_free_ uint32_t *seq = NULL;
    _cleanup_free_ uint32_t *plain_in_q = NULL;
    _cleanup_free_ bool *cand = NULL;
    uint32_t maxdepth = 1;
    bool differ = false;
    if (!plain || !g) {
        rc = fail_oom(err);
        goto out;
    }
    for (uint32_t id = 0; id < nn; id++) {
        const char *s = prof_name_str(p, id);
        if ((plain[id] = prof_name_intern(g, s, frame_strip_jit(s, p->names[id].len))) == NONE) {
            rc = fail_oom(err);
            goto out;
        }
    }
    if (g->nnames == nn) /* every name is its own plain form's only one */
        goto out;
    members = calloc(g->nnames, sizeof *members);
    cand = calloc(p->nstacks ? p->nstacks : 1, sizeof *cand);
    if (!members || !cand) {
        rc = fail_oom(err);
        goto out;
    }
    for (uint32_t id = 0; id < nn; id++)
        members[plain[id]]++;

    /* 2. the as-read graph of the stacks that hold a shared plain form */
    t.mask = 1023;
    if (!(t.tab = alloc_zalloc((t.mask + 1) * sizeof *t.tab))) {
        rc = fail_oom(err);
        goto out;
    }
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        for (uint32_t i = 0; i < st->depth && !cand[k]; i++)
            cand[k] = members[plain[ids[i]]] > 1;
        if (!cand[k])
            continue;
        if (st->depth > maxdepth)
            maxdepth = st->depth;
        uint32_t parent = NONE;
        for (uint32_t i = 0; i < st->depth; i++)
            if ((parent = trie_step(&t, parent, plain[ids[i]], ids[i])) == NONE) {
                rc = fail_oom(err);
                goto out;
            }
    }
    for (size_t i = 0; i < t.len && !differ; i++)
        differ = !t.n[i].agree;
    if (!differ) /* every frame agrees on its marks: matching changes nothing */
        goto out;

    /* 3. the stacks again, each frame under its agreed name or its plain one */
    q = profile_new();
    seq = malloc((size_t)maxdepth * sizeof *seq);
    plain_in_q = malloc(g->nnames * sizeof *plain_in_q);
    if (!q || !seq || !plain_in_q) {
        rc = fail_oom(err);
        goto out;
    }
    memset(plain_in_q, 0xff, g->nnames * sizeof *plain_in_q);
    for (uint32_t id = 0; id < nn; id++) /* same ids in q: names are distinct, q is empty */
        if (prof_name_intern(q, prof_name_str(p, id), p->names[id].len) != id) {
            rc = fail_oom(err);
            goto out;
        }
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        if (cand[k]) {
            uint32_t parent = NONE;
            for (uint32_t i = 0; i < st->depth; i++) {
                uint32_t pl = plain[ids[i]];
                parent = trie_find(&t, parent, pl);
                const node *x = &t.n[parent];
                if (x->agree) {
                    seq[i] = x->exact;
                    continue;
                }
                if (plain_in_q[pl] == NONE &&
                    (plain_in_q[pl] =
                         prof_name_intern(q, prof_name_str(g, pl), g->names[pl].len)) == NONE) {
                    rc = fail_oom(err);
                    goto out;
                }
                seq[i] = plain_in_q[pl];
            }
            ids = seq;
        }
        if (prof_stack_add_deep(q, ids, st->depth, st->count, st->before) < 0) {
            rc = fail_oom(err);
            goto out;
        }
    }
    q->columns = p->columns;
    *merged = p->nstacks - q->nstacks;
    *out = q;
    q = NULL;
out:
    profile_free(q);
    profile_free(g);
    trie_free(&t);
    return rc;
}
