/* Text into markup (flame/ internal): UTF-8 decoding and the escapers of the SVG and JSON
 * writers. Invalid UTF-8 and characters XML 1.0 cannot carry come out as U+FFFD. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One code point at s[0..n): its length in *len; -1 for an invalid sequence (len 1). */
int32_t escape_utf8_next(const unsigned char *s, size_t n, size_t *len);
/* Code points in s[0..n), an invalid byte counting as one. */
size_t escape_utf8_chars(const char *s, size_t n);
/* Characters XML 1.0 cannot carry, and the control characters we do not want in names. */
bool escape_xml_bad(int32_t cp);
/* s[0..n), at most maxchars code points (SIZE_MAX = all), escaped for XML text and attributes. */
void escape_xml(FILE *out, const char *s, size_t n, size_t maxchars);
void escape_xml_str(FILE *out, const char *s);
/* The inside of an XML comment: no "--", no "-" at the end. */
void escape_xml_comment(FILE *out, const char *s);
/* A CSS font family: only characters that cannot end the declaration are kept. */
void escape_css_font(FILE *out, const char *s);
/* A JavaScript string literal safe inside CDATA: printable ASCII, the rest \u-escaped. */
void escape_js_string(FILE *out, const char *s);
/* A JSON string: '"', '\' and controls escaped, valid UTF-8 as is, invalid bytes as \ufffd. */
void escape_json_string(FILE *out, const char *s, size_t n);
