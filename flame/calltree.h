/* A profile as a call tree, for viewers that draw it themselves (the page of `docker flame
 * serve`): nodes in preorder with their offset, total and self, cut to a node budget with what
 * was cut summed into one "other" node per parent (and said: how many nodes, how many samples);
 * optionally only the subtree under a path of frames (zooming into a cut graph). Beside it, the
 * exact figures a cut tree cannot give: the samples under frames whose name matches a search,
 * and a function's callers and callees ("sandwich"), each as a profile of its own. Pure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "flame/profile.h"

/* calltree_node.name of a node standing for siblings the budget cut. */
#define CALLTREE_OTHER UINT32_MAX
#define CALLTREE_NONE UINT32_MAX

typedef struct calltree_node {
    uint32_t name;      /* a name of the tree (calltree_name), or CALLTREE_OTHER */
    uint32_t parent;    /* index of the parent node; CALLTREE_NONE for the root */
    uint32_t depth;     /* the root ("all") is 0 */
    uint32_t cut;       /* CALLTREE_OTHER: the nodes it stands for (their subtrees included) */
    double x;           /* offset of its left edge from the root's, in counts (the last column) */
    double total, self; /* the last column: the only one, or a diff's "after" */
    double total_before, self_before; /* a differential's first column; 0 otherwise */
} calltree_node;

typedef struct calltree {
    const profile *p; /* the names are p's: p must outlive the tree */
    calltree_node *node;
    size_t n;         /* node[0] is the root; preorder, children in name order, then
                       * "other"; a parent's self comes before its children (x) */
    size_t path;      /* nodes 1..path are the path asked for (calltree_opts.path) */
    size_t full;      /* nodes before the cut, the root not counted */
    size_t cut;       /* nodes the cut left out */
    double cut_total; /* the samples of the "other" nodes */
    bool diff;        /* two columns */
    double maxdelta;  /* the largest |self - self_before| of any node, before the cut */
} calltree;

typedef struct calltree_opts {
    /* Nodes kept besides the root and the path: the largest (by total, or by the larger column
     * of a differential), a parent always kept with its child. 0 = every node. */
    size_t max_nodes;
    /* Only the stacks that start with these frames ("a;b;c", full names as in the profile);
     * NULL or "" = all. The tree's root then totals those stacks. */
    const char *path;
} calltree_opts;

/* Build the tree of p. 0, or -1 with err (out of memory). A path that no stack starts with
 * gives a tree of its root alone (total 0). Free with calltree_free. */
int calltree_build(const profile *p, const calltree_opts *o, calltree *out, flame_err *err);
void calltree_free(calltree *t); /* NULL-safe; the tree can be built again */

/* A node's name: the profile's bytes (not NUL-terminated in general: use len), and *shown the
 * length without the annotation folding appends (_[j], _[i], _[k], _[w], _[int]: what labels and
 * searches read, flame/frame.h). "all" for the root, NULL for CALLTREE_OTHER. */
const char *calltree_name(const calltree *t, const calltree_node *nd, size_t *len, size_t *shown);
/* The colour (0xRRGGBB) the CLI's SVG gives the node: the palette's (flame/palette.h, by name;
 * pal_name: its name, NULL = "hot") or, in a differential, red grew / blue shrank by its self
 * change against the largest one. "other" nodes are grey. -1 for an unknown palette. */
int64_t calltree_colour(const calltree *t, const calltree_node *nd, const char *pal_name);

/* A frame name test: the name as shown (annotation stripped). */
typedef bool (*calltree_match_fn)(void *ctx, const char *name, size_t len);
/* The samples (last column; *before: the first, may be NULL) of the stacks in which some frame
 * matches, each stack once, exactly (no cut): the "Matched" share of a search. Every distinct
 * name is tested once. */
int calltree_search(const profile *p, calltree_match_fn match, void *ctx, double *matched,
                    double *before, flame_err *err);

/* The sandwich of function fn (a name as shown: annotations stripped, so fn_[j] and fn_[i] are
 * one function): *callers holds, for every stack containing it, "fn;caller;...;outermost" (the
 * frames above its outermost occurrence, nearest first), *callees "fn;callee;...;leaf" (the
 * frames below that occurrence); both total the stacks containing fn, each once, and keep p's
 * columns. *self: the samples of stacks whose leaf is fn (may be NULL). Stacks without fn are
 * left out; both profiles are empty when none has it. Caller frees both. */
int calltree_sandwich(const profile *p, const char *fn, size_t len, profile **callers,
                      profile **callees, double *self, flame_err *err);

/* A copy of p (names, stacks, both columns): diff_new() consumes its inputs, a cached profile
 * is not to be consumed. Caller frees. */
int calltree_copy(const profile *p, profile **out, flame_err *err);
