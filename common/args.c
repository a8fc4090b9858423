/* The one command-line parser (common/args.h): option tables in, checked values out, one-line
 * errors. getopt is not used: its rules differ between getopt_long and getopt_long_only, it
 * abbreviates long names, and its global state makes a second parse in one process fragile. */
#include "common/args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int args_error(const args_verb *v, flame_err *err, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return flame_fail(err, FLAME_EXIT_USAGE, "%s (see `%s --help`)", what, v->name);
}

int args_duration_ms(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}, {"d", 86400e3}};
    double total = 0;
    const char *p = s;
    if (!*p)
        return -1;
    for (bool first = true; *p; first = false) {
        /* digits, then an optional fraction: no sign, exponent, hex or blanks (strtod would
         * take "1e3" and "0x10") */
        if (*p < '0' || *p > '9')
            return -1;
        double n = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            n = n * 10 + (*p - '0');
        if (*p == '.') {
            p++;
            if (*p < '0' || *p > '9')
                return -1;
            for (double scale = 0.1; *p >= '0' && *p <= '9'; p++, scale /= 10)
                n += (*p - '0') * scale;
        }
        double mul = -1;
        for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
            size_t l = strlen(units[u].unit);
            if (!strncmp(p, units[u].unit, l) && !(l == 1 && p[0] == 'm' && p[1] == 's')) {
                mul = units[u].ms;
                p += l;
                break;
            }
        }
        if (mul < 0 && !*p && first)
            mul = 1e3; /* a bare number is seconds, as docker's own --time flags */
        if (mul < 0)
            return -1;
        total += n * mul;
        if (total > 1e15)
            return -1;
    }
    *out = (uint64_t)(total + 0.5);
    return 0;
}

void args_format_duration(uint64_t ms, char *buf, size_t cap)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t o = 0;
    buf[0] = 0;
    if (ms == 0) {
        snprintf(buf, cap, "0");
        return;
    }
    for (size_t u = 0; u < sizeof units / sizeof *units && o < cap; u++) {
        uint64_t n = ms / units[u].ms;
        if (!n)
            continue;
        ms -= n * units[u].ms;
        o += (size_t)snprintf(buf + o, cap - o, "%llu%s", (unsigned long long)n, units[u].unit);
    }
}

const arg_spec *args_spec(const args_verb *v, size_t i)
{
    if (i < v->nspecs)
        return &v->specs[i];
    i -= v->nspecs;
    for (size_t g = 0; g < ARGS_MAX_GROUPS; g++) {
        if (i < v->groups[g].n)
            return &v->groups[g].specs[i];
        i -= v->groups[g].n;
    }
    return NULL;
}

/* Where the struct that spec s's offset is relative to starts: the verb's own, or a group's. */
static char *base_of(const args_verb *v, const arg_spec *s, void *dest)
{
    for (size_t g = 0; g < ARGS_MAX_GROUPS; g++)
        if (v->groups[g].n && s >= v->groups[g].specs && s < v->groups[g].specs + v->groups[g].n)
            return (char *)dest + v->groups[g].off;
    return dest;
}

const arg_spec *args_find_long(const args_verb *v, const char *name, size_t n)
{
    const arg_spec *s;
    for (size_t i = 0; (s = args_spec(v, i)); i++)
        if (s->lng && strlen(s->lng) == n && !strncmp(s->lng, name, n))
            return s;
    return NULL;
}

const arg_spec *args_find_short(const args_verb *v, char c)
{
    const arg_spec *s;
    for (size_t i = 0; (s = args_spec(v, i)); i++)
        if (s->shrt && s->shrt == c)
            return s;
    return NULL;
}

static void choices_text(const arg_spec *s, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; s->choices && s->choices[i] && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", s->choices[i]);
}

