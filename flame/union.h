/* Adding one profile to another (flame/ internal): the union under diff_new() and the sum under
 * diff_merge(). Counts are multiplied by factor (rounded to integers when round is set) and go
 * into column 0 (before), 1 (after) or -1 (the only column). */
#pragma once
#include <stdbool.h>

#include "common/err.h"
#include "flame/profile.h"

/* By frame ids: a stack dst already has is found through dst's own stack table (no text, no
 * re-interning), by two threads at once; only the stacks dst lacks are added, afterwards and on
 * one thread, their new names interned into dst. */
int union_add_ids(profile *dst, const profile *src, int column, double factor, bool round,
                  flame_err *err);
/* As text, every stack through profile_add() (strip: with frame_strip_hex applied first). */
int union_add_text(profile *dst, const profile *src, int column, double factor, bool round,
                   bool strip, flame_err *err);
/* Make a one-column profile two-column in place, its counts in column `column` (0 or 1). */
void union_two_columns(profile *p, int column);
