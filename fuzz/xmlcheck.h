/* A small, strict XML well-formedness check for the SVGs we write (fuzz harnesses only): valid
 * UTF-8 without characters XML forbids, balanced tags, quoted attribute values without '<',
 * only the five predefined entities or character references, comments without "--", CDATA
 * closed, one root element. Returns NULL when well-formed, else what is wrong (static text);
 * *where gets the byte offset. Linear in the document. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XMLCHECK_DEPTH 64

typedef struct xmlcheck_counts {
    unsigned elements, scripts; /* element count, <script> elements */
} xmlcheck_counts;

static inline bool xc_utf8_ok(const unsigned char *s, size_t n, size_t *bad)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        uint32_t cp;
        size_t l;
        if (c < 0x80) {
            cp = c, l = 1;
        } else if (c >= 0xc2 && c <= 0xdf) {
            cp = c & 0x1f, l = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            cp = c & 0x0f, l = 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            cp = c & 0x07, l = 4;
        } else {
            *bad = i;
            return false;
        }
        if (i + l > n) {
            *bad = i;
            return false;
        }
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                *bad = i;
                return false;
            }
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        bool overlong = (l == 3 && cp < 0x800) || (l == 4 && cp < 0x10000);
        bool forbidden = (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') ||
                         (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff ||
                         cp > 0x10ffff;
        if (overlong || forbidden) {
            *bad = i;
            return false;
        }
        i += l;
    }
    return true;
}

static inline bool xc_name_char(unsigned char c, bool first)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80)
        return true;
    return !first && ((c >= '0' && c <= '9') || c == '-' || c == '.');
}

/* A name at s[*i]; its length, 0 if none. */
static inline size_t xc_name(const char *s, size_t n, size_t *i)
{
    size_t b = *i;
    while (*i < n && xc_name_char((unsigned char)s[*i], *i == b))
        (*i)++;
    return *i - b;
}

static inline bool xc_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* An entity or character reference at s[*i] == '&'. */
static inline bool xc_ref(const char *s, size_t n, size_t *i)
{
    static const char *const ents[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
    for (size_t k = 0; k < 5; k++) {
        size_t l = strlen(ents[k]);
        if (n - *i >= l && !memcmp(s + *i, ents[k], l)) {
            *i += l;
            return true;
        }
    }
    size_t j = *i + 1;
    if (j >= n || s[j] != '#')
        return false;
    j++;
    bool hex = j < n && s[j] == 'x';
    j += hex;
    size_t d = j;
    while (j < n && ((s[j] >= '0' && s[j] <= '9') ||
                     (hex && ((s[j] >= 'a' && s[j] <= 'f') || (s[j] >= 'A' && s[j] <= 'F')))))
        j++;
    if (j == d || j >= n || s[j] != ';' || j - d > 8)
        return false;
    *i = j + 1;
    return true;
}

static inline const char *xmlcheck(const char *s, size_t n, xmlcheck_counts *cnt, size_t *where)
{
    struct {
        const char *p;
        size_t len;
    } stack[XMLCHECK_DEPTH];
    size_t depth = 0, roots = 0, i = 0;
    *cnt = (xmlcheck_counts){0, 0};
    *where = 0;
    if (!xc_utf8_ok((const unsigned char *)s, n, where))
        return "invalid UTF-8 or a character XML forbids";
#define XC_FAIL(msg)                                                                               \
    do {                                                                                           \
        *where = i;                                                                                \
        return msg;                                                                                \
    } while (0)
    while (i < n) {
        if (s[i] == '&') {
            if (!xc_ref(s, n, &i))
                XC_FAIL("bare '&' in text");
            continue;
        }
        if (s[i] != '<') {
            if (s[i] == '>' && i >= 2 && s[i - 1] == ']' && s[i - 2] == ']')
                XC_FAIL("']]>' in text");
            if (!depth && !xc_space(s[i]))
                XC_FAIL("text outside the root element");
            i++;
            continue;
        }
        const char *rest = s + i;
        size_t left = n - i;
        if (left >= 2 && rest[1] == '?') {
            const char *e = memmem(rest, left, "?>", 2);
            if (!e || roots)
                XC_FAIL("bad processing instruction");
            i += (size_t)(e - rest) + 2;
        } else if (left >= 4 && !memcmp(rest, "<!--", 4)) {
            const char *e = memmem(rest + 4, left - 4, "--", 2);
            if (!e || (size_t)(e - rest) + 3 > left || e[2] != '>')
                XC_FAIL("comment not closed or containing \"--\"");
            i += (size_t)(e - rest) + 3;
        } else if (left >= 9 && !memcmp(rest, "<![CDATA[", 9)) {
            const char *e = memmem(rest + 9, left - 9, "]]>", 3);
            if (!e || !depth)
                XC_FAIL("CDATA not closed or outside the root");
            i += (size_t)(e - rest) + 3;
        } else if (left >= 9 && !memcmp(rest, "<!DOCTYPE", 9)) {
            const char *e = memchr(rest, '>', left);
            if (!e || roots)
                XC_FAIL("bad DOCTYPE");
            i += (size_t)(e - rest) + 1;
        } else if (left >= 2 && rest[1] == '/') {
            i += 2;
            size_t b = i, l = xc_name(s, n, &i);
            while (i < n && xc_space(s[i]))
                i++;
            if (!l || i >= n || s[i] != '>')
                XC_FAIL("bad end tag");
            if (!depth || stack[depth - 1].len != l || memcmp(stack[depth - 1].p, s + b, l))
                XC_FAIL("end tag does not match the open element");
            depth--;
            i++;
        } else {
            i++;
            size_t b = i, l = xc_name(s, n, &i);
            if (!l)
                XC_FAIL("'<' not starting a tag");
            if (!depth && roots++)
                XC_FAIL("more than one root element");
            cnt->elements++;
            if (l == 6 && !memcmp(s + b, "script", 6))
                cnt->scripts++;
            for (;;) {
                size_t sp = i;
                while (i < n && xc_space(s[i]))
                    i++;
                if (i >= n)
                    XC_FAIL("tag not closed");
                if (s[i] == '>' || (s[i] == '/' && i + 1 < n && s[i + 1] == '>'))
                    break;
                if (sp == i)
                    XC_FAIL("no space before an attribute");
                if (!xc_name(s, n, &i) || i >= n || s[i] != '=')
                    XC_FAIL("bad attribute");
                i++;
                if (i >= n || (s[i] != '"' && s[i] != '\''))
                    XC_FAIL("unquoted attribute value");
                char q = s[i++];
                while (i < n && s[i] != q) {
                    if (s[i] == '<')
                        XC_FAIL("'<' in an attribute value");
                    if (s[i] == '&') {
                        if (!xc_ref(s, n, &i))
                            XC_FAIL("bare '&' in an attribute value");
                    } else {
                        i++;
                    }
                }
                if (i >= n)
                    XC_FAIL("attribute value not closed");
                i++;
            }
            if (s[i] == '/') {
                i += 2;
            } else {
                if (depth == XMLCHECK_DEPTH)
                    XC_FAIL("nesting too deep for the checker");
                stack[depth].p = s + b;
                stack[depth].len = l;
                depth++;
                i++;
            }
        }
    }
    if (depth || !roots)
        XC_FAIL("document not closed or empty");
    return NULL;
#undef XC_FAIL
}
