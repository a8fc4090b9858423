/* Frame names of the folder (flame/fold_tidy.c): one piece of a frame line's symbol tidied as
 * stackcollapse-perf.pl does, or as our dialect does (Java signatures, annotations). Used by
 * fold.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "flame/fold.h"
#include "flame/fold_parse.h"

/* Tidy one piece of a frame line's symbol (index = its position in the "->" chain) into *buf
 * (grown as needed, capacity *cap): the name's length, or -1 when out of memory. */
long fold_tidy_piece(const fold_opts *o, char **buf, size_t *cap, const frame_line *fl, span piece,
                     size_t index, bool java_comm, bool perfmap);
/* Perl's generic tidy: cut from the first '(' (Go methods and "(anonymous namespace)" kept). */
size_t fold_cut_params_generic(char *b, size_t n);
