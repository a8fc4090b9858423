/* An API request's query string, checked (plugin/web/web_query.h). */
#include "plugin/web/web_query.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/contract.h"
#include "flame/palette.h"
#include "plugin/out/output.h"
#include "store/store.h"
#include "store/when.h"

void web_query_init(web_query *q)
{
    memset(q, 0, sizeof *q);
    q->nodes = WEB_NODES_DEFAULT;
    q->palette = "java";
    q->format = -1;
    q->sort = WEB_SORT_SELF;
    q->limit = WEB_TABLE_DEFAULT;
    q->norm = WEB_NORM_RELATIVE;
    q->buckets = WEB_BUCKETS_DEFAULT;
}

/* A whole number in [lo, hi], the whole string. */
static bool whole(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!*s || strlen(s) > 19)
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* A point in time: unix ms (digits only, from the page) or a form of `show` (store/when.h). */
static bool when(const char *s, int64_t now_ms, int64_t *out)
{
    /* unix ms from 2001-09-09 on: 13 digits; when_parse takes no bare number, so no clash */
    if (whole(s, 1000000000000LL, 4102444800000LL, out))
        return true;
    return when_parse(s, now_ms, out) == 0;
}

/* The message names the key when it is one a person could have typed (it goes back to the page
 * and into logs: no bytes of any kind). */
static int bad(flame_err *err, const char *key, const char *why)
{
    size_t n = strlen(key);
    bool plain = n > 0 && n <= 32 &&
                 strspn(key, "abcdefghijklmnopqrstuvwxyz"
                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
    return flame_fail(err, FLAME_EXIT_USAGE, "%s: %s", plain ? key : "a parameter", why);
}

static int side_set(web_side *s, const char *key, const char *v, int64_t now_ms, flame_err *err)
{
    int64_t n;
    if (!strcmp(key, "since") || !strcmp(key, "until")) {
        bool since = key[0] == 's';
        if (!when(v, now_ms, since ? &s->since_ms : &s->until_ms))
            return bad(err, key, "not a time (unix ms, or " WHEN_FORMS ")");
        *(since ? &s->has_since : &s->has_until) = true;
        return 0;
    }
    if (!strcmp(key, "c")) {
        if (s->ncontainers >= WEB_MAX_SOURCES)
            return bad(err, key, "too many containers (at most 16 a side)");
        if (!*v || strlen(v) > STORE_MAX_LABEL)
            return bad(err, key, "a container name or id, 1 to 256 bytes");
        s->container[s->ncontainers++] = v;
        return 0;
    }
    if (!strcmp(key, "host")) {
        if (!*v || strlen(v) > STORE_MAX_LABEL)
            return bad(err, key, "a host name, 1 to 256 bytes");
        s->host = v;
        return 0;
    }
    if (!strcmp(key, "pid")) {
        if (!whole(v, 1, 1 << 22, &n))
            return bad(err, key, "a pid inside the container (1 to 4194304)");
        s->pid = n;
        return 0;
    }
    return bad(err, key, "unknown parameter");
}

int web_query_set(web_query *q, const char *key, const char *v, int64_t now_ms, flame_err *err)
{
    int64_t n;
    if (strlen(key) > 16)
        return bad(err, key, "unknown parameter");
    if (strlen(v) > WEB_MAX_VALUE)
        return bad(err, key, "value too long");
    if (!strncmp(key, "b.", 2)) {
        q->has_b = true;
        return side_set(&q->b, key + 2, v, now_ms, err);
    }
    if (!strcmp(key, "nodes")) {
        if (!whole(v, 1, WEB_NODES_MAX, &n))
            return bad(err, key, "a node count, 1 to 65536");
        q->nodes = (size_t)n;
    } else if (!strcmp(key, "root")) {
        q->root = v;
    } else if (!strcmp(key, "q")) {
        size_t len = strlen(v);
        q->regex = len >= 2 && v[0] == '/' && v[len - 1] == '/';
        q->search = *v ? v : NULL;
    } else if (!strcmp(key, "icase")) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return bad(err, key, "0 or 1");
        q->icase = v[0] == '1';
    } else if (!strcmp(key, "fn")) {
        if (!*v)
            return bad(err, key, "a function name");
        q->fn = v;
    } else if (!strcmp(key, "palette")) {
        if (!palette_valid(v))
            return bad(err, key, "unknown palette");
        q->palette = v;
    } else if (!strcmp(key, "format")) {
        q->format = -1;
        for (int f = 0; f < FMT_COUNT; f++)
            if (!strcmp(v, out_fmt_name(f)))
                q->format = f;
        if (q->format < 0)
            return bad(err, key, "svg, folded, speedscope or pprof");
    } else if (!strcmp(key, "sort")) {
        if (strcmp(v, "self") && strcmp(v, "total"))
            return bad(err, key, "self or total");
        q->sort = v[0] == 's' ? WEB_SORT_SELF : WEB_SORT_TOTAL;
    } else if (!strcmp(key, "limit")) {
        if (!whole(v, 1, WEB_TABLE_MAX, &n))
            return bad(err, key, "a row count, 1 to 100000");
        q->limit = (size_t)n;
    } else if (!strcmp(key, "norm")) {
        if (strcmp(v, "relative") && strcmp(v, "absolute"))
            return bad(err, key, "relative or absolute");
        q->norm = v[0] == 'r' ? WEB_NORM_RELATIVE : WEB_NORM_ABSOLUTE;
    } else if (!strcmp(key, "type")) {
        /* the words of --mode, as `show --mode` reads a stored type (docs/STORE.md) */
        int m = ct_mode_parse(v, strlen(v));
        if (m < 0)
            return bad(err, key, "a profile type: cpu, wall, offcpu, alloc or lock");
        q->mode = m;
        q->a.type = q->b.type = m == CT_MODE_CPU ? NULL : ct_mode_names[m];
    } else if (!strcmp(key, "width")) {
        if (!whole(v, 10, WEB_BUCKETS_MAX, &n))
            return bad(err, key, "points of a series, 10 to 1500");
        q->buckets = (size_t)n;
    } else {
        return side_set(&q->a, key, v, now_ms, err);
    }
    return 0;
}