/* Store one checked value where the table says (or through the spec's own store()). */
static int put(const args_verb *v, const arg_spec *s, void *dest, const arg_val *av, flame_err *err)
{
    char *base = base_of(v, s, dest);
    if (s->store) {
        if (s->store(base, av, err) < 0) {
            if (!err->msg[0])
                return args_error(v, err, "--%s: refused", s->lng);
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return args_error(v, err, "%s", msg); /* the store's words, the verb's hint */
        }
        return 0;
    }
    void *f = base + s->off;
    switch (s->kind) {
    case ARG_FLAG:
        if (s->flags & ARG_SET)
            *(int *)f = s->set;
        else
            *(bool *)f = true;
        break;
    case ARG_STR:
        *(const char **)f = av->str;
        break;
    case ARG_INT:
        *(int64_t *)f = av->i;
        break;
    case ARG_NUM:
        *(double *)f = av->num;
        break;
    case ARG_DURATION:
        *(uint64_t *)f = av->ms;
        break;
    case ARG_CHOICE:
        if (s->flags & ARG_LIST)
            *(unsigned *)f |= 1u << av->choice;
        else
            *(int *)f = av->choice;
        break;
    }
    return 0;
}

/* Check one value by its kind, then store it. */
static int deliver(const args_verb *v, const arg_spec *s, const char *flag, const char *val,
                   void *dest, flame_err *err)
{
    arg_val av = {.str = val};
    char *end;
    switch (s->kind) {
    case ARG_FLAG:
        break;
    case ARG_STR:
        if (!*val)
            return args_error(v, err, "%s needs a non-empty value", flag);
        break;
    case ARG_INT: {
        errno = 0;
        long long n = strtoll(val, &end, 10);
        if (!*val || *end || errno || (double)n < s->lo || (double)n > s->hi)
            return args_error(v, err, "%s: \"%.100s\" is not a whole number from %.0f to %.0f",
                              flag, val, s->lo, s->hi);
        av.i = n;
        break;
    }
    case ARG_NUM: {
        errno = 0;
        double d = strtod(val, &end);
        if (!*val || *end || errno || !isfinite(d) || d < s->lo || d > s->hi)
            return args_error(v, err, "%s: \"%.100s\" is not a number from %g to %g", flag, val,
                              s->lo, s->hi);
        av.num = d;
        break;
    }
    case ARG_DURATION: {
        char lo[32], hi[32];
        if (args_duration_ms(val, &av.ms) < 0)
            return args_error(
                v, err, "%s: invalid duration \"%.100s\": use e.g. 30, 30s, 500ms, 2m, 1m30s%s",
                flag, val, s->lo == 0 ? " (0 = until Ctrl-C)" : "");
        if ((double)av.ms > s->hi || (double)av.ms < s->lo) {
            args_format_duration((uint64_t)s->lo, lo, sizeof lo);
            args_format_duration((uint64_t)s->hi, hi, sizeof hi);
            return args_error(v, err, "%s: invalid duration \"%.100s\": want %s to %s", flag, val,
                              lo, hi);
        }
        break;
    }
    case ARG_CHOICE: {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", val);
        char *save = NULL;
        int count = 0;
        bool list = s->flags & ARG_LIST;
        for (char *t = list ? strtok_r(buf, ",", &save) : buf; t;
             t = list ? strtok_r(NULL, ",", &save) : NULL) {
            int k = -1;
            for (int i = 0; s->choices && s->choices[i]; i++)
                if (!strcmp(t, s->choices[i]))
                    k = i;
            if (k < 0) {
                char choices[400];
                choices_text(s, choices, sizeof choices);
                return args_error(v, err, "%s: unknown value \"%.100s\": use %s", flag, t, choices);
            }
            av.choice = k;
            count++;
            if (put(v, s, dest, &av, err) < 0)
                return -1;
        }
        if (!count)
            return args_error(v, err, "%s needs a value", flag);
        return 0;
    }
    }
    return put(v, s, dest, &av, err);
}

static int operand(const args_verb *v, const char *a, void *dest, flame_err *err)
{
    if (v->operands_off == ARGS_NO_OPERANDS)
        return args_error(v, err, "unexpected argument \"%.100s\"", a);
    args_operands *ops = (args_operands *)((char *)dest + v->operands_off);
    if (ops->n >= ARGS_MAX_OPERANDS)
        return args_error(v, err, "too many arguments (at most %d)", ARGS_MAX_OPERANDS);
    ops->v[ops->n++] = a;
    return 0;
}

