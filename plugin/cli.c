/* The CLI layer's shared pieces: see plugin/cli.h. */
#include "plugin/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cli_fail(const char *verb, const flame_err *err)
{
    fprintf(stderr, "docker flame%s%s: %s\n", verb[0] ? " " : "", verb,
            err->msg[0] ? err->msg : "failed");
    return err->code ? err->code : FLAME_EXIT_ERROR;
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "docker flame %s: ", verb);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see `docker flame %s --help`)\n", verb);
    return FLAME_EXIT_USAGE;
}

int cli_parse(const char *verb, const args_verb *v, int argc, char **argv, void *dest,
              const bool *help, const char *head, const char *tail)
{
    flame_err err = FLAME_ERR_INIT;
    if (args_parse(v, argc - 1, argv + 1, dest, NULL, &err) < 0)
        return cli_fail(verb, &err);
    if (!*help)
        return -1;
    fputs(head, stdout);
    args_help(v, stdout);
    fputs(tail, stdout);
    return FLAME_EXIT_OK;
}

bool cli_parse_num(const char *s, double lo, double hi, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e || errno || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}
