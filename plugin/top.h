/* `docker flame top [OPTIONS] CONTAINER`: a live view of the hottest methods (docs/TOP.md).
 * Runs the same sidecar as profiling (session.c) with the `top` command and shows its windows
 * (protocol tag T) with ncurses, or as plain snapshots when stdout is not a terminal. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "plugin/endpoint.h"
#include "plugin/engine.h"

/* ---- aggregation over a set of folded stacks (pure, unit-testable) ---- */
typedef struct top_row {
    char *name;         /* frame name (owned by the table) */
    double self, total; /* samples */
    char where[96];     /* JVM/thread with the largest share of this frame */
    double where_best;
    unsigned stamp; /* internal: last stack counted in total */
} top_row;

typedef struct top_table {
    top_row *rows;
    size_t n, cap;
    size_t *slots; /* hash -> row index + 1 */
    size_t nslots;
    double samples;
} top_table;

void top_table_clear(top_table *t);
/* Add one folded stack ("root;...;leaf", no count). roots = number of leading frames that name
 * the JVM/thread (1, or 2 with several JVMs); java_only: self goes to the innermost Java frame,
 * total counts Java frames only. Returns 0 or -1 (out of memory). */
int top_table_add(top_table *t, const char *stack, size_t len, double count, int roots,
                  bool java_only);
/* Callers of `method`: each stack containing it adds its count once to the frame above its
 * innermost occurrence ("(root)" when there is none). */
int top_table_add_callers(top_table *t, const char *stack, size_t len, double count, int roots,
                          bool java_only, const char *method);
/* Sort rows by self (by_total false) or total, descending. */
void top_table_sort(top_table *t, bool by_total);
/* Does this frame name look like a Java method ("pkg.Class.method", maybe with "_[i]")? */
bool top_is_java(const char *frame, size_t len);