int args_parse(const args_verb *v, int argc, char **argv, void *dest, int *rest, flame_err *err)
{
    int i = 0;
    bool operands_only = false, dashdash = false;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            dashdash = true;
            break;
        }
        if (operands_only || a[0] != '-' || !a[1]) { /* "-" alone names stdin: an operand */
            if (operand(v, a, dest, err) < 0)
                return -1;
            if (v->flags & ARGS_STOP_AT_OPERAND)
                operands_only = true;
            continue;
        }
        bool dd = a[1] == '-';
        const char *name = a + (dd ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        const arg_spec *s = NULL;
        if (dd || (v->flags & ARGS_SINGLE_DASH_LONG))
            s = args_find_long(v, name, nl);
        if (s || dd) {
            char flag[96];
            snprintf(flag, sizeof flag, "--%.*s", (int)(nl < 80 ? nl : 80), name);
            if (!s)
                return args_error(v, err, "unknown flag: %s", flag);
            const char *val = eq ? eq + 1 : NULL;
            if (s->kind == ARG_FLAG) {
                if (val)
                    return args_error(v, err, "%s takes no value", flag);
            } else if (!val) {
                if (i + 1 >= argc)
                    return args_error(v, err, "flag needs an argument: %s", flag);
                val = argv[++i];
            }
            if (deliver(v, s, flag, val, dest, err) < 0)
                return -1;
            continue;
        }
        /* short options, clustered: -qv, -d10, -d 10, -d=10 */
        for (const char *p = name; *p; p++) {
            char flag[4] = {'-', *p, 0, 0};
            s = args_find_short(v, *p);
            if (!s)
                return args_error(v, err, "unknown flag: %s", flag);
            if (s->kind == ARG_FLAG) {
                if (deliver(v, s, flag, NULL, dest, err) < 0)
                    return -1;
                continue;
            }
            const char *val = p[1] ? p + 1 + (p[1] == '=') : NULL;
            if (!val) {
                if (i + 1 >= argc)
                    return args_error(v, err, "flag needs an argument: %s", flag);
                val = argv[++i];
            }
            if (deliver(v, s, flag, val, dest, err) < 0)
                return -1;
            break;
        }
    }
    if (rest)
        *rest = dashdash ? i : -1;
    else
        for (; i < argc; i++) /* no "--" command: what follows it is operands */
            if (operand(v, argv[i], dest, err) < 0)
                return -1;
    return 0;
}

void args_help(const args_verb *v, FILE *out)
{
    const arg_spec *s;
    for (size_t i = 0; (s = args_spec(v, i)); i++) {
        if (s->flags & ARG_HIDDEN)
            continue;
        char left[96];
        int n = snprintf(left, sizeof left, "  %s%c%s%s%s%s%s", s->shrt ? "-" : "   ",
                         s->shrt ? s->shrt : ' ', s->shrt && s->lng ? "," : "",
                         s->lng ? (s->shrt ? " --" : " --") : "", s->lng ? s->lng : "",
                         s->meta ? " " : "", s->meta ? s->meta : "");
        if (!s->shrt)
            n = snprintf(left, sizeof left, "      --%s%s%s", s->lng, s->meta ? " " : "",
                         s->meta ? s->meta : "");
        const char *h = s->help ? s->help : "";
        if (n > 26) { /* a long left column gets the help on the next line */
            fprintf(out, "%s\n", left);
            n = 0;
            left[0] = 0;
        }
        for (bool first = true; first || *h; first = false) {
            const char *nl = strchr(h, '\n');
            size_t l = nl ? (size_t)(nl - h) : strlen(h);
            fprintf(out, "%-27s %.*s\n", first ? left : "", (int)l, h);
            h += l + (nl ? 1 : 0);
        }
    }
}
