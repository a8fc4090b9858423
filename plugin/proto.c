/* Parser for the sidecar result stream. */
#include "plugin/proto.h"

#include <stdlib.h>
#include <string.h>


void proto_init(proto *p)
{
    memset(p, 0, sizeof *p);
    p->jvms = json_array();
}

void proto_clear(proto *p)
{
    json_decref(p->jvms);
    json_decref(p->summary);
    for (size_t i = 0; i < p->nwarn; i++)
        free(p->warnings[i]);
    free(p->err_text);
    if (p->prof)
        profile_free(p->prof);
    memset(p, 0, sizeof *p);
}

void proto_sanitize(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (; *s && o + 1 < n; s++) {
        unsigned char c = (unsigned char)*s;
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[o] = 0;
}

int proto_err_exit(const char *code)
{
    if (!strcmp(code, "no_jvm") || !strcmp(code, "no_pid"))
        return FLAME_EXIT_NO_JVM;
    if (!strcmp(code, "attach") || !strcmp(code, "inject"))
        return FLAME_EXIT_ATTACH;
    if (!strcmp(code, "perf_denied") || !strcmp(code, "perf_unsupported"))
        return FLAME_EXIT_PERF;
    if (!strcmp(code, "usage"))
        return FLAME_EXIT_USAGE;
    return FLAME_EXIT_ERROR;
}

static json_t *parse_obj(const char *tag, const char *s, size_t n, flame_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(s, n, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: %s line is not a JSON object",
                   tag);
        return NULL;
    }
    return j;
}

/* A count from the sidecar: integers as they are, reals truncated; anything out of range
 * (negative, NaN, 1e300 would overflow the cast) reads as 0 or the bound. */
static long long jint(json_t *o, const char *k)
{
    const long long max = 1LL << 53;
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) {
        long long n = json_integer_value(v);
        return n < 0 ? 0 : n > max ? max : n;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 0)) /* negative or NaN */
            return 0;
        return d >= (double)max ? max : (long long)d;
    }
    return 0;
}

int proto_line(proto *p, const char *line, size_t len, flame_err *err)
{
    if (len == 0)
        return 0; /* tolerate blank lines */
    if (memchr(line, '\0', len))
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: NUL byte in a line");
    char tag = line[0];
    if (len > 1 && line[1] != ' ')
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: bad line tag");
    const char *pl = len > 1 ? line + 2 : "";
    size_t pn = len > 1 ? len - 2 : 0;
    if (tag != 'V' && p->version == 0)
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "sidecar protocol error: no version line (is the sidecar image from "
                          "another docker-flame version?)");
    if (p->done)
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: data after D");
    switch (tag) {
    case 'V':
        if (pn != 1 || pl[0] != '1')
            return flame_fail(err, FLAME_EXIT_ERROR,
                              "sidecar speaks protocol version %.*s, this plugin version 1: "
                              "reinstall docker-flame so both match",
                              (int)(pn < 16 ? pn : 16), pl);
        p->version = 1;
        return 0;
    case 'J': {
        json_t *j = parse_obj("J", pl, pn, err);
        if (!j)
            return -1;
        if (json_array_size(p->jvms) < 4096)
            json_array_append(p->jvms, j);
        json_decref(j);
        return 0;
    }
    case 'P': {
        json_t *j = parse_obj("P", pl, pn, err);
        if (!j)
            return -1;
        p->elapsed_ms = jint(j, "elapsed_ms");
        p->duration_ms = jint(j, "duration_ms");
        p->samples = jint(j, "samples");
        p->njvms = jint(j, "jvms");
        p->progress = true;
        json_decref(j);
        return 0;
    }
    case 'W':
        if (p->nwarn >= PROTO_MAX_WARNINGS) {
            p->dropped_warn++;
            return 0;
        }
        p->warnings[p->nwarn] = strndup(pl, pn < 4096 ? pn : 4096);
        if (!p->warnings[p->nwarn])
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        p->nwarn++;
        return 0;
    case 'F':
        if (!p->prof) {
            p->prof = profile_new();
            if (!p->prof)
                return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
        p->f_lines++;
        if (profile_add_line(p->prof, pl, pn, err) < 0)
            return flame_wrap(err, "sidecar protocol error: F line %llu", p->f_lines);
        return 0;
    case 'S': {
        json_t *j = parse_obj("S", pl, pn, err);
        if (!j)
            return -1;
        json_decref(p->summary);
        p->summary = j;
        p->samples = jint(j, "samples");
        return 0;
    }
    case 'E': {
        /* The line is length-delimited, not NUL-terminated: bounded search only. */
        const char *sp = memchr(pl, ' ', pn);
        size_t cl = sp ? (size_t)(sp - pl) : pn;
        snprintf(p->err_code, sizeof p->err_code, "%.*s", (int)cl, pl);
        free(p->err_text);
        p->err_text = strndup(cl < pn ? pl + cl + 1 : "",
                              cl < pn ? (pn - cl - 1 < 2048 ? pn - cl - 1 : 2048) : 0);
        return 0;
    }
    case 'D':
        p->done = true;
        return 0;
    default:
        return flame_fail(err, FLAME_EXIT_ERROR, "sidecar protocol error: unknown tag '%c'",
                          tag >= 0x20 && tag < 0x7f ? tag : '?');
    }
}
