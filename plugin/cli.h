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
/* The --help entry of a verb's table; offset: its bool. */
#define CLI_HELP_SPEC(offset)                                                                      \
    {                                                                                              \
        .lng = "help", .shrt = 'h', .kind = ARG_FLAG, .off = (offset), .help = "this help"         \
    }
/* A verb's grammar: its table and where its operands go (ARGS_NO_OPERANDS: none). */
#define CLI_VERB(vname, table, operands)                                                           \
    {                                                                                              \
        .name = vname, .specs = table, .nspecs = sizeof table / sizeof *table,                     \
        .operands_off = (operands)                                                                 \
    }
/* Parse argv (argv[0] is the verb) into dest; when that set *help, print head, the options and
 * tail on stdout. -1: go on; else the exit code to return (0 after --help, 2 after a bad command
 * line, whose line is printed). */
int cli_parse(const char *verb, const args_verb *v, int argc, char **argv, void *dest,
              const bool *help, const char *head, const char *tail);
/* A finite number in [lo, hi], the whole string; false otherwise. */
bool cli_parse_num(const char *s, double lo, double hi, double *out);
