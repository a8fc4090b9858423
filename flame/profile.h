/* A profile: folded stacks with one count column (normal) or two (differential: before, after).
 * Loaded from folded text, from an SVG written by docker-flame (which embeds its folded data),
 * or built by adding stacks. The input to every renderer and exporter. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

typedef struct profile profile;

profile *profile_new(void); /* NULL on OOM */
void profile_free(profile *p);
/* "a;b;c 12" or (differential) "a;b;c 10 12". Identical stacks are summed. */
int profile_add_line(profile *p, const char *line, size_t len, flame_err *err);
/* One stack ("a;b;c", frames separated by ';'). Single-column profiles pass count2 =
 * PROFILE_ONE_COLUMN (any negative value or NaN); differentials pass before (count1) and after
 * (count2). A profile is single- or two-column from its first stack on; mixing is an error
 * (-1, errno EINVAL), as are empty stacks, negative or non-finite counts. -1/ENOMEM on OOM. */
#define PROFILE_ONE_COLUMN (-1.0)
int profile_add(profile *p, const char *stack, size_t len, double count1, double count2);
/* The same for a single-column profile whose stack's frames are already names of p: ids from
 * profile_name() (UINT32_MAX: out of memory), root first. Adds what profile_add() of the text
 * "name0;name1;..." would when no name is empty or holds a ';' (the caller checks that): a
 * reader naming many stacks from a dictionary interns each frame once instead of once a stack.
 * The same errors (EINVAL, E2BIG, ENOMEM). */
uint32_t profile_name(profile *p, const char *name, size_t len);
int profile_add_names(profile *p, const uint32_t *ids, size_t n, double count);
/* Read a whole input: folded text (1 or 2 columns) or a docker-flame SVG. `name` is used in
 * error messages ("<name>: line 3: no count"). */
int profile_load(profile *p, FILE *in, const char *name, flame_err *err);
int profile_load_path(profile *p, const char *path, flame_err *err); /* "-" = stdin */
/* Longest accepted input line; longer lines are an error naming the line. */
#define PROFILE_MAX_LINE (16u << 20)
/* Deepest accepted stack. perf records 127 frames by default (kernel.perf_event_max_stack); each
 * level is a row of the graph, and a hostile 16 MiB line "a;a;a..." would otherwise make a graph
 * millions of rows high. profile_add() fails with errno E2BIG. */
#define PROFILE_MAX_DEPTH 8192
/* Flame charts need the input order of lines, not summed stacks: call before loading to keep
 * it (costs 24 bytes per input line). render_svg() with flamechart uses it when present. */
void profile_keep_order(profile *p, bool keep);
double profile_total_before(const profile *p); /* differential: sum of the first column */
bool profile_is_diff(const profile *p);
double profile_total(const profile *p); /* sum of the (last) count column */
size_t profile_stacks(const profile *p);
/* Folded text, sorted by stack, one line per stack. */
int profile_write_folded(const profile *p, FILE *out, flame_err *err);
/* Each stack in insertion order: its folded text "a;b;c" (not NUL-terminated, valid during the
 * call) and its count (the last column). Stops at fn's first nonzero result and returns it;
 * -1/ENOMEM. (flame/profile_each.c) */
typedef int (*profile_stack_fn)(void *ctx, const char *stack, size_t len, double count);
int profile_each_stack(const profile *p, profile_stack_fn fn, void *ctx);
