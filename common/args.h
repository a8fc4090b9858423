/* One command-line grammar for every docker-flame verb and for the sidecar's own command line
 * (common/contract.c): each verb declares its options in a table, one function parses them, so
 * the rules are the same everywhere:
 *   --name VALUE, --name=VALUE, -x VALUE, -xVALUE; a flag takes no value and flags cluster
 *   (-qv); options and operands interleave, as docker's own commands allow; "--" ends the
 *   options; long names are exact (no abbreviations); a verb may also accept them with one dash
 *   (flamegraph.pl's -title) when it says so (ARGS_SINGLE_DASH_LONG).
 * Every value is checked by its kind and stored in the verb's struct (the table says where), and
 * every error is one line,
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
#define ARG_SET 4u    /* ARG_FLAG: store `set` into an int instead of true into a bool */

/* The value of one occurrence, already checked. */
typedef struct arg_val {
    const char *str; /* the text as given (NULL for flags) */
    int64_t i;       /* ARG_INT */
    double num;      /* ARG_NUM */
    uint64_t ms;     /* ARG_DURATION */
    int choice;      /* ARG_CHOICE: index into choices */
} arg_val;

/* One option. Its value is stored at `off` (offsetof) in the verb's struct, by kind:
 *   ARG_FLAG: bool = true (with ARG_SET: int = set)   ARG_STR: const char * (points into argv)
 *   ARG_INT: int64_t   ARG_NUM: double   ARG_DURATION: uint64_t (ms)
 *   ARG_CHOICE: int (the index); with ARG_LIST: unsigned (one bit per choice given)
 * or, when `store` is set, handed to it instead (validation beyond the kind's, or an option that
 * sets several fields); `store` gets the base of the struct the offset is relative to. */
typedef struct arg_spec {
    const char *lng; /* long name without dashes */
    char shrt;       /* short letter, 0 for none */
    arg_kind kind;
    size_t off;
    int set;
    const char *meta; /* value placeholder in --help ("DURATION"); NULL for flags */
    const char *help; /* may hold '\n' for more lines */
    double lo, hi;    /* ARG_INT, ARG_NUM; ARG_DURATION in ms */
    /* ARG_CHOICE: the values, NULL-terminated. ARG_STR: values offered by shell completion
     * (not enforced here; the spec's store() checks, e.g. palettes) */
    const char *const *choices;
    unsigned flags;
    int (*store)(void *base, const arg_val *v, flame_err *err);
    /* What a value is, for shell completion (plugin/complete.c): "file", "dir", NULL = nothing */
    const char *complete;
} arg_spec;

/* offsetof(type, field), refused at compile time unless the field has type T: a table entry
 * whose kind stores an int64_t cannot point at an int. */
#define ARG_FIELD(type, field, T)                                                                  \
    __builtin_choose_expr(__builtin_types_compatible_p(__typeof__(((type *)0)->field), T),         \
                          offsetof(type, field), (void)0)

/* Operands (arguments that are not options), collected in order. */
#define ARGS_MAX_OPERANDS 64
typedef struct args_operands {
    const char *v[ARGS_MAX_OPERANDS];
    int n;
} args_operands;
#define ARGS_NO_OPERANDS ((size_t)-1)

#define ARGS_SINGLE_DASH_LONG 1u /* -title works like --title (flamegraph.pl's spelling) */
/* the first operand ends the options (it and the rest are operands) */
#define ARGS_STOP_AT_OPERAND 2u

/* A table several verbs share (the graph options of plugin/graph.c, the recording options of
 * common/contract.h): its offsets are relative to the struct at `off` in the verb's. */
typedef struct args_group {
    const arg_spec *specs;
    size_t n, off;
} args_group;
#define ARGS_MAX_GROUPS 2

typedef struct args_verb {
    const char *name; /* "docker flame render": named in every message's --help hint */
    const arg_spec *specs;
    size_t nspecs;
    unsigned flags;
    /* the shared tables it takes too, after specs, in this order (unused ones have n = 0) */
    args_group groups[ARGS_MAX_GROUPS];
    /* where the operands go (an args_operands), or ARGS_NO_OPERANDS: any operand is an error */
    size_t operands_off;
} args_verb;

/* Parse argv[0..argc) (argv[0] is the first argument, not the verb) into the struct at dest.
 * With rest, "--" ends the parse: *rest is then the index just after it, or -1 when there was
 * none; without rest, what follows "--" is operands. Errors are FLAME_EXIT_USAGE, one line. */
int args_parse(const args_verb *v, int argc, char **argv, void *dest, int *rest, flame_err *err);

/* A verb's own error in the same form: "<message> (see `<verb> --help`)", FLAME_EXIT_USAGE. */
int args_error(const args_verb *v, flame_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The i-th option of the verb: its own, then those of its groups; NULL past the last. */
const arg_spec *args_spec(const args_verb *v, size_t i);
/* The option named --name (n bytes of it) or -c in v's table (its own, then the shared one), or
 * NULL. */
const arg_spec *args_find_long(const args_verb *v, const char *name, size_t n);
const arg_spec *args_find_short(const args_verb *v, char c);

/* The options part of --help, from the table: "  -d, --duration DURATION  help..." */
void args_help(const args_verb *v, FILE *out);

/* A duration as ARG_DURATION reads it: bare numbers are seconds; units ms, s, m, h, d, summed
 * ("1m30s"); fractions allowed ("1.5s"); result rounded to whole ms. -1 on bad syntax. */
int args_duration_ms(const char *s, uint64_t *out);
/* "1m30s", "500ms", "2h", "0": the shortest text that args_duration_ms() reads back. */
void args_format_duration(uint64_t ms, char *buf, size_t cap);
