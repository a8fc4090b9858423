/* Text into markup: UTF-8 decoding, and escaping for XML text and attributes, XML comments, CSS,
 * JavaScript and JSON strings. Frame names come from the profiled container: invalid UTF-8 and
 * characters XML cannot carry become U+FFFD, nothing can close the construct it is written in. */
#include "flame/escape.h"

#include <stdbool.h>
#include <string.h>

/* Decode one code point at s[0..n): its length in *len; -1 for an invalid sequence (len 1). */
int32_t escape_utf8_next(const unsigned char *s, size_t n, size_t *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return (int32_t)c;
    size_t need;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return -1;
    }
    if (n < need)
        return -1;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = need;
    return (int32_t)cp;
}

/* Characters XML 1.0 cannot carry (and the control characters we do not want in names). */
bool escape_xml_bad(int32_t cp)
{
    return cp < 0x20 || cp == 0x7f || cp == 0xfffe || cp == 0xffff;
}

size_t escape_utf8_chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0, l; i < n; i += l, k++)
        escape_utf8_next((const unsigned char *)s + i, n - i, &l);
    return k;
}

/* Copy s[0..n) (at most maxchars code points) to out, each code point for which rep() gives a
 * replacement written as that instead; the runs between are copied as they are. */
typedef const char *(*replace_fn)(int32_t cp, char buf[16]);

static void escape_with(FILE *out, const char *s, size_t n, size_t maxchars, replace_fn rep)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0; /* run: start of bytes that can be copied verbatim */
    char buf[16];
    for (size_t k = 0; i < n && k < maxchars; k++) {
        size_t l;
        const char *r = rep(escape_utf8_next(u + i, n - i, &l), buf);
        if (r) {
            fwrite(s + run, 1, i - run, out);
            fputs(r, out);
            run = i + l;
        }
        i += l;
    }
    fwrite(s + run, 1, i - run, out);
}

static const char *xml_replacement(int32_t cp, char buf[16])
{
    (void)buf;
    if (cp < 0 || escape_xml_bad(cp))
        return "\xef\xbf\xbd";
    switch (cp) {
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '&':
        return "&amp;";
    case '"':
        return "&quot;";
    case '\'':
        return "&apos;";
    default:
        return NULL;
    }
}

/* Write s[0..n), at most maxchars code points (SIZE_MAX = all), escaped for XML text and
 * attributes; invalid UTF-8 and forbidden characters become U+FFFD. */
void escape_xml(FILE *out, const char *s, size_t n, size_t maxchars)
{
    escape_with(out, s, n, maxchars, xml_replacement);
}

void escape_xml_str(FILE *out, const char *s)
{
    escape_xml(out, s, strlen(s), SIZE_MAX);
}

/* A JavaScript string literal safe inside CDATA: only printable ASCII, the rest \u-escaped. */
void escape_js_string(FILE *out, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    putc('"', out);
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = escape_utf8_next(u + i, n - i, &l);
        if (cp < 0 || escape_xml_bad(cp))
            cp = 0xfffd;
        if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\' && cp != '<' && cp != '>' &&
            cp != ']' && cp != '&')
            putc(cp, out);
        else if (cp < 0x10000)
            fprintf(out, "\\u%04x", (unsigned)cp);
        else
            fprintf(out, "\\u%04x\\u%04x", 0xd800 + (((unsigned)cp - 0x10000) >> 10),
                    0xdc00 + (((unsigned)cp - 0x10000) & 0x3ff));
    }
    putc('"', out);
}

/* The font family goes into CSS: keep only characters that cannot end the declaration. */
void escape_css_font(FILE *out, const char *s)
{
    for (; *s; s++)
        if ((*s | 32) >= 'a' && (*s | 32) <= 'z' ? 1 : strchr("0123456789 ,-_", *s) != NULL)
            putc(*s, out);
}

/* An XML comment cannot hold "--" nor end with "-". */
void escape_xml_comment(FILE *out, const char *s)
{
    size_t n = strlen(s);
    const unsigned char *u = (const unsigned char *)s;
    char prev = 0;
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = escape_utf8_next(u + i, n - i, &l);
        if (cp < 0 || (escape_xml_bad(cp) && cp != '\n' && cp != '\t')) {
            fputs("\xef\xbf\xbd", out);
            prev = 0;
            continue;
        }
        if (cp == '-' && prev == '-')
            putc(' ', out);
        fwrite(s + i, 1, l, out);
        prev = (char)cp;
    }
    if (prev == '-')
        putc(' ', out);
}

static const char *json_replacement(int32_t cp, char buf[16])
{
    if (cp < 0)
        return "\\ufffd";
    if (cp == '"')
        return "\\\"";
    if (cp == '\\')
        return "\\\\";
    if (cp < 0x20 || cp == 0x7f) {
        snprintf(buf, 16, "\\u%04x", (unsigned)cp);
        return buf;
    }
    return NULL;
}

void escape_json_string(FILE *out, const char *s, size_t n)
{
    putc('"', out);
    escape_with(out, s, n, SIZE_MAX, json_replacement);
    putc('"', out);
}
