/* The summaries' JSON writer (plugin/out/jsonw.h). */
#include "plugin/out/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "flame/escape.h"

void jsonw_init(jsonw *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
}

static void indent(jsonw *w)
{
    putc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

/* The comma, newline and key before a value. false: too deep, write nothing. */
static bool item(jsonw *w, const char *key)
{
    if (w->skipped)
        return false;
    if (w->depth > 0) {
        if (w->has_items[w->depth])
            putc(',', w->f);
        w->has_items[w->depth] = true;
        indent(w);
    }
    if (key) {
        escape_json_string(w->f, key, strlen(key));
        fputs(": ", w->f);
    }
    return true;
}

static void open_(jsonw *w, const char *key, char c, char closer)
{
    if (w->skipped || w->depth >= JSONW_MAX_DEPTH) {
        w->skipped++;
        return;
    }
    if (!item(w, key))
        return;
    putc(c, w->f);
    w->depth++;
    w->has_items[w->depth] = false;
    w->closer[w->depth] = closer;
}

void jsonw_object(jsonw *w, const char *key)
{
    open_(w, key, '{', '}');
}

void jsonw_array(jsonw *w, const char *key)
{
    open_(w, key, '[', ']');
}

void jsonw_end(jsonw *w)
{
    if (w->skipped) {
        w->skipped--;
        return;
    }
    if (w->depth == 0)
        return;
    bool had = w->has_items[w->depth];
    char closer = w->closer[w->depth];
    w->depth--;
    if (had)
        indent(w);
    putc(closer, w->f);
    if (w->depth == 0)
        putc('\n', w->f);
}

void jsonw_strn(jsonw *w, const char *key, const char *s, size_t n)
{
    if (item(w, key))
        escape_json_string(w->f, s, n);
}

void jsonw_str(jsonw *w, const char *key, const char *s)
{
    if (!s)
        jsonw_null(w, key);
    else
        jsonw_strn(w, key, s, strlen(s));
}

void jsonw_int(jsonw *w, const char *key, int64_t v)
{
    if (item(w, key))
        fprintf(w->f, "%" PRId64, v);
}

void jsonw_uint(jsonw *w, const char *key, uint64_t v)
{
    if (item(w, key))
        fprintf(w->f, "%" PRIu64, v);
}

void jsonw_num(jsonw *w, const char *key, double v)
{
    if (!isfinite(v))
        jsonw_null(w, key);
    else if (item(w, key))
        fprintf(w->f, "%.15g", v);
}

void jsonw_bool(jsonw *w, const char *key, bool v)
{
    if (item(w, key))
        fputs(v ? "true" : "false", w->f);
}

void jsonw_null(jsonw *w, const char *key)
{
    if (item(w, key))
        fputs("null", w->f);
}

void summary_header(jsonw *w, const char *kind, time_t started)
{
    char iso[32];
    struct tm tm;
    gmtime_r(&started, &tm);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    jsonw_int(w, "version", SUMMARY_VERSION);
    jsonw_str(w, "kind", kind);
    jsonw_str(w, "tool", "docker-flame " FLAME_VERSION);
    jsonw_str(w, "started", iso);
}
