/* Shell completion, the planner (plugin/complete.h): which candidates the words typed so far call
 * for, read from the verbs' own option tables. Pure code; flame_cmd_complete (cmd_complete.c)
 * adds what needs the engine or the store and prints. */
#include "plugin/complete.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Bytes no shell gives a meaning to inside a word: a candidate with any other byte is left out.
 * Debian's bash script for CLI 20.10 (and cobra's when no candidate has a description) runs
 * COMPREPLY=( $(compgen -W "$result" ...) ), and compgen -W expands every word: "$(cmd)",
 * backticks, ${...}, quotes, globs. Our own candidates (verbs, flags, choices) never need more. */
static bool shell_inert(const char *s)
{
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:=@+/-", *s))
            return false;
    return true;
}

bool cmpl_docker_name(const char *name)
{
    /* Docker's container name grammar: [a-zA-Z0-9][a-zA-Z0-9_.-]+ */
    size_t n = strlen(name);
    if (n < 2 || n > 255 || !isalnum((unsigned char)name[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
            return false;
    return true;
}

bool cmpl_add(cmpl_plan *p, const char *prefix, const char *name, const char *desc)
{
    if (strncmp(name, prefix, strlen(prefix)))
        return true;
    /* One candidate a line, "\t" before the description: a name with a space, a tab, a newline
     * or a control byte (a hostile label from the store) would break the protocol, or be
     * inserted as two words; a '$', '`', ';', quote, parenthesis or backslash would be run by
     * compgen -W. Docker's own names never have any. */
    if (!*name || !shell_inert(name) || p->n >= CMPL_MAX_ITEMS)
        return p->n < CMPL_MAX_ITEMS;
    char *copy = strdup(name), *dcopy = desc ? strdup(desc) : NULL;
    if (!copy || (desc && !dcopy)) {
        free(copy);
        free(dcopy);
        return false;
    }
    p->items[p->n++] = (cmpl_item){.name = copy, .desc = dcopy};
    return true;
}

/* The values of option s; val: what is typed of it, lead: "--format=" when typed in one word. */
static void complete_value(cmpl_plan *p, const arg_spec *s, const char *val, const char *lead)
{
    if (s->complete && !strcmp(s->complete, "file")) {
        p->directive = 0; /* the shell's own file-name completion */
        return;
    }
    if (s->complete && !strcmp(s->complete, "dir")) {
        p->directive = CMPL_FILTER_DIRS;
        return;
    }
    p->directive = CMPL_NOFILE; /* numbers, durations, free text: nothing to offer */
    if (!s->choices)
        return;
    /* A list ("svg,folded"): complete the item after the last comma, keeping those before. */
    const char *comma = (s->flags & ARG_LIST) ? strrchr(val, ',') : NULL;
    size_t head = comma ? (size_t)(comma + 1 - val) : 0;
    char typed[512], cand[512];
    snprintf(typed, sizeof typed, "%s%s", lead, val);
    for (size_t i = 0; s->choices[i]; i++) {
        snprintf(cand, sizeof cand, "%s%.*s%s", lead, (int)head, val, s->choices[i]);
        if (!cmpl_add(p, typed, cand, NULL))
            return;
    }
}

static void complete_flags(cmpl_plan *p, const args_verb *v, const char *cur)
{
    const arg_spec *s;
    char name[80];
    p->directive = CMPL_NOFILE;
    for (size_t i = 0; (s = args_spec(v, i)); i++) {
        if (s->flags & ARG_HIDDEN)
            continue;
        snprintf(name, sizeof name, "--%s", s->lng);
        cmpl_add(p, cur, name, s->help);
        /* cobra offers the short forms for a lone "-" only: "--" lists the long names */
        if (s->shrt && !strcmp(cur, "-")) {
            snprintf(name, sizeof name, "-%c", s->shrt);
            cmpl_add(p, cur, name, s->help);
        }
    }
}

static void complete_operand(cmpl_plan *p, const flame_verb *v, const char *cur)
{
    p->prefix = cur;
    switch (v->operands) {
    case OPS_NONE:
        p->directive = CMPL_NOFILE;
        return;
    case OPS_FILE:
        p->directive = 0;
        return;
    case OPS_RUNNING:
        p->sources |= CMPL_SRC_RUNNING;
        p->directive = CMPL_NOFILE | CMPL_KEEP_ORDER;
        return;
    case OPS_STORED:
        p->sources |= CMPL_SRC_STORED;
        p->directive = CMPL_NOFILE;
        return;
    case OPS_INPUT: {
        /* A path is a file; "NAME@" starts a stored range; anything else may be any of the
         * three: containers and stored names are offered, files when none matches. */
        const char *at = strchr(cur, '@');
        if (strchr(cur, '/') || cur[0] == '.' || cur[0] == '~') {
            p->directive = 0;
        } else if (at) {
            snprintf(p->range_name, sizeof p->range_name, "%.*s", (int)(at - cur), cur);
            p->sources |= CMPL_SRC_STORED_RANGE;
            p->directive = CMPL_NOFILE | CMPL_KEEP_ORDER;
        } else {
            p->sources |= CMPL_SRC_RUNNING | CMPL_SRC_STORED_AT;
            p->directive = CMPL_KEEP_ORDER;
            p->files_if_empty = true;
        }
        return;
    }
    }
}

void cmpl_plan_words(int n, char **words, cmpl_plan *p)
{
    p->directive = CMPL_NOFILE;
    if (n < 1)
        return;
    const char *cur = words[n - 1];
    const flame_verb *v = n > 1 ? flame_verb_find(words[0]) : NULL;
    int i = v ? 1 : 0;
    if (!v)
        v = &flame_profile_verb;
    const args_verb *g = v->grammar;
    const arg_spec *pending = NULL; /* the option whose value the next word is */
    bool dashdash = false;
    for (; i < n - 1; i++) {
        const char *w = words[i];
        if (pending) {
            if (pending->lng && !strcmp(pending->lng, "store"))
                p->store_url = w;
            pending = NULL;
        } else if (dashdash) {
            continue;
        } else if (!strcmp(w, "--")) {
            dashdash = true;
        } else if (w[0] == '-' && w[1] == '-') {
            const char *eq = strchr(w + 2, '=');
            const arg_spec *s = args_find_long(g, w + 2, eq ? (size_t)(eq - w - 2) : strlen(w + 2));
            if (s && eq && s->lng && !strcmp(s->lng, "store"))
                p->store_url = eq + 1;
            else if (s && !eq && s->kind != ARG_FLAG)
                pending = s;
        } else if (w[0] == '-' && w[1]) {
            const arg_spec *s =
                (g->flags & ARGS_SINGLE_DASH_LONG) ? args_find_long(g, w + 1, strlen(w + 1)) : NULL;
            if (s) {
                pending = s->kind != ARG_FLAG ? s : NULL;
                continue;
            }
            /* a cluster "-qd" or "-d10": the first letter that takes a value ends it */
            for (const char *c = w + 1; *c; c++) {
                s = args_find_short(g, *c);
                if (!s)
                    break;
                if (s->kind != ARG_FLAG) {
                    pending = c[1] ? NULL : s;
                    break;
                }
            }
        }
    }
    if (pending) {
        complete_value(p, pending, cur, "");
    } else if (dashdash) {
        p->directive = 0; /* the profile verb's host command and its arguments */
    } else if (cur[0] == '-' && cur[1] == '-' && strchr(cur, '=')) {
        const char *eq = strchr(cur, '=');
        const arg_spec *s = args_find_long(g, cur + 2, (size_t)(eq - cur - 2));
        char lead[80];
        snprintf(lead, sizeof lead, "%.*s", (int)(eq + 1 - cur), cur);
        if (s && s->kind != ARG_FLAG)
            complete_value(p, s, eq + 1, lead);
    } else if (cur[0] == '-') {
        complete_flags(p, g, cur);
    } else {
        if (n == 1) /* the first word: a verb, or the profile verb's container */
            for (size_t k = 0; k < flame_nverbs; k++)
                cmpl_add(p, cur, flame_verbs[k].name, flame_verbs[k].summary);
        complete_operand(p, v, cur);
    }
}

void cmpl_print(const cmpl_plan *p, bool nodesc, FILE *out)
{
    for (size_t i = 0; i < p->n; i++) {
        fputs(p->items[i].name, out);
        const char *d = p->items[i].desc;
        if (d && *d && !nodesc) {
            /* the help on one line: no byte that could end the line or the field */
            fputc('\t', out);
            for (; *d; d++)
                fputc((unsigned char)*d < ' ' || *d == 0x7f ? ' ' : *d, out);
        }
        fputc('\n', out);
    }
    fprintf(out, ":%u\n", p->directive);
}

void cmpl_plan_free(cmpl_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].name);
        free(p->items[i].desc);
    }
    p->n = 0;
}
