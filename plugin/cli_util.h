/* Helpers shared by the pure-code verbs' main()s (plugin/cmd_*.c): the one usage line, numbers
 * from the command line. */
#pragma once
#include <stdbool.h>

/* "docker flame VERB: <message> (see docker flame VERB --help)" on stderr; returns
 * FLAME_EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A finite number in [lo, hi], the whole string; false otherwise. */
bool cli_parse_num(const char *s, double lo, double hi, double *out);
