/* Which stacks of a diff or a merge are the same stack: matched as the user reads them, or
 * exactly as folded. Folding marks what the JIT made of each Java frame (_[j] compiled, _[i]
 * inlined, _[int] interpreted; flame/frame.h). Unchanged code gets other marks from one run to
 * the next: the JIT compiles and inlines by what it has seen so far, and recompiles. Labels and
 * tooltips never show the marks, so two stacks that differ only in them look identical, and a
 * diff matching them exactly shows one method as two towers, one grown and one shrunk. Matching
 * as read (the default of diff and merge) makes such stacks one. Pure code (docs/DIFF.md
 * "Matching frames"). */
#pragma once
#include "common/err.h"
#include "flame/profile.h"

/* The stacks of p matched as read: stacks equal once the JIT marks are dropped become one, their
 * counts (both columns) summed. Each frame of the graph keeps its mark where every stack through
 * it agrees on one, and is shown plain where they disagree, so a method that was inlined in one
 * profile and compiled in the other is drawn once, and one compiled in both stays green.
 * *out = NULL when nothing changes: p is matched as read already (no two of its stacks differ only
 * in the marks; checked from the names alone when no name shares its plain form with another).
 * Otherwise *out is a new profile (p is not changed) and *merged the number of p's stacks that
 * became part of another's. 0, or -1 on OOM. */
int match_as_read(const profile *p, profile **out, size_t *merged, flame_err *err);
