/* One command-line grammar for every docker-flame verb and for the sidecar's own command line
 * (common/contract.c): each verb declares its options in a table, one function parses them, so
 * the rules are the same everywhere:
 *   --name VALUE, --name=VALUE, -x VALUE, -xVALUE; a flag takes no value and flags cluster
 *   (-qv); options and operands interleave, as docker's own commands allow; "--" ends the
 *   options; long names are exact (no abbreviations); a verb may also accept them with one dash
 *   (flamegraph.pl's -title) when it says so (ARGS_SINGLE_DASH_LONG).
 * Every value is checked by its kind before the verb sees it, and every error is one line,
 * "<flag>: <what is wrong and what is wanted> (see `<verb> --help`)", which the verb prints
 * after its own name. The same tables write the options part
 * of --help, so help text and parser cannot drift apart. Pure code: no I/O but the FILE given. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

typedef enum arg_kind {
    ARG_FLAG,     /* no value */
    ARG_STR,      /* any non-empty string */
    ARG_INT,      /* whole number in [lo, hi] */
    ARG_NUM,      /* finite number in [lo, hi] */
    ARG_DURATION, /* "30", "30s", "500ms", "2m", "1m30s", "1h", "7d" -> ms in [lo, hi] */
    ARG_CHOICE,   /* one of choices[] ("a,b" lists too when ARG_LIST is set) */
} arg_kind;

/* spec flags */
#define ARG_LIST 1u   /* ARG_CHOICE: a comma-separated list, each checked; repeatable */
#define ARG_HIDDEN 2u /* parsed, not listed in --help (aliases, test hooks) */

typedef struct arg_spec {
    const char *lng; /* long name without dashes */
    char shrt;       /* short letter, 0 for none */
    arg_kind kind;
    int id;                     /* handed to the verb's callback */
    const char *meta;           /* value placeholder in --help ("DURATION"); NULL for flags */
    const char *help;           /* may hold '\n' for more lines */
    double lo, hi;              /* ARG_INT, ARG_NUM; ARG_DURATION in ms */
    const char *const *choices; /* ARG_CHOICE: NULL-terminated */
    unsigned flags;
    /* What a value is, for shell completion: "file", "dir", "container", NULL = nothing */
    const char *complete;
} arg_spec;

/* The value of one occurrence, already checked. */
typedef struct arg_val {
    const char *str; /* the text as given (always set, except for flags) */
    long long i;     /* ARG_INT */
    double num;      /* ARG_NUM */
    uint64_t ms;     /* ARG_DURATION */
    int choice;      /* ARG_CHOICE: index into choices (each list element calls back once) */
} arg_val;

#define ARGS_SINGLE_DASH_LONG 1u /* -title works like --title (flamegraph.pl's spelling) */
#define ARGS_STOP_AT_OPERAND                                                                       \
    2u /* the first operand ends the options (it and the rest are operands) */

typedef struct args_verb {
    const char *name; /* "docker flame render": named in every message's --help hint */
    const arg_spec *specs;
    size_t nspecs;
    unsigned flags;
    /* options several verbs share (e.g. the graph options of plugin/graph.c), after specs */
    const arg_spec *shared;
    size_t nshared;
} args_verb;

/* Called for each option in order (also for -h/--help when the table has it). A negative return
 * stops parsing; err must then be set. */
typedef int (*args_opt_fn)(void *ctx, const arg_spec *spec, const arg_val *v, flame_err *err);
/* Called for each operand (argument that is not an option). */
typedef int (*args_operand_fn)(void *ctx, const char *operand, flame_err *err);

/* Parse argv[0..argc) (argv[0] is the first argument, not the verb). With rest, "--" ends the
 * parse: *rest is then the index just after it, or -1 when there was none; without rest, what
 * follows "--" is operands. Errors are FLAME_EXIT_USAGE. */
int args_parse(const args_verb *v, int argc, char **argv, args_opt_fn on_opt,
               args_operand_fn on_operand, void *ctx, int *rest, flame_err *err);

/* The options part of --help, from the table: "  -d, --duration DURATION  help..." */
void args_help(const args_verb *v, FILE *out);

/* A duration as ARG_DURATION reads it: bare numbers are seconds; units ms, s, m, h, d, summed
 * ("1m30s"); fractions allowed ("1.5s"); result rounded to whole ms. -1 on bad syntax. */
int args_duration_ms(const char *s, uint64_t *out);
/* "1m30s", "500ms", "2h", "0": the shortest text that args_duration_ms() reads back. */
void args_format_duration(uint64_t ms, char *buf, size_t cap);
