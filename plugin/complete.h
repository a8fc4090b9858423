/* Shell completion for `docker flame`, in cobra's protocol (what the Docker CLI and its bash, zsh
 * and fish scripts speak to a plugin): the plugin runs as
 *     docker-flame __complete flame WORD... CURRENT        (Docker CLI >= 23, any shell)
 *     docker-flame __completeNoDesc WORD... CURRENT        (Debian's bash script of CLI 20.10)
 * and prints one candidate a line ("name" or "name\tdescription"), then ":DIRECTIVE".
 * Everything is derived from the verbs' option tables (plugin/verbs.h, common/args.h): verbs,
 * flags, choice values, palettes, which values are files; the dynamic part (running containers,
 * what the profile store holds) is fetched by flame_cmd_complete. The planner is pure code. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "plugin/verbs.h"

/* cobra's ShellCompDirective bits */
#define CMPL_ERROR 1u
#define CMPL_NOSPACE 2u
#define CMPL_NOFILE 4u       /* do not fall back to file names */
#define CMPL_FILTER_DIRS 16u /* directory names only */
#define CMPL_KEEP_ORDER 32u  /* as given (running JVM containers first) */

/* What to fetch besides the static candidates. */
#define CMPL_SRC_RUNNING 1u      /* running containers whose name starts with prefix */
#define CMPL_SRC_STORED 2u       /* containers in the profile store */
#define CMPL_SRC_STORED_RANGE 4u /* stored ranges of range_name: "NAME@..." */
#define CMPL_SRC_STORED_AT 8u    /* stored containers as "NAME@" (a range follows) */

typedef struct cmpl_item {
    char *name; /* malloc'd */
    char *desc; /* malloc'd, or NULL; printed on one line */
} cmpl_item;

#define CMPL_MAX_ITEMS 512
typedef struct cmpl_plan {
    cmpl_item items[CMPL_MAX_ITEMS];
    size_t n;
    unsigned directive;
    unsigned sources;
    const char *prefix;    /* what the dynamic candidates must start with (points into argv) */
    char range_name[256];  /* CMPL_SRC_STORED_RANGE: the container before '@' */
    const char *store_url; /* --store given on the line (show, ls), else NULL */
    /* no candidate found: let the shell complete file names (diff/merge inputs may be files) */
    bool files_if_empty;
} cmpl_plan;

/* words: what follows "flame" (the last one is the word being completed, maybe ""). Fills p
 * (zero it first; cmpl_plan_free after). Never fails: no candidates at worst. */
void cmpl_plan_words(int n, char **words, cmpl_plan *p);
/* Add a candidate (name copied) when it starts with prefix and has only bytes no shell expands
 * ([A-Za-z0-9_.,:=@+/-]); false when full. */
bool cmpl_add(cmpl_plan *p, const char *prefix, const char *name, const char *desc);
/* Does name follow Docker's container name grammar ([a-zA-Z0-9][a-zA-Z0-9_.-]+)? Names from the
 * engine and the profile store are offered only then: a store file can come from anyone. */
bool cmpl_docker_name(const char *name);
/* Print the candidates and the directive in cobra's format; descriptions unless nodesc. */
void cmpl_print(const cmpl_plan *p, bool nodesc, FILE *out);
void cmpl_plan_free(cmpl_plan *p);

/* The hidden verb: argv[0] is "__complete" or "__completeNoDesc". Always exits 0. */
int flame_cmd_complete(int argc, char **argv);
