/* The CLI layer's shared pieces. Each verb (plugin/cmd_*.c) is a main() for itself: it parses
 * its options with common/args.c, runs, and is the only place that prints its messages, always
 * as one line "docker flame[ VERB]: <message>" on stderr; everything below it returns errors. */
#pragma once
#include <stdbool.h>

#include "common/args.h"
#include "common/err.h"

/* Print err as the verb's one error line; returns its exit code (FLAME_EXIT_ERROR if unset).
 * verb "" is the profile verb ("docker flame: ..."). */
int cli_fail(const char *verb, const flame_err *err);
/* A usage error in the same form, with the --help hint; returns FLAME_EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A finite number in [lo, hi], the whole string; false otherwise. */
bool cli_parse_num(const char *s, double lo, double hi, double *out);