static int side_finish(web_side *s, const char *prefix, int64_t now_ms, flame_err *err)
{
    if (!s->has_until)
        s->until_ms = now_ms;
    if (!s->has_since)
        s->since_ms = s->until_ms - 3600 * 1000;
    if (s->since_ms >= s->until_ms)
        return flame_fail(err, FLAME_EXIT_USAGE, "%ssince: must come before %suntil", prefix,
                          prefix);
    return 0;
}

int web_query_finish(web_query *q, int64_t now_ms, flame_err *err)
{
    if (side_finish(&q->a, "", now_ms, err) < 0)
        return -1;
    return q->has_b ? side_finish(&q->b, "b.", now_ms, err) : 0;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

long web_query_decode(const char *s, size_t n, bool plus, char *out, size_t cap)
{
    if (cap < n + 1)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (char)(h << 4 | l);
            i += 2;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (c == '\0')
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return (long)o;
}

int web_query_parse(web_query *q, const char *qs, char *buf, size_t cap, int64_t now_ms,
                    flame_err *err)
{
    size_t len = strlen(qs), o = 0, pairs = 0;
    if (cap < len + 2)
        return flame_fail(err, FLAME_EXIT_USAGE, "query too long");
    for (const char *p = qs; *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n) {
            if (++pairs > WEB_MAX_PAIRS)
                return flame_fail(err, FLAME_EXIT_USAGE, "too many parameters");
            const char *eq = memchr(p, '=', n);
            size_t kn = eq ? (size_t)(eq - p) : n;
            char *key = buf + o;
            long k = web_query_decode(p, kn, true, key, cap - o);
            if (k < 0)
                return flame_fail(err, FLAME_EXIT_USAGE, "malformed query string");
            o += (size_t)k + 1;
            char *val = buf + o;
            long v = eq        ? web_query_decode(eq + 1, n - kn - 1, true, val, cap - o)
                     : o < cap ? (val[0] = '\0', 0)
                               : -1;
            if (v < 0)
                return flame_fail(err, FLAME_EXIT_USAGE, "malformed query string");
            o += (size_t)v + 1;
            if (web_query_set(q, key, val, now_ms, err) < 0)
                return -1;
        }
        p += n + (amp != NULL);
    }
    return web_query_finish(q, now_ms, err);
}
