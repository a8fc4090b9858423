/* `docker flame --help` (also `docker help flame`, and a bare `docker flame` on stderr): the
 * profile verb's options and every other verb of the table, one line each (plugin/usage.c). */
#pragma once
#include <stddef.h>
#include <stdio.h>

#include "plugin/verbs.h"

/* verbs: the verb table (flame_verbs, flame_nverbs), given by the caller so that this file does
 * not reach back into the table that dispatches to the help verb. */
void flame_usage(FILE *out, const flame_verb *verbs, size_t nverbs);
