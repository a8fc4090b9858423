/* The verbs of `docker flame`, in one table: main() dispatches through it, `docker flame --help`
 * lists it, and shell completion (plugin/complete.c) offers its names and reads each verb's
 * grammar from it. */
#pragma once
#include <stddef.h>

#include "common/args.h"
#include "plugin/engine/endpoint.h"

/* What a verb's operands are, for completion. */
typedef enum verb_operands {
    OPS_NONE,    /* gc, prune */
    OPS_RUNNING, /* running containers: profile, top, record */
    OPS_FILE,    /* a file or - : fold, render */
    OPS_INPUT,   /* a file, a running container or a stored range NAME@SINCE..UNTIL: diff, merge */
    OPS_STORED,  /* containers the profile store holds: show, ls */
} verb_operands;

typedef struct flame_verb {
    const char *name;
    int (*run)(const ep_globals *g, int argc, char **argv); /* argv[0] is the verb */
    const args_verb *grammar;
    verb_operands operands;
    const char *summary; /* for --help and completion; '\n' continues on the next line */
} flame_verb;

extern const flame_verb flame_verbs[];
extern const size_t flame_nverbs;
/* The profile verb (`docker flame [OPTIONS] CONTAINER...`): no name of its own, so not in the
 * table; defined with its verb (plugin/cmd_profile.c). */
extern const flame_verb flame_profile_verb;
/* By name; NULL when name is not a verb (it is then the profile verb's option or container). */
const flame_verb *flame_verb_find(const char *name);
