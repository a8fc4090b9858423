/* A small streaming JSON writer for the summaries scripts read (--summary-json, docs/SUMMARY.md):
 * objects and arrays nested up to JSONW_MAX_DEPTH (deeper ones are left out, the document stays
 * valid), two-space indentation, keys in the order
 * written. Strings are byte runs from anywhere (frame names, container labels): escaped by
 * flame/escape.h (quotes, backslash, controls as \u00XX, invalid UTF-8 as \ufffd), so the output
 * is valid JSON whatever they hold. Non-finite numbers are written as null. Pure code: no jansson
 * (the verbs of build/libflamecmd.a use it too). Write errors show in ferror(f). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define JSONW_MAX_DEPTH 16

typedef struct jsonw {
    FILE *f;
    int depth;
    bool has_items[JSONW_MAX_DEPTH + 1]; /* per level: a comma before the next item */
    char closer[JSONW_MAX_DEPTH + 1];    /* per level: '}' or ']' */
    int skipped; /* levels opened beyond JSONW_MAX_DEPTH: not written, nor what is inside */
} jsonw;

void jsonw_init(jsonw *w, FILE *f);
/* key: the member name inside an object, NULL inside an array or at the top. */
void jsonw_object(jsonw *w, const char *key);
void jsonw_array(jsonw *w, const char *key);
void jsonw_end(jsonw *w); /* closes the innermost object or array; at depth 0 ends the line */
void jsonw_strn(jsonw *w, const char *key, const char *s, size_t n);
void jsonw_str(jsonw *w, const char *key, const char *s); /* NULL: null */
void jsonw_int(jsonw *w, const char *key, int64_t v);
void jsonw_uint(jsonw *w, const char *key, uint64_t v);
/* 15 significant digits (0.777 stays 0.777; a double's exact value is not the point here);
 * NaN/inf: null */
void jsonw_num(jsonw *w, const char *key, double v);
void jsonw_bool(jsonw *w, const char *key, bool v);
void jsonw_null(jsonw *w, const char *key);

/* ---- the summaries (--summary-json, docs/SUMMARY.md) ---- */

/* Their version: raised only when a field changes meaning or goes away (new fields may appear
 * in any version; readers ignore what they do not know). */
#define SUMMARY_VERSION 1
/* The members every summary starts with: version, kind ("profile", "diff", "top"), tool,
 * started (UTC, ISO 8601). */
void summary_header(jsonw *w, const char *kind, time_t started);
