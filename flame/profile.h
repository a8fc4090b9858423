/* A profile: folded stacks with one count column (normal) or two (differential: before, after).
 * Loaded from folded text, from an SVG written by docker-flame (which embeds its folded data),
 * or built by adding stacks. The input to every renderer and exporter. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

typedef struct profile profile;

profile *profile_new(void); /* NULL on OOM */
void profile_free(profile *p);
/* "a;b;c 12" or (differential) "a;b;c 10 12". Identical stacks are summed. */
int profile_add_line(profile *p, const char *line, size_t len, flame_err *err);
int profile_add(profile *p, const char *stack, size_t len, double count1, double count2);
/* Read a whole input: folded text (1 or 2 columns) or a docker-flame SVG. `name` is used in
 * error messages ("<name>: line 3: no count"). */
int profile_load(profile *p, FILE *in, const char *name, flame_err *err);
int profile_load_path(profile *p, const char *path, flame_err *err); /* "-" = stdin */
bool profile_is_diff(const profile *p);
double profile_total(const profile *p); /* sum of the (last) count column */
size_t profile_stacks(const profile *p);
/* Folded text, sorted by stack, one line per stack. */
int profile_write_folded(const profile *p, FILE *out, flame_err *err);

/* Self time per frame name (leaf frames), the n largest, for summaries. java_only keeps frames
 * that look like Java methods. Fills names/counts (names point into p; valid while p lives). */
size_t profile_top_self(const profile *p, size_t n, bool java_only, const char **names,
                        double *counts);
